//! No arguments make the binary panic.

use super::*;

fn one_of(common: &'static [&'static str]) -> impl Strategy<Value = OsString> {
    prop_oneof![3 => select(common).prop_map(OsString::from), 1 => arg()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, rng_algorithm: RngAlgorithm::XorShift, ..ProptestConfig::default() })]

    /// Whatever the arguments: no panic; a page on stdout and exit 0, or one
    /// `错误：` line on stderr and exit 1, or a usage error (exit 2). Most
    /// draws are well-formed enough to get past the argument checks.
    #[test]
    fn no_arguments_make_it_panic(
        sub in select(vec!["read", "chapters"]),
        book in one_of(&[BOOK, BOOK, "空书", " 星河. ", "con"]),
        chapter in one_of(&["1", "3", "第3章 B", "乱码", "疑似", "空章", "11", "长街", "不存在"]),
        extra in prop_oneof![5 => Just(vec![]), 1 => vec(arg(), 1..3)],
        offset in proptest::option::of(one_of(&["1", "2", "3", "4"])),
        limit in proptest::option::of(one_of(&["1", "2", "400", "401"])),
        json in any::<bool>(),
    ) {
        let lib = library();
        let mut cmd = novelfs();
        cmd.arg(sub).arg("--root").arg(&lib.root).arg("--state-file").arg(NO_STATE).arg(book);
        if sub == "read" {
            cmd.arg(chapter);
        }
        cmd.args(&extra);
        // `chapters` has no --offset/--limit: only `extra` may hand it a wrong flag.
        if let (Some(o), "read") = (offset, sub) {
            cmd.arg("--offset").arg(o);
        }
        if let (Some(l), "read") = (limit, sub) {
            cmd.arg("--limit").arg(l);
        }
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        prop_assert!(!stderr.contains("panicked"), "panic: {}", stderr);
        match out.status.code() {
            Some(0) => {
                prop_assert!(out.stderr.is_empty(), "{}", stderr);
                prop_assert!(stdout.ends_with('\n'));
                let help = stdout.contains("Usage") || stdout.starts_with("novelfs ");
                // `extra` may hold a --json of its own.
                let json = json || extra.iter().any(|a| a == "--json");
                if sub == "read" && !help {
                    prop_assert!(
                        if json { stdout.starts_with("{\n") } else { stdout.starts_with("<path>") && stdout.ends_with("\n</content>\n") },
                        "{}", stdout
                    );
                }
            }
            Some(1) => {
                prop_assert!(out.stdout.is_empty(), "{}", stdout);
                prop_assert!(stderr.starts_with("错误：") && stderr.ends_with('\n'), "{}", stderr);
            }
            Some(2) => prop_assert!(out.stdout.is_empty() && !out.stderr.is_empty()),
            other => prop_assert!(false, "exit status {:?}, stderr {}", other, stderr),
        }
    }
}
