//! Which page formats a chapter directory lists (`--formats`,
//! `-o formats=`). Both by default; with one, `grep -r` over the mount
//! finds each hit once. The other format is still there by its exact
//! name: lookup parses the name, so `offset-1.json` opens under
//! `formats=txt` too, and only the listing leaves it out.

use novelfs_library::PageFormat;

/// The page formats listed in chapter directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formats {
    pub text: bool,
    pub json: bool,
}

impl Default for Formats {
    fn default() -> Self {
        Formats {
            text: true,
            json: true,
        }
    }
}

impl Formats {
    /// What `--formats` and `-o formats=` take, for the usage line.
    pub const TAKES: &'static str = "txt, json or txt,json";

    /// `txt`, `json`, or both comma- or plus-separated (`-o` lists are
    /// split at commas, so `txt+json` is the one spelling of both there).
    pub fn parse(v: &str) -> Result<Formats, &'static str> {
        let mut f = Formats {
            text: false,
            json: false,
        };
        for word in v.split([',', '+']) {
            match word.trim() {
                "txt" => f.text = true,
                "json" => f.json = true,
                _ => return Err(Self::TAKES),
            }
        }
        Ok(f)
    }

    /// Whether pages of `format` are listed.
    pub fn lists(&self, format: PageFormat) -> bool {
        match format {
            PageFormat::Text => self.text,
            PageFormat::Json => self.json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_one_or_both_and_nothing_else() {
        let txt = Formats::parse("txt").unwrap();
        assert!(txt.lists(PageFormat::Text) && !txt.lists(PageFormat::Json));
        let json = Formats::parse("json").unwrap();
        assert!(!json.lists(PageFormat::Text) && json.lists(PageFormat::Json));
        assert_eq!(Formats::parse("txt,json"), Ok(Formats::default()));
        assert_eq!(Formats::parse("json+txt"), Ok(Formats::default()));
        for bad in ["", "md", "txt,", "TXT"] {
            assert!(Formats::parse(bad).is_err(), "{bad:?}");
        }
    }
}
