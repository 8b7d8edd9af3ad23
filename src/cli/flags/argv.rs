//! The two argv forms clap cannot see: `novelfs ROOT MOUNTPOINT` (what
//! mount.fuse3 runs for an fstab line) and the `mount.novelfs` helper that
//! mount(8) runs; and what novelfs adds to clap's errors about them.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::args::{subcommand_names, visible_subcommands};

/// How the command line was read before clap saw it.
#[derive(Debug, PartialEq)]
pub(crate) enum Invocation {
    /// Parse these arguments; `fstab_root` is set when a directory was taken
    /// as the ROOT of `novelfs ROOT MOUNTPOINT`.
    Args {
        args: Vec<OsString>,
        fstab_root: Option<OsString>,
    },
    /// mount(8) asked for a fake mount (`mount -f`): do nothing, succeed.
    FakeMount,
    /// A helper invocation that cannot be read.
    Usage(String),
}

/// Turns the two argv forms that are not subcommands into `mount`:
/// `novelfs ROOT MOUNTPOINT …` (what mount.fuse3 runs), only when ROOT is
/// an existing directory, and `mount.novelfs ROOT MOUNTPOINT [-o OPTS]
/// [-t TYPE] [-n] [-s] [-v] [-f]` (what mount(8) runs).
pub(crate) fn prepare_argv(mut args: Vec<OsString>) -> Invocation {
    let program = args
        .first()
        .map(|a| Path::new(a).file_name().unwrap_or(a).to_os_string())
        .unwrap_or_default();
    if program.to_string_lossy().starts_with("mount.") {
        return helper_argv(&program, &args[1..]);
    }
    let fstab_root = args
        .get(1)
        .filter(|word| {
            let w = word.to_string_lossy();
            !w.starts_with('-')
                && !subcommand_names().iter().any(|n| *n == w)
                && Path::new(word).is_dir()
        })
        .cloned();
    if fstab_root.is_some() {
        args.insert(1, OsString::from("mount"));
    }
    Invocation::Args { args, fstab_root }
}

fn helper_argv(program: &OsStr, rest: &[OsString]) -> Invocation {
    let usage = || {
        Invocation::Usage(format!(
            "usage: {} ROOT MOUNTPOINT [-o OPTIONS] (the helper mount(8) runs for a novelfs or fuse.novelfs mount; see novelfs --help)",
            program.to_string_lossy()
        ))
    };
    let [root, mountpoint, flags @ ..] = rest else {
        return usage();
    };
    let mut options: Vec<String> = Vec::new();
    let mut fake = false;
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        match flag.to_str() {
            Some("-o") => match flags.next() {
                Some(list) => options.extend(
                    list.to_string_lossy()
                        .split(',')
                        // mount(8) adds rw whenever ro is not given; the
                        // mount is read-only whatever it says.
                        .filter(|o| !o.is_empty() && *o != "rw")
                        .map(str::to_string),
                ),
                None => return usage(),
            },
            // The type is known: this helper serves only novelfs.
            Some("-t") => {
                if flags.next().is_none() {
                    return usage();
                }
            }
            // No mtab to skip, sloppy and verbose change nothing here.
            Some("-n" | "-s" | "-v") => {}
            Some("-f") => fake = true,
            _ => {
                return Invocation::Usage(format!(
                    "{}: unknown argument {:?}; mount(8) passes only -o, -t, -n, -s, -v and -f",
                    program.to_string_lossy(),
                    flag
                ));
            }
        }
    }
    if fake {
        return Invocation::FakeMount;
    }
    let mut args: Vec<OsString> = vec!["novelfs".into(), "mount".into(), root.clone()];
    args.push(mountpoint.clone());
    if !options.is_empty() {
        args.push("-o".into());
        args.push(options.join(",").into());
    }
    Invocation::Args {
        args,
        fstab_root: None,
    }
}

