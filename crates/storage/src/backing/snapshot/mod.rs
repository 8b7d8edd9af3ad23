//! A bucket library's published snapshot: its whole listing (every key
//! with its size, ETag and time) written beside it by the one publisher
//! of a fleet (`novelfs index … --publish`), so that every mount serves
//! names, sizes and versions from it and issues no LIST.
//!
//! Under `.novelfs/`: the head `snapshot.json`, small, rewritten at every
//! confirmation, naming the snapshot's root object by its digest, when it
//! was made, when the publisher last confirmed it and the cadence it
//! promised; and the snapshot's pieces (`pieces`), each stored under its
//! digest: the root object, naming every directory that holds files with
//! the digest of its piece, and one piece per such directory, with what the
//! publisher records beside its files (a book's outlines: a mount that
//! reads a book has them with its listing, and fetches nothing of the
//! books it does not read). A mount asks
//! for the head once per check period with `If-None-Match` (a 304 while
//! nothing changed), fetches the root when the head names another, and a
//! directory's piece the first time the directory is asked for
//! (`view`); a piece it holds is never fetched again. A head whose root is
//! not there yet (a publisher between its PUTs) is asked for again at the
//! next check.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use novelfs_library::stable_hash::stable_hash_bytes;
use serde_json::{Value, json};

use crate::{RelPath, Storage, StorageError, Version};

mod malformed;
mod pieces;
mod view;

pub use malformed::Malformed;
pub use pieces::{Beside, Listing, PIECES, walk};
pub use view::Snapshot;

/// The head, relative to the library's root.
pub const HEAD: &str = ".novelfs/snapshot.json";

/// The folder the publisher writes in: never part of the library.
pub const OWN_FOLDER: &str = ".novelfs";

/// The layout of the head and the pieces; a mount follows only its own
/// (1, one listing of the whole library in one object, and 2, the
/// persistent index published whole beside the pieces, are not followed).
pub(super) const FORMAT: u64 = 3;

/// How long a piece no snapshot names any more is kept, at least, for
/// the mounts that read an older root and have yet to fetch it.
const GRACE: Duration = Duration::from_secs(600);

