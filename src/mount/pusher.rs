//! The thread that tells the kernel what to drop whenever the library
//! changes on disk.

use std::time::Duration;

use fuser::INodeNo;

use crate::fs::{Change, Invalidation, NovelFs};

/// Tells the kernel what to drop whenever the watch reports a change, and
/// looks at the switch file every TTL (at most every second).
pub(crate) fn push_changes(fs: &NovelFs, notifier: &fuser::Notifier) {
    let Some(watch) = fs.watch() else { return };
    let poll = fs
        .ttl()
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    fs.switch_flipped();
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
            match sent {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EBADF | libc::ENODEV | libc::ENOTCONN)
                    ) =>
                {
                    return;
                }
                Err(e) => log::warn!("cannot invalidate {inv:?}: {e}"),
            }
        }
    }
}
