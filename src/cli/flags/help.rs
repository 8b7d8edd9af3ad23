//! The prose of the help and the man page: what a `--help` ends with
//! (`NOTES`: where the log goes, the environment, exit status, fstab and
//! systemd), and the help texts two options share.

pub(super) const LONG_ABOUT: &str = "\
novelfs serves a library of Chinese novel chapters as a read-only FUSE \
filesystem. ROOT holds novels/ (ROOT is a directory, or s3://BUCKET[/PREFIX], \
gs://BUCKET[/PREFIX] or az://CONTAINER[/PREFIX] for a library in a bucket); each directory in novels/ is a book and each \
.md, .markdown or .txt file in a book is a chapter (UTF-8, GBK or UTF-16). In \
the mount, /BOOK/CHAPTER/offset-N.txt is exactly the page the novel_read tool \
returns for that chapter from line N (offset-N.json is its JSON form), and \
`novelfs read` prints the same page without a mount.

`novelfs ROOT MOUNTPOINT [-o OPTIONS]`, with ROOT an existing directory, is \
`novelfs mount ROOT MOUNTPOINT`: the form mount.fuse3 runs for an /etc/fstab \
line of type fuse.novelfs. Any other word that is not a subcommand is an error.";

/// The assistant's switch, explained once for `read`, `chapters` and `mount`.
pub(super) const STATE_FILE_HELP: &str = "\
The assistant's on/off state file [default: $DSH_NOVEL_WRITER_STATE, else \
~/.dsh/dsh-novel-writer/state.json]

When this file is JSON with tools.novel_read set to false, the novel_read tool \
is switched off: `read` fails with the 工具 novel_read …已在「写作助手功能」UI 中关闭 \
error, and a mount shows only an ERROR file (holding that error) at its root. \
A missing, unreadable or malformed file means on. A mount re-reads the file \
whenever it changes, so switching the tool off or on needs no remount.";

pub(super) const INDEX_DIR_HELP: &str = "\
Where the persistent index of chapters lives [default: $XDG_CACHE_HOME/novelfs, \
else ~/.cache/novelfs, else for root /var/cache/novelfs]

One file per library (named by a hash of its canonical path), made by \
`novelfs index` or by a mount as it reads chapters. It holds what each \
chapter's text is (its pages' places and sizes, its characters and lines), \
never the text; an entry is used only while the chapter file's device, inode, \
size, mtime and ctime are those recorded (in a bucket: the object's ETag and \
size). A file that cannot be written is \
used read-only; a corrupt one is set aside (renamed .corrupt-…) and made anew; \
one from a newer novelfs is not used. Same as -o index_dir=DIR.";

