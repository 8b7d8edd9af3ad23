//! `s3://BUCKET[/PREFIX]`, `gs://BUCKET[/PREFIX]` and
//! `az://CONTAINER[/PREFIX]`, and how library paths map to the keys under
//! them.

use std::fmt;
use std::str::FromStr;

use crate::{RelPath, StorageError};

/// Whose object store a bucket is in, which says the API its requests
/// speak and the URL scheme that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cloud {
    /// Amazon S3, or anything speaking its API (MinIO, R2, moto).
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage: a container of a storage account.
    Azure,
}

impl Cloud {
    /// Every cloud, in the order help texts name them.
    pub const ALL: [Cloud; 3] = [Cloud::S3, Cloud::Gcs, Cloud::Azure];

    /// The URL scheme, without `://`.
    pub fn scheme(self) -> &'static str {
        match self {
            Cloud::S3 => "s3",
            Cloud::Gcs => "gs",
            Cloud::Azure => "az",
        }
    }

    /// What the store calls the thing a URL's first part names.
    pub fn bucket_word(self) -> &'static str {
        match self {
            Cloud::Azure => "container",
            Cloud::S3 | Cloud::Gcs => "bucket",
        }
    }

    /// The store's name in messages.
    pub fn store_name(self) -> &'static str {
        match self {
            Cloud::S3 => "S3",
            Cloud::Gcs => "Google Cloud Storage",
            Cloud::Azure => "Azure Blob Storage",
        }
    }

    /// The cloud whose scheme `url` begins with (`s3://`, `gs://`, `az://`).
    pub fn of_url(url: &str) -> Option<Cloud> {
        Cloud::ALL.into_iter().find(|c| {
            url.strip_prefix(c.scheme())
                .is_some_and(|r| r.starts_with("://"))
        })
    }

    /// Whether `name` is a bucket (container) name the store accepts.
    fn accepts(self, name: &str) -> bool {
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        let ends = name.chars().next().is_some_and(alnum) && name.chars().last().is_some_and(alnum);
        let chars = |extra: &[char]| name.chars().all(|c| alnum(c) || extra.contains(&c));
        match self {
            // 3 to 63 lower-case letters, digits, dots and hyphens.
            Cloud::S3 => (3..=63).contains(&name.len()) && ends && chars(&['.', '-']),
            // The same and underscores; up to 222 with dots, each dotted
            // part at most 63.
            Cloud::Gcs => {
                let len_ok = if name.contains('.') {
                    name.len() <= 222 && name.split('.').all(|p| p.len() <= 63)
                } else {
                    name.len() <= 63
                };
                name.len() >= 3 && len_ok && ends && chars(&['.', '-', '_'])
            }
            // Letters, digits and single hyphens.
            Cloud::Azure => {
                (3..=63).contains(&name.len()) && ends && chars(&['-']) && !name.contains("--")
            }
        }
    }
}

/// A library in a bucket: the cloud, the bucket (an Azure container) and
/// the key prefix its root is at (no leading or trailing `/`; empty for
/// the whole bucket).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BucketUrl {
    cloud: Cloud,
    bucket: String,
    prefix: String,
}

impl BucketUrl {
    pub fn cloud(&self) -> Cloud {
        self.cloud
    }

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

    /// `SCHEME://BUCKET/KEY` for messages.
    pub fn display_key(&self, key: &str) -> String {
        format!("{}://{}/{key}", self.cloud.scheme(), self.bucket)
    }
}

impl FromStr for BucketUrl {
    type Err = StorageError;

    /// `SCHEME://BUCKET`, `SCHEME://BUCKET/` or `SCHEME://BUCKET/PREFIX[/]`
    /// (SCHEME `s3`, `gs` or `az`), the prefix of plain names joined by
    /// `/`.
    fn from_str(s: &str) -> Result<Self, StorageError> {
        let bad = |why: &str| {
            StorageError::other(format!(
                "{s}: not an s3://BUCKET[/PREFIX], gs://BUCKET[/PREFIX] or az://CONTAINER[/PREFIX] URL: {why}"
            ))
        };
        let cloud =
            Cloud::of_url(s).ok_or_else(|| bad("it does not begin with s3://, gs:// or az://"))?;
        let rest = &s[cloud.scheme().len() + 3..];
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if !cloud.accepts(bucket) {
            return Err(bad(&format!(
                "the {} name is not one {} accepts",
                cloud.bucket_word(),
                cloud.store_name()
            )));
        }
        let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
        if !prefix.is_empty() && RelPath::new(prefix).is_err() {
            return Err(bad("the prefix has an empty, `.` or `..` part"));
        }
        if prefix.chars().any(|c| c.is_control()) {
            return Err(bad("the prefix has a control character"));
        }
        Ok(BucketUrl {
            cloud,
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

impl fmt::Display for BucketUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.cloud.scheme();
        if self.prefix.is_empty() {
            write!(f, "{scheme}://{}", self.bucket)
        } else {
            write!(f, "{scheme}://{}/{}", self.bucket, self.prefix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> BucketUrl {
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
            ("gs://my_library/shelf", "my_library", "shelf"),
            ("az://library-2/shelf/", "library-2", "shelf"),
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
            "s3://my_library",
            "gs://Library",
            "az://my.library",
            "az://lib--rary",
            "gcs://library",
        ] {
            let e = s.parse::<BucketUrl>().unwrap_err();
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
