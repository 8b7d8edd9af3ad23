//! `novelfs status MNT`: what the holder of a mount has seen (see
//! `holder/control.rs`): its pid, its server's, how many servers it
//! started, how many died (serving, or before serving), the upgrades, and
//! whether it gave up and why; then what the library's storage has cost
//! (see `counted`). One `name: value` a line, or (`--json`) one JSON
//! object of them, or (`--prometheus`) the storage's counters in
//! Prometheus' text exposition format.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use novelfs_storage::Counter;

use super::ask_holder::{STATUS_REQUEST, ask};

/// The holder answers at once, unless it is starting a server (it asks
/// its socket between servers).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// How the answer is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    Lines,
    Json,
    Prometheus,
}

/// Runs the command: what it prints, or why it cannot.
pub(crate) fn run(mountpoint: &Path, shown: Shown) -> Result<String, String> {
    let said = ask(mountpoint, STATUS_REQUEST, ANSWER_WITHIN)?;
    let mount = crate::mount::os::mountpoint::absolute(mountpoint)
        .display()
        .to_string();
    let lines = format!("mount: {mount}\n{said}");
    Ok(match shown {
        Shown::Lines => format!("{lines}\n"),
        Shown::Json => format!("{}\n", json(&lines)),
        Shown::Prometheus => prometheus(&mount, &lines),
    })
}

/// The `name: value` pairs of `lines`.
fn pairs(lines: &str) -> impl Iterator<Item = (&str, &str)> {
    lines.lines().filter_map(|l| l.split_once(": "))
}

/// One object: each name a key (spaces as `_`), each value a number when
/// it is one.
fn json(lines: &str) -> String {
    let object: serde_json::Map<String, serde_json::Value> = pairs(lines)
        .map(|(name, value)| {
            let value = match value.parse::<u64>() {
                Ok(n) => n.into(),
                Err(_) => value.into(),
            };
            (name.replace(' ', "_"), value)
        })
        .collect();
    serde_json::Value::Object(object).to_string()
}

/// A label's value as the exposition format quotes it.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The counters among `lines` as Prometheus' text format gives them, each
/// metric's `# HELP` and `# TYPE` once, before its samples; a comment when
/// the library has no remote storage (or none is open yet).
fn prometheus(mount: &str, lines: &str) -> String {
    let mountpoint = format!("mountpoint=\"{}\"", label(mount));
    let find = |name: &str| pairs(lines).find(|(n, _)| *n == name).map(|(_, v)| v);
    let mut out = String::new();
    let mut described = Vec::new();
    for c in Counter::ALL {
        let Some(value) = find(c.name()).and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        let (metric, kind, help) = c.metric();
        if !described.contains(&metric) {
            described.push(metric);
            let _ = writeln!(out, "# HELP {metric} {help}\n# TYPE {metric} counter");
        }
        let labels = match kind {
            Some((k, v)) => format!("{k}=\"{v}\",{mountpoint}"),
            None => mountpoint.clone(),
        };
        let _ = writeln!(out, "{metric}{{{labels}}} {value}");
    }
    match find("snapshot") {
        Some(snapshot) if !out.is_empty() => {
            let _ = writeln!(
                out,
                "# HELP novelfs_snapshot_info The snapshot of the library in use\n\
                 # TYPE novelfs_snapshot_info gauge\n\
                 novelfs_snapshot_info{{snapshot=\"{}\",{mountpoint}}} 1",
                label(snapshot)
            );
        }
        _ => {
            let storage = find("storage").unwrap_or("unknown");
            let _ = writeln!(out, "# novelfs: {mount}: storage: {storage}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keys_and_numbers_and_prometheus_samples() {
        let lines = "mount: /mnt/a \"b\"\nholder: 7\ngave up: no\nstorage: bucket\n\
                     list requests: 3\nget requests: 0\nranged get requests: 2\nretries: 1\n\
                     snapshot: none";
        let v: serde_json::Value = serde_json::from_str(&json(lines)).unwrap();
        assert_eq!(v["holder"], 7);
        assert_eq!(v["gave_up"], "no");
        assert_eq!(v["list_requests"], 3);
        assert_eq!(v["ranged_get_requests"], 2);
        let p = prometheus("/mnt/a \"b\"", lines);
        assert_eq!(
            p.matches("# TYPE novelfs_requests_total counter").count(),
            1
        );
        assert!(
            p.contains("novelfs_requests_total{kind=\"list\",mountpoint=\"/mnt/a \\\"b\\\"\"} 3"),
            "{p}"
        );
        assert!(
            p.contains("novelfs_retries_total{mountpoint=\"/mnt/a \\\"b\\\"\"} 1"),
            "{p}"
        );
        assert!(p.contains("novelfs_snapshot_info{snapshot=\"none\""), "{p}");
        let local = prometheus("/mnt", "mount: /mnt\nstorage: local directory");
        assert!(
            local.lines().all(|l| l.starts_with("# novelfs:")),
            "{local}"
        );
    }
}
