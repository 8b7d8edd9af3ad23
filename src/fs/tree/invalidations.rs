//! Invalidation planning: what the kernel must drop after changes to the
//! library, over the inodes it was given.

use std::ffi::OsStr;

use crate::fs::freshness::{self, Change, Invalidation};

use super::NovelFs;

impl NovelFs {
    /// What the kernel must drop after `changes` (see `freshness::plan`).
    pub fn invalidations(&self, changes: &[Change]) -> Vec<Invalidation> {
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
        freshness::plan(changes, &known, is_book)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::super::fixture::*;
    use super::*;
    use crate::fs::node::{Kind, ROOT_INO};

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
