//! The integration tests, in one binary: each module is one concern
//! (see docs/testing.md). One binary links once instead of once per file.

#[macro_use]
mod common;
mod access;
mod agents;
mod big_chapters;
mod bucket;
mod bucket_big;
mod bucket_first_page;
mod bucket_listings;
mod bucket_random;
mod bucket_walk;
mod cli_errors;
mod cli_usage;
mod clouds;
mod failover;
mod faults;
mod fleet;
mod fuzz_regressions;
mod gave_up;
mod golden;
mod golden_index;
mod hostile;
mod indexes;
mod install;
#[cfg(feature = "io-uring")]
mod io_uring;
mod journal_compaction;
mod layout;
mod library_errors;
mod logs;
mod memory_budget;
mod missing_names;
mod mount_fs;
mod network_fs;
mod newcomer;
mod no_resend;
mod object_storage;
mod options;
mod outage;
mod persist;
mod properties;
mod published_roots;
mod python_reader;
mod sandbox_failover;
mod slow_source;
mod soak;
mod source_down;
mod status_counters;
mod store_ahead;
mod test_switches;
mod upgrade;
