//! The book and library indexes: what the original `novel_chapters` (one
//! book) and `novel_books` (the whole library) return, as text and JSON.
//!
//! Both are built from per-chapter figures (`ChapterStats`: characters and
//! lines, counted as JavaScript counts them) so that a caller holding them
//! already (the mount's outlines) need not decode a chapter again.
//!
//! `dates` gives a chapter's `updated`; `calls` makes the two tool calls
//! over a library on disk.

mod calls;
mod dates;

use std::cmp::Ordering;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use super::error::NovelError;
use super::js;
use super::lookup::BookIndex;
use super::number::{self, ChapterNumber};
use super::page::ChapterText;
use super::scan::{self, Chapter};

pub use dates::{iso_millis, updated_of};

/// The tool names, as the switch file names them.
pub const BOOKS_TOOL: &str = "novel_books";
pub const CHAPTERS_TOOL: &str = "novel_chapters";

/// The file names of the indexes: the library's at the mount's root, a
/// book's in each book directory.
pub const BOOKS_TXT: &str = "novel_books.txt";
pub const BOOKS_JSON: &str = "novel_books.json";
pub const CHAPTERS_TXT: &str = "novel_chapters.txt";
pub const CHAPTERS_JSON: &str = "novel_chapters.json";

/// The directory of `novels/` that `novel_books` leaves out besides the
/// dot directories: the assistant's own notes, not a book.
pub const NOTES_DIR: &str = "创作资料";

/// Of one chapter's text: its length in UTF-16 code units (`text.length`,
/// line breaks included) and `countTextLines`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChapterStats {
    pub chars: u64,
    pub lines: u64,
}

impl ChapterStats {
    pub fn of(text: &ChapterText) -> ChapterStats {
        ChapterStats {
            chars: text.chars(),
            lines: text.total_lines(),
        }
    }
}

/// One chapter as `novel_chapters` lists it; `stats` is the error that
/// makes the whole call fail when the chapter cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ChapterEntry {
    pub file: String,
    pub number: Option<ChapterNumber>,
    pub title: String,
    pub stats: Result<ChapterStats, NovelError>,
    pub updated: String,
}

/// What `novel_chapters` returns for one book (or the error it fails with).
#[derive(Debug, Clone, PartialEq)]
pub struct BookChapters {
    /// The book as the call names it (the directory's name in a mount).
    pub book: String,
    pub entries: Vec<ChapterEntry>,
    /// Chapter numbers that several files share, each with their indices
    /// in `entries`, in list order.
    pub groups: Vec<(ChapterNumber, Vec<usize>)>,
}

/// The title `novel_chapters` shows: full-width digits mapped before the
/// number marker is taken out (`第５回 全角.md` is `全角`), as for the number.
/// (Lookups keep `Chapter::title`, the one the reference pages follow.)
fn listed_title(c: &Chapter) -> String {
    let stem = number::strip_last_extension(&c.file);
    number::clean_chapter_title(&number::normalize_width(stem))
}

/// `String(n).padStart(2, "0")`.
fn padded_number(n: ChapterNumber) -> String {
    let s = js::format_number(n);
    if s.len() < 2 { format!("0{s}") } else { s }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// What `novel_books` counts of a book whose chapters read as `stats`:
/// every chapter, and the characters of those that could be read.
pub fn totals_of<'a>(
    stats: impl Iterator<Item = &'a Result<ChapterStats, NovelError>>,
) -> (u64, u64) {
    stats.fold((0, 0), |(chapters, chars), s| {
        (chapters + 1, chars + s.as_ref().map_or(0, |s| s.chars))
    })
}

