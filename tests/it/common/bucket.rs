//! A library in a bucket for the mount tests: the test-owned object store
//! (`s3_server`: moto, fake-gcs-server or Azurite behind the counting,
//! fault-injecting proxy), a directory uploaded to it key by key, and the
//! arguments and environment a `novelfs mount s3://…` (`gs://…`,
//! `az://…`) of it takes.

use std::ffi::OsString;
use std::path::Path;

use super::Mount;
use super::s3_server::{AZURITE_ACCOUNT, AZURITE_KEY, Emulator, S3Server};

/// Keys of the bucket are under this prefix, so that the mount's prefix
/// handling is exercised.
pub const PREFIX: &str = "shelf/lib";

pub struct Bucket {
    pub server: S3Server,
    pub name: String,
    /// Google's service-account file for the emulator.
    keys: tempfile::TempDir,
}

/// The credentials the daemon finds in its environment: moto takes any.
pub fn credentials() -> Vec<(&'static str, OsString)> {
    vec![
        ("AWS_ACCESS_KEY_ID", "novelfs-test".into()),
        ("AWS_SECRET_ACCESS_KEY", "novelfs-test-secret".into()),
        ("AWS_REGION", "us-east-1".into()),
    ]
}

/// Every regular file under `root` as (key under `prefix`, bytes); a
/// symlink is no object (it is no chapter on disk either), and a
/// directory holds nothing of its own.
pub fn objects_of(root: &Path, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let t = entry.file_type().unwrap();
            if t.is_dir() {
                dirs.push(entry.path());
            } else if t.is_file() {
                let rel = entry.path().strip_prefix(root).unwrap().to_owned();
                let rel = rel.to_str().unwrap();
                let key = if prefix.is_empty() {
                    rel.to_string()
                } else {
                    format!("{prefix}/{rel}")
                };
                out.push((key, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    out
}

impl Bucket {
    /// A bucket holding the files under `root`; `None` when moto cannot be
    /// had outside CI (the harness says so).
    pub fn with(root: &Path) -> Option<Bucket> {
        Self::with_cloud(root, Emulator::Moto)
    }

    /// A bucket of `emulator` holding the files under `root`.
    pub fn with_cloud(root: &Path, emulator: Emulator) -> Option<Bucket> {
        let server = S3Server::start_cloud(emulator)?;
        let name = "novelfs-test".to_string();
        server.create_bucket(&name);
        server.put_many(&name, &objects_of(root, PREFIX));
        server.reset_counts();
        let keys = tempfile::tempdir().unwrap();
        // object_store's form for an emulator: no OAuth, nothing to sign.
        std::fs::write(
            keys.path().join("service-account.json"),
            r#"{"disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}"#,
        )
        .unwrap();
        Some(Bucket { server, name, keys })
    }

    /// `SCHEME://BUCKET/PREFIX`.
    /// Whole-object GETs the proxy forwarded since its last reset, of the
    /// library's objects (`library`: not those under `.novelfs/`) or of
    /// the publisher's, told apart by the decoded key (Google Cloud
    /// Storage's JSON API percent-encodes every byte of it).
    pub fn gets(&self, library: bool) -> usize {
        self.server
            .log()
            .iter()
            .filter(|r| {
                r.kind == "GET" && percent_decoded(&r.path).contains("/.novelfs/") != library
            })
            .count()
    }

    pub fn url(&self) -> String {
        format!("{}://{}/{PREFIX}", self.server.emulator.scheme(), self.name)
    }

    /// The credentials the daemon finds in its environment, each cloud's
    /// own chain's first place: AWS's keys (moto takes any), Google's
    /// service account file, Azure's account key.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        match self.server.emulator {
            Emulator::Moto => credentials(),
            Emulator::FakeGcs => vec![(
                "GOOGLE_SERVICE_ACCOUNT",
                self.keys.path().join("service-account.json").into(),
            )],
            Emulator::Azurite => vec![("AZURE_STORAGE_ACCOUNT_KEY", AZURITE_KEY.into())],
        }
    }

    /// Writes `body` at `path` (relative to the library root).
    pub fn put(&self, path: &str, body: &[u8]) {
        self.server
            .put(&self.name, &format!("{PREFIX}/{path}"), body);
    }

    pub fn delete(&self, path: &str) {
        self.server.delete(&self.name, &format!("{PREFIX}/{path}"));
    }

    /// The mount arguments that reach this bucket, then `extra`.
    pub fn args<'a>(&'a self, endpoint: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["--endpoint-url", endpoint];
        if self.server.emulator == Emulator::Azurite {
            args.extend(["--account", AZURITE_ACCOUNT]);
        }
        args.extend_from_slice(extra);
        args
    }

    /// Mounts the bucket with `extra` arguments.
    pub fn mount(&self, extra: &[&str]) -> Mount {
        self.mount_with_env(extra, &[])
    }

    /// Mounts the bucket with `extra` arguments and more environment.
    pub fn mount_with_env(&self, extra: &[&str], more: &[(&'static str, OsString)]) -> Mount {
        let endpoint = self.server.endpoint();
        let mut env = self.env();
        env.extend(more.iter().cloned());
        let env: Vec<(&str, &std::ffi::OsStr)> =
            env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        Mount::with_env(
            Path::new(&self.url()),
            &self.args(&endpoint, extra),
            "warn",
            &env,
        )
    }
}

/// `path` with each `%XX` decoded.
pub fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
