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

/// The holder's figures among the lines: (name, metric, type, help).
const HOLDER: [(&str, &str, &str, &str); 5] = [
    (
        "servers started",
        "novelfs_servers_started_total",
        "counter",
        "Servers the mount's holder started",
    ),
    (
        "servers died",
        "novelfs_servers_died_total",
        "counter",
        "Servers that died while serving (a crash, a kill)",
    ),
    (
        "died before serving",
        "novelfs_servers_died_before_serving_total",
        "counter",
        "Servers that died before they served",
    ),
    (
        "upgrades",
        "novelfs_upgrades_total",
        "counter",
        "Upgrades to a new server (novelfs upgrade)",
    ),
    (
        "inode journal bytes",
        "novelfs_inode_journal_bytes",
        "gauge",
        "Memory the journal of the inodes the kernel holds takes",
    ),
];

/// What `lines` say as Prometheus' text format gives it, every sample
/// labelled with the mountpoint alone (and a counter's kind), each
/// metric's `# HELP` and `# TYPE` once, before its samples: the holder's
/// figures, then the storage's counters and whether a snapshot is
/// followed; a comment instead of those when the library has no remote
/// storage (or none is open yet).
fn prometheus(mount: &str, lines: &str) -> String {
    let mountpoint = format!("mountpoint=\"{}\"", label(mount));
    let find = |name: &str| pairs(lines).find(|(n, _)| *n == name).map(|(_, v)| v);
    let mut out = String::new();
    let mut one = |metric: &str, kind: &str, help: &str, value: u64| {
        let _ = writeln!(
            out,
            "# HELP {metric} {help}\n# TYPE {metric} {kind}\n{metric}{{{mountpoint}}} {value}"
        );
    };
    for (name, metric, kind, help) in HOLDER {
        if let Some(value) = find(name).and_then(|v| v.parse::<u64>().ok()) {
            one(metric, kind, help, value);
        }
    }
    if let Some(gave_up) = find("gave up") {
        let help = "Whether the holder gave up serving the mount (1: it needs a remount)";
        one("novelfs_gave_up", "gauge", help, u64::from(gave_up != "no"));
    }
    let snapshot = find("snapshot");
    let made = find("snapshot made").and_then(crate::mount::utc::parse);
    let mut storage = String::new();
    let mut described = Vec::new();
    for c in Counter::ALL {
        let Some(value) = find(c.name()).and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        let (metric, kind, help) = c.metric();
        if !described.contains(&metric) {
            described.push(metric);
            let _ = writeln!(storage, "# HELP {metric} {help}\n# TYPE {metric} counter");
        }
        let labels = match kind {
            Some((k, v)) => format!("{k}=\"{v}\",{mountpoint}"),
            None => mountpoint.clone(),
        };
        let _ = writeln!(storage, "{metric}{{{labels}}} {value}");
    }
    if storage.is_empty() || snapshot.is_none() {
        let storage = find("storage").unwrap_or("unknown");
        let _ = writeln!(out, "# novelfs: {mount}: storage: {storage}");
        return out;
    }
    out.push_str(&storage);
    let mut one = |metric: &str, help: &str, value: u64| {
        let _ = writeln!(
            out,
            "# HELP {metric} {help}\n# TYPE {metric} gauge\n{metric}{{{mountpoint}}} {value}"
        );
    };
    let help = "Whether the mount follows a published snapshot (1) or lists (0)";
    one("novelfs_snapshot_followed", help, u64::from(made.is_some()));
    if let Some(made) = made {
        let help = "When the snapshot followed was made, in Unix time";
        one("novelfs_snapshot_made_seconds", help, made);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keys_and_numbers_and_prometheus_samples() {
        let lines = "mount: /mnt/a \"b\"\nholder: 7\nservers started: 3\nservers died: 2\n\
                     died before serving: 0\nupgrades: 1\ngave up: no\n\
                     inode journal bytes: 4096\nstorage: bucket\n\
                     list requests: 3\nget requests: 0\nranged get requests: 2\nretries: 1\n\
                     get unanswered: 5\nsnapshot: \"e1\"\nsnapshot made: 2026-12-07T07:04:59Z";
        let v: serde_json::Value = serde_json::from_str(&json(lines)).unwrap();
        assert_eq!(v["holder"], 7);
        assert_eq!(v["gave_up"], "no");
        assert_eq!(v["list_requests"], 3);
        assert_eq!(v["ranged_get_requests"], 2);
        assert_eq!(v["snapshot_made"], "2026-12-07T07:04:59Z");
        let p = prometheus("/mnt/a \"b\"", lines);
        let at = "mountpoint=\"/mnt/a \\\"b\\\"\"";
        assert_eq!(
            p.matches("# TYPE novelfs_requests_total counter").count(),
            1
        );
        for sample in [
            format!("novelfs_requests_total{{kind=\"list\",{at}}} 3"),
            format!("novelfs_unanswered_total{{kind=\"get\",{at}}} 5"),
            format!("novelfs_retries_total{{{at}}} 1"),
            format!("novelfs_servers_died_total{{{at}}} 2"),
            format!("novelfs_upgrades_total{{{at}}} 1"),
            format!("novelfs_gave_up{{{at}}} 0"),
            format!("novelfs_snapshot_followed{{{at}}} 1"),
            format!("novelfs_snapshot_made_seconds{{{at}}} 1796627099"),
        ] {
            assert!(p.lines().any(|l| l == sample), "{sample} not in {p}");
        }
        let listing = lines.replace(
            "snapshot: \"e1\"\nsnapshot made: 2026-12-07T07:04:59Z",
            "snapshot: none published (the mount lists)",
        );
        let p = prometheus("/mnt", &listing);
        assert!(
            p.contains("novelfs_snapshot_followed{mountpoint=\"/mnt\"} 0"),
            "{p}"
        );
        assert!(!p.contains("novelfs_snapshot_made_seconds"), "{p}");
        let local = prometheus(
            "/mnt",
            "mount: /mnt\nservers started: 1\ngave up: no\nstorage: local directory",
        );
        assert!(local.contains("novelfs_servers_started_total{mountpoint=\"/mnt\"} 1"));
        assert!(
            local.lines().last().unwrap().starts_with("# novelfs:"),
            "{local}"
        );
        assert!(!local.contains("novelfs_requests_total"), "{local}");
    }
}