impl BookChapters {
    /// The listing of `index`, with each chapter's figures and `updated`
    /// from `stats_of(position)`.
    pub fn new(
        book: String,
        index: &BookIndex,
        mut stats_of: impl FnMut(usize, &Chapter) -> (Result<ChapterStats, NovelError>, String),
    ) -> BookChapters {
        let entries = index
            .chapters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (stats, updated) = stats_of(i, c);
                ChapterEntry {
                    file: c.file.clone(),
                    number: c.number,
                    title: listed_title(c),
                    stats,
                    updated,
                }
            })
            .collect();
        BookChapters {
            book,
            entries,
            groups: index.duplicate_groups(),
        }
    }

    /// The error the whole call fails with: the first chapter's that
    /// cannot be read (the original reads them in list order).
    pub fn error(&self) -> Option<&NovelError> {
        self.entries.iter().find_map(|e| e.stats.as_ref().err())
    }

    /// What `novel_books` counts of the book: every chapter, and the
    /// characters of those that could be read.
    pub fn totals(&self) -> (u64, u64) {
        totals_of(self.entries.iter().map(|e| &e.stats))
    }

    /// `formatChapters` plus the final newline a file holds; the error
    /// line when the call fails.
    pub fn text(&self) -> String {
        if let Some(e) = self.error() {
            return e.error_line();
        }
        let mut out = format!(
            "<path>novels/{}</path>\n<type>novel-chapters</type>\n<content>\n\n",
            self.book
        );
        if self.entries.is_empty() {
            out.push_str("（该作品下没有章节文件）\n");
        }
        for e in &self.entries {
            let stats = e.stats.as_ref().copied().unwrap_or_default();
            let number = e.number.map_or_else(|| "?".to_string(), padded_number);
            out.push_str(&format!(
                "- 第{number}章 {} — {} 字 / {} 行 ({}, 更新于 {})\n",
                e.title,
                stats.chars,
                stats.lines,
                e.file,
                e.updated.get(..10).unwrap_or(&e.updated)
            ));
        }
        if !self.groups.is_empty() {
            out.push_str(&format!(
                "\n⚠️ 同章号多文件 {} 组（按章号读取会因歧义被拒绝；请改名到空闲章号，或用 novel_import 重新导入自动避让）：\n",
                self.groups.len()
            ));
            for (number, members) in &self.groups {
                let files: Vec<&str> = members
                    .iter()
                    .map(|&i| self.entries[i].file.as_str())
                    .collect();
                out.push_str(&format!(
                    "  第{}章: {}\n",
                    padded_number(*number),
                    files.join(" / ")
                ));
            }
        }
        out.push_str("\n</content>\n");
        out
    }

    /// The JSON value, written as `JSON.stringify(value, null, 2)` plus a
    /// final newline (as pages are); the error when the call fails.
    pub fn json(&self) -> Result<String, NovelError> {
        if let Some(e) = self.error() {
            return Err(e.clone());
        }
        let mut out = format!(
            "{{\n  \"book\": {},\n  \"chapters\": ",
            json_string(&self.book)
        );
        if self.entries.is_empty() {
            out.push_str("[]");
        } else {
            out.push_str("[\n");
            for (i, e) in self.entries.iter().enumerate() {
                let stats = e.stats.as_ref().copied().unwrap_or_default();
                out.push_str("    {\n");
                out.push_str(&format!("      \"file\": {},\n", json_string(&e.file)));
                if let Some(n) = e.number {
                    out.push_str(&format!("      \"number\": {},\n", js::format_number(n)));
                }
                out.push_str(&format!(
                    "      \"title\": {},\n      \"chars\": {},\n      \"lines\": {},\n      \"updated\": {}\n    }}",
                    json_string(&e.title),
                    stats.chars,
                    stats.lines,
                    json_string(&e.updated)
                ));
                out.push_str(if i + 1 < self.entries.len() {
                    ",\n"
                } else {
                    "\n"
                });
            }
            out.push_str("  ]");
        }
        out.push_str("\n}\n");
        Ok(out)
    }
}

/// One book as `novel_books` counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookTotals {
    pub name: String,
    pub chapters: u64,
    pub chars: u64,
}

/// What `novel_books` returns: the books by characters (descending), then
/// by name under ICU root collation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryBooks {
    /// The library root as pages print it (`--path-root` applies).
    pub root: String,
    pub books: Vec<BookTotals>,
}

