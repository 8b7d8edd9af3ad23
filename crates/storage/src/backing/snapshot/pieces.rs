//! The pieces of a published snapshot: one object per directory that holds
//! files (its files' names, sizes, ETags and times, and what the publisher
//! records beside them: the persistent index's rows of a book's chapters),
//! and a root object naming every such directory with the digest of its
//! piece. Each piece is stored under its own digest
//! (`.novelfs/pieces/DIGEST.json`), so a piece that did not change between
//! two snapshots is one object, written once and fetched once by a mount
//! that keeps it: a change costs the publisher and every mount the pieces
//! it touched, not the library.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{FORMAT, Malformed, OWN_FOLDER, digest, rel};
use crate::{Entry, EntryKind, RelPath, Storage, StorageError, Version};

/// Where the pieces are, relative to the library's root.
pub const PIECES: &str = ".novelfs/pieces";

/// The key of the piece of digest `digest`.
pub(super) fn piece_key(digest: &str) -> RelPath {
    rel(&format!("{PIECES}/{digest}.json"))
}

/// The piece's bytes at `digest`, fetched (one GET) and checked against
/// the digest it is stored under.
fn fetch(storage: &dyn Storage, digest_named: &str) -> Result<Vec<u8>, StorageError> {
    let key = piece_key(digest_named);
    let object = storage.read(&key, None)?;
    if digest(&object.bytes) != digest_named {
        return Err(StorageError::other(format!(
            "{key}: its bytes are not the piece its name says"
        )));
    }
    Ok(object.bytes)
}

/// One directory of a snapshot: its sub-directories, and the piece of
/// its files when it holds any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shape {
    pub subdirs: Vec<OsString>,
    pub piece: Option<String>,
    pub files: u64,
    /// Its newest file's time (the epoch when it holds none).
    pub newest: SystemTime,
    /// What the publisher recorded of it in the root (a book's figures,
    /// those `novel_books` prints), made of its piece.
    pub figures: Option<Value>,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            subdirs: Vec::new(),
            piece: None,
            files: 0,
            newest: UNIX_EPOCH,
            figures: None,
        }
    }
}

/// The root object: every directory of the snapshot.
#[derive(Debug)]
pub(super) struct Root {
    pub dirs: HashMap<PathBuf, Shape>,
}

impl Root {
    /// The root object `digest_named` names, fetched (one GET).
    pub(super) fn fetch(storage: &dyn Storage, digest_named: &str) -> Result<Root, StorageError> {
        let bytes = fetch(storage, digest_named)?;
        Root::parse(&bytes)
            .map_err(|e| StorageError::failed(piece_key(digest_named).to_string(), e))
    }

    fn parse(bytes: &[u8]) -> Result<Root, Malformed> {
        let v: Value = serde_json::from_slice(bytes).map_err(Malformed::NotJson)?;
        if v["format"].as_u64() != Some(FORMAT) {
            return Err(Malformed::Format {
                found: v["format"].to_string(),
            });
        }
        let rows = v["dirs"].as_array().ok_or(Malformed::Missing("dirs"))?;
        let mut dirs: HashMap<PathBuf, Shape> = HashMap::new();
        dirs.insert(PathBuf::new(), Shape::default());
        for row in rows {
            let bad = || Malformed::Entry {
                of: "directory",
                entry: row.to_string(),
            };
            let dir = row[0].as_str().ok_or_else(bad)?;
            let piece = row[1].as_str().ok_or_else(bad)?.to_string();
            let files = row[2].as_u64().ok_or_else(bad)?;
            let secs = row[3].as_u64().ok_or_else(bad)?;
            let nanos = row[4].as_u64().ok_or_else(bad)?.min(999_999_999) as u32;
            RelPath::new(dir).map_err(|_| bad())?;
            let path = PathBuf::from(dir);
            let shape = dirs.entry(path.clone()).or_default();
            shape.piece = Some(piece);
            shape.files = files;
            shape.newest = UNIX_EPOCH + Duration::new(secs, nanos);
            shape.figures = row.get(5).filter(|v| !v.is_null()).cloned();
            // Each directory above it is an entry of its parent.
            for above in path.ancestors() {
                if let (Some(parent), Some(name)) = (above.parent(), above.file_name()) {
                    let subdirs = &mut dirs.entry(parent.to_path_buf()).or_default().subdirs;
                    if !subdirs.iter().any(|s| s == name) {
                        subdirs.push(name.to_owned());
                    }
                }
            }
        }
        Ok(Root { dirs })
    }

