//! The bucket's check, made by the waiting CLI while the daemon starts
//! (the mount's one round trip before it is ready runs beside the
//! daemon's fork, exec and start rather than after them), and its word
//! to the daemon's server over the CLI's socket: `checked`, or `failed`
//! and the one line that says why, which the server reports back as its
//! own failure so that the mount is undone as any failed start is. The
//! word `checked` carries what the check cost the bucket, by counter, for
//! the server to count as its own: `novelfs status` agrees with the
//! bucket from the mount's first request.

use novelfs_storage::Counter;

use std::io::{Read, Write};
use std::os::fd::OwnedFd;

/// Set (to anything), the daemon checks the bucket once started, as a
/// foreground mount does, and the CLI does not: the tests' switch that
/// shows what checking beside the daemon's start saves.
pub(crate) const IN_DAEMON_VAR: &str = "NOVELFS_TEST_S3_CHECK_IN_DAEMON";

/// Whether a waiting CLI checks the bucket (see `IN_DAEMON_VAR`).
pub(crate) fn by_cli() -> bool {
    novelfs_library::test_switch::var(IN_DAEMON_VAR).is_none()
}

/// What a check cost, by counter.
pub(crate) type Cost = Vec<(Counter, u64)>;

/// A counter's name in the word: its status name, `_` for the spaces.
fn word_of(c: Counter) -> String {
    c.name().replace(' ', "_")
}

/// Tells the daemon how the CLI's check went, and what it cost.
pub(crate) fn tell(cli: &OwnedFd, checked: &Result<(), String>, cost: &Cost) {
    let line = match checked {
        Ok(()) => {
            let counts: String = cost
                .iter()
                .map(|(c, n)| format!(" {}={n}", word_of(*c)))
                .collect();
            format!("checked{counts}\n")
        }
        Err(why) => format!("failed {}\n", why.replace('\n', " ")),
    };
    if let Ok(fd) = cli.try_clone() {
        let _ = std::fs::File::from(fd).write_all(line.as_bytes());
    }
}

/// How the CLI's check went, as it said on `cli`, and what it cost; a CLI
/// gone before it said is a failure (nobody waits for the mount any more).
pub(crate) fn hear(cli: &OwnedFd) -> Result<Cost, String> {
    let gone = || "the mount command ended before the bucket was checked".to_string();
    let mut said = Vec::new();
    let mut file = std::fs::File::from(cli.try_clone().map_err(|e| e.to_string())?);
    let mut byte = [0u8; 256];
    while !said.ends_with(b"\n") {
        match file.read(&mut byte) {
            Ok(0) => return Err(gone()),
            Ok(n) => said.extend_from_slice(&byte[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(gone()),
        }
    }
    let said = String::from_utf8_lossy(&said);
    let said = said.trim_end();
    if let Some(why) = said.strip_prefix("failed ") {
        return Err(why.to_string());
    }
    let mut words = said.split(' ');
    if words.next() != Some("checked") {
        return Err(gone());
    }
    Ok(words
        .filter_map(|w| {
            let (name, n) = w.split_once('=')?;
            let c = Counter::ALL.into_iter().find(|c| word_of(*c) == name)?;
            Some((c, n.parse().ok()?))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_crosses_whole_either_way() {
        let (cli, daemon) = std::os::unix::net::UnixStream::pair().unwrap();
        let (cli, daemon): (OwnedFd, OwnedFd) = (cli.into(), daemon.into());
        tell(&cli, &Ok(()), &vec![]);
        assert_eq!(hear(&daemon), Ok(vec![]));
        let cost = vec![(Counter::List, 1), (Counter::RangedGetUnanswered, 2)];
        tell(&cli, &Ok(()), &cost);
        assert_eq!(hear(&daemon), Ok(cost));
        tell(&cli, &Err("s3://b: no such bucket\n(404)".into()), &vec![]);
        assert_eq!(hear(&daemon), Err("s3://b: no such bucket (404)".into()));
        drop(cli);
        assert!(hear(&daemon).is_err(), "a CLI gone is a failure");
    }
}
