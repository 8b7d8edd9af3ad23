//! `s3://BUCKET[/PREFIX]` and how library paths map to the keys under it.

use std::fmt;
use std::str::FromStr;

use crate::{RelPath, StorageError};

/// A library in a bucket: the bucket and the key prefix its root is at
/// (no leading or trailing `/`; empty for the whole bucket).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct S3Url {
    bucket: String,
    prefix: String,
}

/// Whether `name` is a bucket name S3 accepts: 3 to 63 lower-case
/// letters, digits, dots and hyphens, beginning and ending with a letter
/// or digit.
fn is_bucket_name(name: &str) -> bool {
    let ok_end = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && ok_end(name.chars().next())
        && ok_end(name.chars().last())
}

impl S3Url {
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of the object at `path`; `None` for a path that is not
    /// UTF-8, which no key can be.
    pub fn key(&self, path: &RelPath) -> Option<String> {
        let rel = path.to_str()?;
        Some(match (self.prefix.is_empty(), rel.is_empty()) {
            (true, _) => rel.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{rel}", self.prefix),
        })
    }

    /// The key prefix that lists the directory `dir` (ending in `/`, or
    /// empty for the root of a whole bucket).
    pub fn dir_prefix(&self, dir: &RelPath) -> Option<String> {
        let key = self.key(dir)?;
        Some(if key.is_empty() { key } else { key + "/" })
    }

    /// `s3://BUCKET/KEY` for messages.
    pub fn display_key(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

impl FromStr for S3Url {
    type Err = StorageError;

    /// `s3://BUCKET`, `s3://BUCKET/` or `s3://BUCKET/PREFIX[/]`, the
    /// prefix of plain names joined by `/`.
    fn from_str(s: &str) -> Result<Self, StorageError> {
        let bad =
            |why: &str| StorageError::Other(format!("{s}: not an s3://BUCKET[/PREFIX] URL: {why}"));
        let rest = s
            .strip_prefix("s3://")
            .ok_or_else(|| bad("it does not begin with s3://"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if !is_bucket_name(bucket) {
            return Err(bad("the bucket name is not one S3 accepts"));
        }
        let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
        if !prefix.is_empty() && RelPath::new(prefix).is_err() {
            return Err(bad("the prefix has an empty, `.` or `..` part"));
        }
        if prefix.chars().any(|c| c.is_control()) {
            return Err(bad("the prefix has a control character"));
        }
        Ok(S3Url {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

impl fmt::Display for S3Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> S3Url {
        s.parse().unwrap()
    }

    #[test]
    fn a_url_is_a_bucket_and_a_prefix() {
        for (s, bucket, prefix) in [
            ("s3://library", "library", ""),
            ("s3://library/", "library", ""),
            ("s3://library/shelf", "library", "shelf"),
            ("s3://library/shelf/", "library", "shelf"),
            ("s3://my.library-2/a/书架/", "my.library-2", "a/书架"),
        ] {
            let u = url(s);
            assert_eq!((u.bucket(), u.prefix()), (bucket, prefix), "{s}");
            assert_eq!(url(&u.to_string()), u, "{s} round trip");
        }
    }

    #[test]
    fn a_bad_url_says_why() {
        for s in [
            "library",
            "http://library/x",
            "s3://",
            "s3://Library",
            "s3://ab",
            "s3://-library",
            "s3://library//x",
            "s3://library/a/../b",
            "s3://library/a/./b",
            "s3://library/a\tb",
        ] {
            let e = s.parse::<S3Url>().unwrap_err();
            assert!(e.to_string().starts_with(s), "{s}: {e}");
        }
    }

    #[test]
    fn paths_map_to_keys_under_the_prefix() {
        let p = RelPath::new("novels/书 一/第1章 起.md").unwrap();
        let root = RelPath::root();
        let shelf = url("s3://library/shelf/a");
        assert_eq!(shelf.key(&p).unwrap(), "shelf/a/novels/书 一/第1章 起.md");
        assert_eq!(shelf.key(&root).unwrap(), "shelf/a");
        assert_eq!(shelf.dir_prefix(&root).unwrap(), "shelf/a/");
        assert_eq!(
            shelf
                .dir_prefix(&RelPath::new("novels/书 一").unwrap())
                .unwrap(),
            "shelf/a/novels/书 一/"
        );
        let whole = url("s3://library");
        assert_eq!(whole.key(&p).unwrap(), "novels/书 一/第1章 起.md");
        assert_eq!(whole.dir_prefix(&root).unwrap(), "");
        assert_eq!(
            whole.dir_prefix(&RelPath::new("novels").unwrap()).unwrap(),
            "novels/"
        );
        use std::os::unix::ffi::OsStrExt;
        let latin1 = RelPath::new(std::ffi::OsStr::from_bytes(b"novels/\xb5\xda")).unwrap();
        assert_eq!(whole.key(&latin1), None);
    }
}
