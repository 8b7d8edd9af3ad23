//! The profile: what an outline depends on besides the bytes of its
//! chapter, hashed, and the number that hash has in an index file.

use std::ffi::OsStr;

use rusqlite::{Connection, OptionalExtension};

use super::pages::encode_pages;
use super::store;
use crate::chapter_shape::Outline;
use novelfs_library::{ChapterText, Library};

/// What an outline depends on besides the bytes of its chapter: the path
/// root pages print, the chapter size limit, and how this build decodes,
/// pages and renders — the outlines of a few fixed probe texts, so that a
/// build that pages or sizes differently never trusts another's entries.
pub(crate) fn profile_of(library: &Library) -> i64 {
    let mut hash = store::FNV_OFFSET;
    let mut feed = |bytes: &[u8]| hash = store::fnv1a(bytes, hash);
    feed(&store::SCHEMA_VERSION.to_le_bytes());
    feed(library.display_path("", "").as_bytes());
    feed(&library.max_chapter_bytes.to_le_bytes());
    for (i, bytes) in probe_texts().iter().enumerate() {
        let decoded = novelfs_library::decode::decode_text(bytes);
        feed(format!("{decoded:?}").as_bytes());
        let Ok(decoded) = decoded else { continue };
        let file = format!("第{i}章 探针\"\\.txt");
        let outline = Outline::compute(
            library,
            OsStr::new("探针 book"),
            OsStr::new(&file),
            &ChapterText::new(decoded),
        );
        feed(format!("{:?}", outline.stats).as_bytes());
        feed(&encode_pages(&outline.pages));
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

/// The number the profile whose hash is `hash` has in this file: made
/// when the file can be written, else -1 when it has none (no row has it).
pub(super) fn profile_id(conn: &Connection, hash: i64, writable: bool) -> rusqlite::Result<i64> {
    if writable {
        conn.execute("INSERT OR IGNORE INTO profiles(hash) VALUES (?1)", [hash])?;
    }
    conn.query_row("SELECT id FROM profiles WHERE hash = ?1", [hash], |r| {
        r.get(0)
    })
    .optional()
    .map(|id| id.unwrap_or(-1))
}
