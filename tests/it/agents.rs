//! The mount handed to agents the way the README says: bound read-only
//! into a bubblewrap sandbox at /library, and served by the official MCP
//! filesystem server (`@modelcontextprotocol/server-filesystem`, driven
//! over stdio JSON-RPC), and a published bucket mounted as a fresh machine
//! mounts it, bound into the same sandbox. Pages are written with
//! `--path-root /library`, so nothing in them names the host's directory
//! or the bucket.
//!
//! Skips with a message where bwrap, node or the MCP server is missing;
//! `.ci/run` installs them (the server into
//! ~/.cache/novelfs/mcp-server-filesystem, or where NOVELFS_MCP_SERVER says).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::Mount;
use crate::common::bucket::{Bucket, credentials};
use serde_json::{Value, json};

fn sample_library() -> PathBuf {
    std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/library")).unwrap()
}

/// `novelfs read --path-root /library …`: what every page must hold.
fn cli_page(root: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("read")
        .arg("--root")
        .arg(root)
        .args([
            "--path-root",
            "/library",
            "--state-file",
            "/nonexistent/s.json",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

fn found(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `script` (`sh -c`, with `arg` as `$1`) in the README's bubblewrap
/// sandbox: /usr and the system's links read-only, `mount` read-only at
/// /library, nothing else of the host.
fn in_sandbox(mount: &Path, script: &str, arg: &Path) -> std::process::Output {
    let mut cmd = Command::new("bwrap");
    cmd.args(["--ro-bind", "/usr", "/usr"]);
    // Merged-/usr systems link these; others have real directories.
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
    cmd.args(["--proc", "/proc", "--dev", "/dev"])
        .arg("--ro-bind")
        .arg(mount)
        .arg("/library")
        .args(["--unshare-all", "--die-with-parent", "--new-session"])
        .args(["/bin/sh", "-c", script, "sh"])
        .arg(arg);
    cmd.output().expect("bwrap runs")
}

/// What the sandboxes run: two pages, the root's listing, a write, a look
/// for the host's path (`$1`) and the mount's line of mountinfo.
const SANDBOX_READS: &str = concat!(
    "cat '/library/西游记/1/offset-401.txt' && ",
    "cat '/library/唐诗选/静夜思/offset-1.json' && ",
    "ls /library && ",
    "if (echo x > '/library/唐诗选/new') 2>&1; then echo WROTE; fi; ",
    "test -e \"$1\" && echo HOST-PATH-VISIBLE; ",
    "grep -F ' /library ' /proc/self/mountinfo; true"
);

/// Whether bwrap is here (the test skips, saying so, when not).
fn bwrap_found() -> bool {
    let found = found("bwrap");
    if !found {
        crate::common::skip("bwrap is missing (apt-get install bubblewrap; .ci/run does)");
    }
    found
}

/// `SANDBOX_READS` in the sandbox over `mount` of the sample library (its
/// copy on the host at `root`): the pages `novelfs read` gives from disk,
/// the root's names, the write refused, the host's path unseen, the
/// mount's source `/library`. What the sandbox printed.
fn sandbox_reads(mount: &Path, root: &Path) -> String {
    let out = in_sandbox(mount, SANDBOX_READS, root);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bwrap failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = cli_page(root, &["西游记", "1", "--offset", "401"])
        + &cli_page(root, &["唐诗选", "静夜思", "--json"])
        + "novel_books.json\nnovel_books.txt\n唐诗选\n西游记\n";
    assert!(stdout.starts_with(&want), "sandbox read:\n{stdout}");
    assert!(
        want.contains("<path>/library/novels/西游记/")
            && want.contains("\"path\": \"/library/novels/唐诗选/01-静夜思.md\"")
    );
    let rest = &stdout[want.len()..];
    assert!(rest.contains("Read-only file system"), "write: {rest}");
    assert!(!rest.contains("WROTE") && !rest.contains("HOST-PATH-VISIBLE"));
    // The mount's source in the sandbox's mountinfo is the path root too.
    assert!(
        rest.contains(" - fuse.novelfs /library "),
        "mountinfo: {rest}"
    );
    assert!(!stdout.contains(root.to_str().unwrap()), "{stdout}");
    stdout
}

#[test]
fn bubblewrap_reads_the_mount_read_only_at_library() {
    require_fuse!();
    if !bwrap_found() {
        return;
    }
    let root = sample_library();
    let state = "/nonexistent/s.json";
    let mount = Mount::new(&root, &["--path-root", "/library", "--state-file", state]);
    sandbox_reads(mount.path(), &root);
}

/// The sample library in a bucket (moto on 127.0.0.1), its index
/// published, mounted as a fresh machine mounts it (an empty index folder)
/// with `--path-root /library` and bound into the sandbox: the sandbox
/// reads `novel_books.txt` from the listings and the published index
/// without a chapter's GET, the same pages as from disk, cannot write, and
/// sees neither the bucket's URL nor its endpoint, in the pages or in
/// mountinfo.
#[test]
fn bubblewrap_reads_a_published_bucket_at_library() {
    require_fuse!();
    if !bwrap_found() {
        return;
    }
    let root = sample_library();
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let endpoint = bucket.server.endpoint();
    let state = "/nonexistent/s.json";
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
            .args(args)
            .args(["--endpoint-url", &endpoint, "--path-root", "/library"])
            .envs(credentials())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let built = dir.path().join("built-by-the-writer");
    let (url, built) = (bucket.url(), built.to_str().unwrap().to_owned());
    cli(&["index", &url, "--publish", "--index-dir", &built]);
    let fresh = dir.path().join("fresh-machine");
    let fresh = fresh.to_str().unwrap();
    let mount = bucket.mount(&[
        "--path-root",
        "/library",
        "--index-dir",
        fresh,
        "--state-file",
        state,
    ]);
    std::fs::metadata(mount.path()).unwrap();
    bucket.server.reset_counts();
    let books = in_sandbox(mount.path(), "cat /library/novel_books.txt", &root);
    let counted = bucket.server.counts();
    assert!(books.status.success(), "{books:?}");
    // No chapter is read; the snapshot's pieces of the books are.
    let chapters = bucket.gets(true);
    assert_eq!((chapters, counted.head), (0, 0), "{counted:?}");
    let books = String::from_utf8(books.stdout).unwrap();
    let read = sandbox_reads(mount.path(), &root);
    assert_eq!(
        books,
        cli(&["books", "--root", &url, "--state-file", state])
    );
    let host = endpoint.trim_start_matches("http://");
    for seen in [&books, &read] {
        for hidden in [url.as_str(), &bucket.name, host] {
            assert!(!seen.contains(hidden), "{hidden} seen: {seen}");
        }
    }
}

/// Where .ci/run installs the MCP server, unless NOVELFS_MCP_SERVER names
/// the server's `dist/index.js` or an npm prefix holding it.
fn mcp_server() -> Option<PathBuf> {
    let entry = |prefix: PathBuf| {
        prefix.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    };
    let candidate = match std::env::var_os("NOVELFS_MCP_SERVER") {
        Some(p) if Path::new(&p).is_file() => PathBuf::from(p),
        Some(p) => entry(PathBuf::from(p)),
        None => entry(
            PathBuf::from(std::env::var_os("HOME")?).join(".cache/novelfs/mcp-server-filesystem"),
        ),
    };
    candidate.is_file().then_some(candidate)
}

/// A running MCP server over stdio; newline-delimited JSON-RPC.
struct McpClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl McpClient {
    fn start(server: &Path, allowed: &Path) -> McpClient {
        let mut child = Command::new("node")
            .arg(server)
            .arg(allowed)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        McpClient {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    fn notify(&mut self, method: &str) {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        writeln!(self.stdin, "{msg}").unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        loop {
            // A bound on a hung server, not a speed check.
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method} failed: {v}");
                return v["result"].clone();
            }
        }
    }

    /// The text of a tool call's result.
    fn call(&mut self, tool: &str, path: &Path) -> (String, bool) {
        let r = self.request(
            "tools/call",
            json!({"name": tool, "arguments": {"path": path}}),
        );
        let text = r["content"][0]["text"].as_str().unwrap_or("").to_string();
        (text, r["isError"] == json!(true))
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_mcp_filesystem_server_lists_follows_aliases_and_reads_pages_and_errors() {
    require_fuse!();
    let Some(server) = mcp_server() else {
        crate::common::skip(
            "@modelcontextprotocol/server-filesystem is not installed (.ci/run installs it into ~/.cache/novelfs/mcp-server-filesystem; or set NOVELFS_MCP_SERVER)",
        );
        return;
    };
    if !found("node") {
        crate::common::skip("node is missing");
        return;
    }
    let root = sample_library();
    let state = "/nonexistent/s.json";
    let mount = Mount::new(&root, &["--path-root", "/library", "--state-file", state]);
    let mnt = mount.path();
    let mut mcp = McpClient::start(&server, mnt);
    let init = mcp.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "novelfs-test", "version": "0"}}),
    );
    assert!(init["serverInfo"]["name"].is_string(), "{init}");
    mcp.notify("notifications/initialized");
    let tools = mcp.request("tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"list_directory"), "{names:?}");
    // read_text_file in current versions, read_file in older ones.
    let read = ["read_text_file", "read_file"]
        .into_iter()
        .find(|t| names.contains(t))
        .unwrap_or_else(|| panic!("no read tool in {names:?}"));

    let (listing, err) = mcp.call("list_directory", &mnt.join("西游记"));
    assert!(!err, "{listing}");
    for chapter in [
        "[DIR] 第01回 灵根孕育源流出 心性修持大道生.md",
        "[DIR] 第04回 官封弼马心何足（校注本）.md",
    ] {
        assert!(listing.lines().any(|l| l == chapter), "{listing}");
    }
    let (chain, _) = mcp.call("list_directory", &mnt.join("西游记/1"));
    assert_eq!(
        chain,
        "[FILE] offset-1.json\n[FILE] offset-1.txt\n[FILE] offset-401.json\n[FILE] offset-401.txt"
    );

    // `1` is an alias (a symlink to the chapter's directory).
    let (page, err) = mcp.call(read, &mnt.join("西游记/1/offset-401.txt"));
    assert!(!err, "{page}");
    assert_eq!(page, cli_page(&root, &["西游记", "1", "--offset", "401"]));
    assert!(page.starts_with("<path>/library/novels/西游记/第01回"));

    let (error, err) = mcp.call(read, &mnt.join("西游记/4/ERROR"));
    assert!(!err, "{error}");
    assert!(
        error.starts_with("错误：第 4 章有 2 个文件，无法确定要哪一份："),
        "{error}"
    );

    // The server refuses writes itself; the mount would refuse them too.
    let w = mcp.request(
        "tools/call",
        json!({"name": "write_file",
               "arguments": {"path": mnt.join("唐诗选/new.md"), "content": "x"}}),
    );
    assert_eq!(w["isError"], json!(true), "{w}");
    assert!(!mnt.join("唐诗选/new.md").exists());
}
