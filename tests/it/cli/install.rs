//! `scripts/install.sh` into a temporary prefix and back out, and what it
//! installs used by the real tools: `man -l` renders the page, bash loads
//! and runs the completion, `systemd-analyze verify` accepts the example
//! units, and mount(8) mounts `fuse.novelfs` through the installed helper.
//!
//! A tool that is missing (man, bash, systemd-analyze, unshare) makes its
//! test say that it skipped; `.ci/run` installs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_novelfs");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

fn skip(test: &str, why: &str) {
    crate::common::skip(&format!("{test}: {why}"));
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Installs into `prefix`, the helpers in PREFIX/sbin (as root the
/// default is the machine's /sbin).
fn install(prefix: &Path) -> Output {
    run(Command::new("bash")
        .arg(repo().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(prefix)
        .arg("--helper-dir")
        .arg(prefix.join("sbin"))
        .arg("--binary")
        .arg(BIN))
}

/// Every file and symlink under `dir`, relative to it.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn install_into_a_prefix_then_uninstall() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    install(&prefix);
    let want = [
        "bin/novelfs",
        "sbin/mount.fuse.novelfs",
        "sbin/mount.novelfs",
        "share/bash-completion/completions/novelfs",
        "share/doc/novelfs/agents.md",
        "share/doc/novelfs/contract.md",
        "share/doc/novelfs/examples/mnt-novels.mount",
        "share/doc/novelfs/examples/novelfs-publish.service",
        "share/doc/novelfs/examples/novelfs.service",
        "share/doc/novelfs/fleet.md",
        "share/doc/novelfs/installed-files",
        "share/doc/novelfs/mounting.md",
        "share/fish/vendor_completions.d/novelfs.fish",
        "share/man/man1/novelfs.1",
        "share/zsh/site-functions/_novelfs",
    ];
    assert_eq!(
        files_under(&prefix),
        want.iter().map(PathBuf::from).collect::<Vec<_>>()
    );
    // Every document --help names is installed.
    let help = run(Command::new(BIN).arg("--help"));
    let help = String::from_utf8_lossy(&help.stdout);
    let named: Vec<&str> = help
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("docs/"))
        .filter(|w| w.ends_with(".md"))
        .collect();
    assert!(named.contains(&"contract.md"), "{help}");
    for doc in named {
        assert!(
            prefix.join("share/doc/novelfs").join(doc).is_file(),
            "--help names docs/{doc}, which is not installed"
        );
    }
    // The installed binary is the one built, and runs.
    assert_eq!(
        std::fs::read(prefix.join("bin/novelfs")).unwrap(),
        std::fs::read(BIN).unwrap()
    );
    let version = run(Command::new(prefix.join("bin/novelfs")).arg("--version"));
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("novelfs "));
    // The helpers are links to it (mount(8) runs them by these names).
    for helper in ["mount.novelfs", "mount.fuse.novelfs"] {
        assert_eq!(
            std::fs::read_link(prefix.join("sbin").join(helper)).unwrap(),
            prefix.join("bin/novelfs")
        );
    }
    // The example units name the installed binary.
    let service =
        std::fs::read_to_string(prefix.join("share/doc/novelfs/examples/novelfs.service")).unwrap();
    assert!(service.contains(&format!(
        "ExecStart={} mount -f",
        prefix.join("bin/novelfs").display()
    )));
    assert!(!service.contains("/usr/local/bin/novelfs"));

    // Installing again over it is fine, and one uninstall removes it all.
    install(&prefix);
    run(Command::new("bash")
        .arg(repo().join("scripts/install.sh"))
        .arg("--uninstall")
        .arg("--prefix")
        .arg(&prefix));
    assert_eq!(files_under(&prefix), Vec::<PathBuf>::new());
    assert!(!prefix.exists(), "the prefix it created is removed too");

    // Uninstalling what is not installed says so.
    let out = Command::new("bash")
        .arg(repo().join("scripts/install.sh"))
        .arg("--uninstall")
        .arg("--prefix")
        .arg(&prefix)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to uninstall"));
}

#[test]
fn uninstall_keeps_what_it_did_not_install() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path();
    let theirs = prefix.join("share/man/man1/other.1");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, ".TH OTHER 1\n").unwrap();
    install(prefix);
    // Someone else's helper of the same name, installed after ours.
    let helper = prefix.join("sbin/mount.novelfs");
    std::fs::remove_file(&helper).unwrap();
    std::os::unix::fs::symlink("/bin/true", &helper).unwrap();
    run(Command::new("bash")
        .arg(repo().join("scripts/install.sh"))
        .arg("--uninstall")
        .arg("--prefix")
        .arg(prefix));
    assert_eq!(
        files_under(prefix),
        vec![
            PathBuf::from("sbin/mount.novelfs"),
            PathBuf::from("share/man/man1/other.1")
        ]
    );
}

