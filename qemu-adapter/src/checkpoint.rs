//! Checkpoints of a booted cluster: boot the guests once, save them with
//! QEMU's own migration (one file per guest), and start later runs from
//! those files instead of booting (issue 31; docs/qemu.md, "Boot once, run
//! many").
//!
//! A checkpoint directory holds `guest-I.mig` for every guest and, written
//! last, [`MANIFEST_FILE`]: the [`Identity`] the guests were booted with,
//! the guest time at which they were saved, and their boot reports. A
//! directory without the manifest holds no checkpoint. The guests are saved
//! at a slice end at which the server had skipped idle slices: every guest
//! idle, no frame in flight or due, so a restored run starts with an empty
//! network at node cycle 0 and loses nothing.
//!
//! Guest memory that every guest maps from a shared read-only file (the
//! shared root, `--share`'s snapshot) is not saved (`x-ignore-shared`): a
//! restored guest maps the same file again, which the identity pins.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use qapi::qmp;
use serde::{Deserialize, Serialize};

use crate::qemu::GuestReport;

/// The manifest's file name in a checkpoint directory.
pub const MANIFEST_FILE: &str = "checkpoint.json";

/// Version of the manifest's layout; another version is not a checkpoint
/// of this build.
pub const FORMAT: u32 = 1;

/// A file a guest is booted from: its path, size in bytes and modification
/// time (ns since the epoch), as `make` would judge it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub path: PathBuf,
    pub bytes: u64,
    pub modified_ns: u128,
}

impl FileStamp {
    /// The stamp of `path`.
    ///
    /// # Errors
    /// `path` cannot be read.
    pub fn of(path: &Path) -> std::io::Result<FileStamp> {
        let meta = std::fs::metadata(path)?;
        let modified_ns = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(FileStamp {
            path: path.to_path_buf(),
            bytes: meta.len(),
            modified_ns,
        })
    }

    /// Stamps of every file under `dir`, in name order (paths relative to
    /// `dir`).
    ///
    /// # Errors
    /// A directory or file that cannot be read.
    pub fn tree(dir: &Path) -> std::io::Result<Vec<FileStamp>> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d)? {
                let p = e?.path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    let mut s = FileStamp::of(&p)?;
                    s.path = p.strip_prefix(dir).unwrap_or(&p).to_path_buf();
                    out.push(s);
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
}

/// Everything that shapes a booted guest: a checkpoint restores only into
/// a run whose identity is equal. Network keys and `--slice` are not part
/// of it: the boot runs in warm-up, where frames skip the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// `qemu-system-x86_64 --version`, first line.
    pub qemu: String,
    /// The kernel, initramfs, shared root and plugin.
    pub files: Vec<FileStamp>,
    /// `--share`'s directory tree, if any.
    pub share: Option<Vec<FileStamp>>,
    pub guests: u32,
    pub first_node: u32,
    pub memory_mb: u32,
    pub cpus: u32,
    pub icount_shift: u32,
    pub pings: u32,
    pub ping_bytes: u32,
    pub bench_bytes: u32,
    pub app_timeout: f64,
    pub magic: bool,
}

impl Identity {
    /// The first field in which `self` (this run) differs from `saved` (a
    /// checkpoint's), described for people; `None` when they are equal.
    /// For the files a guest is booted from, and `--share`'s tree, it names
    /// the first file that differs and how (another path, size or time).
    pub fn difference(&self, saved: &Identity) -> Option<String> {
        if let Some(why) = files_difference("files", &self.files, &saved.files) {
            return Some(why);
        }
        if let (Some(now), Some(then)) = (&self.share, &saved.share) {
            if let Some(why) = files_difference("share", now, then) {
                return Some(why);
            }
        }
        let (now, then) = (
            serde_json::to_value(self).unwrap_or_default(),
            serde_json::to_value(saved).unwrap_or_default(),
        );
        let (Some(now), Some(then)) = (now.as_object(), then.as_object()) else {
            return Some("unreadable identity".into());
        };
        now.iter().find_map(|(k, v)| {
            let old = then.get(k).cloned().unwrap_or_default();
            (*v != old).then(|| {
                let short = |v: &serde_json::Value| {
                    let t = v.to_string();
                    match t.char_indices().nth(120) {
                        Some((at, _)) => format!("{}...", &t[..at]),
                        None => t,
                    }
                };
                format!(
                    "{k} is {} here, {} in the checkpoint",
                    short(v),
                    short(&old)
                )
            })
        })
    }
}

