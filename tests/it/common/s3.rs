//! A library in an S3 bucket, as a host reading one through s3fs sees it:
//! a test-owned `moto_server` (PyPI's `moto[server]`) bound to 127.0.0.1,
//! a bucket holding a copy of a library, and an s3fs mount of that bucket.
//! Objects are written and deleted with plain HTTP requests, whose
//! signatures moto does not check. The server is killed and the mount unmounted on drop,
//! even when a check fails. `None` (the test skips, see `common::skip`) where s3fs or
//! moto_server cannot be had.
//!
//! moto_server is looked for in `$NOVELFS_MOTO_VENV/bin`, then in the
//! virtualenv `.ci/run` makes (`~/.cache/novelfs/moto`), then on PATH.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{find_tool, free_port, is_mounted};

const BUCKET: &str = "library";

pub struct S3 {
    dir: tempfile::TempDir,
    port: u16,
    server: Option<Child>,
    s3fs: Option<Child>,
}

fn moto_server() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    std::env::var_os("NOVELFS_MOTO_VENV")
        .map(PathBuf::from)
        .into_iter()
        .chain(home.map(|h| h.join(".cache/novelfs/moto")))
        .map(|venv| venv.join("bin/moto_server"))
        .find(|p| p.is_file())
        .or_else(|| find_tool(&["moto_server"]))
}

/// `s` with every byte but the unreserved ones and `/` percent-encoded,
/// as an S3 key stands in a path-style URL.
fn url_path(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl S3 {
    /// A bucket holding every file under `library` (keys relative to it),
    /// mounted with s3fs. s3fs keeps its stat cache for 1 s
    /// (`stat_cache_expire=1`) and no cache of missing names (no
    /// `enable_noobj_cache`), so the mount follows the bucket within about
    /// a second. Says the test skips and returns `None` when s3fs or moto_server
    /// is missing; panics when they are there but fail.
    pub fn mount(library: &Path) -> Option<S3> {
        let (Some(s3fs), Some(server)) = (find_tool(&["s3fs"]), moto_server()) else {
            super::skip(
                "s3fs or moto_server is not installed: .ci/run installs both, moto in ~/.cache/novelfs/moto",
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("novelfs-s3")
            .tempdir()
            .unwrap();
        let mut me = S3 {
            dir,
            port: 0,
            server: None,
            s3fs: None,
        };
        for _ in 0..5 {
            me.port = free_port();
            me.start_server(&server);
            if me.wait_for_server() {
                break;
            }
            // The port was taken between the probe and the server's bind.
            me.stop_server();
        }
        assert!(
            me.server.is_some(),
            "moto_server did not answer on 127.0.0.1"
        );
        me.request("PUT", "", b"");
        me.upload(library, library);
        me.mount_s3fs(&s3fs);
        Some(me)
    }

    fn start_server(&mut self, server: &Path) {
        let log = std::fs::File::create(self.dir.path().join("moto.log")).unwrap();
        let child = Command::new(server)
            .args(["-H", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn moto_server");
        self.server = Some(child);
    }

    /// Polls until the server answers a request (its start takes seconds
    /// on a busy machine), it exits, or 60 s pass.
    fn wait_for_server(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(Some(_)) = self.server.as_mut().map(|c| c.try_wait().unwrap()) {
                return false;
            }
            if self.try_request("GET", "/", b"").is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn stop_server(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn upload(&self, library: &Path, dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                self.upload(library, &path);
            } else {
                let key = path.strip_prefix(library).unwrap().to_str().unwrap();
                self.put(key, &std::fs::read(&path).unwrap());
            }
        }
    }

    fn mount_s3fs(&mut self, s3fs: &Path) {
        let d = self.dir.path();
        let passwd = d.join("passwd");
        std::fs::write(&passwd, "testing:testing\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&passwd, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mnt = self.path();
        std::fs::create_dir(&mnt).unwrap();
        let child = Command::new(s3fs)
            .arg(BUCKET)
            .arg(&mnt)
            .arg("-f")
            .args(["-o", &format!("url=http://127.0.0.1:{}", self.port)])
            .args(["-o", "use_path_request_style"])
            .args(["-o", &format!("passwd_file={}", passwd.display())])
            .args(["-o", "stat_cache_expire=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn s3fs");
        self.s3fs = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !is_mounted(&mnt) {
            if let Some(status) = self.s3fs.as_mut().unwrap().try_wait().unwrap() {
                let mut err = String::new();
                let mut child = self.s3fs.take().unwrap();
                child.stderr.take().unwrap().read_to_string(&mut err).ok();
                let _ = child.wait();
                panic!("s3fs exited early ({status}): {err}");
            }
            assert!(Instant::now() < deadline, "s3fs not mounted in 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Where the bucket is mounted: the library root.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    /// Writes the object `key` (a path under the library root).
    pub fn put(&self, key: &str, body: &[u8]) {
        self.request("PUT", key, body);
    }

    /// Deletes the object `key`.
    pub fn delete(&self, key: &str) {
        self.request("DELETE", key, b"");
    }

    /// `method` on the object `key` (the bucket itself when empty); panics
    /// unless the server answers 2xx.
    fn request(&self, method: &str, key: &str, body: &[u8]) {
        let path = if key.is_empty() {
            format!("/{BUCKET}")
        } else {
            format!("/{BUCKET}/{}", url_path(key))
        };
        let status = self
            .try_request(method, &path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert!(
            status.split(' ').nth(1).is_some_and(|c| c.starts_with('2')),
            "{method} {path}: {status}"
        );
    }

    /// One HTTP/1.1 request; returns the status line.
    fn try_request(&self, method: &str, path: &str, body: &[u8]) -> std::io::Result<String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        // moto checks no signature but refuses an anonymous DELETE: any
        // credential in the header will do.
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        )?;
        s.write_all(body)?;
        let mut reply = Vec::new();
        s.read_to_end(&mut reply)?;
        let reply = String::from_utf8_lossy(&reply);
        match reply.lines().next() {
            Some(status) if status.starts_with("HTTP/") => Ok(status.to_string()),
            _ => Err(std::io::Error::other(format!(
                "no HTTP reply: {reply:.200}"
            ))),
        }
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let mnt = self.path();
        if is_mounted(&mnt) {
            let _ = Command::new("fusermount3")
                .arg("-u")
                .arg(&mnt)
                .stderr(Stdio::null())
                .status();
        }
        if is_mounted(&mnt) {
            let c = std::ffi::CString::new(mnt.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path; MNT_DETACH has no other inputs.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if let Some(mut c) = self.s3fs.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.stop_server();
    }
}
