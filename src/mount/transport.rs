//! Which transport carries the kernel's requests: the `/dev/fuse`
//! read/write loop, or FUSE over io_uring (one queue per CPU, served on
//! that CPU: a round trip wakes no halted vCPU, the dearest part of the
//! loop's on a VM). `-o io_uring=auto|on|off` or `--io-uring`.

/// The kernel switch (root, default N on Linux 6.14+ built with
/// `CONFIG_FUSE_IO_URING`).
pub(crate) const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IoUring {
    /// io_uring when the kernel offers it, else the `/dev/fuse` loop.
    #[default]
    Auto,
    /// io_uring, or no mount.
    On,
    /// The `/dev/fuse` loop only.
    Off,
}

impl IoUring {
    pub(crate) fn parse(v: &str) -> Result<IoUring, String> {
        match v {
            "auto" => Ok(IoUring::Auto),
            "on" | "yes" | "1" => Ok(IoUring::On),
            "off" | "no" | "0" => Ok(IoUring::Off),
            _ => Err(format!("io_uring must be auto, on or off, not {v:?}")),
        }
    }

    #[cfg(feature = "io-uring")]
    pub(crate) fn to_fuser(self) -> fuser::IoUringMode {
        match self {
            IoUring::Auto => fuser::IoUringMode::Auto,
            IoUring::On => fuser::IoUringMode::On,
            IoUring::Off => fuser::IoUringMode::Off,
        }
    }
}

/// What the kernel switch says: `Some(true)` for Y, `None` when the kernel
/// has no FUSE over io_uring at all (no such parameter).
pub(crate) fn kernel_enabled() -> Option<bool> {
    let v = std::fs::read_to_string(ENABLE_URING).ok()?;
    Some(matches!(v.trim(), "Y" | "y" | "1"))
}

/// Why a failover mount is served through `/dev/fuse` although the kernel
/// offers io_uring (`None` when io_uring would not have served anyway).
/// Linux (6.18) cannot hand a ring over to a next server: the requests a
/// dead server held in its ring entries are never resent
/// (`FUSE_NOTIFY_RESEND` requeues only those read through `/dev/fuse`),
/// nor those the kernel was handing to it as it died, and once a ring
/// serves, new requests go to the ring's queues only, never to a
/// `/dev/fuse` reader; a reader would wait for ever. Failover therefore
/// never lets INIT accept io_uring (docs/mounting.md).
pub(crate) fn failover_keeps_to_dev_fuse(mode: IoUring) -> Option<&'static str> {
    (mode != IoUring::Off && io_uring_offered()).then_some(
        "not io_uring, which the kernel offers: Linux cannot hand a ring to a next server \
         (requests a dead server held in its ring entries are never resent), so failover serves \
         through /dev/fuse",
    )
}

/// Whether this kernel (and build) offers FUSE over io_uring now.
pub(crate) fn io_uring_offered() -> bool {
    cfg!(feature = "io-uring") && kernel_enabled() == Some(true)
}

/// Refuses `io_uring=on` before mounting when the kernel cannot give it,
/// saying how to get it.
pub(crate) fn preflight(mode: IoUring) -> Result<(), String> {
    if mode != IoUring::On {
        return Ok(());
    }
    if !cfg!(feature = "io-uring") {
        return Err(
            "io_uring=on: this novelfs is built without FUSE over io_uring (cargo feature \
             `io-uring`); mount with io_uring=auto or off"
                .to_string(),
        );
    }
    match kernel_enabled() {
        Some(true) => Ok(()),
        Some(false) => Err(format!(
            "io_uring=on: FUSE over io_uring is switched off in this kernel ({ENABLE_URING} is N); \
             enable it as root with `echo Y > {ENABLE_URING}` (or boot with fuse.enable_uring=1, \
             or add `options fuse enable_uring=1` to /etc/modprobe.d/), or mount with io_uring=auto"
        )),
        None => Err(format!(
            "io_uring=on: this kernel has no FUSE over io_uring ({ENABLE_URING} is missing: it needs \
             Linux 6.14 or later built with CONFIG_FUSE_IO_URING); mount with io_uring=auto or off"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(IoUring::parse("auto"), Ok(IoUring::Auto));
        assert_eq!(IoUring::parse("on"), Ok(IoUring::On));
        assert_eq!(IoUring::parse("off"), Ok(IoUring::Off));
        assert!(
            IoUring::parse("fast")
                .unwrap_err()
                .contains("auto, on or off")
        );
        assert_eq!(IoUring::default(), IoUring::Auto);
    }

    #[test]
    fn only_on_is_checked() {
        assert_eq!(preflight(IoUring::Auto), Ok(()));
        assert_eq!(preflight(IoUring::Off), Ok(()));
        if !cfg!(feature = "io-uring") {
            assert!(
                preflight(IoUring::On)
                    .unwrap_err()
                    .contains("built without")
            );
            return;
        }
        match kernel_enabled() {
            Some(true) => assert_eq!(preflight(IoUring::On), Ok(())),
            Some(false) => assert!(preflight(IoUring::On).unwrap_err().contains("echo Y >")),
            None => assert!(
                preflight(IoUring::On)
                    .unwrap_err()
                    .contains("CONFIG_FUSE_IO_URING")
            ),
        }
    }
}
