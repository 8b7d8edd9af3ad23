//! `novelfs read` on bad input: undecodable and unreadable chapters and
//! books, missing books, blank arguments, offsets and limits out of range,
//! the tool switched off, ambiguous or missing chapter numbers, the size
//! limit.

use super::*;

// ---------------------------------------------------------------------------
// Errors of `read`.

#[test]
fn the_library_reads_before_anything_fails() {
    // Guards the error tests below: the same library and flags do read.
    let lib = library();
    assert_page(&read(&lib, &[BOOK, "1"]), &ch1_page(&lib.root));
}

#[test]
fn undecodable_chapter_names_its_absolute_path() {
    let lib = library();
    assert_error(
        &read(&lib, &[BOOK, "乱码"]),
        &encoding(&lib.path_of("乱码.md"), false),
    );
    assert_error(
        &read(&lib, &[BOOK, "疑似.txt"]),
        &encoding(&lib.path_of("疑似.txt"), true),
    );
    // The offset is checked after decoding.
    assert_error(
        &read(&lib, &[BOOK, "乱码", "--offset", "99"]),
        &encoding(&lib.path_of("乱码.md"), false),
    );
    // Through a non-canonical root, the path is still the canonical one.
    let out = novelfs()
        .args(["read", "--state-file", NO_STATE, "--root"])
        .arg(lib.root.join("novels").join(".."))
        .args([BOOK, "乱码"])
        .output()
        .unwrap();
    assert_error(&out, &encoding(&lib.path_of("乱码.md"), false));
}

fn undecodable_bytes() -> impl Strategy<Value = Vec<u8>> {
    (vec(1u8..=255, 0..200), any::<proptest::sample::Index>()).prop_map(|(mut b, at)| {
        b.insert(at.index(b.len() + 1), 0xFF);
        if b.starts_with(b"\xEF\xBB\xBF")
            || b.starts_with(b"\xFF\xFE")
            || b.starts_with(b"\xFE\xFF")
        {
            b.insert(0, b'a');
        }
        if b.len() % 2 == 0 {
            b.push(b'a');
        }
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_algorithm: RngAlgorithm::XorShift, ..ProptestConfig::default() })]

    /// Random bytes that no rule of §1.4 accepts (see `GARBAGE`).
    #[test]
    fn random_undecodable_bytes(bytes in undecodable_bytes()) {
        let lib = library();
        lib.write("随机.md", &bytes);
        assert_error(&read(&lib, &[BOOK, "随机"]), &encoding(&lib.path_of("随机.md"), false));
    }
}

#[test]
fn unreadable_chapter() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let lib = library();
    let file = lib.book_dir().join(CH1);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    // SAFETY: geteuid has no preconditions.
    let out = if unsafe { libc::geteuid() } == 0 {
        // Mode 000 does not stop root, who reads the page ...
        assert_page(&read(&lib, &[BOOK, "1"]), &ch1_page(&lib.root));
        // ... so the error path runs as an unprivileged user, with a copy of
        // the binary and a library that user may walk (tempdirs are 0700).
        let bin = lib.dir.path().join("novelfs");
        // Copied by a child process: a write handle of ours could leak into
        // a test forking meanwhile and make the exec fail with ETXTBSY.
        let copied = Command::new("cp").arg(BIN).arg(&bin).status().unwrap();
        assert!(copied.success());
        for dir in [lib.dir.path(), &lib.root] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        novelfs_at(&bin)
            .args(["read", "--root"])
            .arg(&lib.root)
            .args(["--state-file", NO_STATE, BOOK, "1"])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap()
    } else {
        read(&lib, &[BOOK, "1"])
    };
    // No §1.7 text for this case: one error line naming the file and why.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr:?}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.starts_with("错误：") && stderr.ends_with('\n') && stderr.lines().count() == 1,
        "{stderr:?}"
    );
    assert!(stderr.contains(CH1), "{stderr:?}");
    assert!(stderr.contains("Permission denied"), "{stderr:?}");
}

#[test]
fn missing_book() {
    let lib = library();
    assert_error(&read(&lib, &["无此书", "1"]), &no_book(&lib.root, "无此书"));
    // The message names the sanitized book.
    assert_error(
        &read(&lib, &[" 无:此*书?. ", "1"]),
        &no_book(&lib.root, "无此书"),
    );
    // A file is not a book, and neither is `novels` itself.
    std::fs::write(lib.root.join("novels").join("文件"), "x").unwrap();
    assert_error(&read(&lib, &["文件", "1"]), &no_book(&lib.root, "文件"));
    // Reserved device names get a `_` prefix.
    assert_error(&read(&lib, &["con", "1"]), &no_book(&lib.root, "_con"));
    // And a name that sanitizes to an existing book reads it.
    assert_page(&read(&lib, &[" 星:河. ", "1"]), &ch1_page(&lib.root));
}

