//! A daemonized mount's log: `--log-file` (and `-o log_file=`) hold the
//! mounted line (transport, watched or why not), what the daemon gave up
//! on, and the unmounted line; fuser's "[Not Implemented]" warnings are
//! not there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{book_library, is_mounted};

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");
/// How fuser's default handlers warn of a request the filesystem does not
/// implement.
const NOT_IMPLEMENTED: &str = "[Not Implemented]";

/// A background mount (no `-f`: the daemon detaches), unmounted on drop.
struct Background {
    mnt: tempfile::TempDir,
}

impl Background {
    fn mount(root: &Path, args: &[&str]) -> Background {
        Background::mount_with_env(root, args, &[])
    }

    fn mount_with_env(root: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Background {
        let mnt = tempfile::Builder::new()
            .prefix("novelfs-mnt")
            .tempdir()
            .unwrap();
        let out = Command::new(BIN)
            .arg("mount")
            .arg(root)
            .arg(mnt.path())
            .args(["--state-file", "/nonexistent/state.json"])
            .args(args)
            // The mounted line names the transport: the /dev/fuse loop is
            // asked for, since `auto` follows the kernel's switch, which
            // another process may turn on meanwhile.
            .args(if args.iter().any(|a| a.contains("io_uring")) {
                &[][..]
            } else {
                &["--io-uring", "off"][..]
            })
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(is_mounted(mnt.path()));
        Background { mnt }
    }

    fn path(&self) -> &Path {
        self.mnt.path()
    }

    fn unmount(&self) {
        let status = Command::new(BIN)
            .arg("unmount")
            .arg(self.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if is_mounted(self.path()) {
            let _ = Command::new(BIN)
                .args(["unmount", "--lazy"])
                .arg(self.path())
                .status();
        }
    }
}

/// Waits until the log holds `needle`; the log so far.
fn log_with(log: &Path, needle: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no {needle:?} in the log within 10 s:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asks for an extended attribute, which novelfs does not implement.
fn getxattr(p: &Path) {
    let path = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = [0u8; 64];
    // SAFETY: NUL-terminated strings and a buffer of the length given.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            c"user.test".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert!(n < 0, "no extended attributes in novelfs");
}

fn library() -> (tempfile::TempDir, PathBuf) {
    // Undecodable bytes: the daemon gives up on this chapter.
    let bad: &[u8] = &[0x81, 0x20, 0xfe, 0x7f, 0x81, 0x20, 0xfe, 0x7f];
    book_library(&[("第1章 起.md", "一".as_bytes()), ("第2章 坏.txt", bad)])
}

#[test]
fn a_background_mount_logs_to_its_log_file() {
    require_fuse!();
    let (lib, root) = library();
    let log = lib.path().join("novelfs.log");
    let m = Background::mount(&root, &["--log-file", log.to_str().unwrap()]);
    let mounted = format!(
        "mounted {} at {} (transport: classic /dev/fuse; watched",
        root.display(),
        m.path().display()
    );
    log_with(&log, &mounted);
    let page = m.path().join("书/1/offset-1.txt");
    assert!(std::fs::read_to_string(&page).unwrap().contains("1: 一"));
    getxattr(&page);
    getxattr(m.path());
    assert_eq!(
        crate::common::sorted_names(&m.path().join("书/2")).unwrap(),
        ["ERROR"]
    );
    log_with(
        &log,
        "gave up on /书/第2章 坏.txt: cannot detect text encoding",
    );
    m.unmount();
    let text = log_with(&log, &format!("unmounted {}", m.path().display()));
    assert!(!is_mounted(m.path()));
    // fuser's "[Not Implemented]" warnings (the getxattrs above make them)
    // are left out; RUST_LOG=fuser=warn brings them back, which shows the
    // words looked for are the ones fuser writes.
    let warned_log = lib.path().join("novelfs-fuser-warn.log");
    let warned = Background::mount_with_env(
        &root,
        &["--log-file", warned_log.to_str().unwrap()],
        &[("RUST_LOG", "fuser=warn".as_ref())],
    );
    getxattr(warned.path());
    log_with(&warned_log, NOT_IMPLEMENTED);
    warned.unmount();
    assert!(!text.contains(NOT_IMPLEMENTED), "{text}");
}

#[test]
fn without_syslog_a_background_mount_logs_to_the_xdg_state_directory() {
    require_fuse!();
    if Path::new("/dev/log").exists() {
        eprintln!("SKIPPED: syslog listens at /dev/log, so the mount logs there");
        return;
    }
    let (lib, root) = library();
    let state = lib.path().join("state");
    // Quiet on stderr (Background checks it), and the mounted line names the file.
    let m = Background::mount_with_env(&root, &[], &[("XDG_STATE_HOME", state.as_os_str())]);
    let log = state.join("novelfs/novelfs.log");
    log_with(&log, &format!("at {} (transport: ", m.path().display()));
    log_with(&log, &format!("; log: {})", log.display()));
    m.unmount();
    log_with(&log, &format!("unmounted {}", m.path().display()));
}

#[test]
fn a_log_file_given_as_a_mount_option_says_why_nothing_is_watched() {
    require_fuse!();
    let (lib, root) = library();
    let log = lib.path().join("from-option.log");
    let option = format!("log_file={},nowatch,io_uring=off", log.display());
    let m = Background::mount(&root, &["-o", &option]);
    log_with(
        &log,
        &format!(
            "(transport: classic /dev/fuse; unwatched (--no-watch): changes show within the TTL of 1 s; log: {})",
            log.display()
        ),
    );
    m.unmount();
    log_with(&log, "unmounted");
}

#[test]
fn a_log_file_that_cannot_be_opened_fails_the_mount_with_the_reason() {
    require_fuse!();
    let (_lib, root) = library();
    let mnt = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("mount")
        .arg(&root)
        .arg(mnt.path())
        .args(["--log-file", "/nonexistent/dir/novelfs.log"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot open the log file /nonexistent/dir/novelfs.log: No such file"),
        "{stderr}"
    );
    assert!(!is_mounted(mnt.path()));
}

/// A mount as mount(8), fstab or systemd make it: root, no HOME, no
/// XDG_* and no syslog. It logs to /var/log/novelfs/novelfs.log and keeps
/// its persistent index in /var/cache/novelfs. Run in a mount namespace of
/// its own with tmpfs over /var/log and /var/cache (and /dev/log hidden),
/// so that nothing of the machine's is read or changed.
#[test]
fn a_system_mount_without_home_logs_to_var_log_and_indexes_in_var_cache() {
    require_fuse!();
    if Command::new("unshare").arg("--version").output().is_err() {
        crate::common::skip("unshare is not installed (package util-linux)");
        return;
    }
    let (lib, root) = library();
    let t = lib.path();
    std::fs::create_dir(t.join("mnt")).unwrap();
    let script = r#"set -eu
t=$1 root=$2 bin=$3
mount -t tmpfs tmpfs /var/log
mount -t tmpfs tmpfs /var/cache
if [ -e /dev/log ]; then mount --bind /dev/null /dev/log; fi
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$bin" mount "$root" "$t/mnt" --io-uring off \
  --state-file /nonexistent/state.json 2> "$t/stderr"
cat "$t/mnt/书/1/offset-1.txt" > "$t/page"
ls "$t/mnt/书" > /dev/null
"$bin" unmount "$t/mnt"
for i in $(seq 100); do grep -q unmounted /var/log/novelfs/novelfs.log 2>/dev/null && break; sleep 0.1; done
cp /var/log/novelfs/novelfs.log "$t/log"
ls /var/cache/novelfs > "$t/cache"
"#;
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(t)
        .arg(&root)
        .arg(BIN)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(t.join(name)).unwrap_or_default();
    assert_eq!(read("stderr"), "", "a mount that works prints nothing");
    assert!(read("page").contains("1: 一"), "{}", read("page"));
    let log = read("log");
    assert!(log.contains("log: /var/log/novelfs/novelfs.log)"), "{log}");
    assert!(log.contains("unmounted"), "{log}");
    assert!(
        !read("cache").trim().is_empty(),
        "no index in /var/cache/novelfs"
    );
}
