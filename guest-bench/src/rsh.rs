//! A remote shell for the simulated cluster: how `mpirun` on guest 0
//! starts Open MPI's daemons (`orted`) on the other guests, in the role
//! ssh plays on a real cluster (Open MPI's `plm_rsh_agent`).
//!
//! `fsin-rsh HOST CMD...` (this binary under that name, or `fsin-bench rsh
//! HOST CMD...`) behaves as `ssh HOST CMD...` does for a launcher: the words
//! of `CMD` are joined with spaces and run by `/bin/sh -c` on `HOST`, whose
//! stdout and stderr come back on the client's, and the client exits with
//! the command's status (255 when the connection fails or breaks). Options
//! before `HOST` (`-x`, `-o OPT`, ...) are accepted and ignored. `HOST` is a
//! name from `/etc/hosts` (`node0`, `node1`, ...) or an IPv4 address.
//!
//! `fsin-bench rshd [PORT]` is the server every guest runs (port 5040 by
//! default). There is no authentication and no encryption: the guests'
//! only link is the simulated network, which no host interface reaches, and
//! the absence of crypto keeps the frames (and their sizes) the same from
//! run to run.
//!
//! Wire format (TCP): the client sends the command as a 4-byte big-endian
//! length (at most [`MAX_COMMAND`] bytes) and the bytes; the server answers
//! with records `kind (1 byte) | length (4 bytes, big-endian) | data`:
//! kind 1 stdout, 2 stderr, 3 the exit status (4 bytes, big-endian, signed;
//! 128 + N for a command killed by signal N). When the client goes away
//! before the command ends, the server kills the command's process group.

