//! A bucket library's published snapshot: its whole listing (every key
//! with its size, ETag and time) written beside it by the one publisher
//! of a fleet (`novelfs index … --publish`), so that every mount serves
//! names, sizes and versions from it and issues no LIST.
//!
//! Two objects under `.novelfs/`: `listing.json`, written only when the
//! library changed, and `snapshot.json`, the head: small, rewritten at
//! every confirmation, naming the listing by its digest, when it was made,
//! when the publisher last confirmed it and the cadence it promised. A
//! mount asks for the head once per TTL with `If-None-Match` (a 304 while
//! nothing changed) and fetches the listing only when the head names
//! another. A head whose digest the listing does not have (a publisher
//! between its two PUTs) is asked for again at the next check.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use novelfs_library::stable_hash::stable_hash_bytes;
use serde_json::{Value, json};

use crate::{Entry, EntryKind, RelPath, Storage, StorageError, Version};

/// The head, relative to the library's root.
pub const HEAD: &str = ".novelfs/snapshot.json";

/// The listing, relative to the library's root.
pub const LISTING: &str = ".novelfs/listing.json";

/// The folder the publisher writes in: never part of the library.
const OWN_FOLDER: &str = ".novelfs";

/// The layout of both objects; a mount follows only its own.
const FORMAT: u64 = 1;

/// What the head says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The head object's ETag: what the next check sends as
    /// `If-None-Match`.
    pub etag: String,
    /// The digest (XXH3-64, hex) of the listing's bytes.
    pub listing: String,
    /// How many files the listing holds.
    pub files: u64,
    /// The ETag of the index published with it (`index.sqlite`), if any.
    pub index: Option<String>,
    /// When the listing was made (Unix seconds).
    pub published: u64,
    /// When the publisher last confirmed it (Unix seconds).
    pub confirmed: u64,
    /// The publisher's cadence in seconds, when it runs with `--every`.
    pub every: Option<u64>,
}

/// Now, in Unix seconds: what a head's times are written in.
pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Head {
    fn parse(bytes: &[u8], etag: String) -> Result<Head, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        if v["format"].as_u64() != Some(FORMAT) {
            return Err(format!(
                "format {} (this build follows {FORMAT})",
                v["format"]
            ));
        }
        let field = |name: &str| v[name].as_u64().ok_or_else(|| format!("no {name}"));
        Ok(Head {
            etag,
            listing: v["listing"].as_str().ok_or("no listing")?.to_string(),
            files: field("files")?,
            index: v["index"].as_str().map(str::to_string),
            published: field("published")?,
            confirmed: field("confirmed")?,
            every: v["every"].as_u64(),
        })
    }

    fn to_json(&self) -> Vec<u8> {
        let v = json!({
            "format": FORMAT,
            "listing": self.listing,
            "files": self.files,
            "index": self.index,
            "published": self.published,
            "confirmed": self.confirmed,
            "every": self.every,
        });
        let mut bytes = serde_json::to_vec_pretty(&v).expect("a JSON value");
        bytes.push(b'\n');
        bytes
    }

    /// Why the snapshot is not to be followed any more, at `now`: its
    /// publisher promised a cadence and has not confirmed it for twice
    /// that (it stopped), so a forgotten publisher never freezes a library.
    pub fn lapsed(&self, now: u64) -> Option<String> {
        let every = self.every?;
        let age = now.saturating_sub(self.confirmed);
        (age > 2 * every.max(1)).then(|| {
            format!(
                "the publisher confirms every {every} s and last confirmed {age} s ago \
                 (more than twice its cadence)"
            )
        })
    }

    /// How long ago the listing was made, for the mounted line and status.
    pub fn age(&self) -> Duration {
        Duration::from_secs(unix_now().saturating_sub(self.published))
    }
}

/// A listing as a mount serves it: each directory's entries, sorted by
/// name byte for byte, as `Storage::list` would give them.
#[derive(Debug)]
pub struct Snapshot {
    pub head: Head,
    by_dir: HashMap<PathBuf, Arc<Vec<Entry>>>,
}

impl Snapshot {
    /// The entries of `dir` as of the snapshot; `None` when it held no
    /// such directory.
    pub fn dir(&self, dir: &Path) -> Option<&Arc<Vec<Entry>>> {
        self.by_dir.get(dir)
    }

