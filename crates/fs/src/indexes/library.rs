//! `novel_books.*`: the library's index, made from each book's totals,
//! themselves cached by the version of the book.

use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use novelfs_library::NovelError;
use novelfs_library::index::{self, BOOKS_TOOL, BookTotals, LibraryBooks};

use super::look::{BookLook, Look};
use super::rendered::Rendered;
use super::version::{error_version, off_version};
use super::walk::Walk;
use super::{IndexFiles, Key};
use crate::error::Result;
use crate::lock;
use crate::outline::Outlines;
use crate::persist;
use crate::pool::map_spread;
use crate::source::{Source, dir_mtime, stamp_of};

impl IndexFiles {
    /// `novel_books.*` as the sources are now: cached, or made from each
    /// book's totals (themselves cached by the version of the book).
    pub(crate) fn library(
        &self,
        source: &Source,
        outlines: &Outlines,
        on: bool,
    ) -> Result<Rendered> {
        let library = source.library();
        let _novels = library.novels_dir();
        if !on {
            let error = NovelError::ToolSwitchedOff { tool: BOOKS_TOOL };
            let version = off_version(BOOKS_TOOL);
            return Ok(Rendered::failed(version, &error, dir_mtime(library, None)));
        }
        // The books the root lists (one listing for every view), less
        // those the original does not count.
        let mut names: Vec<OsString> = source
            .book_names()
            .map(|names| {
                names
                    .iter()
                    .filter(|n| index::counted_as_book(n))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        // No books: `novels/` may be gone or unreadable (a dead network
        // filesystem), which is an error, not an empty library.
        if names.is_empty()
            && let Some(error) = library.unreadable_dir(None)
        {
            let rendered =
                Rendered::failed(error_version(&error), &error, dir_mtime(library, None));
            self.keep(Key::Library, &rendered);
            return Ok(rendered);
        }
        names.sort();
        // The books the followed snapshot's root counts, from its figures;
        // the others are looked at.
        let (published, names): (Vec<CountedBook>, Vec<OsString>) = {
            let mut published = Vec::new();
            let mut looked = Vec::new();
            for name in names {
                match self.published(library, &name) {
                    Some(counted) => published.push(counted),
                    None => looked.push(name),
                }
            }
            (published, looked)
        };
        // Each book's look costs a LIST in a bucket: they are made ahead
        // of the workers, many at once, rather than one after another.
        library.list_ahead(names.iter().map(|n| n.as_os_str()));
        let novels_stamp = stamp_of(library, None);
        let mut h = novelfs_library::stable_hash::StableHasher::new();
        ("books", &novels_stamp, library.root_display()).hash(&mut h);
        let mut mtime = dir_mtime(library, None);
        // One book per worker at a time, on both CPUs: a look holds the
        // book's index and a metadata per chapter, and the looks of every
        // book held at once would be more than the whole cache budget. A book
        // whose totals are not known for this look is indexed right away,
        // from the same look.
        let counted: Vec<Option<CountedBook>> = map_spread(&names, |name| {
            let book: Arc<OsStr> = Arc::from(name.as_os_str());
            let known_at = |version: u64| {
                lock(&self.totals)
                    .get(&book)
                    .filter(|t| t.0 == version)
                    .map(|t| (t.1, t.2))
            };
            let held = self
                .seen(source, &book)
                .and_then(|seen| Some((seen, known_at(seen.version)?)));
            let (seen, (chapters, chars)) = match held {
                Some(held) => held,
                None => {
                    let reports = self.reports();
                    // A book that cannot be scanned is left out, as the
                    // original leaves it out.
                    let look = BookLook::take(source, &book).ok()?;
                    let seen = Look::of(&look);
                    self.saw(source, &book, reports, seen);
                    // Only the totals: the book's own index is rendered
                    // when it is read.
                    let counts = known_at(seen.version).unwrap_or_else(|| {
                        self.walk_settled(source, outlines, &book, look, Walk::Library)
                            .totals()
                    });
                    (seen, counts)
                }
            };
            Some(CountedBook {
                totals: BookTotals {
                    name: book.to_string_lossy().into_owned(),
                    chapters,
                    chars,
                },
                book,
                seen,
            })
        });
        let totals: Vec<BookTotals> = counted
            .into_iter()
            .flatten()
            .chain(published)
            .map(|counted| {
                (&counted.book, counted.seen.version).hash(&mut h);
                mtime = mtime.max(counted.seen.newest);
                counted.totals
            })
            .collect();
        let version = h.finish();
        if let Some(hit) = self.cached_library(version) {
            return Ok(hit);
        }
        let books = LibraryBooks::new(library.root_display().to_string(), totals);
        let rendered = Rendered {
            version,
            text: Arc::new(books.text().into_bytes()),
            json: Arc::new(books.json().into_bytes()),
            mtime,
        };
        self.keep(Key::Library, &rendered);
        Ok(rendered)
    }
}

impl IndexFiles {
    /// What `novel_books` counts of `name` from the figures the followed
    /// snapshot's root gives it, when they hold for this mount (see
    /// `persist::published_totals`); its look is then the root's stamp
    /// of the book and its newest file's time, as its listing gives them.
    fn published(&self, library: &novelfs_library::Library, name: &OsStr) -> Option<CountedBook> {
        let published = library.published_figures(name)?;
        let profile = *self.profile.get_or_init(|| persist::profile_of(library));
        let (chapters, chars) = persist::published_totals(&published.figures, profile, library)?;
        let book: Arc<OsStr> = Arc::from(name);
        Some(CountedBook {
            totals: BookTotals {
                name: name.to_string_lossy().into_owned(),
                chapters,
                chars,
            },
            book,
            seen: Look {
                version: published.stamp,
                newest: published.newest,
            },
        })
    }
}

/// What `novel_books` counts of one book, of one look at it (or of the
/// figures a published snapshot's root gives it).
struct CountedBook {
    book: Arc<OsStr>,
    seen: Look,
    totals: BookTotals,
}
