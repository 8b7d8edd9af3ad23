//! Whether a file's bytes are in the disk's page cache: a fact about a
//! file on disk, which tells whether reading it cost the disk anything.

/// Whether all of an open file's `len` bytes are in the page cache
/// (false when the kernel cannot tell).
pub(crate) fn in_page_cache(f: &std::fs::File, len: u64) -> bool {
    len == 0 || cached_pages(f, len).is_some_and(|pages| pages >= len.div_ceil(4096))
}

/// How many pages of the first `len` bytes of `f` the page cache holds
/// (`cachestat`, Linux 6.5; `None` before).
fn cached_pages(f: &std::fs::File, len: u64) -> Option<u64> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct CachestatRange {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Cachestat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    /// The same number on every architecture (added after the tables
    /// were unified).
    const SYS_CACHESTAT: libc::c_long = 451;
    let range = CachestatRange { off: 0, len };
    let mut stat = Cachestat::default();
    // SAFETY: cachestat reads `range` and writes `stat`, both valid and
    // laid out as the kernel's structs; flags must be 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            f.as_raw_fd(),
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0u32,
        )
    };
    (r == 0).then_some(stat.nr_cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_just_written_is_in_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, vec![b'x'; 10_000]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        // Kernels before 6.5 cannot tell: then nothing counts as cached.
        match cached_pages(&f, 10_000) {
            Some(pages) => {
                assert_eq!(pages, 3);
                assert!(in_page_cache(&f, 10_000));
                assert!(!in_page_cache(&f, 1 << 40), "far more than the file holds");
            }
            None => assert!(!in_page_cache(&f, 10_000)),
        }
    }
}
