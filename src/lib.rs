//! novelfs: a library of novel chapters as a read-only filesystem whose
//! pages are byte for byte what the `novel_read` tool returns.

pub mod cli;
pub mod fs;
pub mod library;
