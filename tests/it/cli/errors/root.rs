//! The library root: from `NOVELFS_ROOT`, the current directory by
//! default, and one refusal of a root without `novels/` for every command.

use super::*;

// ---------------------------------------------------------------------------
// The library root.

#[test]
fn root_from_novelfs_root_env() {
    let lib = library();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = novelfs()
        .env("NOVELFS_ROOT", &lib.root)
        .current_dir(elsewhere.path())
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
    // --root wins over the environment.
    let out = novelfs()
        .env("NOVELFS_ROOT", elsewhere.path())
        .args(["read", "--state-file", NO_STATE, "--root"])
        .arg(&lib.root)
        .args([BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
}

#[test]
fn root_defaults_to_the_current_directory() {
    let lib = library();
    let out = novelfs()
        .current_dir(&lib.root)
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
    // From a sub-directory, the current directory is not a library.
    let sub = lib.root.join("novels");
    let out = novelfs()
        .current_dir(&sub)
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_error(&out, &not_a_library(&sub));
    // A symlinked root prints the canonical path.
    let link = lib.dir.path().join("link");
    std::os::unix::fs::symlink(&lib.root, &link).unwrap();
    let out = novelfs()
        .current_dir(&link)
        .args(["read", "--state-file", NO_STATE, BOOK, "1"])
        .output()
        .unwrap();
    assert_page(&out, &ch1_page(&lib.root));
    // JSON through the default root parses and names the canonical path.
    let out = novelfs()
        .current_dir(&link)
        .args(["read", "--state-file", NO_STATE, "--json", BOOK, "1"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("read --json parses");
    assert_eq!(v["path"], lib.path_of(CH1));
    assert_eq!(v["book"], BOOK);
}

/// What every command that takes a root says of one without `novels/`.
fn not_a_library(root: &Path) -> String {
    let root = root.display();
    format!(
        "{root} is not a novelfs library: it has no novels/ directory (expected {root}/novels/<book>/<chapter>.md)"
    )
}

#[test]
fn every_command_refuses_a_root_without_novels_alike() {
    let empty = tempfile::tempdir().unwrap();
    let want = not_a_library(empty.path());
    for args in [
        &["read", BOOK, "1"][..],
        &["read", "--json", BOOK, "1"],
        &["chapters", BOOK],
        &["chapters", "--json", BOOK],
        &["chapters", "--tool", BOOK],
        &["chapters", "--tool", "--json", BOOK],
        &["books"],
        &["books", "--json"],
    ] {
        let out = novelfs()
            .args(&args[..1])
            .arg("--root")
            .arg(empty.path())
            .args(&args[1..])
            .output()
            .unwrap();
        assert_error(&out, &want);
        // The same through the environment and the current directory.
        let out = novelfs()
            .current_dir(empty.path())
            .args(args)
            .output()
            .unwrap();
        assert_error(&out, &want);
    }
    // `mount` refuses it in the same words, and says nothing else.
    let mnt = tempfile::tempdir().unwrap();
    let out = novelfs()
        .arg("mount")
        .arg(empty.path())
        .arg(mnt.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("novelfs: {want}\n")
    );
    assert_eq!(out.status.code(), Some(1));
}
