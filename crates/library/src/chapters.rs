//! A book's chapters as a table: number, title, file, size and decoded
//! length of each, and the numbers several files share (`novelfs chapters`).

use std::ffi::{OsStr, OsString};

use serde::Serialize;

use super::{Library, NovelError, js, sanitize_segment};

#[derive(Debug, Serialize)]
pub struct ChapterRow {
    #[serde(serialize_with = "integral_number_or_null")]
    pub number: Option<f64>,
    pub title: String,
    pub file: String,
    pub bytes: u64,
    pub chars: Option<usize>,
    pub lines: Option<u64>,
    pub error: Option<String>,
}

/// A chapter number that several files carry.
#[derive(Debug, Serialize)]
pub struct SharedNumber {
    #[serde(serialize_with = "integral_number")]
    pub number: f64,
    pub files: Vec<String>,
}

/// A chapter number in JSON as the tool and the mount write it: an integral
/// number without a fraction (`1`, not serde's `1.0`).
fn integral_number<S: serde::Serializer>(n: &f64, s: S) -> Result<S::Ok, S::Error> {
    // Below 2^64 an integral f64 converts to u64 exactly.
    if n.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(n) {
        s.serialize_u64(*n as u64)
    } else {
        s.serialize_f64(*n)
    }
}

fn integral_number_or_null<S: serde::Serializer>(n: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Some(n) => integral_number(n, s),
        None => s.serialize_none(),
    }
}

/// The rows of a book's chapters in §1.1 order, and its shared numbers.
#[derive(Debug)]
pub struct ChapterTable {
    pub book: String,
    pub rows: Vec<ChapterRow>,
    pub shared: Vec<SharedNumber>,
}

/// Reads every chapter of `book` once to fill in its length.
pub fn chapter_table(lib: &Library, book: &str) -> Result<ChapterTable, NovelError> {
    if js::trim(book).is_empty() {
        return Err(NovelError::EmptyBook);
    }
    let book = sanitize_segment(book)?;
    let index = lib.scan_book(&book)?;
    let book_os = OsString::from(&book);
    let rows: Vec<ChapterRow> = index
        .chapters
        .iter()
        .map(|c| {
            let bytes = lib
                .chapter_metadata(&book_os, &c.os_name)
                .map_or(0, |m| m.len());
            let (chars, lines, error) = match lib.load_chapter(OsStr::new(&book), c) {
                Ok(t) => (Some(t.chars() as usize), Some(t.total_lines()), None),
                Err(e) => (None, None, Some(e.to_string())),
            };
            ChapterRow {
                number: c.number,
                title: c.title().to_string(),
                file: c.file.clone(),
                bytes,
                chars,
                lines,
                error,
            }
        })
        .collect();
    let shared: Vec<SharedNumber> = index
        .duplicate_groups()
        .into_iter()
        .map(|(number, idx)| SharedNumber {
            number,
            files: idx
                .iter()
                .map(|&i| index.chapters[i].file.clone())
                .collect(),
        })
        .collect();
    Ok(ChapterTable { book, rows, shared })
}
