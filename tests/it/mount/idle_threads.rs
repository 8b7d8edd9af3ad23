//! The daemon's threads that wait for something rare (the mount's end)
//! are not woken by the requests it serves: on the classic transport
//! every request the kernel queues wakes each sleeper on `/dev/fuse`,
//! so a thread parked there costs a context switch per request.

use crate::common::{Mount, book_library, prose_lines};

/// The voluntary context switches of the server's thread named `name`.
fn switches_of(pid: u32, name: &str) -> Option<u64> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let task = task.ok()?.path();
        let comm = std::fs::read_to_string(task.join("comm")).ok()?;
        if comm.trim_end() != name {
            continue;
        }
        let status = std::fs::read_to_string(task.join("status")).ok()?;
        return status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok());
    }
    None
}

#[test]
fn requests_do_not_wake_the_thread_watching_for_the_mount_s_end() {
    let text = prose_lines(40, "idle");
    let (_dir, root) = book_library(&[("第1章 开始.md", text.as_bytes())]);
    let mnt = Mount::new(&root, &[]);
    let chapter = mnt.path().join("书/第1章 开始.md");
    assert!(chapter.join("offset-1.txt").exists());
    let pid = mnt.server_pid();
    let before = switches_of(pid, "novelfs-ending").expect("a thread watching for the end");
    // Each name is new to the kernel, so each is a LOOKUP the daemon answers.
    let asked = 3000u64;
    for i in 0..asked {
        assert!(!chapter.join(format!("probe-{i}")).exists());
    }
    let after = switches_of(pid, "novelfs-ending").expect("the watcher is still there");
    let woken = after - before;
    assert!(
        woken < asked / 3,
        "the watcher woke {woken} times for {asked} requests"
    );
}
