//! Whether a mount keeps its connection across its server's death (a
//! holder, see `holder`): `--failover auto|on|off`, `-o failover[=MODE]`,
//! `-o nofailover`. `auto`, the default, is on unless the mount would be
//! served over FUSE over io_uring, whose ring a next server cannot take
//! over (`transport::failover_keeps_to_dev_fuse`): the default transport
//! keeps its speed, and a mount on `/dev/fuse` survives its server.
//!
//! Everything failover is made of lives here. `holder/` is the process
//! that keeps the connection: its loop, how it starts (`lean`), the system
//! calls it is made of (`syscalls`), the servers it starts, its side of an
//! upgrade, and what it answers alone once it gave up on servers
//! (`gave_up`, `error_tree`). The holder and every server it starts share
//! `handoff` (what a server inherits from the holder, and the test
//! switches) and `left_unanswered` (the requests a dead server read and
//! never answered, for kernels without resend). A server's side of an
//! upgrade is `leave_for_upgrade`; `upgrade`, `status` and `ask_holder`
//! are the commands that ask a holder. The names differ from the vendored
//! fuser's patches (`step_down`, `unanswered`), which these call.

pub(super) mod ask_holder;
pub(super) mod handoff;
pub(crate) mod holder;
pub(super) mod leave_for_upgrade;
pub(super) mod left_unanswered;
pub(crate) mod status;
pub(crate) mod upgrade;

use super::transport::IoUring;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Failover {
    /// On, unless io_uring serves the mount.
    #[default]
    Auto,
    /// A holder, on `/dev/fuse` (refused with `io_uring=on`).
    On,
    /// No holder: the daemon's death ends the mount.
    Off,
}

impl Failover {
    pub(crate) fn parse(v: &str) -> Result<Failover, String> {
        match v {
            "auto" => Ok(Failover::Auto),
            "on" | "yes" | "1" => Ok(Failover::On),
            "off" | "no" | "0" => Ok(Failover::Off),
            _ => Err(format!("failover must be auto, on or off, not {v:?}")),
        }
    }

    /// Whether the mount gets a holder, and, when `auto` leaves it off,
    /// why (said in the log once the mount is made). `offered`: whether
    /// the kernel offers FUSE over io_uring.
    pub(crate) fn resolve(self, io_uring: IoUring, offered: bool) -> (bool, Option<String>) {
        const WHY: &str = "a next server cannot take a ring over (docs/mounting.md); \
                           --failover on (with io_uring=auto) keeps the mount across a server's \
                           death on /dev/fuse";
        match (self, io_uring) {
            (Failover::Off, _) => (false, None),
            (Failover::On, _) => (true, None),
            (Failover::Auto, IoUring::Off) => (true, None),
            (Failover::Auto, IoUring::On) => (
                false,
                Some(format!(
                    "failover off: io_uring=on asks for a ring, and {WHY}"
                )),
            ),
            (Failover::Auto, IoUring::Auto) if offered => (
                false,
                Some(format!(
                    "failover off: the kernel offers FUSE over io_uring, which serves this mount, and {WHY}"
                )),
            ),
            (Failover::Auto, IoUring::Auto) => (true, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(Failover::parse("auto"), Ok(Failover::Auto));
        assert_eq!(Failover::parse("on"), Ok(Failover::On));
        assert_eq!(Failover::parse("off"), Ok(Failover::Off));
        assert!(Failover::parse("maybe").is_err());
        assert_eq!(Failover::default(), Failover::Auto);
    }

    #[test]
    fn auto_gives_way_to_a_ring_only() {
        let on = |f: Failover, u: IoUring, offered: bool| f.resolve(u, offered).0;
        for offered in [false, true] {
            assert!(on(Failover::Auto, IoUring::Off, offered));
            assert!(!on(Failover::Auto, IoUring::On, offered));
            assert!(on(Failover::On, IoUring::Auto, offered));
            assert!(!on(Failover::Off, IoUring::Off, offered));
        }
        assert!(on(Failover::Auto, IoUring::Auto, false));
        let (held, why) = Failover::Auto.resolve(IoUring::Auto, true);
        assert!(!held && why.is_some_and(|w| w.contains("--failover on")));
    }
}
