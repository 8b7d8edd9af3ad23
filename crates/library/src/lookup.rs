//! Finding a chapter from the tool's `chapter` argument (SPEC §1.3).
//!
//! The index answers the exact-name and number steps from hash maps, so a
//! lookup in a book of 10,000 chapters costs the same as in a book of 10;
//! only the last-resort substring step walks the list.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::LazyLock;

use hashbrown::{DefaultHashBuilder, HashTable};

use regex::Regex;

use super::number::{self, ChapterNumber};
use super::scan::Chapter;
use super::text::js;

/// The outcome of `find_chapter`.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Index into the chapter list.
    Found(usize),
    /// Several files share the number the argument names (files in list order).
    Ambiguous {
        number: ChapterNumber,
        indices: Vec<usize>,
    },
    NotFound,
}

/// A book's sorted chapter list with the maps that make lookups cheap.
///
/// The name maps hold positions only, hashed by the names the chapters
/// already hold: a book is indexed for every scan of it (each book of a
/// `novel_books`), and copies of its names would be two allocations more
/// per chapter, all on the daemon's one malloc arena.
#[derive(Debug, Clone, Default)]
pub struct BookIndex {
    pub chapters: Vec<Chapter>,
    /// Positions by lower-case file name (the first of equal ones).
    by_lower_file: HashTable<usize>,
    /// Positions by lower-case file name without its extension.
    by_lower_stem: HashTable<usize>,
    hasher: DefaultHashBuilder,
    /// The first position with each chapter number.
    by_number: HashMap<u64, usize>,
    /// Every position (in list order) of each number several chapters share.
    shared_numbers: HashMap<u64, Vec<usize>>,
}

fn lower_file(c: &Chapter) -> &str {
    &c.lower_file
}

fn lower_stem(c: &Chapter) -> &str {
    &c.lower_stem
}

static CHAPTER_EXTENSION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\.(md|markdown|txt)$").expect("static pattern"));

/// Compiles the pattern now (see `number::compile_patterns`).
pub fn compile_patterns() {
    LazyLock::force(&CHAPTER_EXTENSION);
}

/// Puts position `i` in `table` under its chapter's `name_of`, unless an
/// earlier chapter has that name.
fn insert_first(
    table: &mut HashTable<usize>,
    hasher: &DefaultHashBuilder,
    chapters: &[Chapter],
    name_of: fn(&Chapter) -> &str,
    i: usize,
) {
    let name = name_of(&chapters[i]);
    let hash = hasher.hash_one(name);
    let rehash = |&j: &usize| hasher.hash_one(name_of(&chapters[j]));
    if let hashbrown::hash_table::Entry::Vacant(slot) =
        table.entry(hash, |&j| name_of(&chapters[j]) == name, rehash)
    {
        slot.insert(i);
    }
}

fn number_key(n: ChapterNumber) -> u64 {
    // +0.0 and -0.0 are the same number; nothing else aliases.
    (n + 0.0).to_bits()
}

impl BookIndex {
    pub fn new(chapters: Vec<Chapter>) -> Self {
        let mut index = BookIndex {
            chapters,
            ..Default::default()
        };
        let (chapters, hasher) = (&index.chapters, &index.hasher);
        for (i, c) in chapters.iter().enumerate() {
            insert_first(&mut index.by_lower_file, hasher, chapters, lower_file, i);
            insert_first(&mut index.by_lower_stem, hasher, chapters, lower_stem, i);
            if let Some(n) = c.number {
                let key = number_key(n);
                match index.by_number.get(&key) {
                    Some(&first) => index
                        .shared_numbers
                        .entry(key)
                        .or_insert_with(|| vec![first])
                        .push(i),
                    None => {
                        index.by_number.insert(key, i);
                    }
                }
            }
        }
        index
    }

    /// The position of the chapter whose `name_of` is `name`.
    fn position_by(
        &self,
        table: &HashTable<usize>,
        name_of: fn(&Chapter) -> &str,
        name: &str,
    ) -> Option<usize> {
        let hash = self.hasher.hash_one(name);
        table
            .find(hash, |&i| name_of(&self.chapters[i]) == name)
            .copied()
    }

