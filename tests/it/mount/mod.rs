//! A local library through a real mount: the filesystem's operations
//! (`fs/`), the mount's start and end, big and hostile chapters, the index
//! files, names, the persistent index, the transports, the memory budget,
//! readers.

mod big_chapters;
mod fs;
mod hostile;
mod idle_threads;
mod indexes;
#[cfg(feature = "io-uring")]
mod io_uring;
mod lifecycle;
mod memory_budget;
mod missing_names;
pub(crate) mod persist;
mod python_reader;
mod soak;
mod store_ahead;
mod unmount_busy;
mod walkers;
