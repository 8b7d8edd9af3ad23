//! Shared test support: the reference library and its cases.
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

/// A mount that asks the daemon about every name (`--ttl 0`) with no
/// switch file, plus `extra` arguments.
pub fn strict_mount(root: &Path, extra: &[&str]) -> Mount {
    let mut args = vec!["--ttl", "0", "--state-file", "/nonexistent/state.json"];
    args.extend_from_slice(extra);
    Mount::new(root, &args)
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
        Mount::with_log(root, extra, "warn")
    }

    /// Like `new`, with `RUST_LOG=log_filter` for the daemon. Its stderr is
    /// piped: a test that asks for much logging must drain it.
    pub fn with_log(root: &Path, extra: &[&str], log_filter: &str) -> Mount {
        Mount::with_env(root, extra, log_filter, &[])
    }

    /// Like `with_log`, with more variables in the daemon's environment.
    pub fn with_env(
        root: &Path,
        extra: &[&str],
        log_filter: &str,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Mount {
        Mount::with_command(root, extra, log_filter, |cmd| {
            cmd.envs(env.iter().copied());
        })
    }

    /// Like `with_log`, with the daemon's command changed by `tweak` first.
    pub fn with_command(
        root: &Path,
        extra: &[&str],
        log_filter: &str,
        tweak: impl FnOnce(&mut std::process::Command),
    ) -> Mount {
        let dir = tempfile::Builder::new()
            .prefix("novelfs-mnt")
            .tempdir()
            .unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"));
        cmd.arg("mount")
            .arg(root)
            .arg(dir.path())
            .arg("-f")
            .args(extra)
            // No persistent index unless a test asks for one: a mount
            // must not leave files in the home of whoever runs the tests.
            .args(if extra.iter().any(|a| a.contains("index")) {
                &[][..]
            } else {
                &["--no-index"][..]
            })
            // The classic /dev/fuse loop unless a test asks for io_uring
            // (the kernel switch may be on for one of those meanwhile).
            .args(if extra.contains(&"--io-uring") {
                &[][..]
            } else {
                &["--io-uring", "off"][..]
            })
            .env("RUST_LOG", log_filter)
            .stderr(std::process::Stdio::piped());
        tweak(&mut cmd);
        let child = cmd.spawn().expect("spawn novelfs mount");
        let mut m = Mount {
            dir,
            child: Some(child),
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !is_mounted(m.path()) {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                m.child
                    .as_mut()
                    .unwrap()
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .ok();
                m.child = None;
                panic!("novelfs mount exited early ({status}): {err}");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "mount not ready in 20 s"
            );
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
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// The errno of an io::Error, for assertions.
pub fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

/// `(VmRSS, VmHWM)` of a process in KiB, from /proc/<pid>/status.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

impl Mount {
    /// The daemon's pid (the `-f` child serves the mount itself).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("daemon running").id()
    }

    /// The process that serves the requests: the holder's child named
    /// `novelfs-server` when the mount has a holder (failover, on by
    /// default), else the daemon itself. What a test measures the memory
    /// or CPU time of.
    pub fn server_pid(&self) -> u32 {
        server_of(self.pid()).unwrap_or(self.pid())
    }

    /// SIGKILLs the daemon as a user or systemd would, and waits until it
    /// and its server are gone: the mount then has no process left (with a
    /// holder, the server gets SIGKILL as the holder ends and is gone a
    /// moment after it; a kernel connection ends with its last process).
    pub fn kill_daemon(&mut self) {
        let left = descendants(self.pid());
        let mut child = self.child.take().expect("daemon running");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        for pid in left {
            // Gone, or a zombie not yet reaped by its new parent whose
            // threads have all ended (a zombie leader's process lives on
            // while any other thread of it does, its descriptors too).
            let running = || {
                let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')));
                let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
                    .map(|t| t.count())
                    .unwrap_or(0);
                zombie.is_ok_and(|z| !z || threads > 1)
            };
            while running() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{pid}, started by the daemon, outlives it"
                );
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    /// The daemon has not exited and the mount still answers a listing.
    pub fn alive(&mut self) -> bool {
        let running = self
            .child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none());
        running && std::fs::read_dir(self.path()).is_ok()
    }
}

/// The server's pid: the holder's live child named `novelfs-server`.
pub fn server_of(holder: u32) -> Option<u32> {
    let children =
        std::fs::read_to_string(format!("/proc/{holder}/task/{holder}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .find(|p| {
            let alive = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| !r.starts_with('Z')));
            alive
                && std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "novelfs-server")
        })
}

