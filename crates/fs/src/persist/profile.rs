//! The profile: what an outline depends on besides the bytes of its
//! chapter, hashed, and the number that hash has in an index file.

use std::ffi::OsStr;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::bare::{NamesLen, bare};
use super::pages::encode_pages;
use super::store;
use crate::chapter_shape::Outline;
use novelfs_library::{ChapterText, Library};

/// What a row depends on besides the bytes of its chapter: how this build
/// decodes, pages and renders — the outlines of a few fixed probe texts,
/// as rows keep them (`bare`), so that a build that pages or sizes
/// differently never trusts another's entries. Not the mount's path root
/// (rows keep no names' share) nor its size limit (judged at lookup).
pub(crate) fn profile_of(library: &Library) -> i64 {
    let mut hash = store::FNV_OFFSET;
    let mut feed = |bytes: &[u8]| hash = store::fnv1a(bytes, hash);
    feed(&store::SCHEMA_VERSION.to_le_bytes());
    for (i, bytes) in probe_texts().iter().enumerate() {
        let decoded = novelfs_library::decode::decode_text(bytes);
        feed(format!("{decoded:?}").as_bytes());
        let Ok(decoded) = decoded else { continue };
        let file = format!("第{i}章 探针\"\\.txt");
        let (book, file) = (OsStr::new("探针 book"), OsStr::new(&file));
        let outline = Outline::compute(library, book, file, &ChapterText::new(decoded));
        feed(format!("{:?}", outline.stats).as_bytes());
        let pages = bare(&outline.pages, NamesLen::of(library, book, file));
        feed(&encode_pages(pages.as_deref().unwrap_or_default()));
    }
    hash as i64
}

/// Texts that exercise the decoder, the paging and the sizes: UTF-8 with
/// escapes, surrogate pairs, CRLF and a line over the cut; GBK; UTF-16
/// with and without a BOM; invalid bytes.
fn probe_texts() -> Vec<Vec<u8>> {
    let mut long = String::new();
    for i in 0..400 {
        long.push_str(&format!(
            "第{i}行：\t\"引号\" \\ 𠀀😀 <b>&amp;</b> \u{1}\r\n"
        ));
        if i % 97 == 0 {
            long.push_str(&"长".repeat(3100));
            long.push('\n');
        }
        if i % 50 == 0 {
            long.push_str("\n\n");
        }
    }
    let (gbk, _, _) = encoding_rs::GBK.encode("第一章 开始\n他说：“你好。”\n");
    let utf16: Vec<u8> = "第二章\n内容\n"
        .encode_utf16()
        .flat_map(|u| u.to_le_bytes())
        .collect();
    let mut bom = vec![0xFF, 0xFE];
    bom.extend_from_slice(&utf16);
    vec![
        long.into_bytes(),
        gbk.into_owned(),
        utf16,
        bom,
        b"\xff\xfe\xfd bad \x80\x81".to_vec(),
        Vec::new(),
        b"one line, no end".to_vec(),
    ]
}

/// The number the profile whose hash is `hash` has in the file at `path`:
/// made when the file can be written, else -1 when it has none (no row
/// has it). A file whose rows are all of other profiles (made by a
/// novelfs that pages or sizes differently, e.g. an index published by
/// another version) is said in the log, since none of it is used.
pub(super) fn profile_id(
    conn: &Connection,
    hash: i64,
    writable: bool,
    path: &Path,
) -> rusqlite::Result<i64> {
    let known = |conn: &Connection| {
        conn.query_row("SELECT id FROM profiles WHERE hash = ?1", [hash], |r| {
            r.get::<_, i64>(0)
        })
        .optional()
    };
    if let Some(id) = known(conn)? {
        return Ok(id);
    }
    let others: i64 = conn.query_row("SELECT count(*) FROM chapters", [], |r| r.get(0))?;
    if others > 0 {
        log::warn!(
            "index {}: none of its {others} entries is used: they were made by a novelfs \
             that decodes, pages or sizes differently from this one{}",
            path.display(),
            if writable {
                "; chapters are read and recorded anew"
            } else {
                " (read-only); chapters are read as without an index"
            }
        );
    }
    if writable {
        conn.execute("INSERT OR IGNORE INTO profiles(hash) VALUES (?1)", [hash])?;
    }
    Ok(known(conn)?.unwrap_or(-1))
}
