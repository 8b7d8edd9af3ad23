//! The kernel's table of mounts (`/proc/self/mountinfo`), read in one place.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One line of mountinfo: the fields novelfs looks at.
struct MountEntry {
    id: u64,
    /// The device, `major:minor` (a FUSE mount's names its connection).
    device: String,
    /// The mount point, unescaped (mountinfo writes space, tab, newline and
    /// `\` as octal escapes).
    mount_point: Vec<u8>,
    /// The filesystem type, e.g. `fuse.novelfs`, `tmpfs`.
    fs_type: String,
}

fn entries() -> Vec<MountEntry> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MountEntry> {
    let mut fields = line.split(' ');
    let id = fields.next()?.parse::<u64>().ok()?;
    let device = fields.nth(1)?.to_string();
    let mount_point = unescape(fields.nth(1)?);
    // A variable number of optional fields ends with `-`; the type follows.
    let fs_type = fields.skip_while(|f| *f != "-").nth(1)?;
    let fs_type = String::from_utf8_lossy(&unescape(fs_type)).into_owned();
    Some(MountEntry {
        id,
        device,
        mount_point,
        fs_type,
    })
}

fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// The id of the topmost mount at `mount_point` (canonical).
pub(crate) fn mount_id(mount_point: &Path) -> Option<u64> {
    topmost(mount_point).map(|e| e.id)
}

/// The device (`major:minor`) of the topmost mount at `mount_point`
/// (canonical).
pub(crate) fn mount_device(mount_point: &Path) -> Option<String> {
    topmost(mount_point).map(|e| e.device)
}

/// The type of the topmost mount at `mount_point` (canonical), e.g.
/// `fuse.novelfs`; `None` when nothing is mounted there.
pub(crate) fn mount_type(mount_point: &Path) -> Option<String> {
    topmost(mount_point).map(|e| e.fs_type)
}

/// The type of the mount `path` (absolute, canonical) lies on: the
/// topmost mount at the longest mount point that holds it.
pub(crate) fn fs_type_containing(path: &Path) -> Option<String> {
    let entries = entries();
    let holds =
        |e: &&MountEntry| path.starts_with(Path::new(std::ffi::OsStr::from_bytes(&e.mount_point)));
    let longest = entries
        .iter()
        .filter(holds)
        .map(|e| e.mount_point.len())
        .max()?;
    entries
        .into_iter()
        .rev()
        .find(|e| e.mount_point.len() == longest && holds(&e))
        .map(|e| e.fs_type)
}

/// Later lines of mountinfo are mounted on top of earlier ones.
fn topmost(mount_point: &Path) -> Option<MountEntry> {
    let want = mount_point.as_os_str().as_bytes();
    entries().into_iter().rev().find(|e| e.mount_point == want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_undone() {
        assert_eq!(unescape(r"/tmp/a\040b"), b"/tmp/a b");
        assert_eq!(unescape(r"/tmp/a\\b"), br"/tmp/a\\b");
    }

    #[test]
    fn a_line_gives_its_id_and_mount_point() {
        let e =
            parse_line("36 35 98:0 / /mnt/my\\040books rw,noatime master:1 - fuse.novelfs /srv ro")
                .unwrap();
        assert_eq!(e.id, 36);
        assert_eq!(e.device, "98:0");
        assert_eq!(e.mount_point, b"/mnt/my books");
        assert_eq!(e.fs_type, "fuse.novelfs");
        let no_optional_fields =
            parse_line("40 1 0:52 / /tmp/x rw,relatime - tmpfs tmpfs rw,size=1024k").unwrap();
        assert_eq!(no_optional_fields.fs_type, "tmpfs");
        assert!(parse_line("garbage").is_none());
    }

    #[test]
    fn a_path_lies_on_the_mount_of_its_longest_mount_point() {
        assert_eq!(
            fs_type_containing(Path::new("/proc/self")).as_deref(),
            Some("proc")
        );
        assert!(fs_type_containing(Path::new("/")).is_some());
    }

    #[test]
    fn the_root_is_a_mount_point() {
        assert!(mount_id(Path::new("/")).is_some());
        assert!(mount_type(Path::new("/no/such/mount/point")).is_none());
        assert!(mount_type(Path::new("/")).is_some_and(|t| !t.is_empty()));
    }
}
