//! Where the daemon's log lines go, as other FUSE daemons do it (sshfs,
//! rclone): stderr in the foreground; `--log-file FILE` (`-o
//! log_file=FILE`) when given; otherwise a daemonized mount writes to
//! syslog, which journald reads too, through the `/dev/log` socket, and
//! without syslog (a container) to a default file in the XDG state
//! directory. The mounted line names where the log goes.
//!
//! The syslog writer is a few lines of our own: one RFC 3164 datagram per
//! record (`<PRI>novelfs[PID]: message`, facility daemon) is all there is
//! to it, and the crates for it bring formats and transports (TCP, UDP,
//! RFC 5424) a mount does not use.
//!
//! Filtering stays `RUST_LOG`'s: novelfs logs at info (warn for a
//! daemonized mount with nowhere to log, whose stderr is the caller's
//! terminal until it is ready), fuser only its errors (its "[Not
//! Implemented] getxattr(…)" warnings are not news to anyone) but all of
//! its io_uring transport's (which transport serves, and why), and
//! `RUST_LOG` is applied on top, so `RUST_LOG=debug` or
//! `RUST_LOG=fuser=warn` bring back what they name.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

/// Where syslog (or journald's syslog socket) listens.
pub(crate) const SYSLOG_SOCKET: &str = "/dev/log";

/// Facility `daemon` (3), in the high bits of a syslog priority.
const FACILITY_DAEMON: u8 = 3 << 3;

/// Where the log lines go.
pub(crate) enum Sink {
    Stderr,
    File(std::fs::File, PathBuf),
    Syslog(Syslog),
    /// A daemon with no log file and no syslog: warnings only, to the
    /// caller's terminal until the mount is ready; why, for the caller.
    Nowhere(String),
}

/// One datagram to a syslog socket per record written and flushed.
pub(crate) struct Syslog {
    socket: UnixDatagram,
    path: PathBuf,
    pending: Vec<u8>,
}

impl Syslog {
    pub(crate) fn connect(path: &Path) -> std::io::Result<Syslog> {
        let socket = UnixDatagram::unbound()?;
        socket.connect(path)?;
        Ok(Syslog {
            socket,
            path: path.to_path_buf(),
            pending: Vec::new(),
        })
    }
}

impl Write for Syslog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    /// Sends what was written as one message. A log line that cannot be
    /// sent is dropped (after one reconnect, for a restarted syslog): the
    /// mount goes on either way.
    fn flush(&mut self) -> std::io::Result<()> {
        let mut msg = std::mem::take(&mut self.pending);
        while msg.last() == Some(&b'\n') {
            msg.pop();
        }
        if msg.is_empty() {
            return Ok(());
        }
        if self.socket.send(&msg).is_err()
            && let Ok(again) = Syslog::connect(&self.path)
        {
            self.socket = again.socket;
            let _ = self.socket.send(&msg);
        }
        Ok(())
    }
}

/// The syslog severity of a level.
fn severity(level: log::Level) -> u8 {
    match level {
        log::Level::Error => 3,
        log::Level::Warn => 4,
        log::Level::Info => 6,
        log::Level::Debug | log::Level::Trace => 7,
    }
}

/// One syslog message: `<PRI>novelfs[PID]: text` (syslog stamps the time).
fn syslog_line(level: log::Level, pid: u32, text: &str) -> String {
    format!(
        "<{}>novelfs[{pid}]: {text}",
        FACILITY_DAEMON | severity(level)
    )
}

/// Where a mount logs: the file (opened now, so that a bad path is the
/// caller's error, and kept across the daemon's fork), stderr in the
/// foreground, else syslog, else the default log file. A daemon with
/// none of these has nowhere to log: `Sink::Nowhere` says why, and the
/// daemon says so once the mount is made (never before a refusal).
pub(crate) fn sink_for(log_file: Option<&Path>, foreground: bool) -> Result<Sink, String> {
    if let Some(path) = log_file {
        return open_log_file(path).map(|file| Sink::File(file, path.to_path_buf()));
    }
    if foreground {
        return Ok(Sink::Stderr);
    }
    let syslog_error = match Syslog::connect(Path::new(SYSLOG_SOCKET)) {
        Ok(s) => return Ok(Sink::Syslog(s)),
        Err(e) => e,
    };
    let default = default_log_file(
        std::env::var_os("XDG_STATE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() } == 0,
    );
    let file_error = match &default {
        None => "no $XDG_STATE_HOME or $HOME for a default log file, and not root".to_string(),
        Some(path) => {
            let made = path.parent().map_or(Ok(()), |dir| {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
            });
            match made
                .map_err(|e| e.to_string())
                .and_then(|()| open_log_file(path))
            {
                Ok(file) => return Ok(Sink::File(file, path.clone())),
                Err(e) => e,
            }
        }
    };
    Ok(Sink::Nowhere(format!(
        "no syslog at {SYSLOG_SOCKET} ({syslog_error}) and no default log file ({file_error}): \
         the daemon's log is lost; --log-file FILE keeps it"
    )))
}

fn open_log_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o640)
        .open(path)
        .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))
}

