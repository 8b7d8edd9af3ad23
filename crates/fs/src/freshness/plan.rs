//! What the kernel must drop after changes on disk: a pure function of the
//! changes, the nodes the kernel was given, and which books still exist.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::sync::Arc;

use super::watch::Change;
use crate::node::Node;

/// One thing the kernel must drop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalidation {
    /// The name in the directory (and everything the kernel holds below it).
    Entry { parent: u64, name: OsString },
    /// The inode's attributes and cached bytes (a directory's listing).
    Inode(u64),
}

/// What the kernel must drop after `changes`: only names and inodes it was
/// given (`known`, by node), each by its own name. (Not by dropping a
/// directory's entry: a directory in use is re-attached with its cached
/// children at the next lookup.) `is_book` tells a book that went (or was
/// renamed) from one that is still there. Entries come first, sorted, then
/// inodes by number.
pub(crate) fn plan(
    changes: &[Change],
    known: &HashMap<Node, u64>,
    is_book: impl Fn(&OsStr) -> bool,
) -> Vec<Invalidation> {
    let all = changes.contains(&Change::All);
    let books = all || changes.contains(&Change::Books);
    let mut sets: HashSet<&OsStr> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Chapters(b) => Some(b.as_os_str()),
            _ => None,
        })
        .collect();
    let files: HashSet<(&OsStr, &OsStr)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Chapter(b, f) => Some((b.as_os_str(), f.as_os_str())),
            _ => None,
        })
        .collect();
    // A book that went (or was renamed): everything the kernel holds in it.
    let gone: Vec<Arc<OsStr>> = if books {
        known
            .keys()
            .filter_map(|n| match n {
                Node::Book { book } if !is_book(book) => Some(book.clone()),
                _ => None,
            })
            .collect()
    } else {
        Vec::new()
    };
    sets.extend(gone.iter().map(|b| &**b));
    let mut entries = Vec::new();
    let mut dirs = Vec::new();
    for (node, &ino) in known {
        let affected = all
            || match node.book() {
                // Every chapter counts in the library's index.
                None if matches!(node, Node::BooksIndex { .. }) => {
                    books || !sets.is_empty() || !files.is_empty()
                }
                None => books,
                Some(book) => match node {
                    Node::ChaptersIndex { .. } => {
                        sets.contains(book) || files.iter().any(|(b, _)| *b == book)
                    }
                    // Their bytes depend on one file only.
                    Node::Page { chapter, .. } | Node::ChapterError { chapter, .. } => {
                        files.contains(&(&*chapter.book, &*chapter.file))
                            || gone.iter().any(|b| **b == *book)
                    }
                    Node::Chapter { chapter } => {
                        sets.contains(book) || files.contains(&(&*chapter.book, &*chapter.file))
                    }
                    _ => sets.contains(book),
                },
            };
        if !affected {
            // A book whose chapters changed keeps its name; only its
            // listing and attributes go.
            if let Node::Book { book } = node
                && sets.contains(&**book)
            {
                dirs.push(ino);
            }
            continue;
        }
        if let Some(placement) = node.placement()
            && let Some(&parent) = known.get(&placement.parent)
        {
            entries.push((parent, placement.name));
        }
        if node.is_directory() {
            dirs.push(ino);
        }
    }
    entries.sort();
    dirs.sort();
    entries
        .into_iter()
        .map(|(parent, name)| Invalidation::Entry { parent, name })
        .chain(dirs.into_iter().map(Invalidation::Inode))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::PageName;
    use crate::node::{ROOT_INO, chapter_ref};

    #[test]
    fn a_book_that_went_takes_everything_the_kernel_holds_in_it() {
        let book: Arc<OsStr> = Arc::from(OsStr::new("书"));
        let chapter = chapter_ref(&book, OsStr::new("第1章.md"));
        let page = PageName::parse(b"offset-1.txt").unwrap();
        let known = HashMap::from([
            (Node::Root, ROOT_INO),
            (Node::Book { book: book.clone() }, 2),
            (
                Node::Chapter {
                    chapter: chapter.clone(),
                },
                3,
            ),
            (
                Node::Page {
                    chapter,
                    page,
                    version: 7,
                },
                4,
            ),
        ]);
        let entry = |parent, name: &str| Invalidation::Entry {
            parent,
            name: name.into(),
        };
        assert_eq!(
            plan(&[Change::Books], &known, |_| true),
            [
                entry(ROOT_INO, "书"),
                Invalidation::Inode(ROOT_INO),
                Invalidation::Inode(2)
            ],
            "a book still there: its entry and listing go, not what it holds"
        );
        assert_eq!(
            plan(&[Change::Books], &known, |_| false),
            [
                entry(ROOT_INO, "书"),
                entry(2, "第1章.md"),
                entry(3, "offset-1.txt"),
                Invalidation::Inode(ROOT_INO),
                Invalidation::Inode(2),
                Invalidation::Inode(3),
            ]
        );
        assert_eq!(plan(&[], &known, |_| false), []);
    }
}
