//! Writes outlines to the persistent index off the request path: requests
//! hand them to a bounded queue (one that is full drops them: the next
//! mount computes them again) and one thread writes them in batches, one
//! transaction each.

use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::rows::{Record, write_batch};

/// Records written in one transaction at most.
const BATCH: usize = 512;

pub(crate) struct Recorder {
    queue: Option<SyncSender<Record>>,
    thread: Option<JoinHandle<()>>,
}

impl Recorder {
    pub(crate) fn start(
        conn: Connection,
        profile: i64,
        granularity: Duration,
        queue: usize,
    ) -> Recorder {
        let (tx, rx) = sync_channel(queue);
        let thread = novelfs_kit::thread::spawn("novelfs-index", None, move || {
            write_all(conn, profile, granularity, rx)
        })
        .ok();
        Recorder {
            queue: Some(tx),
            thread,
        }
    }

    /// Queues an outline to store; never blocks.
    pub(crate) fn record(&self, record: Record) {
        if let Some(queue) = &self.queue
            && let Err(TrySendError::Full(_)) = queue.try_send(record)
        {
            log::debug!("index writer busy: an outline is left for a later mount");
        }
    }
}

impl Drop for Recorder {
    /// Writes what is queued before the mount ends.
    fn drop(&mut self) {
        self.queue.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_all(mut conn: Connection, profile: i64, granularity: Duration, rx: Receiver<Record>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        if let Err(e) = write_batch(&mut conn, profile, granularity, &batch) {
            log::info!("index: {} outlines not stored: {e}", batch.len());
        }
    }
}