impl LibraryBooks {
    pub fn new(root: String, mut books: Vec<BookTotals>) -> LibraryBooks {
        books.sort_by(book_order);
        LibraryBooks { root, books }
    }

    /// `formatBooks` plus the final newline a file holds.
    pub fn text(&self) -> String {
        let mut out = format!(
            "<path>{}/novels</path>\n<type>novel-library</type>\n<content>\n\n",
            self.root
        );
        if self.books.is_empty() {
            out.push_str("（暂无作品。请在 novels/<书名>/ 下存放章节文件，如 第01章.md）\n");
        }
        for b in &self.books {
            out.push_str(&format!(
                "- {}: {} 章, {} 字\n",
                b.name, b.chapters, b.chars
            ));
        }
        out.push_str("\n</content>\n");
        out
    }

    /// The JSON value, written as the pages' JSON is.
    pub fn json(&self) -> String {
        let mut out = format!(
            "{{\n  \"root\": {},\n  \"books\": ",
            json_string(&self.root)
        );
        if self.books.is_empty() {
            out.push_str("[]");
        } else {
            out.push_str("[\n");
            for (i, b) in self.books.iter().enumerate() {
                out.push_str(&format!(
                    "    {{\n      \"name\": {},\n      \"chapters\": {},\n      \"chars\": {}\n    }}",
                    json_string(&b.name),
                    b.chapters,
                    b.chars
                ));
                out.push_str(if i + 1 < self.books.len() {
                    ",\n"
                } else {
                    "\n"
                });
            }
            out.push_str("  ]");
        }
        out.push_str("\n}\n");
        out
    }
}

/// Whether `novel_books` counts the directory `name` of `novels/` as a
/// book: not a dot directory, not `创作资料`.
pub fn counted_as_book(name: &OsStr) -> bool {
    !name.as_bytes().starts_with(b".") && name.as_bytes() != NOTES_DIR.as_bytes()
}

/// Whether `name` in the mount's root is one of the library's index files.
pub fn is_books_file(name: &OsStr) -> bool {
    name == BOOKS_TXT || name == BOOKS_JSON
}

/// Whether `name` in a book directory is one of the book's index files.
pub fn is_chapters_file(name: &OsStr) -> bool {
    name == CHAPTERS_TXT || name == CHAPTERS_JSON
}

