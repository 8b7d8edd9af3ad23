//! The head of a published snapshot asked for at mount, beside the
//! mount's check.

use std::sync::{Arc, Mutex};

use super::super::snapshot::{self, Head};
use crate::{Storage, StorageError};
use novelfs_kit::cause::Chain;
use novelfs_kit::lock;

/// The head of a published snapshot, asked for on a thread of its own
/// beside the mount's check, so that the mount is ready without waiting
/// for it: whoever needs it first (a listing, the published index) waits
/// for what is left of its round trip.
pub struct PendingHead {
    state: Mutex<Pending>,
}

enum Pending {
    Asking(std::thread::JoinHandle<Result<Option<Head>, StorageError>>),
    Answered(Result<Option<Head>, StorageError>),
}

impl PendingHead {
    /// Asks `storage` for the head now; `None` when no thread could.
    pub fn ask(storage: Arc<dyn Storage>) -> Option<Arc<PendingHead>> {
        let thread = novelfs_kit::thread::spawn("novelfs-head", Some(256 << 10), move || {
            snapshot::published_head(&*storage)
        })
        .ok()?;
        Some(Arc::new(PendingHead {
            state: Mutex::new(Pending::Asking(thread)),
        }))
    }

    /// The head, once answered (`None`: none published, or the question
    /// failed, which is logged).
    pub fn get(&self) -> Option<Head> {
        self.asked().ok().flatten()
    }

    /// The head, once answered: `None` when none is published, an error
    /// (logged, once) when the question failed.
    pub fn asked(&self) -> Result<Option<Head>, StorageError> {
        let mut state = lock(&self.state);
        let head = match std::mem::replace(&mut *state, Pending::Answered(Ok(None))) {
            Pending::Answered(head) => head,
            Pending::Asking(thread) => match thread.join() {
                Ok(Ok(head)) => Ok(head),
                Ok(Err(e)) => {
                    log::warn!("no published snapshot followed: {}", Chain(&e));
                    Err(e)
                }
                Err(_) => Err(StorageError::other("the question for the head panicked")),
            },
        };
        *state = Pending::Answered(head.clone());
        head
    }
}
