//! What a guest's console says: the `FSIN-` records its `/init` and
//! `fsin-bench` print ([`GuestReport`]) and guest 0's command's result
//! ([`AppOutcome`]). A leaf below both the bridge ([`crate::qemu`]), which
//! reads the consoles, and [`crate::checkpoint`], which saves the reports of
//! a booted cluster with it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Ping results of one guest towards one peer, as the guest measured them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PingResult {
    /// The peer's IPv4 address (`10.0.0.2`).
    pub peer: String,
    /// Echo requests the guest sent it.
    pub sent: u32,
    /// Replies that came back.
    pub received: u32,
    /// Mean round-trip time in milliseconds of guest time (`None` when no
    /// reply came back).
    pub rtt_avg_ms: Option<f64>,
}

/// What one guest did, from its console.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GuestReport {
    /// The guest's index, 0-based.
    pub guest: u32,
    /// Its node id (`--first-node` + the index).
    pub node: u32,
    /// Its IPv4 address (10.0.0.(index + 1)).
    pub ip: String,
    /// Its NIC's MAC address, lowercase hex (`52:54:00:00:00:01` for node
    /// 1).
    pub mac: String,
    /// Guest uptime (s) when its NIC came up (`FSIN-UP`).
    pub up_s: Option<f64>,
    /// Guest uptime (s) when its workload ended (`FSIN-DONE`).
    pub done_s: Option<f64>,
    /// Its pings, one result per peer (`FSIN-PING`).
    pub pings: Vec<PingResult>,
    /// Benchmark results (`FSIN-BENCH` lines): kind, and its key=value
    /// fields (`elapsed_us` is guest time).
    pub bench: Vec<(String, HashMap<String, String>)>,
    /// Guest uptime (s) when every other guest's remote shell answered
    /// (guest 0 of a `--run`: the cluster is up).
    pub cluster_s: Option<f64>,
    /// Guest seconds its kernel ran in the measured phase (lock-step: the
    /// instructions it executed at kernel addresses, which the QEMU
    /// plugin counts, 2^shift ns each: interrupts, system calls, page
    /// faults, the scheduler); `None` where not counted.
    #[serde(default)]
    pub kernel_s: Option<f64>,
    /// What the `--run` command did (guest 0; reported as
    /// [`GuestsOutcome::app`](crate::qemu::GuestsOutcome::app)).
    #[serde(skip)]
    pub app: AppOutcome,
}

impl GuestReport {
    /// Takes in one console line; only lines with an `FSIN-` record count
    /// (the record may follow terminal escape codes on the same line).
    pub(crate) fn console(&mut self, line: &str) {
        let Some(at) = line.find("FSIN-") else {
            return;
        };
        let mut words = line[at..].split_whitespace();
        let kind = words.next().unwrap_or_default();
        let fields: HashMap<&str, &str> = words.clone().filter_map(|w| w.split_once('=')).collect();
        let uptime = fields.get("uptime").and_then(|v| v.parse().ok());
        let rest = || {
            line[at + kind.len()..]
                .strip_prefix(' ')
                .unwrap_or_default()
                .trim_end_matches('\r')
        };
        match kind {
            "FSIN-OUT" => self.app.push_output(rest()),
            "FSIN-APP" => {
                self.app.exit_code = fields.get("exit").and_then(|v| v.parse().ok());
                self.app.guest_s = fields.get("guest_s").and_then(|v| v.parse().ok());
                self.app.timed_out = fields.get("timed_out") == Some(&"1");
            }
            "FSIN-APP-ERROR" => self.app.error = Some(rest().to_string()),
            "FSIN-CLUSTER" => self.cluster_s = uptime,
            "FSIN-UP" => self.up_s = uptime,
            "FSIN-DONE" => self.done_s = uptime,
            "FSIN-BENCH" => self.bench.push((
                words.next().unwrap_or_default().to_string(),
                fields
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )),
            "FSIN-PING" => self.pings.push(PingResult {
                peer: words.next().unwrap_or_default().to_string(),
                sent: fields.get("sent").and_then(|v| v.parse().ok()).unwrap_or(0),
                received: fields
                    .get("received")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                rtt_avg_ms: fields
                    .get("rtt_avg_ms")
                    .and_then(|v| v.parse().ok())
                    .filter(|r: &f64| r.is_finite()),
            }),
            _ => {}
        }
    }
}

/// Bytes of a command's output kept for the report: the last 8 KiB.
pub const APP_OUTPUT_BYTES: usize = 8 * 1024;

/// What the command of `--run` did, from guest 0's console (`FSIN-OUT`,
/// `FSIN-APP` and `FSIN-APP-ERROR` lines of `fsin-bench run`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AppOutcome {
    /// The command, as given.
    pub command: String,
    /// Its exit status: the shell's (128 + N when killed by signal N, 124
    /// when it ran out of `--app-timeout`); `None` when it never ended.
    pub exit_code: Option<i32>,
    /// How long it ran, in seconds of guest time.
    pub guest_s: Option<f64>,
    /// It was killed after `--app-timeout` seconds of guest time.
    pub timed_out: bool,
    /// Wall seconds from guest 0 seeing every guest up (`FSIN-CLUSTER`) to
    /// the command's end: what the co-simulation of the command cost.
    pub wall_s: Option<f64>,
    /// The last [`APP_OUTPUT_BYTES`] bytes of its stdout and stderr, as
    /// lines in the order they came.
    pub output: String,
    /// Why the guest could not run it, when it says so.
    pub error: Option<String>,
}

impl AppOutcome {
    /// Appends one output line, keeping the last [`APP_OUTPUT_BYTES`].
    pub(crate) fn push_output(&mut self, line: &str) {
        self.output.push_str(line);
        self.output.push('\n');
        if self.output.len() > APP_OUTPUT_BYTES {
            let mut cut = self.output.len() - APP_OUTPUT_BYTES;
            while !self.output.is_char_boundary(cut) {
                cut += 1;
            }
            self.output.drain(..cut);
        }
    }
}
