//! The rules of `novel_read`'s arguments: a book name sanitized into a
//! path segment, an integer argument in range, a valid `--path-root`.

use super::{NovelError, js};

/// `sanitizeSegment`: strip characters Windows forbids, leading and trailing
/// dots and whitespace, and defuse reserved device names.
pub fn sanitize_segment(s: &str) -> Result<String, NovelError> {
    let kept: String = s.chars().filter(|c| !r#"\/:*?"<>|"#.contains(*c)).collect();
    let trimmed = kept.trim_matches(|c: char| c == '.' || js::is_js_whitespace(c));
    if trimmed.is_empty() {
        return Err(NovelError::BookEmptyAfterSanitize);
    }
    let upper = trimmed.to_ascii_uppercase();
    let reserved = matches!(upper.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || ((upper.starts_with("COM") || upper.starts_with("LPT"))
            && upper.len() == 4
            && matches!(upper.as_bytes()[3], b'1'..=b'9'));
    Ok(if reserved {
        format!("_{trimmed}")
    } else {
        trimmed.to_string()
    })
}

/// Why a `--path-root` cannot be one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadPathRoot {
    Relative(String),
    ControlCharacters(String),
}

impl std::fmt::Display for BadPathRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadPathRoot::Relative(root) => write!(
                f,
                "path root must be an absolute path (like /library), not {root:?}"
            ),
            BadPathRoot::ControlCharacters(root) => {
                write!(f, "path root must not contain control characters: {root:?}")
            }
        }
    }
}

impl std::error::Error for BadPathRoot {}

/// A valid `--path-root`: absolute, without trailing slashes.
pub fn normalize_path_root(root: &str) -> Result<String, BadPathRoot> {
    if !root.starts_with('/') {
        return Err(BadPathRoot::Relative(root.to_string()));
    }
    if root.chars().any(char::is_control) {
        return Err(BadPathRoot::ControlCharacters(root.to_string()));
    }
    let trimmed = root.trim_end_matches('/');
    Ok(if trimmed.is_empty() { "/" } else { trimmed }.to_string())
}

/// `optionalInt`: an integer argument in `[min, max]`, else `error`.
pub fn parse_int_arg(
    value: Option<&str>,
    default: u64,
    max: u64,
    error: NovelError,
) -> Result<u64, NovelError> {
    let Some(raw) = value else { return Ok(default) };
    match raw.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(error),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn sanitize() {
        assert_eq!(sanitize_segment(" ..星河:旧梦?.. ").unwrap(), "星河旧梦");
        assert_eq!(sanitize_segment("con").unwrap(), "_con");
        assert_eq!(sanitize_segment("LPT9").unwrap(), "_LPT9");
        assert_eq!(sanitize_segment("COM10").unwrap(), "COM10");
        assert_eq!(sanitize_segment("a/b").unwrap(), "ab");
        assert_eq!(
            sanitize_segment("../..").unwrap_err(),
            NovelError::BookEmptyAfterSanitize
        );
        assert_eq!(
            sanitize_segment("\u{3000}").unwrap_err(),
            NovelError::BookEmptyAfterSanitize
        );
    }

    #[test]
    fn int_args() {
        assert_eq!(parse_int_arg(None, 1, 9, NovelError::BadOffset), Ok(1));
        assert_eq!(parse_int_arg(Some("9"), 1, 9, NovelError::BadOffset), Ok(9));
        for bad in ["0", "10", "-1", "1.5", "abc", "", "99999999999999999999999"] {
            assert_eq!(
                parse_int_arg(Some(bad), 1, 9, NovelError::BadLimit),
                Err(NovelError::BadLimit),
                "{bad}"
            );
        }
    }

    #[test]
    fn path_roots() {
        assert_eq!(normalize_path_root("/library/").unwrap(), "/library");
        assert_eq!(normalize_path_root("/").unwrap(), "/");
        assert!(normalize_path_root("library").is_err());
        assert!(normalize_path_root("/a\nb").is_err());
        let lib = crate::backing::for_tests::library_at("/")
            .with_path_root("/library")
            .unwrap();
        assert_eq!(lib.display_path("书", "1.md"), "/library/novels/书/1.md");
        let lib = lib.with_path_root("/").unwrap();
        assert_eq!(lib.display_path("书", "1.md"), "/novels/书/1.md");
    }
}
