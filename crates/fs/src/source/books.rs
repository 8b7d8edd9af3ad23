//! The books of `novels/` as one listing that every view shares: the
//! root's listing and `novel_books.*` name the same books at every moment.
//!
//! The listing is taken again when `novels/` has another stamp, when its
//! stamp does not prove the names (`Freshness::trusted`), and at the
//! latest a TTL after it was taken, so that a directory whose times do not
//! move is noticed (`Freshness::books_listed`).

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::cache::Stamp;
use crate::freshness::Freshness;
use crate::lock;
use crate::source::stamp_of;
use novelfs_library::Library;

struct Taken {
    stamp: Stamp,
    names: Arc<Vec<OsString>>,
    /// When `novels/` was listed.
    checked: SystemTime,
}

#[derive(Default)]
pub(crate) struct BookList {
    taken: Mutex<Option<Taken>>,
}

impl BookList {
    /// The book directories of `novels/`, in the order a listing shows
    /// them; the error when `novels/` cannot be listed.
    pub(crate) fn names(
        &self,
        library: &Library,
        freshness: &Freshness,
    ) -> std::io::Result<Arc<Vec<OsString>>> {
        let novels = library.novels_dir();
        let stamp = stamp_of(library, None);
        if let Some(stamp) = stamp
            && let Some(t) = &*lock(&self.taken)
            && t.stamp == stamp
            && freshness.trusted(&stamp, t.checked)
            && t.checked
                .checked_add(freshness.ttl())
                .is_some_and(|until| freshness.now() < until)
        {
            return Ok(t.names.clone());
        }
        let checked = freshness.now();
        let names = match library.book_names() {
            Ok(names) => Arc::new(names),
            Err(e) => {
                *lock(&self.taken) = None;
                return Err(e);
            }
        };
        if let Some(stamp) = stamp {
            let digest = {
                use std::hash::{Hash, Hasher};
                let mut h = novelfs_library::stable_hash::StableHasher::new();
                names.hash(&mut h);
                h.finish()
            };
            freshness.books_listed(&novels, stamp, digest, checked);
            *lock(&self.taken) = Some(Taken {
                stamp,
                names: names.clone(),
                checked,
            });
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::stamp_of_path;
    use std::time::Duration;

    #[test]
    fn every_view_gets_one_listing_until_the_ttl_or_the_stamp_says_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let novels = dir.path().join("novels");
        std::fs::create_dir_all(novels.join("甲")).unwrap();
        let library = novelfs_storage::open_local(dir.path()).unwrap();
        let freshness = Freshness::new(&novels, Duration::from_secs(1), false, None);
        let list = BookList::default();
        let changed = crate::freshness::racy::changed(&stamp_of_path(&novels).unwrap());
        let later = changed + Duration::from_secs(100);
        *lock(&freshness.fake_now) = Some(later);
        let first = list.names(&library, &freshness).unwrap();
        assert_eq!(*first, ["甲"]);
        let again = list.names(&library, &freshness).unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "within the TTL: the same listing"
        );
        std::fs::create_dir(novels.join("乙")).unwrap();
        let after = list.names(&library, &freshness).unwrap();
        assert_eq!(after.len(), 2, "another stamp: listed again");
        *lock(&freshness.fake_now) = Some(later + Duration::from_secs(2));
        let aged = list.names(&library, &freshness).unwrap();
        assert!(!Arc::ptr_eq(&after, &aged), "a TTL later: listed again");
        std::fs::remove_dir_all(&novels).unwrap();
        assert!(list.names(&library, &freshness).is_err(), "gone: the error");
    }
}