    /// The positions of the chapters numbered `key`: one, or all that
    /// share it.
    fn numbered(&self, key: u64) -> Option<&[usize]> {
        match self.shared_numbers.get(&key) {
            Some(all) => Some(all),
            None => self.by_number.get(&key).map(std::slice::from_ref),
        }
    }

    /// The bytes the index holds on the heap (what a cache holding it must
    /// count): the chapter list, every owned name and the lookup maps,
    /// each allocation rounded the way malloc rounds it.
    pub fn heap_bytes(&self) -> usize {
        fn chunk(bytes: usize) -> usize {
            if bytes == 0 {
                0
            } else {
                (bytes + 8).next_multiple_of(16).max(32)
            }
        }
        fn table<K, V>(map: &HashMap<K, V>) -> usize {
            // hashbrown: a power-of-two bucket count at most 7/8 full, one
            // control byte per bucket.
            let buckets = (map.capacity() * 8 / 7 + 1).next_power_of_two();
            chunk(buckets * (std::mem::size_of::<(K, V)>() + 1))
        }
        let chapters = chunk(self.chapters.capacity() * std::mem::size_of::<Chapter>())
            + self
                .chapters
                .iter()
                .map(|c| {
                    chunk(c.file.capacity())
                        + chunk(c.os_name.capacity())
                        // The titles, counted as if worked out (at most
                        // the name's length each).
                        + 2 * chunk(c.file.len())
                        + chunk(c.lower_file.capacity())
                        + chunk(c.lower_stem.capacity())
                })
                .sum::<usize>();
        let shared = self
            .shared_numbers
            .values()
            .map(|v| chunk(v.capacity() * std::mem::size_of::<usize>()))
            .sum::<usize>();
        let positions = |t: &HashTable<usize>| {
            let buckets = (t.capacity() * 8 / 7 + 1).next_power_of_two();
            chunk(buckets * (std::mem::size_of::<usize>() + 1))
        };
        std::mem::size_of::<BookIndex>()
            + chapters
            + shared
            + positions(&self.by_lower_file)
            + positions(&self.by_lower_stem)
            + table(&self.by_number)
            + table(&self.shared_numbers)
    }

    /// Index of the chapter whose file name is byte for byte `name`.
    pub fn exact(&self, name: &[u8]) -> Option<usize> {
        use std::os::unix::ffi::OsStrExt;
        let lossy = String::from_utf8_lossy(name);
        // Most names (Chinese ones, any lowercase one) are their own lower
        // case: their key is the name itself, found without lowering it.
        // Names in a directory are unique, so a byte-for-byte hit is the one.
        if let Some(i) = self.position_by(&self.by_lower_file, lower_file, &lossy)
            && self.chapters[i].os_name.as_bytes() == name
        {
            return Some(i);
        }
        let i = self.position_by(&self.by_lower_file, lower_file, &js::to_lower(&lossy))?;
        if self.chapters[i].os_name.as_bytes() == name {
            return Some(i);
        }
        self.chapters
            .iter()
            .position(|c| c.os_name.as_bytes() == name)
    }

    /// Groups of files sharing a chapter number, in list order.
    pub fn duplicate_groups(&self) -> Vec<(ChapterNumber, Vec<usize>)> {
        let mut groups: Vec<(ChapterNumber, Vec<usize>)> = self
            .shared_numbers
            .values()
            .map(|v| (self.chapters[v[0]].number.unwrap_or(0.0), v.clone()))
            .collect();
        groups.sort_by_key(|(_, v)| v[0]);
        groups
    }

