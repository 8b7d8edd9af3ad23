//! The `-o` list of `novelfs mount` (and of mount(8) and fstab) and the
//! values of `--ttl` and the size options.

/// The parsed `-o` list.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct MountOptions {
    pub allow_other: bool,
    pub allow_root: bool,
    pub auto_unmount: bool,
    pub default_permissions: bool,
    pub fsname: Option<String>,
    pub subtype: Option<String>,
    pub ttl: Option<f64>,
    pub source_timeout: Option<f64>,
    /// `stale_if_error=SECONDS`: see `--stale-if-error`.
    pub stale_if_error: Option<f64>,
    /// `drift=SECONDS`: see `--drift`.
    pub drift: Option<f64>,
    pub no_watch: bool,
    pub path_root: Option<String>,
    pub log_file: Option<String>,
    /// `io_uring=auto|on|off` (see `transport`).
    pub io_uring: Option<super::transport::IoUring>,
    /// `index_dir=DIR`: where the persistent index lives.
    pub index_dir: Option<String>,
    /// `noindex`: no persistent index.
    pub no_index: bool,
    /// `endpoint_url=`, `account=`, `region=`, `profile=`, `force_path_style`,
    /// `no_sign_request`: how to reach a library in a bucket.
    pub bucket: super::library_at::BucketOptions,
    pub cache_size: Option<usize>,
    pub max_chapter_bytes: Option<u64>,
    pub threads: Option<usize>,
    pub state_file: Option<String>,
    /// `failover[=auto|on|off]`, `nofailover`: whether a holder keeps the
    /// connection (see `failover`).
    pub failover: Option<super::failover::Failover>,
    /// `freshness=published|listing`: whether a bucket's published
    /// snapshot is followed (`true`) where one exists.
    pub freshness: Option<bool>,
    /// `formats=txt|json|txt+json`: the page formats chapter directories
    /// list.
    pub formats: Option<novelfs_fs::Formats>,
}

/// Options mount(8) and mount.fuse3 may pass that mean nothing to a
/// read-only view (or are already implied by it).
const GENERIC_OPTIONS: &[&str] = &[
    "defaults",
    "auto",
    "noauto",
    "user",
    "nouser",
    "users",
    "owner",
    "group",
    "_netdev",
    "nofail",
    "exec",
    "noexec",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "diratime",
    "nodiratime",
    "sync",
    "async",
    "dirsync",
    "lazytime",
    "nolazytime",
    "silent",
    "loud",
];

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

/// Each value's rule: the value, or what the option takes. The flags, the
/// `-o` options and the environment use these and nothing else.
pub(crate) mod value {
    use super::super::transport::IoUring;

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
        super::parse_size(v)
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(SIZE)
    }

    /// A chapter file is never read past 2 GiB: a larger limit is refused,
    /// not lowered.
    pub(crate) fn max_chapter_bytes(v: &str) -> Result<u64, &'static str> {
        super::parse_size(v)
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

    pub(crate) fn failover(v: &str) -> Result<super::super::failover::Failover, &'static str> {
        super::super::failover::Failover::parse(v).map_err(|_| FAILOVER)
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
}

/// The `-o` options that are words, and the field each sets.
fn word(o: &mut MountOptions, key: &str) -> Option<()> {
    match key {
        "ro" => {}
        "allow_other" => o.allow_other = true,
        "allow_root" => o.allow_root = true,
        "auto_unmount" => o.auto_unmount = true,
        "default_permissions" => o.default_permissions = true,
        "noindex" => o.no_index = true,
        "nowatch" => o.no_watch = true,
        "failover" => o.failover = Some(super::failover::Failover::On),
        "nofailover" => o.failover = Some(super::failover::Failover::Off),
        "force_path_style" => o.bucket.force_path_style = true,
        "no_sign_request" => o.bucket.no_sign_request = true,
        k if GENERIC_OPTIONS.contains(&k) => {}
        _ => return None,
    }
    Some(())
}

