//! One rule for every option (contract §3.8): a malformed or out-of-range
//! value, as a flag, an `-o` option or an environment value, exits 2 with
//! one line naming the option as it was given and what it takes; options
//! that cannot go together are refused the same way in either form. The
//! mountpoint given does not exist, so a value the parser takes ends in
//! that refusal (exit 1) instead of a mount: the good values show they
//! pass, and a bad value let through fails here without mounting.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");

/// An option with a value: its flag, its `-o` key, values it takes, and
/// values it refuses.
struct Row {
    flag: Option<&'static str>,
    key: Option<&'static str>,
    good: &'static [&'static str],
    bad: &'static [&'static str],
}

const TABLE: &[Row] = &[
    Row {
        flag: Some("--endpoint-url"),
        key: Some("endpoint_url"),
        good: &["http://127.0.0.1:9000", "https://s3.example"],
        bad: &["127.0.0.1:9000", "ftp://x", "http://", ""],
    },
    Row {
        flag: Some("--account"),
        key: Some("account"),
        good: &["shelf", "devstoreaccount1"],
        bad: &[""],
    },
    Row {
        flag: Some("--region"),
        key: Some("region"),
        good: &["us-east-1", "eu-west-3"],
        bad: &["us east", "", "eu/west"],
    },
    Row {
        flag: Some("--profile"),
        key: Some("profile"),
        good: &["default", "library-reader"],
        bad: &[""],
    },
    Row {
        flag: Some("--formats"),
        key: Some("formats"),
        good: &["txt", "json", "txt+json"],
        bad: &["md", "TXT", ""],
    },
    Row {
        flag: Some("--freshness"),
        key: Some("freshness"),
        good: &["published", "listing"],
        bad: &["snapshot", ""],
    },
    Row {
        flag: Some("--ttl"),
        key: Some("ttl"),
        good: &["0", "0.5", "86400"],
        bad: &["abc", "-1", "86401", "1e9", "NaN", ""],
    },
    Row {
        flag: Some("--source-timeout"),
        key: Some("source_timeout"),
        good: &["0.1", "3600"],
        bad: &["0", "-1", "3601", "soon"],
    },
    Row {
        flag: Some("--stale-if-error"),
        key: Some("stale_if_error"),
        good: &["0", "300", "604800"],
        bad: &["-1", "604801", "NaN", "never", ""],
    },
    Row {
        flag: Some("--drift"),
        key: Some("drift"),
        good: &["0", "600", "86400"],
        bad: &["-1", "86401", "NaN", "often", ""],
    },
    Row {
        flag: Some("--path-root"),
        key: Some("path_root"),
        good: &["/library", "/"],
        bad: &["library", ""],
    },
    Row {
        flag: Some("--cache-size"),
        key: Some("cache_size"),
        good: &["4M", "256MiB", "1G", "4096"],
        bad: &["lots", "-1", "12Q", "99999999999G"],
    },
    Row {
        flag: Some("--max-chapter-bytes"),
        key: Some("max_chapter_bytes"),
        good: &["1K", "2GiB"],
        bad: &["lots", "-1", "3GiB", "2049M"],
    },
    Row {
        flag: Some("--threads"),
        key: Some("threads"),
        good: &["1", "256"],
        bad: &["0", "-1", "257", "two"],
    },
    Row {
        flag: Some("--io-uring"),
        key: Some("io_uring"),
        // `on` is checked against the kernel's switch before the
        // mountpoint (tests/it/mount/io_uring.rs covers it).
        good: &["auto", "off"],
        bad: &["fast", ""],
    },
    Row {
        flag: Some("--failover"),
        key: Some("failover"),
        good: &["auto", "on", "off"],
        bad: &["maybe", ""],
    },
    Row {
        flag: Some("--log-file"),
        key: Some("log_file"),
        good: &["/tmp/novelfs-options-test.log"],
        bad: &[""],
    },
    Row {
        flag: Some("--index-dir"),
        key: Some("index_dir"),
        good: &["/tmp/novelfs-options-test-index"],
        bad: &[""],
    },
    Row {
        flag: Some("--state-file"),
        key: Some("state_file"),
        good: &["/nonexistent/state.json"],
        bad: &[""],
    },
    Row {
        flag: None,
        key: Some("fsname"),
        good: &["books"],
        bad: &[""],
    },
    Row {
        flag: None,
        key: Some("subtype"),
        good: &["novels2"],
        bad: &["a/b", "a b", ""],
    },
];

/// Flags whose value has no rule to break.
const FREE_FLAGS: &[&str] = &[];

fn mount(args: &[&str]) -> Output {
    // A bucket's options are refused with a directory: they are tried
    // with a bucket (checked only once the mountpoint is found).
    let bucket = ["endpoint_url", "region", "profile"].iter().any(|o| {
        args.iter()
            .any(|a| a.contains(o) || a.contains(&o.replace('_', "-")))
    });
    // Azure's account is refused with another cloud's bucket.
    let azure = args.iter().any(|a| a.contains("account"));
    let lib = if azure {
        "az://novelfs-options-test/library"
    } else if bucket {
        "s3://novelfs-options-test/library"
    } else {
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/library")
    };
    Command::new(BIN)
        .args(["mount", lib, "/nonexistent/novelfs-options-test"])
        .args(args)
        .env_remove("NOVELFS_PATH_ROOT")
        .output()
        .unwrap()
}

