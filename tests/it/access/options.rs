//! Who reads under each access option: allow_root, auto_unmount alone,
//! allow_other.

use super::*;

/// allow_root: exactly the owner and root read; a third user is refused
/// before and after root and the owner have read (and cached) the pages.
#[test]
fn allow_root_lets_in_exactly_the_owner_and_root() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let (test_user, third) = (machine.owner, machine.third);
    let _system = SystemSetting::new(&machine, 0o666, true);
    let ws = workspace();
    let want = expected_page(&ws);
    for (name, owner) in [("by-root", ROOT), ("by-user", test_user)] {
        let mnt = ws.mountpoint(name, owner);
        let _m = ws.mount(owner, &mnt, &["-o", "allow_root"]);
        let (fstype, _, options) = mountinfo(&mnt);
        assert_eq!(fstype, "fuse.novelfs");
        assert!(options.contains("default_permissions"), "{options}");
        let page = page_in(&mnt);
        assert_refused(third, &mnt, &page, &format!("({name}) before anyone read"));
        for reader in [ROOT, owner] {
            assert_eq!(reads(reader, &mnt, &page).unwrap(), want, "{name}");
            let walk = run(reader, "ls", &[&mnt.join("西游记").join("1")]);
            assert!(walk.status.success());
        }
        let meta = std::fs::metadata(&page).unwrap();
        assert_eq!(
            (meta.mode() & 0o7777, meta.uid()),
            (0o400, owner.uid),
            "{name}"
        );
        let dir = std::fs::metadata(&mnt).unwrap();
        assert_eq!((dir.mode() & 0o7777, dir.uid()), (0o500, owner.uid));
        assert_refused(
            third,
            &mnt,
            &page,
            &format!("({name}) after root and the owner read"),
        );
    }
}

/// auto_unmount adds no access (no allow_other, so no user_allow_other is
/// needed either), and a killed daemon's mount goes away.
#[test]
fn auto_unmount_alone_keeps_the_mount_private_and_cleans_up_after_a_kill() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let (test_user, third) = (machine.owner, machine.third);
    let _system = SystemSetting::new(&machine, 0o666, false);
    let ws = workspace();
    let want = expected_page(&ws);
    for (name, owner) in [("by-root", ROOT), ("by-user", test_user)] {
        let mnt = ws.mountpoint(name, owner);
        let mut m = ws.mount_foreground(owner, &mnt, &["-o", "auto_unmount"]);
        let (_, _, options) = mountinfo(&mnt);
        assert!(!options.contains("allow_other"), "{name}: {options}");
        let page = page_in(&mnt);
        assert_eq!(reads(owner, &mnt, &page).unwrap(), want);
        assert_refused(third, &mnt, &page, &format!("({name}) with auto_unmount"));
        if owner != ROOT {
            assert_refused(ROOT, &mnt, &page, &format!("({name}) with auto_unmount"));
        }
        let mut daemon = m.child.take().unwrap();
        daemon.kill().unwrap();
        daemon.wait().unwrap();
        assert!(
            wait_unmounted(&mnt),
            "{name}: the mount outlived its killed daemon"
        );
    }
}

/// allow_other: every user reads, and the modes say so (0444/0555).
#[test]
fn allow_other_lets_every_user_read() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let (test_user, third) = (machine.owner, machine.third);
    let _system = SystemSetting::new(&machine, 0o666, true);
    let ws = workspace();
    let want = expected_page(&ws);
    for (name, owner) in [("by-root", ROOT), ("by-user", test_user)] {
        let mnt = ws.mountpoint(name, owner);
        let _m = ws.mount(owner, &mnt, &["-o", "allow_other"]);
        let page = page_in(&mnt);
        for reader in [third, owner, ROOT] {
            assert_eq!(reads(reader, &mnt, &page).unwrap(), want, "{name}");
        }
        let meta = std::fs::metadata(&page).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o444);
        assert_eq!(std::fs::metadata(&mnt).unwrap().mode() & 0o7777, 0o555);
    }
}
