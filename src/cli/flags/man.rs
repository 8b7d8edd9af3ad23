//! novelfs(1), generated from the clap definitions.

use super::args::command;
use super::help::NOTES;

/// A section rendered by clap_mangen, without roff's preamble and without
/// its own `.SH` line, so that it can sit under another heading.
fn section_body(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut buf = Vec::new();
    render(&mut buf).expect("rendering into memory");
    String::from_utf8_lossy(&buf)
        .lines()
        .filter(|l| !l.starts_with(".ie \\n(.g") && !l.starts_with(".el .ds Aq"))
        .skip_while(|l| l.starts_with(".SH"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Escapes text for roff: a leading dot or quote would be a request, and a
/// backslash an escape.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// One subcommand's synopsis line: every option with the name of its value
/// (`[-o OPTIONS]`, `[--ttl SECONDS]`), which clap_mangen's synopsis leaves
/// out, then the positional arguments.
fn synopsis(sub: &clap::Command) -> String {
    let mut line = format!("\\fBnovelfs {}\\fR", sub.get_name());
    let shown = || sub.get_arguments().filter(|a| !a.is_hide_set());
    for arg in shown().filter(|a| !a.is_positional()) {
        let names: Vec<String> = arg
            .get_short()
            .map(|c| format!("-{c}"))
            .into_iter()
            .chain(arg.get_long().map(|l| format!("--{l}")))
            .map(|n| format!("\\fB{}\\fR", roff_text(&n)))
            .collect();
        let value = value_name(arg)
            .map(|v| format!(" \\fI{}\\fR", roff_text(&v)))
            .unwrap_or_default();
        line += &format!(" [{}{value}]", names.join("|"));
    }
    for arg in shown().filter(|a| a.is_positional()) {
        let name = value_name(arg).unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
        line += &format!(" \\fI{}\\fR", roff_text(&name));
    }
    line + "\n"
}

/// The name of the value an argument takes, as `--help` writes it; `None`
/// for a flag.
fn value_name(arg: &clap::Arg) -> Option<String> {
    if !arg.get_action().takes_values() {
        return None;
    }
    Some(match arg.get_value_names() {
        Some(names) => names
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        None => arg.get_id().to_string().to_uppercase(),
    })
}

/// novelfs(1): every subcommand with its options on one page (as sshfs(1)
/// has), then the notes.
pub(crate) fn man_page() -> String {
    let mut top = command();
    top.build();
    let man = clap_mangen::Man::new(top.clone());
    let mut page = String::new();
    let mut head = Vec::new();
    man.render_title(&mut head).expect("in memory");
    man.render_name_section(&mut head).expect("in memory");
    page += &String::from_utf8_lossy(&head);

    page += ".SH SYNOPSIS\n";
    // Not hyphenated: an option's value split at a line's end reads as
    // two words (`SEC- ONDS`).
    page += ".nh\n";
    let subs: Vec<clap::Command> = top
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .cloned()
        .collect();
    for sub in &subs {
        page += &synopsis(sub);
        page += ".br\n";
    }
    page += "\\fBnovelfs\\fR \\fIROOT\\fR \\fIMOUNTPOINT\\fR [\\fB\\-o\\fR \\fIOPTIONS\\fR] (ROOT an existing directory: the same as \\fBnovelfs mount\\fR)\n";
    page += ".hy\n";

    let mut description = Vec::new();
    man.render_description_section(&mut description)
        .expect("in memory");
    page += &String::from_utf8_lossy(&description);

    page += ".SH COMMANDS\n";
    for sub in &subs {
        page += &format!(".SS \"novelfs {}\"\n", sub.get_name());
        let about = sub
            .get_long_about()
            .or_else(|| sub.get_about())
            .map(|s| s.to_string())
            .unwrap_or_default();
        for para in about.split("\n\n") {
            page += &format!(".PP\n{}\n", roff_text(&para.replace('\n', " ")));
        }
        let sub_man = clap_mangen::Man::new(sub.clone());
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            page += &section_body(|w| sub_man.render_options_section(w));
        }
    }

    for (heading, items) in NOTES {
        page += &format!(".SH \"{heading}\"\n");
        // One SEE ALSO: the pages of other tools, then the documents.
        if *heading == "SEE ALSO" {
            page += "\\fBmount\\fR(8), \\fBfstab\\fR(5), \\fBmount.fuse3\\fR(8), \\fBfusermount3\\fR(1), \\fBsystemd.mount\\fR(5)\n";
        }
        for (term, text) in *items {
            page += &format!(".TP\n\\fB{}\\fR\n{}\n", roff_text(term), roff_text(text));
        }
    }
    let mut version = Vec::new();
    man.render_version_section(&mut version).expect("in memory");
    page += &String::from_utf8_lossy(&version);
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_page_holds_every_subcommand_and_option() {
        let page = man_page();
        for needle in [
            "novelfs mount",
            "novelfs read",
            "novelfs chapters",
            "novelfs unmount",
            "novelfs upgrade",
            "novelfs status",
            "\\-\\-state\\-file",
            "DSH_NOVEL_WRITER_STATE",
            "subtype=NAME",
            "\\-\\-cache\\-size",
        ] {
            assert!(page.contains(needle), "{needle} missing");
        }
        assert_eq!(page.matches(".TH ").count(), 1);
        assert_eq!(page.matches(".SH \"SEE ALSO\"").count(), 1, "one SEE ALSO");
        // Text lines: a request's (`.TH`) empty fields are not shown.
        for line in page.lines().filter(|l| !l.starts_with('.')) {
            assert!(
                !line.contains("  "),
                "a run of spaces in the man page: {line:?}"
            );
        }
    }

    /// The README's synopsis: the block under "## The commands".
    fn readme_synopsis() -> String {
        let readme = include_str!("../../../README.md");
        let after = readme
            .split("## The commands")
            .nth(1)
            .expect("README has ## The commands");
        after
            .split("```")
            .nth(1)
            .expect("a synopsis block")
            .to_string()
    }

    /// Every option the parser knows, of every subcommand, is in its
    /// `--help`, in the man page and in the README's synopsis.
    #[test]
    fn every_option_is_in_help_the_man_page_and_the_readme() {
        let page = man_page();
        let synopsis = readme_synopsis();
        let mut top = command();
        top.build();
        let mut seen = 0;
        for sub in top.get_subcommands_mut() {
            let name = sub.get_name().to_string();
            if name == "help" || sub.is_hide_set() {
                continue;
            }
            let help = sub.render_long_help().to_string();
            let longs: Vec<(String, Option<char>)> = sub
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(|l| (l.to_string(), a.get_short())))
                .filter(|(l, _)| l != "help" && l != "version")
                .collect();
            let line = synopsis
                .split("\nnovelfs ")
                .map(|l| format!("novelfs {}", l.trim_start_matches("novelfs ")))
                .find(|l| {
                    l.starts_with(&format!("novelfs {name} "))
                        || l.trim() == format!("novelfs {name}")
                })
                .unwrap_or_else(|| panic!("no novelfs {name} in the README synopsis"));
            for (long, short) in longs {
                seen += 1;
                let short = short.map(|c| format!("[-{c}"));
                let flag = format!("--{long}");
                assert!(help.contains(&flag), "novelfs {name} --help lacks {flag}");
                assert!(
                    page.contains(&flag.replace('-', "\\-")),
                    "the man page lacks {flag}"
                );
                assert!(
                    line.contains(&format!("[{flag}"))
                        || line.contains(&format!("| {flag}"))
                        || short.as_ref().is_some_and(|s| line.contains(s)),
                    "the README synopsis of novelfs {name} lacks {flag}"
                );
            }
        }
        assert!(seen > 20, "only {seen} options seen");
    }
}