#[test]
fn empty_and_blank_arguments() {
    let lib = library();
    for book in ["", "  ", "\u{3000}\t", "\u{feff}"] {
        assert_error(&read(&lib, &[book, "1"]), EMPTY_BOOK);
    }
    for chapter in ["", "  ", "\u{3000}", "\n"] {
        assert_error(&read(&lib, &[BOOK, chapter]), EMPTY_CHAPTER);
    }
    for book in ["...", "/", " ./. ", "?*:|", "\\\"<>"] {
        assert_error(&read(&lib, &[book, "1"]), BOOK_SANITIZED_EMPTY);
    }
}

#[test]
fn bad_offset_and_limit() {
    let lib = library();
    for offset in [
        "0",
        "abc",
        "-1",
        "1.5",
        "",
        "9007199254740992",
        "99999999999999999999999",
    ] {
        assert_error(&read(&lib, &[BOOK, "1", "--offset", offset]), BAD_OFFSET);
    }
    for limit in ["401", "0", "abc", "-5", "1000", "0.5", ""] {
        assert_error(&read(&lib, &[BOOK, "1", "--limit", limit]), BAD_LIMIT);
    }
    // The bounds themselves are valid.
    assert_page(
        &read(&lib, &[BOOK, "1", "--limit", "400"]),
        &ch1_page(&lib.root),
    );
    assert_page(
        &read(&lib, &[BOOK, "1", "--offset", "1", "--limit", "400"]),
        &ch1_page(&lib.root),
    );
}

#[test]
fn offset_beyond_the_end() {
    let lib = library();
    assert_error(
        &read(&lib, &[BOOK, "1", "--offset", "4"]),
        &offset_out_of_range("4", CH1, 3),
    );
    let max = "9007199254740991";
    assert_error(
        &read(&lib, &[BOOK, "1", "--offset", max]),
        &offset_out_of_range(max, CH1, 3),
    );
    // The last line is in range.
    let out = read(&lib, &[BOOK, "1", "--offset", "3"]);
    let want = format!(
        "<path>{}</path>\n<type>novel-chapter</type>\n<content>\n3: 第三行\n\n(本章共 3 行 / 3 字)\n</content>\n",
        lib.path_of(CH1)
    );
    assert_page(&out, &want);
    // An empty chapter has 0 lines but offset 1 is allowed; 2 is not.
    assert_error(
        &read(&lib, &[BOOK, "空章", "--offset", "2"]),
        &offset_out_of_range("2", "空章.md", 0),
    );
    let want = format!(
        "<path>{}</path>\n<type>novel-chapter</type>\n<content>\n1: \n\n(本章共 0 行 / 0 字)\n</content>\n",
        lib.path_of("空章.md")
    );
    assert_page(&read(&lib, &[BOOK, "空章"]), &want);
}

