//! Names inside a chapter directory: `offset-{N}.txt|json` and
//! `offset-{N}-limit-{M}.txt|json` (SPEC §2).
//!
//! Every page has exactly one spelling: plain decimal, no sign, no leading
//! zero, so `offset-01.txt` is not another name for `offset-1.txt`.

use novelfs_library::page::{MAX_OFFSET, READ_LIMIT};

/// The name of the file that explains why a directory holds no pages.
pub(crate) const ERROR_FILE: &str = "ERROR";

use novelfs_library::PageFormat;
use novelfs_library::render::push_number;

/// A parsed page name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageName {
    pub offset: u64,
    /// `None` for the default limit (listed names carry no limit).
    pub limit: Option<u32>,
    pub format: PageFormat,
}

impl PageName {
    pub fn limit_or_default(&self) -> u32 {
        self.limit.unwrap_or(READ_LIMIT)
    }

    pub fn parse(name: &[u8]) -> Option<PageName> {
        let name = std::str::from_utf8(name).ok()?;
        let (stem, format) = if let Some(s) = name.strip_suffix(".txt") {
            (s, PageFormat::Text)
        } else if let Some(s) = name.strip_suffix(".json") {
            (s, PageFormat::Json)
        } else {
            return None;
        };
        let rest = stem.strip_prefix("offset-")?;
        let (offset, limit) = match rest.split_once("-limit-") {
            Some((o, l)) => (o, Some(l)),
            None => (rest, None),
        };
        let offset = canonical_decimal(offset).filter(|n| (1..=MAX_OFFSET).contains(n))?;
        let limit = match limit {
            Some(l) => {
                Some(canonical_decimal(l).filter(|n| (1..=READ_LIMIT as u64).contains(n))? as u32)
            }
            None => None,
        };
        Some(PageName {
            offset,
            limit,
            format,
        })
    }

    pub fn to_name(&self) -> String {
        // Written piece by piece: every page file listed is named, and
        // `format!`'s machinery would be most of the cost.
        let mut name = String::with_capacity(40);
        name.push_str("offset-");
        push_number(&mut name, self.offset);
        if let Some(l) = self.limit {
            name.push_str("-limit-");
            push_number(&mut name, u64::from(l));
        }
        name.push('.');
        name.push_str(self.format.extension());
        name
    }
}

/// Plain decimal digits without a leading zero, within u64.
fn canonical_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<PageName> {
        PageName::parse(s.as_bytes())
    }

    #[test]
    fn valid_names_round_trip() {
        for name in [
            "offset-1.txt",
            "offset-401.json",
            "offset-7-limit-1.txt",
            "offset-9007199254740991-limit-400.json",
        ] {
            assert_eq!(p(name).unwrap().to_name(), name);
        }
        assert_eq!(
            p("offset-2-limit-9.json"),
            Some(PageName {
                offset: 2,
                limit: Some(9),
                format: PageFormat::Json
            })
        );
    }

    #[test]
    fn malformed_names() {
        for bad in [
            "offset-0.txt",
            "offset-01.txt",
            "offset--1.txt",
            "offset-+1.txt",
            "offset-1.TXT",
            "offset-1",
            "offset-1.md",
            "offset-1-limit-0.txt",
            "offset-1-limit-401.txt",
            "offset-1-limit-01.txt",
            "offset-99999999999999999999.txt",
            "offset-9007199254740992.txt",
            "offset-.txt",
            "offset-1-limit-.txt",
            "Offset-1.txt",
            "offset-1-limit-2-limit-3.txt",
            " offset-1.txt",
            "offset-１.txt",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }
}
