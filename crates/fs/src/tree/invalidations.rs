//! Invalidation planning: what the kernel must drop after changes to the
//! library, over the inodes it was given.

use std::ffi::OsStr;

use crate::freshness::{self, Change, Invalidation};

use super::NovelFs;

impl NovelFs {
    /// What the kernel must drop after `changes` (see `freshness::plan`).
    pub fn invalidations(&self, changes: &[Change]) -> Vec<Invalidation> {
        self.source.changed(changes);
        self.index_files.changed(changes);
        let library = self.library();
        self.plan_invalidations(changes, |book| library.is_book(book))
    }

    /// `invalidations`, with how a book is looked up on disk given. The
    /// plan is made over a snapshot of the inode table, taken and released
    /// before the disk is asked anything: lookups go on meanwhile. (A node
    /// interned after the snapshot was looked up after the change, so it
    /// is already of the new state.)
    fn plan_invalidations(
        &self,
        changes: &[Change],
        is_book: impl Fn(&OsStr) -> bool,
    ) -> Vec<Invalidation> {
        let known = self.inodes.known();
        let mut planned = freshness::plan(changes, &known, is_book);
        // A directory whose listing goes may have names that now resolve:
        // the names it was answered missing go too, before the inodes.
        let directories = planned.iter().filter_map(|i| match i {
            Invalidation::Inode(ino) => Some(*ino),
            Invalidation::Entry { .. } => None,
        });
        let mut missing = self.negatives.take(directories.collect::<Vec<_>>());
        missing.sort();
        let missing = missing
            .into_iter()
            .map(|(parent, name)| Invalidation::Entry { parent, name });
        let first_inode = planned
            .iter()
            .position(|i| matches!(i, Invalidation::Inode(_)))
            .unwrap_or(planned.len());
        planned.splice(first_inode..first_inode, missing);
        planned
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::super::test_fixture::*;
    use super::*;
    use crate::node::{Kind, ROOT_INO};

    #[test]
    fn changes_invalidate_only_what_the_kernel_was_given() {
        let f = fixture(&[("第1章 起.md", "a"), ("第2章 承.md", "b")]);
        let one = || Change::Chapter("书".into(), "第1章 起.md".into());
        assert_eq!(f.fs.invalidations(&[one()]), []);
        let book = walk(&f.fs, "书").unwrap();
        let chapter = walk(&f.fs, "书/第1章 起.md").unwrap();
        walk(&f.fs, "书/第1章 起.md/offset-1.txt").unwrap();
        walk(&f.fs, "书/2/offset-1.json").unwrap();
        let alias = f.fs.lookup(book.ino, OsStr::new("2")).unwrap();
        let second = walk(&f.fs, "书/第2章 承.md").unwrap();
        let entry = |parent, name: &str| Invalidation::Entry {
            parent,
            name: name.into(),
        };
        assert_eq!(
            f.fs.invalidations(&[one()]),
            [
                entry(book.ino, "第1章 起.md"),
                entry(chapter.ino, "offset-1.txt"),
                Invalidation::Inode(chapter.ino)
            ],
            "each page by name: a directory in use keeps its children otherwise"
        );
        let mut set =
            f.fs.invalidations(&[Change::Chapters("书".into()), Change::Chapters("书".into())]);
        set.sort_by_key(|i| format!("{i:?}"));
        let mut expected = vec![
            entry(book.ino, "2"),
            entry(book.ino, "第1章 起.md"),
            entry(book.ino, "第2章 承.md"),
            Invalidation::Inode(book.ino),
            Invalidation::Inode(chapter.ino),
            Invalidation::Inode(second.ino),
        ];
        expected.sort_by_key(|i| format!("{i:?}"));
        assert_eq!(
            set, expected,
            "aliases may resolve anew; pages keep their bytes"
        );
        assert_eq!(alias.kind, Kind::Symlink);
        assert_eq!(
            f.fs.invalidations(&[Change::Books]),
            [
                entry(ROOT_INO, "书"),
                Invalidation::Inode(ROOT_INO),
                Invalidation::Inode(book.ino)
            ]
        );
        std::fs::rename(&f.book_dir, f.book_dir.with_file_name("新书")).unwrap();
        let gone = f.fs.invalidations(&[Change::Books]);
        assert_eq!(
            gone.iter()
                .filter(|i| matches!(i, Invalidation::Entry { .. }))
                .count(),
            6,
            "a renamed book: all it held {gone:?}"
        );
    }

    #[test]
    fn names_answered_missing_go_when_their_directory_changes() {
        use crate::freshness::WATCHED_TTL;
        use crate::tree::Entry;
        let f = fixture(&[("第1章 起.md", "a")]);
        let book = walk(&f.fs, "书").unwrap();
        let missing = |parent, name: &str| f.fs.lookup_entry(parent, OsStr::new(name));
        for name in ["第2章 承.md", "2", "承", ".gitignore"] {
            assert_eq!(
                missing(book.ino, name),
                Ok(Entry::Missing(WATCHED_TTL)),
                "{name}: the book is watched"
            );
        }
        assert_eq!(missing(ROOT_INO, "新书"), Ok(Entry::Missing(WATCHED_TTL)));
        assert!(matches!(missing(book.ino, "1"), Ok(Entry::Found(_))));
        assert!(f.fs.negatives_bytes() > 0);
        let entry = |parent, name: &str| Invalidation::Entry {
            parent,
            name: name.into(),
        };
        let planned = f.fs.invalidations(&[Change::Chapters("书".into())]);
        let first_inode = planned
            .iter()
            .position(|i| matches!(i, Invalidation::Inode(_)))
            .unwrap();
        for name in [".gitignore", "2", "第2章 承.md", "承"] {
            let at = planned.iter().position(|i| *i == entry(book.ino, name));
            assert!(
                at.is_some_and(|at| at < first_inode),
                "{name} in {planned:?}"
            );
        }
        assert!(
            !planned.contains(&entry(ROOT_INO, "新书")),
            "the root is unchanged"
        );
        let again = f.fs.invalidations(&[Change::Chapters("书".into())]);
        assert!(
            !again.contains(&entry(book.ino, "承")),
            "dropped once; a new lookup records it anew"
        );
        assert!(
            f.fs.invalidations(&[Change::Books])
                .contains(&entry(ROOT_INO, "新书"))
        );
        assert_eq!(f.fs.negatives_bytes(), 0);
    }

    /// Nothing pushes the change that adds such a name (a new listing or
    /// snapshot): the kernel must not keep it missing past it.
    #[test]
    fn unwatched_names_answered_missing_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("novels/书")).unwrap();
        let config = crate::FsConfig {
            state_file: Some(dir.path().join("no-state.json")),
            watch: false,
            ttl: std::time::Duration::from_millis(1500),
            ..Default::default()
        };
        let fs = NovelFs::new(novelfs_storage::open_local(dir.path()).unwrap(), config);
        assert_eq!(
            fs.lookup_entry(ROOT_INO, OsStr::new("新书")),
            Ok(crate::tree::Entry::Missing(std::time::Duration::ZERO))
        );
        assert_eq!(fs.negatives_bytes(), 0, "nothing to invalidate later");
    }

    #[test]
    fn a_name_no_chapter_directory_can_hold_is_kept_long_and_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("novels/书")).unwrap();
        std::fs::write(dir.path().join("novels/书/第1章 起.md"), "一").unwrap();
        let config = crate::FsConfig {
            state_file: Some(dir.path().join("no-state.json")),
            watch: false,
            ttl: std::time::Duration::from_millis(1500),
            ..Default::default()
        };
        let fs = NovelFs::new(novelfs_storage::open_local(dir.path()).unwrap(), config);
        let chapter = walk(&fs, "书/1").unwrap();
        let missing = |name: &str| fs.lookup_entry(chapter.ino, OsStr::new(name));
        use crate::tree::Entry::Missing;
        assert_eq!(
            missing(".gitignore"),
            Ok(Missing(crate::freshness::WATCHED_TTL))
        );
        assert_eq!(
            missing("offset-01.txt"),
            Ok(Missing(crate::freshness::WATCHED_TTL))
        );
        assert_eq!(
            missing("offset-9.txt"),
            Ok(Missing(std::time::Duration::ZERO)),
            "a page past the chain appears when the chapter grows"
        );
        assert_eq!(
            missing("ERROR"),
            Ok(Missing(std::time::Duration::ZERO)),
            "ERROR appears when the chapter stops decoding"
        );
        assert_eq!(fs.negatives_bytes(), 0, "nothing to invalidate later");
    }

    #[test]
    fn invalidation_planning_asks_the_disk_without_the_inode_lock() {
        let f = fixture(&[("第1章 起.md", "a")]);
        walk(&f.fs, "书/1/offset-1.txt").unwrap();
        std::fs::rename(&f.book_dir, f.book_dir.with_file_name("新书")).unwrap();
        let asked = AtomicUsize::new(0);
        let locked = AtomicUsize::new(0);
        let planned = f.fs.plan_invalidations(&[Change::Books], |book| {
            asked.fetch_add(1, Ordering::SeqCst);
            if !f.fs.inodes.is_free() {
                locked.fetch_add(1, Ordering::SeqCst);
            }
            f.fs.library().is_book(book)
        });
        assert!(asked.load(Ordering::SeqCst) > 0, "the disk was asked");
        assert_eq!(
            locked.load(Ordering::SeqCst),
            0,
            "the inode table was locked while the disk was asked"
        );
        assert_eq!(planned, f.fs.invalidations(&[Change::Books]));
        assert!(planned.len() >= 3, "{planned:?}");
    }
}
