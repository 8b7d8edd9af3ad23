//! Shared test support: the reference library and its cases.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

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
            let v: Value = serde_json::from_str(&line.replace("@ROOT@", root)).expect("case parses");
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            Case {
                book: s("book").unwrap(),
                chapter: s("chapter").unwrap(),
                offset: v.get("offset").and_then(Value::as_u64),
                limit: v.get("limit").and_then(Value::as_u64),
                text: s("text"),
                json: v.get("json").cloned(),
                chain: v.get("chain").and_then(Value::as_array).map(|a| a.iter().map(|x| x.as_u64().unwrap()).collect()),
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

/// A real mount of `novelfs mount -f` in a child process, unmounted on drop
/// even when the test fails.
pub struct Mount {
    pub dir: tempfile::TempDir,
    pub child: Option<std::process::Child>,
}

impl Mount {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Mounts `root` with extra CLI arguments; panics with the daemon's
    /// stderr if it does not become ready.
    pub fn new(root: &Path, extra: &[&str]) -> Mount {
        let dir = tempfile::Builder::new().prefix("novelfs-mnt").tempdir().unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
            .arg("mount")
            .arg(root)
            .arg(dir.path())
            .arg("-f")
            .args(extra)
            .env("RUST_LOG", "warn")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn novelfs mount");
        let mut m = Mount { dir, child: Some(child) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !is_mounted(m.path()) {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                m.child.as_mut().unwrap().stderr.take().unwrap().read_to_string(&mut err).ok();
                m.child = None;
                panic!("novelfs mount exited early ({status}): {err}");
            }
            assert!(std::time::Instant::now() < deadline, "mount not ready in 20 s");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        m
    }

    /// Sends SIGTERM and waits for the daemon; returns its exit status.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return Some(s);
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                return child.wait().ok();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.terminate();
        if is_mounted(self.path()) {
            let c = std::ffi::CString::new(self.path().as_os_str().as_encoded_bytes()).unwrap();
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

/// Whether `path` is listed in /proc/self/mountinfo.
pub fn is_mounted(path: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = path.to_str().unwrap().replace(' ', "\\040");
    info.lines().any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// The errno of an io::Error, for assertions.
pub fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}
