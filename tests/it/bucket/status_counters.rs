//! `novelfs status MNT --json` counts what the storage sent exactly as the
//! proxy in front of the bucket saw it, request by request and kind by
//! kind: listings, whole and ranged GETs; retries of the requests the proxy
//! failed (503, a body cut short) and errors of those it refused (403);
//! the counts go on across a server's death; `--prometheus` gives them in
//! the text exposition format.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Mount;
use crate::common::bucket::Bucket;
use crate::common::s3_server::Counts;

const BIG_BYTES: usize = 3 << 20;

fn prose(bytes: usize, tag: &str) -> Vec<u8> {
    let mut text = String::with_capacity(bytes + 256);
    let mut i = 1;
    while text.len() < bytes {
        text.push_str(&format!(
            "第{i}行{tag}：月光落在旧街的石板上，他推开木门。\n"
        ));
        i += 1;
    }
    text.into_bytes()
}

/// Four books of small chapters; the first has a big one too (read in
/// ranged parts).
fn library(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("lib");
    for book in ["甲", "乙", "丙", "丁"] {
        let d = root.join("novels").join(book);
        std::fs::create_dir_all(&d).unwrap();
        for n in 1..=3 {
            let body = prose(2000 + 300 * n, &format!("{book}{n}"));
            std::fs::write(d.join(format!("第{n}章.md")), body).unwrap();
        }
    }
    let big = root.join("novels/甲/第9章 大.md");
    std::fs::write(big, prose(BIG_BYTES, "大")).unwrap();
    root
}

fn novelfs_status(mnt: &Path, flag: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .arg("status")
        .arg(mnt)
        .arg(flag)
        .output()
        .expect("novelfs status runs");
    assert!(
        out.status.success(),
        "novelfs status {flag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The counters of `novelfs status --json`, by key.
fn counters(mnt: &Path) -> BTreeMap<String, u64> {
    let v: Value = serde_json::from_str(&novelfs_status(mnt, "--json")).unwrap();
    assert_eq!(
        v["storage"].as_str().map(|s| s.starts_with("bucket")),
        Some(true),
        "{v}"
    );
    v.as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
        .collect()
}

/// What the storage says it sent between `before` and `after`, in the
/// proxy's terms.
fn sent(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Counts {
    let d = |k: &str| after[k] - before[k];
    Counts {
        list: d("list_requests"),
        get: d("get_requests"),
        ranged_get: d("ranged_get_requests"),
        head: d("head_requests"),
        put: d("put_requests"),
        other: d("other_requests"),
        ..Counts::default()
    }
}

fn seen(b: &Bucket) -> Counts {
    let c = b.server.counts();
    Counts {
        list: c.list,
        get: c.get,
        ranged_get: c.ranged_get,
        head: c.head,
        put: c.put,
        other: c.other,
        ..Counts::default()
    }
}

/// Waits until the proxy has seen no request for a second (the fetchers
/// ahead are done), up to a minute.
fn quiet(b: &Bucket) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = seen(b);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(1));
        let now = seen(b);
        if now == last {
            return;
        }
        last = now;
    }
}

/// Reads the first page of each chapter of `book` named in `chapters`.
fn read_book(m: &Mount, book: &str, chapters: &[&str]) -> std::io::Result<usize> {
    let dir = m.path().join(book);
    let mut read = std::fs::read_dir(&dir)?.count();
    for ch in chapters {
        let chapter = dir.join(ch);
        let mut pages = std::fs::read_dir(&chapter)?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<Vec<_>>>()?;
        pages.sort();
        read += std::fs::read(&pages[0])?.len();
        read += std::fs::read(pages.last().unwrap())?.len();
    }
    Ok(read)
}