/// Adds what novelfs knows to clap's own error: why an unknown word is not
/// the fstab form, and what a lone directory is missing.
pub(crate) fn explain(
    mut err: clap::Error,
    args: &[OsString],
    fstab_root: Option<&OsStr>,
) -> clap::Error {
    let mut tips: Vec<String> = Vec::new();
    match (err.kind(), fstab_root) {
        (ErrorKind::MissingRequiredArgument, Some(root)) => {
            let root = root.to_string_lossy();
            tips.push(format!(
                "'{root}' is a directory, so `novelfs {root} …` mounts it: give the MOUNTPOINT too (`novelfs {root} MOUNTPOINT`)"
            ));
            tips.push(format!(
                "or use a subcommand: {} (`novelfs --help`)",
                visible_subcommands()
            ));
        }
        (ErrorKind::InvalidSubcommand, _) => {
            let word = args.get(1).map(|w| w.to_string_lossy()).unwrap_or_default();
            let path = Path::new(word.as_ref());
            if path.exists() {
                tips.push(format!(
                    "'{word}' is not a directory, so it is not the ROOT of `novelfs ROOT MOUNTPOINT`"
                ));
            } else if word.contains('/') {
                tips.push(format!(
                    "'{word}' does not exist; `novelfs ROOT MOUNTPOINT` mounts ROOT only when it is an existing directory"
                ));
            }
            tips.push(format!(
                "the subcommands are {} (`novelfs --help`)",
                visible_subcommands()
            ));
        }
        _ => {}
    }
    if !tips.is_empty() {
        let mut all = match err.get(ContextKind::Suggested) {
            Some(ContextValue::StyledStrs(v)) => v.clone(),
            _ => Vec::new(),
        };
        all.extend(tips.into_iter().map(Into::into));
        err.insert(ContextKind::Suggested, ContextValue::StyledStrs(all));
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    fn args_of(inv: Invocation) -> Vec<OsString> {
        match inv {
            Invocation::Args { args, .. } => args,
            other => panic!("not arguments: {other:?}"),
        }
    }

    #[test]
    fn an_existing_directory_first_is_the_fstab_form() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        assert_eq!(
            prepare_argv(v(&["novelfs", root, "/mnt", "-o", "ro"])),
            Invocation::Args {
                args: v(&["novelfs", "mount", root, "/mnt", "-o", "ro"]),
                fstab_root: Some(root.into()),
            }
        );
        let missing = dir.path().join("missing");
        let missing = missing.to_str().unwrap();
        for unchanged in [
            v(&["novelfs", "read", "b", "1"]),
            v(&["novelfs", "--help"]),
            v(&["novelfs", "umount", "/mnt"]),
            v(&["novelfs", "foo", "/mnt"]),
            v(&["novelfs", missing, "/mnt"]),
        ] {
            assert_eq!(args_of(prepare_argv(unchanged.clone())), unchanged);
        }
    }

    #[test]
    fn mount_helper_arguments() {
        let args = |a: &[&str]| args_of(prepare_argv(v(a)));
        assert_eq!(
            args(&["/sbin/mount.fuse.novelfs", "/srv/lib", "/mnt", "-o", "rw"]),
            v(&["novelfs", "mount", "/srv/lib", "/mnt"])
        );
        assert_eq!(
            args(&[
                "mount.novelfs",
                "/srv/lib",
                "/mnt",
                "-n",
                "-v",
                "-o",
                "ro,allow_other,rw,ttl=2",
                "-t",
                "fuse.novelfs"
            ]),
            v(&[
                "novelfs",
                "mount",
                "/srv/lib",
                "/mnt",
                "-o",
                "ro,allow_other,ttl=2"
            ])
        );
        assert_eq!(
            prepare_argv(v(&["mount.novelfs", "/srv/lib", "/mnt", "-f", "-o", "ro"])),
            Invocation::FakeMount
        );
        for bad in [
            &["mount.novelfs", "/srv/lib"][..],
            &["mount.novelfs", "/srv/lib", "/mnt", "-o"],
            &["mount.novelfs", "/srv/lib", "/mnt", "--bogus"],
        ] {
            assert!(
                matches!(prepare_argv(v(bad)), Invocation::Usage(_)),
                "{bad:?}"
            );
        }
    }
}