pub(crate) fn parse_options(list: &[String]) -> Result<MountOptions, String> {
    let mut o = MountOptions::default();
    for opt in list
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        if key == "rw" {
            return Err("-o rw: novelfs is read-only (use ro or nothing)".into());
        }
        if key.starts_with("x-") || key == "comment" {
            continue;
        }
        let Some(v) = value else {
            if word(&mut o, key).is_some() {
                continue;
            }
            if let Some(takes) = takes_of(key) {
                return Err(bad_value(&format!("-o {key}="), takes, ""));
            }
            return Err(format!("unknown mount option: {opt}"));
        };
        let name = format!("-o {key}=");
        let bad = |takes: &str| bad_value(&name, takes, v);
        match key {
            "fsname" => o.fsname = Some(value::non_empty(v, value::NAME).map_err(bad)?),
            "subtype" => o.subtype = Some(value::subtype(v).map_err(bad)?),
            "path_root" => o.path_root = Some(value::path_root(v).map_err(bad)?),
            "ttl" => o.ttl = Some(value::ttl(v).map_err(bad)?),
            "source_timeout" => o.source_timeout = Some(value::source_timeout(v).map_err(bad)?),
            "stale_if_error" => o.stale_if_error = Some(value::stale_if_error(v).map_err(bad)?),
            "drift" => o.drift = Some(value::drift(v).map_err(bad)?),
            "index_dir" => o.index_dir = Some(value::non_empty(v, value::DIR).map_err(bad)?),
            "log_file" => o.log_file = Some(value::non_empty(v, value::FILE).map_err(bad)?),
            "io_uring" => o.io_uring = Some(value::io_uring(v).map_err(bad)?),
            "failover" => o.failover = Some(value::failover(v).map_err(bad)?),
            "freshness" => o.freshness = Some(value::freshness(v).map_err(bad)?),
            "formats" => o.formats = Some(novelfs_fs::Formats::parse(v).map_err(bad)?),
            "cache_size" => o.cache_size = Some(value::cache_size(v).map_err(bad)?),
            "max_chapter_bytes" => {
                o.max_chapter_bytes = Some(value::max_chapter_bytes(v).map_err(bad)?)
            }
            "threads" => o.threads = Some(value::threads(v).map_err(bad)?),
            "state_file" => o.state_file = Some(value::non_empty(v, value::FILE).map_err(bad)?),
            "endpoint_url" => o.bucket.endpoint_url = Some(value::endpoint(v).map_err(bad)?),
            "region" => o.bucket.region = Some(value::region(v).map_err(bad)?),
            "profile" => o.bucket.profile = Some(value::non_empty(v, value::NAME).map_err(bad)?),
            "account" => o.bucket.account = Some(value::non_empty(v, value::NAME).map_err(bad)?),
            k if word(&mut MountOptions::default(), k).is_some() => {
                return Err(format!("-o {k} takes no value, not {v:?}"));
            }
            _ => return Err(format!("unknown mount option: {opt}")),
        }
    }
    if o.allow_other && o.allow_root {
        return Err(conflict("-o allow_other", "-o allow_root"));
    }
    Ok(o)
}

/// What a `-o` option with a value takes (`None` for the rest).
fn takes_of(key: &str) -> Option<&'static str> {
    Some(match key {
        "fsname" => value::NAME,
        "subtype" => value::SUBTYPE,
        "path_root" => value::PATH_ROOT,
        "ttl" => value::TTL,
        "source_timeout" => value::SOURCE_TIMEOUT,
        "stale_if_error" => value::STALE_IF_ERROR,
        "drift" => value::DRIFT,
        "index_dir" => value::DIR,
        "log_file" => value::FILE,
        "io_uring" => value::IO_URING,
        "failover" => value::FAILOVER,
        "freshness" => value::FRESHNESS,
        "formats" => novelfs_fs::Formats::TAKES,
        "cache_size" => value::SIZE,
        "max_chapter_bytes" => value::CHAPTER_SIZE,
        "threads" => value::THREADS,
        "state_file" => value::FILE,
        "endpoint_url" => value::ENDPOINT,
        "region" => value::REGION,
        "profile" => value::NAME,
        "account" => value::NAME,
        _ => return None,
    })
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

    fn opts(s: &str) -> Result<MountOptions, String> {
        parse_options(&[s.to_string()])
    }

    #[test]
    fn fstab_options() {
        let o = opts(
            "ro,allow_other,ttl=0.5,fsname=lib,noatime,nodev,nosuid,_netdev,x-systemd.automount",
        )
        .unwrap();
        assert!(!o.no_watch);
        assert!(opts("nowatch").unwrap().no_watch);
        assert!(o.allow_other);
        assert_eq!(o.ttl, Some(0.5));
        assert_eq!(o.fsname.as_deref(), Some("lib"));
        assert!(opts("rw").unwrap_err().contains("read-only"));
        assert!(opts("bogus").unwrap_err().contains("unknown"));
        assert!(opts("allow_other,allow_root").is_err());
        assert!(opts("ttl=-1").is_err());
        assert_eq!(
            opts("path_root=/library/").unwrap().path_root.as_deref(),
            Some("/library")
        );
        assert!(opts("path_root=library").is_err());
        assert_eq!(
            opts("subtype=novels2").unwrap().subtype.as_deref(),
            Some("novels2")
        );
        assert!(opts("subtype=a b").is_err());
        assert!(opts("subtype=a/b").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
    }
}
