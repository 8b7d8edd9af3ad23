//! Who may read the mount, enforced by the kernel rather than by the daemon.
//!
//! The daemon only sees what the kernel asks it: once a name, an attribute
//! or a page is cached, the kernel serves it to anyone it lets in without a
//! request. So every rule here is one the kernel checks on each access:
//!
//! - `Owner` (no option): no `allow_other`; the kernel lets in only
//!   processes whose uid and gid are the mounting user's.
//! - `Everyone` (`allow_other`): everyone passes the kernel's gate; modes
//!   stay 0444/0555, so everyone may read (with or without
//!   `default_permissions`).
//! - `RootAndOwner` (`allow_root`): the kernel has no such option, so the
//!   mount gets `allow_other` + `default_permissions` and owner-only modes
//!   (pages 0400, directories 0500, owned by the mounting user). The kernel
//!   then refuses a third user's lookup, listing and open by the modes,
//!   cached or not; root passes by capability (CAP_DAC_READ_SEARCH /
//!   CAP_DAC_OVERRIDE).
//!
//! `auto_unmount` is not an access option and changes none of this.

use fuser::SessionACL;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Owner,
    RootAndOwner,
    Everyone,
}

impl Access {
    pub(crate) fn from_options(allow_other: bool, allow_root: bool) -> Access {
        if allow_other {
            Access::Everyone
        } else if allow_root {
            Access::RootAndOwner
        } else {
            Access::Owner
        }
    }

    /// Whether the kernel must let users other than the owner reach the
    /// filesystem at all.
    pub(crate) fn kernel_allow_other(self) -> bool {
        self != Access::Owner
    }

    /// Whether the kernel must check modes itself (`default_permissions`),
    /// whatever the user asked.
    pub(crate) fn needs_default_permissions(self) -> bool {
        self == Access::RootAndOwner
    }

    /// The mode bits every node keeps: owner-only for `allow_root`.
    pub(crate) fn mode_mask(self) -> u16 {
        match self {
            Access::RootAndOwner => 0o500,
            Access::Owner | Access::Everyone => 0o777,
        }
    }

    /// fuser's own check, kept as a second fence: it refuses requests that
    /// do reach the daemon from users outside the policy.
    pub(crate) fn session_acl(self) -> SessionACL {
        match self {
            Access::Owner => SessionACL::Owner,
            Access::RootAndOwner => SessionACL::RootAndOwner,
            Access::Everyone => SessionACL::All,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_root_is_owner_only_modes_checked_by_the_kernel() {
        let a = Access::from_options(false, true);
        assert_eq!(a, Access::RootAndOwner);
        assert!(a.kernel_allow_other() && a.needs_default_permissions());
        assert_eq!(0o444 & a.mode_mask(), 0o400);
        assert_eq!(0o555 & a.mode_mask(), 0o500);
        let everyone = Access::from_options(true, false);
        assert_eq!(0o444 & everyone.mode_mask(), 0o444);
        assert!(!everyone.needs_default_permissions());
        assert!(!Access::from_options(false, false).kernel_allow_other());
    }
}
