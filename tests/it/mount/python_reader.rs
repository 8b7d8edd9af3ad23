//! Reading through a real mount from Python, whose `open()` asks `isatty()`
//! (ioctl TCGETS) of every file. The kernel forwards that ioctl to the
//! daemon on every open; once pages, names and attributes are cached it is
//! the only request a pass makes. The daemon's requests are watched in
//! fuser's debug log.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Mount;
use crate::common::daemon_log::DaemonLog;

/// Every `offset-N.txt` listed in every chapter directory.
fn listed_pages(mnt: &Path) -> Vec<PathBuf> {
    let mut pages = Vec::new();
    for book in std::fs::read_dir(mnt).unwrap() {
        let book = book.unwrap();
        // The root also lists the library's index files.
        if !book.file_type().unwrap().is_dir() {
            continue;
        }
        let book = book.path();
        for chapter in std::fs::read_dir(&book).unwrap() {
            let chapter = chapter.unwrap().path();
            if !chapter.is_dir() {
                continue;
            }
            for page in std::fs::read_dir(&chapter).unwrap() {
                let page = page.unwrap().path();
                let name = page.file_name().unwrap().to_string_lossy().into_owned();
                if name.starts_with("offset-") && name.ends_with(".txt") {
                    pages.push(page);
                }
            }
        }
    }
    pages.sort();
    pages
}

/// Reads each path given on stdin (one a line) with Python's `open()` in
/// the default (buffered, isatty-probing) mode; prints per page whether
/// `isatty()` said yes (asked only with the argument `ask-isatty`: that is
/// one more ioctl), then the text, as JSON.
const PYTHON_READER: &str = r#"
import json, sys
ask = sys.argv[1:] == ["ask-isatty"]
out = []
for path in sys.stdin.read().split("\n"):
    if path:
        with open(path, encoding="utf-8") as f:
            out.append([ask and f.isatty(), f.read()])
json.dump(out, sys.stdout)
"#;

fn python_read(pages: &[PathBuf], ask_isatty: bool) -> Vec<(bool, String)> {
    use std::io::Write;
    let mut child = Command::new("python3")
        .args(["-c", PYTHON_READER])
        .args(ask_isatty.then_some("ask-isatty"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let list: Vec<&str> = pages.iter().map(|p| p.to_str().unwrap()).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(list.join("\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the Python reader failed");
    let v: Vec<(bool, String)> = serde_json::from_slice(&out.stdout).expect("reader JSON");
    assert_eq!(v.len(), pages.len());
    v
}

#[test]
fn python_reads_every_page_and_a_warm_pass_asks_the_daemon_only_ioctls() {
    require_fuse!();
    let (guard, root) = crate::common::reference_library();
    let no_state = guard.path().join("no-state.json");
    let mut mount = Mount::with_log(
        &root,
        &["--state-file", no_state.to_str().unwrap()],
        "fuser=debug",
    );
    let log = DaemonLog::follow(&mut mount);
    let pages = listed_pages(mount.path());
    assert!(pages.len() > 50, "only {} pages listed", pages.len());

    // Cold: every page Python reads is the page a plain read gets.
    let cold = python_read(&pages, true);
    for (page, (tty, text)) in pages.iter().zip(&cold) {
        assert!(!tty, "{} claims to be a terminal", page.display());
        let plain = std::fs::read_to_string(page).unwrap();
        assert!(
            *text == plain,
            "{}: Python read {} bytes, a plain read {}",
            page.display(),
            text.len(),
            plain.len()
        );
    }

    // Warm: nothing but the isatty() probes reaches the daemon, one at most
    // per open (a newer Python may not probe regular files at all). The
    // kernel may still evict an unused inode, and its cached pages with it,
    // when other work fills memory (the rest of the suite runs beside this
    // test): a pass that re-read a page is followed by another, which must
    // then be served by the kernel alone.
    let mut passes = Vec::new();
    let requests = loop {
        let sentinel = format!("pass-{}", passes.len());
        let mark = log.mark(mount.path(), &format!("{sentinel}-start"));
        let warm = python_read(&pages, false);
        assert!(
            warm.iter().map(|w| &w.1).eq(cold.iter().map(|c| &c.1)),
            "the warm pass read other bytes"
        );
        let done = format!("{sentinel}-done");
        let _ = std::fs::metadata(mount.path().join(&done));
        let requests = log.requests_until(mark, &done);
        let others: Vec<String> = requests
            .iter()
            .filter(|op| *op != "IOCTL")
            .cloned()
            .collect();
        if others.is_empty() {
            break requests;
        }
        passes.push(others);
        assert!(
            passes.len() < 3,
            "warm passes of {} opens sent {passes:?}",
            pages.len()
        );
    };
    assert!(
        requests.len() <= pages.len(),
        "{} IOCTLs for {} opens",
        requests.len(),
        pages.len()
    );

    // The probe itself: ENOTTY, for a page and for a chapter directory,
    // answered by the daemon (fuser's default handler, for an ioctl the
    // filesystem does not implement, answers ENOSYS).
    let mark = log.len();
    for path in [&pages[0], &pages[0].parent().unwrap().to_path_buf()] {
        let f = std::fs::File::open(path).unwrap();
        // SAFETY: TCGETS writes one termios into `term`, a valid out pointer.
        let mut term: libc::termios = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::TCGETS, &mut term) };
        let err = std::io::Error::last_os_error();
        assert_eq!(r, -1, "TCGETS succeeded on {}", path.display());
        assert_eq!(
            crate::common::errno(&err),
            libc::ENOTTY,
            "{}",
            path.display()
        );
    }
    let _ = std::fs::metadata(mount.path().join("probe-done"));
    let requests = log.requests_until(mark, "probe-done");
    assert!(
        requests.iter().any(|op| op == "IOCTL"),
        "the page's TCGETS never reached the daemon: {requests:?}"
    );
    assert!(mount.alive());
}
