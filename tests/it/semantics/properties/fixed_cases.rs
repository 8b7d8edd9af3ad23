//! A few fixed cases of the models and the generators, so a broken
//! generator cannot make the properties vacuous.

use novelfs::library::page::ChapterText;
use proptest::prelude::*;
use proptest::test_runner::RngAlgorithm;

use super::chapter_numbers::*;
use super::decoding::*;
use super::paging::*;
use super::*;

// ---------------------------------------------------------------------------
// A few fixed cases, so a broken generator cannot make the properties vacuous.

#[test]
fn fixed_cases_of_the_models() {
    assert_eq!(split_lines("a\r\nb\rc\r\r\n"), ["a", "b\rc\r", ""]);
    assert_eq!(model_total_lines(""), 0);
    let line = format!("{}🌙x", "a".repeat(2999));
    assert_eq!(
        shown(&line),
        format!("{}\u{FFFD}{CUT_SUFFIX}", "a".repeat(2999))
    );
    assert_eq!(u16len(&shown(&line)), 3009);
    assert_eq!(cjk_numeral(1001), "一千零一");
    assert_eq!(cjk_numeral(10), "十");
    assert_eq!(cjk_numeral(12), "十二");
    assert_eq!(cjk_numeral(2030), "二千零三十");
    assert_eq!(
        js_quote("a\"\\\u{1}\n\t\u{b}"),
        r#""a\"\\\u0001\n\t\u000b""#
    );
    assert_eq!(
        whatwg_utf16(&[0x41, 0x00, 0x3D, 0xD8, 0x07], true),
        "A\u{FFFD}"
    );
    assert_eq!(whatwg_utf16(&[0x41, 0x00, 0x07], true), "A\u{FFFD}");
    assert_eq!(
        nul_heavy(b"a\0bcdefghijklmnopqrs"),
        None,
        "exactly 5% is not more than 5%"
    );
    assert_eq!(nul_heavy(b"a\0bcdefghijklmnopqr"), Some(true));
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut counts = std::collections::BTreeSet::new();
    for _ in 0..64 {
        use proptest::strategy::ValueTree;
        let s = nul_boundary_string()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let nuls = s.bytes().filter(|&b| b == 0).count();
        assert_eq!(s.len() % 20, 0);
        counts.insert(nuls as i64 - (s.len() / 20) as i64);
    }
    assert_eq!(
        counts.into_iter().collect::<Vec<_>>(),
        [-1, 0, 1],
        "NUL counts around 5%"
    );
}

/// The generators really produce what the properties are meant to cover: a
/// fixed-seed sample must contain pages ending on the budget, on the limit and
/// at the end, cuts through a surrogate pair, lines of exactly 3000 and 3001
/// units, lone CRs (also last), CRLFs, empty texts, trailing newlines and long chapters.
#[test]
fn generators_reach_the_edge_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        config(128),
        TestRng::deterministic_rng(RngAlgorithm::XorShift),
    );
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    let mut see = |what, yes: bool| *seen.entry(what).or_default() += usize::from(yes);
    for _ in 0..128 {
        let text = chapter_text().new_tree(&mut runner).unwrap().current();
        let all = split_lines(&text);
        see("empty text", text.is_empty());
        see("trailing newline", text.ends_with('\n'));
        see(
            "no trailing newline",
            !text.is_empty() && !text.ends_with('\n'),
        );
        see("CRLF", text.contains("\r\n"));
        see(
            "lone CR kept in a line",
            all.iter().any(|l| l.contains('\r')),
        );
        see("lone CR at the end", text.ends_with('\r'));
        see("over 1200 lines", all.len() > 1200);
        see("line of 3000 units", all.iter().any(|l| u16len(l) == CUT));
        see(
            "line of 3001 units",
            all.iter().any(|l| u16len(l) == CUT + 1),
        );
        see(
            "cut through a pair",
            all.iter()
                .any(|l| shown(l).ends_with(&format!("\u{FFFD}{CUT_SUFFIX}"))),
        );
        let ct = ChapterText::new(text);
        let mut offset = 1;
        loop {
            let m = model_page(&all, ct.total_lines(), offset, READ_LIMIT);
            let last = m.lines.last().unwrap().0;
            if !m.truncated {
                see("page ends at the end", true);
                break;
            }
            see(
                "page ends on the limit",
                m.lines.len() == READ_LIMIT as usize,
            );
            see(
                "page ends on the budget",
                m.lines.len() < READ_LIMIT as usize,
            );
            offset = last + 1;
        }
    }
    eprintln!("edge cases in the sample: {seen:?}");
    for (what, n) in &seen {
        assert!(*n > 0, "the generator never produced: {what} ({seen:?})");
    }
    assert_eq!(seen.len(), 13);
}