/// Every process below `pid` (children of any of its threads, theirs, …):
/// whatever may hold the mount's connection beside it, whatever its name
/// is yet (a server exec'd a moment ago is still called `exe`).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut look = vec![pid];
    while let Some(p) = look.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for c in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                found.push(c);
                look.push(c);
            }
        }
    }
    found
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

/// The UTF-16 length of a string, as JavaScript counts it.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// What a page file says about itself, once it has been checked to be one
/// whole, self-consistent page.
#[derive(Debug, Clone)]
pub struct PageInfo {
    pub path: String,
    pub offset: u64,
    pub total_lines: u64,
    pub chars: usize,
    pub truncated: bool,
    /// (number, text) of every shown line.
    pub lines: Vec<(u64, String)>,
}

impl PageInfo {
    fn check_lines(&self, offset: u64) -> Result<(), String> {
        if self.offset != offset {
            return Err(format!(
                "page offset {} where {offset} was asked",
                self.offset
            ));
        }
        if self.lines.is_empty() {
            return Err("a page without lines".into());
        }
        for (k, (n, _)) in self.lines.iter().enumerate() {
            if *n != offset + k as u64 {
                return Err(format!(
                    "line {k} of the page is numbered {n}, want {}",
                    offset + k as u64
                ));
            }
        }
        let joined: Vec<&str> = self.lines.iter().map(|(_, t)| t.as_str()).collect();
        let units = utf16_len(&joined.join("\n"));
        if units != self.chars {
            return Err(format!(
                "chars {} but the lines hold {units} UTF-16 units",
                self.chars
            ));
        }
        let last = self.lines.last().unwrap().0;
        if self.total_lines == 0 {
            if !(self.lines.len() == 1
                && self.lines[0].1.is_empty()
                && offset == 1
                && !self.truncated)
            {
                return Err("an empty chapter must show one empty line 1".into());
            }
        } else if last > self.total_lines {
            return Err(format!("line {last} beyond total {}", self.total_lines));
        } else if !self.truncated && last != self.total_lines {
            return Err(format!(
                "not truncated but ends at line {last} of {}",
                self.total_lines
            ));
        }
        Ok(())
    }
}