/// What the head says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The head object's ETag: what the next check sends as
    /// `If-None-Match`.
    pub etag: String,
    /// The digest (XXH3-64, hex) of the root object's bytes: its name
    /// among the pieces.
    pub root: String,
    /// How many files the snapshot holds.
    pub files: u64,
    /// A digest of the listing the snapshot was made of (`Listing::listed`).
    pub listing: String,
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
    fn parse(bytes: &[u8], etag: String) -> Result<Head, Malformed> {
        let v: Value = serde_json::from_slice(bytes).map_err(Malformed::NotJson)?;
        if v["format"].as_u64() != Some(FORMAT) {
            return Err(Malformed::Format {
                found: v["format"].to_string(),
            });
        }
        let field = |name: &'static str| v[name].as_u64().ok_or(Malformed::Missing(name));
        Ok(Head {
            etag,
            root: v["root"]
                .as_str()
                .ok_or(Malformed::Missing("root"))?
                .to_string(),
            files: field("files")?,
            listing: v["listing"]
                .as_str()
                .ok_or(Malformed::Missing("listing"))?
                .to_string(),
            published: field("published")?,
            confirmed: field("confirmed")?,
            every: v["every"].as_u64(),
        })
    }

    fn to_json(&self) -> Vec<u8> {
        let v = json!({
            "format": FORMAT,
            "root": self.root,
            "files": self.files,
            "listing": self.listing,
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

pub(super) fn rel(key: &str) -> RelPath {
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
        .map_err(|e| StorageError::failed(HEAD, e))
}

pub(super) fn digest(bytes: &[u8]) -> String {
    format!("{:016x}", stable_hash_bytes(bytes))
}

/// The head a publisher publishes over: `None` when none is published or
/// the one published is not of this format (an older novelfs's, which
/// this snapshot replaces whole).
pub fn head_to_replace(storage: &dyn Storage) -> Result<Option<Head>, StorageError> {
    let object = match storage.read(&rel(HEAD), None) {
        Ok(object) => object,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let etag = match object.version {
        Version::ETag { etag, .. } => etag,
        _ => String::new(),
    };
    Ok(Head::parse(&object.bytes, etag).ok())
}

/// The head published now, `None` when there is none.
pub fn published_head(storage: &dyn Storage) -> Result<Option<Head>, StorageError> {
    match read_head(storage, None) {
        Ok(head) => Ok(head),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `listing` is the listing the snapshot `before` was made of:
/// then it is only confirmed (`confirm`), nothing made again.
pub fn unchanged(listing: &Listing, before: Option<&Head>) -> bool {
    before.is_some_and(|h| h.listing == listing.listed)
}

/// Confirms the snapshot `before` names, with the cadence `every`: its
/// head written again, confirmed now.
pub fn confirm(
    storage: &dyn Storage,
    before: &Head,
    every: Option<u64>,
) -> Result<(), StorageError> {
    let head = Head {
        confirmed: unix_now(),
        every,
        ..before.clone()
    };
    storage.put(&rel(HEAD), head.to_json())
}

/// Publishes `listing`, each directory with what `beside` gives for it
/// (see `Listing::make`), with the cadence `every` (seconds), over
/// `before` (the head published, if any): the pieces the bucket does not
/// hold yet (only those that changed, since each is stored under its
/// digest) and the head always (its confirmation). The pieces go first,
/// so a head never names a root that is not there. Pieces that neither
/// this snapshot nor `before`'s names, written more than `GRACE` ago, are
/// removed. Whether the snapshot changed.
pub fn publish(
    storage: &dyn Storage,
    listing: Listing,
    beside: &dyn Fn(&str, &[crate::Entry]) -> Beside,
    before: Option<&Head>,
    every: Option<u64>,
) -> Result<bool, StorageError> {
    let now = unix_now();
    let made = listing.make(beside);
    let same = before.is_some_and(|h| h.root == made.digest);
    let mut named: HashSet<&str> = made.pieces.iter().map(|(d, _)| d.as_str()).collect();
    named.insert(&made.digest);
    let missing: Vec<(&str, &[u8])> = made
        .pieces
        .iter()
        .map(|(d, bytes)| (d.as_str(), bytes.as_slice()))
        .chain([(made.digest.as_str(), made.root.as_slice())])
        .filter(|(d, _)| !listing.stored.contains_key(*d))
        .collect();
    put_all(storage, &missing)?;
    let head = Head {
        etag: String::new(),
        root: made.digest.clone(),
        files: listing.files,
        listing: listing.listed.clone(),
        published: match before {
            Some(h) if same => h.published,
            _ => now,
        },
        confirmed: now,
        every,
    };
    storage.put(&rel(HEAD), head.to_json())?;
    // The pieces the snapshot before names stay a round longer: a mount
    // that read its root may still fetch them.
    let before_root = match before {
        Some(h) if h.root != made.digest && listing.stored.contains_key(&h.root) => {
            match pieces::Root::fetch(storage, &h.root) {
                Ok(root) => Some((h, root)),
                // What it names is not known: nothing is removed this round.
                Err(_) => return Ok(!same),
            }
        }
        _ => None,
    };
    if let Some((h, root)) = &before_root {
        named.extend(root.pieces());
        named.insert(&h.root);
    }
    let old = SystemTime::now() - GRACE;
    for (digest, written) in &listing.stored {
        if !named.contains(digest.as_str())
            && *written < old
            && let Err(e) = storage.delete(&pieces::piece_key(digest))
        {
            log::warn!("a piece no snapshot names is left in place: {e}");
        }
    }
    Ok(!same)
}

/// PUTs of at most this many pieces in flight: a first snapshot of a big
/// library writes a piece per book.
const PUTS_IN_FLIGHT: usize = 16;

/// Writes each of `pieces` under its digest, `PUTS_IN_FLIGHT` at once;
/// the first failure, once every PUT ended.
fn put_all(storage: &dyn Storage, pieces: &[(&str, &[u8])]) -> Result<(), StorageError> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..PUTS_IN_FLIGHT.min(pieces.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((digest, bytes)) = pieces.get(i) else {
                        return;
                    };
                    if let Err(e) = storage.put(&pieces::piece_key(digest), bytes.to_vec()) {
                        failed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(e);
                        return;
                    }
                }
            });
        }
    });
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
