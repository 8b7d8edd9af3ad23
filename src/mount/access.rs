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

/// Whether the mode bits of `attr` grant `mask` to the caller, as the
/// kernel's own check would (`access(2)` reaches us only without
/// `default_permissions`). Root reads everything and may execute what has an
/// execute bit anywhere; others get the owner's or everyone's bits (the
/// group bits equal everyone's on every node we serve).
pub(crate) fn permits(
    attr: &fuser::FileAttr,
    uid: u32,
    gid: u32,
    mask: fuser::AccessFlags,
) -> bool {
    use fuser::{AccessFlags, FileType};
    let want = (mask.bits() & 0o7) as u16;
    if uid == 0 {
        return !mask.contains(AccessFlags::X_OK)
            || attr.kind == FileType::Directory
            || attr.perm & 0o111 != 0;
    }
    let granted = if uid == attr.uid {
        attr.perm >> 6
    } else if gid == attr.gid {
        attr.perm >> 3
    } else {
        attr.perm
    } & 0o7;
    granted & want == want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_follows_the_mode_bits() {
        use fuser::{AccessFlags, FileAttr, FileType, INodeNo};
        let page = FileAttr {
            ino: INodeNo(2),
            size: 1,
            blocks: 1,
            atime: std::time::UNIX_EPOCH,
            mtime: std::time::UNIX_EPOCH,
            ctime: std::time::UNIX_EPOCH,
            crtime: std::time::UNIX_EPOCH,
            kind: FileType::RegularFile,
            perm: 0o444,
            nlink: 1,
            uid: 1000,
            gid: 1000,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        };
        let dir = FileAttr {
            kind: FileType::Directory,
            perm: 0o555,
            nlink: 2,
            ..page
        };
        let (r, x) = (AccessFlags::R_OK, AccessFlags::X_OK);
        let stranger = (page.uid.wrapping_add(1), page.gid.wrapping_add(1));
        for (uid, gid) in [(0, 0), (page.uid, page.gid), stranger] {
            assert!(permits(&page, uid, gid, r), "uid {uid} reads a page");
            assert!(permits(&page, uid, gid, AccessFlags::F_OK));
            assert!(!permits(&page, uid, gid, x), "uid {uid} executes a page");
            assert!(!permits(&page, uid, gid, r | x));
            assert!(permits(&dir, uid, gid, r | x), "uid {uid} enters a dir");
        }
        let owner_only = FileAttr {
            perm: 0o400,
            ..page
        };
        assert!(permits(&owner_only, page.uid, page.gid, r));
        assert!(!permits(&owner_only, stranger.0, stranger.1, r));
        assert!(permits(&owner_only, 0, 0, r));
    }

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
