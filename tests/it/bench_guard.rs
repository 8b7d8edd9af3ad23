//! The benchmark's regression guard (`scripts/bench_regress.py`) on result
//! files written for it into a git repository of their own: a figure of
//! novelfs worse past the tolerance fails the check (exit 3), the zero-work
//! floor's own rows never do, the cold grep is judged against the floor of
//! its own run (and no other row that names a cold grep stands for it), and
//! only a committed quiet result of the same command is compared with.

use std::path::{Path, PathBuf};
use std::process::Command;

const COLD: &str = "[io_uring] whole library (200000 chapters): grep -r WORD (found nowhere), \
                    cold (fresh mount, sources cached), vs the same grep over the sources";
const WARM: &str =
    "[io_uring] whole library: the same grep again on that mount (warm) vs over the sources";
const FLOOR_COLD: &str = "[io_uring] floor: cold grep -r over a FUSE server doing no work, \
                          the same files and bytes, vs the grep over the sources";
const FLOOR_WARM: &str =
    "[io_uring] floor: the same grep again (warm) vs the grep over the sources";
const WHOLELIB: &str = "scripts/bench.sh --wholelib --runs 1";

/// The figures of one whole-library run the guard reads: the cold grep
/// (novelfs's time, its ratio to the sources), the warm one's ratio, and
/// the floor's two.
#[derive(Clone, Copy)]
struct Run {
    cold: (&'static str, f64),
    warm: f64,
    floor_cold: (&'static str, f64),
    floor_warm: f64,
}

/// A run as one at ab95d49 measured it: novelfs's cold grep 0.56x the floor's.
const RUN: Run = Run {
    cold: ("21.380 s", 20.34),
    warm: 3.79,
    floor_cold: ("38.002 s", 34.37),
    floor_warm: 3.79,
};

/// A result file as `scripts/bench.sh` writes it: its header and its table.
fn result(command: &str, load: f64, run: Run) -> String {
    result_with(command, load, run, &[])
}

/// `result` with more rows after the four (figure, time, ratio).
fn result_with(command: &str, load: f64, run: Run, more: &[(&str, &str, f64)]) -> String {
    let mut s = format!(
        "source:  measured by scripts/bench.sh\ncommand: {command}\n\
         load:    start: 08:45:46 up  4:25,  0 user,  load average: {load:.2}, 0.31, 1.16\n\n\
         | figure | novelfs | baseline | ratio | target | result |\n\
         |---|---|---|---|---|---|\n"
    );
    let rows = [
        (COLD, run.cold.0, run.cold.1),
        (WARM, "4.372 s", run.warm),
        (FLOOR_COLD, run.floor_cold.0, run.floor_cold.1),
        (FLOOR_WARM, "4.277 s", run.floor_warm),
    ];
    for &(figure, time, ratio) in rows.iter().chain(more) {
        s += &format!("| {figure} | {time} | 1.000 s | {ratio:.2}× | ≤ 8× | FAIL |\n");
    }
    s
}

/// A results directory in a git repository of its own.
struct Results {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Results {
    fn new() -> Results {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results");
        std::fs::create_dir(&path).unwrap();
        git(dir.path(), &["init", "-q"]);
        Results { _dir: dir, path }
    }

    /// Writes a result file; `committed` ones are added to git and committed.
    fn write(&self, name: &str, text: &str, committed: bool) -> PathBuf {
        let file = self.path.join(name);
        std::fs::write(&file, text).unwrap();
        if committed {
            git(&self.path, &["add", name]);
            git(&self.path, &["commit", "-q", "-m", name]);
        }
        file
    }

    /// The guard's exit status for `now` against this directory.
    fn check(&self, now: &Path) -> i32 {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_regress.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg(now)
            .arg(&self.path)
            .output()
            .expect("python3 runs the guard");
        let code = out.status.code().expect("the guard exits");
        assert!(
            code == 0 || code == 3,
            "the guard failed to run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        code
    }
}

/// git, with no configuration of the machine's or the user's.
fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

const REGRESSED: i32 = 3;

/// The guard's exit status for `now` with `before` the one committed quiet
/// result of the same command.
fn judged(before: Run, now: Run) -> i32 {
    let results = Results::new();
    results.write(
        "2026-12-06-1420-aaaaaaa.txt",
        &result(WHOLELIB, 1.0, before),
        true,
    );
    let now = results.write("now.txt", &result(WHOLELIB, 1.0, now), false);
    results.check(&now)
}

#[test]
fn a_figure_of_novelfs_worse_past_the_tolerance_fails_the_check() {
    let worse = Run { warm: 4.80, ..RUN };
    assert_eq!(judged(RUN, worse), REGRESSED, "the warm grep 27% worse");
    let near = Run { warm: 4.30, ..RUN };
    assert_eq!(judged(RUN, near), 0, "the warm grep 13% worse: within");
}

#[test]
fn the_floors_own_rows_never_fail_it() {
    // The floor's warm grep 34% slower against the sources: the machine's.
    let before = Run {
        floor_warm: 2.83,
        ..RUN
    };
    assert_eq!(judged(before, RUN), 0);
}

#[test]
fn the_cold_grep_is_judged_against_the_floor_of_its_run() {
    // Against the sources as before, but the floor of this run is faster:
    // novelfs took 0.75x the floor's time instead of 0.56x.
    let now = Run {
        floor_cold: ("28.500 s", 25.80),
        ..RUN
    };
    assert_eq!(judged(RUN, now), REGRESSED);
}

#[test]
fn only_a_committed_quiet_result_of_the_same_command_is_compared_with() {
    let results = Results::new();
    let better = Run { warm: 2.00, ..RUN };
    results.write(
        "2026-12-06-1000-aaaaaaa.txt",
        &result(WHOLELIB, 1.0, RUN),
        true,
    );
    // Newer, and each with a warm grep the run below would be 30% worse than:
    // measured busy, of another command, and not committed.
    results.write(
        "2026-12-06-1100-bbbbbbb.txt",
        &result(WHOLELIB, 4.0, better),
        true,
    );
    let quick = "scripts/bench.sh --wholelib --quick";
    results.write(
        "2026-12-06-1200-ccccccc.txt",
        &result(quick, 1.0, better),
        true,
    );
    results.write(
        "2026-12-06-1300-ddddddd.txt",
        &result(WHOLELIB, 1.0, better),
        false,
    );
    let now = Run { warm: 2.60, ..RUN };
    let same_command = "scripts/bench.sh --runs 5 --wholelib";
    let now = results.write("now.txt", &result(same_command, 1.0, now), false);
    assert_eq!(
        results.check(&now),
        0,
        "compared with the quiet committed run"
    );
    // With a quiet committed run of the same command that is newer, it is the one.
    results.write(
        "2026-12-06-1400-eeeeeee.txt",
        &result(WHOLELIB, 1.0, better),
        true,
    );
    assert_eq!(results.check(&now), REGRESSED);
}

/// Rows of the tools agents search with: they name a cold grep -r too.
const RG_VS_GREP: &str = "[io_uring] whole library: cold rg -l WORD vs cold grep -r -l WORD, \
                          each on a fresh mount";
const RG_VS_FLOOR: &str = "[io_uring] whole library: cold rg -l WORD (found nowhere) on a fresh \
                           mount vs on a fresh mount of the zero-work server";

#[test]
fn a_tools_row_is_judged_by_itself_and_never_as_the_cold_grep() {
    let results = Results::new();
    // rg -l's time and its ratio to grep -r -l, beside the floor's rg -l.
    let tools = |time, ratio| [(RG_VS_GREP, time, ratio), (RG_VS_FLOOR, time, 1.10)];
    results.write(
        "2026-12-06-1420-aaaaaaa.txt",
        &result_with(WHOLELIB, 1.0, RUN, &tools("21.000 s", 1.10)),
        true,
    );
    // rg -l slower, as fast against grep -r -l and the floor: taken for the
    // cold grep, its 30 s would be 0.79x the floor's 38 s instead of 0.55x.
    let slower = result_with(WHOLELIB, 1.0, RUN, &tools("30.000 s", 1.10));
    let slower = results.write("slower.txt", &slower, false);
    assert_eq!(results.check(&slower), 0);
    let worse = result_with(WHOLELIB, 1.0, RUN, &tools("21.000 s", 1.40));
    let worse = results.write("worse.txt", &worse, false);
    assert_eq!(
        results.check(&worse),
        REGRESSED,
        "rg -l 27% worse against grep -r -l"
    );
}