/// Topics after the options, in `--help` and in the man page.
pub(crate) const NOTES: &[(&str, &[(&str, &str)])] = &[
    (
        "ENVIRONMENT",
        &[
            (
                "NOVELFS_ROOT",
                "The library root of read, chapters and books when --root is not given (else the current directory).",
            ),
            (
                "DSH_NOVEL_WRITER_STATE",
                "The state file when --state-file is not given (see --state-file).",
            ),
            (
                "HOME",
                "Without both, the state file is $HOME/.dsh/dsh-novel-writer/state.json; without HOME either, the tool is on. \
                 A mount started by mount(8) or systemd often has no HOME: give --state-file or set DSH_NOVEL_WRITER_STATE there.",
            ),
            (
                "XDG_STATE_HOME",
                "A daemonized mount without --log-file and without syslog (/dev/log) logs to $XDG_STATE_HOME/novelfs/novelfs.log, \
                 else to $HOME/.local/state/novelfs/novelfs.log, else (root without either, as under mount(8) or systemd) \
                 to /var/log/novelfs/novelfs.log; the mounted line in the log names the file.",
            ),
            (
                "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION",
                "A library in a bucket: its credentials, profile and region (with ~/.aws/credentials and ~/.aws/config, \
                 or AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE); --no-sign-request looks for none. \
                 AWS_EC2_METADATA_DISABLED=true: the instance metadata service is not asked, so a machine \
                 with no credentials says so at once.",
            ),
            (
                "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT",
                "A library in Google Cloud Storage (gs://): a service account's key file; else gcloud's \
                 application default credentials, else the metadata server.",
            ),
            (
                "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY",
                "A library in Azure Blob Storage (az://): the account (or --account), its key or a SAS; else a \
                 service principal (AZURE_CLIENT_ID…), workload identity, AZURE_USE_AZURE_CLI=true, managed identity.",
            ),
            (
                "RUST_LOG",
                "Log level of a mount in the foreground (-f): info by default, debug to log every request.",
            ),
        ],
    ),
    (
        "EXIT STATUS",
        &[
            ("0", "Success (for mount: the mount is ready)."),
            (
                "1",
                "An error: read, chapters and books print one 错误：… line on stderr; mount and unmount print novelfs: and the reason.",
            ),
            (
                "2",
                "A usage error: an unknown subcommand or option, a missing or malformed argument, \
                 a ROOT that reads as a mistyped s3://, gs:// or az:// (s3:/b, S3://b), a bucket option with a \
                 directory ROOT or one cloud's option with another's bucket, az:// with no account.",
            ),
        ],
    ),
    (
        "FSTAB AND SYSTEMD",
        &[
            (
                "/etc/fstab",
                "/srv/library /mnt/novels fuse.novelfs ro,allow_other,ttl=1,log_file=/var/log/novelfs.log 0 0 \
                 (needs the mount.fuse.novelfs helper that scripts/install.sh puts in /sbin, or mount.fuse3 from fuse3 with novelfs on PATH).",
            ),
            (
                "mount.novelfs, mount.fuse.novelfs",
                "Links to novelfs; mount(8) runs them as `mount.fuse.novelfs ROOT MOUNTPOINT -o OPTIONS`, for the type \
                 fuse.novelfs (mount -t fuse.novelfs, or fstab) and novelfs (fstab only: mount(8) reads -t novelfs as \
                 \"not velfs\"). \
                 They ignore the rw that mount(8) adds when no ro is given (the mount is read-only in any case), \
                 and mount nothing for mount -f (fake).",
            ),
            (
                "systemd",
                "mnt-novels.mount (the fstab line as a unit) and novelfs.service (novelfs mount -f as a service) are in the source's examples/systemd/, \
                 installed to PREFIX/share/doc/novelfs/examples/ by scripts/install.sh.",
            ),
        ],
    ),
    (
        "SEE ALSO",
        &[
            (
                "docs/contract.md",
                "Every rule in one place: which files are chapters, lookup, decoding, pages and their text, \
                 the index files, the tree, attributes, freshness, the access options, errors and exit status.",
            ),
            (
                "docs/mounting.md",
                "Mounting for other users, fstab and systemd, stale mounts, a library on a network filesystem or in a bucket.",
            ),
            (
                "docs/agents.md",
                "Giving the library to an agent: bubblewrap, Docker, an MCP server.",
            ),
            (
                "PREFIX/share/doc/novelfs/",
                "Where scripts/install.sh (and the Debian package, /usr/share/doc/novelfs/) puts these documents.",
            ),
        ],
    ),
];

/// `-h` shows the first paragraph of a shared help text, as clap does for a
/// doc comment (a `const` string cannot be a doc comment).
pub(super) const fn first_paragraph(text: &'static str) -> &'static str {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\n' && bytes[i + 1] == b'\n' {
            let (head, _) = bytes.split_at(i);
            return match std::str::from_utf8(head) {
                Ok(s) => s,
                Err(_) => text,
            };
        }
        i += 1;
    }
    text
}

pub(super) fn notes_text() -> String {
    let mut out = String::new();
    for (heading, items) in NOTES {
        out += &format!("\n{heading}:\n");
        for (term, text) in *items {
            out += &format!("  {term}\n          {text}\n");
        }
    }
    out.trim().to_string()
}