/// Runs `work` with the proxy's counts from zero; the storage's counts of
/// it (once both agree, or a minute has passed) and the proxy's.
fn counted(
    b: &Bucket,
    m: &Mount,
    work: impl FnOnce(),
) -> (BTreeMap<String, u64>, BTreeMap<String, u64>, Counts) {
    quiet(b);
    b.server.reset_counts();
    let before = counters(m.path());
    work();
    quiet(b);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let after = counters(m.path());
        let proxy = seen(b);
        if sent(&before, &after) == proxy || Instant::now() > deadline {
            return (before, after, proxy);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn status_counts_every_request_the_proxy_saw_and_its_retries_and_errors() {
    require_fuse!();
    let tmp = tempfile::tempdir().unwrap();
    let root = library(tmp.path());
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let m = bucket.mount(&["--ttl", "60", "--cache-size", "32M"]);
    let d = |before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, k: &str| {
        after[k] - before[k]
    };

    // Listings, whole chapters, and a big one in ranged parts.
    let (before, after, proxy) = counted(&bucket, &m, || {
        std::fs::read_dir(m.path()).unwrap().for_each(drop);
        read_book(&m, "甲", &["第1章.md", "第2章.md", "第9章 大.md"]).unwrap();
    });
    eprintln!(
        "workload: proxy {proxy:?}; bytes fetched {}, cache hits {}, misses {}",
        d(&before, &after, "bytes_fetched"),
        d(&before, &after, "cache_hits"),
        d(&before, &after, "cache_misses")
    );
    assert_eq!(sent(&before, &after), proxy, "the mixed workload");
    assert!(
        proxy.list >= 2 && proxy.get >= 2 && proxy.ranged_get >= 3,
        "{proxy:?}"
    );
    assert!(d(&before, &after, "bytes_fetched") >= BIG_BYTES as u64);
    assert!(d(&before, &after, "cache_misses") >= 1, "{after:?}");
    assert_eq!(d(&before, &after, "retries"), 0);
    assert_eq!(d(&before, &after, "errors"), 0);

    // Two GETs answered 503: each is tried again.
    let (before, after, proxy) = counted(&bucket, &m, || {
        bucket.server.set("only=GET&reply=2&reply_status=503");
        read_book(&m, "乙", &["第1章.md"]).unwrap();
    });
    bucket.server.set("only=&reply=0");
    eprintln!("503s: proxy {proxy:?}, status {after:?}");
    assert_eq!(sent(&before, &after), proxy, "with two 503s");
    assert_eq!(d(&before, &after, "retries"), 2);
    assert_eq!(d(&before, &after, "errors"), 0);

    // A body cut short: resumed with a ranged GET, a retry.
    let (before, after, proxy) = counted(&bucket, &m, || {
        bucket.server.set("only=GET&cut=1");
        read_book(&m, "丙", &["第1章.md"]).unwrap();
    });
    bucket.server.set("only=&cut=0");
    eprintln!("a cut: proxy {proxy:?}, status {after:?}");
    assert_eq!(sent(&before, &after), proxy, "with a body cut short");
    assert_eq!(d(&before, &after, "retries"), proxy.ranged_get);
    assert!(proxy.ranged_get >= 1, "{proxy:?}");

    // GETs refused (403, not retried): each one an error.
    let (before, after, proxy) = counted(&bucket, &m, || {
        bucket.server.set("only=GET&reply=-1&reply_status=403");
        assert!(read_book(&m, "丁", &["第1章.md"]).is_err());
    });
    bucket.server.set("only=&reply=0");
    eprintln!("403s: proxy {proxy:?}, status {after:?}");
    assert_eq!(sent(&before, &after), proxy, "with GETs refused");
    assert_eq!(d(&before, &after, "retries"), 0);
    assert_eq!(d(&before, &after, "errors"), proxy.get + proxy.ranged_get);
    assert!(proxy.get >= 1, "{proxy:?}");

    // The counts go on across servers.
    let status = counters(m.path());
    let server = status["server"];
    // SAFETY: signalling the mount's server, a process of this test's.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while counters(m.path())
        .get("server")
        .is_none_or(|&s| s == server)
    {
        assert!(Instant::now() < deadline, "no new server");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (before, after, proxy) = counted(&bucket, &m, || {
        read_book(&m, "乙", &["第2章.md", "第3章.md"]).unwrap();
    });
    assert_eq!(sent(&before, &after), proxy, "after a new server");
    for (k, v) in &status {
        if k.ends_with("_requests") || k == "retries" || k == "errors" {
            assert!(before[k] >= *v, "{k} went back: {v} then {}", before[k]);
        }
    }

    // The same counters as Prometheus' text format.
    let text = novelfs_status(m.path(), "--prometheus");
    check_exposition(&text, m.path());
    let now = counters(m.path());
    let list = format!(
        "novelfs_requests_total{{kind=\"list\",mountpoint=\"{}\"}} ",
        m.path().display()
    );
    let sample = text
        .lines()
        .find_map(|l| l.strip_prefix(&list))
        .expect("the LIST sample");
    assert_eq!(
        sample.parse::<u64>().unwrap(),
        now["list_requests"],
        "{text}"
    );
}

/// Every line of `text` a `# HELP`, a `# TYPE` before its metric's
/// samples, or a sample `name{labels} value` with the mountpoint label.
fn check_exposition(text: &str, mnt: &Path) {
    let mut typed = Vec::new();
    let mut samples = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            assert!(
                rest.split_once(' ').is_some_and(|(_, h)| !h.is_empty()),
                "{line}"
            );
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(line);
            assert!(["counter", "gauge"].contains(&kind), "{line}");
            typed.push(name.to_string());
        } else {
            let (series, value) = line.rsplit_once(' ').expect(line);
            value.parse::<f64>().expect(line);
            let (name, labels) = series.split_once('{').expect(line);
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{line}"
            );
            assert!(typed.iter().any(|t| t == name), "no # TYPE before {line}");
            let labels = labels.strip_suffix('}').expect(line);
            let mountpoint = format!("mountpoint=\"{}\"", mnt.display());
            assert!(labels.split(',').any(|l| l == mountpoint), "{line}");
            samples += 1;
        }
    }
    assert!(samples >= 13, "{text}");
}

/// A local library has no remote storage: `status` says so, and
/// `--prometheus` gives no samples, only a comment saying why.
#[test]
fn status_of_a_local_library_says_there_is_no_remote_storage() {
    require_fuse!();
    let tmp = tempfile::tempdir().unwrap();
    let root = library(tmp.path());
    let m = Mount::new(&root, &[]);
    std::fs::read_dir(m.path().join("甲"))
        .unwrap()
        .for_each(drop);
    let v: Value = serde_json::from_str(&novelfs_status(m.path(), "--json")).unwrap();
    assert!(
        v["storage"]
            .as_str()
            .unwrap()
            .starts_with("local directory"),
        "{v}"
    );
    assert!(v.get("list_requests").is_none(), "{v}");
    // The holder's figures, and no storage's: a comment says why.
    let text = novelfs_status(m.path(), "--prometheus");
    let storage = |l: &&str| l.starts_with("novelfs_requests_total") || l.contains("snapshot");
    assert!(!text.lines().any(|l| storage(&l)), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("novelfs_servers_started_total")),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with("# novelfs:")),
        "{text}"
    );
}