/// `novel_books`' order: characters descending, then the name under ICU
/// root collation (bytes only to make equal collation keys stable).
pub fn book_order(a: &BookTotals, b: &BookTotals) -> Ordering {
    b.chars
        .cmp(&a.chars)
        .then_with(|| scan::locale_compare(&a.name, &b.name))
        .then_with(|| a.name.cmp(&b.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_chars_count_like_javascript() {
        for s in ["", "abc", "月光", "🌙x", "a\r\nb", "\u{FFFD}"] {
            let stats = ChapterStats::of(&ChapterText::new(s.to_string()));
            assert_eq!(stats.chars, js::utf16_len(s) as u64, "{s}");
        }
    }

    fn chapter(name: &str) -> Chapter {
        Chapter::new(name.into())
    }

    fn listing(names: &[&str], stats: &[Result<ChapterStats, NovelError>]) -> BookChapters {
        let mut chapters: Vec<Chapter> = names.iter().map(|n| chapter(n)).collect();
        chapters.sort_by(scan::chapter_order);
        let index = BookIndex::new(chapters);
        BookChapters::new("书".into(), &index, |i, _| {
            (stats[i].clone(), "2026-01-02T03:04:05.000Z".into())
        })
    }

    #[test]
    fn chapters_text_numbers_titles_and_groups() {
        let ok = |chars, lines| Ok(ChapterStats { chars, lines });
        let l = listing(
            &["第1章.md", "第100章 远.md", "序.md", "第1章 重.md"],
            &[ok(1, 1), ok(2, 1), ok(30, 2), ok(0, 0)],
        );
        assert_eq!(
            l.text(),
            "<path>novels/书</path>\n<type>novel-chapters</type>\n<content>\n\n\
             - 第01章 重 — 1 字 / 1 行 (第1章 重.md, 更新于 2026-01-02)\n\
             - 第01章  — 2 字 / 1 行 (第1章.md, 更新于 2026-01-02)\n\
             - 第100章 远 — 30 字 / 2 行 (第100章 远.md, 更新于 2026-01-02)\n\
             - 第?章 序 — 0 字 / 0 行 (序.md, 更新于 2026-01-02)\n\n\
             ⚠️ 同章号多文件 1 组（按章号读取会因歧义被拒绝；请改名到空闲章号，或用 novel_import 重新导入自动避让）：\n\
             \x20 第01章: 第1章 重.md / 第1章.md\n\n</content>\n"
        );
        assert_eq!(l.totals(), (4, 33));
        let json: serde_json::Value = serde_json::from_str(&l.json().unwrap()).unwrap();
        assert_eq!(json["chapters"][3].get("number"), None, "no number, no key");
        assert_eq!(json["chapters"][2]["number"], 100);
        assert_eq!(
            l.json().unwrap(),
            serde_json::to_string_pretty(&json).unwrap() + "\n",
            "written as JSON.stringify(v, null, 2) writes it"
        );
    }

    #[test]
    fn one_unreadable_chapter_fails_the_listing_but_counts_in_the_totals() {
        let bad = NovelError::Encoding {
            path: "/r/novels/书/第2章.txt".into(),
            utf16_suspected: false,
        };
        let l = listing(
            &["第1章.md", "第2章.txt"],
            &[Ok(ChapterStats { chars: 5, lines: 1 }), Err(bad.clone())],
        );
        assert_eq!(l.text(), bad.error_line());
        assert_eq!(l.json(), Err(bad));
        assert_eq!(l.totals(), (2, 5));
    }

    #[test]
    fn empty_book_and_empty_library() {
        let l = listing(&[], &[]);
        assert_eq!(
            l.text(),
            "<path>novels/书</path>\n<type>novel-chapters</type>\n<content>\n\n（该作品下没有章节文件）\n\n</content>\n"
        );
        assert_eq!(
            l.json().unwrap(),
            "{\n  \"book\": \"书\",\n  \"chapters\": []\n}\n"
        );
        let b = LibraryBooks::new("/r".into(), vec![]);
        assert!(b.text().contains("（暂无作品。"));
        assert_eq!(b.json(), "{\n  \"root\": \"/r\",\n  \"books\": []\n}\n");
    }

    #[test]
    fn books_by_characters_then_collation() {
        let t = |name: &str, chars| BookTotals {
            name: name.into(),
            chapters: 1,
            chars,
        };
        let b = LibraryBooks::new(
            "/r".into(),
            vec![
                t("空", 0),
                t("B书", 5),
                t("a书", 5),
                t("长篇", 900),
                t("Z", 0),
            ],
        );
        let names: Vec<&str> = b.books.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["长篇", "a书", "B书", "Z", "空"]);
        assert!(b.text().starts_with("<path>/r/novels</path>\n<type>novel-library</type>\n<content>\n\n- 长篇: 1 章, 900 字\n"));
    }

    #[test]
    fn listed_titles_map_full_width_digits_first() {
        assert_eq!(
            listed_title(&chapter("第５回 全角重号.markdown")),
            "全角重号"
        );
        assert_eq!(
            listed_title(&chapter("chapter-01-intro.md")),
            "chapter 01 intro"
        );
        assert_eq!(listed_title(&chapter("第1章.md")), "");
    }

    #[test]
    fn dot_directories_and_notes_are_not_books() {
        assert!(!counted_as_book(OsStr::new(".git")));
        assert!(!counted_as_book(OsStr::new("创作资料")));
        assert!(counted_as_book(OsStr::new("创作资料2")));
    }
}
