//! How each request of a mount runs: on the worker that read it or on a
//! spare thread (`offload`), its reply bounded by the source timeout
//! (`deadline`), a panic turned into EIO. The adapter (`fuse`) only says
//! what a request asks and how its answer is sent.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use fuser::{
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyIoctl, ReplyOpen, ReplyWrite,
};

use super::deadline::{Armed, Asks, Deadlines};
use super::offload::Offload;
use novelfs_fs::Error;

/// Where and for how long the requests of one mount run.
#[derive(Clone)]
pub(crate) struct Runner {
    offload: Offload,
    /// Bounds each request's wait for the library's filesystem.
    deadlines: Deadlines,
}

impl Runner {
    /// For a mount of `source` served by `workers` fuser threads, each
    /// request waiting at most `timeout` for the source.
    pub(crate) fn new(source: String, workers: usize, timeout: Duration) -> Runner {
        Runner {
            offload: Offload::new(workers),
            deadlines: Deadlines::new(source, timeout),
        }
    }

    /// What a request asks (the same lookup, page, listing), so that one
    /// asking what a held request asks fails at once (see `deadline`).
    pub(crate) fn asks(&self, what: &impl std::hash::Hash) -> Asks {
        self.deadlines.asks(what)
    }

    /// Whether a request is waiting on the source past its deadline now.
    pub(crate) fn source_stuck(&self) -> bool {
        self.deadlines.source_stuck()
    }

    /// Runs `job` with `on` where it keeps a worker free for the others
    /// (see `offload`), its reply bounded by the source timeout, or by
    /// `within` (then `fallback` answers). While the source does not
    /// answer, requests run only on spare threads, and fail at once when
    /// every spare thread is taken.
    pub(crate) fn run<C: Clone + Send + 'static, R: Fails>(
        &self,
        on: &C,
        reply: R,
        within: Option<Duration>,
        asks: Asks,
        fallback: impl FnOnce(R) + Send + 'static,
        job: impl FnOnce(&C, &Armed<R>) + Send + 'static,
    ) {
        let Some(armed) = self.deadlines.arm(reply, within, asks, fallback) else {
            return;
        };
        let stuck = self.deadlines.source_stuck();
        if stuck && self.offload.saturated() {
            if let Some(reply) = armed.take() {
                reply.stuck();
            }
            return;
        }
        self.offload.serve(on, !stuck, move |on| {
            armed.running_here();
            job(on, &armed)
        });
    }
}

/// A reply that can be failed with an `Error`: the one place an error
/// becomes the errno the kernel is answered with.
pub(crate) trait Fails: Send + 'static {
    fn fail(self, e: Error);
    /// The answer of a request past its deadline (see `deadline`).
    fn stuck(self)
    where
        Self: Sized,
    {
        self.fail(Error::SourceStuck)
    }
}

macro_rules! fails {
    ($($reply:ty),*) => {$(
        impl Fails for $reply {
            fn fail(self, e: Error) {
                self.error(fuser::Errno::from_i32(e.errno()))
            }
        }
    )*};
}

/// Runs `f` (guarded), then answers the request with `send` if its reply
/// is still its own to give (its deadline has not answered it), or with
/// the errno `f` failed with.
pub(crate) fn answer<T, R: Fails>(
    reply: &Armed<R>,
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T, Error>,
    send: impl FnOnce(R, T),
) {
    let r = guarded(what, f);
    let Some(reply) = reply.take() else { return };
    match r {
        Ok(value) => send(reply, value),
        Err(e) => reply.fail(e),
    }
}

fails!(
    ReplyEntry,
    ReplyAttr,
    ReplyData,
    ReplyOpen,
    ReplyDirectory,
    ReplyDirectoryPlus,
    ReplyEmpty,
    ReplyIoctl,
    ReplyWrite,
    ReplyCreate
);

/// Runs `f`, turning a panic into EIO (logged with what was being served).
pub(crate) fn guarded<T>(
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log::error!("panic while serving {}: {msg}", what());
            Err(Error::Panicked)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The handler panic planted below prints nothing in the test log.
    #[test]
    fn planted_panics_stay_out_of_the_test_log() {
        novelfs_fs::test_util::assert_planted_panics_stay_quiet(&[(
            "a_panic_in_a_handler_becomes_eio",
            "boom",
        )]);
    }

    #[test]
    fn a_panic_in_a_handler_becomes_eio() {
        novelfs_fs::test_util::quiet_panics("boom");
        let errno = |e: Error| fuser::Errno::from_i32(e.errno());
        let r: Result<(), Error> = guarded(
            || "read /书/第1章.md/offset-1.txt".into(),
            || panic!("boom"),
        );
        assert_eq!(r.map_err(errno), Err(fuser::Errno::EIO));
        let r: Result<u8, Error> = guarded(
            || unreachable!("only built on panic"),
            || Err(Error::NotFound),
        );
        assert_eq!(r.map_err(errno), Err(fuser::Errno::ENOENT));
        assert_eq!(guarded(String::new, || Ok(7)), Ok(7));
    }
}
