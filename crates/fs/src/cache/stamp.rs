//! The stamp of a source file or directory: what every cached value is
//! checked against at every use, so that no cache decides freshness itself.

use novelfs_library::backing::Meta;

/// What identifies a version of a source file or directory: a rewrite of
/// the same size with the old mtime restored still changes ctime, and a
/// rename over it changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(meta: &Meta) -> Stamp {
        let stamp = Stamp {
            dev: meta.dev,
            ino: meta.ino,
            size: meta.len,
            mtime: meta.mtime,
            ctime: meta.ctime,
        };
        #[cfg(test)]
        if WHOLE_SECONDS.get() {
            return Stamp {
                mtime: (stamp.mtime.0, 0),
                ctime: (stamp.ctime.0, 0),
                ..stamp
            };
        }
        stamp
    }
}

#[cfg(test)]
thread_local! {
    /// Makes this thread's stamps whole seconds, as sshfs gives them: a
    /// local filesystem that hands out a fine time after every `stat`
    /// never shows two changes with one stamp.
    pub(crate) static WHOLE_SECONDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
