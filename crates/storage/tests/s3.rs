//! `BucketStorage` against a real S3 server (moto on 127.0.0.1) through the
//! tests' own proxy, which counts the requests each access costs and
//! injects latency, stalls and cut connections.

#[path = "../../../tests/s3/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use harness::S3Server;
use novelfs_library::backing::SourceKind;
use novelfs_storage::{
    BucketStorage, BucketUrl, Credentials, EntryKind, InFlight, ReadRequest, RelPath, Storage,
    StorageError, StoreOptions, Version,
};

const BUCKET: &str = "library";
const SECRET: &str = "s3cr3t-never-shown";

fn options(endpoint: String, timeout: Duration) -> StoreOptions {
    StoreOptions {
        endpoint_url: Some(endpoint),
        region: Some("us-east-1".into()),
        force_path_style: true,
        credentials: Credentials::Static {
            key_id: "testing".into(),
            secret: SECRET.into(),
            token: None,
        },
        timeout,
        ..Default::default()
    }
}

fn store(server: &S3Server, url: &str, timeout: Duration) -> BucketStorage {
    BucketStorage::new(url.parse().unwrap(), &options(server.endpoint(), timeout)).unwrap()
}

fn path(p: &str) -> RelPath {
    RelPath::new(p).unwrap()
}

fn chapter(i: usize) -> String {
    format!("第{i}章 风起.md")
}

fn body(i: usize, len: usize) -> Vec<u8> {
    let line = format!("第{i}章的正文。");
    line.repeat(len / line.len() + 1).into_bytes()[..len].to_vec()
}

#[test]
fn listing_a_book_of_2500_keys_costs_three_lists_and_no_head() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let objects: Vec<(String, Vec<u8>)> = (0..2500)
        .map(|i| {
            (
                format!("shelf/novels/长篇/{}", chapter(i)),
                body(i, 10 + i % 7),
            )
        })
        .chain([
            ("shelf/novels/短篇/第1章.md".to_string(), b"x".to_vec()),
            ("shelf/novel_switch.txt".to_string(), b"s".to_vec()),
            ("elsewhere/novels/外/第1章.md".to_string(), b"y".to_vec()),
        ])
        .collect();
    server.put_many(BUCKET, &objects);
    let s3 = store(&server, "s3://library/shelf/", Duration::from_secs(30));
    server.reset_counts();

    let book = s3.list(&path("novels/长篇")).unwrap();
    let counts = server.counts();
    println!("2,500 keys listed: {counts:?}");
    assert_eq!(book.len(), 2500);
    assert_eq!(
        (counts.list, counts.head, counts.get),
        (3, 0, 0),
        "{counts:?}"
    );
    for e in &book {
        let i: usize = e.name.to_str().unwrap()[3..]
            .split('章')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(e.kind, EntryKind::File);
        assert_eq!(e.size, (10 + i % 7) as u64, "{e:?}");
        match &e.version {
            Version::ETag { etag, size } => assert!(!etag.is_empty() && *size == e.size),
            v => panic!("{v:?}"),
        }
    }

    let root = s3.list(&RelPath::root()).unwrap();
    let names: Vec<_> = root
        .iter()
        .map(|e| (e.name.to_str().unwrap(), e.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("novel_switch.txt", EntryKind::File),
            ("novels", EntryKind::Dir)
        ]
    );
    let books: Vec<_> = s3
        .list(&path("novels"))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(books, ["短篇", "长篇"]);
    assert!(s3.list(&path("novels/无此书")).unwrap_err().is_not_found());
    assert_eq!(server.counts().head, 0);
}

