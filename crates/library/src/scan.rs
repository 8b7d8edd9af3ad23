//! Scanning a book directory into its sorted chapter list (SPEC §1.1).

use crate::backing::EntryKind;
use std::cmp::Ordering;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::sync::{LazyLock, OnceLock};

use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed};

use super::number::{self, ChapterNumber};
use super::text::js;

/// One chapter file of a book.
#[derive(Debug, Clone, PartialEq)]
pub struct Chapter {
    /// The file name as the tool sees it (invalid UTF-8 replaced by U+FFFD).
    pub file: String,
    /// The file name as it is on disk, byte for byte.
    pub os_name: OsString,
    pub number: Option<ChapterNumber>,
    pub(crate) lower_file: String,
    pub(crate) lower_stem: String,
    /// The title and its lower case, worked out when first asked for:
    /// listing a book, counting it for `novel_books` and finding a chapter
    /// by its name or number need neither, and the title costs four
    /// pattern passes over the name of every chapter scanned.
    titles: OnceLock<(String, String)>,
}

impl Chapter {
    pub fn new(os_name: OsString) -> Self {
        let file = String::from_utf8_lossy(os_name.as_bytes()).into_owned();
        let stem = number::strip_last_extension(&file);
        Chapter {
            number: number::parse_chapter_number(&file),
            lower_file: js::to_lower(&file),
            lower_stem: js::to_lower(stem),
            titles: OnceLock::new(),
            file,
            os_name,
        }
    }

    /// The title: the name without its extension, chapter marker and
    /// separators (SPEC §1.1).
    pub fn title(&self) -> &str {
        &self.titles().0
    }

    /// The title in lower case.
    pub(crate) fn lower_title(&self) -> &str {
        &self.titles().1
    }

    fn titles(&self) -> &(String, String) {
        self.titles.get_or_init(|| {
            let title = number::clean_chapter_title(number::strip_last_extension(&self.file));
            let lower = js::to_lower(&title);
            (title, lower)
        })
    }
}

/// Whether a file name carries a chapter extension (`.md`, `.markdown`, `.txt`, any case).
pub fn is_chapter_file_name(name: &[u8]) -> bool {
    let Some(dot) = name.iter().rposition(|&b| b == b'.') else {
        return false;
    };
    let ext = name[dot + 1..].to_ascii_lowercase();
    matches!(ext.as_slice(), b"md" | b"markdown" | b"txt")
}

/// ICU root collation, as JavaScript's `localeCompare` uses: `a序` before
/// `B序`, Latin before Han. Byte order would put every capital first.
static COLLATOR: LazyLock<CollatorBorrowed<'static>> = LazyLock::new(|| {
    Collator::try_new(Default::default(), CollatorOptions::default())
        .expect("compiled-in root collation data")
});

/// Loads the collation tables now (see `number::compile_patterns`).
pub fn load_collator() {
    LazyLock::force(&COLLATOR);
}

pub fn locale_compare(a: &str, b: &str) -> Ordering {
    COLLATOR.compare(a, b)
}

/// The tool's order: by number ascending, unnumbered last, ties by locale
/// collation of the file name (bytes only to make equal collation keys stable).
pub fn chapter_order(a: &Chapter, b: &Chapter) -> Ordering {
    let by_number = match (a.number, b.number) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_number
        .then_with(|| locale_compare(&a.file, &b.file))
        .then_with(|| a.os_name.cmp(&b.os_name))
}

/// The sorted chapters of a book directory listed as `names`: regular
/// files only (a symlink is never a chapter, so nothing outside the
/// library is read), with a chapter extension.
pub fn chapters_of(names: Vec<(std::ffi::OsString, EntryKind)>) -> Vec<Chapter> {
    let mut chapters: Vec<Chapter> = names
        .into_iter()
        .filter(|(name, kind)| *kind == EntryKind::File && is_chapter_file_name(name.as_bytes()))
        .map(|(name, _)| Chapter::new(name))
        .collect();
    chapters.sort_by(chapter_order);
    chapters
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::path::Path;

    /// The sorted chapters of the local book directory `book_dir`.
    fn scan_chapters(book_dir: &Path) -> io::Result<Vec<Chapter>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(book_dir)? {
            let entry = entry?;
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                names.push((entry.file_name(), EntryKind::File));
            }
        }
        Ok(chapters_of(names))
    }

    #[test]
    fn collation_is_not_byte_order() {
        assert_eq!(locale_compare("a序.md", "B序.md"), Ordering::Less);
        assert_eq!(locale_compare("x番外.md", "Y番外.md"), Ordering::Less);
        assert_eq!(
            locale_compare("Y番外.md", "尾声.markdown"),
            Ordering::Less,
            "Latin before Han"
        );
    }

    #[test]
    fn extension_filter() {
        for ok in ["a.md", "a.MD", "a.Markdown", "b.txt", "c.TXT"] {
            assert!(is_chapter_file_name(ok.as_bytes()), "{ok}");
        }
        for no in ["readme.json", "md", "a.md.bak", "a.mdx", "txt"] {
            assert!(!is_chapter_file_name(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn scan_sorts_and_filters() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "第10章 长街.md",
            "第2章.md",
            "楔子.md",
            "x番外.md",
            "Y番外.md",
            "notes.json",
            "第1章.txt",
        ] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        std::fs::create_dir(dir.path().join("旧稿.md")).unwrap();
        std::os::unix::fs::symlink("第2章.md", dir.path().join("第3章 链接.md")).unwrap();
        let files: Vec<String> = scan_chapters(dir.path())
            .unwrap()
            .into_iter()
            .map(|c| c.file)
            .collect();
        assert_eq!(
            files,
            [
                "第1章.txt",
                "第2章.md",
                "第10章 长街.md",
                "x番外.md",
                "Y番外.md",
                "楔子.md"
            ]
        );
    }
}
