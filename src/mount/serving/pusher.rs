//! The threads that talk to the kernel unasked: one tells it what to drop
//! whenever the library changes on disk, one stores pages into its page
//! cache ahead of a reader (`novelfs_fs::ahead` decides which).

use std::time::Duration;

use fuser::INodeNo;

use novelfs_fs::{Change, Invalidation, NovelFs, Store, StoreOutcome};

/// Why the kernel refused a notification.
enum Refusal {
    /// ENOENT: it holds no inode (or entry) by that number or name.
    NotHeld,
    /// The connection is gone (unmounted or aborted): the thread ends.
    Gone,
    Other,
}

fn refusal(e: &std::io::Error) -> Refusal {
    match e.raw_os_error() {
        Some(libc::ENOENT) => Refusal::NotHeld,
        Some(libc::EBADF | libc::ENODEV | libc::ENOTCONN) => Refusal::Gone,
        _ => Refusal::Other,
    }
}

/// Stores the pages the tree plans ahead of its readers
/// (FUSE_NOTIFY_STORE), until the connection goes. On a thread of its own:
/// rendering and storing never hold up a request.
pub(crate) fn store_ahead(fs: &NovelFs, notifier: &fuser::Notifier) {
    loop {
        for store in fs.stores_ahead(None) {
            if !send_store(fs, notifier, store) {
                return;
            }
        }
    }
}

/// Stores one page into the kernel's page cache and tells the tree how it
/// went; false when the connection is gone.
pub(crate) fn send_store(fs: &NovelFs, notifier: &fuser::Notifier, store: Store) -> bool {
    let outcome = match notifier.store(INodeNo(store.ino), 0, &store.bytes) {
        Ok(()) => {
            log::debug!(
                "{} ino={:#x} bytes={} path={}",
                novelfs_fs::events::STORED,
                store.ino,
                store.bytes.len(),
                store.path()
            );
            StoreOutcome::Stored
        }
        Err(e) => match refusal(&e) {
            Refusal::NotHeld => StoreOutcome::NotHeld,
            Refusal::Gone => return false,
            Refusal::Other => {
                log::warn!("cannot store {} ahead: {e}", store.path());
                StoreOutcome::Failed
            }
        },
    };
    fs.store_finished(store, outcome);
    true
}

/// Tells the kernel what to drop whenever the watch reports a change, and
/// looks at the switch file every TTL (at most every second).
pub(crate) fn push_changes(fs: &NovelFs, notifier: &fuser::Notifier) {
    let Some(watch) = fs.watch() else { return };
    let poll = fs
        .ttl()
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    loop {
        let mut changes = watch.wait(poll);
        if fs.switch_flipped() {
            changes.push(Change::All);
        }
        if !watch.covers_root() && watch.watch_novels() {
            changes.push(Change::All);
        }
        if changes.is_empty() {
            continue;
        }
        log::debug!("changes: {changes:?}");
        for inv in fs.invalidations(&changes) {
            let sent = match &inv {
                Invalidation::Entry { parent, name } => {
                    notifier.inval_entry(INodeNo(*parent), name)
                }
                Invalidation::Inode(ino) => notifier.inval_inode(INodeNo(*ino), 0, 0),
            };
            if let Err(e) = sent {
                match refusal(&e) {
                    // Nothing cached there to drop.
                    Refusal::NotHeld => {}
                    Refusal::Gone => return,
                    Refusal::Other => log::warn!("cannot invalidate {inv:?}: {e}"),
                }
            }
        }
    }
}
