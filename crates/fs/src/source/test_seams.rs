//! Where tests step into a request: code run at a point of a chapter's
//! look or load, to make an interleaving happen there deterministically.

use super::Source;
use crate::node::ChapterId;

/// Code a test runs at a point of a request, to make an interleaving with
/// an edit or another request happen there, deterministically.
pub(crate) type Seam = Box<dyn Fn(&ChapterId) + Send + Sync>;

#[derive(Default)]
pub(crate) struct Seams {
    /// Before a chapter's source is looked at (its `lstat`).
    pub before_stat: Option<Seam>,
    /// In a load that was let in, before the file is opened.
    pub loading: Option<Seam>,
    /// When a request waits for another request's load of the chapter.
    pub joined: Option<Seam>,
}

impl Source {
    pub(crate) fn at(&self, seam: fn(&Seams) -> &Option<Seam>, c: &ChapterId) {
        if let Some(run) = self.seams.get().and_then(|s| seam(s).as_ref()) {
            run(c);
        }
    }
}
