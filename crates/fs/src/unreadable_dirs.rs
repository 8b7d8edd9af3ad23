//! The sources the daemon cannot serve (a `novels/` gone or unreadable, a
//! book directory it may not list), logged once when they go and once
//! when they come back, however often they are asked for meanwhile.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::lock;

#[derive(Default)]
pub(crate) struct UnreadableDirs {
    paths: Mutex<HashSet<String>>,
    /// Whether `paths` may hold anything: a readable source costs a load.
    any: AtomicBool,
}

impl UnreadableDirs {
    /// `path` cannot be served, because of `why`; logged the first time.
    pub(crate) fn cannot_read(&self, path: &str, why: &dyn std::fmt::Display) {
        if lock(&self.paths).insert(path.to_string()) {
            self.any.store(true, Ordering::Relaxed);
            log::info!("gave up on {path}: {why}");
        }
    }

    /// `path` is served again; logged if it could not be read before.
    pub(crate) fn readable_again(&self, path: &str) {
        if !self.any.load(Ordering::Relaxed) {
            return;
        }
        let mut paths = lock(&self.paths);
        if paths.remove(path) {
            log::info!("{path} can be read again");
        }
        self.any.store(!paths.is_empty(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_is_logged_once_until_it_can_be_read_again() {
        let g = UnreadableDirs::default();
        g.cannot_read("/lib/novels", &"gone");
        g.cannot_read("/lib/novels", &"gone");
        assert_eq!(lock(&g.paths).len(), 1);
        g.readable_again("/lib/novels/书");
        assert!(g.any.load(Ordering::Relaxed));
        g.readable_again("/lib/novels");
        assert!(!g.any.load(Ordering::Relaxed));
        assert!(lock(&g.paths).is_empty());
    }
}
