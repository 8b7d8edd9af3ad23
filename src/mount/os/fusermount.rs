//! fusermount3, the setuid helper that mounts and unmounts FUSE for users
//! who are not root.

use std::path::PathBuf;

/// fusermount3 (or the older fusermount) on PATH or in the usual places.
pub fn fusermount() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path)
        .chain(["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map(PathBuf::from));
    let dirs: Vec<PathBuf> = dirs.collect();
    ["fusermount3", "fusermount"]
        .iter()
        .find_map(|name| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()))
}

/// fusermount3 reads `\` as an escape in option values: a library path
/// with a comma must not split the option list.
pub(crate) fn escape_option_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace(',', "\\,")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_with_commas_stay_one_option() {
        assert_eq!(escape_option_value("/srv/a,b\\c"), "/srv/a\\,b\\\\c");
    }
}
