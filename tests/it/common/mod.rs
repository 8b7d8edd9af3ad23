//! Shared test support: the reference library and its cases. A mount and
//! what it runs (`mount`) and a page's checks (`pages`) are modules of
//! their own, re-exported here.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod bucket;
pub mod daemon_log;
pub mod golden;
pub mod machine;
pub mod readers;
pub mod s3;
#[path = "../../s3/harness.rs"]
pub mod s3_server;
pub mod sshfs;
pub mod uring;

mod mount;
mod pages;

pub use mount::*;
pub use pages::*;

/// Whether this machine can mount: `/dev/fuse` opens read-write and we are
/// root (the pure-Rust mount needs no helper then). Otherwise a mount test
/// says it skipped and why (see `skip`), and passes.
pub fn fuse_available() -> bool {
    let why = if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_err()
    {
        "/dev/fuse cannot be opened read-write"
    } else if unsafe { libc::geteuid() } != 0 {
        "the tests mount as root and this is not root"
    } else {
        return true;
    };
    skip(&format!("no FUSE here: {why}"));
    false
}

/// Says a test skips (part of it, or all of it when the caller returns) and
/// why. Under `CI=true` (set by .ci/run, which installs everything the tests
/// need) a skip is a failure instead: it panics with the reason, so that a
/// missing tool cannot make a test pass vacuously there.
pub fn skip(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("would skip under CI=true: {why}");
    }
    eprintln!("SKIPPED ({why})");
}

/// Runs `f` on another thread and fails if it takes longer than `secs`:
/// a hung FUSE request must not hang the test runner silently.
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("{what}: no answer within {secs} s"))
}

/// `n` numbered lines of Chinese prose, each line starting with `tag`.
pub fn prose_lines(n: usize, tag: &str) -> String {
    (1..=n)
        .map(|i| format!("{tag}第{i}行，月光落在旧街的石板上。"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A directory's names, sorted.
pub fn sorted_names(p: &Path) -> std::io::Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(p)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    v.sort();
    Ok(v)
}

/// The first line of a test that mounts: returns from it, saying so, where
/// nothing can be mounted.
#[macro_export]
macro_rules! require_fuse {
    () => {
        if !$crate::common::fuse_available() {
            return;
        }
    };
}

/// One line of `tests/golden/cases.jsonl` (format in tests/golden/README.md).
#[derive(Debug, Clone)]
pub struct Case {
    pub book: String,
    pub chapter: String,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
    pub text: Option<String>,
    pub json: Option<Value>,
    pub chain: Option<Vec<u64>>,
    pub error: Option<String>,
    pub state: Option<Value>,
}

/// The index files every book directory lists after its chapters.
pub const BOOK_INDEX_FILES: [&str; 2] = ["novel_chapters.txt", "novel_chapters.json"];

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Builds the reference library in a fresh temp dir; returns (guard, canonical root).
pub fn reference_library() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("lib");
    let status = std::process::Command::new("python3")
        .arg(golden_dir().join("make_library.py"))
        .arg(&root)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "make_library.py failed");
    let root = std::fs::canonicalize(&root).unwrap();
    (dir, root)
}

/// The cases with `@ROOT@` replaced by `root`.
pub fn cases(root: &Path) -> Vec<Case> {
    let raw = std::fs::read_to_string(golden_dir().join("cases.jsonl")).expect("cases.jsonl");
    let root = root.to_str().unwrap();
    raw.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: Value =
                serde_json::from_str(&line.replace("@ROOT@", root)).expect("case parses");
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            Case {
                book: s("book").unwrap(),
                chapter: s("chapter").unwrap(),
                offset: v.get("offset").and_then(Value::as_u64),
                limit: v.get("limit").and_then(Value::as_u64),
                text: s("text"),
                json: v.get("json").cloned(),
                chain: v
                    .get("chain")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|x| x.as_u64().unwrap()).collect()),
                error: s("error"),
                state: v.get("state").cloned(),
            }
        })
        .collect()
}

/// The exact bytes `JSON.stringify(v, null, 2) + "\n"` gives for a golden value
/// (serde_json keeps key order with `preserve_order`).
pub fn pretty_json(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

/// The errno of an io::Error, for assertions.
pub fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

/// A library with one book `书` holding `files`; returns (guard, canonical root).
pub fn book_library(files: &[(&str, &[u8])]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("lib");
    let book = root.join("novels").join("书");
    std::fs::create_dir_all(&book).unwrap();
    for (name, body) in files {
        std::fs::write(book.join(name), body).unwrap();
    }
    (dir, root)
}

/// A small deterministic PRNG (xorshift64*), so failures can be replayed by seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Errno name for counters.
pub fn errno_name(code: i32) -> String {
    match code {
        libc::ENOENT => "ENOENT".into(),
        libc::EIO => "EIO".into(),
        libc::ESTALE => "ESTALE".into(),
        libc::ENOTDIR => "ENOTDIR".into(),
        libc::EACCES => "EACCES".into(),
        libc::ENOTCONN => "ENOTCONN".into(),
        libc::ENAMETOOLONG => "ENAMETOOLONG".into(),
        libc::EISDIR => "EISDIR".into(),
        libc::ELOOP => "ELOOP".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::ECONNABORTED => "ECONNABORTED".into(),
        libc::ECANCELED => "ECANCELED".into(),
        n => format!("errno{n}"),
    }
}

/// Makes `cmd` run without the capabilities that let root read what mode
/// bits forbid (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): dropped from the
/// bounding set before exec, so a root child keeps every other capability
/// (mounting included) but meets `chmod 000` as any user would.
pub fn without_dac_override(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing is allocated in the child.
    unsafe {
        cmd.pre_exec(|| {
            // CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (linux/capability.h).
            for cap in [1 as libc::c_ulong, 2] {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }
}

/// Retries `f` every 20 ms for up to 5 s: a watched mount hears of a change
/// a moment after it is made (a strict one at once).
pub fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    eventually_within(what, std::time::Duration::from_secs(5), f)
}

/// `eventually`, waiting at most `limit`.
pub fn eventually_within<T>(
    what: &str,
    limit: std::time::Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "never happened: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The lines a foreground daemon writes on its (piped) stderr, collected
/// on a thread as they come.
pub fn follow_log(mount: &mut Mount) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use std::io::BufRead;
    let stderr = mount
        .child
        .as_mut()
        .and_then(|c| c.stderr.take())
        .expect("daemon stderr is piped");
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).split(b'\n') {
            let Ok(line) = line else { break };
            sink.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&line).into_owned());
        }
    });
    lines
}

/// The first of `names` found on PATH or in the sbin directories (where
/// root's tools live even when PATH lacks them).
pub fn find_tool(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .collect();
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// A port on 127.0.0.1 no one listens on now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
    l.local_addr().unwrap().port()
}
