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
    pub no_watch: bool,
    pub path_root: Option<String>,
    pub log_file: Option<String>,
    /// `io_uring=auto|on|off` (see `transport`).
    pub io_uring: Option<super::transport::IoUring>,
    /// `index_dir=DIR`: where the persistent index lives.
    pub index_dir: Option<String>,
    /// `noindex`: no persistent index.
    pub no_index: bool,
    /// `endpoint_url=`, `region=`, `profile=`, `force_path_style`: how to
    /// reach a library in a bucket.
    pub bucket: super::library_at::BucketOptions,
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
        match (key, value) {
            ("ro", None) => {}
            ("rw", None) => {
                return Err("option rw: novelfs is read-only (use ro or nothing)".into());
            }
            ("allow_other", None) => o.allow_other = true,
            ("allow_root", None) => o.allow_root = true,
            ("auto_unmount", None) => o.auto_unmount = true,
            ("default_permissions", None) => o.default_permissions = true,
            ("fsname", Some(v)) => o.fsname = Some(v.to_string()),
            ("subtype", Some(v)) => o.subtype = Some(parse_subtype(v)?),
            ("path_root", Some(v)) => o.path_root = Some(novelfs_library::normalize_path_root(v)?),
            ("ttl", Some(v)) => o.ttl = Some(parse_ttl(v)?),
            ("source_timeout", Some(v)) => o.source_timeout = Some(parse_source_timeout(v)?),
            ("index_dir", Some(v)) => o.index_dir = Some(v.to_string()),
            ("noindex", None) => o.no_index = true,
            ("endpoint_url", Some(v)) => o.bucket.endpoint_url = Some(v.to_string()),
            ("region", Some(v)) => o.bucket.region = Some(v.to_string()),
            ("profile", Some(v)) => o.bucket.profile = Some(v.to_string()),
            ("force_path_style", None) => o.bucket.force_path_style = true,
            ("nowatch", None) => o.no_watch = true,
            ("log_file", Some(v)) if !v.is_empty() => o.log_file = Some(v.to_string()),
            ("io_uring", Some(v)) => o.io_uring = Some(super::transport::IoUring::parse(v)?),
            (k, _) if k.starts_with("x-") || k == "comment" || GENERIC_OPTIONS.contains(&k) => {}
            _ => return Err(format!("unknown mount option: {opt}")),
        }
    }
    if o.allow_other && o.allow_root {
        return Err("allow_other and allow_root are mutually exclusive".into());
    }
    Ok(o)
}

/// The part after `fuse.` in the mount's type: a plain word.
fn parse_subtype(v: &str) -> Result<String, String> {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'));
    if plain {
        Ok(v.to_string())
    } else {
        Err(format!(
            "subtype must be a plain word (letters, digits, _ - . +), not {v:?}"
        ))
    }
}

pub(crate) fn parse_ttl(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..=86_400.0).contains(&t) => Ok(t),
        _ => Err(format!(
            "ttl must be a number of seconds between 0 and 86400, not {v:?}"
        )),
    }
}

pub(crate) fn parse_source_timeout(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 3600.0 => Ok(t),
        _ => Err(format!(
            "source_timeout must be a number of seconds above 0 and at most 3600, not {v:?}"
        )),
    }
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