#[test]
fn a_batch_of_reads_pays_the_latency_once_and_one_get_each() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    const N: usize = 60;
    // Well above what moto spends on a GET beside two CPU hogs (tens of
    // ms), so that the latency, not the server's own time, is what the
    // batch saves: nearer the server's time the batch saves much less.
    const LATENCY_MS: u64 = 100;
    let objects: Vec<_> = (0..N)
        .map(|i| (format!("novels/书/{}", chapter(i)), body(i, 3000 + i)))
        .collect();
    server.put_many(BUCKET, &objects);
    let s3 = store(&server, "s3://library", Duration::from_secs(30));
    let listed = s3.list(&path("novels/书")).unwrap();
    let requests: Vec<_> = (0..N)
        .map(|i| {
            let name = chapter(i);
            let e = listed.iter().find(|e| e.name == name.as_str()).unwrap();
            ReadRequest::new(path(&format!("novels/书/{name}")), Some(e.version.clone()))
        })
        .collect();
    server.set(&format!("latency_ms={LATENCY_MS}"));
    server.reset_counts();

    let t = Instant::now();
    let limits = InFlight {
        requests: 16,
        bytes: 64 << 20,
    };
    let results: Vec<_> = s3.read_many(requests.clone(), limits).collect();
    let batch = t.elapsed();
    let counts = server.counts();
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(
            r.unwrap().bytes,
            objects[i].1,
            "result {i} in the order asked"
        );
    }
    assert_eq!(
        (counts.get, counts.list, counts.head),
        (N as u64, 0, 0),
        "{counts:?}"
    );

    // The same reads one after another: what the batch saves.
    let t = Instant::now();
    for r in &requests[..N / 4] {
        s3.read(&r.path, r.version.as_ref()).unwrap();
    }
    let one_by_one = t.elapsed() * 4;
    println!(
        "{N} reads at {LATENCY_MS} ms a request: batch {batch:?}, one by one about {one_by_one:?}; {counts:?}"
    );
    assert!(
        one_by_one >= Duration::from_millis(N as u64 * LATENCY_MS),
        "the proxy's latency is not applied: {one_by_one:?}"
    );
    // Against the same reads one by one in the same run, so that a busy
    // machine slows both (a fixed bound fails on a busy machine).
    assert!(
        batch * 3 < one_by_one,
        "batch of {N} took {batch:?}, one by one {one_by_one:?}"
    );
    assert!(
        counts.max_in_flight > 4 && counts.max_in_flight <= 16,
        "{counts:?}"
    );
}

#[test]
fn a_batch_keeps_its_requests_and_bytes_in_flight_within_bounds() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    const N: usize = 24;
    let objects: Vec<_> = (0..N)
        .map(|i| (format!("novels/书/{}", chapter(i)), body(i, 100_000)))
        .collect();
    server.put_many(BUCKET, &objects);
    let s3 = store(&server, "s3://library", Duration::from_secs(30));
    let listed = s3.list(&path("novels/书")).unwrap();
    let requests: Vec<_> = listed
        .iter()
        .map(|e| {
            ReadRequest::new(
                path(&format!("novels/书/{}", e.name.to_str().unwrap())),
                Some(e.version.clone()),
            )
        })
        .collect();
    server.set("latency_ms=30");
    for (limits, most) in [
        (
            InFlight {
                requests: 4,
                bytes: 64 << 20,
            },
            4,
        ),
        (
            InFlight {
                requests: 16,
                bytes: 250_000,
            },
            2,
        ),
    ] {
        server.reset_counts();
        let n = s3
            .read_many(requests.clone(), limits)
            .map(|r| assert_eq!(r.unwrap().bytes.len(), 100_000))
            .count();
        let counts = server.counts();
        println!("{limits:?}: {counts:?}");
        assert_eq!((n, counts.get), (N, N as u64));
        assert!(
            counts.max_in_flight >= 2 && counts.max_in_flight <= most,
            "{limits:?}: {counts:?}"
        );
    }
}