#[test]
fn man_renders_the_installed_page() {
    if !have("man") {
        return skip(
            "man_renders_the_installed_page",
            "man is not installed (package man-db)",
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path());
    let page = tmp.path().join("share/man/man1/novelfs.1");
    let out = run(Command::new("man")
        .arg("--warnings")
        .arg("-l")
        .arg(&page)
        .env("MANWIDTH", "100")
        .env("LC_ALL", "C.UTF-8")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.stderr.is_empty(),
        "groff warnings: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every subcommand, every mount option and the state file are there.
    let help = run(Command::new(BIN).args(["mount", "--help"]));
    let help = String::from_utf8_lossy(&help.stdout);
    let mut flags: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        .collect();
    flags.dedup();
    assert!(flags.len() >= 8, "{flags:?}");
    for needle in flags.iter().copied().chain([
        "NAME",
        "SYNOPSIS",
        "novelfs mount",
        "novelfs unmount",
        "novelfs read",
        "novelfs chapters",
        "subtype=NAME",
        "DSH_NOVEL_WRITER_STATE",
        "NOVELFS_ROOT",
        "fuse.novelfs",
        // Where a mount logs when it has no --log-file and no syslog.
        "XDG_STATE_HOME",
    ]) {
        assert!(text.contains(needle), "{needle:?} not in the page:\n{text}");
    }
    // The synopsis names the value of every option that takes one, as
    // `--help` does (`[-o OPTIONS]`, `[--ttl SECONDS]`).
    let synopsis = text
        .split("SYNOPSIS")
        .nth(1)
        .and_then(|rest| rest.split("DESCRIPTION").next())
        .expect("a SYNOPSIS section")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for sub in ["mount", "unmount", "read", "chapters", "books"] {
        let help = run(Command::new(BIN).args([sub, "--help"]));
        let mut options = 0;
        for line in String::from_utf8_lossy(&help.stdout).lines() {
            // The option's names and value, without a description on the same line.
            let line = line.trim().split("  ").next().unwrap_or_default();
            if !line.starts_with('-') {
                continue;
            }
            // `-f, --foreground`, `--ttl <SECONDS>`, `-o <OPTIONS>`
            let (names, value) = match line.split_once(" <") {
                Some((names, value)) => (names, format!(" {}", value.trim_end_matches('>'))),
                None => (line, String::new()),
            };
            let want = format!("[{}{value}]", names.replace(", ", "|"));
            assert!(
                synopsis.contains(&want),
                "novelfs {sub}: {want} not in the synopsis:\n{synopsis}"
            );
            options += 1;
        }
        assert!(options >= 2, "novelfs {sub} --help lists its options");
    }
    for shown in ["[-o OPTIONS]", "[--ttl SECONDS]", "[--threads N]"] {
        assert!(synopsis.contains(shown), "{shown}: {synopsis}");
    }
    // `man novelfs` finds it by name under the prefix.
    let by_name = run(Command::new("man")
        .arg("novelfs")
        .env("MANPATH", tmp.path().join("share/man"))
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat"));
    assert!(String::from_utf8_lossy(&by_name.stdout).contains("novelfs mount"));
}

/// Runs the completion function as bash would for `line` (the cursor at its end).
fn bash_complete(script: &Path, line: &str) -> Vec<String> {
    let body = r#"source "$1"
complete -p novelfs >/dev/null || exit 3
read -r -a COMP_WORDS <<< "$2"
case "$2" in *' ') COMP_WORDS+=("") ;; esac
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}
func=$(complete -p novelfs | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
"$func" novelfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#;
    let out = run(Command::new("bash")
        .arg("-c")
        .arg(body)
        .arg("bash")
        .arg(script)
        .arg(line));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn completions_load_and_complete() {
    if !have("bash") {
        return skip("completions_load_and_complete", "bash is not installed");
    }
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path());
    let bash = tmp.path().join("share/bash-completion/completions/novelfs");
    let out = run(Command::new("bash")
        .arg("-c")
        .arg(r#"source "$1" && complete -p novelfs"#)
        .arg("bash")
        .arg(&bash));
    let registered = String::from_utf8_lossy(&out.stdout);
    assert!(
        registered.starts_with("complete ") && registered.trim_end().ends_with(" novelfs"),
        "{registered}"
    );
    assert_eq!(bash_complete(&bash, "novelfs mo"), ["mount"]);
    assert_eq!(bash_complete(&bash, "novelfs ch"), ["chapters"]);
    assert_eq!(bash_complete(&bash, "novelfs mount --ca"), ["--cache-size"]);
    assert_eq!(
        bash_complete(&bash, "novelfs read --state"),
        ["--state-file"]
    );
    let shells = bash_complete(&bash, "novelfs completions ");
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.iter().any(|s| s == shell), "{shells:?}");
    }

    // zsh: the script parses and declares itself for novelfs (zsh cannot
    // complete without a terminal); fish: it completes, as bash did.
    let zsh = tmp.path().join("share/zsh/site-functions/_novelfs");
    let text = std::fs::read_to_string(&zsh).unwrap();
    assert!(text.starts_with("#compdef novelfs"), "{text}");
    assert!(text.contains("--cache-size"));
    if have("zsh") {
        run(Command::new("zsh").arg("-n").arg(&zsh));
    } else {
        skip(
            "completions_load_and_complete",
            "zsh is not installed; its script was only read",
        );
    }
    let fish = tmp
        .path()
        .join("share/fish/vendor_completions.d/novelfs.fish");
    if have("fish") {
        let complete = |line: &str| {
            let out = run(Command::new("fish")
                .arg("-c")
                .arg(r#"source $argv[1]; complete -C $argv[2]"#)
                .arg(&fish)
                .arg(line));
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| l.split('\t').next().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(complete("novelfs mo"), ["mount"]);
        assert_eq!(complete("novelfs mount --ca"), ["--cache-size"]);
    } else {
        let text = std::fs::read_to_string(&fish).unwrap();
        assert!(text.contains("complete -c novelfs") && text.contains("cache-size"));
        skip(
            "completions_load_and_complete",
            "fish is not installed; its script was only read",
        );
    }
}

#[test]
fn example_units_verify() {
    if !have("systemd-analyze") {
        return skip(
            "example_units_verify",
            "systemd-analyze is not installed (package systemd)",
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path());
    let examples = tmp.path().join("share/doc/novelfs/examples");
    let units = [
        examples.join("mnt-novels.mount"),
        examples.join("novelfs.service"),
        examples.join("novelfs-publish.service"),
    ];
    // MANPATH: the units' Documentation=man:novelfs(1) is checked with man.
    let verify = |units: &[PathBuf]| {
        Command::new("systemd-analyze")
            .arg("verify")
            .args(units)
            .env("MANPATH", tmp.path().join("share/man"))
            .env("SYSTEMD_LOG_LEVEL", "notice")
            .output()
            .unwrap()
    };
    let out = verify(&units);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // It does check: a service whose binary is missing is refused.
    let broken = tmp.path().join("broken.service");
    let text = std::fs::read_to_string(&units[1]).unwrap().replace(
        &tmp.path().join("bin/novelfs").display().to_string(),
        "/nonexistent/novelfs",
    );
    std::fs::write(&broken, text).unwrap();
    let out = verify(std::slice::from_ref(&broken));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/nonexistent/novelfs"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// mount(8) looks for helpers only in /sbin. In a private mount namespace
/// an overlay on it takes the install there without touching the real one.
#[test]
fn mount_t_fuse_novelfs_uses_the_installed_helper() {
    let test = "mount_t_fuse_novelfs_uses_the_installed_helper";
    require_fuse!();
    for tool in ["unshare", "mount", "umount"] {
        if !have(tool) {
            return skip(
                test,
                &format!("{tool} is not installed (package util-linux)"),
            );
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for d in ["upper", "work", "mnt", "mnt2", "mnt3"] {
        std::fs::create_dir(t.join(d)).unwrap();
    }
    let sbin = std::fs::canonicalize("/sbin").unwrap();
    let library = repo().join("examples/library");
    let script = r#"set -eu
t=$1 sbin=$2 lib=$3 bin=$4 repo=$5
mount -t overlay overlay -o "lowerdir=$sbin,upperdir=$t/upper,workdir=$t/work" "$sbin" || exit 77
trap 'umount -l "$t/mnt" "$t/mnt2" "$t/mnt3" 2>/dev/null || true' EXIT
# Root's helpers go to /sbin (here the overlay) whatever the prefix.
bash "$repo/scripts/install.sh" --prefix "$t/prefix" --binary "$bin" > "$t/install.log"
[ "$(readlink /sbin/mount.fuse.novelfs)" = "$t/prefix/bin/novelfs" ]
# No -o: mount(8) passes -o rw, which the helper must not refuse.
mount -t fuse.novelfs "$lib" "$t/mnt"
grep -F " $t/mnt " /proc/self/mountinfo > "$t/mountinfo"
cat "$t/mnt/西游记/1/offset-1.txt" > "$t/page-t"
umount "$t/mnt"
# The README's fstab line, and the type novelfs (`mount -t novelfs` cannot
# work: mount(8) reads -t noX as "not X"; an fstab line can).
printf '%s
' "$lib $t/mnt2 fuse.novelfs ro,allow_other,ttl=1,log_file=$t/fstab.log 0 0" \
  "$lib $t/mnt3 novelfs defaults,fsname=novels 0 0" > "$t/fstab"
mount -T "$t/fstab" "$t/mnt2"
mount -T "$t/fstab" "$t/mnt3"
grep -F " $t/mnt2 " /proc/self/mountinfo > "$t/mountinfo2"
grep -F " $t/mnt3 " /proc/self/mountinfo > "$t/mountinfo3"
cat "$t/mnt2/西游记/1/offset-1.txt" > "$t/page-fstab"
cat "$t/mnt3/西游记/1/offset-1.txt" > "$t/page-plain"
umount "$t/mnt2" "$t/mnt3"
# mount -f (fake) mounts nothing and succeeds.
mount -f -t fuse.novelfs "$lib" "$t/mnt3"
if grep -F " $t/mnt3 " /proc/self/mountinfo; then echo "fake mount mounted" >&2; exit 1; fi
# A refused option comes back through mount(8) with novelfs's reason.
if mount -t fuse.novelfs -o bogus "$lib" "$t/mnt3" 2> "$t/refused"; then exit 1; fi
"#;
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "bash",
            "-c",
            script,
            "bash",
        ])
        .arg(t)
        .arg(&sbin)
        .arg(&library)
        .arg(BIN)
        .arg(repo())
        .output()
        .unwrap();
    if out.status.code() == Some(77) {
        return skip(test, "no overlayfs here to stand in for /sbin");
    }
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let want = run(Command::new(BIN)
        .args(["read", "--state-file", "/nonexistent/state.json", "--root"])
        .arg(&library)
        .args(["西游记", "1"]));
    for page in ["page-t", "page-fstab", "page-plain"] {
        assert_eq!(
            String::from_utf8_lossy(&std::fs::read(t.join(page)).unwrap()),
            String::from_utf8_lossy(&want.stdout),
            "{page}"
        );
    }
    // The type is fuse.novelfs and the source the library, as sshfs shows
    // its mounts (fsname= replaces the source).
    let source_of = |file: &str| {
        let info = std::fs::read_to_string(t.join(file)).unwrap();
        let (vfs, fs) = info.split_once(" - ").unwrap_or_else(|| panic!("{info}"));
        let fs: Vec<&str> = fs.split_whitespace().collect();
        assert_eq!(fs[0], "fuse.novelfs", "{info}");
        assert!(
            vfs.split_whitespace().nth(5).unwrap().starts_with("ro,"),
            "mounted read-only whatever mount(8) said: {info}"
        );
        fs[1].to_string()
    };
    let library_root = std::fs::canonicalize(&library).unwrap();
    assert_eq!(source_of("mountinfo"), library_root.to_str().unwrap());
    assert_eq!(source_of("mountinfo2"), library_root.to_str().unwrap());
    assert_eq!(source_of("mountinfo3"), "novels");
    let fstab_log = std::fs::read_to_string(t.join("fstab.log")).unwrap_or_default();
    assert!(
        fstab_log.contains(&format!("; log: {})", t.join("fstab.log").display())),
        "the fstab line's log_file=: {fstab_log}"
    );
    let refused = std::fs::read_to_string(t.join("refused")).unwrap();
    assert!(refused.contains("unknown mount option: bogus"), "{refused}");
    // Nothing of it is left in the real /sbin or mounted out here.
    assert!(!Path::new("/sbin/mount.fuse.novelfs").exists() || sbin_had_it_before());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&t.display().to_string()), "{mounts}");
}

/// Someone may have installed novelfs on this machine for real.
fn sbin_had_it_before() -> bool {
    std::fs::read_link("/sbin/mount.fuse.novelfs").is_ok_and(|p| !p.starts_with("/tmp"))
}
