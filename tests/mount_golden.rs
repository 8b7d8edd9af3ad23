//! Every reference case through a real mount: pages, JSON, chains, aliases,
//! ERROR files and errno values, read with plain std::fs calls.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use common::{Case, Mount, errno};

fn page_name(case: &Case) -> String {
    let offset = case.offset.unwrap_or(1);
    match case.limit {
        Some(l) => format!("offset-{offset}-limit-{l}"),
        None => format!("offset-{offset}"),
    }
}

/// What the mount must show for an error case, from the error's text (§2).
fn expected_errno(error: &str) -> i32 {
    if error.contains("已在「写作助手功能」UI 中关闭") {
        libc::EACCES
    } else if error.contains("cannot detect text encoding") {
        libc::EIO
    } else {
        // not found, no book, offset out of range, bad limit/offset names,
        // and pages inside an ambiguous directory
        libc::ENOENT
    }
}

#[test]
fn all_reference_cases_match_through_the_mount() {
    reference_cases_through_the_mount(&[]);
}

/// Pages, sizes and ERROR files with `/library` written as the root, as a
/// sandbox that binds the mount at /library sees them.
#[test]
fn all_reference_cases_match_through_the_mount_with_a_path_root() {
    reference_cases_through_the_mount(&["--path-root", "/library"]);
}

/// `-o path_root=` is the same option, for fstab.
#[test]
fn path_root_mount_option_writes_the_given_root() {
    let (guard, root) = common::reference_library();
    let no_state = guard.path().join("no-state.json");
    let mount = Mount::new(
        &root,
        &[
            "--state-file",
            no_state.to_str().unwrap(),
            "-o",
            "ro,path_root=/srv/books/",
        ],
    );
    let case = common::cases(std::path::Path::new("/srv/books"))
        .into_iter()
        .find(|c| c.error.is_none() && c.state.is_none() && c.limit.is_none())
        .unwrap();
    let page = mount
        .path()
        .join(&case.book)
        .join(&case.chapter)
        .join(page_name(&case) + ".txt");
    assert_eq!(
        std::fs::read_to_string(&page).unwrap(),
        case.text.unwrap(),
        "{page:?}"
    );
}

fn reference_cases_through_the_mount(extra: &[&str]) {
    let path_root = extra
        .iter()
        .position(|a| *a == "--path-root")
        .map(|i| std::path::Path::new(extra[i + 1]));
    let (guard, root) = common::reference_library();
    let cases = common::cases(path_root.unwrap_or(&root));
    let no_state = guard.path().join("no-state.json");
    let mut args = vec!["--state-file", no_state.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mount = Mount::new(&root, &args);
    let off_state = guard.path().join("off.json");
    let mut failures = Vec::new();
    let mut checks = 0usize;
    let mut check = |ok: bool, what: String| {
        checks += 1;
        if !ok {
            failures.push(what);
        }
    };
    for (n, case) in cases.iter().enumerate() {
        if case.state.is_some() {
            continue; // checked below under its own mount
        }
        let chapter_dir: PathBuf = mount.path().join(&case.book).join(&case.chapter);
        let base = chapter_dir.join(page_name(case));
        let label = format!(
            "case {n} {}/{}/{}",
            case.book,
            case.chapter,
            page_name(case)
        );
        if let Some(error) = &case.error {
            for ext in ["txt", "json"] {
                let got = std::fs::read(base.with_extension(ext));
                let want = expected_errno(error);
                check(
                    matches!(&got, Err(e) if errno(e) == want),
                    format!("{label}.{ext}: want errno {want}, got {got:?}"),
                );
            }
            if error.contains("无法确定要哪一份") || error.contains("cannot detect text encoding")
            {
                let listing = list(&chapter_dir);
                check(
                    listing == ["ERROR"],
                    format!("{label}: listing {listing:?}, want only ERROR"),
                );
                let body = std::fs::read_to_string(chapter_dir.join("ERROR")).unwrap_or_default();
                check(
                    body == format!("{error}\n"),
                    format!("{label}: ERROR holds {body:?}, want {error:?}"),
                );
            }
            continue;
        }
        let text = std::fs::read(base.with_extension("txt"));
        let want_text = case.text.as_deref().unwrap();
        check(
            text.as_deref().ok() == Some(want_text.as_bytes()),
            format!(
                "{label}.txt differs: {:?}",
                text.map(|b| String::from_utf8_lossy(&b).into_owned())
            ),
        );
        let json = std::fs::read(base.with_extension("json"));
        let want_json = common::pretty_json(case.json.as_ref().unwrap());
        check(
            json.as_deref().ok() == Some(want_json.as_bytes()),
            format!("{label}.json differs"),
        );
        for (ext, want) in [("txt", want_text.len()), ("json", want_json.len())] {
            let size = std::fs::metadata(base.with_extension(ext)).map(|m| (m.len(), m.blocks()));
            check(
                size.as_ref().ok() == Some(&(want as u64, (want as u64).div_ceil(512))),
                format!("{label}.{ext}: stat size/blocks {size:?}, want {want}"),
            );
        }
        let file = case.json.as_ref().unwrap()["file"].as_str().unwrap();
        let meta = std::fs::symlink_metadata(&chapter_dir).unwrap();
        if case.chapter == file {
            check(
                meta.is_dir(),
                format!("{label}: a file name must be a directory"),
            );
        } else {
            let target = std::fs::read_link(&chapter_dir).ok();
            check(
                meta.file_type().is_symlink()
                    && target.as_deref() == Some(std::path::Path::new(file)),
                format!("{label}: alias should be a symlink to {file:?}, got {target:?}"),
            );
        }
        if let Some(chain) = &case.chain {
            let mut want: Vec<String> = chain
                .iter()
                .flat_map(|o| [format!("offset-{o}.json"), format!("offset-{o}.txt")])
                .collect();
            want.sort();
            let got = list(&chapter_dir);
            check(
                got == want,
                format!("{label}: listing {got:?}, want {want:?}"),
            );
        }
    }
    drop(mount);

    // The switched-off state, under a mount whose state file says so.
    let off_cases: Vec<&Case> = cases.iter().filter(|c| c.state.is_some()).collect();
    assert!(!off_cases.is_empty());
    for case in off_cases {
        std::fs::write(&off_state, case.state.as_ref().unwrap().to_string()).unwrap();
        let mut args = vec!["--state-file", off_state.to_str().unwrap()];
        args.extend_from_slice(extra);
        let mount = Mount::new(&root, &args);
        let error = case.error.as_deref().unwrap();
        let got = std::fs::read(
            mount
                .path()
                .join(&case.book)
                .join(&case.chapter)
                .join(page_name(case) + ".txt"),
        );
        check(
            matches!(&got, Err(e) if errno(e) == libc::EACCES),
            format!("switched off: want EACCES, got {got:?}"),
        );
        check(
            list(mount.path()) == ["ERROR"],
            format!("switched off: root lists {:?}", list(mount.path())),
        );
        let body = std::fs::read_to_string(mount.path().join("ERROR")).unwrap_or_default();
        check(
            body == format!("{error}\n"),
            format!("switched off: ERROR holds {body:?}"),
        );
    }
    println!(
        "reference cases through the mount: {} cases, {checks} checks, {} failures",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checks} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn list(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => vec![format!("<{e}>")],
    };
    names.sort();
    names
}
