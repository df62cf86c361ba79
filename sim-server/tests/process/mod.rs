//! Helpers of the tests that run `fsin` processes (co-simulation,
//! robustness): every child is killed when its guard drops, and every wait
//! is bounded.
#![allow(dead_code)]

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const FSIN: &str = env!("CARGO_BIN_EXE_fsin");

/// Kills the child process when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `fsin ARGS`, killing it after `limit`.
pub fn fsin(args: &[&str], limit: Duration) -> Output {
    fsin_env(args, &[], limit)
}

/// Runs `fsin ARGS` with the variables `env` set, killing it after `limit`.
pub fn fsin_env(args: &[&str], env: &[(&str, &std::path::Path)], limit: Duration) -> Output {
    let child = Command::new(FSIN)
        .args(args)
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fsin starts");
    wait(Guard(child), limit)
}

pub fn wait(mut g: Guard, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if let Some(status) = g.0.try_wait().expect("wait") {
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            g.0.stdout.take().map(|mut s| s.read_to_end(&mut stdout));
            g.0.stderr.take().map(|mut s| s.read_to_end(&mut stderr));
            return Output {
                status,
                stdout,
                stderr,
            };
        }
        assert!(start.elapsed() < limit, "fsin did not end within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn last_json(o: &Output) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no output; stderr: {}", String::from_utf8_lossy(&o.stderr)));
    serde_json::from_str(line).expect("last line is JSON")
}

pub fn spawn(args: &[String]) -> Guard {
    Guard(
        Command::new(FSIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fsin starts"),
    )
}

/// `fsin serve ARGS` on a loopback port the server picks, once it listens;
/// returns its guard and URL. The log lines up to "listening on" are read
/// here (they are not in the final output).
pub fn serve(args: &[&str]) -> (Guard, String) {
    serve_env(args, &[])
}

/// [`serve`] with `env` variables set for the server.
pub fn serve_env(args: &[&str], env: &[(&str, &str)]) -> (Guard, String) {
    let mut child = Command::new(FSIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fsin starts");
    let mut err = child.stderr.take().expect("piped");
    let server = Guard(child);
    let mut log = Vec::new();
    let addr = loop {
        let mut b = [0u8; 1];
        match err.read(&mut b) {
            Ok(1) => log.push(b[0]),
            _ => panic!(
                "the server ended before listening: {}",
                String::from_utf8_lossy(&log)
            ),
        }
        let text = String::from_utf8_lossy(&log);
        if let Some(rest) = text.split("listening on ").nth(1) {
            if let Some((addr, _)) = rest.split_once(';') {
                break addr.trim().to_string();
            }
        }
    };
    let mut server = server;
    server.0.stderr = Some(err);
    (server, format!("http://{addr}"))
}

/// The report without its wall-clock fields.
pub fn deterministic(mut v: Value) -> Value {
    let m = v.as_object_mut().unwrap();
    m.remove("wall_s");
    m.remove("slices_per_s");
    m.remove("engine_alone_s");
    m.remove("overhead");
    v
}

/// The report of a run that must have succeeded.
pub fn ok_report(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    last_json(o)
}

/// The report of a run that must have failed: exit 1, `ok` false.
pub fn failed_report(o: &Output) -> Value {
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = last_json(o);
    assert_eq!(r["ok"], false);
    r
}

/// Two `fsin fake-node` processes with the idle workload against `url`.
pub fn idle_nodes(url: &str) -> Vec<Guard> {
    (0..2)
        .map(|n| {
            spawn(&[
                "fake-node".into(),
                "--server".into(),
                url.to_string(),
                "--node".into(),
                n.to_string(),
                "--workload".into(),
                "idle".into(),
            ])
        })
        .collect()
}

/// Waits (30 s at most) until the run at `url` has passed slice
/// `after_slices`, asking with the `token` secret, then sends `req`
/// through the Control RPC and returns the reply.
pub fn control_when_running(
    url: &str,
    after_slices: u64,
    token: &str,
    req: fsin_proto::v1::ControlRequest,
) -> fsin_proto::v1::ControlReply {
    use fsin_proto::v1::co_sim_client::CoSimClient;
    use fsin_proto::v1::control_request::Command as Ctl;
    use fsin_proto::v1::{ControlRequest, Empty};
    let start = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = CoSimClient::connect(url.to_string())
            .await
            .expect("control connects");
        loop {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the run never passed slice {after_slices}"
            );
            let stats = c
                .control(ControlRequest {
                    command: Some(Ctl::GetStats(Empty {})),
                    token: token.to_string(),
                })
                .await
                .expect("get_stats")
                .into_inner();
            let v: Value = serde_json::from_str(&stats.stats_json).unwrap_or_default();
            if v["slices"].as_u64().is_some_and(|s| s >= after_slices) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        c.control(req)
            .await
            .expect("the server answers")
            .into_inner()
    })
}