/// The log file of a daemonized mount without syslog, where the XDG base
/// directories keep a program's state: `$XDG_STATE_HOME/novelfs/novelfs.log`,
/// else `$HOME/.local/state/novelfs/novelfs.log` (a relative or empty
/// variable counts as unset, as the specification says); for root with
/// neither (a mount made by mount(8), fstab or systemd), where daemons
/// log, `/var/log/novelfs/novelfs.log`.
fn default_log_file(
    xdg_state_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
    root: bool,
) -> Option<PathBuf> {
    fn usable(v: Option<&std::ffi::OsStr>) -> Option<&Path> {
        v.map(Path::new).filter(|p| p.is_absolute())
    }
    let state = usable(xdg_state_home)
        .map(Path::to_path_buf)
        .or_else(|| usable(home).map(|h| h.join(".local/state")));
    match state {
        Some(state) => Some(state.join("novelfs").join("novelfs.log")),
        None if root => Some(PathBuf::from(SYSTEM_LOG_FILE)),
        None => None,
    }
}

/// Root's log file when it has no home and no syslog.
pub(crate) const SYSTEM_LOG_FILE: &str = "/var/log/novelfs/novelfs.log";

/// Where the installed logger writes, as the mounted line names it.
static DESTINATION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The log file's descriptor (the logger owns it for the life of the
/// process), for the holder to keep logging to across its re-exec.
static FILE_FD: std::sync::OnceLock<std::os::fd::RawFd> = std::sync::OnceLock::new();

/// Why a daemon's log is lost, when it is.
static LOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Where the log goes (`stderr`, `syslog (journalctl -t novelfs)`, a
/// file's path, or `nowhere`), for the mounted line.
pub(crate) fn destination() -> &'static str {
    DESTINATION.get().map_or("stderr", String::as_str)
}

/// Why the daemon has nowhere to log, to be said once the mount is made.
pub(crate) fn lost() -> Option<&'static str> {
    LOST.get().map(String::as_str)
}

/// The sink installed, as the holder hands it to itself across an exec:
/// its kind (`stderr`, `syslog`, `nowhere`, or `file:FD`, the descriptor
/// left open), and the file's path.
pub(crate) fn handed_on() -> (String, Option<PathBuf>) {
    match (DESTINATION.get().map(String::as_str), FILE_FD.get()) {
        (Some("stderr") | None, _) => ("stderr".into(), None),
        (Some("nowhere"), _) => ("nowhere".into(), None),
        (Some(d), _) if d.starts_with("syslog") => ("syslog".into(), None),
        (Some(path), Some(fd)) => (format!("file:{fd}"), Some(PathBuf::from(path))),
        (Some(_), None) => ("nowhere".into(), None),
    }
}

/// The sink `handed_on` described, in the process that took it over
/// (which owns the file's descriptor from now on).
pub(crate) fn taken_over(kind: &str, path: Option<PathBuf>) -> Sink {
    if let Some(fd) = kind
        .strip_prefix("file:")
        .and_then(|fd| fd.parse::<std::os::fd::RawFd>().ok())
    {
        // SAFETY: the descriptor was left open across the exec for this
        // process to own, and is taken once.
        let file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        return Sink::File(file, path.unwrap_or_default());
    }
    match kind {
        "stderr" => Sink::Stderr,
        "syslog" => match Syslog::connect(Path::new(SYSLOG_SOCKET)) {
            Ok(s) => Sink::Syslog(s),
            Err(e) => Sink::Nowhere(format!("no syslog at {SYSLOG_SOCKET} ({e})")),
        },
        _ => Sink::Nowhere(String::new()),
    }
}