#[test]
fn a_replaced_object_read_at_its_old_version_is_changed() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let key = "novels/书/第1章.md";
    server.put(BUCKET, key, "旧的正文".as_bytes());
    let s3 = store(&server, "s3://library", Duration::from_secs(30));
    let p = path(key);
    let old = s3.list(&path("novels/书")).unwrap().remove(0).version;
    let first = s3.read(&p, Some(&old)).unwrap();
    assert_eq!(
        (first.bytes.as_slice(), &first.version),
        ("旧的正文".as_bytes(), &old)
    );

    server.put(BUCKET, key, "新的正文，长一些".as_bytes());
    server.reset_counts();
    let e = s3.read(&p, Some(&old)).unwrap_err();
    assert!(matches!(e, StorageError::Changed { .. }), "{e}");
    assert_eq!(e.source_kind(), SourceKind::Changed);
    let e = s3.read_range(&p, 0..3, Some(&old)).unwrap_err();
    assert!(matches!(e, StorageError::Changed { .. }), "{e}");
    let counts = server.counts();
    assert_eq!(
        (counts.get, counts.ranged_get),
        (1, 1),
        "one request each: {counts:?}"
    );

    let now = s3.read(&p, None).unwrap();
    assert_eq!(now.bytes, "新的正文，长一些".as_bytes());
    assert_ne!(now.version, old);
    assert_eq!(s3.list(&path("novels/书")).unwrap()[0].version, now.version);
    let part = s3.read_range(&p, 3..9, Some(&now.version)).unwrap();
    assert_eq!(part.bytes, "的正".as_bytes());
    let tail = s3.read_range(&p, 18..1000, Some(&now.version)).unwrap();
    assert_eq!(tail.bytes, "一些".as_bytes());

    server.delete(BUCKET, key);
    assert!(s3.read(&p, None).unwrap_err().is_not_found());
    assert!(s3.read(&p, Some(&now.version)).unwrap_err().is_not_found());
}

/// What a failure is comes from the status the server answered with, as
/// the client saw it on the wire, never from the words: a 503 whose body
/// says nothing of HTTP is an outage once the retries are spent; a 400 to
/// a key whose name reads like a server error is not; a 503 the retries
/// get past is no failure.
#[test]
fn a_failure_is_what_the_server_answered_not_what_its_words_say() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let plain = "novels/书/第1章.md";
    let odd = "novels/书/第2章: HTTP 500 error.md";
    server.put(BUCKET, plain, "正文".as_bytes());
    server.put(BUCKET, odd, "正文".as_bytes());
    let s3 = store(&server, "s3://library", Duration::from_secs(10));
    let quiet = "%3CError%3E%3CMessage%3Eplease%20wait%3C%2FMessage%3E%3C%2FError%3E";

    server.set(&format!(
        "only=GET&reply=-1&reply_status=503&reply_body={quiet}"
    ));
    let e = s3.read(&path(plain), None).unwrap_err();
    assert!(
        matches!(e, StorageError::ServerError { status: 503, .. }),
        "{e:?}"
    );
    assert!(e.is_outage(), "{e}");
    assert_eq!(e.source_kind(), SourceKind::Transient);

    let refused = "%3CError%3E%3CCode%3EInvalidArgument%3C%2FCode%3E%3C%2FError%3E";
    server.set(&format!(
        "only=GET&reply=-1&reply_status=400&reply_body={refused}"
    ));
    let e = s3.read(&path(odd), None).unwrap_err();
    assert!(!e.is_outage(), "{e}");
    assert_eq!(e.source_kind(), SourceKind::Other);

    server.set(&format!(
        "only=GET&reply=1&reply_status=503&reply_body={quiet}"
    ));
    let got = s3.read(&path(plain), None).unwrap();
    assert_eq!(got.bytes, "正文".as_bytes());
}

