//! The command line as a new user meets it: typos get an unknown-subcommand
//! error with a suggestion (never a missing-MOUNTPOINT complaint), an
//! existing directory first is the fstab form and really mounts, a lone
//! directory says what is missing, and `--help` explains the state file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");

fn novelfs(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A usage error: exit 2, nothing on stdout, and every `needle` on stderr.
fn assert_usage_error(out: &Output, needles: &[&str], absent: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from:\n{err}");
    }
    for n in absent {
        assert!(!err.contains(n), "{n:?} should not be in:\n{err}");
    }
}

#[test]
fn an_unknown_word_is_an_unknown_subcommand() {
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("foo")
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_usage_error(
        &out,
        &[
            "unrecognized subcommand 'foo'",
            "the subcommands are mount, unmount, read, chapters",
        ],
        &["MOUNTPOINT", "not provided"],
    );
    // With more words after it, too (`novelfs foo /mnt` is not a mount).
    let out = Command::new(BIN)
        .args(["foo", "/mnt"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_usage_error(&out, &["unrecognized subcommand 'foo'"], &["not provided"]);
}

#[test]
fn a_typo_of_a_subcommand_is_suggested() {
    for (typo, meant) in [("mout", "mount"), ("chapter", "chapters"), ("raed", "read")] {
        let out = novelfs(&[typo, "x"]);
        assert_usage_error(
            &out,
            &[
                &format!("unrecognized subcommand '{typo}'"),
                "similar subcommand",
                &format!("'{meant}'"),
            ],
            &["not provided"],
        );
    }
}

#[test]
fn a_path_that_is_not_a_directory_is_not_the_fstab_form() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-library");
    let out = novelfs(&[missing.to_str().unwrap(), "/mnt"]);
    assert_usage_error(
        &out,
        &[
            "unrecognized subcommand",
            "does not exist",
            "existing directory",
        ],
        &["not provided"],
    );
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    let out = novelfs(&[file.to_str().unwrap(), "/mnt"]);
    assert_usage_error(&out, &["is not a directory"], &["not provided"]);
}

#[test]
fn a_lone_directory_says_the_mountpoint_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let out = novelfs(&[root]);
    assert_usage_error(
        &out,
        &[
            "<MOUNTPOINT>",
            &format!("'{root}' is a directory"),
            &format!("novelfs {root} MOUNTPOINT"),
            "subcommand",
        ],
        &["unrecognized"],
    );
}

#[test]
fn help_explains_every_argument_and_the_state_file() {
    for sub in ["read", "mount"] {
        let out = novelfs(&[sub, "--help"]);
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        for needle in [
            "--state-file",
            "DSH_NOVEL_WRITER_STATE",
            "~/.dsh/dsh-novel-writer/state.json",
            "tools.novel_read",
        ] {
            assert!(
                help.contains(needle),
                "{sub} --help lacks {needle}:\n{help}"
            );
        }
    }
    let out = novelfs(&["mount", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("subtype=NAME"), "{help}");
    assert!(
        help.contains("<MOUNTPOINT>\n          An existing directory"),
        "{help}"
    );
    let out = novelfs(&["chapters", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.lines()
            .any(|l| l.contains("--json") && l.contains("Print JSON")),
        "{help}"
    );
    let out = novelfs(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "ENVIRONMENT:",
        "NOVELFS_ROOT",
        "DSH_NOVEL_WRITER_STATE",
        "/etc/fstab",
        "The library root of read, chapters and books",
        "XDG_STATE_HOME",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
}

#[test]
fn mount_help_says_where_the_log_goes() {
    let out = novelfs(&["mount", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "journalctl -t novelfs",
        "$XDG_STATE_HOME/novelfs/novelfs.log",
        "~/.local/state/novelfs/novelfs.log",
        "(log: …)",
    ] {
        assert!(
            help.contains(needle),
            "mount --help lacks {needle}:\n{help}"
        );
    }
}

/// Unmounts on drop: the fstab form leaves a daemon behind, not a child.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        if crate::common::is_mounted(&self.0) {
            let _ = Command::new(BIN)
                .args(["unmount", "--lazy"])
                .arg(&self.0)
                .status();
        }
    }
}

fn wait_unmounted(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while crate::common::is_mounted(path) {
        assert!(std::time::Instant::now() < deadline, "still mounted");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What mount.fuse3 runs for an fstab line: `novelfs ROOT MNT -o OPTIONS`
/// with the options it adds (dev, suid).
#[test]
fn an_existing_directory_first_mounts_as_fstab_does() {
    require_fuse!();
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/library");
    let mnt = tempfile::Builder::new()
        .prefix("novelfs-fstab")
        .tempdir()
        .unwrap();
    let out = Command::new(BIN)
        .arg(&library)
        .arg(mnt.path())
        .args(["-o", "ro,allow_other,ttl=1,dev,suid"])
        .output()
        .unwrap();
    let guard = Mounted(mnt.path().to_path_buf());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(crate::common::is_mounted(mnt.path()));
    let page = std::fs::read(mnt.path().join("西游记/1/offset-1.txt")).unwrap();
    let want = Command::new(BIN)
        .args(["read", "--state-file", "/nonexistent/state.json", "--root"])
        .arg(&library)
        .args(["西游记", "1"])
        .output()
        .unwrap();
    assert!(want.status.success());
    assert_eq!(
        String::from_utf8_lossy(&page),
        String::from_utf8_lossy(&want.stdout)
    );
    let out = Command::new(BIN)
        .arg("unmount")
        .arg(mnt.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    wait_unmounted(mnt.path());
    drop(guard);
}

/// After `kill -9` of the daemon while the kernel still holds the root's
/// attributes (a watched mount keeps them), `stat` of the mountpoint
/// succeeds; `mount` still names the mount stale and offers `--force`,
/// which clears it.
#[test]
fn a_stale_mount_with_cached_attributes_is_named_stale() {
    require_fuse!();
    let (_lib, root) = crate::common::book_library(&[("第1章 起.md", "一".as_bytes())]);
    let mut m = crate::common::Mount::new(&root, &["--ttl", "3600"]);
    std::fs::metadata(m.path()).unwrap();
    std::fs::read_dir(m.path()).unwrap().for_each(drop);
    m.kill_daemon();
    let cached = std::fs::metadata(m.path());
    let out = Command::new(BIN)
        .arg("mount")
        .arg(&root)
        .arg(m.path())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is a stale mount left by a daemon that died") && err.contains("--force"),
        "stat of the mountpoint gave {cached:?}; mount said:\n{err}"
    );
    let out = Command::new(BIN)
        .args(["mount", "--force", "--log-file", "/dev/null"])
        .arg(&root)
        .arg(m.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(m.path().join("书/1/offset-1.txt"))
            .unwrap()
            .contains("1: 一")
    );
    let out = novelfs(&["unmount", m.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}