    /// Every piece it names, itself excluded.
    pub(super) fn pieces(&self) -> impl Iterator<Item = &str> {
        self.dirs.values().filter_map(|s| s.piece.as_deref())
    }

    /// How many files the snapshot holds.
    pub(super) fn files(&self) -> u64 {
        self.dirs.values().map(|s| s.files).sum()
    }
}

/// The entries of a directory of `shape`: the files of its piece
/// (`files`, already fetched) and its sub-directories, sorted by name
/// byte for byte, as `Storage::list` gives them.
pub(super) fn entries(shape: &Shape, files: Vec<Entry>) -> Vec<Entry> {
    use std::os::unix::ffi::OsStrExt;
    let mut entries = files;
    entries.extend(shape.subdirs.iter().map(|name| Entry {
        name: name.clone(),
        kind: EntryKind::Dir,
        size: 0,
        version: Version::Prefix,
        modified: UNIX_EPOCH,
    }));
    entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    entries
}

/// The files of the piece `digest_named`, fetched (one GET), and what
/// the publisher recorded beside them (JSON), if anything.
pub(super) fn fetch_files(
    storage: &dyn Storage,
    digest_named: &str,
) -> Result<(Vec<Entry>, Option<Vec<u8>>), StorageError> {
    let bytes = fetch(storage, digest_named)?;
    parse_files(&bytes).map_err(|e| StorageError::failed(piece_key(digest_named).to_string(), e))
}

fn parse_files(bytes: &[u8]) -> Result<(Vec<Entry>, Option<Vec<u8>>), Malformed> {
    let v: Value = serde_json::from_slice(bytes).map_err(Malformed::NotJson)?;
    let rows = v["files"].as_array().ok_or(Malformed::Missing("files"))?;
    let beside = match &v["index"] {
        Value::Null => None,
        index => Some(serde_json::to_vec(index).expect("a JSON value")),
    };
    let files = rows
        .iter()
        .map(|f| {
            let bad = || Malformed::Entry {
                of: "file",
                entry: f.to_string(),
            };
            let name = f[0].as_str().ok_or_else(bad)?;
            let size = f[1].as_u64().ok_or_else(bad)?;
            let etag = f[2].as_str().ok_or_else(bad)?.to_string();
            let secs = f[3].as_u64().ok_or_else(bad)?;
            let nanos = f[4].as_u64().ok_or_else(bad)?.min(999_999_999) as u32;
            if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                return Err(bad());
            }
            // No ETag: listed by a store that gives none, told by the
            // size and time the row holds.
            let modified = UNIX_EPOCH + Duration::new(secs, nanos);
            Ok(Entry {
                name: name.into(),
                kind: EntryKind::File,
                size,
                version: Version::of_object(Some(etag), size, modified),
                modified,
            })
        })
        .collect::<Result<Vec<Entry>, Malformed>>()?;
    Ok((files, beside))
}

/// The library's listing as the publisher makes a snapshot of it: its
/// files by directory, a digest of them alone, and the pieces the bucket
/// holds already (from the same listing) with when each was written.
pub struct Listing {
    pub files: u64,
    /// A digest of the listing alone (names, sizes, ETags and times), so
    /// that a publisher tells an unchanged library from the head without
    /// making the pieces.
    pub listed: String,
    dirs: BTreeMap<String, Vec<Entry>>,
    pub(super) stored: HashMap<String, SystemTime>,
}

/// What the publisher records of a directory beside its files: in its
/// piece (a book's persistent-index rows), and in the root, where a mount
/// has it without the piece (a book's figures, made of what its piece
/// holds).
#[derive(Default)]
pub struct Beside {
    pub piece: Option<Value>,
    pub root: Option<Value>,
}

