//! `novelfs index`: the library's persistent index built or refreshed,
//! and with `--publish` written into the library's bucket beside a
//! snapshot of its listing, for every mount of a fleet (`--every`: the
//! fleet's one publisher, round after round).

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;

use super::commands::{ONE_SHOT_TIMEOUT, open_library};
use super::flags::args::IndexCmd;
use super::out::Written;
use super::root_check::LibraryRoot;
use crate::mount::library_at::LibraryAt;
use crate::mount::logging;
use novelfs_fs::{events, persist};
use novelfs_kit::cause::{Chain, Failed, Failure};
use novelfs_storage::StorageError;
use novelfs_storage::backing::snapshot;

/// Publishes beside the library `root` names in its bucket, for every mount of a
/// fleet, with the cadence `every`: the library is listed (one LIST per
/// 1,000 keys); when `always` or when the listing differs from the one
/// published, `index` gives the persistent index's rows of each book
/// (`persist::rows_by_book`), written in the book's piece with the
/// book's figures in the root (`persist::book_figures`), else the
/// snapshot published is only confirmed (see
/// `novelfs_storage::backing::snapshot`). Whether a new snapshot was
/// written, and how many files it holds.
fn publish(
    root: &LibraryRoot,
    every: Option<u64>,
    always: bool,
    index: impl FnOnce() -> Result<HashMap<String, serde_json::Value>, Failure>,
) -> Result<(bool, u64), Failure> {
    let LibraryAt::Bucket(url) = &root.at else {
        return Err("--publish: ROOT must be a bucket (s3://, gs:// or az://)".into());
    };
    let storage = LibraryAt::storage(url, &root.store)?;
    let fail = |e: StorageError| Failed::by(url.to_string(), e);
    let before = snapshot::head_to_replace(&storage).map_err(fail)?;
    let listing = snapshot::walk(&storage).map_err(fail)?;
    let files = listing.files;
    if let Some(h) = before.as_ref()
        && !always
        && snapshot::unchanged(&listing, Some(h))
    {
        snapshot::confirm(&storage, h, every).map_err(fail)?;
        return Ok((false, files));
    }
    let rows = index()?;
    // A book's rows go in its piece, and its figures (what `novel_books`
    // prints of it, made of those rows) in the root.
    let beside = |dir: &str, files: &[novelfs_storage::Entry]| snapshot::Beside {
        piece: rows.get(dir).cloned(),
        root: rows
            .get(dir)
            .and_then(|rows| persist::book_figures(dir, files, rows)),
    };
    let changed =
        snapshot::publish(&storage, listing, &beside, before.as_ref(), every).map_err(fail)?;
    Ok((changed, files))
}

/// `index --publish --every SECONDS`: the fleet's one publisher. Each
/// round lists the library; when it changed since the snapshot, the index
/// is refreshed and both are published anew, else the snapshot is only
/// confirmed. A round that fails is said and the next one tries again.
fn keep_publishing(cmd: &IndexCmd, root: &LibraryRoot, dir: &Path, every: u64) -> ExitCode {
    for n in 1.. {
        std::thread::sleep(std::time::Duration::from_secs(every));
        let round = || -> Result<String, Failure> {
            // The index is refreshed and written only when the listing
            // changed since the snapshot published.
            let index = || {
                let mut library = open_library(root, cmd.path_root.as_deref())?;
                library.max_chapter_bytes = cmd.max_chapter_bytes;
                persist::refresh(&library, dir, &mut |_| {})?;
                Ok(persist::rows_by_book(dir, &library)?)
            };
            let (changed, files) = publish(root, Some(every), false, index)?;
            Ok(match changed {
                true => format!("changed: the index and a snapshot of {files} files published"),
                false => "unchanged: the snapshot is confirmed".into(),
            })
        };
        let outcome = while_saying_a_stall(n, round);
        let said = match &outcome {
            Ok(said) => {
                log::info!("round {n}: {said}");
                "done"
            }
            Err(e) => {
                log::warn!("round {n} failed: {}", Chain(&**e));
                "failed"
            }
        };
        log::debug!("{} n={n} outcome={said}", events::PUBLISH_ROUND);
    }
    ExitCode::SUCCESS
}

