//! Saving and restoring one guest with QEMU's own migration, over its QMP
//! socket: stop the VM, migrate it to a file (shared read-only memory left
//! out), and load it back into a QEMU started with `-incoming defer`.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use qapi::qmp;

/// How long a QEMU may take to listen or to stop its VM, and to write or
/// read its migration file.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const SAVE_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a guest could not be saved or restored (QEMU's migration over QMP).
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// QEMU's QMP socket did not accept a connection within 30 wall
    /// seconds of the first try.
    #[error("cannot reach QMP at {}: {source}", sock.display())]
    Connect {
        /// The QMP socket's path.
        sock: PathBuf,
        /// Why the last try failed.
        source: std::io::Error,
    },
    /// QEMU's greeting or the capabilities' negotiation failed on a new QMP
    /// connection: QEMU's error, or the socket's.
    #[error("QMP handshake: {0}")]
    Handshake(qapi::ExecuteError),
    /// A QMP command failed (its name, QEMU's words).
    #[error("QMP {command}: {reason}")]
    Command {
        /// The command's QMP name (`migrate`, `cont`, ...).
        command: &'static str,
        /// QEMU's error, or the socket's.
        reason: String,
    },
    /// QEMU reported the migration failed or cancelled.
    #[error("the migration through {} {status}: {desc}", file.display())]
    Failed {
        /// The migration file (a save's `.mig.tmp`, a restore's `.mig`).
        file: PathBuf,
        /// QEMU's migration status (`failed`, `cancelled`).
        status: String,
        /// QEMU's description of the error (empty when it gave none).
        desc: String,
    },
    /// The migration had not completed `secs` wall seconds after the QMP
    /// connection was made.
    #[error("the migration through {} took over {secs} s", file.display())]
    TooSlow {
        /// The migration file (a save's `.mig.tmp`, a restore's `.mig`).
        file: PathBuf,
        /// The limit, wall seconds.
        secs: u64,
    },
    /// The VM still ran `secs` wall seconds after the save began: its
    /// plugin had not stopped it at the board's pause.
    #[error("the VM did not stop within {secs} s of the pause")]
    NotStopped {
        /// The limit, wall seconds.
        secs: u64,
    },
    /// The completed migration file could not take the guest file's name.
    #[error("cannot rename {}: {source}", from.display())]
    Rename {
        /// The completed file (`.mig.tmp`).
        from: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The saved guest file's size could not be read.
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The guest's migration file.
        file: PathBuf,
        /// The system's reason.
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
}
