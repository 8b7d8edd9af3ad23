//! A library in Google Cloud Storage (`gs://`, fake-gcs-server) or Azure
//! Blob Storage (`az://`, Azurite), each behind the counting proxy, as a
//! user meets it past the pages (golden.rs), a walk's cost (bucket.rs) and
//! the published index (published_roots.rs): each mistake (a missing
//! bucket or container, refused credentials, none at all, an unreachable
//! endpoint, no account) is one line with its exit code and nothing
//! mounted; a public container reads unsigned; the account's key reaches
//! no argv, mountinfo, log or message.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use crate::common::bucket::{Bucket, PREFIX};
use crate::common::s3_server::{AZURITE_ACCOUNT, AZURITE_KEY, Emulator};
use crate::common::{Mount, book_library};

/// A small library: one book of three chapters.
fn small() -> (tempfile::TempDir, std::path::PathBuf) {
    book_library(&[
        ("第1章.md", "第一章\n天地玄黄\n".as_bytes()),
        ("第2章.md", "第二章\n宇宙洪荒\n".as_bytes()),
        ("第3章.md", "第三章\n日月盈昃\n".as_bytes()),
    ])
}

/// `novelfs mount URL` with `args` and only `env` (and a HOME of its own:
/// no shared credential files), expected to fail: its exit code and its
/// standard error, once it is shown to have mounted nothing.
fn mount_fails(url: &str, args: &[&str], env: &[(&str, OsString)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["mount", url])
        .arg(dir.path())
        .args(args)
        .args(["--no-index", "--source-timeout", "3"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(!crate::common::is_mounted(dir.path()), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains(AZURITE_KEY), "no secret: {err}");
    (out.status.code(), err)
}

#[test]
fn each_azure_mistake_is_one_line_and_nothing_mounted() {
    let (_dir, root) = small();
    let Some(bucket) = Bucket::with_cloud(&root, Emulator::Azurite) else {
        return;
    };
    let endpoint = bucket.server.endpoint();
    let at = |extra: &'static [&'static str]| {
        let mut a = vec!["--endpoint-url", endpoint.as_str()];
        a.extend_from_slice(extra);
        a
    };
    let account = at(&["--account", AZURITE_ACCOUNT]);
    let key = || vec![("AZURE_STORAGE_ACCOUNT_KEY", OsString::from(AZURITE_KEY))];

    let (code, err) = mount_fails("az://no-such-container", &account, &key());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("container no-such-container"), "{err}");

    // A key of the right form that is not the account's.
    let wrong = vec![(
        "AZURE_STORAGE_ACCOUNT_KEY",
        OsString::from("d3JvbmctYnV0LXdlbGwtZm9ybWVkLWtleS13cm9uZy1idXQtd2VsbC1mb3JtZWQ="),
    )];
    let (code, err) = mount_fails(&bucket.url(), &account, &wrong);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("denied"), "{err}");

    // Nothing in the environment: the chain's last step, managed
    // identity, has no service here; the line names where it looked.
    let (code, err) = mount_fails(&bucket.url(), &account, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("AZURE_STORAGE_ACCOUNT_KEY"), "{err}");
    assert_eq!(
        bucket.server.counts().list,
        2,
        "the missing container and the wrong key each cost a LIST, no credentials none"
    );

    let closed = format!("http://127.0.0.1:{}", crate::common::free_port());
    let (code, err) = mount_fails(
        &bucket.url(),
        &["--endpoint-url", &closed, "--account", AZURITE_ACCOUNT],
        &key(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("unreachable"), "{err}");

    let (code, err) = mount_fails(&bucket.url(), &at(&[]), &key());
    assert_eq!(code, Some(2), "no account is a usage error: {err}");
    let (code, err) = mount_fails(
        &bucket.url(),
        &at(&["--account", AZURITE_ACCOUNT, "--region", "eu-west-1"]),
        &key(),
    );
    assert_eq!(code, Some(2), "an S3 option with a container: {err}");
    assert!(err.starts_with("novelfs: --region"), "{err}");
}

