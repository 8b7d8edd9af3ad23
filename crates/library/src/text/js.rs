//! JavaScript string semantics that the original tool inherits from Node.
//!
//! The reference implementation is JavaScript, so every length is counted in
//! UTF-16 code units and "whitespace" means ECMAScript's WhiteSpace +
//! LineTerminator set — which differs from Rust's `char::is_whitespace`
//! (JS includes U+FEFF, excludes U+0085).

/// ECMAScript `\s`: WhiteSpace and LineTerminator code points.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// The same set as a regex character-class body, for patterns that use `\s`.
pub const JS_WHITESPACE_CLASS: &str = r"\t\n\x0B\x0C\r \u{A0}\u{1680}\u{2000}-\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}";

/// `String.prototype.trim`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// `String.prototype.toLowerCase` (full Unicode mapping, final sigma included,
/// which Rust's `to_lowercase` also implements).
pub fn to_lower(s: &str) -> String {
    // Most chapter names are Han characters, digits and CJK punctuation,
    // which have no case: such a name is its own lower case, known without
    // a table lookup per character (every chapter of every scan lowers its
    // file name, stem and title).
    if s.chars().all(caseless) {
        return s.to_owned();
    }
    s.to_lowercase()
}

/// Characters that lower case leaves as they are, whatever surrounds
/// them: ASCII but capitals, CJK punctuation, kana, the CJK ideographs
/// (extension A and the unified block), and the fullwidth forms but the
/// capitals.
fn caseless(c: char) -> bool {
    matches!(c,
        '\0'..='@' | '['..='\u{7f}'
        | '\u{3000}'..='\u{30FF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{FF01}'..='\u{FF20}'
        | '\u{FF3B}'..='\u{FF65}')
}

/// `String.prototype.length`: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    utf16_units(s.as_bytes())
}

/// UTF-16 units of valid UTF-8, also of a piece of it cut anywhere: one
/// for each byte that starts a character, a second for a 4-byte one.
/// Counted by bytes in chunks whose sum fits a u16, so the loop vectorizes
/// (whole chapters are measured on every cold outline).
pub fn utf16_units(b: &[u8]) -> usize {
    b.chunks(16 * 1024)
        .map(|chunk| {
            let units: u16 = chunk
                .iter()
                .map(|&x| u16::from(x & 0xC0 != 0x80) + u16::from(x >= 0xF0))
                .sum();
            usize::from(units)
        })
        .sum()
}

/// `Number.prototype.toString()` for the non-negative integral values chapter
/// numbers can take: plain digits below 1e21, exponent form above, shortest
/// round-trip digits as V8 prints them.
pub fn format_number(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 1e21 {
        // `{:e}` gives the shortest round-trip digits; V8 pads them with zeros
        // instead of printing the exact binary value that `{:.0}` would.
        let s = format!("{:e}", n.abs());
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let exp: usize = exp.parse().unwrap_or(0);
        let mut out = String::from(if n < 0.0 { "-" } else { "" });
        out.push_str(&digits);
        for _ in digits.len()..=exp {
            out.push('0');
        }
        out
    } else if n.is_finite() && n.fract() != 0.0 {
        format!("{n}")
    } else if n.is_finite() {
        let s = format!("{n:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else if n.is_nan() {
        "NaN".into()
    } else if n > 0.0 {
        "Infinity".into()
    } else {
        "-Infinity".into()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn caseless_characters_lower_to_themselves() {
        let caseless: Vec<char> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| super::caseless(c))
            .collect();
        assert!(caseless.len() > 27_000, "the CJK blocks are in");
        for c in caseless {
            let alone = c.to_string();
            assert_eq!(alone.to_lowercase(), alone, "U+{:04X}", c as u32);
            // Beside a final sigma's context too.
            let framed = format!("Σ{c}Σ");
            assert_eq!(super::to_lower(&framed), framed.to_lowercase());
        }
        assert!(!super::caseless('A') && !super::caseless('Ａ') && !super::caseless('Σ'));
    }

    use super::*;

    #[test]
    fn trim_uses_js_whitespace() {
        assert_eq!(trim("\u{3000}\u{FEFF} 第1章\t\n"), "第1章");
        // U+0085 is whitespace for Rust but not for JavaScript.
        assert_eq!(trim("\u{85}x\u{85}"), "\u{85}x\u{85}");
    }

    #[test]
    fn lengths_are_utf16_units() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("月光"), 2);
        assert_eq!(utf16_len("🌙"), 2);
        // Past one counting chunk, every width, cut anywhere.
        let long = "a月é🌙\n".repeat(5000);
        let by_chars: usize = long.chars().map(char::len_utf16).sum();
        assert_eq!(utf16_len(&long), by_chars);
        let cut = &long.as_bytes()[..long.len() - 2];
        let whole: usize = long[..long.len() - 5].chars().map(char::len_utf16).sum();
        assert_eq!(
            utf16_units(cut),
            whole + 2,
            "a cut 4-byte character counts by its first byte"
        );
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(format_number(4.0), "4");
        assert_eq!(format_number(1002.0), "1002");
        assert_eq!(
            format_number(123456789012345680000.0),
            "123456789012345680000"
        );
        assert_eq!(format_number(1e21), "1e+21");
        assert_eq!(format_number(1.2345e25), "1.2345e+25");
    }
}
