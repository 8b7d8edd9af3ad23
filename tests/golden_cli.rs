//! Every reference case of the original tool, through the `novelfs read` binary.

mod common;

use std::process::Command;

#[test]
fn all_reference_cases_match_through_the_cli() {
    reference_cases_through_the_cli(None);
}

/// With `--path-root /library`, every page, JSON and error text is the
/// reference one with `/library` as its root, wherever the library lives.
#[test]
fn all_reference_cases_match_through_the_cli_with_a_path_root() {
    reference_cases_through_the_cli(Some("/library"));
}

fn reference_cases_through_the_cli(path_root: Option<&str>) {
    let (guard, root) = common::reference_library();
    let cases = common::cases(path_root.map_or(root.as_path(), std::path::Path::new));
    assert_eq!(cases.len(), 181, "the reference set has 181 cases");
    let no_state = guard.path().join("no-state.json");
    let mut failures = Vec::new();
    let mut checks = 0;
    for (n, case) in cases.iter().enumerate() {
        let state_file = match &case.state {
            Some(state) => {
                let p = guard.path().join(format!("state-{n}.json"));
                std::fs::write(&p, state.to_string()).unwrap();
                p
            }
            None => no_state.clone(),
        };
        let run = |json: bool| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_novelfs"));
            cmd.arg("read")
                .arg("--root")
                .arg(&root)
                .arg("--state-file")
                .arg(&state_file);
            if let Some(p) = path_root {
                cmd.arg("--path-root").arg(p);
            }
            cmd.arg(&case.book).arg(&case.chapter);
            if let Some(o) = case.offset {
                cmd.arg("--offset").arg(o.to_string());
            }
            if let Some(l) = case.limit {
                cmd.arg("--limit").arg(l.to_string());
            }
            if json {
                cmd.arg("--json");
            }
            cmd.output().expect("novelfs runs")
        };
        let label = format!(
            "case {n}: {} / {} offset={:?} limit={:?}",
            case.book, case.chapter, case.offset, case.limit
        );
        if let Some(error) = &case.error {
            let out = run(false);
            checks += 1;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.code() != Some(1)
                || !out.stdout.is_empty()
                || stderr != format!("{error}\n")
            {
                failures.push(format!(
                    "{label}\n  want error {error:?}\n  got status {:?} stderr {stderr:?}",
                    out.status.code()
                ));
            }
            continue;
        }
        let out = run(false);
        checks += 1;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || Some(text.as_ref()) != case.text.as_deref() {
            failures.push(format!(
                "{label}\n  want text {:?}\n  got {:?} stderr {:?}",
                case.text,
                text,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let out = run(true);
        checks += 1;
        let json = String::from_utf8_lossy(&out.stdout);
        let want = common::pretty_json(case.json.as_ref().expect("a page case has json"));
        if !out.status.success() || json != want {
            failures.push(format!("{label}\n  want json {want}\n  got {json}"));
        }
    }
    println!(
        "reference cases through the CLI (path root {path_root:?}): {} cases, {checks} checks, {} failures",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} checks failed:\n{}",
        failures.len(),
        checks,
        failures.join("\n")
    );
}
