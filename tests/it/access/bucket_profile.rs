//! A user's own bucket mount with a profile of their shared files.

use super::*;

/// A user who is not root mounts a bucket with a named profile of their
/// own shared files (`~/.aws/credentials` and `~/.aws/config` in their
/// home, nothing in the environment), reads it, and unmounts it: every
/// request is signed with that profile's key, the mount is private to them
/// like any user mount, and the key's secret shows in neither mountinfo
/// nor the daemon's arguments. A profile the files lack is one line naming
/// it, exit 1, nothing mounted, no request made.
#[test]
fn a_user_who_is_not_root_mounts_a_bucket_with_a_profile_of_their_own() {
    let Some(setup) = user_mounts() else {
        return;
    };
    let ws = &setup.ws;
    let (owner, third) = (setup.machine.owner, setup.machine.third);
    let Some(bucket) = crate::common::bucket::Bucket::with(&ws.lib) else {
        return;
    };
    const KEY_ID: &str = "AKIDREADERNOVELFS";
    const SECRET: &str = "reader-secret-of-the-profile";
    let home = ws.dir.path().join("home-of-owner");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(
        home.join(".aws/credentials"),
        format!("[reader]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n"),
    )
    .unwrap();
    std::fs::write(
        home.join(".aws/config"),
        "[profile reader]\nregion = us-east-1\n",
    )
    .unwrap();
    for p in [
        home.clone(),
        home.join(".aws"),
        home.join(".aws/credentials"),
        home.join(".aws/config"),
    ] {
        std::os::unix::fs::chown(&p, Some(owner.uid), Some(owner.gid)).unwrap();
    }
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let endpoint = bucket.server.endpoint();
    let mount = |mnt: &Path, profile: &str| {
        let mut cmd = ws.novelfs(owner);
        for name in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_PROFILE",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_CONFIG_FILE",
            "XDG_CACHE_HOME",
        ] {
            cmd.env_remove(name);
        }
        cmd.env("HOME", &home)
            .arg("mount")
            .arg(bucket.url())
            .arg(mnt)
            .args(["--endpoint-url", &endpoint, "--profile", profile])
            .args([
                "--path-root",
                "/library",
                "--state-file",
                "/nonexistent/s.json",
            ])
            .output()
            .unwrap()
    };

    let missing = ws.mountpoint("missing", owner);
    bucket.server.reset_counts();
    let out = mount(&missing, "absent");
    // Detached at the end should it have mounted after all.
    let _missing = Mounted {
        path: missing.clone(),
        child: None,
    };
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("absent"), "{out:?}");
    assert_eq!(said.trim_end().lines().count(), 1, "one line: {said}");
    assert!(!crate::common::is_mounted(&missing));
    assert!(bucket.server.log().is_empty(), "no request without keys");

    let mnt = ws.mountpoint("mnt", owner);
    let out = mount(&mnt, "reader");
    assert!(out.status.success(), "{out:?}");
    let _m = Mounted {
        path: mnt.clone(),
        child: None,
    };
    let (fstype, _, options) = mountinfo(&mnt);
    assert_eq!(fstype, "fuse.novelfs");
    assert!(
        options.contains(&format!("user_id={}", owner.uid)),
        "{options}"
    );
    let page = page_in(&mnt);
    let want = ws
        .novelfs(ROOT)
        .args(["read", "--root"])
        .arg(&ws.lib)
        .args([
            "--path-root",
            "/library",
            "--state-file",
            "/nonexistent/s.json",
            "唐诗选",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(reads(owner, &mnt, &page).unwrap(), want.stdout);
    assert_refused(third, &mnt, &page, "on a private bucket mount");
    assert_refused(ROOT, &mnt, &page, "on a private bucket mount");
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!info.contains(SECRET), "{info}");
    let daemon = Command::new("pgrep")
        .args(["-u", &owner.uid.to_string(), "-f", "novelfs mount"])
        .output()
        .unwrap();
    for pid in String::from_utf8_lossy(&daemon.stdout).split_whitespace() {
        let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&args).contains(SECRET));
    }
    let log = bucket.server.log();
    assert!(!log.is_empty());
    for r in &log {
        assert_eq!(r.key_id, KEY_ID, "signed with the profile's key: {r:?}");
    }

    let out = ws.novelfs(owner).arg("unmount").arg(&mnt).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(wait_unmounted(&mnt));
}
