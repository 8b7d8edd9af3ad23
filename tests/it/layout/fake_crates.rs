//! The rules' own tests, on fake crates: each rule fails with its report
//! on a crate with the fault it exists to catch, and a clean crate passes.

use super::*;

/// A fake crate: `files` as (path under `src`, code).
fn fake_crate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, code) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, code).unwrap();
    }
    dir
}

fn assert_one_problem_naming(dir: &tempfile::TempDir, files: &[&str]) {
    let problems = problems(dir.path(), &[]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    for f in files {
        assert!(problems[0].contains(f), "{f} in {problems:?}");
    }
}

#[test]
fn a_clean_crate_passes() {
    let dir = fake_crate(&[
        ("lib.rs", "pub mod library;\npub mod fs;\n"),
        (
            "library/mod.rs",
            "mod scan;\npub use scan::Chapter;\npub struct Library;\n",
        ),
        (
            "library/scan.rs",
            "use super::Library;\npub struct Chapter;\n",
        ),
        (
            "fs/mod.rs",
            "mod tree;\nmod node;\n#[cfg(test)]\nmod tests {\n    use super::tree::*;\n}\n",
        ),
        (
            "fs/tree.rs",
            "use super::node::Node;\nuse crate::library::{self, Library};\n",
        ),
        (
            "fs/node.rs",
            "// super::tree names this file; a comment is not an import\n\
             pub struct Node(&'static str);\n\
             const S: &str = \"super::tree::x\";\n\
             const Q: char = '\\'';\n\
             const R: &str = r#\"crate::fs::tree \"quoted\"\"#;\n\
             fn r#type() {}\n\
             #[cfg(test)]\nmod tests {\n    use super::super::tree;\n}\n",
        ),
    ]);
    assert_eq!(
        problems(dir.path(), &[("library", &["fs"])]),
        Vec::<String>::new()
    );
}

#[test]
fn two_files_importing_each_other_fail() {
    let dir = fake_crate(&[
        ("lib.rs", "mod fs;\n"),
        ("fs/mod.rs", "mod hold;\nmod source;\n"),
        (
            "fs/hold.rs",
            "#[cfg(test)]\nfn f() {}\nuse super::source::BIG;\n",
        ),
        (
            "fs/source.rs",
            "pub const BIG: u64 = 1;\nfn f() { super::hold::big_load(); }\n",
        ),
    ]);
    assert_one_problem_naming(&dir, &["fs/hold.rs", "fs/source.rs"]);
}

#[test]
fn a_ring_of_three_files_fails() {
    let dir = fake_crate(&[
        ("lib.rs", "mod library;\n"),
        ("library/mod.rs", "mod a;\nmod b;\nmod stream;\n"),
        ("library/a.rs", "use super::{b::B, stream};\n"),
        (
            "library/b.rs",
            "pub struct B;\nfn f() { crate::library::stream::text::go() }\n",
        ),
        ("library/stream/mod.rs", "mod text;\n"),
        ("library/stream/text.rs", "use super::super::a;\n"),
    ]);
    assert_one_problem_naming(
        &dir,
        &["library/a.rs", "library/b.rs", "library/stream/text.rs"],
    );
}

#[test]
fn mount_naming_cli_fails() {
    let dir = fake_crate(&[
        ("lib.rs", "pub mod cli;\npub mod mount;\n"),
        (
            "cli.rs",
            "pub struct MountCmd;\n#[arg(value_parser = crate::mount::parse_size)]\nstruct A;\n",
        ),
        ("mount/mod.rs", "pub mod config;\n"),
        ("mount/config.rs", "use crate::cli::MountCmd;\n"),
    ]);
    let problems = problems(dir.path(), &layers_of("."));
    assert!(
        problems
            .iter()
            .any(|p| p.contains("mount/config.rs") && p.contains("crate::cli::MountCmd")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("cli, mount")
            && p.contains("cli.rs -> mount/mod.rs")
            && p.contains("mount/config.rs -> cli.rs")),
        "{problems:?}"
    );
}

#[test]
fn a_circle_of_top_level_modules_fails() {
    let dir = fake_crate(&[
        ("lib.rs", "pub mod cli;\npub mod fs;\n"),
        ("cli/mod.rs", "mod commands;\nmod args;\n"),
        ("cli/commands.rs", "use crate::fs::tree::Tree;\n"),
        ("cli/args.rs", "pub struct Args;\n"),
        ("fs/mod.rs", "pub mod tree;\n"),
        ("fs/tree.rs", "fn f(_: crate::cli::args::Args) {}\n"),
    ]);
    let problems = problems(dir.path(), &[]);
    assert!(
        problems.iter().any(
            |p| p.contains("top-level modules import each other: cli, fs")
                && p.contains("cli/commands.rs")
                && p.contains("fs/tree.rs")
        ),
        "{problems:?}"
    );
}

#[test]
fn two_folders_tied_both_ways_fail() {
    let dir = fake_crate(&[
        ("lib.rs", "mod fs;\n"),
        ("fs/mod.rs", "mod ahead;\nmod source;\n"),
        ("fs/source/mod.rs", "mod disk;\npub struct Source;\n"),
        ("fs/source/disk.rs", "use crate::fs::ahead::Window;\n"),
        ("fs/ahead/mod.rs", "mod prefetch;\npub struct Window;\n"),
        (
            "fs/ahead/prefetch.rs",
            "use super::super::source::Source;\n",
        ),
    ]);
    assert_one_problem_naming(
        &dir,
        &[
            "the folders inside fs import each other: ahead, source",
            "fs/source/disk.rs -> fs/ahead/mod.rs",
            "fs/ahead/prefetch.rs -> fs/source/mod.rs",
        ],
    );
}

/// Every rule of `LAYERS`, in a fake crate that has every module its
/// crate's rules name: the crate as it is passes, and a file under the
/// rule's module naming each module it bans (through `super::super::`,
/// beside a unit test that may) fails with that rule's report.
#[test]
fn every_layer_rule_fails_on_a_planted_tie() {
    let mut planted = 0;
    for (dir, _) in CRATES {
        let rules = layers_of(dir);
        assert!(!rules.is_empty(), "{dir} has no layer rule");
        // `*` stands for any module its rule does not ban.
        let mut names: BTreeSet<&str> = ["elsewhere"].into();
        for (module, banned) in &rules {
            names.insert(module);
            names.extend(banned.iter());
        }
        names.remove("*");
        let lib: String = names.iter().map(|n| format!("pub mod {n};\n")).collect();
        let crate_with = |tie_from: Option<(&str, &str)>| {
            let mut files: Vec<(String, String)> = vec![("lib.rs".into(), lib.clone())];
            for n in &names {
                match tie_from {
                    Some((from, to)) if from == *n => {
                        files.push((
                            format!("{n}/mod.rs"),
                            format!(
                                "mod inner;\n#[cfg(test)]\nmod tests {{\n    use crate::{to}::Thing;\n}}\n"
                            ),
                        ));
                        files.push((
                            format!("{n}/inner.rs"),
                            format!("fn f() -> super::super::{to}::Thing {{\n    todo!()\n}}\n"),
                        ));
                    }
                    _ => files.push((format!("{n}.rs"), "pub struct Thing;\n".into())),
                }
            }
            let files: Vec<(&str, &str)> = files
                .iter()
                .map(|(p, c)| (p.as_str(), c.as_str()))
                .collect();
            fake_crate(&files)
        };
        let clean = crate_with(None);
        assert_eq!(
            problems(clean.path(), &rules),
            Vec::<String>::new(),
            "{dir}"
        );
        for (module, banned) in &rules {
            let from = if *module == "*" { "elsewhere" } else { module };
            for to in banned.iter() {
                let tied = crate_with(Some((from, to)));
                let found = problems(tied.path(), &rules);
                let report = format!("{from}/inner.rs names super::super::{to}::Thing");
                assert!(
                    !found.is_empty()
                        && found.iter().all(|p| p.starts_with(&report)
                            && p.ends_with(&format!("never names {to})"))),
                    "{dir}: {from} -> {to}: {found:?}"
                );
                planted += 1;
            }
        }
    }
    assert!(planted > 50, "{planted} ties planted");
}

#[test]
fn a_rule_naming_a_module_the_crate_lacks_fails() {
    let dir = fake_crate(&[
        ("lib.rs", "pub mod mount;\npub mod cli;\n"),
        ("mount/mod.rs", "pub struct Mount;\n"),
        ("cli.rs", "pub struct Cli;\n"),
    ]);
    assert_eq!(
        problems(dir.path(), &[("mount", &["cli"]), ("*", &["cli"])]),
        Vec::<String>::new()
    );
    let found = problems(dir.path(), &[("library", &["fs", "cli"])]);
    assert_eq!(
        found,
        vec![
            "the layer rule of library names library, not a top-level module of the crate",
            "the layer rule of library names fs, not a top-level module of the crate",
        ]
    );
}