/// A snapshot made of a listing: its root object and every piece, each
/// with its digest.
pub(super) struct Made {
    /// The digest (XXH3-64, hex) of the root object's bytes: what the
    /// head names.
    pub digest: String,
    pub root: Vec<u8>,
    pub pieces: Vec<(String, Vec<u8>)>,
}

/// Lists every file of the library (`Storage::list_all`: a bucket in
/// one LIST per 1,000 keys); the publisher's folder is left out, and its
/// pieces are noted as stored.
pub fn walk(storage: &dyn Storage) -> Result<Listing, StorageError> {
    let mut dirs: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    let mut stored = HashMap::new();
    let mut files = 0u64;
    for (path, e) in storage.list_all()? {
        let key = path.to_string();
        if key.split('/').next() == Some(OWN_FOLDER) {
            let piece = key
                .strip_prefix(PIECES)
                .and_then(|k| k.strip_prefix('/'))
                .and_then(|k| k.strip_suffix(".json"));
            if let Some(digest) = piece {
                stored.insert(digest.to_string(), e.modified);
            }
            continue;
        }
        let dir = Path::new(&key)
            .parent()
            .map_or_else(String::new, |d| d.to_string_lossy().into_owned());
        dirs.entry(dir).or_default().push(e);
        files += 1;
    }
    let mut whole = Vec::new();
    for (dir, entries) in dirs.iter_mut() {
        use std::os::unix::ffi::OsStrExt;
        entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        whole.extend_from_slice(dir.as_bytes());
        whole.push(0);
        whole.extend_from_slice(&files_bytes(entries, None));
    }
    Ok(Listing {
        files,
        listed: digest(&whole),
        dirs,
        stored,
    })
}

impl Listing {
    /// The root and the pieces of this listing, each directory with what
    /// `beside` gives for it (`dir` relative to the library's root, and
    /// its files as listed) in its piece and its row of the root.
    pub(super) fn make(&self, beside: &dyn Fn(&str, &[Entry]) -> Beside) -> Made {
        let mut pieces = Vec::with_capacity(self.dirs.len());
        let mut rows = Vec::with_capacity(self.dirs.len());
        for (dir, entries) in &self.dirs {
            let Beside { piece, root } = beside(dir, entries);
            let bytes = files_bytes(entries, piece);
            let d = digest(&bytes);
            let newest = entries
                .iter()
                .map(|e| e.modified)
                .max()
                .unwrap_or(UNIX_EPOCH);
            let t = newest.duration_since(UNIX_EPOCH).unwrap_or_default();
            let mut row = json!([dir, d, entries.len(), t.as_secs(), t.subsec_nanos()]);
            if let (Some(figures), Some(row)) = (root, row.as_array_mut()) {
                row.push(figures);
            }
            rows.push(row);
            pieces.push((d, bytes));
        }
        let mut root =
            serde_json::to_vec(&json!({ "format": FORMAT, "dirs": rows })).expect("a JSON value");
        root.push(b'\n');
        Made {
            digest: digest(&root),
            root,
            pieces,
        }
    }
}

/// A piece's bytes: one row a file, `[name, size, etag, secs, nanos]`
/// (the ETag empty for a version told by its size and time), and `index`,
/// what the publisher records beside them, when it does.
fn files_bytes(entries: &[Entry], index: Option<Value>) -> Vec<u8> {
    let rows: Vec<Value> = entries
        .iter()
        .map(|e| {
            let etag = match &e.version {
                Version::ETag { etag, .. } => etag.as_str(),
                _ => "",
            };
            let t = e.modified.duration_since(UNIX_EPOCH).unwrap_or_default();
            json!([
                e.name.to_string_lossy(),
                e.size,
                etag,
                t.as_secs(),
                t.subsec_nanos()
            ])
        })
        .collect();
    let mut piece = json!({ "format": FORMAT, "files": rows });
    if let Some(index) = index {
        piece["index"] = index;
    }
    let mut bytes = serde_json::to_vec(&piece).expect("a JSON value");
    bytes.push(b'\n');
    bytes
}
