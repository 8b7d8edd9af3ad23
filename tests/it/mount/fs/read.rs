//! READ through a real mount: every listed file's size and partial reads,
//! mmap, and ordinary tools reading the mount.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::strict;

fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            walk_files(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}

#[test]
fn every_listed_file_has_its_exact_size_and_partial_reads_agree() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let m = strict(&root);
    let mut files = Vec::new();
    walk_files(m.path(), &mut files);
    assert!(files.len() > 60, "walked {} files", files.len());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let meta = std::fs::metadata(f).unwrap();
        assert_eq!(meta.len(), bytes.len() as u64, "{}", f.display());
        assert_eq!(
            meta.blocks(),
            (bytes.len() as u64).div_ceil(512),
            "{}",
            f.display()
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o444);
        // seek + small reads
        let mut h = std::fs::File::open(f).unwrap();
        let mid = bytes.len() / 3;
        h.seek(SeekFrom::Start(mid as u64)).unwrap();
        let mut buf = vec![0; 777];
        let n = h.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], &bytes[mid..(mid + 777).min(bytes.len())]);
        h.seek(SeekFrom::Start(bytes.len() as u64 + 10)).unwrap();
        assert_eq!(
            h.read(&mut buf).unwrap(),
            0,
            "reading past the end gives EOF"
        );
    }
    let dir_mode = std::fs::metadata(m.path().join("星河旧梦"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o555);
    println!("walked {} files through the mount", files.len());
}

#[test]
fn mmap_returns_the_same_bytes() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let m = strict(&root);
    let p = m.path().join("星河旧梦/31/offset-1.txt");
    let want = std::fs::read(&p).unwrap();
    let f = std::fs::File::open(&p).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: mapping a read-only file privately; unmapped below.
    let got = unsafe {
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            want.len(),
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(
            ptr,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        let v = std::slice::from_raw_parts(ptr as *const u8, want.len()).to_vec();
        libc::munmap(ptr, want.len());
        v
    };
    assert_eq!(got, want);
}

#[test]
fn ordinary_tools_work_on_the_mount() {
    require_fuse!();
    let (_g, root) = crate::common::reference_library();
    let m = strict(&root);
    let run = |cmd: &mut Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let ls = run(Command::new("ls")
        .arg("-l")
        .arg(m.path().join("星河旧梦/31/")));
    assert!(ls.contains("offset-401.txt"), "{ls}");
    let grep = run(Command::new("grep")
        .arg("-rl")
        .arg("超长行")
        .arg(m.path().join("星河旧梦")));
    assert!(grep.contains("第30章 超长行.md/offset-1.txt"), "{grep}");
    let tail = run(Command::new("tail")
        .arg("-n2")
        .arg(m.path().join("星河旧梦/31/offset-401.txt")));
    assert!(
        tail.starts_with("(本章共 520 行 / ") && tail.ends_with(" 字)\n</content>\n"),
        "{tail:?}"
    );
    let copy = tempfile::tempdir().unwrap();
    run(Command::new("cp")
        .arg("-r")
        .arg(m.path().join("短篇集"))
        .arg(copy.path()));
    let copied = std::fs::read(copy.path().join("短篇集/01-短篇1.md/offset-1.txt")).unwrap();
    assert_eq!(
        copied,
        std::fs::read(m.path().join("短篇集/1/offset-1.txt")).unwrap()
    );
    let py = run(Command::new("python3")
        .arg("-c")
        .arg("import sys; print(len(open(sys.argv[1], encoding='utf-8').read()))")
        .arg(m.path().join("星河旧梦/1/offset-1.txt")));
    assert!(py.trim().parse::<usize>().unwrap() > 100);
}
