//! Every reference case of the original tool, three ways: the `novelfs read`
//! binary, `NovelFs` in-process without FUSE, and a real mount read with
//! plain std::fs calls. One loop (`crate::common::golden`) checks all three.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::golden::{Refusal, Stat, Tree, Way, check_every_case, page_name};
use crate::common::s3_server::Emulator;
use crate::common::{Case, Mount};
use novelfs::fs::{FsConfig, Kind, NovelFs, ROOT_INO};
use serde_json::Value;

/// Writes the switch file for `state` (or makes sure there is none).
fn write_state(file: &Path, state: Option<&Value>) {
    match state {
        Some(v) => std::fs::write(file, v.to_string()).unwrap(),
        None => {
            let _ = std::fs::remove_file(file);
        }
    }
}

struct Cli {
    root: PathBuf,
    state_file: PathBuf,
    /// `--path-root`, when the cases are written with that root.
    path_root: Option<&'static str>,
}

impl Way for Cli {
    fn use_state(&mut self, state: Option<&Value>) {
        write_state(&self.state_file, state);
    }
    fn page(&self, case: &Case, json: bool) -> Result<Vec<u8>, Refusal> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_novelfs"));
        cmd.arg("read")
            .arg("--root")
            .arg(&self.root)
            .arg("--state-file")
            .arg(&self.state_file);
        if let Some(p) = self.path_root {
            cmd.arg("--path-root").arg(p);
        }
        cmd.arg(&case.book).arg(&case.chapter);
        if let Some(o) = case.offset {
            cmd.arg("--offset").arg(o.to_string());
        }
        if let Some(l) = case.limit {
            cmd.arg("--limit").arg(l.to_string());
        }
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("novelfs runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) if stderr.is_empty() => Ok(out.stdout),
            // An error is exit 1, nothing on stdout, the text and a newline on stderr.
            Some(1) if out.stdout.is_empty() && stderr.ends_with('\n') => Err(Refusal::Text(
                stderr.strip_suffix('\n').unwrap().to_string(),
            )),
            status => Err(Refusal::Text(format!(
                "<status {status:?}, stdout {} bytes, stderr {stderr:?}>",
                out.stdout.len()
            ))),
        }
    }
}

#[test]
fn every_reference_case_through_the_cli() {
    let (guard, root) = crate::common::reference_library();
    let cases = crate::common::cases(&root);
    assert_eq!(cases.len(), 181, "the reference set has 181 cases");
    let mut way = Cli {
        root,
        state_file: guard.path().join("state.json"),
        path_root: None,
    };
    check_every_case("through the CLI", &cases, &mut way);
}

/// `--path-root /library`: every page, JSON and error text is the reference
/// one with `/library` as its root, wherever the library really is.
#[test]
fn every_reference_case_through_the_cli_with_a_path_root() {
    let (guard, root) = crate::common::reference_library();
    let cases = crate::common::cases(Path::new(PATH_ROOT));
    let mut way = Cli {
        root,
        state_file: guard.path().join("state.json"),
        path_root: Some(PATH_ROOT),
    };
    check_every_case("through the CLI with a path root", &cases, &mut way);
}

const PATH_ROOT: &str = "/library";

/// `NovelFs` driven as the kernel drives it: lookups from the root, aliases
/// followed by readlink, reads and listings by inode.
struct InProcess {
    root: PathBuf,
    state_file: PathBuf,
    fs: NovelFs,
}

impl InProcess {
    fn mount(root: &Path, state_file: &Path) -> NovelFs {
        let config = FsConfig {
            ttl: std::time::Duration::ZERO,
            watch: false,
            state_file: Some(state_file.to_path_buf()),
            ..FsConfig::default()
        };
        NovelFs::new(novelfs::storage::open_local(root).unwrap(), config)
    }

    /// The inode of `path` and its kind; with `follow_last`, an alias at
    /// the end is followed too.
    fn walk(&self, path: &[&str], follow_last: bool) -> Result<(u64, Kind), i32> {
        let mut at = (ROOT_INO, Kind::Directory);
        for (i, part) in path.iter().enumerate() {
            let parent = at.0;
            let attr = self
                .fs
                .lookup(parent, OsStr::new(part))
                .map_err(|e| e.errno())?;
            at = (attr.ino, attr.kind);
            if attr.kind == Kind::Symlink && (follow_last || i + 1 < path.len()) {
                // Aliases point at a sibling name, as the kernel resolves them.
                let target = self.fs.readlink(attr.ino).map_err(|e| e.errno())?;
                let attr = self.fs.lookup(parent, &target).map_err(|e| e.errno())?;
                at = (attr.ino, attr.kind);
            }
        }
        Ok(at)
    }
}

