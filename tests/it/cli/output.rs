//! Every command that prints, with its stdout lost: to `/dev/full` it
//! exits non-zero with one line on stderr (never 0 with nothing written,
//! never a panic); to a pipe whose reader has gone (`| head` done) it
//! ends quietly, exit 0 and nothing on stderr.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{Mount, book_library, fuse_available};

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");

/// The commands that print, each as its argv after `novelfs`.
fn printing(root: &Path, index_dir: &Path, mnt: Option<&Path>) -> Vec<Vec<String>> {
    let root = root.display().to_string();
    let index_dir = index_dir.display().to_string();
    let mut all: Vec<Vec<&str>> = vec![
        vec!["books", "--root", &root],
        vec!["books", "--root", &root, "--json"],
        vec!["read", "--root", &root, "书", "1"],
        vec!["read", "--root", &root, "书", "1", "--json"],
        vec!["chapters", "--root", &root, "书"],
        vec!["chapters", "--root", &root, "书", "--tool"],
        vec!["man"],
        vec!["completions", "bash"],
        vec!["--help"],
        vec!["mount", "--help"],
        vec!["--version"],
        vec!["index", &root, "--index-dir", &index_dir],
    ];
    let mnt = mnt.map(|m| m.display().to_string());
    if let Some(mnt) = &mnt {
        all.push(vec!["status", mnt]);
        all.push(vec!["status", mnt, "--json"]);
        all.push(vec!["status", mnt, "--prometheus"]);
    }
    all.into_iter()
        .map(|a| a.into_iter().map(String::from).collect())
        .collect()
}

fn run(args: &[String], stdout: Stdio) -> Output {
    // `index` starts from an empty folder each time, so that each run
    // says the same on stderr.
    if let Some(i) = args.iter().position(|a| a == "--index-dir") {
        let dir = Path::new(&args[i + 1]);
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
    }
    Command::new(BIN)
        .args(args)
        .env_remove("NOVELFS_ROOT")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("novelfs runs")
}

/// The write end of a pipe whose read end is closed already.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors are new and owned here alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

/// What is wrong with `args` run with its stdout lost: beside what it
/// says on stderr when its output is read, one line more to `/dev/full`
/// and a failure, nothing more to a closed pipe and success.
fn check(args: &[String]) -> Vec<String> {
    let mut wrong = Vec::new();
    let read = run(args, Stdio::piped());
    assert!(read.status.success(), "{args:?}: {read:?}");
    let said = String::from_utf8_lossy(&read.stderr).into_owned();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = run(args, Stdio::from(full));
    let err = String::from_utf8_lossy(&out.stderr);
    let more = err
        .strip_prefix(said.as_str())
        .map(|rest| rest.lines().count());
    if out.status.success() || out.status.code() == Some(101) || more != Some(1) {
        wrong.push(format!(
            "{args:?} > /dev/full: {} and stderr {err:?}",
            out.status
        ));
    }
    let out = run(args, closed_pipe());
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || err != said {
        wrong.push(format!(
            "{args:?} | (closed): {} and stderr {err:?}",
            out.status
        ));
    }
    wrong
}

#[test]
fn lost_output_fails_in_one_line_and_a_closed_pipe_ends_quietly() {
    let (_guard, root) = book_library(&[
        ("第1章 起.txt", "第一行\n第二行\n".as_bytes()),
        ("第2章 承.txt", "第三行\n".as_bytes()),
    ]);
    let index_dir = tempfile::tempdir().unwrap();
    // `status` needs a mount (`fuse_available` says when it skips).
    let mount = fuse_available().then(|| Mount::new(&root, &[]));
    let wrong: Vec<String> = printing(&root, index_dir.path(), mount.as_ref().map(Mount::path))
        .iter()
        .flat_map(|args| check(args))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
