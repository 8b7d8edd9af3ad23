//! The `-o` list of `novelfs mount` (and of mount(8) and fstab): each
//! option's value checked by the rule its flag uses (`value`).

use super::value::{self, bad_value, conflict};

/// The parsed `-o` list.
#[derive(Debug, Clone, Default)]
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
    pub io_uring: Option<crate::mount::transport::IoUring>,
    /// `index_dir=DIR`: where the persistent index lives.
    pub index_dir: Option<String>,
    /// `noindex`: no persistent index.
    pub no_index: bool,
    /// `endpoint_url=`, `account=`, `region=`, `profile=`, `force_path_style`,
    /// `no_sign_request`: how to reach a library in a bucket.
    pub bucket: novelfs_storage::StoreOptions,
    pub cache_size: Option<usize>,
    pub max_chapter_bytes: Option<u64>,
    pub threads: Option<usize>,
    pub state_file: Option<String>,
    /// `failover[=auto|on|off]`, `nofailover`: whether a holder keeps the
    /// connection (see `failover`).
    pub failover: Option<crate::mount::failover::Failover>,
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
        "failover" => o.failover = Some(crate::mount::failover::Failover::On),
        "nofailover" => o.failover = Some(crate::mount::failover::Failover::Off),
        "force_path_style" => o.bucket.force_path_style = true,
        "no_sign_request" => o.bucket.credentials = novelfs_storage::Credentials::Anonymous,
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
}
