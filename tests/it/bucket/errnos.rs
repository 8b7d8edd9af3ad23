//! The storage's own answer reaches the reader as its own errno, not as
//! EIO for everything: a chapter whose GET the storage refuses is EACCES,
//! one replaced under a read pinned to its version is ESTALE. Neither is
//! kept as what the chapter holds: once the storage answers again, the
//! same page reads, and no `ERROR` file ever stood for it.

use std::path::{Path, PathBuf};

use crate::bucket::native::library;
use crate::common::bucket::Bucket;
use crate::common::errno;
use crate::common::s3_server::url_path;

/// Answers every GET (a whole chapter's; not a LIST, not a ranged part)
/// with `status` and an S3 error of `code` while it lives.
struct Refusing<'a>(&'a Bucket);

impl<'a> Refusing<'a> {
    fn every_get(bucket: &'a Bucket, status: u16, code: &str) -> Self {
        bucket.server.set(&format!(
            "only=GET&reply=-1&reply_status={status}&reply_body=%3CError%3E%3CCode%3E{code}%3C%2FCode%3E%3C%2FError%3E"
        ));
        Refusing(bucket)
    }
}

impl Drop for Refusing<'_> {
    fn drop(&mut self) {
        self.0.server.set("only=&reply=0");
    }
}

fn page(mnt: &Path, chapter: usize) -> PathBuf {
    mnt.join("书00")
        .join(format!("第{chapter:04}章.md"))
        .join("offset-1.txt")
}

/// Mounts a bucket of one book, the library listed (the published head
/// asked for, none found) and no chapter read, then has the storage answer
/// each chapter's GET with `status` and `code` before the book is listed:
/// the errno a reader of a page gets; then, the storage answering again,
/// the page reads. The refusal comes before the book's listing because
/// that listing fetches its chapters ahead of any reader: refused after
/// it, the page would race the chapter's GET.
fn errno_of_a_get_answered(status: u16, code: &str) -> i32 {
    let (_dir, root) = library(1, 3);
    let Some(bucket) = Bucket::with(&root) else {
        return -1;
    };
    let m = bucket.mount(&["--ttl", "60"]);
    let book = m.path().join("书00");
    let listed = std::fs::read_dir(m.path()).unwrap();
    assert!(listed.map(|e| e.unwrap().file_name()).any(|n| n == "书00"));
    bucket.server.reset_counts();
    let refusing = Refusing::every_get(&bucket, status, code);
    assert!(std::fs::read_dir(&book).unwrap().count() >= 3);
    let e = std::fs::read(page(m.path(), 2)).unwrap_err();
    // Chapter 2 itself, not only the others the listing fetches ahead.
    let chapter = url_path("novels/书00/第0002章.md");
    let log = bucket.server.log();
    assert!(
        log.iter()
            .any(|r| r.kind == "GET" && r.path.contains(&chapter)),
        "the chapter was asked for"
    );
    drop(refusing);
    // A read just after may still join a GET the storage refused before
    // (the reader's or the listing's, in flight): it fails with the same
    // errno, and the read after it has a GET of its own. A refusal kept
    // as what the chapter holds fails every read.
    let mut reads = 0;
    let text = loop {
        reads += 1;
        match std::fs::read(page(m.path(), 2)) {
            Ok(bytes) => break String::from_utf8(bytes).unwrap(),
            Err(again) if reads < 3 => assert_eq!(errno(&again), errno(&e)),
            Err(again) => panic!("{reads} reads after the storage answers again: {again}"),
        }
    };
    assert!(text.contains("寻找之词"), "{text}");
    assert!(!book.join("第0002章.md").join("ERROR").exists());
    errno(&e)
}

/// Refused credentials (S3's 403 `AccessDenied`) are the reader's access
/// denied.
#[test]
fn a_chapter_get_refused_is_eacces() {
    require_fuse!();
    let got = errno_of_a_get_answered(403, "AccessDenied");
    if got != -1 {
        assert_eq!(got, libc::EACCES, "errno {got}");
    }
}

/// An object no longer in the version asked for (S3's 412
/// `PreconditionFailed`) is a stale handle.
#[test]
fn a_chapter_changed_under_its_get_is_estale() {
    require_fuse!();
    let got = errno_of_a_get_answered(412, "PreconditionFailed");
    if got != -1 {
        assert_eq!(got, libc::ESTALE, "errno {got}");
    }
}
