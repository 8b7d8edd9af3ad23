//! The page codec: an outline's pages as stored, each number a LEB128
//! varint.

use crate::chapter_shape::OutlinePage;

/// The pages as stored: per page the offset's step from the last page's,
/// the text size and the JSON size, each as a LEB128 number (a typical
/// page takes 5 bytes, not 24).
pub(super) fn encode_pages(pages: &[OutlinePage]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pages.len() * 6);
    let mut last = 0;
    for p in pages {
        for n in [p.offset - last, p.text_bytes, p.json_bytes] {
            put_varint(&mut out, n);
        }
        last = p.offset;
    }
    out
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

pub(super) fn decode_pages(mut bytes: &[u8]) -> Option<Vec<OutlinePage>> {
    let mut next = || -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = bytes.split_first()?;
            bytes = rest;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    };
    let mut pages = Vec::new();
    let mut offset = 0u64;
    while let Some(step) = next() {
        offset = offset.checked_add(step)?;
        pages.push(OutlinePage {
            offset,
            text_bytes: next()?,
            json_bytes: next()?,
        });
    }
    // A chain starts at line 1 and climbs.
    let climbs = pages.first().is_some_and(|p| p.offset == 1)
        && pages.windows(2).all(|w| w[0].offset < w[1].offset);
    climbs.then_some(pages)
}
