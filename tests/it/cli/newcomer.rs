//! What a new user trips on at the bucket path (issue #42): a mistyped
//! `s3://`, a bucket option given with a directory, no credentials at all,
//! a public bucket, a mountpoint with files in it, and `grep -r` finding
//! every hit twice. Each mistake is one line on stderr with its exit code
//! (2 for usage, 1 for what the store answered) and nothing mounted.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::bucket::{Bucket, PREFIX};
use crate::common::s3_server::http;
use crate::common::{Mount, book_library, is_mounted};

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");

/// The one line a failed command printed, after checking its exit code,
/// that it printed nothing on stdout, and that nothing is mounted at `mnt`.
fn one_line(out: &Output, code: i32, mnt: &Path) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!is_mounted(mnt));
    err
}

fn library() -> (tempfile::TempDir, std::path::PathBuf) {
    book_library(&[("第1章.txt", "第1章 开始\n天地玄黄\n宇宙洪荒\n".as_bytes())])
}

#[test]
fn a_mistyped_scheme_is_one_usage_line_naming_s3_for_every_command() {
    let cwd = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let m = mnt.path().to_str().unwrap();
    for root in [
        "s3:/shelf/lib",
        "s3:shelf",
        "S3://shelf/lib",
        "s3//shelf/lib",
    ] {
        for args in [
            vec!["mount", root, m],
            vec!["read", "--root", root, "书", "1"],
            vec!["chapters", "--root", root, "书"],
            vec!["books", "--root", root],
            vec!["index", root],
        ] {
            let out = Command::new(BIN)
                .args(&args)
                .current_dir(cwd.path())
                .output()
                .unwrap();
            let err = one_line(&out, 2, mnt.path());
            assert!(err.contains("s3://"), "{args:?}: {err}");
            assert!(!err.contains("not a novelfs library"), "{args:?}: {err}");
        }
    }
}

#[test]
fn a_bucket_option_with_a_directory_is_one_usage_line_naming_it() {
    let (_dir, root) = library();
    let root = root.to_str().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let m = mnt.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["mount", root, m, "--endpoint-url", "http://127.0.0.1:9"],
            "--endpoint-url",
        ),
        (vec!["mount", root, m, "--region", "eu-west-1"], "--region"),
        (vec!["mount", root, m, "--profile", "reader"], "--profile"),
        (
            vec!["mount", root, m, "--no-sign-request"],
            "--no-sign-request",
        ),
        (
            vec!["mount", root, m, "-o", "endpoint_url=http://127.0.0.1:9"],
            "endpoint_url",
        ),
        (vec!["mount", root, m, "-o", "region=eu-west-1"], "region"),
        (
            vec!["mount", root, m, "-o", "no_sign_request"],
            "no_sign_request",
        ),
        (
            vec!["books", "--root", root, "--endpoint-url", "http://x:1"],
            "--endpoint-url",
        ),
        (
            vec!["read", "--root", root, "书", "1", "--region", "eu-west-1"],
            "--region",
        ),
        (
            vec!["index", root, "--no-sign-request"],
            "--no-sign-request",
        ),
    ];
    for (args, option) in cases {
        let out = Command::new(BIN).args(&args).output().unwrap();
        let err = one_line(&out, 2, mnt.path());
        assert!(err.contains(option), "{args:?}: {err}");
    }
}

/// The daemon's environment with no credential anywhere: no AWS
/// variables, a HOME with no `.aws`, and no instance metadata to wait on.
fn no_credentials(cmd: &mut Command, home: &Path) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(&key);
        }
    }
    cmd.env("HOME", home)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1");
}

#[test]
fn no_credentials_at_all_says_where_they_were_looked_for_and_asks_nothing() {
    require_fuse!();
    let (_dir, root) = library();
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["mount", &bucket.url()]).arg(mnt.path()).args([
        "--endpoint-url",
        &bucket.server.endpoint(),
        "--no-index",
    ]);
    no_credentials(&mut cmd, home.path());
    let err = one_line(&cmd.output().unwrap(), 1, mnt.path());
    assert!(err.contains("AWS_ACCESS_KEY_ID"), "{err}");
    assert!(err.contains(".aws/credentials"), "{err}");
    assert!(err.contains("--no-sign-request"), "{err}");
    assert!(!err.contains("access denied"), "{err}");
    let counts = bucket.server.counts();
    assert_eq!(
        counts.list + counts.get + counts.head + counts.other,
        0,
        "no request reaches the server: {counts:?}"
    );
    // The same for a one-shot command.
    let mut cmd = Command::new(BIN);
    cmd.args(["books", "--root", &bucket.url()])
        .args(["--endpoint-url", &bucket.server.endpoint()]);
    no_credentials(&mut cmd, home.path());
    let out = cmd.output().unwrap();
    let err = one_line(&out, 1, mnt.path());
    assert!(err.contains("AWS_ACCESS_KEY_ID"), "{err}");
}

