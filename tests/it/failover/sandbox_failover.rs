//! `-o failover` seen from inside a bubblewrap sandbox that bound the
//! mount, as an agent is given it (`bwrap --bind MNT /library …`): the
//! sandbox cannot remount, so its bind must keep working while the server
//! is SIGKILLed 20 times. 16 readers inside the sandbox (this test binary
//! run again there, as `reader_in_the_sandbox`) check every byte.
//!
//! `NOVELFS_TEST_FAILOVER_OFF=restart` (or `resend`, `journal`) reaches
//! the mount and turns failover off, to see this test fail without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{Mount, follow_log, fuse_available, skip};
use crate::failover::killed::{
    PageReaders, abort_connection, kill_servers, library, pages, stacks,
};

/// Set for the reader run inside the sandbox.
const READER: &str = "NOVELFS_SANDBOX_READER";

fn found(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// bwrap with the system read-only, the mount bound read-write at
/// /library (as an agent's sandbox binds it), the expected pages at
/// /expected and a directory the test writes `stop` into at /control.
fn sandbox(mnt: &Path, expected: &Path, control: &Path) -> Command {
    let mut cmd = Command::new("bwrap");
    cmd.args(["--ro-bind", "/usr", "/usr"]);
    for dir in ["/bin", "/sbin", "/lib", "/lib64", "/lib32"] {
        match std::fs::read_link(dir) {
            Ok(target) => {
                cmd.arg("--symlink").arg(target).arg(dir);
            }
            Err(_) if Path::new(dir).is_dir() => {
                cmd.args(["--ro-bind", dir, dir]);
            }
            Err(_) => {}
        }
    }
    let exe = std::env::current_exe().unwrap();
    cmd.args(["--proc", "/proc", "--dev", "/dev"])
        .arg("--bind")
        .arg(mnt)
        .arg("/library")
        .arg("--ro-bind")
        .arg(expected)
        .arg("/expected")
        .arg("--bind")
        .arg(control)
        .arg("/control")
        .arg("--ro-bind")
        .arg(&exe)
        .arg("/reader")
        .args(["--unshare-all", "--die-with-parent", "--new-session"])
        .args(["--setenv", READER, "1"])
        .args([
            "/reader",
            "--exact",
            "failover::sandbox_failover::reader_in_the_sandbox",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ]);
    cmd
}

#[test]
fn readers_in_a_sandbox_see_no_error_while_the_server_is_killed() {
    if !fuse_available() {
        return;
    }
    if !found("bwrap") {
        skip("bwrap is missing (apt-get install bubblewrap; .ci/run does)");
        return;
    }
    let (_tmp, root) = library(6);
    let mut mount = Mount::with_log(&root, &["-o", "failover"], "info");
    let log = follow_log(&mut mount);
    let mnt = mount.path().to_path_buf();
    let work = tempfile::tempdir().unwrap();
    let (expected, control) = (work.path().join("expected"), work.path().join("control"));
    std::fs::create_dir_all(&expected).unwrap();
    std::fs::create_dir_all(&control).unwrap();
    let mut names = String::new();
    for (i, (path, bytes)) in pages(&mnt).iter().enumerate() {
        names += &format!("{}\n", path.strip_prefix(&mnt).unwrap().display());
        std::fs::write(expected.join(i.to_string()), bytes).unwrap();
    }
    std::fs::write(expected.join("names"), names).unwrap();
    let mut child = sandbox(&mnt, &expected, &control)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bwrap starts");
    // The readers are under way once they said so.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !control.join("reading").exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the sandbox ended ({status}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            Instant::now() < deadline,
            "no reader started in the sandbox"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let holder = mount.pid();
    let killed = kill_servers(holder, 20);
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(control.join("stop"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            println!("{}", stacks(holder));
            abort_connection(&mnt);
            let _ = child.kill();
            panic!(
                "a reader in the sandbox hung after {killed} kills; the log:\n{}",
                log.lock().unwrap().join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The harness writes its own words on the same line first.
    let said = stdout
        .split("SANDBOX ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| {
            // A reader inside may still wait on a request never answered.
            abort_connection(&mnt);
            panic!(
                "no outcome from the sandbox ({}): {stdout}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let outcome: serde_json::Value = serde_json::from_str(said).unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "sandbox failover: {killed} SIGKILLs, {outcome} (load {})",
        load.split(' ').next().unwrap_or("?")
    );
    assert_eq!(outcome["failed"], serde_json::json!({}), "failed reads");
    assert_eq!(killed, 20, "a server to kill each time");
    assert!(outcome["reads"].as_u64().unwrap() > 100, "{outcome}");
    assert_eq!(outcome["wrong"], 0, "reads with wrong bytes");
    assert!(
        outcome["longest_ms"].as_u64().unwrap() < 5000,
        "a pause of {} ms",
        outcome["longest_ms"]
    );
    assert!(mount.alive(), "the holder serves on");
}

/// The readers, run by the test above inside the sandbox: 16 threads
/// checking every byte of /library against /expected until /control/stop
/// appears; the outcome on one line of stdout.
#[test]
#[ignore = "run by readers_in_a_sandbox_see_no_error_while_the_server_is_killed, in its sandbox"]
fn reader_in_the_sandbox() {
    if std::env::var_os(READER).is_none() {
        return;
    }
    let names = std::fs::read_to_string("/expected/names").unwrap();
    let expected: Vec<(PathBuf, Vec<u8>)> = names
        .lines()
        .enumerate()
        .map(|(i, name)| {
            let bytes = std::fs::read(format!("/expected/{i}")).unwrap();
            (Path::new("/library").join(name), bytes)
        })
        .collect();
    let readers = PageReaders::start(Arc::new(expected), 16);
    std::fs::write("/control/reading", "").unwrap();
    while !Path::new("/control/stop").exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = readers
        .finish(Duration::from_secs(15))
        .expect("a reader in the sandbox hung (a request never answered)");
    let failed: BTreeMap<String, u64> = o.failed;
    println!(
        "SANDBOX {}",
        serde_json::json!({
            "reads": o.reads,
            "failed": failed,
            "wrong": o.wrong,
            "longest_ms": o.longest.as_millis() as u64,
        })
    );
}
