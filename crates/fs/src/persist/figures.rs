//! A book's figures in a published snapshot's root: what `novel_books`
//! counts of it (its chapters and their characters), made by the
//! publisher of the rows it records in the book's piece, so that a mount
//! prints `novel_books` from the root alone, without a piece a book.
//!
//! The figures are made of the piece's own listing and rows, and only
//! when every chapter of it has a row that proves its bytes (the trust
//! rule a mount applies to the same row): they stand for that piece, and
//! the root names them beside its digest. A mount uses them only while
//! it serves the book from that root without having read it
//! (`Backing::published_figures`), with the publisher's profile (the
//! same decoding) and a size limit that reads every chapter they count.

use std::collections::HashMap;
use std::ffi::OsString;

use serde_json::{Value, json};

use super::identity::{Identity, trusted};
use crate::cache::Stamp;
use crate::freshness::SourceFs;
use novelfs_library::backing::EntryKind;
use novelfs_library::{Library, MAX_CHAPTER_BYTES_CAP, scan};
use novelfs_storage::Entry;
use novelfs_storage::backing::listed_meta;

/// The figures of the book directory `dir` (`novels/BOOK`) whose files
/// are `files` (as its piece lists them) and whose rows are `published`
/// (`rows_by_book`'s, as its piece holds them): `[profile, chapters,
/// characters, largest chapter's size]`. `None` when `dir` is no book or a
/// chapter has no row that proves its bytes.
pub fn book_figures(dir: &str, files: &[Entry], published: &Value) -> Option<Value> {
    let book = dir.strip_prefix("novels/")?;
    if book.is_empty() || book.contains('/') {
        return None;
    }
    let profile = published["profile"].as_i64()?;
    let rows: HashMap<&str, &Vec<Value>> = published["rows"]
        .as_array()?
        .iter()
        .filter_map(|row| {
            let row = row.as_array()?;
            Some((row.first()?.as_str()?, row))
        })
        .collect();
    let entries: HashMap<&OsString, &Entry> = files.iter().map(|e| (&e.name, e)).collect();
    let names = files.iter().map(|e| (e.name.clone(), e.kind)).collect();
    let granularity = SourceFs::in_bucket().granularity;
    let (mut chapters, mut chars, mut largest) = (0u64, 0u64, 0u64);
    for chapter in scan::chapters_of(names) {
        let entry = entries.get(&chapter.os_name)?;
        if entry.kind != EntryKind::File {
            return None;
        }
        let stamp = Stamp::of(&listed_meta(entry));
        let row = rows.get(chapter.os_name.to_str()?)?;
        let n = |i: usize| row.get(i).and_then(Value::as_i64);
        let (mtime_ns, ctime_after_ns, recorded_after_ms) = (n(4)?, n(5)?, n(6)?);
        let recorded = Identity {
            dev: n(1)?,
            ino: n(2)?,
            size: n(3)?,
            mtime_ns,
            ctime_ns: mtime_ns.wrapping_add(ctime_after_ns),
        };
        let recorded_ns = recorded_after_ms
            .saturating_mul(1_000_000)
            .saturating_add(mtime_ns);
        if Identity::of(&stamp) != Some(recorded) || !trusted(&stamp, recorded_ns, granularity) {
            return None;
        }
        chapters += 1;
        chars += u64::try_from(n(7)?).ok()?;
        largest = largest.max(entry.size);
    }
    Some(json!([profile, chapters, chars, largest]))
}

/// What `novel_books` counts of a book whose root gives `figures`
/// (`book_figures`'), for a mount of `library` whose profile is
/// `profile`: its chapters and characters. `None` when the figures were
/// made by a build that decodes differently, or count a chapter over the
/// mount's size limit (which the mount counts as unreadable).
pub(crate) fn published_totals(
    figures: &Value,
    profile: i64,
    library: &Library,
) -> Option<(u64, u64)> {
    let n = |i: usize| figures.get(i).and_then(Value::as_u64);
    let limit = library.max_chapter_bytes.min(MAX_CHAPTER_BYTES_CAP);
    (figures.get(0)?.as_i64()? == profile && n(3)? <= limit).then_some((n(1)?, n(2)?))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use novelfs_storage::Version;

    use super::*;

    fn entry(name: &str, etag: &str, size: u64) -> Entry {
        Entry {
            name: name.into(),
            kind: EntryKind::File,
            size,
            version: Version::ETag {
                etag: format!("\"{etag}\""),
                size,
            },
            modified: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        }
    }

    /// A row as a publisher records it for the file `entry` (its identity
    /// as a mount's listing gives it), read 5 s after its last change.
    fn row(entry: &Entry, chars: u64) -> Value {
        let id = Identity::of(&Stamp::of(&listed_meta(entry))).unwrap();
        json!([
            entry.name.to_str().unwrap(),
            id.dev,
            id.ino,
            id.size,
            id.mtime_ns,
            id.ctime_ns.wrapping_sub(id.mtime_ns),
            5_000,
            chars,
            3,
            "00"
        ])
    }

    /// A book's figures count every chapter its listing holds (not the
    /// files that are no chapters) when each has a row that proves it:
    /// none for a chapter without one, or with a row of another version
    /// of it, or for a directory that is no book. A mount uses them with
    /// the publisher's profile and a size limit that reads every chapter.
    #[test]
    fn a_books_figures_count_its_chapters_as_their_rows_prove_them() {
        let files = [
            entry("第1章.md", "a", 300),
            entry("第2章.md", "b", 900),
            entry("封面.jpg", "c", 50),
        ];
        let rows = |rows: Vec<Value>| json!({ "profile": 7, "rows": rows });
        let both = rows(vec![row(&files[0], 100), row(&files[1], 250)]);
        let figures = book_figures("novels/书", &files, &both);
        assert_eq!(figures, Some(json!([7, 2, 350, 900])));
        assert_eq!(book_figures("novels/书/稿", &files, &both), None);
        assert_eq!(book_figures("书", &files, &both), None);
        let one = rows(vec![row(&files[0], 100)]);
        assert_eq!(book_figures("novels/书", &files, &one), None);
        let mut replaced = files.clone();
        replaced[1] = entry("第2章.md", "b2", 900);
        assert_eq!(book_figures("novels/书", &replaced, &both), None);

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("novels")).unwrap();
        let mut library = novelfs_storage::open_local(dir.path()).unwrap();
        let figures = figures.unwrap();
        assert_eq!(published_totals(&figures, 7, &library), Some((2, 350)));
        assert_eq!(published_totals(&figures, 8, &library), None);
        library.max_chapter_bytes = 899;
        assert_eq!(published_totals(&figures, 7, &library), None);
    }
}
