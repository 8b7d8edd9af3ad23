//! Every flag of every command: its definition, the rule its value is
//! checked by, and its documentation, as ripgrep keeps them in its
//! `flags/`. `args` and `mount_args` are the clap definitions (the one
//! source of `--help`, the man page and the shell completions), `bucket`
//! the options that reach a library in a bucket, `help` their shared
//! prose, `man` the man page; `value` holds each value's rule, which the
//! flags, the environment and the `-o` list (`mount_options`) all use;
//! `argv` reads the argv forms clap cannot see (fstab and mount(8)).

pub(super) mod args;
pub(super) mod argv;
pub(super) mod bucket;
mod help;
pub(super) mod man;
pub(super) mod mount_args;
pub(super) mod mount_options;
pub(super) mod value;
