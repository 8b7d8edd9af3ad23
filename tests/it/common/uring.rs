//! FUSE over io_uring in the tests. The kernel switch
//! (`/sys/module/fuse/parameters/enable_uring`) is global: it is held on
//! only while a mount is being made (the kernel decides a connection's
//! transport at INIT; a connection keeps it after the switch goes back),
//! under the machine lock (`machine`), and set back on drop, also when a
//! test fails.

use std::path::Path;

use super::Mount;
use super::machine::MachineLock;

pub const SWITCH: &str = "/sys/module/fuse/parameters/enable_uring";

/// Whether this kernel has FUSE over io_uring; says the test skips when not.
pub fn available() -> bool {
    if std::path::Path::new(SWITCH).exists() {
        return true;
    }
    super::skip(&format!(
        "this kernel has no FUSE over io_uring: {SWITCH} is missing"
    ));
    false
}

/// The kernel switch set to a value; dropping it sets back the value it had.
pub struct Switch {
    previous: String,
    // Dropped after `drop` has set the switch back.
    _lock: MachineLock,
}

impl Switch {
    pub fn set(on: bool) -> Switch {
        let lock = MachineLock::take();
        let previous = std::fs::read_to_string(SWITCH).expect("read enable_uring");
        std::fs::write(SWITCH, if on { "Y" } else { "N" }).expect("write enable_uring (root)");
        Switch {
            previous: previous.trim().to_string(),
            _lock: lock,
        }
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = std::fs::write(SWITCH, &self.previous);
    }
}

/// Mounts `root` served through FUSE over io_uring (`--io-uring on`, which
/// refuses to mount otherwise), with `RUST_LOG=log_filter`.
pub fn mount_with_log(root: &Path, extra: &[&str], log_filter: &str) -> Mount {
    let switch = Switch::set(true);
    let mut args = vec!["--io-uring", "on"];
    args.extend_from_slice(extra);
    let m = Mount::with_log(root, &args, log_filter);
    // The first answer comes after INIT, once every queue is registered.
    std::fs::metadata(m.path()).expect("the mount answers");
    drop(switch);
    m
}

pub fn mount(root: &Path, extra: &[&str]) -> Mount {
    mount_with_log(root, extra, "warn")
}