#[test]
fn each_gcs_mistake_is_one_line_and_nothing_mounted() {
    let (_dir, root) = small();
    let Some(bucket) = Bucket::with_cloud(&root, Emulator::FakeGcs) else {
        return;
    };
    let endpoint = bucket.server.endpoint();
    let args = ["--endpoint-url", endpoint.as_str()];
    let env = bucket.env();

    // fake-gcs-server answers a missing bucket with a 500; Google answers
    // its XML API's LIST so, which the proxy says in its stead (to the
    // LIST only: the snapshot's head is asked for beside it, in either
    // order).
    bucket.server.set(
        "only=LIST&reply=1&reply_status=404&reply_body=%3CError%3E%3CCode%3ENoSuchBucket%3C%2FCode%3E%3C%2FError%3E",
    );
    let (code, err) = mount_fails("gs://no-such-bucket", &args, &env);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("bucket no-such-bucket"), "{err}");

    // And refused credentials so (fake-gcs-server checks none).
    bucket.server.set(
        "only=LIST&reply=1&reply_status=403&reply_body=%3CError%3E%3CCode%3EAccessDenied%3C%2FCode%3E%3C%2FError%3E",
    );
    let (code, err) = mount_fails(&bucket.url(), &args, &env);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("denied"), "{err}");
    bucket.server.set("only=");

    // Nothing in the environment and no gcloud files: the metadata
    // server, the chain's last step, has no service here.
    let (code, err) = mount_fails(&bucket.url(), &args, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{err}");

    let closed = format!("http://127.0.0.1:{}", crate::common::free_port());
    let (code, err) = mount_fails(&bucket.url(), &["--endpoint-url", &closed], &env);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("unreachable"), "{err}");

    let (code, err) = mount_fails(
        &bucket.url(),
        &["--endpoint-url", &endpoint, "--account", "shelf"],
        &env,
    );
    assert_eq!(code, Some(2), "an Azure option with a GCS bucket: {err}");
}

/// The page `offset-1.txt` of `第2章` under `mnt`.
fn page(mnt: &Path) -> Vec<u8> {
    std::fs::read(mnt.join("书/第2章.md/offset-1.txt")).unwrap()
}

/// Mounts `url` with `args` and `--no-sign-request`, nothing in the
/// environment: its page is the disk's (`root` mounted with the same path
/// root), and every request `server` saw went unsigned.
fn reads_unsigned_as_the_disk(
    url: &str,
    args: &[&str],
    root: &Path,
    server: &crate::common::s3_server::S3Server,
) {
    let mut all = args.to_vec();
    all.extend(["--no-sign-request", "--path-root", "/library"]);
    let m = Mount::with_env(Path::new(url), &all, "warn", &[]);
    let disk = Mount::new(root, &["--path-root", "/library"]);
    assert_eq!(page(m.path()), page(disk.path()));
    let log = server.log();
    assert!(!log.is_empty());
    for r in &log {
        assert_eq!(r.key_id, "-", "unsigned: {r:?}");
    }
}

/// A container whose access level lets anyone read it mounts with
/// `--no-sign-request` and gives the disk's pages, every request unsigned;
/// a private one so mounted is refused, in one line.
#[test]
fn a_public_container_reads_unsigned_and_a_private_one_is_refused() {
    require_fuse!();
    let (_dir, root) = small();
    let Some(private) = Bucket::with_cloud(&root, Emulator::Azurite) else {
        return;
    };
    let public = "open-shelf";
    private.server.create_public_bucket(public);
    private
        .server
        .put_many(public, &crate::common::bucket::objects_of(&root, PREFIX));
    private.server.reset_counts();
    let endpoint = private.server.endpoint();
    reads_unsigned_as_the_disk(
        &format!("az://{public}/{PREFIX}"),
        &["--endpoint-url", &endpoint, "--account", AZURITE_ACCOUNT],
        &root,
        &private.server,
    );
    let (code, err) = mount_fails(
        &private.url(),
        &[
            "--endpoint-url",
            &endpoint,
            "--account",
            AZURITE_ACCOUNT,
            "--no-sign-request",
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
}

/// A GCS bucket mounted with `--no-sign-request` and no credentials at
/// all gives the disk's pages, every request unsigned (no Authorization
/// header reaches the proxy).
#[test]
fn a_gcs_bucket_reads_unsigned_with_no_sign_request() {
    require_fuse!();
    let (_dir, root) = small();
    let Some(bucket) = Bucket::with_cloud(&root, Emulator::FakeGcs) else {
        return;
    };
    let endpoint = bucket.server.endpoint();
    reads_unsigned_as_the_disk(
        &bucket.url(),
        &["--endpoint-url", &endpoint],
        &root,
        &bucket.server,
    );
}

/// The account's key, in the daemon's environment only, is in neither
/// mountinfo, the daemon's argv nor its log, and the requests are signed
/// with it (Shared Key).
#[test]
fn the_account_key_stays_in_the_environment() {
    require_fuse!();
    let (_dir, root) = small();
    let Some(bucket) = Bucket::with_cloud(&root, Emulator::Azurite) else {
        return;
    };
    let logs = tempfile::tempdir().unwrap();
    let log_file = logs.path().join("novelfs.log");
    let m = bucket.mount(&["--log-file", log_file.to_str().unwrap()]);
    assert!(!page(m.path()).is_empty());
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(info.contains(m.path().to_str().unwrap()));
    assert!(!info.contains(AZURITE_KEY), "{info}");
    let daemon = m.child.as_ref().unwrap().id();
    let argv = std::fs::read(format!("/proc/{daemon}/cmdline")).unwrap();
    assert!(!String::from_utf8_lossy(&argv).contains(AZURITE_KEY));
    let log = std::fs::read_to_string(&log_file).unwrap_or_default();
    assert!(!log.contains(AZURITE_KEY), "{log}");
    let requests = bucket.server.log();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.key_id, "SharedKey", "signed with the key: {r:?}");
    }
}