#[test]
fn switched_off() {
    let lib = library();
    let off = lib.state("off.json", r#"{"tools":{"novel_read":false}}"#);
    let with_state = |state: &Path, args: &[&str]| {
        novelfs()
            .arg("read")
            .arg("--root")
            .arg(&lib.root)
            .arg("--state-file")
            .arg(state)
            .args(args)
            .output()
            .unwrap()
    };
    assert_error(&with_state(&off, &[BOOK, "1"]), DISABLED);
    // Checked before the tool runs: a missing book does not matter.
    assert_error(&with_state(&off, &["无此书", "1"]), DISABLED);
    // The default state file is $DSH_NOVEL_WRITER_STATE.
    let out = novelfs()
        .env("DSH_NOVEL_WRITER_STATE", &off)
        .arg("read")
        .arg("--root")
        .arg(&lib.root)
        .args([BOOK, "1"])
        .output()
        .unwrap();
    assert_error(&out, DISABLED);
    // Only `tools.novel_read === false` switches off; a missing, unreadable
    // (a directory) or malformed state file means enabled.
    let on = [
        lib.state("on.json", r#"{"tools":{"novel_read":true}}"#),
        lib.state("zero.json", r#"{"tools":{"novel_read":0}}"#),
        lib.state("other.json", r#"{"tools":{"novel_write":false}}"#),
        lib.state("bad.json", "{not json"),
        lib.dir.path().to_path_buf(),
        PathBuf::from(NO_STATE),
    ];
    for state in &on {
        assert_page(&with_state(state, &[BOOK, "1"]), &ch1_page(&lib.root));
    }
}

#[test]
fn ambiguous_chapter_number() {
    let lib = library();
    let want = ambiguous(3, &THREES);
    for arg in ["3", "03", "０３", "第3章", " 3 ", "第三章"] {
        assert_error(&read(&lib, &[BOOK, arg]), &want);
    }
    // A file name (extension optional) picks one of them.
    let out = read(&lib, &[BOOK, "第3章 B"]);
    let want = format!(
        "<path>{}</path>\n<type>novel-chapter</type>\n<content>\n1: 三之2\n\n(本章共 1 行 / 3 字)\n</content>\n",
        lib.path_of("第3章 B.md")
    );
    assert_page(&out, &want);
}

#[test]
fn chapter_not_found() {
    let lib = library();
    // The needle is the trimmed argument.
    assert_error(&read(&lib, &[BOOK, " 不存在 "]), &not_found(BOOK, "不存在"));
    // All digits: never a substring match (`1` is not `第11章`).
    assert_error(&read(&lib, &[BOOK, "2"]), &not_found(BOOK, "2"));
    assert_error(&read(&lib, &[BOOK, "笔记"]), &not_found(BOOK, "笔记"));
    assert_error(&read(&lib, &[BOOK, "旧稿"]), &not_found(BOOK, "旧稿"));
    assert_error(&read(&lib, &["空书", "1"]), &not_found("空书", "1"));
}

/// `read --max-chapter-bytes` takes the mount's sizes: a chapter above the
/// limit is the size error (naming the flag it can be raised with), the
/// same chapter under a raised limit reads, and a bad size is a usage error.
#[test]
fn read_takes_max_chapter_bytes() {
    let lib = library();
    let big = "大".repeat(30_000); // 90,000 bytes, one line (shown cut at 3000)
    lib.write("第40章 大.md", big.as_bytes());
    let path = lib.path_of("第40章 大.md");
    assert_error(
        &read(&lib, &[BOOK, "40", "--max-chapter-bytes", "64K"]),
        &format!(
            "无法读取 \"{path}\"：文件大小 90000 字节超过上限 65536 字节（--max-chapter-bytes）"
        ),
    );
    for limit in ["1M", "90000", "2GiB"] {
        let out = read(&lib, &[BOOK, "40", "--max-chapter-bytes", limit]);
        assert!(out.status.success(), "{limit}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("(本章共 1 行 / 3009 字)"));
    }
    // The default lets it in too, and limits the chapters it reads to 256 MiB.
    assert!(read(&lib, &[BOOK, "40"]).status.success());
    for bad in ["12X", "", "1.5M", "99999999999999999999G"] {
        let out = read(&lib, &[BOOK, "40", "--max-chapter-bytes", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--max-chapter-bytes"),
            "{bad:?}: the usage error names the flag"
        );
    }
}

/// A book directory that cannot be read says so: not §1.7's "not found",
/// which would send its reader looking for a typo.
#[test]
fn unreadable_book() {
    use std::os::unix::fs::PermissionsExt;
    let lib = library();
    std::fs::set_permissions(lib.book_dir(), std::fs::Permissions::from_mode(0o000)).unwrap();
    let run = |subcommand: &str, args: &[&str]| {
        let mut cmd = novelfs();
        cmd.arg(subcommand)
            .arg("--root")
            .arg(&lib.root)
            .args(["--state-file", NO_STATE])
            .args(args);
        // Root reads what mode 000 forbids: the command runs without that.
        crate::common::without_dac_override(&mut cmd)
            .output()
            .unwrap()
    };
    let why = format!(
        "无法读取 \"{}\"：Permission denied (os error 13)",
        lib.book_dir().display()
    );
    assert_error(&run("read", &[BOOK, "1"]), &why);
    assert_error(&run("chapters", &[BOOK]), &why);
    // novels/ itself unreadable: every book is.
    std::fs::set_permissions(lib.book_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let novels = lib.root.join("novels");
    std::fs::set_permissions(&novels, std::fs::Permissions::from_mode(0o000)).unwrap();
    assert_error(&run("read", &[BOOK, "1"]), &why);
    std::fs::set_permissions(&novels, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_page(&run("read", &[BOOK, "1"]), &ch1_page(&lib.root));
}
