//! A library reached over sshfs, as a host sharing it over the network sees
//! it: a test-owned `sshd` bound to 127.0.0.1 only (its own host key,
//! config and client key in a temp dir, key login for root) and an sshfs
//! mount of the library through it. Both are started here and killed and
//! unmounted on drop. `None` (the test skips, see `common::skip`) where sshd or sshfs
//! cannot be had.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{find_tool, free_port, is_mounted};

pub struct Sshfs {
    dir: tempfile::TempDir,
    sshd: Option<Child>,
    sshfs: Option<Child>,
    /// How sshfs is started: the program, the source and its `-o`.
    command: (PathBuf, String, String),
    /// The connection's ssh client, while stopped with SIGSTOP (sent
    /// SIGCONT on drop, so that nothing is left stopped).
    stopped: Option<i32>,
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

impl Sshfs {
    /// `root` served by a fresh sshd on 127.0.0.1 and mounted with sshfs
    /// (with `options`, e.g. `dir_cache=no`). Says the test skips and returns
    /// `None` when sshd, sshfs or ssh-keygen is missing; panics when they
    /// are there but fail.
    pub fn mount(root: &Path, options: &[&str]) -> Option<Sshfs> {
        let (Some(sshd), Some(sshfs), Some(keygen)) = (
            find_tool(&["sshd"]),
            find_tool(&["sshfs"]),
            find_tool(&["ssh-keygen"]),
        ) else {
            super::skip("sshd, sshfs or ssh-keygen is not installed");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("novelfs-sshfs")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for key in ["host_key", "client_key"] {
            run(Command::new(&keygen)
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key)))
            .unwrap();
        }
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        // sshd wants its privilege separation directory.
        std::fs::create_dir_all("/run/sshd").ok();
        let mut me = Sshfs {
            sshd: None,
            sshfs: None,
            dir,
            command: (sshfs.clone(), String::new(), String::new()),
            stopped: None,
        };
        let mut port = 0;
        for _ in 0..5 {
            port = free_port();
            me.start_sshd(&sshd, port);
            if me.wait_for_port(port) {
                break;
            }
            // The port was taken between the probe and sshd's bind.
            me.stop_sshd();
        }
        assert!(me.sshd.is_some(), "sshd did not listen on 127.0.0.1");
        let d = me.dir.path();
        let mnt = d.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let mut opts = vec![
            format!("port={port}"),
            format!("IdentityFile={}", d.join("client_key").display()),
            "StrictHostKeyChecking=no".into(),
            "UserKnownHostsFile=/dev/null".into(),
            "BatchMode=yes".into(),
            "LogLevel=ERROR".into(),
        ];
        opts.extend(options.iter().map(|o| o.to_string()));
        me.command = (
            sshfs,
            format!("root@127.0.0.1:{}", root.display()),
            opts.join(","),
        );
        me.spawn_sshfs();
        Some(me)
    }

    /// Starts sshfs and waits until its mount is there (20 s at most).
    fn spawn_sshfs(&mut self) {
        let mnt = self.path();
        let (program, source, opts) = &self.command;
        let child = Command::new(program)
            .arg("-f")
            .arg(source)
            .arg(&mnt)
            .arg("-o")
            .arg(opts)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sshfs");
        self.sshfs = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_mounted(&mnt) {
            if let Some(status) = self.sshfs.as_mut().unwrap().try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                let mut child = self.sshfs.take().unwrap();
                child.stderr.take().unwrap().read_to_string(&mut err).ok();
                let _ = child.wait();
                panic!("sshfs exited early ({status}): {err}");
            }
            assert!(Instant::now() < deadline, "sshfs not mounted in 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid of the ssh client sshfs talks to the server through (sshfs
    /// forks it twice, so it is found by the key file of this fixture on
    /// its command line).
    fn connection(&self) -> i32 {
        let key = self.dir.path().join("client_key");
        let key = key.to_string_lossy();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| {
                let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let ours = String::from_utf8_lossy(&cmdline).contains(&*key);
                (comm.trim_end() == "ssh" && ours).then_some(pid)
            })
            .next()
            .expect("the ssh client of this sshfs")
    }

    /// Stops the connection (SIGSTOP to its ssh client): the server no
    /// longer answers, and sshfs waits for it.
    pub fn hang(&mut self) {
        let pid = self.connection();
        // SAFETY: a signal to a process this fixture started (through sshfs).
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        self.stopped = Some(pid);
    }

    /// A guard that lets the connection go on (SIGCONT) when dropped.
    /// Declared after a mount over this sshfs, it drops first: the mount's
    /// drop waits for its daemon, whose threads stuck on a stopped server
    /// never end, so a test that fails while the server is stopped would
    /// hang, and leave the server stopped.
    pub fn resumed_on_drop(&self) -> ResumeOnDrop {
        ResumeOnDrop(self.connection())
    }

    /// Lets a stopped connection go on (SIGCONT).
    pub fn resume(&mut self) {
        if let Some(pid) = self.stopped.take() {
            // SAFETY: as in `hang`.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
    }

    /// Kills the connection: sshfs ends and its mount goes. Waits (10 s at
    /// most) until it has.
    pub fn kill_connection(&mut self) {
        self.resume();
        let pid = self.connection();
        // SAFETY: as in `hang`.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while is_mounted(&self.path()) {
            assert!(
                Instant::now() < deadline,
                "sshfs still mounted 10 s after its connection died"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(mut c) = self.sshfs.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Mounts the library again after `kill_connection`.
    pub fn remount(&mut self) {
        self.spawn_sshfs();
    }

    fn start_sshd(&mut self, sshd: &Path, port: u16) {
        let d = self.dir.path();
        let config = format!(
            "Port {port}\n\
             ListenAddress 127.0.0.1\n\
             HostKey {d}/host_key\n\
             PidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys\n\
             PermitRootLogin prohibit-password\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             UsePAM no\n\
             StrictModes no\n\
             Subsystem sftp internal-sftp\n",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        let child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sshd");
        self.sshd = Some(child);
    }

    fn wait_for_port(&mut self, port: u16) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        while Instant::now() < deadline {
            if let Some(Some(_)) = self.sshd.as_mut().map(|c| c.try_wait().unwrap()) {
                return false;
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn stop_sshd(&mut self) {
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Where the library is mounted.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

/// See `Sshfs::resumed_on_drop`.
pub struct ResumeOnDrop(i32);

impl Drop for ResumeOnDrop {
    fn drop(&mut self) {
        // SAFETY: a signal to a process the fixture started (through sshfs);
        // one that is not stopped ignores it.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

impl Drop for Sshfs {
    fn drop(&mut self) {
        self.resume();
        let mnt = self.path();
        if is_mounted(&mnt) {
            let _ = Command::new("fusermount3")
                .arg("-u")
                .arg(&mnt)
                .stderr(Stdio::null())
                .status();
        }
        if is_mounted(&mnt) {
            let c = std::ffi::CString::new(mnt.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path; MNT_DETACH has no other inputs.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if let Some(mut c) = self.sshfs.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.stop_sshd();
    }
}
