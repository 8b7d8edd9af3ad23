//! A mount's connection kept across its server's death: the holder, giving up,
//! the inode journal, resend, a sandboxed reader, upgrades in place.

mod gave_up;
mod holder;
mod journal_compaction;
pub(crate) mod killed;
mod no_resend;
mod sandbox_failover;
pub(crate) mod upgrade;