/// Checks that `bytes` is one whole text page (`format_read` + "\n") that
/// starts at `offset`: header, consecutive numbered lines, and a footer
/// whose counts agree with the lines.
pub fn check_text_page(bytes: &[u8], offset: u64) -> Result<PageInfo, String> {
    let s = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let rest = s
        .strip_prefix("<path>")
        .ok_or("does not start with <path>")?;
    let (path, rest) = rest.split_once("</path>\n").ok_or("no </path>")?;
    let body = rest
        .strip_prefix("<type>novel-chapter</type>\n<content>\n")
        .ok_or("no <type>/<content> header")?;
    let body = body
        .strip_suffix("\n</content>\n")
        .ok_or("does not end with </content>\\n")?;
    let (lines_part, footer) = body
        .rsplit_once("\n\n")
        .ok_or("no blank line before the footer")?;
    let mut lines = Vec::new();
    for l in lines_part.split('\n') {
        let (n, t) = l
            .split_once(": ")
            .ok_or_else(|| format!("unnumbered line {l:?}"))?;
        let n: u64 = n.parse().map_err(|_| format!("bad line number in {l:?}"))?;
        lines.push((n, t.to_string()));
    }
    let num = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("bad number {s:?} in footer {footer:?}"))
    };
    let (total_lines, chars, truncated) = if let Some(f) = footer.strip_prefix("(输出截断。本章共 ")
    {
        // 本章共 N 行，已显示 a-b 行 / M 字。用 offset=b+1 继续阅读。)
        let (total, f) = f.split_once(" 行，已显示 ").ok_or("truncated footer")?;
        let (range, f) = f.split_once(" 行 / ").ok_or("truncated footer range")?;
        let (chars, f) = f
            .split_once(" 字。用 offset=")
            .ok_or("truncated footer chars")?;
        let next = f
            .strip_suffix(" 继续阅读。)")
            .ok_or("truncated footer end")?;
        let (a, b) = range.split_once('-').ok_or("footer range")?;
        let (a, b, next) = (num(a)?, num(b)?, num(next)?);
        let last = lines.last().map(|l| l.0).unwrap_or(0);
        if a != offset || b != last || next != b + 1 {
            return Err(format!(
                "footer {footer:?} disagrees with lines {offset}-{last}"
            ));
        }
        (num(total)?, num(chars)? as usize, true)
    } else if let Some(f) = footer.strip_prefix("(本章共 ") {
        let (total, f) = f.split_once(" 行 / ").ok_or("footer")?;
        let chars = f.strip_suffix(" 字)").ok_or("footer end")?;
        (num(total)?, num(chars)? as usize, false)
    } else {
        return Err(format!("unknown footer {footer:?}"));
    };
    let info = PageInfo {
        path: path.to_string(),
        offset,
        total_lines,
        chars,
        truncated,
        lines,
    };
    info.check_lines(offset)?;
    Ok(info)
}

/// The keys of a JSON page, in the order §1.6 writes them.
pub const JSON_KEYS: [&str; 9] = [
    "book",
    "chapter",
    "file",
    "path",
    "offset",
    "totalLines",
    "chars",
    "truncated",
    "lines",
];

/// Checks that `bytes` is one whole JSON page starting at `offset`: the nine
/// keys in order, consecutive lines, and `chars` matching them.
pub fn check_json_page(bytes: &[u8], offset: u64) -> Result<PageInfo, String> {
    let s = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    if !s.ends_with("}\n") {
        return Err("JSON page does not end with }\\n".into());
    }
    let v: Value = serde_json::from_str(s).map_err(|e| format!("JSON does not parse: {e}"))?;
    let obj = v.as_object().ok_or("not an object")?;
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    if keys != JSON_KEYS {
        return Err(format!("keys {keys:?}"));
    }
    if obj["chapter"] != obj["file"] {
        return Err("chapter != file".into());
    }
    let path = obj["path"].as_str().ok_or("path")?.to_string();
    let file = obj["file"].as_str().ok_or("file")?;
    if !path.ends_with(&format!("/{file}")) {
        return Err(format!("path {path:?} does not end with the file {file:?}"));
    }
    let lines = obj["lines"]
        .as_array()
        .ok_or("lines")?
        .iter()
        .map(|l| {
            let o = l
                .as_object()
                .filter(|o| o.keys().map(String::as_str).eq(["number", "text"]));
            let o = o.ok_or_else(|| format!("bad line object {l}"))?;
            Ok((
                o["number"].as_u64().ok_or("number")?,
                o["text"].as_str().ok_or("text")?.to_string(),
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let info = PageInfo {
        path,
        offset: obj["offset"].as_u64().ok_or("offset")?,
        total_lines: obj["totalLines"].as_u64().ok_or("totalLines")?,
        chars: obj["chars"].as_u64().ok_or("chars")? as usize,
        truncated: obj["truncated"].as_bool().ok_or("truncated")?,
        lines,
    };
    info.check_lines(offset)?;
    Ok(info)
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