/// A bucket policy letting anyone list and read the bucket: moto, like
/// S3, answers an unsigned GET of a private object 403.
fn make_public(bucket: &Bucket) {
    let name = &bucket.name;
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Sid":"public","Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::{name}","arn:aws:s3:::{name}/*"]}}]}}"#
    );
    let moto = bucket.server.moto_endpoint();
    let port = moto.rsplit(':').next().unwrap().parse().unwrap();
    let (status, body) = http(port, "PUT", &format!("/{name}?policy"), policy.as_bytes()).unwrap();
    assert!(
        (200..300).contains(&status),
        "{status} {}",
        String::from_utf8_lossy(&body)
    );
    bucket.server.reset_counts();
}

#[test]
fn no_sign_request_reads_a_public_bucket_with_unsigned_requests() {
    require_fuse!();
    let (_dir, root) = library();
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    make_public(&bucket);
    let home = tempfile::tempdir().unwrap();
    let endpoint = bucket.server.endpoint();
    let m = Mount::with_command(
        Path::new(&bucket.url()),
        &["--endpoint-url", &endpoint, "--no-sign-request"],
        "warn",
        |cmd| no_credentials(cmd, home.path()),
    );
    let page = std::fs::read(m.path().join("书/1/offset-1.txt")).unwrap();
    let expected = Command::new(BIN)
        .args(["read", "--root"])
        .arg(&root)
        .args(["书", "1"])
        .output()
        .unwrap();
    assert!(expected.status.success(), "{expected:?}");
    let local = String::from_utf8(expected.stdout).unwrap();
    // The page names its library's root; past it, the bucket's is the
    // directory's page.
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains("天地玄黄"), "{page}");
    let tail = |p: &str| p.split_once("第1章.txt").map(|(_, t)| t.to_string());
    assert_eq!(tail(&page), tail(&local));
    let log = bucket.server.log();
    assert!(!log.is_empty());
    for r in &log {
        assert_eq!(r.key_id, "-", "signed: {r:?}");
    }
    assert!(log.iter().any(|r| r.path.contains(PREFIX)), "{log:?}");
}

#[test]
fn formats_txt_lists_only_text_pages_and_json_still_opens_by_name() {
    require_fuse!();
    let (_dir, root) = library();
    let both = Mount::new(&root, &[]);
    let json = std::fs::read(both.path().join("书/1/offset-1.json")).unwrap();
    let text = std::fs::read(both.path().join("书/1/offset-1.txt")).unwrap();
    drop(both);
    for form in [&["--formats", "txt"][..], &["-o", "formats=txt"][..]] {
        let m = Mount::new(&root, form);
        let names: Vec<String> = std::fs::read_dir(m.path().join("书/1"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.is_empty(), "{form:?}");
        assert!(
            names.iter().all(|n| n.ends_with(".txt")),
            "{form:?}: {names:?}"
        );
        assert_eq!(
            std::fs::read(m.path().join("书/1/offset-1.txt")).unwrap(),
            text
        );
        assert_eq!(
            std::fs::read(m.path().join("书/1/offset-1.json")).unwrap(),
            json
        );
    }
    let m = Mount::new(&root, &["--formats", "json"]);
    let names: Vec<OsString> = std::fs::read_dir(m.path().join("书/1"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| n.to_string_lossy().ends_with(".json")),
        "{names:?}"
    );
}

#[test]
fn a_mountpoint_with_files_is_mounted_over_with_a_warning() {
    require_fuse!();
    let (_dir, root) = library();
    let mnt = tempfile::tempdir().unwrap();
    std::fs::write(mnt.path().join("already-here"), b"x").unwrap();
    let log = mnt.path().with_extension("log");
    let out = Command::new(BIN)
        .arg("mount")
        .arg(&root)
        .arg(mnt.path())
        .args(["--no-index", "--io-uring", "off", "--log-file"])
        .arg(&log)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let mounted = is_mounted(mnt.path());
    let listed = std::fs::read_dir(mnt.path())
        .map(|d| d.count())
        .unwrap_or(0);
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = Command::new(BIN).arg("unmount").arg(mnt.path()).output();
    let _ = std::fs::remove_file(&log);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(mounted && listed > 0, "mounted over");
    let at = mnt.path().to_string_lossy();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(&*at) && err.contains("not empty"), "{err}");
    assert!(
        logged
            .lines()
            .any(|l| l.contains(&*at) && l.contains("not empty")),
        "{logged}"
    );
    // An empty one is mounted without a word.
    std::fs::remove_file(mnt.path().join("already-here")).unwrap();
    let out = Command::new(BIN)
        .arg("mount")
        .arg(&root)
        .arg(mnt.path())
        .args(["--no-index", "--io-uring", "off", "--log-file"])
        .arg(&log)
        .output()
        .unwrap();
    let _ = Command::new(BIN).arg("unmount").arg(mnt.path()).output();
    let _ = std::fs::remove_file(&log);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}
