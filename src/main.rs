//! The `novelfs` binary; the command line lives in `novelfs::cli`.

fn main() -> std::process::ExitCode {
    novelfs::cli::main()
}
