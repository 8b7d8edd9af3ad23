//! A mount whose daemon is told to end (SIGTERM) while a reader holds a
//! file open in it is busy: it is detached lazily rather than left behind
//! (`UnmountError::Busy`), and the daemon ends.

use crate::common::{is_mounted, reference_library, strict_mount};

#[test]
fn sigterm_detaches_a_mount_held_busy() {
    require_fuse!();
    let (_g, root) = reference_library();
    let mut m = strict_mount(&root, &[]);
    let path = m.path().to_path_buf();
    let held = std::fs::File::open(path.join("星河旧梦/1/offset-1.txt")).unwrap();
    let status = m.terminate().expect("daemon was running");
    let left = is_mounted(&path);
    drop(held);
    assert!(!left, "a busy mount left behind");
    assert!(status.success(), "exit status {status}");
}
