//! Where the daemon's log lines go, as other FUSE daemons do it (sshfs,
//! rclone): stderr in the foreground; `--log-file FILE` (`-o
//! log_file=FILE`) when given; otherwise a daemonized mount writes to
//! syslog, which journald reads too, through the `/dev/log` socket.
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
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

/// Where syslog (or journald's syslog socket) listens.
pub(crate) const SYSLOG_SOCKET: &str = "/dev/log";

/// Facility `daemon` (3), in the high bits of a syslog priority.
const FACILITY_DAEMON: u8 = 3 << 3;

/// Where the log lines go.
pub(crate) enum Sink {
    Stderr,
    File(std::fs::File),
    Syslog(Syslog),
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
/// foreground, else syslog. The second part is a warning for the caller
/// when a daemon would have nowhere to log.
pub(crate) fn sink_for(
    log_file: Option<&Path>,
    foreground: bool,
) -> Result<(Sink, Option<String>), String> {
    if let Some(path) = log_file {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o640)
            .open(path)
            .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
        return Ok((Sink::File(file), None));
    }
    if foreground {
        return Ok((Sink::Stderr, None));
    }
    match Syslog::connect(Path::new(SYSLOG_SOCKET)) {
        Ok(s) => Ok((Sink::Syslog(s), None)),
        Err(e) => Ok((
            Sink::Stderr,
            Some(format!(
                "no syslog at {SYSLOG_SOCKET} ({e}): the daemon's log is lost; --log-file FILE keeps it"
            )),
        )),
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
pub(crate) fn init(sink: Sink, foreground: bool) {
    let level = match sink {
        Sink::Stderr if !foreground => "warn",
        _ => "info",
    };
    let rust_log = std::env::var("RUST_LOG").ok();
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(&directives(level, rust_log.as_deref()));
    match sink {
        Sink::Stderr => {}
        Sink::File(file) => {
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