/// The first file of `field` in which `now` (this run) differs from `then`
/// (a checkpoint's), for people; `None` when they are equal.
fn files_difference(field: &str, now: &[FileStamp], then: &[FileStamp]) -> Option<String> {
    let at = now.iter().zip(then).position(|(a, b)| a != b);
    let Some(i) = at else {
        return (now.len() != then.len()).then(|| {
            format!(
                "{field}: {} file(s) here, {} in the checkpoint",
                now.len(),
                then.len()
            )
        });
    };
    let (a, b) = (&now[i], &then[i]);
    Some(if a.path == b.path {
        format!(
            "{field}: {} is {} bytes modified at {} ns here, {} bytes modified at {} ns in the checkpoint",
            a.path.display(),
            a.bytes,
            a.modified_ns,
            b.bytes,
            b.modified_ns
        )
    } else {
        format!(
            "{field}: {} here, {} in the checkpoint",
            a.path.display(),
            b.path.display()
        )
    })
}

/// A checkpoint's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub identity: Identity,
    /// Guest time at which the guests were saved, ns: the slice end they
    /// stopped at, node cycle 0 of every restored run.
    pub base_ns: u64,
    /// What each guest had reported when it was saved (guest 0 first).
    pub reports: Vec<GuestReport>,
    /// Wall seconds the boot took, and the save.
    pub boot_wall_s: f64,
    pub save_wall_s: f64,
    /// Bytes of the guests' migration files.
    pub bytes: u64,
}

/// What a directory holds for a run of identity `id`.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A checkpoint of this identity.
    Ready(Box<Manifest>),
    /// No checkpoint, or one of another identity or format: why.
    Missing(String),
}

/// Guest `i`'s migration file in `dir`.
pub fn guest_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("guest-{i}.mig"))
}

/// Looks for a checkpoint of identity `id` in `dir`.
pub fn find(dir: &Path, id: &Identity) -> Found {
    let path = dir.join(MANIFEST_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Found::Missing(format!("{} holds no checkpoint", dir.display()))
        }
        Err(e) => return Found::Missing(format!("cannot read {}: {e}", path.display())),
    };
    let m: Manifest = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(e) => {
            return Found::Missing(format!(
                "{} is not a checkpoint of this fsin: {e}",
                path.display()
            ))
        }
    };
    if m.format != FORMAT {
        return Found::Missing(format!(
            "{} has format {}, this fsin writes {FORMAT}",
            path.display(),
            m.format
        ));
    }
    if let Some(why) = id.difference(&m.identity) {
        return Found::Missing(format!(
            "the checkpoint in {} differs: {why}",
            dir.display()
        ));
    }
    if m.reports.len() != id.guests as usize {
        return Found::Missing(format!("{} is incomplete", path.display()));
    }
    if let Some(i) = (0..m.reports.len()).find(|&i| !guest_file(dir, i).is_file()) {
        return Found::Missing(format!("{} is missing", guest_file(dir, i).display()));
    }
    Found::Ready(Box::new(m))
}

