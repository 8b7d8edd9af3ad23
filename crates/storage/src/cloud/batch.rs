//! Many GETs of a bucket in flight within a count and a byte bound, their
//! results handed over in the order asked (`Storage::read_many`).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::BucketStorage;
use crate::{InFlight, Object, ReadRequest, StorageError};

/// Bytes are counted against the budget in KiB, so that a budget of many
/// GiB fits a semaphore's `u32` acquisitions.
const UNIT: u64 = 1024;

type Done = (
    Result<Object, StorageError>,
    OwnedSemaphorePermit,
    OwnedSemaphorePermit,
);

pub(super) struct ReadManyIter<'a> {
    storage: &'a BucketStorage,
    results: std::sync::mpsc::Receiver<tokio::task::JoinHandle<Done>>,
    driver: tokio::task::JoinHandle<()>,
}

impl<'a> ReadManyIter<'a> {
    pub(super) fn start(
        storage: &'a BucketStorage,
        requests: Vec<ReadRequest>,
        limits: InFlight,
    ) -> Self {
        let count = Arc::new(Semaphore::new(limits.requests.max(1)));
        let budget_units = limits.bytes.div_ceil(UNIT).clamp(1, u32::MAX as u64);
        let bytes = Arc::new(Semaphore::new(budget_units as usize));
        let (tx, rx) = std::sync::mpsc::channel();
        let access = storage.access();
        let driver = storage.rt.spawn(async move {
            for r in requests {
                let size = r.size().unwrap_or(InFlight::UNKNOWN_SIZE);
                let units = size.div_ceil(UNIT).clamp(1, budget_units) as u32;
                let Ok(c) = count.clone().acquire_owned().await else {
                    return;
                };
                let Ok(b) = bytes.clone().acquire_many_owned(units).await else {
                    return;
                };
                let access = access.clone();
                let task = tokio::spawn(async move {
                    let result = access.read(&r.path, r.version, r.range).await;
                    (result, c, b)
                });
                if tx.send(task).is_err() {
                    return;
                }
            }
        });
        ReadManyIter {
            storage,
            results: rx,
            driver,
        }
    }
}

impl Iterator for ReadManyIter<'_> {
    type Item = Result<Object, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        let task = self.results.recv().ok()?;
        match self.storage.rt.block_on(task) {
            // The permits go back as the result is handed over.
            Ok((result, _count, _bytes)) => Some(result),
            Err(e) => Some(Err(StorageError::failed("a read of the batch failed", e))),
        }
    }
}

impl Drop for ReadManyIter<'_> {
    fn drop(&mut self) {
        self.driver.abort();
        while let Ok(task) = self.results.try_recv() {
            task.abort();
        }
    }
}