impl Tree for InProcess {
    fn read(&self, path: &[&str]) -> Result<Vec<u8>, i32> {
        let (ino, kind) = self.walk(path, true)?;
        if kind == Kind::Directory {
            return Err(libc::EISDIR);
        }
        // In pieces, as the kernel reads, to exercise offsets.
        let mut bytes = Vec::new();
        loop {
            let piece = self
                .fs
                .read(ino, bytes.len() as u64, 4096)
                .map_err(|e| e.errno())?;
            if piece.is_empty() {
                return Ok(bytes);
            }
            bytes.extend(piece);
        }
    }
    fn list(&self, path: &[&str]) -> Result<Vec<String>, i32> {
        let (ino, kind) = self.walk(path, true)?;
        if kind != Kind::Directory {
            return Err(libc::ENOTDIR);
        }
        // One listing holds every entry; READDIR pieces only continue it.
        let listing = self.fs.listing(ino, 0).map_err(|e| e.errno())?;
        let mut names: Vec<String> = listing
            .entries
            .iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
    fn lstat(&self, path: &[&str]) -> Result<Stat, i32> {
        let (ino, kind) = self.walk(path, false)?;
        let attr = self.fs.getattr(ino).map_err(|e| e.errno())?;
        Ok(Stat {
            is_dir: kind == Kind::Directory,
            is_symlink: kind == Kind::Symlink,
            size: attr.size,
            blocks: attr.blocks(),
        })
    }
    fn readlink(&self, path: &[&str]) -> Result<String, i32> {
        let (ino, _) = self.walk(path, false)?;
        Ok(self
            .fs
            .readlink(ino)
            .map_err(|e| e.errno())?
            .to_string_lossy()
            .into_owned())
    }
}

impl Way for InProcess {
    fn use_state(&mut self, state: Option<&Value>) {
        write_state(&self.state_file, state);
        // A fresh instance: nothing cached from the other state.
        self.fs = Self::mount(&self.root, &self.state_file);
    }
    fn tree(&self) -> Option<&dyn Tree> {
        Some(self)
    }
}

#[test]
fn every_reference_case_in_process_without_fuse() {
    let (guard, root) = crate::common::reference_library();
    let cases = crate::common::cases(&root);
    let state_file = guard.path().join("state.json");
    let fs = InProcess::mount(&root, &state_file);
    let mut way = InProcess {
        root,
        state_file,
        fs,
    };
    check_every_case("in-process", &cases, &mut way);
}

struct Mounted {
    root: PathBuf,
    state_file: PathBuf,
    /// More `novelfs mount` arguments.
    extra: Vec<&'static str>,
    mount: Option<Mount>,
    /// Served through FUSE over io_uring.
    io_uring: bool,
    /// More of the daemon's environment (a bucket's credentials).
    env: Vec<(&'static str, std::ffi::OsString)>,
}

impl Tree for Mounted {
    fn read(&self, path: &[&str]) -> Result<Vec<u8>, i32> {
        self.tree_at().read(path)
    }
    fn list(&self, path: &[&str]) -> Result<Vec<String>, i32> {
        self.tree_at().list(path)
    }
    fn lstat(&self, path: &[&str]) -> Result<Stat, i32> {
        self.tree_at().lstat(path)
    }
    fn readlink(&self, path: &[&str]) -> Result<String, i32> {
        self.tree_at().readlink(path)
    }
}

impl Mounted {
    fn tree_at(&self) -> crate::common::golden::PathTree<'_> {
        crate::common::golden::PathTree(self.mount.as_ref().expect("mounted").path())
    }
}

impl Way for Mounted {
    fn use_state(&mut self, state: Option<&Value>) {
        write_state(&self.state_file, state);
        // The switch file is read at most once a second: a new mount sees
        // the new state at once.
        self.mount = None;
        let mut args = vec!["--state-file", self.state_file.to_str().unwrap()];
        args.extend_from_slice(&self.extra);
        let env: Vec<(&str, &std::ffi::OsStr)> =
            self.env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        self.mount = Some(if self.io_uring {
            crate::common::uring::mount(&self.root, &args)
        } else {
            Mount::with_env(&self.root, &args, "warn", &env)
        });
    }
    fn tree(&self) -> Option<&dyn Tree> {
        Some(self)
    }
}

#[test]
fn every_reference_case_through_a_mount() {
    require_fuse!();
    let (guard, root) = crate::common::reference_library();
    let cases = crate::common::cases(&root);
    let mut way = Mounted {
        root,
        state_file: guard.path().join("state.json"),
        extra: vec![],
        mount: None,
        io_uring: false,
        env: Vec::new(),
    };
    check_every_case("through a mount", &cases, &mut way);
    // Each listed page name was checked above through the cases; this
    // makes sure the case set does reach the mount's special names.
    assert!(cases.iter().any(|c| page_name(c).contains("-limit-")));
}

/// The same loop with every request served through FUSE over io_uring
/// (`--io-uring on` refuses to mount otherwise).
#[cfg(feature = "io-uring")]
#[test]
fn every_reference_case_through_an_io_uring_mount() {
    require_fuse!();
    if !crate::common::uring::available() {
        return;
    }
    let (guard, root) = crate::common::reference_library();
    let cases = crate::common::cases(&root);
    let mut way = Mounted {
        root,
        state_file: guard.path().join("state.json"),
        extra: vec![],
        mount: None,
        io_uring: true,
        env: Vec::new(),
    };
    check_every_case("through an io_uring mount", &cases, &mut way);
}

/// Pages, sizes and ERROR files with `/library` as the root, as a sandbox
/// that binds the mount at /library sees them; `-o path_root=` is the same
/// option, for fstab.
#[test]
fn every_reference_case_through_a_mount_with_a_path_root() {
    require_fuse!();
    let (guard, root) = crate::common::reference_library();
    let cases = crate::common::cases(Path::new(PATH_ROOT));
    for extra in [
        vec!["--path-root", PATH_ROOT],
        vec!["-o", "ro,path_root=/library/"],
    ] {
        let mut way = Mounted {
            root: root.clone(),
            state_file: guard.path().join("state.json"),
            extra,
            mount: None,
            io_uring: false,
            env: Vec::new(),
        };
        check_every_case("through a mount with a path root", &cases, &mut way);
    }
}

/// The reference library uploaded to a bucket (moto on 127.0.0.1) and
/// mounted as `s3://BUCKET/PREFIX`: every case gives what it gives from
/// disk, byte for byte, with the pages' root written as `/library`.
#[test]
fn every_reference_case_through_a_bucket_mount() {
    reference_cases_through(Emulator::Moto);
}

/// The same through `gs://BUCKET/PREFIX` (fake-gcs-server).
#[test]
fn every_reference_case_through_a_gcs_bucket_mount() {
    reference_cases_through(Emulator::FakeGcs);
}

/// The same through `az://CONTAINER/PREFIX` (Azurite).
#[test]
fn every_reference_case_through_an_azure_container_mount() {
    reference_cases_through(Emulator::Azurite);
}

fn reference_cases_through(emulator: Emulator) {
    require_fuse!();
    let (guard, root) = crate::common::reference_library();
    let Some(bucket) = crate::common::bucket::Bucket::with_cloud(&root, emulator) else {
        return;
    };
    let cases = crate::common::cases(Path::new(PATH_ROOT));
    let endpoint: &'static str = Box::leak(bucket.server.endpoint().into_boxed_str());
    let mut extra: Vec<&'static str> = bucket
        .args(endpoint, &["--path-root", PATH_ROOT])
        .into_iter()
        .map(|a| &*Box::leak(a.to_string().into_boxed_str()))
        .collect();
    extra.shrink_to_fit();
    let mut way = Mounted {
        root: PathBuf::from(bucket.url()),
        state_file: guard.path().join("state.json"),
        extra,
        mount: None,
        io_uring: false,
        env: bucket.env(),
    };
    check_every_case(
        &format!("through a {emulator:?} bucket mount"),
        &cases,
        &mut way,
    );
    let counts = bucket.server.counts();
    assert_eq!(counts.head, 0, "no HEAD per chapter: {counts:?}");
}