    /// The snapshot of the listing's `bytes`, which `head` names.
    fn parse(head: Head, bytes: &[u8]) -> Result<Snapshot, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        let files = v["files"].as_array().ok_or("no files")?;
        let mut by_dir: HashMap<PathBuf, Vec<Entry>> = HashMap::new();
        let mut subdirs: HashMap<PathBuf, HashSet<OsString>> = HashMap::new();
        by_dir.insert(PathBuf::new(), Vec::new());
        for f in files {
            let bad = || format!("a malformed file entry: {f}");
            let key = f[0].as_str().ok_or_else(bad)?;
            let size = f[1].as_u64().ok_or_else(bad)?;
            let etag = f[2].as_str().ok_or_else(bad)?.to_string();
            let secs = f[3].as_u64().ok_or_else(bad)?;
            let nanos = f[4].as_u64().ok_or_else(bad)?.min(999_999_999) as u32;
            RelPath::new(key).map_err(|_| bad())?;
            let path = Path::new(key);
            let dir = path.parent().unwrap_or(Path::new(""));
            by_dir.entry(dir.to_path_buf()).or_default().push(Entry {
                name: path.file_name().ok_or_else(bad)?.to_owned(),
                kind: EntryKind::File,
                size,
                version: Version::ETag { etag, size },
                modified: UNIX_EPOCH + Duration::new(secs, nanos),
            });
            // Each directory above it is an entry of its parent.
            for above in dir.ancestors() {
                if let (Some(parent), Some(name)) = (above.parent(), above.file_name()) {
                    subdirs
                        .entry(parent.to_path_buf())
                        .or_default()
                        .insert(name.to_owned());
                }
            }
        }
        for (parent, names) in subdirs {
            let entries = by_dir.entry(parent).or_default();
            entries.extend(names.into_iter().map(|name| Entry {
                name,
                kind: EntryKind::Dir,
                size: 0,
                version: Version::Prefix,
                modified: UNIX_EPOCH,
            }));
        }
        let by_dir = by_dir
            .into_iter()
            .map(|(d, mut entries)| {
                use std::os::unix::ffi::OsStrExt;
                entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
                (d, Arc::new(entries))
            })
            .collect();
        Ok(Snapshot { head, by_dir })
    }
}

fn rel(key: &str) -> RelPath {
    RelPath::new(key).expect("a plain relative key")
}

/// The head as published, unless its ETag is still `known`: `Ok(None)`
/// then (a 304). `NotFound` when none is published.
pub fn read_head(storage: &dyn Storage, known: Option<&str>) -> Result<Option<Head>, StorageError> {
    let Some(object) = storage.read_if_none_match(&rel(HEAD), known)? else {
        return Ok(None);
    };
    let etag = match object.version {
        Version::ETag { etag, .. } => etag,
        _ => String::new(),
    };
    Head::parse(&object.bytes, etag)
        .map(Some)
        .map_err(|e| StorageError::Other(format!("{HEAD}: {e}")))
}

/// The listing `head` names, fetched (one GET). `Changed` when the object
/// there is another listing (published since the head was read).
pub fn read_snapshot(storage: &dyn Storage, head: Head) -> Result<Snapshot, StorageError> {
    let object = storage.read(&rel(LISTING), None)?;
    if digest(&object.bytes) != head.listing {
        return Err(StorageError::Changed {
            path: LISTING.to_string(),
        });
    }
    Snapshot::parse(head, &object.bytes).map_err(|e| StorageError::Other(format!("{LISTING}: {e}")))
}

fn digest(bytes: &[u8]) -> String {
    format!("{:016x}", stable_hash_bytes(bytes))
}

/// The library's listing as the publisher makes it.
pub struct Listing {
    pub files: u64,
    bytes: Vec<u8>,
    /// The digest (XXH3-64, hex) of its bytes: what the head names.
    pub digest: String,
}

/// Lists every file of the library (`Storage::list_all`: a bucket in
/// one LIST per 1,000 keys), the publisher's folder left out.
pub fn walk(storage: &dyn Storage) -> Result<Listing, StorageError> {
    let mut files: Vec<(String, Entry)> = storage
        .list_all()?
        .into_iter()
        .filter(|(path, _)| path.components().next().is_none_or(|c| c != OWN_FOLDER))
        .map(|(path, e)| (path.to_string(), e))
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let bytes = listing_bytes(&files);
    Ok(Listing {
        files: files.len() as u64,
        digest: digest(&bytes),
        bytes,
    })
}

