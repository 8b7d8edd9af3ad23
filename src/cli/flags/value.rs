//! Each value's rule, and the lines a refused value or two options that
//! cannot go together get. The flags (clap's `value_parser`), the `-o`
//! options and the environment use these and nothing else: the value, or
//! what the option takes.

use crate::mount::failover::Failover;
use crate::mount::transport::IoUring;

pub(crate) const TTL: &str = "a number of seconds from 0 to 86400";
pub(crate) const SOURCE_TIMEOUT: &str = "a number of seconds above 0 and at most 3600";
pub(crate) const STALE_IF_ERROR: &str = "a number of seconds from 0 to 604800";
pub(crate) const DRIFT: &str = "a number of seconds from 0 to 86400";
pub(crate) const SIZE: &str = "a size such as 16M, 256MiB or 1G";
pub(crate) const CHAPTER_SIZE: &str = "a size such as 16M, 256MiB or 1G, at most 2GiB";
pub(crate) const THREADS: &str = "a whole number from 1 to 256";
pub(crate) const IO_URING: &str = "auto, on or off";
pub(crate) const FAILOVER: &str = "auto, on or off";
pub(crate) const FRESHNESS: &str = "published or listing";
pub(crate) const PATH_ROOT: &str = "an absolute path such as /library";
pub(crate) const SUBTYPE: &str = "a plain word (letters, digits, _ - . +)";
pub(crate) const NAME: &str = "a name";
pub(crate) const FILE: &str = "a file name";
pub(crate) const DIR: &str = "a directory";
pub(crate) const ENDPOINT: &str = "an http:// or https:// URL of an S3 server";
pub(crate) const REGION: &str = "a region name such as us-east-1";

/// More workers only add context switches (`--threads` in `--help`);
/// the bound catches a slip such as `--threads 20000`.
pub(crate) const MAX_THREADS: usize = 256;

pub(crate) fn ttl(v: &str) -> Result<f64, &'static str> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..=86_400.0).contains(&t) => Ok(t),
        _ => Err(TTL),
    }
}

/// Seconds, 0 (never) to a day.
pub(crate) fn drift(v: &str) -> Result<f64, &'static str> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..=86_400.0).contains(&t) => Ok(t),
        _ => Err(DRIFT),
    }
}

/// Seconds, 0 (never) to a week.
pub(crate) fn stale_if_error(v: &str) -> Result<f64, &'static str> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..=604_800.0).contains(&t) => Ok(t),
        _ => Err(STALE_IF_ERROR),
    }
}

pub(crate) fn source_timeout(v: &str) -> Result<f64, &'static str> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 3600.0 => Ok(t),
        _ => Err(SOURCE_TIMEOUT),
    }
}

pub(crate) fn cache_size(v: &str) -> Result<usize, &'static str> {
    parse_size(v)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(SIZE)
}

/// A chapter file is never read past 2 GiB: a larger limit is refused,
/// not lowered.
pub(crate) fn max_chapter_bytes(v: &str) -> Result<u64, &'static str> {
    parse_size(v)
        .ok()
        .filter(|n| *n <= novelfs_library::MAX_CHAPTER_BYTES_CAP)
        .ok_or(CHAPTER_SIZE)
}

pub(crate) fn threads(v: &str) -> Result<usize, &'static str> {
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_THREADS).contains(n))
        .ok_or(THREADS)
}

pub(crate) fn io_uring(v: &str) -> Result<IoUring, &'static str> {
    IoUring::parse(v).map_err(|_| IO_URING)
}

pub(crate) fn failover(v: &str) -> Result<Failover, &'static str> {
    Failover::parse(v).map_err(|_| FAILOVER)
}

/// `published`: follow a bucket's published snapshot (`true`);
/// `listing`: list its directories once per TTL.
pub(crate) fn freshness(v: &str) -> Result<bool, &'static str> {
    match v {
        "published" => Ok(true),
        "listing" => Ok(false),
        _ => Err(FRESHNESS),
    }
}

pub(crate) fn path_root(v: &str) -> Result<String, &'static str> {
    novelfs_library::normalize_path_root(v).map_err(|_| PATH_ROOT)
}

/// The part after `fuse.` in the mount's type: a plain word.
pub(crate) fn subtype(v: &str) -> Result<String, &'static str> {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'));
    if plain {
        Ok(v.to_string())
    } else {
        Err(SUBTYPE)
    }
}

/// `--log-file`'s value.
pub(crate) fn file(v: &str) -> Result<std::path::PathBuf, &'static str> {
    non_empty(v, FILE).map(Into::into)
}

/// `--endpoint-url`'s value: where an S3 server answers.
pub(crate) fn endpoint(v: &str) -> Result<String, &'static str> {
    let rest = v
        .strip_prefix("http://")
        .or_else(|| v.strip_prefix("https://"))
        .ok_or(ENDPOINT)?;
    non_empty(rest.trim_end_matches('/'), ENDPOINT).map(|_| v.to_string())
}

/// `--region`'s value.
pub(crate) fn region(v: &str) -> Result<String, &'static str> {
    let plain = v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if plain {
        non_empty(v, REGION)
    } else {
        Err(REGION)
    }
}

/// `--index-dir`'s value.
pub(crate) fn dir(v: &str) -> Result<std::path::PathBuf, &'static str> {
    non_empty(v, DIR).map(Into::into)
}

/// A name, file or directory: anything but nothing.
pub(crate) fn non_empty(v: &str, takes: &'static str) -> Result<String, &'static str> {
    if v.is_empty() {
        Err(takes)
    } else {
        Ok(v.to_string())
    }
}

/// The one line every malformed or out-of-range value gets (contract
/// §3.8): the option as it was given (`--ttl`, `-o ttl=`, an environment
/// variable) and what it takes.
pub(crate) fn bad_value(option: &str, takes: &str, value: &str) -> String {
    format!("{option} takes {takes}, not {value:?}")
}

/// The one line two options that cannot go together get, each named as
/// it was given.
pub(crate) fn conflict(a: &str, b: &str) -> String {
    format!("{a} and {b} cannot be used together")
}

/// `16M`, `256MiB`, `1G`, `4096`.
pub(crate) fn parse_size(v: &str) -> Result<u64, String> {
    let s = v.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("not a size: {v:?}"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("not a size: {v:?} (use e.g. 16M, 256MiB, 1G)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size too large: {v:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
    }
}