/// Makes `dir` ready for a new checkpoint: creates it and removes an old
/// manifest (so that a save cut short leaves no checkpoint behind).
///
/// # Errors
/// `dir` cannot be created, or its manifest removed.
pub fn prepare(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::remove_file(dir.join(MANIFEST_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Bytes free for an unprivileged user on the file system of `dir`.
///
/// # Errors
/// `dir` cannot be queried.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let s = rustix::fs::statvfs(dir)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Writes the manifest (last: it makes the directory a checkpoint).
///
/// # Errors
/// The file cannot be written.
pub fn write_manifest(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(m).unwrap_or_default())?;
    std::fs::rename(tmp, dir.join(MANIFEST_FILE))
}

/// How long a QEMU may take to listen or to stop its VM, and to write or
/// read its migration file.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const SAVE_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a guest could not be saved or restored (QEMU's migration over QMP).
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("cannot reach QMP at {}: {source}", sock.display())]
    Connect {
        sock: PathBuf,
        source: std::io::Error,
    },
    #[error("QMP handshake: {0}")]
    Handshake(qapi::ExecuteError),
    /// A QMP command failed (its name, QEMU's words).
    #[error("QMP {command}: {reason}")]
    Command {
        command: &'static str,
        reason: String,
    },
    #[error("the migration through {} {status}: {desc}", file.display())]
    Failed {
        file: PathBuf,
        status: String,
        desc: String,
    },
    #[error("the migration through {} took over {secs} s", file.display())]
    TooSlow { file: PathBuf, secs: u64 },
    #[error("the VM did not stop within {secs} s of the pause")]
    NotStopped { secs: u64 },
    #[error("cannot rename {}: {source}", from.display())]
    Rename {
        from: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    /// The thread that ran the save or restore ended without a result.
    #[error("its task failed: {0}")]
    Task(String),
}

/// A QMP connection to a guest's QEMU, capabilities negotiated. One
/// reader for the connection's life: a reader per command would drop what
/// it had buffered past its answer (an event QEMU wrote meanwhile).
struct Qmp {
    reader: std::io::BufReader<UnixStream>,
    writer: UnixStream,
}

/// Lines QEMU may write before its greeting on a new QMP connection: the
/// events of the previous client's session that it emits before it resets
/// the monitor (seen once in CI: a `STOP` event where the greeting was due).
const LINES_BEFORE_GREETING: usize = 64;

impl Qmp {
    /// Connects to `sock`, waiting up to [`STOP_TIMEOUT`] for QEMU to
    /// listen there.
    fn connect(sock: &Path) -> Result<Qmp, MigrationError> {
        let started = Instant::now();
        let stream = loop {
            match UnixStream::connect(sock) {
                Ok(s) => break s,
                Err(_) if started.elapsed() < STOP_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(source) => {
                    return Err(MigrationError::Connect {
                        sock: sock.to_path_buf(),
                        source,
                    })
                }
            }
        };
        Qmp::over(stream)
    }

    /// Negotiates QMP on a connected `stream`.
    fn over(stream: UnixStream) -> Result<Qmp, MigrationError> {
        let _ = stream.set_read_timeout(Some(SAVE_TIMEOUT));
        let writer = stream
            .try_clone()
            .map_err(|e| MigrationError::Handshake(e.into()))?;
        let mut q = Qmp {
            reader: std::io::BufReader::new(stream),
            writer,
        };
        q.greeting().map_err(MigrationError::Handshake)?;
        q.session()
            .execute(&qmp::qmp_capabilities { enable: None })
            .map_err(MigrationError::Handshake)?;
        Ok(q)
    }

    /// Reads up to QEMU's greeting (`{"QMP": ...}`), past any events that
    /// come before it.
    fn greeting(&mut self) -> Result<(), qapi::ExecuteError> {
        use std::io::{BufRead, Error, ErrorKind};
        let mut line = String::new();
        for _ in 0..LINES_BEFORE_GREETING {
            line.clear();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(Error::new(
                    ErrorKind::UnexpectedEof,
                    "QEMU closed QMP before its greeting",
                )
                .into());
            }
            let v: serde_json::Value = serde_json::from_str(&line).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidData,
                    format!("not JSON ({e}): {line:.200}"),
                )
            })?;
            if v.get("QMP").is_some() {
                return Ok(());
            }
            if v.get("event").is_none() {
                return Err(Error::new(
                    ErrorKind::InvalidData,
                    format!("neither a greeting nor an event: {line:.200}"),
                )
                .into());
            }
        }
        Err(Error::new(
            ErrorKind::InvalidData,
            format!("no greeting in QEMU's first {LINES_BEFORE_GREETING} lines"),
        )
        .into())
    }

    fn session(
        &mut self,
    ) -> qapi::Qmp<qapi::Stream<&mut std::io::BufReader<UnixStream>, &UnixStream>> {
        qapi::Qmp::new(qapi::Stream::new(&mut self.reader, &self.writer))
    }

    /// Runs `cmd`; the error names the command.
    fn run<C: qapi::Command>(&mut self, cmd: &C) -> Result<C::Ok, MigrationError> {
        self.session()
            .execute(cmd)
            .map_err(|e| MigrationError::Command {
                command: C::NAME,
                reason: e.to_string(),
            })
    }

    /// Leaves shared read-only memory (the shared root, `--share`'s
    /// snapshot) out of the migration, on both sides.
    fn ignore_shared(&mut self) -> Result<(), MigrationError> {
        self.run(&qmp::migrate_set_capabilities {
            capabilities: vec![qmp::MigrationCapabilityStatus {
                capability: qmp::MigrationCapability::x_ignore_shared,
                state: true,
            }],
        })
        .map(drop)
    }

    /// Waits for the migration (outgoing or incoming) through `file` to
    /// complete, within [`SAVE_TIMEOUT`] of `started`.
    fn wait_migration(&mut self, file: &Path, started: Instant) -> Result<(), MigrationError> {
        loop {
            let info = self.run(&qmp::query_migrate {})?;
            match info.status {
                Some(qmp::MigrationStatus::completed) => return Ok(()),
                Some(s @ (qmp::MigrationStatus::failed | qmp::MigrationStatus::cancelled)) => {
                    return Err(MigrationError::Failed {
                        file: file.to_path_buf(),
                        status: format!("{s:?}"),
                        desc: info.error_desc.unwrap_or_default(),
                    })
                }
                _ if started.elapsed() > SAVE_TIMEOUT => {
                    return Err(MigrationError::TooSlow {
                        file: file.to_path_buf(),
                        secs: SAVE_TIMEOUT.as_secs(),
                    })
                }
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
}

/// Saves the paused guest whose QMP socket is `qmp_sock` to `file` with
/// QEMU's migration, then quits that QEMU; returns the file's bytes. The
/// plugin has stopped the VM at its slice end (the board's pause): this
/// waits for the run state to say so, migrates to `file:` (written as
/// `file.tmp`, renamed when complete) and asks QEMU to quit.
///
/// # Errors
/// [`MigrationError`]: the QMP socket, a QMP command, the stop, or the
/// migration failed or took too long.
pub fn save_guest(qmp_sock: &Path, file: &Path) -> Result<u64, MigrationError> {
    let mut q = Qmp::connect(qmp_sock)?;
    let started = Instant::now();
    while q.run(&qmp::query_status {})?.running {
        if started.elapsed() > STOP_TIMEOUT {
            return Err(MigrationError::NotStopped {
                secs: STOP_TIMEOUT.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    q.ignore_shared()?;
    let tmp = file.with_extension("mig.tmp");
    q.run(&qmp::migrate {
        uri: Some(format!("file:{}", tmp.display())),
        channels: None,
        detach: None,
        resume: None,
    })?;
    q.wait_migration(&tmp, started)?;
    std::fs::rename(&tmp, file).map_err(|source| MigrationError::Rename {
        from: tmp.clone(),
        source,
    })?;
    // QEMU exits as it answers; the answer may not come.
    let _ = q.run(&qmp::quit {});
    let mut rest = Vec::new();
    let _ = q.reader.read_to_end(&mut rest);
    std::fs::metadata(file)
        .map(|m| m.len())
        .map_err(|source| MigrationError::Read {
            file: file.to_path_buf(),
            source,
        })
}

/// Loads `file` into the QEMU whose QMP socket is `qmp_sock`, started with
/// `-incoming defer`, and lets the VM run on; its plugin then waits for
/// the first slice.
///
/// # Errors
/// [`MigrationError`]: the QMP socket, a QMP command or the load failed or
/// took too long.
pub fn restore_guest(qmp_sock: &Path, file: &Path) -> Result<(), MigrationError> {
    let mut q = Qmp::connect(qmp_sock)?;
    let started = Instant::now();
    q.ignore_shared()?;
    q.run(&qmp::migrate_incoming {
        uri: Some(format!("file:{}", file.display())),
        channels: None,
        exit_on_error: None,
    })?;
    q.wait_migration(file, started)?;
    // The guest was saved paused, and QEMU restores that run state.
    q.run(&qmp::cont {}).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU as it once answered in CI: an event of the previous session
    /// before the greeting. The handshake skips it, negotiates, and the
    /// connection then carries commands.
    #[test]
    fn an_event_before_the_greeting_is_skipped() {
        use std::io::{BufRead, BufReader, Write};
        let (ours, qemu) = UnixStream::pair().unwrap();
        let peer = std::thread::spawn(move || {
            let mut w = qemu.try_clone().unwrap();
            let mut r = BufReader::new(qemu);
            w.write_all(
                b"{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": \"STOP\"}\n\
                  {\"QMP\": {\"version\": {\"qemu\": {\"micro\": 2, \"minor\": 0, \"major\": 10}, \
                  \"package\": \"\"}, \"capabilities\": []}}\n",
            )
            .unwrap();
            let mut commands = Vec::new();
            for _ in 0..2 {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                commands.push(line);
                w.write_all(b"{\"return\": {}}\n").unwrap();
            }
            commands
        });
        let mut q = Qmp::over(ours).unwrap();
        q.ignore_shared().unwrap();
        let commands = peer.join().unwrap();
        assert!(commands[0].contains("qmp_capabilities"), "{commands:?}");
        assert!(
            commands[1].contains("migrate-set-capabilities"),
            "{commands:?}"
        );
    }

    /// Anything else before the greeting is refused, naming the line.
    #[test]
    fn a_stranger_before_the_greeting_is_refused() {
        use std::io::Write;
        let (ours, mut qemu) = UnixStream::pair().unwrap();
        qemu.write_all(b"{\"return\": {}}\n").unwrap();
        let e = Qmp::over(ours).err().expect("refused").to_string();
        assert!(e.contains("neither a greeting nor an event"), "{e}");
    }

    fn identity() -> Identity {
        Identity {
            qemu: "QEMU emulator version 10.0.2".into(),
            files: vec![FileStamp {
                path: "/img/vmlinux".into(),
                bytes: 10,
                modified_ns: 7,
            }],
            share: None,
            guests: 4,
            first_node: 0,
            memory_mb: 512,
            cpus: 1,
            icount_shift: 3,
            pings: 0,
            ping_bytes: 56,
            bench_bytes: 0,
            app_timeout: 3600.0,
            magic: true,
        }
    }

    #[test]
    fn a_difference_names_the_first_field_that_differs() {
        let a = identity();
        assert_eq!(a.difference(&a.clone()), None);
        let mut b = a.clone();
        b.memory_mb = 256;
        assert_eq!(
            a.difference(&b).as_deref(),
            Some("memory_mb is 512 here, 256 in the checkpoint")
        );
        let mut c = a.clone();
        c.files[0].modified_ns = 8;
        assert_eq!(
            a.difference(&c).as_deref(),
            Some(
                "files: /img/vmlinux is 10 bytes modified at 7 ns here, 10 bytes modified at 8 ns in the checkpoint"
            )
        );
        let mut d = a.clone();
        d.files[0].path = "/elsewhere/k".into();
        assert_eq!(
            a.difference(&d).as_deref(),
            Some("files: /img/vmlinux here, /elsewhere/k in the checkpoint")
        );
        let mut e = a.clone();
        e.files.push(a.files[0].clone());
        assert_eq!(
            a.difference(&e).as_deref(),
            Some("files: 1 file(s) here, 2 in the checkpoint")
        );
    }

    #[test]
    fn only_a_complete_manifest_of_the_same_identity_is_a_checkpoint() {
        let dir = std::env::temp_dir().join(format!("fsin-ckpt-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        prepare(&dir).unwrap();
        let id = identity();
        assert!(matches!(find(&dir, &id), Found::Missing(w) if w.contains("holds no checkpoint")));
        let m = Manifest {
            format: FORMAT,
            identity: id.clone(),
            base_ns: 8_000,
            reports: vec![GuestReport::default(); 4],
            boot_wall_s: 1.0,
            save_wall_s: 1.0,
            bytes: 4,
        };
        write_manifest(&dir, &m).unwrap();
        // Three of the four guests' files: not a checkpoint.
        for i in 0..3 {
            std::fs::write(guest_file(&dir, i), b"x").unwrap();
        }
        assert!(
            matches!(find(&dir, &id), Found::Missing(w) if w.contains("guest-3.mig is missing"))
        );
        std::fs::write(guest_file(&dir, 3), b"x").unwrap();
        assert_eq!(find(&dir, &id), Found::Ready(Box::new(m.clone())));
        let mut other = id.clone();
        other.guests = 8;
        assert!(
            matches!(find(&dir, &other), Found::Missing(w) if w.contains("guests is 8 here, 4"))
        );
        // A new save removes the old manifest first.
        prepare(&dir).unwrap();
        assert!(matches!(find(&dir, &id), Found::Missing(_)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
