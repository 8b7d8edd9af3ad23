//! The command line: error texts, usage, options, installation, logs, a
//! newcomer's mistakes, the tests' switches.

mod cli_usage;
mod docs_options;
mod errors;
mod install;
mod logs;
mod newcomer;
mod options;
mod output;
mod test_switches;
