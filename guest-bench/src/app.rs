//! The application runner of `fsin qemu --run`: guest 0's `/init` runs the
//! user's command with `fsin-bench run TIMEOUT_S FILE` once every guest is
//! up and reaches every other.
//!
//! The command file runs under `/bin/sh` in `/root`, in a process group of
//! its own, with stdin from `/dev/null`. Each line it writes (stdout and
//! stderr, as they come) goes to the console as `FSIN-OUT LINE`, lines
//! longer than [`LINE_BYTES`] split; at the end the runner prints
//!
//! ```text
//! FSIN-APP exit=CODE guest_s=SECONDS timed_out=0|1
//! ```
//!
//! with the shell's exit status (128 + N when killed by signal N) and how
//! long the command ran, in seconds of guest time (CLOCK_MONOTONIC, which
//! lock-step makes instructions x 2^shift ns). A command still running
//! after `TIMEOUT_S` seconds of guest time (0: never) is killed with its
//! whole process group and reported with exit 124 and `timed_out=1`, as
//! coreutils' `timeout` does. Processes the command leaves behind are
//! killed when it ends.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::rsh::{kill_group, status_code};

/// Longest console record of output, in bytes of the line.
pub const LINE_BYTES: usize = 512;
/// Exit status of a command that timed out (coreutils' `timeout`).
const TIMED_OUT: i32 = 124;

/// Prints one output line as `FSIN-OUT` records, in one write each.
fn print_line(line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    let mut rest = text;
    loop {
        let mut cut = rest.len().min(LINE_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (head, tail) = rest.split_at(cut);
        let mut out = std::io::stdout().lock();
        let _ = out
            .write_all(format!("FSIN-OUT {head}\n").as_bytes())
            .and_then(|()| out.flush());
        if tail.is_empty() {
            return;
        }
        rest = tail;
    }
}

/// Longest `TIMEOUT_S` of `fsin-bench run`, seconds: a week, as
/// `fsin qemu --app-timeout` allows.
pub const MAX_TIMEOUT_S: f64 = 7.0 * 24.0 * 3600.0;

/// `fsin-bench run TIMEOUT_S FILE`; returns the `FSIN-APP` line. A
/// `TIMEOUT_S` of 0 (or one no duration can hold) means no limit.
pub fn run(timeout_s: f64, file: &str) -> Result<String, String> {
    let (reader, writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    let start = Instant::now();
    let mut child = {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg(file)
            .current_dir("/root")
            .stdin(Stdio::null())
            .stdout(writer.try_clone().map_err(|e| format!("pipe: {e}"))?)
            .stderr(writer)
            .process_group(0);
        cmd.spawn()
            .map_err(|e| format!("cannot start /bin/sh {file}: {e}"))?
        // The command (and our copies of the pipe's write end) drops here,
        // so the reader sees the end once the command's processes are gone.
    };
    let pgid = child.id();
    let output = thread::spawn(move || {
        let mut lines = BufReader::new(reader);
        let mut line = Vec::new();
        while let Ok(1..) = lines.read_until(b'\n', &mut line) {
            print_line(&line);
            line.clear();
        }
    });
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let limit = Duration::try_from_secs_f64(timeout_s)
        .ok()
        .filter(|t| !t.is_zero());
    let (code, timed_out) = match limit.map_or_else(
        || {
            done_rx
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        },
        |t| done_rx.recv_timeout(t),
    ) {
        Ok(status) => (
            status_code(status.map_err(|e| format!("wait: {e}"))?),
            false,
        ),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            kill_group(pgid);
            let _ = done_rx.recv();
            (TIMED_OUT, true)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => return Err("lost the command".into()),
    };
    let guest_s = start.elapsed().as_secs_f64();
    kill_group(pgid);
    let _ = output.join();
    Ok(format!(
        "FSIN-APP exit={code} guest_s={guest_s:.6} timed_out={}",
        u8::from(timed_out)
    ))
}
