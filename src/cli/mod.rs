//! The `novelfs` command line: `flags` defines, checks and documents every
//! flag (the clap definitions, each value's rule, the `-o` list, the argv
//! forms clap cannot see, the help's prose and the man page);
//! `root_check` what a ROOT and its bucket options say before anything is
//! opened; `commands` what each subcommand does; `mount_config` the
//! mount's settings from `novelfs mount`'s arguments.

mod commands;
mod flags;
mod index;
mod mount_config;
mod out;
mod root_check;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::FromArgMatches;

use flags::args::{Cli, Command, command};
use flags::argv::{Invocation, explain, prepare_argv};
use flags::man;

/// Parses the process arguments (exits on a usage error, `--help` or `--version`).
pub fn parse(args: Vec<OsString>) -> Result<Cli, ExitCode> {
    let (args, fstab_root) = match prepare_argv(args) {
        Invocation::Args { args, fstab_root } => (args, fstab_root),
        Invocation::FakeMount => return Err(ExitCode::SUCCESS),
        Invocation::Usage(msg) => {
            eprintln!("{msg}");
            return Err(ExitCode::from(2));
        }
    };
    let parsed = command()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m));
    parsed.map_err(|err| {
        if let Some(line) = bad_value_line(&err, &args) {
            eprintln!("novelfs: {line}");
            return ExitCode::from(2);
        }
        let err = explain(err, &args, fstab_root.as_deref());
        match err.kind() {
            // `--help` and `--version` are output like any command's: a
            // terminal gets clap's colours, anything else the one writer.
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                if !std::io::stdout().is_terminal() =>
            {
                out::emit(&err.render().to_string()).code()
            }
            _ => err.exit(),
        }
    })
}

/// A value a flag's rule refused (`flags::value`), as the one
/// line every malformed value gets: the flag, or the environment variable
/// the value came from, and what it takes.
fn bad_value_line(err: &clap::Error, args: &[OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let ContextValue::String(arg) = err.get(ContextKind::InvalidArg)? else {
        return None;
    };
    let ContextValue::String(value) = err.get(ContextKind::InvalidValue)? else {
        return None;
    };
    let takes = std::error::Error::source(err)?.to_string();
    let flag = arg.split(' ').next().unwrap_or(arg);
    let on_command_line = args.iter().any(|a| {
        let a = a.to_string_lossy();
        a == flag || a.starts_with(&format!("{flag}="))
    });
    let name = if on_command_line {
        flag.to_string()
    } else {
        env_of(flag).unwrap_or_else(|| flag.to_string())
    };
    Some(flags::value::bad_value(&name, &takes, value))
}

/// The environment variable a flag reads when it is not given.
fn env_of(flag: &str) -> Option<String> {
    let long = flag.strip_prefix("--")?;
    let cmd = command();
    cmd.get_subcommands()
        .flat_map(|s| s.get_arguments())
        .find(|a| a.get_long() == Some(long) && a.get_env().is_some())
        .and_then(|a| a.get_env())
        .map(|e| e.to_string_lossy().into_owned())
}

/// The library of a command that reads one, from its ROOT and the bucket
/// options given with it, or the usage error in them (`mount` checks its
/// own, `-o` included, in `mount_config`).
fn library_root(command: &Command) -> Result<Option<root_check::LibraryRoot>, String> {
    let (root, flags) = match command {
        Command::Read(c) => (&c.library.root, &c.library.bucket),
        Command::Chapters(c) => (&c.library.root, &c.library.bucket),
        Command::Books(c) => (&c.library.root, &c.library.bucket),
        Command::Index(c) => (&c.root, &c.bucket),
        _ => return Ok(None),
    };
    root_check::check_root(root, flags, &commands::one_shot()).map(Some)
}

pub fn main() -> ExitCode {
    // The lean holder (`-o failover`) runs before anything else is made.
    if let Some(code) = crate::mount::failover::holder::lean::lean_main() {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let root = match library_root(&cli.command) {
        Ok(root) => root,
        Err(line) => {
            eprintln!("novelfs: {line}");
            return ExitCode::from(2);
        }
    };
    let result = match (cli.command, root) {
        (Command::Mount(cmd), _) => return commands::mount(*cmd),
        (Command::Unmount(cmd), _) => return commands::unmount(cmd),
        (Command::Upgrade(cmd), _) => {
            return said(crate::mount::upgrade::run(
                &cmd.mountpoint,
                cmd.binary.as_deref(),
            ));
        }
        (Command::Status(cmd), _) => {
            let shown = if cmd.json {
                crate::mount::status::Shown::Json
            } else if cmd.prometheus {
                crate::mount::status::Shown::Prometheus
            } else {
                crate::mount::status::Shown::Lines
            };
            return said(crate::mount::status::run(&cmd.mountpoint, shown));
        }
        (Command::Index(cmd), Some(root)) => return index::index(cmd, root),
        (Command::Read(cmd), Some(root)) => commands::read(cmd, &root),
        (Command::Chapters(cmd), Some(root)) if cmd.tool => commands::tool_chapters(cmd, &root),
        (Command::Chapters(cmd), Some(root)) => commands::chapters(cmd, &root),
        (Command::Books(cmd), Some(root)) => commands::books(cmd, &root),
        (Command::Index(_) | Command::Read(_) | Command::Chapters(_) | Command::Books(_), None) => {
            unreachable!("library_root gives every command that reads a library its root")
        }
        (Command::Completions(cmd), _) => {
            let mut out = Vec::new();
            clap_complete::generate(cmd.shell, &mut command(), "novelfs", &mut out);
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
        (Command::Man, _) => Ok(man::man_page()),
    };
    match result {
        Ok(text) => out::emit(&text).code(),
        Err(e) => {
            out::say(&e.error_line());
            ExitCode::FAILURE
        }
    }
}

/// A command that asked a mount's holder: its answer on stdout, or why
/// not on stderr.
fn said(answer: Result<String, String>) -> ExitCode {
    match answer {
        Ok(text) => out::emit(&text).code(),
        Err(msg) => {
            out::say(&format!("novelfs: {msg}"));
            ExitCode::FAILURE
        }
    }
}
