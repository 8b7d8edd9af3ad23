//! Paths inside a library, the same for every storage: `/`-separated
//! plain names under the library root (`novels/书/第1章.md`), the root
//! being the empty path.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::StorageError;

/// A path relative to a library root: plain names joined by `/`, never
/// absolute, never `.` or `..` or an empty name, so that no path reaches
/// outside the root of a directory or the prefix of a bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelPath(OsString);

/// Whether `name` can be one component of a path: not empty, not `.` or
/// `..`, no `/` and no NUL.
pub fn is_plain_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

impl RelPath {
    /// The library root itself.
    pub fn root() -> Self {
        RelPath(OsString::new())
    }

    /// `path` when every `/`-separated component is a plain name (the
    /// empty path is the root); `NotFound` otherwise, as no object can
    /// have such a path.
    pub fn new(path: impl AsRef<OsStr>) -> Result<Self, StorageError> {
        let bytes = path.as_ref().as_bytes();
        if bytes.is_empty() {
            return Ok(Self::root());
        }
        if bytes.split(|&b| b == b'/').all(is_plain_name) {
            Ok(RelPath(path.as_ref().to_owned()))
        } else {
            Err(StorageError::not_found(
                String::from_utf8_lossy(bytes).into_owned(),
            ))
        }
    }

    /// `self/name`, for a plain `name`.
    pub fn join(&self, name: impl AsRef<OsStr>) -> Result<Self, StorageError> {
        let name = name.as_ref().as_bytes();
        if !is_plain_name(name) {
            return Err(StorageError::not_found(format!(
                "{}/{}",
                self,
                String::from_utf8_lossy(name)
            )));
        }
        let mut bytes = Vec::with_capacity(self.0.len() + 1 + name.len());
        bytes.extend_from_slice(self.0.as_bytes());
        if !bytes.is_empty() {
            bytes.push(b'/');
        }
        bytes.extend_from_slice(name);
        Ok(RelPath(OsString::from_vec(bytes)))
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_os_str(&self) -> &OsStr {
        &self.0
    }

    /// The path as UTF-8, when it is (every S3 key is).
    pub fn to_str(&self) -> Option<&str> {
        self.0.to_str()
    }

    /// The names along the path, outermost first.
    pub fn components(&self) -> impl Iterator<Item = &OsStr> {
        self.0
            .as_bytes()
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .map(OsStr::from_bytes)
    }

    /// The last name of the path; `None` for the root.
    pub fn file_name(&self) -> Option<&OsStr> {
        self.components().last()
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.0.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_plain_names_joined_by_slashes() {
        let p = RelPath::new("novels/书 一/第1章 起.md").unwrap();
        let names: Vec<_> = p.components().collect();
        assert_eq!(names, ["novels", "书 一", "第1章 起.md"]);
        assert_eq!(p.file_name(), Some(OsStr::new("第1章 起.md")));
        let built = RelPath::root()
            .join("novels")
            .unwrap()
            .join("书 一")
            .unwrap()
            .join("第1章 起.md")
            .unwrap();
        assert_eq!(built, p);
        assert!(RelPath::new("").unwrap().is_root());
    }

    #[test]
    fn no_path_leaves_the_root() {
        for bad in [
            "/novels",
            "novels/",
            "novels//书",
            "novels/..",
            "./novels",
            "a\0b",
        ] {
            assert!(RelPath::new(bad).unwrap_err().is_not_found(), "{bad:?}");
        }
        let novels = RelPath::new("novels").unwrap();
        for bad in ["", ".", "..", "a/b"] {
            assert!(novels.join(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_name_that_is_not_utf8_is_kept_byte_for_byte() {
        let name = OsStr::from_bytes(b"\xb5\xda1\xd5\xc2.txt");
        let p = RelPath::root().join(name).unwrap();
        assert_eq!(p.as_os_str().as_bytes(), name.as_bytes());
        assert!(p.to_str().is_none());
    }
}
