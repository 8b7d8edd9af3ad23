//! Every `--long-option` the documentation shows a command with exists in
//! that command's `--help`: README.md, docs/*.md, examples/ and the man
//! page (`novelfs man`) are read for `novelfs COMMAND …` (a code block's
//! line with its continuations, an inline code span, the man page's
//! synopsis), and each option found there is looked for among the options
//! the real binary's `COMMAND --help` defines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");

fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("novelfs runs");
    assert!(out.status.success(), "novelfs {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands `novelfs --help` lists, with their aliases.
fn commands() -> BTreeMap<String, String> {
    let help = run(&["--help"]);
    let mut found: BTreeMap<String, String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(|c| (c.to_string(), c.to_string()))
        .collect();
    assert!(found.contains_key("mount"), "{help}");
    found.insert("umount".into(), "unmount".into());
    found
}

/// The long options `novelfs COMMAND --help` defines: its option lines'
/// `--NAME`, not the ones its prose mentions.
fn defined(command: &str) -> BTreeSet<String> {
    run(&[command, "--help"])
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = match l.strip_prefix('-') {
                Some(rest) if !rest.starts_with('-') => rest.get(3..)?.trim_start(),
                _ => l,
            };
            let name = l.strip_prefix("--")?;
            let end = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(name.len());
            Some(format!("--{}", &name[..end]))
        })
        .collect()
}

/// The long options in `text`.
fn long_options(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("--") {
        let before = rest[..i].chars().next_back();
        let name: String = rest[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let word_start = before.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-'));
        if word_start && name.starts_with(|c: char| c.is_ascii_lowercase()) {
            found.push(format!("--{name}"));
        }
        rest = &rest[i + 2 + name.len()..];
    }
    found
}

/// Each `novelfs COMMAND` in `line`: the command and the text after it, up
/// to the next one.
fn invocations<'a>(line: &'a str, commands: &BTreeMap<String, String>) -> Vec<(String, &'a str)> {
    let mut starts = Vec::new();
    for (i, _) in line.match_indices("novelfs ") {
        let before = line[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_')) {
            continue;
        }
        let after = &line[i + "novelfs ".len()..];
        let word: String = after
            .chars()
            .take_while(|c| c.is_ascii_lowercase())
            .collect();
        if let Some(command) = commands.get(&word) {
            starts.push((i, i + "novelfs ".len() + word.len(), command.clone()));
        }
    }
    let mut found = Vec::new();
    for (n, (_, from, command)) in starts.iter().enumerate() {
        let to = starts.get(n + 1).map_or(line.len(), |next| next.0);
        found.push((command.clone(), &line[*from..to]));
    }
    found
}

/// One `novelfs COMMAND …` of a document: where, which command, its text.
struct Shown {
    at: String,
    command: String,
    text: String,
}

/// The invocations of `text`. `code`: the whole file is code (a unit file,
/// a script); otherwise it is Markdown (or the man page's text), whose
/// fenced blocks are code and whose other lines count only their inline
/// code spans, and whose lines naming no command are prose.
fn shown(name: &str, text: &str, code: bool, commands: &BTreeMap<String, String>) -> Vec<Shown> {
    let mut found: Vec<Shown> = Vec::new();
    let mut fenced = false;
    // The invocation a next line may continue: with a trailing `\`, or
    // indented under it in a code block (a synopsis).
    let mut open: Option<(usize, bool)> = None;
    for (n, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", n + 1);
        if !code && line.trim_start().starts_with("```") {
            fenced = !fenced;
            open = None;
            continue;
        }
        if code || fenced {
            // A shell comment is prose.
            let line = line.split(" #").next().unwrap_or(line);
            let here = invocations(line, commands);
            let continued = match open {
                Some((_, backslash)) => {
                    backslash || (line.starts_with(char::is_whitespace) && !line.trim().is_empty())
                }
                None => false,
            };
            if here.is_empty() && continued {
                let (i, _) = open.unwrap();
                found[i].text.push(' ');
                found[i].text.push_str(line);
                open = Some((i, line.trim_end().ends_with('\\')));
                continue;
            }
            open = None;
            for (command, text) in here {
                found.push(Shown {
                    at: at.clone(),
                    command,
                    text: text.to_string(),
                });
                open = Some((found.len() - 1, line.trim_end().ends_with('\\')));
            }
            continue;
        }
        open = None;
        for (i, piece) in line.split('`').enumerate() {
            // Outside a code span, an invocation counts only when the
            // whole line is one (the man page's synopsis).
            let synopsis = line.trim_start().starts_with("novelfs ") && !line.contains('`');
            let spans = match i % 2 == 1 || synopsis {
                true => invocations(piece, commands),
                false => Vec::new(),
            };
            for (command, text) in spans {
                found.push(Shown {
                    at: at.clone(),
                    command,
                    text: text.to_string(),
                });
            }
        }
    }
    found
}

/// The man page as text: roff's escapes and fonts taken out.
fn man_text() -> String {
    run(&["man"])
        .replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
        .replace("\\fP", "")
        .replace("\\*(Aq", "'")
}

/// README.md, docs/*.md and the files under examples/ (its sample library
/// aside), as (name, text, whether all code).
fn documents() -> Vec<(String, String, bool)> {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = vec![top.join("README.md")];
    for entry in std::fs::read_dir(top.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut dirs = vec![top.join("examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.ends_with("examples/library") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut docs: Vec<(String, String, bool)> = files
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let name = path.strip_prefix(top).unwrap().display().to_string();
            let code = !name.ends_with(".md");
            Some((name, text, code))
        })
        .collect();
    docs.push(("novelfs(1)".into(), man_text(), false));
    docs
}

/// Each option shown with a command that the command does not define.
fn unknown_options(docs: &[(String, String, bool)]) -> (Vec<String>, usize) {
    let commands = commands();
    let mut defined_by: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (name, text, code) in docs {
        for s in shown(name, text, *code, &commands) {
            let known = defined_by
                .entry(s.command.clone())
                .or_insert_with(|| defined(&s.command));
            for option in long_options(&s.text) {
                checked += 1;
                if !known.contains(&option) {
                    wrong.push(format!(
                        "{}: `novelfs {} … {option}`: not in `novelfs {} --help`",
                        s.at, s.command, s.command
                    ));
                }
            }
        }
    }
    (wrong, checked)
}

#[test]
fn every_option_the_docs_show_a_command_with_is_in_its_help() {
    let (wrong, checked) = unknown_options(&documents());
    eprintln!("{checked} options shown with a command checked");
    assert!(
        checked > 100,
        "only {checked} options found: the scan misses them"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_scan_finds_an_option_a_command_lacks_in_each_form() {
    let docs: Vec<(String, String, bool)> = vec![
        (
            "a.md".into(),
            "```\nnovelfs mount ROOT MNT [--ttl SECONDS]\n              [--no-such-flag]\n```\n"
                .into(),
            false,
        ),
        (
            "b.md".into(),
            "Run `novelfs books --tool` once; `--tool` alone is prose.\n".into(),
            false,
        ),
        (
            "c.service".into(),
            "ExecStart=/usr/bin/novelfs index s3://b/p --publish \\\n    --every 300 --lazy\n"
                .into(),
            true,
        ),
    ];
    let (wrong, _) = unknown_options(&docs);
    let at: Vec<&str> = wrong.iter().map(|w| w.split(':').next().unwrap()).collect();
    assert_eq!(at, ["a.md", "b.md", "c.service"], "{wrong:#?}");
}