#[test]
fn a_missing_bucket_refused_credentials_and_a_closed_port_are_told_apart_fast() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let timeout = Duration::from_secs(3);
    let fast = Duration::from_millis(1500);

    let s3 = store(&server, "s3://library/shelf", timeout);
    s3.check().unwrap();

    let t = Instant::now();
    let e = store(&server, "s3://no-such-bucket", timeout)
        .check()
        .unwrap_err();
    println!("missing bucket: {e} in {:?}", t.elapsed());
    assert!(matches!(e, StorageError::NoBucket { .. }), "{e}");
    assert!(t.elapsed() < fast);
    let e = store(&server, "s3://no-such-bucket", timeout)
        .list(&RelPath::root())
        .unwrap_err();
    assert!(matches!(e, StorageError::NoBucket { .. }), "{e}");

    // A port with nothing listening on it.
    let closed = format!("http://127.0.0.1:{}", harness::free_port());
    let s3 = BucketStorage::new(
        "s3://library".parse().unwrap(),
        &options(closed.clone(), timeout),
    )
    .unwrap();
    let t = Instant::now();
    let e = s3.check().unwrap_err();
    println!("closed port: {e} in {:?}", t.elapsed());
    assert!(matches!(e, StorageError::Unreachable { .. }), "{e}");
    // A refused connection to 127.0.0.1 takes microseconds: anything near
    // a backoff's worth means check() retried.
    assert!(
        t.elapsed() < Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    // An access retries within its bound, then says the same.
    let t = Instant::now();
    let e = s3.read(&path("novels/书/第1章.md"), None).unwrap_err();
    println!("closed port, retried: {e} in {:?}", t.elapsed());
    assert!(matches!(e, StorageError::Unreachable { .. }), "{e}");
    assert!(t.elapsed() < timeout + Duration::from_millis(1500));

    // moto checking credentials knows no keys at all.
    let Some(strict) = S3Server::start_with_env(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]) else {
        return;
    };
    let s3 = store(&strict, "s3://library", timeout);
    let t = Instant::now();
    let e = s3.check().unwrap_err();
    println!("refused credentials: {e} in {:?}", t.elapsed());
    assert!(matches!(e, StorageError::AccessDenied { .. }), "{e}");
    assert_eq!(e.source_kind(), SourceKind::Denied);
    assert!(t.elapsed() < fast);
    for e in [e, s3.list(&RelPath::root()).unwrap_err()] {
        let text = format!("{e} {e:?}");
        assert!(!text.contains(SECRET), "{text}");
    }
}

/// `check_dir` tells, in one LIST, a directory that is there, one that is
/// not (`NotFound`) and a missing bucket apart.
#[test]
fn checking_a_directory_is_one_list_that_tells_missing_from_no_bucket() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    server.put_many(
        BUCKET,
        &[("shelf/novels/书/第1章.md".to_string(), b"x".to_vec())],
    );
    let timeout = Duration::from_secs(10);
    let s3 = store(&server, "s3://library/shelf", timeout);
    server.reset_counts();
    s3.check_dir(&path("novels")).unwrap();
    assert_eq!(server.counts().list, 1);
    let e = s3.check_dir(&path("novelz")).unwrap_err();
    assert!(e.is_not_found(), "{e}");
    s3.check_dir(&RelPath::root()).unwrap();
    store(&server, "s3://library/elsewhere", timeout)
        .check_dir(&RelPath::root())
        .unwrap();
    let e = store(&server, "s3://no-such-bucket", timeout)
        .check_dir(&path("novels"))
        .unwrap_err();
    assert!(matches!(e, StorageError::NoBucket { .. }), "{e}");
    let counts = server.counts();
    assert_eq!(
        (counts.list, counts.head, counts.get),
        (5, 0, 0),
        "{counts:?}"
    );
}

