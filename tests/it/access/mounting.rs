//! A user who is not root mounts, reads and unmounts; what is missing
//! when they cannot; how root mounts name their type and library.

use super::*;

#[test]
fn a_user_who_is_not_root_mounts_reads_and_unmounts() {
    let Some(setup) = user_mounts() else {
        return;
    };
    let ws = &setup.ws;
    let (owner, third) = (setup.machine.owner, setup.machine.third);
    let mnt = ws.mountpoint("mnt", owner);
    let m = ws.mount(owner, &mnt, &[]);
    let (fstype, source, options) = mountinfo(&mnt);
    assert_eq!(fstype, "fuse.novelfs");
    assert_eq!(source, ws.lib.to_str().unwrap());
    assert!(
        options.contains(&format!("user_id={}", owner.uid)),
        "{options}"
    );
    assert!(!options.contains("allow_other"), "{options}");

    let page = page_in(&mnt);
    assert_eq!(reads(owner, &mnt, &page).unwrap(), expected_page(ws));
    // Without allow_other the kernel lets in the mounting user only: not a
    // third user, and not root either.
    assert_refused(third, &mnt, &page, "on a private user mount");
    assert_refused(ROOT, &mnt, &page, "on a private user mount");

    let out = ws.novelfs(owner).arg("unmount").arg(&mnt).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!crate::common::is_mounted(&mnt));
    let again = ws.novelfs(owner).arg("unmount").arg(&mnt).output().unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && said.contains("is not a mount point"),
        "{said}"
    );
    drop(m);
}

#[test]
fn errors_for_a_user_who_is_not_root_say_what_is_missing() {
    if !prerequisites() {
        return;
    }
    let machine = Machine::take();
    let owner = machine.owner;
    let ws = workspace();
    let mnt = ws.mountpoint("mnt", owner);
    let mount = |args: &[&str]| {
        let out = ws
            .novelfs(owner)
            .arg("mount")
            .arg(&ws.lib)
            .arg(&mnt)
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "mounted with {args:?}");
        assert!(!crate::common::is_mounted(&mnt));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    {
        let _system = SystemSetting::new(&machine, 0o600, false);
        let said = mount(&[]);
        assert!(
            said.contains("no read/write access to /dev/fuse")
                && said.contains("mode 0600")
                && said.contains("0666"),
            "{said}"
        );
    }
    {
        let _system = SystemSetting::new(&machine, 0o666, false);
        for opt in ["allow_other", "allow_root"] {
            let said = mount(&["-o", opt]);
            assert!(said.contains("user_allow_other"), "{opt}: {said}");
        }
    }
    let plain = ws.mountpoint("plain", owner);
    let out = ws
        .novelfs(owner)
        .arg("unmount")
        .arg(&plain)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("is not a mount point"), "{said}");
}

/// Root mounts show as sshfs's do: `fuse.novelfs`, the library as source;
/// fsname= and subtype= replace them.
#[test]
fn root_mounts_name_their_type_and_library() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skip("mounting as root needs root");
        return;
    }
    let ws = workspace();
    let mnt = ws.mountpoint("plain", ROOT);
    let _m = ws.mount(ROOT, &mnt, &[]);
    let (fstype, source, options) = mountinfo(&mnt);
    assert_eq!(
        (fstype.as_str(), source.as_str()),
        ("fuse.novelfs", ws.lib.to_str().unwrap())
    );
    assert!(!options.contains("allow_other"), "{options}");
    let named = ws.mountpoint("named", ROOT);
    let _n = ws.mount(ROOT, &named, &["-o", "fsname=books,subtype=novels2"]);
    let (fstype, source, _) = mountinfo(&named);
    assert_eq!(
        (fstype.as_str(), source.as_str()),
        ("fuse.novels2", "books")
    );
    // With a path root the source is that root, as the pages write it
    // (a sandbox given only the mount sees no host path); fsname= wins.
    for (args, want) in [
        (&["--path-root", "/library"][..], "/library"),
        (&["-o", "path_root=/library/"], "/library"),
        (&["--path-root", "/library", "-o", "fsname=books"], "books"),
    ] {
        let rooted = ws.mountpoint("rooted", ROOT);
        let m = ws.mount(ROOT, &rooted, args);
        let (fstype, source, _) = mountinfo(&rooted);
        assert_eq!(
            (fstype.as_str(), source.as_str()),
            ("fuse.novelfs", want),
            "{args:?}"
        );
        let page = std::fs::read_to_string(page_in(&rooted)).unwrap();
        assert!(page.starts_with("<path>/library/"), "{args:?}: {page}");
        drop(m);
        std::fs::remove_dir(&rooted).unwrap();
    }
    let listed = Command::new("findmnt")
        .args(["-n", "-o", "TARGET", "-t", "fuse.novelfs"])
        .output();
    if let Ok(out) = listed {
        let targets = String::from_utf8_lossy(&out.stdout);
        assert!(
            targets.lines().any(|l| Path::new(l.trim()) == mnt),
            "findmnt -t fuse.novelfs: {targets}"
        );
    }
}