/// Asserts exit 2 and exactly one stderr line holding every piece of `want`.
fn refused(out: &Output, want: &[&str], what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: one line, got {err:?}");
    for piece in want {
        assert!(err.contains(piece), "{what}: {piece:?} not in {err:?}");
    }
}

/// Asserts the value passed the parser: the refusal is the missing
/// mountpoint's.
fn taken(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(1) && err.contains("does not exist"),
        "{what} was not taken: {:?} {err}",
        out.status.code()
    );
}

#[test]
fn every_malformed_or_out_of_range_value_exits_2_naming_the_option_in_both_forms() {
    for row in TABLE {
        for bad in row.bad {
            if let Some(flag) = row.flag {
                refused(
                    &mount(&[flag, bad]),
                    &[flag, " takes ", &format!("{bad:?}")],
                    &format!("{flag} {bad:?}"),
                );
                let joined = format!("{flag}={bad}");
                refused(&mount(&[&joined]), &[flag, " takes "], &joined);
            }
            if let Some(key) = row.key {
                let opt = format!("ro,{key}={bad}");
                refused(
                    &mount(&["-o", &opt]),
                    &[&format!("-o {key}= takes "), &format!("{bad:?}")],
                    &format!("-o {opt}"),
                );
            }
        }
        for good in row.good {
            if let Some(flag) = row.flag {
                taken(&mount(&[flag, good]), &format!("{flag} {good}"));
            }
            if let Some(key) = row.key {
                taken(
                    &mount(&["-o", &format!("{key}={good}")]),
                    &format!("-o {key}={good}"),
                );
            }
        }
    }
}

#[test]
fn the_same_values_are_refused_from_read_index_and_the_environment() {
    let lib = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/library");
    let run = |args: &[&str], env: Option<&str>| {
        let mut cmd = Command::new(BIN);
        cmd.args(args).env_remove("NOVELFS_PATH_ROOT");
        if let Some(v) = env {
            cmd.env("NOVELFS_PATH_ROOT", v);
        }
        cmd.output().unwrap()
    };
    for size in ["lots", "3GiB", "-1"] {
        for cmd in [
            &[
                "read",
                "--root",
                lib,
                "--max-chapter-bytes",
                size,
                "西游记",
                "1",
            ][..],
            &["index", lib, "--max-chapter-bytes", size],
        ] {
            refused(
                &run(cmd, None),
                &["--max-chapter-bytes takes ", &format!("{size:?}")],
                &format!("{cmd:?}"),
            );
        }
    }
    for cmd in ["read", "chapters", "books"] {
        let mut args = vec![cmd, "--root", lib];
        if cmd != "books" {
            args.push("西游记");
        }
        if cmd == "read" {
            args.push("1");
        }
        refused(
            &run(&args, Some("library")),
            &["NOVELFS_PATH_ROOT takes ", "\"library\""],
            &format!("NOVELFS_PATH_ROOT=library {cmd}"),
        );
        let mut flagged = args.clone();
        flagged.extend(["--path-root", "library"]);
        refused(
            &run(&flagged, None),
            &["--path-root takes ", "\"library\""],
            &format!("{flagged:?}"),
        );
    }
}

#[test]
fn options_that_cannot_go_together_are_refused_alike_in_either_form() {
    for (args, a, b) in [
        (
            &["--no-index", "--index-dir", "/x"][..],
            "--no-index",
            "--index-dir",
        ),
        (
            &["--index-dir", "/x", "-o", "noindex"],
            "-o noindex",
            "--index-dir",
        ),
        (
            &["--no-index", "-o", "index_dir=/x"],
            "--no-index",
            "-o index_dir=",
        ),
        (
            &["-o", "noindex,index_dir=/x"],
            "-o noindex",
            "-o index_dir=",
        ),
        (
            &["-o", "allow_other", "-o", "allow_root"],
            "-o allow_other",
            "-o allow_root",
        ),
        (
            &["--failover", "on", "--io-uring", "on"],
            "--failover on",
            "--io-uring on",
        ),
        (
            &["-o", "failover,io_uring=on"],
            "-o failover",
            "-o io_uring=on",
        ),
    ] {
        refused(
            &mount(args),
            &[a, b, "cannot be used together"],
            &format!("{args:?}"),
        );
    }
}

/// Every option `mount --help` shows with a value is in the table, in
/// each form it is shown in: a new option cannot skip the rule unnoticed.
#[test]
fn the_table_holds_every_option_mount_help_shows() {
    let out = Command::new(BIN)
        .args(["mount", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let flags: Vec<&str> = help
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("--") && l.contains(" <"))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert!(flags.contains(&"--ttl"), "{help}");
    for flag in flags {
        assert!(
            FREE_FLAGS.contains(&flag) || TABLE.iter().any(|r| r.flag == Some(flag)),
            "{flag} is not in the table"
        );
    }
    let o_list = help
        .split("Mount options, comma-separated")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("the -o paragraph");
    let keys: Vec<&str> = o_list
        .split([' ', ','])
        .filter_map(|w| w.split_once('=').map(|(k, _)| k))
        .filter(|k| k.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !k.is_empty())
        .collect();
    assert!(keys.contains(&"ttl"), "{o_list}");
    for key in keys {
        assert!(
            TABLE.iter().any(|r| r.key == Some(key)),
            "-o {key}= is not in the table"
        );
    }
}
