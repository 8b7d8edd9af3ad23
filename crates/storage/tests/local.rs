//! `LocalStorage` over a real directory: the same shapes as the S3 tests
//! where a local disk has them (listing with versions, reads of a version,
//! a rewrite changing the version), and the local rules (a symlink is
//! never an entry nor read through).

use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use novelfs_library::backing::SourceKind;
use novelfs_storage::{
    InFlight, Kind, LocalStorage, ReadRequest, RelPath, Storage, StorageError, Version,
};

fn path(p: &str) -> RelPath {
    RelPath::new(p).unwrap()
}

fn library() -> (tempfile::TempDir, LocalStorage) {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("novels/书");
    std::fs::create_dir_all(&book).unwrap();
    for i in 1..=3 {
        std::fs::write(
            book.join(format!("第{i}章.md")),
            format!("第{i}章的正文").repeat(i),
        )
        .unwrap();
    }
    std::fs::create_dir(dir.path().join("novels/空书")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", book.join("第9章.md")).unwrap();
    std::os::unix::fs::symlink(&book, dir.path().join("novels/链接书")).unwrap();
    let storage = LocalStorage::new(dir.path());
    (dir, storage)
}

#[test]
fn a_listing_has_files_and_dirs_with_sizes_and_no_symlinks() {
    let (dir, local) = library();
    local.check().unwrap();
    let books: Vec<_> = local.list(&path("novels")).unwrap();
    let names: Vec<_> = books
        .iter()
        .map(|e| (e.name.to_str().unwrap(), e.kind))
        .collect();
    assert_eq!(names, [("书", Kind::Dir), ("空书", Kind::Dir)]);
    let chapters = local.list(&path("novels/书")).unwrap();
    assert_eq!(chapters.len(), 3, "{chapters:?}");
    for (i, e) in chapters.iter().enumerate() {
        let expected = format!("第{}章的正文", i + 1).repeat(i + 1);
        assert_eq!(e.name.as_bytes(), format!("第{}章.md", i + 1).as_bytes());
        assert_eq!((e.kind, e.size), (Kind::File, expected.len() as u64));
        assert_eq!(e.version.size(), Some(e.size));
        assert_eq!(
            local
                .stat(&path(&format!("novels/书/{}", e.name.to_str().unwrap())))
                .unwrap(),
            *e
        );
    }
    assert!(local.list(&path("novels/空书")).unwrap().is_empty());
    assert!(
        local
            .list(&path("novels/无此书"))
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        local
            .list(&path("novels/链接书"))
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        local
            .read(&path("novels/书/第9章.md"), None)
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        local
            .stat(&path("novels/书/第9章.md"))
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        LocalStorage::new(dir.path().join("nowhere"))
            .check()
            .is_err()
    );
}

#[test]
fn a_rewritten_file_read_at_its_old_version_is_changed() {
    let (dir, local) = library();
    let p = path("novels/书/第1章.md");
    let old = local.list(&path("novels/书")).unwrap().remove(0).version;
    let first = local.read(&p, Some(&old)).unwrap();
    assert_eq!(first.bytes, "第1章的正文".as_bytes());
    assert_eq!(first.version, old);

    // Same size, same second: the stamp still tells the files apart.
    std::thread::sleep(Duration::from_millis(10));
    std::fs::write(dir.path().join("novels/书/第1章.md"), "第一章正文呀").unwrap();
    let e = local.read(&p, Some(&old)).unwrap_err();
    assert!(matches!(e, StorageError::Changed { .. }), "{e}");
    assert_eq!(e.source_kind(), SourceKind::Changed);
    assert!(matches!(
        local.read_range(&p, 0..3, Some(&old)),
        Err(StorageError::Changed { .. })
    ));
    let now = local.read(&p, None).unwrap();
    assert_eq!(now.bytes, "第一章正文呀".as_bytes());
    assert_ne!(now.version, old);
    assert!(matches!(now.version, Version::Local(_)));
    assert_eq!(
        local
            .read_range(&p, 3..9, Some(&now.version))
            .unwrap()
            .bytes,
        "一章".as_bytes()
    );
    assert_eq!(
        local.read_range(&p, 15..100, None).unwrap().bytes,
        "呀".as_bytes()
    );
    assert!(
        local
            .read_range(&p, 100..200, None)
            .unwrap()
            .bytes
            .is_empty()
    );

    std::fs::remove_file(dir.path().join("novels/书/第1章.md")).unwrap();
    assert!(
        local
            .read(&p, Some(&now.version))
            .unwrap_err()
            .is_not_found()
    );
}

#[test]
fn a_batch_gives_every_result_in_the_order_asked() {
    let (_dir, local) = library();
    let requests: Vec<_> = [3, 1, 2, 7]
        .iter()
        .map(|i| ReadRequest::new(path(&format!("novels/书/第{i}章.md")), None))
        .collect();
    let results: Vec<_> = local.read_many(requests, InFlight::default()).collect();
    for (r, i) in results[..3].iter().zip([3, 1, 2]) {
        assert_eq!(
            r.as_ref().unwrap().bytes,
            format!("第{i}章的正文").repeat(i).as_bytes()
        );
    }
    assert!(results[3].as_ref().unwrap_err().is_not_found());

    let p = path("novels/书/第3章.md");
    let whole = local.read(&p, None).unwrap();
    let parts: Vec<u8> = local
        .read_many(
            (0..whole.bytes.len() as u64)
                .step_by(10)
                .map(|s| ReadRequest::range(p.clone(), Some(whole.version.clone()), s..s + 10))
                .collect(),
            InFlight::default(),
        )
        .flat_map(|r| r.unwrap().bytes)
        .collect();
    assert_eq!(parts, whole.bytes);
}
