//! A library in an S3 bucket, as a host reading one through s3fs sees it:
//! the test-owned S3 server (`s3_server`: moto on 127.0.0.1), a bucket
//! holding a copy of a library, and an s3fs mount of that bucket, which
//! talks to moto directly, or through the proxy (`mount_through_proxy`:
//! latency and stalls on demand, with `set`). The mount is
//! unmounted and the server killed on drop, even when a check fails.
//! `None` (the test skips, see `common::skip`) where s3fs or moto_server
//! cannot be had.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::s3_server::S3Server;
use super::{find_tool, is_mounted};

const BUCKET: &str = "library";

pub struct S3 {
    dir: tempfile::TempDir,
    server: S3Server,
    s3fs: Option<Child>,
}

impl S3 {
    /// A bucket holding every file under `library` (keys relative to it),
    /// mounted with s3fs. s3fs keeps its stat cache for 1 s
    /// (`stat_cache_expire=1`) and no cache of missing names (no
    /// `enable_noobj_cache`), so the mount follows the bucket within about
    /// a second. Says the test skips and returns `None` when s3fs or moto_server
    /// is missing; panics when they are there but fail.
    pub fn mount(library: &Path) -> Option<S3> {
        S3::mount_with(library, false)
    }

    /// Like `mount`, with s3fs talking to the proxy, so that `set` can slow
    /// or stall its requests.
    pub fn mount_through_proxy(library: &Path) -> Option<S3> {
        S3::mount_with(library, true)
    }

    fn mount_with(library: &Path, through_proxy: bool) -> Option<S3> {
        let Some(s3fs) = find_tool(&["s3fs"]) else {
            super::skip("s3fs is not installed: .ci/run installs it");
            return None;
        };
        let server = S3Server::start()?;
        let dir = tempfile::Builder::new()
            .prefix("novelfs-s3")
            .tempdir()
            .unwrap();
        server.create_bucket(BUCKET);
        server.put_many(BUCKET, &super::bucket::objects_of(library, ""));
        let mut me = S3 {
            dir,
            server,
            s3fs: None,
        };
        let url = if through_proxy {
            me.server.endpoint()
        } else {
            me.server.moto_endpoint()
        };
        me.mount_s3fs(&s3fs, &url);
        Some(me)
    }

    fn mount_s3fs(&mut self, s3fs: &Path, url: &str) {
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
            .args(["-o", &format!("url={url}")])
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
        self.server.put(BUCKET, key, body);
    }

    /// Deletes the object `key`.
    pub fn delete(&self, key: &str) {
        self.server.delete(BUCKET, key);
    }

    /// Sets the proxy's latency and faults (`latency_ms=20`, `stall=-1`,
    /// …; see tests/s3/proxy.py): only a mount through the proxy feels them.
    pub fn set(&self, settings: &str) {
        self.server.set(settings);
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
    }
}
