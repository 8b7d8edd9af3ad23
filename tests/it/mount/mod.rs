//! A local library through a real mount: the filesystem, big and hostile
//! chapters, the index files, names, the persistent index, the transports, the
//! memory budget, readers.

mod big_chapters;
mod hostile;
mod idle_threads;
mod indexes;
#[cfg(feature = "io-uring")]
mod io_uring;
mod memory_budget;
mod missing_names;
mod mount_fs;
pub(crate) mod persist;
mod python_reader;
mod soak;
mod store_ahead;
mod unmount_busy;
mod walkers;