#[test]
fn a_stalled_server_fails_one_access_within_its_bound_and_recovery_needs_nothing() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    server.put(BUCKET, "novels/书/第1章.md", b"text");
    let timeout = Duration::from_secs(1);
    // The bound is what is checked; the slack is what a busy machine adds
    // on top before the failure is seen.
    let slack = Duration::from_millis(1500);
    let s3 = store(&server, "s3://library", timeout);
    let p = path("novels/书/第1章.md");
    s3.read(&p, None).unwrap();

    // One request held: tried again at half the bound, within it.
    server.reset_counts();
    server.set("stall=1");
    let t = Instant::now();
    assert_eq!(s3.read(&p, None).unwrap().bytes, b"text");
    let took = t.elapsed();
    let counts = server.counts();
    println!("GET stalled once: {took:?}, {counts:?}");
    assert_eq!((counts.stalled, counts.get), (1, 2), "{counts:?}");
    assert!(took < timeout, "{took:?}");

    server.set("stall=-1");
    for (what, r) in [
        ("GET", {
            let t = Instant::now();
            (s3.read(&p, None).map(drop), t.elapsed())
        }),
        ("LIST", {
            let t = Instant::now();
            (s3.list(&path("novels/书")).map(drop), t.elapsed())
        }),
    ] {
        let (result, took) = r;
        println!("{what} against a stalled server: {result:?} after {took:?}");
        let e = result.unwrap_err();
        assert!(matches!(e, StorageError::Timeout { .. }), "{what}: {e}");
        assert!(
            took >= timeout && took < timeout + slack,
            "{what}: {took:?}"
        );
    }
    assert!(server.counts().stalled >= 2);

    server.set("stall=0");
    assert_eq!(s3.read(&p, None).unwrap().bytes, b"text");
}

#[test]
fn a_cut_or_dropped_connection_is_retried_and_the_access_succeeds() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let text = body(7, 50_000);
    server.put(BUCKET, "novels/书/第7章.md", &text);
    let s3 = store(&server, "s3://library", Duration::from_secs(10));
    let p = path("novels/书/第7章.md");

    server.reset_counts();
    server.set("cut=1");
    let got = s3.read(&p, None).unwrap();
    let counts = server.counts();
    println!("GET cut mid-body: {counts:?}");
    assert_eq!(got.bytes, text);
    assert_eq!(counts.cut, 1, "{counts:?}");
    assert_eq!(counts.get + counts.ranged_get, 2, "{counts:?}");

    server.reset_counts();
    server.set("drop=1");
    let got = s3.read(&p, None).unwrap();
    let counts = server.counts();
    println!("GET dropped: {counts:?}");
    assert_eq!(got.bytes, text);
    assert_eq!((counts.dropped, counts.get), (1, 2), "{counts:?}");

    server.reset_counts();
    server.set("drop=1");
    assert_eq!(s3.list(&path("novels/书")).unwrap().len(), 1);
    let counts = server.counts();
    assert_eq!((counts.dropped, counts.list), (1, 2), "{counts:?}");
}

#[test]
fn a_stat_is_one_head_for_an_object_and_a_list_for_a_directory() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    server.put(BUCKET, "novels/书/第1章.md", b"12345");
    let s3 = store(&server, "s3://library", Duration::from_secs(10));
    server.reset_counts();
    let e = s3.stat(&path("novels/书/第1章.md")).unwrap();
    assert_eq!((e.kind, e.size), (EntryKind::File, 5));
    let d = s3.stat(&path("novels/书")).unwrap();
    assert_eq!(d.kind, EntryKind::Dir);
    assert!(s3.stat(&path("novels/无")).unwrap_err().is_not_found());
    let counts = server.counts();
    assert_eq!((counts.head, counts.list), (3, 2), "{counts:?}");
    let _: BucketUrl = "s3://library".parse().unwrap();
}

#[test]
fn a_big_object_is_read_as_ranges_in_flight_together() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let text = body(1, 1_000_003);
    server.put(BUCKET, "novels/书/长章.md", &text);
    let s3 = store(&server, "s3://library", Duration::from_secs(10));
    let p = path("novels/书/长章.md");
    let version = s3.list(&path("novels/书")).unwrap().remove(0).version;
    const PART: u64 = 256 * 1024;
    let requests: Vec<_> = (0..text.len() as u64)
        .step_by(PART as usize)
        .map(|start| ReadRequest::range(p.clone(), Some(version.clone()), start..start + PART))
        .collect();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[3].size(), Some(text.len() as u64 - 3 * PART));
    server.set("latency_ms=50");
    server.reset_counts();
    let t = Instant::now();
    let mut joined = Vec::new();
    for r in s3.read_many(requests, InFlight::default()) {
        let o = r.unwrap();
        assert_eq!(o.version, version);
        joined.extend_from_slice(&o.bytes);
    }
    let took = t.elapsed();
    let counts = server.counts();
    println!("4 ranges of a 1 MB object at 50 ms: {took:?}, {counts:?}");
    assert!(joined == text, "the ranges put together are the object");
    assert_eq!(
        (counts.ranged_get, counts.get, counts.head),
        (4, 0, 0),
        "{counts:?}"
    );
    assert!(counts.max_in_flight >= 2, "{counts:?}");
}