/// The listing's bytes: one row a file, `[key, size, etag, secs, nanos]`.
fn listing_bytes(files: &[(String, Entry)]) -> Vec<u8> {
    let rows: Vec<Value> = files
        .iter()
        .map(|(key, e)| {
            let etag = match &e.version {
                Version::ETag { etag, .. } => etag.as_str(),
                _ => "",
            };
            let t = e.modified.duration_since(UNIX_EPOCH).unwrap_or_default();
            json!([key, e.size, etag, t.as_secs(), t.subsec_nanos()])
        })
        .collect();
    let mut bytes =
        serde_json::to_vec(&json!({ "format": FORMAT, "files": rows })).expect("a JSON value");
    bytes.push(b'\n');
    bytes
}

/// The head published now, `None` when there is none.
pub fn published_head(storage: &dyn Storage) -> Result<Option<Head>, StorageError> {
    match read_head(storage, None) {
        Ok(head) => Ok(head),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Publishes `listing` with the index whose ETag is `index` and the
/// cadence `every` (seconds), over `before` (the head published, if any):
/// the listing only when it differs from the one published, the head
/// always (its confirmation). The listing goes first, so a head never
/// names a listing that is not there. Whether the listing was written.
pub fn publish(
    storage: &dyn Storage,
    listing: Listing,
    before: Option<&Head>,
    index: Option<String>,
    every: Option<u64>,
) -> Result<bool, StorageError> {
    let now = unix_now();
    let same = before.is_some_and(|h| h.listing == listing.digest && h.index == index);
    if before.is_none_or(|h| h.listing != listing.digest) {
        storage.put(&rel(LISTING), listing.bytes)?;
    }
    let head = Head {
        etag: String::new(),
        listing: listing.digest,
        files: listing.files,
        index,
        published: match before {
            Some(h) if same => h.published,
            _ => now,
        },
        confirmed: now,
        every,
    };
    storage.put(&rel(HEAD), head.to_json())?;
    Ok(!same)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, etag: &str) -> Entry {
        Entry {
            name: name.into(),
            kind: EntryKind::File,
            size: 3,
            version: Version::ETag {
                etag: etag.into(),
                size: 3,
            },
            modified: UNIX_EPOCH + Duration::new(1_700_000_000, 5),
        }
    }

    fn head() -> Head {
        Head {
            etag: "\"h\"".into(),
            listing: String::new(),
            files: 0,
            index: None,
            published: 10,
            confirmed: 100,
            every: Some(30),
        }
    }

    /// The snapshot serves each directory as a LIST with a delimiter
    /// gives it: files and sub-directories, sorted byte for byte.
    #[test]
    fn a_listing_gives_each_directory_as_a_list_would() {
        let files = vec![
            ("novels/书/第2章.md".to_string(), file("第2章.md", "\"b\"")),
            ("novels/书/第1章.md".to_string(), file("第1章.md", "\"a\"")),
            ("novels/乙/1.txt".to_string(), file("1.txt", "\"c\"")),
            ("readme.md".to_string(), file("readme.md", "\"d\"")),
        ];
        let bytes = listing_bytes(&files);
        let snap = Snapshot::parse(head(), &bytes).unwrap();
        let names = |d: &str| -> Vec<(String, EntryKind)> {
            snap.dir(Path::new(d))
                .unwrap()
                .iter()
                .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
                .collect()
        };
        assert_eq!(
            names(""),
            [
                ("novels".into(), EntryKind::Dir),
                ("readme.md".into(), EntryKind::File)
            ]
        );
        assert_eq!(
            names("novels"),
            [("乙".into(), EntryKind::Dir), ("书".into(), EntryKind::Dir)]
        );
        let book = snap.dir(Path::new("novels/书")).unwrap();
        assert_eq!(book[0], file("第1章.md", "\"a\""));
        assert_eq!(book[1], file("第2章.md", "\"b\""));
        assert!(snap.dir(Path::new("novels/丙")).is_none());
    }

    #[test]
    fn a_head_reads_back_and_lapses_past_twice_its_cadence() {
        let h = head();
        assert_eq!(Head::parse(&h.to_json(), "\"h\"".into()).unwrap(), h);
        assert_eq!(h.lapsed(160), None);
        assert!(h.lapsed(161).is_some());
        let no_cadence = Head { every: None, ..h };
        assert_eq!(no_cadence.lapsed(u64::MAX), None);
        let other = br#"{"format": 2}"#;
        assert!(Head::parse(other, String::new()).is_err());
    }
}