    /// `findChapter`: file name, then number, then (unless the argument is
    /// all digits) the first title or file name containing it.
    pub fn find(&self, arg: &str) -> Lookup {
        let needle = js::trim(arg);
        let lower = js::to_lower(needle);
        if let Some(i) = self.position_by(&self.by_lower_file, lower_file, &lower) {
            return Lookup::Found(i);
        }
        let stem = CHAPTER_EXTENSION.replace(&lower, "");
        if let Some(i) = self.position_by(&self.by_lower_stem, lower_stem, &stem) {
            return Lookup::Found(i);
        }
        if let Some(n) = number::parse_chapter_number(needle) {
            match self.numbered(number_key(n)) {
                Some([i]) => return Lookup::Found(*i),
                Some(indices) if indices.len() > 1 => {
                    return Lookup::Ambiguous {
                        number: n,
                        indices: indices.to_vec(),
                    };
                }
                _ => {}
            }
        }
        let normalized = number::normalize_width(needle);
        if !normalized.is_empty() && normalized.bytes().all(|b| b.is_ascii_digit()) {
            return Lookup::NotFound;
        }
        self.chapters
            .iter()
            .position(|c| c.lower_title().contains(&lower) || c.lower_file.contains(&lower))
            .map_or(Lookup::NotFound, Lookup::Found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::chapter_order;

    fn book(names: &[&str]) -> BookIndex {
        let mut chapters: Vec<Chapter> = names.iter().map(|n| Chapter::new((*n).into())).collect();
        chapters.sort_by(chapter_order);
        BookIndex::new(chapters)
    }

    fn found(index: &BookIndex, arg: &str) -> Option<String> {
        match index.find(arg) {
            Lookup::Found(i) => Some(index.chapters[i].file.clone()),
            _ => None,
        }
    }

    #[test]
    fn pure_digits_never_fall_through_to_substrings() {
        let b = book(&["第11章 长街.md", "第12章.md"]);
        assert_eq!(found(&b, "1"), None);
        assert_eq!(found(&b, "１"), None);
        assert_eq!(found(&b, "11").as_deref(), Some("第11章 长街.md"));
    }

    #[test]
    fn file_name_beats_number() {
        let b = book(&["第51章 两份.md", "第51章 两份.txt"]);
        assert_eq!(
            found(&b, "第51章 两份.txt").as_deref(),
            Some("第51章 两份.txt")
        );
        assert_eq!(found(&b, "第51章 两份").as_deref(), Some("第51章 两份.md"));
        assert_eq!(
            found(&b, " 第51章 两份.MD ").as_deref(),
            Some("第51章 两份.md")
        );
        assert!(
            matches!(b.find("51"), Lookup::Ambiguous { number, ref indices } if number == 51.0 && indices == &[0, 1])
        );
    }

    #[test]
    fn substring_of_title_or_file_name() {
        let b = book(&["第1章 启程.md", "第2章 归来.md", "Part-70-English.TXT"]);
        assert_eq!(found(&b, "归来").as_deref(), Some("第2章 归来.md"));
        assert_eq!(found(&b, "ENGLISH").as_deref(), Some("Part-70-English.TXT"));
        assert_eq!(found(&b, "第一章").as_deref(), Some("第1章 启程.md"));
        assert_eq!(found(&b, "不存在"), None);
    }

    #[test]
    fn heap_bytes_counts_every_chapter_name() {
        let names: Vec<String> = (1..=100).map(|i| format!("第{i}章 某个标题.md")).collect();
        let small = book(&["第1章 某个标题.md"]);
        let big = book(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let per_chapter = (big.heap_bytes() - small.heap_bytes()) / 99;
        // Six names of 20-odd bytes, the `Chapter`, two map entries with
        // their keys and a number list: a few hundred bytes, never nothing.
        assert!(
            (300..2000).contains(&per_chapter),
            "{per_chapter} bytes per chapter"
        );
        assert!(small.heap_bytes() > std::mem::size_of::<Chapter>());
    }

    #[test]
    fn exact_is_byte_for_byte() {
        let b = book(&["Ab.md", "ab.md"]);
        assert_eq!(
            b.exact("ab.md".as_bytes())
                .map(|i| b.chapters[i].file.as_str()),
            Some("ab.md")
        );
        assert_eq!(
            b.exact("Ab.md".as_bytes())
                .map(|i| b.chapters[i].file.as_str()),
            Some("Ab.md")
        );
        assert_eq!(b.exact("AB.md".as_bytes()), None);
    }
}
