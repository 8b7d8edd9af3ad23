//! `novelfs chapters` on bad input: it keeps going past duplicates and an
//! undecodable chapter, its errors, and its JSON's integral numbers.

use super::*;

// ---------------------------------------------------------------------------
// `chapters`.

/// Every string array anywhere in a JSON value.
fn string_arrays(v: &serde_json::Value, out: &mut Vec<Vec<String>>) {
    match v {
        serde_json::Value::Array(a) => {
            if !a.is_empty() && a.iter().all(|x| x.is_string()) {
                out.push(a.iter().map(|x| x.as_str().unwrap().to_string()).collect());
            }
            a.iter().for_each(|x| string_arrays(x, out));
        }
        serde_json::Value::Object(o) => o.values().for_each(|x| string_arrays(x, out)),
        _ => {}
    }
}

fn all_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| all_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| all_strings(x, out)),
        _ => {}
    }
}

#[test]
fn chapters_lists_duplicates_and_undecodable_files() {
    let lib = library();
    let out = chapters(&lib, &[BOOK]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    let files = [
        CH1,
        THREES[0],
        THREES[1],
        THREES[2],
        "第11章 长街.md",
        "空章.md",
        "乱码.md",
        "疑似.txt",
    ];
    for f in files {
        assert!(stdout.contains(f), "{f} is not listed:\n{stdout}");
    }
    assert!(
        !stdout.contains("笔记.json") && !stdout.contains("旧稿"),
        "{stdout}"
    );
    // Chapters in §1.1 order: 1, 3 ×3, 11, then the unnumbered.
    let first = |f: &str| stdout.find(f).unwrap();
    for pair in [CH1, THREES[0], THREES[1], THREES[2], "第11章 长街.md"].windows(2) {
        assert!(
            first(pair[0]) < first(pair[1]),
            "{} should come before {}:\n{stdout}",
            pair[0],
            pair[1]
        );
    }
    // The group of chapter 3, in order, on one line.
    let group_line = stdout
        .lines()
        .find(|l| THREES.iter().all(|f| l.contains(f)));
    let group_line =
        group_line.unwrap_or_else(|| panic!("no line lists the chapter-3 group:\n{stdout}"));
    let pos: Vec<usize> = THREES.iter().map(|f| group_line.find(f).unwrap()).collect();
    assert!(
        pos.windows(2).all(|w| w[0] < w[1]),
        "group out of order: {group_line}"
    );
    // The undecodable chapters show their error instead of failing the listing.
    assert!(
        stdout.contains(&encoding(&lib.path_of("乱码.md"), false)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&encoding(&lib.path_of("疑似.txt"), true)),
        "{stdout}"
    );

    let out = chapters(&lib, &[BOOK, "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("chapters --json parses");
    let mut arrays = Vec::new();
    string_arrays(&v, &mut arrays);
    assert!(
        arrays.iter().any(|a| a == &THREES),
        "no array holds the chapter-3 group: {v}"
    );
    let mut strings = Vec::new();
    all_strings(&v, &mut strings);
    for f in files {
        assert!(strings.iter().any(|s| s == f), "{f} missing from {v}");
    }
    assert!(
        strings
            .iter()
            .any(|s| s.contains(&encoding(&lib.path_of("乱码.md"), false))),
        "{v}"
    );
}

#[test]
fn chapters_errors() {
    let lib = library();
    assert_error(&chapters(&lib, &["无此书"]), &no_book(&lib.root, "无此书"));
    assert_error(&chapters(&lib, &["  "]), EMPTY_BOOK);
    assert_error(&chapters(&lib, &["..."]), BOOK_SANITIZED_EMPTY);
}

#[test]
fn chapter_numbers_in_json_are_integers() {
    let lib = library();
    let out = chapters(&lib, &[BOOK, "--json"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"number\": 1,"), "{text}");
    assert!(!text.contains(".0,") && !text.contains(".0\n"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["chapters"][0]["number"].as_u64(), Some(1), "{v}");
    assert_eq!(v["duplicates"][0]["number"].as_u64(), Some(3), "{v}");
}
