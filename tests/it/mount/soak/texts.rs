//! A chapter's versions: its names, its text in each version, the text's
//! bytes in each encoding, laid out so no character straddles a page.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Enc {
    Utf8,
    Gbk,
    Utf16Le,
}

/// One version of a chapter: everything but `version` decides its layout, so
/// two versions differing only in `version` have the same size.
#[derive(Debug, Clone)]
pub(super) struct Version {
    pub(super) seed: u64,
    pub(super) lines: u64,
    pub(super) crlf: bool,
    pub(super) version: u64,
    pub(super) enc: Enc,
}

pub(super) fn name_a(i: u64) -> String {
    format!("第{i:02}章 标题{i}号.md")
}

pub(super) fn name_b(i: u64) -> String {
    format!("{i:02}-标题{i}号-修订.txt")
}

pub(super) fn shadow_name(i: u64) -> String {
    format!("第{i}回 另稿.md")
}

/// The text of a version: every line starts with `[c=II g=GGGGGG]#n ` so a
/// reader can tell which chapter, version and line it shows.
fn text_of(i: u64, v: &Version) -> String {
    // Lines are slices of a fixed random pool: cheap enough for a debug
    // build, so the mutator is not starved by the readers.
    static POOLS: std::sync::LazyLock<[Vec<char>; 2]> = std::sync::LazyLock::new(|| {
        let hanzi: Vec<char> = HANZI.chars().collect();
        let mut rng = Rng::new(7);
        let with_emoji: Vec<char> = (0..8192)
            .map(|_| {
                if rng.chance(15) {
                    '🌙'
                } else {
                    hanzi[rng.below(hanzi.len() as u64) as usize]
                }
            })
            .collect();
        let plain = with_emoji
            .iter()
            .map(|&c| if c == '🌙' { '月' } else { c })
            .collect();
        [with_emoji, plain]
    });
    let pool = &POOLS[usize::from(v.enc == Enc::Gbk)];
    let mut rng = Rng::new(v.seed);
    let mut out = String::new();
    for n in 1..=v.lines {
        if n > 1 {
            out.push_str(if v.crlf { "\r\n" } else { "\n" });
        }
        out.push_str(&format!("[c={i:02} g={:06}]#{n} ", v.version % 1_000_000));
        let len = if rng.chance(8) {
            rng.range(3050, 3600)
        } else {
            rng.range(8, 60)
        } as usize;
        let start = rng.below((pool.len() - len) as u64) as usize;
        out.extend(&pool[start..start + len]);
    }
    out
}

/// UTF-8 with no character straddling a 4096-byte boundary (see the module doc).
fn aligned_utf8(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + text.len() / 1000);
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let b = c.encode_utf8(&mut buf).as_bytes();
        if b.len() > 1 && out.len() / 4096 != (out.len() + b.len() - 1) / 4096 {
            while out.len() % 4096 != 0 {
                out.push(b' ');
            }
        }
        out.extend_from_slice(b);
    }
    out
}

pub(super) fn encode(i: u64, v: &Version) -> Vec<u8> {
    let text = text_of(i, v);
    match v.enc {
        Enc::Utf8 => aligned_utf8(&text),
        Enc::Gbk => {
            // encoding_rs's GBK encoder is slow in a debug build: encode
            // each distinct character once.
            static GBK: std::sync::LazyLock<std::collections::HashMap<char, Vec<u8>>> =
                std::sync::LazyLock::new(|| {
                    HANZI
                        .chars()
                        .map(|c| {
                            let s = c.to_string();
                            let (b, _, unmappable) = encoding_rs::GBK.encode(&s);
                            assert!(!unmappable);
                            (c, b.into_owned())
                        })
                        .collect()
                });
            let mut out = Vec::with_capacity(text.len());
            for c in text.chars() {
                match GBK.get(&c) {
                    Some(b) => out.extend_from_slice(b),
                    None if c.is_ascii() => out.push(c as u8),
                    None => panic!("{c:?} is not in the GBK table"),
                }
            }
            out
        }
        Enc::Utf16Le => {
            let mut out = vec![0xFF, 0xFE];
            out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            out
        }
    }
}
