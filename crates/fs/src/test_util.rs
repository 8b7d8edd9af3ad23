//! Helpers for the unit tests: keeping the panics a test plants on purpose
//! out of the test log, where they would read as failures.

use std::sync::{Mutex, Once};

/// The messages of planted panics; the hook stays quiet for these only.
static PLANTED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// From now on, a panic whose message is exactly `message` prints nothing;
/// every other panic goes to the hook installed before, as always. The
/// panic hook is global to the process and tests run on parallel threads,
/// so the hook is installed once and chosen by the panic's own message,
/// never swapped in and out around one test.
pub fn quiet_panics(message: &'static str) {
    static INSTALL: Once = Once::new();
    PLANTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(message);
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            let planted = crate::lock(&PLANTED);
            if text.is_some_and(|t| planted.contains(&t)) {
                return;
            }
            drop(planted);
            previous(info);
        }));
    });
}

/// Runs each of `cases` (a unit test of the calling test binary and the
/// message of the panic it plants) as the test log runs it (`--nocapture`)
/// and fails if it did not pass exactly once or printed its planted panic.
pub fn assert_planted_panics_stay_quiet(cases: &[(&str, &str)]) {
    for (test, message) in cases {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([test, "--nocapture", "--test-threads=1"])
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{test}: {stdout}{stderr}");
        assert!(
            stdout.contains("1 passed"),
            "{test} ran exactly once: {stdout}"
        );
        assert!(
            !stderr.contains(message) && !stderr.contains("panicked"),
            "{test} printed its planted panic:\n{stderr}"
        );
    }
}

#[cfg(test)]
mod tests {
    /// The tests of this crate that panic on purpose print no panic.
    #[test]
    fn planted_panics_stay_out_of_the_test_log() {
        super::assert_planted_panics_stay_quiet(&[(
            "a_load_that_panics_leaves_the_chapter_loadable",
            "a load fails halfway",
        )]);
    }
}