/// Runs `fsin ARGS`, sends it `signal` after 1.5 s, and returns what it
/// printed by the time it ended (20 s at most).
pub fn signalled(args: &[&str], signal: i32) -> Output {
    signalled_leaving(args, signal).0
}

/// [`signalled`], and the processes the command left running when it
/// ended (see [`left_behind`]).
pub fn signalled_leaving(args: &[&str], signal: i32) -> (Output, Vec<String>) {
    let tag = new_tag();
    let child = Guard(tagged(args, &tag));
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(child.0.id() as i32, signal) }, 0);
    let out = wait(child, Duration::from_secs(20));
    (out, left_behind(&tag))
}

/// `fsin ARGS` started with [`TAG_ENV`] set to `tag`, stdout and stderr
/// piped.
fn tagged(args: &[&str], tag: &str) -> Child {
    Command::new(FSIN)
        .args(args)
        .env(TAG_ENV, tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fsin starts")
}

/// The environment variable that marks the processes a test started: a
/// command passes its environment to every process it starts (fake nodes,
/// QEMU), so [`left_behind`] finds them wherever they were reparented.
pub const TAG_ENV: &str = "FSIN_TEST_TAG";

/// A tag no other command of this test process carries.
pub fn new_tag() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// The living processes (pid and command line) whose environment holds
/// `TAG_ENV=tag`: once the tagged command has ended, what it left
/// running. Zombies are not counted.
pub fn left_behind(tag: &str) -> Vec<String> {
    let want = format!("{TAG_ENV}={tag}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// A tagged `fsin` command whose stderr lines arrive on a channel.
pub struct Watched {
    pub child: Guard,
    pub tag: String,
    lines: Receiver<String>,
    pub log: Vec<String>,
}

impl Watched {
    /// Starts `fsin` with the words of `command` as its arguments.
    pub fn start(command: &str) -> Watched {
        Watched::start_args(&command.split_whitespace().collect::<Vec<_>>())
    }

    /// Starts `fsin ARGS`.
    pub fn start_args(args: &[&str]) -> Watched {
        let tag = new_tag();
        let mut child = tagged(args, &tag);
        let stderr = child.stderr.take().expect("piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watched {
            child: Guard(child),
            tag,
            lines,
            log: Vec::new(),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.0.id() as i32
    }

    /// Waits (60 s at most) for a stderr line containing `phase`, and
    /// returns it.
    pub fn wait_for(&mut self, phase: &str) -> String {
        self.wait_within(phase, Duration::from_secs(60))
    }

    /// Waits (`limit` at most) for a stderr line containing `phase`, and
    /// returns it. Guests that boot beside other tests on 2 cores take
    /// minutes: give them a boot-sized limit.
    pub fn wait_within(&mut self, phase: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if line.contains(phase) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!(
            "no line with {phase:?} within {} s:\n{}",
            limit.as_secs(),
            self.log.join("\n")
        );
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the pid of our own child.
        assert_eq!(unsafe { libc::kill(self.pid(), signal) }, 0);
    }

    /// Waits (`limit` at most) for the command to end: its exit code,
    /// stdout and stderr.
    pub fn end(mut self, limit: Duration) -> Ended {
        let pid = self.pid();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.0.try_wait().expect("wait") {
                break s;
            }
            assert!(
                start.elapsed() < limit,
                "fsin did not end within {limit:?} of the signal:\n{}",
                self.log.join("\n")
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = start.elapsed();
        let mut stdout = String::new();
        if let Some(mut s) = self.child.0.stdout.take() {
            std::io::Read::read_to_string(&mut s, &mut stdout).expect("stdout");
        }
        // The reader thread ends with the pipe.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.log.push(line);
        }
        // Children have 5 s to go.
        let deadline = Instant::now() + Duration::from_secs(5);
        let left = loop {
            let left = left_behind(&self.tag);
            if left.is_empty() || Instant::now() > deadline {
                break left;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Ended {
            code: status.code(),
            stdout,
            log: self.log.join("\n"),
            left,
            shm: shm_files_of(pid),
            took,
        }
    }
}

/// How a signalled command ended.
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub log: String,
    /// Processes it started that are still alive 5 s after it ended.
    pub left: Vec<String>,
    /// Its files in /dev/shm.
    pub shm: Vec<PathBuf>,
    /// From the signal (the first [`Watched::end`] was called after) to
    /// the end.
    pub took: Duration,
}

impl Ended {
    /// The last line of stdout, as JSON.
    pub fn json(&self) -> Value {
        let line = self.stdout.lines().last().unwrap_or_else(|| {
            panic!("nothing on stdout; stderr:\n{}", self.log);
        });
        serde_json::from_str(line).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {line}"))
    }

    /// Exit 1, nothing left behind.
    pub fn assert_clean_stop(&self, what: &str) {
        assert_eq!(self.code, Some(1), "{what}: exit code\n{}", self.log);
        assert_eq!(self.left, Vec::<String>::new(), "{what}: processes left");
        assert_eq!(
            self.shm,
            Vec::<PathBuf>::new(),
            "{what}: /dev/shm files left"
        );
    }
}

/// The files in /dev/shm that process `pid` named as its own
/// (`fsin-PID-...`).
pub fn shm_files_of(pid: i32) -> Vec<PathBuf> {
    let prefix = format!("fsin-{pid}-");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// `path` read as JSON.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A second signal during a shutdown (README, "Exit codes"): the
/// `count` children of `w` whose command line holds `what` are stopped
/// (SIGSTOP) and given half a second to hold up the run, so that the
/// shutdown after SIGTERM waits for them; then, 0.7 s later (more than
/// the half second within which signals count as one), SIGINT. Checks
/// that the shutdown waited, that the command ended within `limit` with
/// exit 130, that its children died with it and that it left no file in
/// /dev/shm; gives how it ended.
pub fn second_signal(mut w: Watched, what: &str, count: usize, limit: Duration) -> Ended {
    let children: Vec<i32> = left_behind(&w.tag)
        .iter()
        .filter(|p| p.contains(what))
        .filter_map(|p| p.split(':').next()?.parse().ok())
        .collect();
    assert_eq!(children.len(), count, "{:?}", left_behind(&w.tag));
    for &c in &children {
        // SAFETY: kill(2) on a process this test's command started.
        assert_eq!(unsafe { libc::kill(c, libc::SIGSTOP) }, 0);
    }
    // Let the run reach a slice that the stopped children hold up: a
    // SIGTERM that came between two slices (the server granting none)
    // would end the run without needing them (CI saw it once).
    std::thread::sleep(Duration::from_millis(500));
    w.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        w.child.0.try_wait().expect("wait").is_none(),
        "the shutdown did not wait for the stopped {what} processes"
    );
    w.signal(libc::SIGINT);
    let e = w.end(limit);
    assert_eq!(e.code, Some(130), "{}", e.log);
    assert_eq!(e.left, Vec::<String>::new(), "{}", e.log);
    assert_eq!(e.shm, Vec::<PathBuf>::new(), "/dev/shm files left");
    e
}
