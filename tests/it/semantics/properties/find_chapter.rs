//! Finding a chapter by its argument (SPEC §1.3), against a model of
//! `find_chapter`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use novelfs::library::lookup::{BookIndex, Lookup};
use novelfs::library::number::parse_chapter_number;
use novelfs::library::scan::{Chapter, chapter_order};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};

use super::chapter_numbers::{cjk_numeral, name_like, widen};
use super::*;

// ---------------------------------------------------------------------------
// Finding a chapter (SPEC §1.3).

fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn strip_chapter_ext<'a>(s: &'a str, exts: &[&str]) -> &'a str {
    exts.iter().find_map(|e| s.strip_suffix(e)).unwrap_or(s)
}

/// `find_chapter` written from SPEC §1.3 with linear scans.
fn model_find(chapters: &[Chapter], arg: &str) -> Lookup {
    let needle = arg.trim_matches(is_js_space);
    let lower = needle.to_lowercase();
    if let Some(i) = chapters.iter().position(|c| c.file.to_lowercase() == lower) {
        return Lookup::Found(i);
    }
    let lower_bare = strip_chapter_ext(&lower, &[".md", ".markdown", ".txt"]);
    let without_last_ext = |f: &str| -> String {
        match f.rfind('.') {
            Some(dot) if dot + 1 < f.len() => f[..dot].to_string(),
            _ => f.to_string(),
        }
    };
    if let Some(i) = chapters
        .iter()
        .position(|c| without_last_ext(&c.file).to_lowercase() == lower_bare)
    {
        return Lookup::Found(i);
    }
    if let Some(n) = parse_chapter_number(needle) {
        let hits: Vec<usize> = (0..chapters.len())
            .filter(|&i| chapters[i].number == Some(n))
            .collect();
        match hits.len() {
            0 => {}
            1 => return Lookup::Found(hits[0]),
            _ => {
                return Lookup::Ambiguous {
                    number: n,
                    indices: hits,
                };
            }
        }
    }
    let narrow: String = needle
        .chars()
        .map(|c| {
            if ('\u{FF10}'..='\u{FF19}').contains(&c) {
                char::from_u32(c as u32 - 0xFEE0).unwrap()
            } else {
                c
            }
        })
        .collect();
    if !narrow.is_empty() && narrow.bytes().all(|b| b.is_ascii_digit()) {
        return Lookup::NotFound;
    }
    chapters
        .iter()
        .position(|c| {
            c.title().to_lowercase().contains(&lower) || c.file.to_lowercase().contains(&lower)
        })
        .map_or(Lookup::NotFound, Lookup::Found)
}

fn file_name() -> impl Strategy<Value = Vec<u8>> {
    let ext = select(vec![".md", ".MD", ".txt", ".markdown", ".Markdown", ".TXT"]);
    let title = vec(
        select(vec!['a', 'B', 'c', '字', '甲', ' ', '-', '.', '_', '1']),
        0..5,
    )
    .prop_map(|v| v.into_iter().collect::<String>());
    prop_oneof![
        4 => (any::<bool>(), 0u32..25, select(vec!["章", "回", "-", " ", "."]), title.clone(), ext.clone())
            .prop_map(|(di, n, m, t, e)| format!("{}{n:02}{m}{t}{e}", if di { "第" } else { "" }).into_bytes()),
        1 => (1u32..25, title.clone(), ext.clone()).prop_map(|(n, t, e)| format!("第{}章{t}{e}", cjk_numeral(n)).into_bytes()),
        1 => (any::<String>(), ext.clone()).prop_map(|(s, e)| (s + e).into_bytes()),
        1 => (vec(any::<u8>(), 0..12), ext).prop_map(|(mut b, e)| { b.extend_from_slice(e.as_bytes()); b }),
        1 => name_like().prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// Never panics, and agrees with the spec's steps, for arguments that are
    /// arbitrary, numbers, or taken from the file names.
    #[test]
    fn find_follows_the_spec(
        names in vec(file_name(), 0..25),
        free in vec(prop_oneof![any::<String>(), name_like(), (0u32..30).prop_map(|n| n.to_string()), (0u32..30).prop_map(|n| widen(&n.to_string()))], 0..8),
        picks in vec((any::<Index>(), 0u8..6), 0..8),
    ) {
        let mut chapters: Vec<Chapter> = names.into_iter().map(|n| Chapter::new(OsString::from_vec(n))).collect();
        chapters.sort_by(chapter_order);
        let index = BookIndex::new(chapters.clone());
        let mut args = free;
        if !chapters.is_empty() {
            for (ix, how) in picks {
                let c = &chapters[ix.index(chapters.len())];
                let file = c.file.clone();
                args.push(match how {
                    0 => file,
                    1 => file.to_uppercase(),
                    2 => format!(" \u{3000}{file}\t"),
                    3 => without_ext(&file),
                    4 => c.title().to_string(),
                    _ => file.chars().skip(1).take(3).collect(),
                });
            }
        }
        for arg in &args {
            let got = index.find(arg);
            prop_assert_eq!(&got, &model_find(&chapters, arg), "find({:?})", arg);
            match &got {
                Lookup::Found(i) => prop_assert!(*i < chapters.len()),
                Lookup::Ambiguous { number, indices } => {
                    prop_assert!(indices.len() >= 2);
                    prop_assert!(indices.iter().all(|&i| chapters[i].number == Some(*number)));
                }
                Lookup::NotFound => {}
            }
        }
        // A file name (without surrounding whitespace) always finds the
        // first chapter with that lower-cased name.
        for c in &chapters {
            if c.file.trim_matches(is_js_space) == c.file {
                let first = chapters.iter().position(|d| d.file.to_lowercase() == c.file.to_lowercase()).unwrap();
                prop_assert_eq!(index.find(&c.file), Lookup::Found(first), "find({:?})", c.file);
            }
        }
    }
}

fn without_ext(f: &str) -> String {
    match f.rfind('.') {
        Some(dot) => f[..dot].to_string(),
        None => f.to_string(),
    }
}