use std::io::{self, BufRead, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// TCP port of `fsin-bench rshd`.
pub const PORT: u16 = 5040;
/// Longest command the server accepts, in bytes.
pub const MAX_COMMAND: usize = 1 << 20;

/// Longest record the client accepts, in bytes (the server sends at most
/// 8 KiB of output per record).
pub const MAX_RECORD: usize = 1 << 20;

const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const EXIT: u8 = 3;
/// Exit status of the client when it cannot reach the server (ssh's).
const CONNECTION_FAILED: i32 = 255;

/// The shell's exit status of a finished process: its code, or 128 + the
/// signal that killed it.
pub fn status_code(s: ExitStatus) -> i32 {
    s.code()
        .or_else(|| s.signal().map(|n| 128 + n))
        .unwrap_or(CONNECTION_FAILED)
}

/// Sends SIGKILL to every process of group `pgid` (a child started with
/// `process_group(0)`).
pub fn kill_group(pgid: u32) {
    if let Ok(pgid) = libc::pid_t::try_from(pgid) {
        // SAFETY: kill(2) with a negative pid signals a process group; it
        // touches no memory of ours.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// The IPv4 address of `host`: an address as it is, else the first
/// `/etc/hosts` line naming it (a static binary has no resolver of its own).
fn resolve(host: &str) -> Result<Ipv4Addr, String> {
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    let hosts = std::fs::File::open("/etc/hosts").map_err(|e| format!("/etc/hosts: {e}"))?;
    for line in io::BufReader::new(hosts).lines().map_while(Result::ok) {
        let mut words = line
            .split('#')
            .next()
            .unwrap_or_default()
            .split_whitespace();
        let Some(Ok(ip)) = words.next().map(str::parse::<Ipv4Addr>) else {
            continue;
        };
        if words.any(|w| w == host) {
            return Ok(ip);
        }
    }
    Err(format!("unknown host {host:?} (not in /etc/hosts)"))
}

fn record(w: &mut impl Write, kind: u8, data: &[u8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(5 + data.len());
    buf.push(kind);
    buf.extend_from_slice(&(data.len() as u32).to_be_bytes());
    buf.extend_from_slice(data);
    w.write_all(&buf)
}

/// `fsin-rsh [OPTIONS] HOST CMD...`: runs CMD on HOST; returns its exit
/// status.
pub fn client(args: &[String]) -> i32 {
    let mut words = args.iter().peekable();
    while let Some(w) = words.next_if(|w| w.starts_with('-')) {
        // ssh's options that take a value.
        if matches!(w.as_str(), "-o" | "-l" | "-p" | "-i" | "-F") {
            words.next();
        }
    }
    let Some(host) = words.next() else {
        eprintln!("usage: fsin-rsh [OPTIONS] HOST CMD...");
        return CONNECTION_FAILED;
    };
    let command = words.map(String::as_str).collect::<Vec<_>>().join(" ");
    match remote(host, &command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fsin-rsh: {host}: {e}");
            CONNECTION_FAILED
        }
    }
}

fn remote(host: &str, command: &str) -> Result<i32, String> {
    let ip = resolve(host)?;
    let mut sock =
        TcpStream::connect(SocketAddr::from((ip, PORT))).map_err(|e| format!("connect: {e}"))?;
    let _ = sock.set_nodelay(true);
    sock.write_all(&(command.len() as u32).to_be_bytes())
        .and_then(|()| sock.write_all(command.as_bytes()))
        .map_err(|e| format!("send: {e}"))?;
    let mut rd = io::BufReader::new(sock);
    loop {
        match read_record(&mut rd)? {
            ShellRecord::Stdout(data) => {
                let mut o = io::stdout().lock();
                let _ = o.write_all(&data).and_then(|()| o.flush());
            }
            ShellRecord::Stderr(data) => {
                let _ = io::stderr().write_all(&data);
            }
            ShellRecord::Exit(code) => return Ok(code),
        }
    }
}

/// A record the server sends.
#[derive(Debug, PartialEq)]
enum ShellRecord {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Exit(i32),
}

/// Reads one whole record from `rd`.
///
/// # Errors
/// The stream ends or breaks, or the record is not one of the three
/// kinds, is longer than [`MAX_RECORD`] or is an exit status of other than
/// 4 bytes (nothing after it can be trusted to be in step).
fn read_record(rd: &mut impl Read) -> Result<ShellRecord, String> {
    let mut head = [0u8; 5];
    rd.read_exact(&mut head)
        .map_err(|e| format!("connection lost before the command ended: {e}"))?;
    let [kind, len @ ..] = head;
    let len = u32::from_be_bytes(len) as usize;
    let fits = match kind {
        STDOUT | STDERR => len <= MAX_RECORD,
        EXIT => len == 4,
        _ => false,
    };
    if !fits {
        return Err(format!("bad record kind {kind} of length {len}"));
    }
    let mut data = vec![0u8; len];
    rd.read_exact(&mut data)
        .map_err(|e| format!("connection lost: {e}"))?;
    Ok(match kind {
        STDOUT => ShellRecord::Stdout(data),
        STDERR => ShellRecord::Stderr(data),
        _ => ShellRecord::Exit(i32::from_be_bytes([data[0], data[1], data[2], data[3]])),
    })
}

/// `fsin-bench rshd [PORT]`: serves commands until killed.
pub fn server(port: u16) -> Result<String, String> {
    let listener =
        TcpListener::bind(("0.0.0.0", port)).map_err(|e| format!("listen on {port}: {e}"))?;
    for conn in listener.incoming() {
        let Ok(sock) = conn else { continue };
        thread::spawn(move || {
            if let Err(e) = serve(sock) {
                eprintln!("fsin-rshd: {e}");
            }
        });
    }
    Ok(String::new())
}

/// Runs the one command of a connection.
fn serve(mut sock: TcpStream) -> io::Result<()> {
    let _ = sock.set_nodelay(true);
    let mut len = [0u8; 4];
    sock.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_COMMAND {
        return Err(io::Error::other(format!(
            "command of {len} bytes refused (at most {MAX_COMMAND})"
        )));
    }
    let mut command = vec![0u8; len];
    sock.read_exact(&mut command)?;
    let mut child = match Command::new("/bin/sh")
        .arg("-c")
        .arg(std::ffi::OsStr::from_bytes(&command))
        .current_dir("/root")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("fsin-rshd: cannot start /bin/sh: {e}\n");
            record(&mut sock, STDERR, msg.as_bytes())?;
            return record(&mut sock, EXIT, &127i32.to_be_bytes());
        }
    };
    let pgid = child.id();
    let out = Arc::new(Mutex::new(sock.try_clone()?));
    let mut forwarders = Vec::new();
    let pipes: [(Option<Box<dyn Read + Send>>, u8); 2] = [
        (child.stdout.take().map(|p| Box::new(p) as _), STDOUT),
        (child.stderr.take().map(|p| Box::new(p) as _), STDERR),
    ];
    for (pipe, kind) in pipes {
        let (Some(mut pipe), out) = (pipe, Arc::clone(&out)) else {
            continue;
        };
        forwarders.push(thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
                if record(&mut *w, kind, &buf[..n]).is_err() {
                    break;
                }
            }
        }));
    }
    // The client closing its end (mpirun killing its launcher) ends the
    // command.
    let ended = Arc::new(AtomicBool::new(false));
    let mut watch = sock.try_clone()?;
    let watch_ended = Arc::clone(&ended);
    thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(1..) = watch.read(&mut buf) {}
        if !watch_ended.load(Ordering::SeqCst) {
            kill_group(pgid);
        }
    });
    let status = child.wait()?;
    ended.store(true, Ordering::SeqCst);
    for f in forwarders {
        let _ = f.join();
    }
    let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
    record(&mut *w, EXIT, &status_code(status).to_be_bytes())?;
    w.shutdown(std::net::Shutdown::Both)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // A failing case is kept beside this file (rsh.regressions), to be
    // committed: it then runs first, every time.
    fn config() -> ProptestConfig {
        ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
            )),
            ..ProptestConfig::default()
        }
    }

    /// A command's records as the server writes them (up to three of
    /// standard output or error, then the exit status), whole one time in
    /// two, else cut at a byte, with a byte changed, or followed by
    /// arbitrary bytes.
    fn shaped() -> impl Strategy<Value = Vec<u8>> {
        (
            proptest::collection::vec(
                (1u8..=2, proptest::collection::vec(any::<u8>(), 0..40)),
                0..4,
            ),
            any::<i32>(),
            (0u8..6, any::<usize>(), 1u8..=255),
            proptest::collection::vec(any::<u8>(), 1..20),
        )
            .prop_map(|(out, code, (damage, at, flip), tail)| {
                let mut wire = Vec::new();
                for (kind, data) in &out {
                    record(&mut wire, *kind, data).unwrap();
                }
                record(&mut wire, EXIT, &code.to_be_bytes()).unwrap();
                let at = at % wire.len();
                match damage {
                    3 => wire.truncate(at),
                    4 => wire[at] ^= flip,
                    5 => wire.extend_from_slice(&tail),
                    _ => {}
                }
                wire
            })
    }

    /// The records read from `bytes` until the first refusal, checking
    /// that each took exactly its own bytes.
    fn read_all(bytes: &[u8]) -> Result<usize, TestCaseError> {
        let mut rd = bytes;
        let mut read = 0;
        while !rd.is_empty() {
            let before = rd.len();
            match read_record(&mut rd) {
                Ok(ShellRecord::Stdout(d) | ShellRecord::Stderr(d)) => {
                    prop_assert_eq!(before - rd.len(), 5 + d.len())
                }
                Ok(ShellRecord::Exit(_)) => prop_assert_eq!(before - rd.len(), 9),
                Err(_) => break,
            }
            read += 1;
        }
        Ok(read)
    }

    /// The shaped records reach the reader's whole path at least half the
    /// time: of 400 cases, how many read at least one record (347 on
    /// 2026-12-07; the cuts in a record's head read none).
    #[test]
    fn shaped_records_are_often_read() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = shaped();
        let read = (0..400)
            .filter(|_| {
                let bytes = strategy.new_tree(&mut runner).unwrap().current();
                read_all(&bytes).unwrap() > 0
            })
            .count();
        assert!((200..400).contains(&read), "{read} of 400 read");
    }

    #[test]
    fn records_longer_than_the_limit_or_of_unknown_kinds_are_refused() {
        let mut long = vec![STDOUT];
        long.extend_from_slice(&(MAX_RECORD as u32 + 1).to_be_bytes());
        assert_eq!(
            read_record(&mut &long[..]),
            Err(format!("bad record kind 1 of length {}", MAX_RECORD + 1))
        );
        let exit5 = [EXIT, 0, 0, 0, 5, 0, 0, 0, 0, 1];
        assert_eq!(
            read_record(&mut &exit5[..]),
            Err("bad record kind 3 of length 5".into())
        );
        let cut = [STDERR, 0, 0, 0, 9, b'x'];
        assert!(read_record(&mut &cut[..])
            .unwrap_err()
            .starts_with("connection lost:"));
    }

    proptest! {
        #![proptest_config(config())]

        /// Whatever bytes come, a record is read whole or refused; never a
        /// panic, never more than the bytes there.
        #[test]
        fn any_bytes_read_as_records_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            read_all(&bytes)?;
        }

        /// The same for records as the server writes them, damaged or
        /// not: a whole command's records all read.
        #[test]
        fn shaped_records_read_whole_or_refused(bytes in shaped()) {
            read_all(&bytes)?;
        }

        /// Records as the server writes them read back as they were, in
        /// order.
        #[test]
        fn records_written_by_the_server_read_back(
            out in proptest::collection::vec((1u8..=2, proptest::collection::vec(any::<u8>(), 0..300)), 0..6),
            code in any::<i32>(),
        ) {
            let mut wire = Vec::new();
            for (kind, data) in &out {
                record(&mut wire, *kind, data).unwrap();
            }
            record(&mut wire, EXIT, &code.to_be_bytes()).unwrap();
            let mut rd = &wire[..];
            for (kind, data) in out {
                let want = if kind == STDOUT { ShellRecord::Stdout(data) } else { ShellRecord::Stderr(data) };
                prop_assert_eq!(read_record(&mut rd), Ok(want));
            }
            prop_assert_eq!(read_record(&mut rd), Ok(ShellRecord::Exit(code)));
            prop_assert!(rd.is_empty());
        }
    }
}