/// How long a round waits on the bucket before the log says so: a round
/// answered takes well under a second, and one that stalls is bounded by
/// `ONE_SHOT_TIMEOUT` per request, silent that long otherwise.
const STALL_SAID_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// `round` run as round `n`, the log saying once, after `STALL_SAID_AFTER`,
/// that it still waits.
fn while_saying_a_stall<T>(n: u64, round: impl FnOnce() -> T) -> T {
    let (done, waiting) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            if waiting.recv_timeout(STALL_SAID_AFTER)
                == Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            {
                log::warn!(
                    "round {n} waiting on the bucket for {} s (each request is given up after {} s)",
                    STALL_SAID_AFTER.as_secs(),
                    ONE_SHOT_TIMEOUT.as_secs()
                );
                log::debug!("{} n={n}", events::ROUND_WAITING);
            }
        });
        let result = round();
        drop(done);
        result
    })
}

/// `index`: builds or refreshes the library's persistent index, with a
/// progress bar on a terminal and a line per book otherwise, then a
/// summary on stdout.
pub(crate) fn index(cmd: IndexCmd, root: LibraryRoot) -> ExitCode {
    use std::io::IsTerminal;
    // The publisher (`--every`) runs for days: its log is the mount's,
    // each line with its time; a one-shot run speaks plainly.
    let publisher = cmd.every.is_some();
    if publisher {
        logging::init(logging::Sink::Stderr);
    }
    let say = |line: &str| match publisher {
        true => log::info!("{line}"),
        false => super::out::say(line),
    };
    let fail = |line: &str| match publisher {
        true => log::error!("{line}"),
        false => super::out::say(&format!("novelfs: {line}")),
    };
    let mut library = match open_library(&root, cmd.path_root.as_deref()) {
        Ok(library) => library,
        Err(e) if publisher => {
            log::error!("{}", e.error_line().trim_end());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            super::out::say(&e.error_line());
            return ExitCode::FAILURE;
        }
    };
    library.max_chapter_bytes = cmd.max_chapter_bytes;
    let dir = match cmd
        .index_dir
        .clone()
        .map_or_else(super::mount_config::default_index_dir, Ok)
    {
        Ok(dir) => dir,
        Err(_) => {
            fail("no index folder: set XDG_CACHE_HOME or HOME, or give --index-dir");
            return ExitCode::FAILURE;
        }
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} chapters, {elapsed} (eta {eta})",
            )
            .expect("a valid template"),
        );
        bar
    });
    let mut progress = |step: persist::Step| match (&bar, step) {
        (Some(bar), persist::Step::Start { chapters }) => bar.set_length(chapters),
        (Some(bar), persist::Step::Chapter) => bar.inc(1),
        (None, persist::Step::Start { chapters }) => say(&format!("{chapters} chapters")),
        (None, persist::Step::Book { name, done }) => say(&format!("{done} done: {name}")),
        _ => {}
    };
    let result = persist::refresh(&library, &dir, &mut progress).map_err(Failure::from);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let result = result.and_then(|summary| {
        if cmd.publish {
            let index = || Ok(persist::rows_by_book(&dir, &library)?);
            let (_, files) = publish(&root, cmd.every, true, index)?;
            say(&format!(
                "published at {}/.novelfs/: the index and a snapshot of {files} files",
                cmd.root.display()
            ));
        }
        Ok(summary)
    });
    match result {
        Ok(s) => {
            let mut line = format!(
                "{}: {} chapters indexed, {} reused, {} removed",
                s.file.display(),
                s.indexed,
                s.reused,
                s.removed
            );
            if s.unreadable > 0 {
                line += &format!(", {} unreadable", s.unreadable);
            }
            if s.too_recent > 0 {
                line += &format!(", {} changed too recently to record", s.too_recent);
            }
            let written =
                super::out::emit(&format!("{line} in {:.2} s\n", s.elapsed.as_secs_f64()));
            match (cmd.every, written) {
                // The publisher's work is the bucket's, not this line:
                // a reader gone from stdout does not stop it.
                (Some(every), Written::Whole | Written::Closed) => {
                    keep_publishing(&cmd, &root, &dir, every)
                }
                (_, written) => written.code(),
            }
        }
        Err(e) => {
            fail(&Chain(&*e).to_string());
            ExitCode::FAILURE
        }
    }
}