/// The filter directives: novelfs at `level`, fuser's errors only but its
/// io_uring transport at `level`, then `RUST_LOG` (later directives win for
/// the same target).
fn directives(level: &str, rust_log: Option<&str>) -> String {
    let mut d = format!("{level},fuser=error,fuser::uring={level}");
    if let Some(env) = rust_log.map(str::trim).filter(|e| !e.is_empty()) {
        d.push(',');
        d.push_str(env);
    }
    d
}

/// Installs the logger for a mount.
pub(crate) fn init(sink: Sink) {
    let level = match sink {
        Sink::Nowhere(_) => "warn",
        _ => "info",
    };
    let rust_log = std::env::var("RUST_LOG").ok();
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(&directives(level, rust_log.as_deref()));
    let destination = match &sink {
        Sink::Stderr => "stderr".to_string(),
        Sink::File(_, path) => path.display().to_string(),
        Sink::Syslog(_) => "syslog (journalctl -t novelfs)".to_string(),
        Sink::Nowhere(_) => "nowhere".to_string(),
    };
    let _ = DESTINATION.set(destination);
    match sink {
        Sink::Stderr => {}
        Sink::Nowhere(why) => {
            let _ = LOST.set(why);
        }
        Sink::File(file, _) => {
            use std::os::fd::AsRawFd;
            let _ = FILE_FD.set(file.as_raw_fd());
            builder
                .target(env_logger::Target::Pipe(Box::new(file)))
                .write_style(env_logger::WriteStyle::Never);
        }
        Sink::Syslog(syslog) => {
            builder
                .target(env_logger::Target::Pipe(Box::new(syslog)))
                .write_style(env_logger::WriteStyle::Never)
                .format(|buf, record| {
                    let text = record.args().to_string();
                    writeln!(
                        buf,
                        "{}",
                        syslog_line(record.level(), std::process::id(), &text)
                    )
                });
        }
    }
    let _ = builder.try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_goes_on_top_of_the_defaults() {
        assert_eq!(
            directives("info", None),
            "info,fuser=error,fuser::uring=info"
        );
        assert_eq!(
            directives("info", Some(" ")),
            "info,fuser=error,fuser::uring=info"
        );
        assert_eq!(
            directives("warn", Some("debug,fuser=warn")),
            "warn,fuser=error,fuser::uring=warn,debug,fuser=warn"
        );
        let logger = env_logger::Builder::new()
            .parse_filters(&directives("info", Some("debug")))
            .build();
        let enabled = |target, level| {
            let meta = log::Metadata::builder().target(target).level(level).build();
            log::Log::enabled(&logger, &meta)
        };
        assert!(enabled("novelfs::mount", log::Level::Debug));
        assert!(!enabled("fuser::request", log::Level::Warn));
        assert!(enabled("fuser::request", log::Level::Error));
    }

    #[test]
    fn the_default_log_file_is_in_the_xdg_state_directory() {
        let os = |s: &'static str| Some(std::ffi::OsStr::new(s));
        for root in [false, true] {
            assert_eq!(
                default_log_file(os("/state"), os("/home/u"), root),
                Some(PathBuf::from("/state/novelfs/novelfs.log"))
            );
            for unusable in [None, os(""), os("relative")] {
                assert_eq!(
                    default_log_file(unusable, os("/home/u"), root),
                    Some(PathBuf::from("/home/u/.local/state/novelfs/novelfs.log"))
                );
            }
        }
        assert_eq!(default_log_file(None, os(""), false), None);
        assert_eq!(default_log_file(None, None, false), None);
        assert_eq!(
            default_log_file(None, None, true),
            Some(PathBuf::from("/var/log/novelfs/novelfs.log"))
        );
    }

    #[test]
    fn a_record_is_one_syslog_datagram() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let server = UnixDatagram::bind(&path).unwrap();
        let mut client = Syslog::connect(&path).unwrap();
        let line = syslog_line(log::Level::Info, 42, "mounted /lib at /mnt");
        assert_eq!(line, "<30>novelfs[42]: mounted /lib at /mnt");
        // Written in pieces, as a formatter does; sent whole on flush.
        client.write_all(line.as_bytes()).unwrap();
        client.write_all(b"\n").unwrap();
        client.flush().unwrap();
        client.flush().unwrap();
        let mut buf = [0u8; 256];
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], line.as_bytes());
        server.set_nonblocking(true).unwrap();
        assert!(
            server.recv(&mut buf).is_err(),
            "an empty flush sends nothing"
        );
        assert_eq!(syslog_line(log::Level::Error, 1, "x"), "<27>novelfs[1]: x");
    }
}