#[test]
fn reads_from_many_threads_go_out_together_and_a_batch_can_be_left_early() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    const N: usize = 16;
    let objects: Vec<_> = (0..N)
        .map(|i| (format!("novels/书/{}", chapter(i)), body(i, 2000)))
        .collect();
    server.put_many(BUCKET, &objects);
    let s3 = store(&server, "s3://library", Duration::from_secs(10));
    server.set("latency_ms=100");
    server.reset_counts();
    let t = Instant::now();
    std::thread::scope(|s| {
        for (key, text) in &objects[..8] {
            let s3 = &s3;
            s.spawn(move || assert_eq!(&s3.read(&path(key), None).unwrap().bytes, text));
        }
    });
    let took = t.elapsed();
    let counts = server.counts();
    println!("8 threads, one GET each at 100 ms: {took:?}, {counts:?}");
    assert!(counts.max_in_flight >= 4, "{counts:?}");
    // One after another they take 800 ms.
    assert!(took < Duration::from_millis(800), "{took:?}");

    // Two results taken of sixteen, then the batch dropped: nothing hangs
    // and the store goes on serving.
    let requests: Vec<_> = objects
        .iter()
        .map(|(k, _)| ReadRequest::new(path(k), None))
        .collect();
    let t = Instant::now();
    let first: Vec<_> = s3
        .read_many(
            requests,
            InFlight {
                requests: 2,
                bytes: 1 << 20,
            },
        )
        .take(2)
        .map(|r| r.unwrap().bytes)
        .collect();
    assert_eq!(first, [objects[0].1.clone(), objects[1].1.clone()]);
    assert_eq!(
        s3.read(&path(&objects[5].0), None).unwrap().bytes,
        objects[5].1
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

/// A publisher's round lists the whole library without a delimiter: 1,200
/// keys in 40 books are two LISTs (a LIST per directory would be 42), and
/// the files are those the directories hold, with their sizes and ETags.
#[test]
fn listing_every_key_costs_a_list_per_thousand_keys() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let objects: Vec<(String, Vec<u8>)> = (0..1200)
        .map(|i| {
            let book = i % 40;
            (
                format!("shelf/novels/书{book:02}/{}", chapter(i)),
                body(i, 40),
            )
        })
        .chain([
            ("shelf/novels/书00/".to_string(), Vec::new()),
            ("shelf/.novelfs/snapshot.json".to_string(), b"{}".to_vec()),
            ("elsewhere/novels/外/1.md".to_string(), b"x".to_vec()),
        ])
        .collect();
    server.put_many(BUCKET, &objects);
    let s = store(&server, "s3://library/shelf", Duration::from_secs(10));
    server.reset_counts();
    let all = s.list_all().unwrap();
    let counts = server.counts();
    assert_eq!(counts.list, 2, "{counts:?}");
    assert_eq!(counts.get + counts.head, 0, "{counts:?}");
    // The directory marker is no file; the prefix's own folder is listed.
    assert_eq!(all.len(), 1201);
    let by_dirs = s.list(&path("novels/书07")).unwrap();
    for e in by_dirs {
        let p = path("novels/书07").join(&e.name).unwrap();
        let (_, found) = all.iter().find(|(q, _)| *q == p).expect("listed");
        assert_eq!((found.size, &found.version), (e.size, &e.version));
    }
}
