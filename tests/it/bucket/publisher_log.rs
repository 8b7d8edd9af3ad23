//! The publisher's log (`novelfs index --publish --every`), as an operator
//! reads it days later: every line carries its time (RFC 3339, UTC, as a
//! mount's log does), and a round the bucket holds says so once while it
//! waits instead of nothing until its requests time out. Rounds and the
//! waiting are counted by the events of `novelfs::events`.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use novelfs::events::{PUBLISH_ROUND, ROUND_WAITING};

use crate::bucket::native::library;
use crate::common::bucket::Bucket;
use crate::common::eventually_within;

/// Kills the publisher when dropped.
struct Publisher(Child);

impl Drop for Publisher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `line` begins with env_logger's time: `[YYYY-MM-DDTHH:MM:SSZ`.
fn stamped(line: &str) -> bool {
    let Some(stamp) = line.strip_prefix('[').and_then(|l| l.get(..20)) else {
        return false;
    };
    stamp.char_indices().all(|(i, c)| match i {
        4 | 7 => c == '-',
        10 => c == 'T',
        13 | 16 => c == ':',
        19 => c == 'Z',
        _ => c.is_ascii_digit(),
    })
}

#[test]
fn every_line_has_its_time_and_a_stalled_round_says_so_once() {
    let (dir, root) = library(2, 3);
    let Some(bucket) = Bucket::with(&root) else {
        return;
    };
    let endpoint = bucket.server.endpoint();
    let child = Command::new(env!("CARGO_BIN_EXE_novelfs"))
        .args(["index", &bucket.url()])
        .args(bucket.args(&endpoint, &["--publish", "--every", "1"]))
        .arg("--index-dir")
        .arg(dir.path().join("publisher"))
        .envs(bucket.env())
        .env("RUST_LOG", "novelfs::cli=debug")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut publisher = Publisher(child);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let stderr = publisher.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap().push(line);
        }
    });
    let count = |event: &str| {
        lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.split(' ').any(|w| w == event))
            .count()
    };
    let within = Duration::from_secs(30);
    eventually_within("a round is done", within, || {
        (count(PUBLISH_ROUND) >= 1).then_some(())
    });

    // The bucket holds every request: the round under way waits.
    bucket.server.set("stall=-1");
    let rounds = count(PUBLISH_ROUND);
    eventually_within("the round says it waits", within, || {
        (count(ROUND_WAITING) >= 1).then_some(())
    });
    // Said once, however long it waits.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(count(ROUND_WAITING), 1, "{:#?}", lines.lock().unwrap());
    assert!(
        count(PUBLISH_ROUND) <= rounds + 1,
        "rounds went on while held"
    );
    bucket.server.set("stall=0");
    eventually_within("rounds go on", within, || {
        (count(PUBLISH_ROUND) >= rounds + 2).then_some(())
    });
    drop(publisher);

    let lines = lines.lock().unwrap();
    for line in lines.iter() {
        eprintln!("publisher: {line}");
    }
    let unstamped: Vec<&String> = lines.iter().filter(|l| !stamped(l)).collect();
    assert!(
        unstamped.is_empty(),
        "lines without their time: {unstamped:#?}"
    );
}
