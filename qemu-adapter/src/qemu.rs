//! The QEMU adapter: runs Linux guests under QEMU as nodes of an fsin
//! co-simulation (Simics paper, with QEMU in the role of Simics).
//!
//! For each guest the adapter listens on a loopback port, starts
//! `qemu-system-x86_64` with an e1000 NIC on a `-netdev stream` connection
//! to that port (each frame a 4-byte big-endian length and the Ethernet
//! frame), and attaches the guest to the server as one node of this client:
//! guest `i` is node `first + i`, with MAC [`guest_mac`] and IPv4 address
//! [`guest_ip`]. Frames a guest sends go to the server as that node's
//! frames; frames the server delivers go back to the guest.
//!
//! The guest image is the busybox initramfs of `scripts/install-qemu.sh`:
//! its `/init` pings every other guest and prints `FSIN-` lines on the
//! serial console, which the adapter reads (see [`GuestReport`]), then
//! idles, still answering the others. A guest has finished when it prints
//! `FSIN-DONE`; once the server ends the run (every guest finished), the
//! adapter stops every QEMU. A QEMU that exits before that (kernel panic,
//! crash, kill) ends the run: the adapter names the guest, stops the other
//! guests and exits non-zero.
//!
//! Mode `lockstep` (the Simics paper's slice-based lock-step, and the
//! server's exact mode; `docs/qemu.md`): QEMU 10.0 runs with `-icount
//! shift=N,sleep=off` and the `fsin-qemu-plugin` TCG plugin, which connects
//! to a Unix socket of the adapter and takes over the guest's netdev. A
//! node cycle is 2^N ns of guest time. For each slice the adapter sends
//! every plugin the frames to deliver, each at its node cycle, and the
//! slice end ([`fsin_qemu_wire::ToPlugin`]); the plugin stops the guest
//! there and reports, after the frames the guest sent, each with the guest
//! time of the instruction that sent it, and its idle promise
//! ([`fsin_qemu_wire::FromPlugin`]). Frames are stamped with their node
//! cycle; the guests' promises become the client's `idle_until`.
//!
//! Mode `free`: the guests run free (no instruction counting); a slice ends
//! every `--tick-ms` of wall time, and a frame is stamped with the first
//! node cycle of the slice in which it reached the adapter. Good for quick
//! functional runs; guest-measured times are wall-clock times of TCG.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use fsin_proto::v1 as pb;
use serde::{Deserialize, Serialize};
use sync_client::drive::{drive, Ended};
use sync_client::NodeLink;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, UnixListener};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use fsin_frames::{Mac, MAX_FRAME_BYTES, MIN_FRAME_BYTES};
use fsin_qemu_wire::{board, FromPlugin};

use crate::checkpoint::{self, FileStamp, Found, Identity, Manifest};

mod tcp;
mod timing;
pub mod trace_out;
use timing::{FreeGuests, GuestSet, LockstepGuests};
use trace_out::{TraceOut, TraceOutcome};

/// Why a run of QEMU guests failed; the guests are stopped first.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// Bad arguments, or a guest image or plugin that is missing (nothing
    /// started).
    #[error("{0}")]
    Setup(String),
    /// A host resource (socket, file, directory, process) that cannot be
    /// had: what was asked, and the system's reason.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A guest that ended, stalled, broke its NIC stream or never ran its
    /// command, with its last console lines.
    #[error("{0}")]
    Guest(String),
    /// The connection to the co-simulation server.
    #[error(transparent)]
    Server(#[from] sync_client::ClientError),
    /// SIGINT, SIGTERM or SIGHUP (named).
    #[error("interrupted by {0}; the guests were stopped")]
    Interrupted(&'static str),
}

/// `r`'s I/O error as [`QemuError::Io`], described by `what`.
fn io<T>(r: std::io::Result<T>, what: impl FnOnce() -> String) -> Result<T, QemuError> {
    r.map_err(|source| QemuError::Io {
        what: what(),
        source,
    })
}

/// How guest time relates to the simulated network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Guests run free; slices follow wall-clock ticks.
    Free,
    /// Guest time follows instructions (`-icount`) and skips idle time; the
    /// fsin QEMU plugin stops each guest at every slice end until the next
    /// Continue and carries its frames at exact guest times.
    Lockstep,
}

/// The guests' settings, shared by `nic-bridge` ([`Args`]) and `fsin qemu`
/// (each flattens them into its own arguments). Three defaults depend on
/// whether guest 0 runs a command (`--run`, `fsin qemu --app`): the image,
/// the guest RAM and the pings.
#[derive(Debug, Clone, clap::Args)]
pub struct GuestArgs {
    /// Linux guests (QEMU processes), one per node, at most 250.
    #[arg(long, default_value_t = 2)]
    pub guests: u32,
    /// How guest time follows the network. Lock-step boots in warm-up
    /// (long slices until guest 0's magic packet: `fsin serve --warmup`
    /// and `--magic` for a bridge of its own).
    #[arg(long, value_enum, default_value = "lockstep")]
    pub timing: Mode,
    /// Guest image directory with vmlinuz and initramfs.cpio.gz, as
    /// scripts/install-qemu.sh prints it (default: $FSIN_GUEST_DIR, else
    /// ~/.cache/fsin-guest: the busybox image, or its mpi/ image when guest
    /// 0 runs a command).
    #[arg(long, value_name = "DIR")]
    pub image: Option<PathBuf>,
    /// vCPUs per guest, 1 to 8 (QEMU's -smp; in lock-step they take turns
    /// on one host thread and share the guest's clock).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub cpus: u32,
    /// Guest RAM in MiB (default 128; 512 when guest 0 runs a command). A
    /// guest takes host memory only for the RAM it touches.
    #[arg(long, value_name = "MB")]
    pub memory_mb: Option<u32>,
    /// Pings each guest sends to every other guest (default 5; 0 when guest
    /// 0 runs a command).
    #[arg(long)]
    pub pings: Option<u32>,
    /// Ping payload in bytes (the frame is 42 bytes longer).
    #[arg(long, default_value_t = 56)]
    pub ping_bytes: u32,
    /// After the pings, run the guests' network benchmark with messages of
    /// this many bytes: UDP ping-pong between guests 0 and 1 (100 rounds)
    /// and a TCP all-to-all exchange (0: no benchmark).
    #[arg(long, default_value_t = 0, value_name = "B")]
    pub bench_bytes: u32,
    /// Lock-step: guest time per instruction is 2^N ns (`-icount
    /// shift=N`), and so is a node cycle: the node clock (node_clock) is
    /// 10^9 / 2^N Hz.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub icount_shift: u32,
    /// Wall-clock length of a slice with --timing free, milliseconds.
    #[arg(long, default_value_t = 1)]
    pub tick_ms: u64,
    /// Kill guest 0's command after this many seconds of guest time (exit
    /// code 124); a guest whose image never starts the command is given up
    /// this long plus the boot allowance after the start.
    #[arg(long, default_value_t = 3600.0, value_name = "S")]
    pub app_timeout: f64,
    /// Write each guest's console to DIR/guest-N.log.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
    /// Make host directory DIR readable in every guest at /mnt/host: a
    /// read-only snapshot taken when the run starts (an EROFS image that
    /// every guest maps, as the shared root), e.g. MPI programs built with
    /// mpicc on a Debian 12 host: `--share bin/ --run 'mpirun --hostfile
    /// /etc/fsin/hostfile -np 4 /mnt/host/prog'`. Needs an image with a
    /// shared root (the MPI image) and mkfs.erofs (erofs-utils).
    #[arg(long, value_name = "DIR")]
    pub share: Option<PathBuf>,
    /// Fault injection: guest I panics its kernel once its NIC is up
    /// instead of running its workload.
    #[arg(long, value_name = "I")]
    pub crash_guest: Option<u32>,
}

impl GuestArgs {
    /// The guest image: --image, else [`default_image_dir`] (its `mpi/`
    /// image when guest 0 runs a command).
    pub fn image_dir(&self, command: bool) -> PathBuf {
        self.image.clone().unwrap_or_else(|| {
            let d = default_image_dir();
            if command {
                d.join("mpi")
            } else {
                d
            }
        })
    }

    /// Guest RAM, MiB: --memory-mb, else 512 when guest 0 runs a command
    /// and 128 otherwise.
    pub fn memory_mib(&self, command: bool) -> u32 {
        self.memory_mb.unwrap_or(if command { 512 } else { 128 })
    }

    /// Pings per guest and peer: --pings, else 0 when guest 0 runs a
    /// command and 5 otherwise.
    pub fn ping_count(&self, command: bool) -> u32 {
        self.pings.unwrap_or(if command { 0 } else { 5 })
    }
}

/// Give up when a guest has not reached the end of a slice after this many
/// seconds (`--slice-timeout-s`'s default).
pub const SLICE_TIMEOUT_S: u64 = 60;
/// Guest seconds a guest may take to boot (`--boot-timeout-s`'s default).
pub const BOOT_TIMEOUT_S: f64 = 600.0;
/// Give up when a guest has not connected its NIC after this many seconds
/// (`--connect-timeout-s`'s default).
pub const CONNECT_TIMEOUT_S: u64 = 60;

/// Arguments of `nic-bridge` (also `fsin nic-bridge`).
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// URL of the fsin co-simulation server.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    pub server: String,
    #[command(flatten)]
    pub guest: GuestArgs,
    /// Node id of the first guest; guest i is node first + i.
    #[arg(long, default_value_t = 0)]
    pub first_node: u32,
    /// Lock-step: the fsin QEMU plugin (default: libfsin_qemu_plugin.so
    /// next to this executable, as `cargo build --release` puts it, else
    /// in the default guest image directory, where scripts/install-qemu.sh
    /// copies it for an installed `fsin`).
    #[arg(long, value_name = "FILE")]
    pub plugin: Option<PathBuf>,
    /// Lock-step: give up when a guest has not reached the end of a slice
    /// after this many seconds.
    #[arg(long, default_value_t = SLICE_TIMEOUT_S)]
    pub slice_timeout_s: u64,
    /// Once every guest is up and reaches every other, run this shell
    /// command on guest 0 (`/bin/sh`, in /root; the MPI image's hostfile is
    /// /etc/fsin/hostfile) and report its exit code, guest time and output
    /// ([`AppOutcome`]). Needs an image whose /init runs it (both images of
    /// scripts/install-qemu.sh do).
    #[arg(long, value_name = "CMD")]
    pub run: Option<String>,
    /// Guest seconds a guest may take to boot before it runs the command
    /// (lock-step: guest time; free: wall time).
    #[arg(long, default_value_t = BOOT_TIMEOUT_S, value_name = "S")]
    pub boot_timeout_s: f64,
    /// The first guest sends the CLEAR_STATS magic packet before its pings
    /// (starts the measured phase of a server run with warm-up).
    #[arg(long)]
    pub magic: bool,
    /// Give up when a guest has not connected its NIC after this many
    /// seconds.
    #[arg(long, default_value_t = CONNECT_TIMEOUT_S)]
    pub connect_timeout_s: u64,
    /// Lock-step with --run: start the guests from the booted cluster saved
    /// in DIR when DIR holds one booted with this run's image, plugin,
    /// QEMU, guests, memory, vCPUs and guest settings; else boot them,
    /// save them in DIR once guest 0 sees every guest up, and end the run
    /// there without running the command (the outcome's
    /// `checkpoint.saved`).
    #[arg(long, value_name = "DIR")]
    pub checkpoint: Option<PathBuf>,
    /// The QEMU binary.
    #[arg(long, default_value = QEMU_BINARY)]
    pub qemu: String,
    /// Print one JSON object (last line of stdout) instead of text.
    #[arg(long)]
    pub json: bool,
    /// With --json, also print a `{"progress": ...}` line
    /// ([`BridgeProgress`]) before the last one whenever a guest's NIC
    /// comes up, the cluster is up or the command ends.
    #[arg(long, requires = "json")]
    pub progress_lines: bool,
    /// The shared secret to attach with (`fsin serve --token`), for a
    /// bridge inside the server's own process (`fsin qemu`); `None`: that
    /// of FSIN_TOKEN, as nic-bridge reads it.
    #[arg(skip)]
    pub token: Option<String>,
    /// Lock-step: write the measured phase's frames as a trace
    /// (`fsin qemu --trace-out`; [`trace_out`]).
    #[arg(skip)]
    pub trace_out: Option<TraceOut>,
}

impl Args {
    /// The bridge of `guest` for the server at `server`, guest 0 running
    /// `run`: every other setting at its command-line default.
    pub fn new(server: String, guest: GuestArgs, run: Option<String>) -> Args {
        Args {
            server,
            guest,
            first_node: 0,
            plugin: None,
            slice_timeout_s: SLICE_TIMEOUT_S,
            run,
            boot_timeout_s: BOOT_TIMEOUT_S,
            magic: false,
            connect_timeout_s: CONNECT_TIMEOUT_S,
            checkpoint: None,
            qemu: QEMU_BINARY.to_string(),
            json: false,
            progress_lines: false,
            token: None,
            trace_out: None,
        }
    }

    /// The guest image ([`GuestArgs::image_dir`]).
    pub fn image(&self) -> PathBuf {
        self.guest.image_dir(self.run.is_some())
    }

    /// Guest RAM, MiB ([`GuestArgs::memory_mib`]).
    pub fn memory_mb(&self) -> u32 {
        self.guest.memory_mib(self.run.is_some())
    }

    /// Pings per guest and peer ([`GuestArgs::ping_count`]).
    pub fn pings(&self) -> u32 {
        self.guest.ping_count(self.run.is_some())
    }
}

/// Guest time (ns) of node cycle `cycle` at 2^`shift` ns per cycle;
/// `u64::MAX` (never) past the clock's range.
fn cycle_ns(cycle: u64, shift: u32) -> u64 {
    cycle.saturating_mul(1 << shift.min(29))
}

/// Where `scripts/install-qemu.sh` puts the guest image: `$FSIN_GUEST_DIR`,
/// else `$XDG_CACHE_HOME/fsin-guest`, else `$HOME/.cache/fsin-guest`.
pub fn default_image_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FSIN_GUEST_DIR") {
        return d.into();
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    cache.join("fsin-guest")
}

/// QEMU's own memory in each guest's process, MiB: everything but the
/// guest's RAM and TCG's translated code (about 20 MiB measured, issue 31).
pub const QEMU_BASE_MIB: u64 = 24;

/// TCG's translation buffer per guest, MiB (`-accel tcg,tb-size=`). QEMU's
/// default lets it grow to 1 GiB, and a booted MPI guest fills about
/// 90 MiB; at 32 MiB it boots as fast (docs/qemu.md, "Lean guests").
pub const TCG_CODE_MIB: u64 = 32;

/// Guest RAM that a guest touches to boot, MiB: the kernel's image and its
/// early allocations (108 MiB measured with Debian's 6.1 kernel and a
/// shared root, whatever the RAM size).
pub const GUEST_BOOT_MIB: u64 = 112;

/// Guest RAM that the memory estimate allows an application beyond the
/// boot, MiB: a modest MPI rank with its daemon and shared-memory files.
pub const GUEST_WORK_MIB: u64 = 64;

/// Host memory that one guest of `memory_mb` MiB of RAM is expected to
/// take, MiB: [`QEMU_BASE_MIB`] + [`TCG_CODE_MIB`] + the RAM it touches,
/// [`GUEST_BOOT_MIB`] + [`GUEST_WORK_MIB`] but at most `memory_mb`. QEMU
/// gives a guest its RAM as it touches it, so untouched RAM costs nothing;
/// a guest that uses more of its RAM takes more, up to `memory_mb`.
pub fn guest_memory_mib(memory_mb: u32) -> u64 {
    QEMU_BASE_MIB + TCG_CODE_MIB + u64::from(memory_mb).min(GUEST_BOOT_MIB + GUEST_WORK_MIB)
}

/// Host memory that `guests` guests of `memory_mb` MiB of RAM each are
/// expected to take, MiB: `guests` x [`guest_memory_mib`].
pub fn guests_memory_mib(guests: u32, memory_mb: u32) -> u64 {
    u64::from(guests) * guest_memory_mib(memory_mb)
}

/// Node clock of a lock-step guest, in Hz: one node cycle is 2^N ns of
/// guest time, the time of one instruction under `-icount shift=N`.
pub fn lockstep_clock_hz(icount_shift: u32) -> u64 {
    1_000_000_000 >> icount_shift.min(29)
}

/// MAC address of the NIC of node `node`: 52:54:00:00:HH:LL (QEMU's
/// locally administered prefix).
pub fn guest_mac(node: u32) -> Mac {
    let [_, _, hi, lo] = node.to_be_bytes();
    [0x52, 0x54, 0x00, 0x00, hi, lo]
}

/// IPv4 address of guest `index` (0-based): 10.0.0.(index + 1), in
/// 10.0.0.0/24.
pub fn guest_ip(index: u32) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, (index + 1) as u8)
}

/// Ping results of one guest towards one peer, as the guest measured them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PingResult {
    pub peer: String,
    pub sent: u32,
    pub received: u32,
    /// Mean round-trip time in milliseconds of guest time (`None` when no
    /// reply came back).
    pub rtt_avg_ms: Option<f64>,
}

/// What one guest did, from its console.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GuestReport {
    pub guest: u32,
    pub node: u32,
    pub ip: String,
    pub mac: String,
    /// Guest uptime (s) when its NIC came up and when its workload ended.
    pub up_s: Option<f64>,
    pub done_s: Option<f64>,
    pub pings: Vec<PingResult>,
    /// Benchmark results (`FSIN-BENCH` lines): kind, and its key=value
    /// fields (`elapsed_us` is guest time).
    pub bench: Vec<(String, HashMap<String, String>)>,
    /// Guest uptime (s) when every other guest's remote shell answered
    /// (guest 0 of a `--run`: the cluster is up).
    pub cluster_s: Option<f64>,
    /// What the `--run` command did (guest 0; reported as [`Outcome::app`]).
    #[serde(skip)]
    pub app: AppOutcome,
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
    fn push_output(&mut self, line: &str) {
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

impl GuestReport {
    /// Takes in one console line; only lines with an `FSIN-` record count
    /// (the record may follow terminal escape codes on the same line).
    fn console(&mut self, line: &str) {
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

/// The adapter's result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    pub guests: Vec<GuestReport>,
    pub mode: Mode,
    /// Pings sent and answered over all guests.
    pub ping_sent: u32,
    pub ping_received: u32,
    /// Mean of the guests' mean round-trip times, microseconds of guest time.
    pub rtt_avg_us: Option<f64>,
    /// Benchmark: mean ping-pong round trip between guests 0 and 1 and the
    /// all-to-all completion time (the slowest guest), guest microseconds;
    /// in lock-step also in node cycles.
    pub pingpong_rtt_us: Option<f64>,
    pub a2a_us: Option<f64>,
    pub a2a_cycles: Option<u64>,
    pub slices: u64,
    pub wall_s: f64,
    /// Lock-step: by how many node cycles the guests overran the slice
    /// ends (0: the plugin's timer stops them at the exact instruction;
    /// an idle jump may leave guest time up to 2^N - 1 ns past it): mean
    /// and largest over every guest and slice.
    pub overrun_avg: f64,
    pub overrun_max: u64,
    /// The `--run` command's result (guest 0), when one was given.
    pub app: Option<AppOutcome>,
    /// What the run did with `--checkpoint`'s directory, if given.
    pub checkpoint: Option<CheckpointUse>,
    /// What `--trace-out` wrote, if asked.
    pub trace: Option<TraceOutcome>,
    /// TCP segments carrying data (or SYN, FIN) that the guests sent in
    /// the measured phase, and those among them that their TCP sent again
    /// (a retransmission: nothing beyond what that connection had sent).
    #[serde(default)]
    pub tcp_segments: u64,
    #[serde(default)]
    pub tcp_retransmissions: u64,
    /// Why the run ended (the server's Shutdown reason, or the fault).
    pub reason: String,
    pub error: bool,
}

/// What a run did with a checkpoint ([`Args::checkpoint`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckpointUse {
    /// The checkpoint's directory.
    pub dir: PathBuf,
    /// True: the run booted the guests and saved them (and ran no
    /// command); false: it started from them.
    pub saved: bool,
    /// Wall seconds it took to save every guest, or to restore every guest
    /// until each had run its first slice.
    pub wall_s: f64,
    /// Guest seconds at which the guests were saved.
    pub guest_s: f64,
    /// Bytes of the guests' migration files.
    pub bytes: u64,
}

impl CheckpointUse {
    /// The use of the checkpoint `m` in `dir`: saved (or restored) in
    /// `wall_s` seconds.
    fn of(dir: &Path, m: &Manifest, saved: bool, wall_s: f64) -> CheckpointUse {
        CheckpointUse {
            dir: dir.to_path_buf(),
            saved,
            wall_s,
            guest_s: m.base_ns as f64 * 1e-9,
            bytes: m.bytes,
        }
    }
}

/// A line `nic-bridge --json` prints, for the program that started it
/// (`fsin qemu`): with `--progress-lines`, [`BridgeLine::Progress`] lines
/// while it runs; last, its [`Outcome`], or why it could not run
/// (`{"error": true, "reason": ...}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum BridgeLine {
    Ran(Box<Outcome>),
    Failed { error: bool, reason: String },
    Progress { progress: BridgeProgress },
}

/// The guests' milestones so far, from their consoles.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct BridgeProgress {
    /// Guests whose NIC is up (`FSIN-UP`): booted, with their network.
    pub guests_up: u32,
    /// Guest 0 reached every other guest's remote shell (`FSIN-CLUSTER`):
    /// the `--run` command starts.
    pub cluster_up: bool,
    /// The `--run` command ended (`FSIN-APP`).
    pub app_ended: bool,
}

impl BridgeProgress {
    /// The milestones in `reports` (guest 0 first).
    fn of(reports: &[GuestReport]) -> BridgeProgress {
        BridgeProgress {
            guests_up: reports.iter().filter(|g| g.up_s.is_some()).count() as u32,
            cluster_up: reports.first().is_some_and(|g| g.cluster_s.is_some()),
            app_ended: reports.first().is_some_and(|g| g.app.exit_code.is_some()),
        }
    }
}

impl BridgeLine {
    /// Parses a line of `nic-bridge --json`'s standard output.
    ///
    /// # Errors
    /// The line is not one of the three shapes.
    pub fn parse(line: &str) -> serde_json::Result<BridgeLine> {
        serde_json::from_str(line)
    }
}

/// Something a guest did.
enum GuestEvent {
    /// The guest's NIC connected; frames to it go to this writer.
    Connected(usize, OwnedWriteHalf),
    /// A frame guest `i` sent; in lock-step with the guest time (ns) of the
    /// instruction that sent it.
    Frame(usize, Option<u64>, Vec<u8>),
    /// The NIC stream broke (bad length, read error).
    NicError(usize, String),
    /// The guest could not be restored from its checkpoint file.
    RestoreFailed(usize, checkpoint::MigrationError),
    Console(usize, String),
    /// Lock-step: bytes of plugin messages decoded from guest `i`'s socket,
    /// after the events of those messages.
    Read(usize, u64),
    /// Lock-step: guest `i`'s plugin was the last to reach the end of this
    /// board round (`fsin_qemu_wire::FromPlugin::AllReached`).
    AllReached(usize, u64),
    /// Lock-step: frames delivered to guest `i` at guest time (ns) ended
    /// its idle time, which began at the second (`FromPlugin::Woke`).
    Woke(usize, u64, u64),
    Exited(usize, std::io::Result<ExitStatus>),
}

/// One guest's QEMU command line; `sync` is the plugin's socket in
/// lock-step mode (with the slice board in `files`), `run` the file with
/// the `--run` command (guest 0 gets it as the fw_cfg file `opt/fsin/run`).
fn qemu_command(
    a: &Args,
    index: u32,
    port: u16,
    sync: Option<&Path>,
    files: &RunFiles,
) -> Result<Command, QemuError> {
    let node = a.first_node + index;
    let peers: Vec<String> = (0..a.guest.guests)
        .filter(|&j| j != index)
        .map(|j| guest_ip(j).to_string())
        .collect();
    // swiotlb=noforce: no 64 MiB bounce buffer, which the kernel zeroes
    // at boot (every guest would keep it in host memory; QEMU's devices
    // reach all guest RAM). nokaslr: a bzImage decompresses where it is
    // loaded rather than to a further place that it also writes.
    // cryptomgr.notests: no self-tests of every crypto algorithm at boot
    // (740 million guest instructions).
    let mut append = format!(
        "console=ttyS0 quiet panic=-1 swiotlb=noforce nokaslr cryptomgr.notests fsin.ip={} fsin.peers={} fsin.count={} fsin.size={}",
        guest_ip(index),
        peers.join(","),
        a.pings(),
        a.guest.ping_bytes
    );
    append.push_str(&format!(
        " fsin.index={index} fsin.guests={}",
        a.guest.guests
    ));
    if a.guest.bench_bytes > 0 {
        append.push_str(&format!(" fsin.bench={}", a.guest.bench_bytes));
    }
    if let (0, Some(_)) = (index, &a.run) {
        append.push_str(&format!(
            " fsin.app=1 fsin.app_timeout={}",
            a.guest.app_timeout
        ));
    }
    if a.magic && index == 0 {
        append.push_str(" fsin.magic=1");
    }
    if a.guest.crash_guest == Some(index) {
        append.push_str(" fsin.crash=1");
    }
    // Memory devices beside the RAM, each a read-only file that every
    // guest maps: the shared root (/dev/pmem0), then --share's snapshot.
    let pmems: Vec<&(PathBuf, u64)> = files.root.iter().chain(&files.share).collect();
    let mut memory = a.memory_mb().to_string();
    if !pmems.is_empty() {
        if files.root.is_some() {
            append.push_str(" fsin.root=pmem");
        }
        if files.share.is_some() {
            append.push_str(" fsin.share=/dev/pmem1");
        }
        let bytes: u64 = pmems.iter().map(|(_, b)| b).sum();
        memory = format!(
            "{}M,slots={},maxmem={}M",
            a.memory_mb(),
            pmems.len(),
            u64::from(a.memory_mb()) + bytes.div_ceil(1 << 20)
        );
    }
    let mac = guest_mac(node).map(|b| format!("{b:02x}")).join(":");
    let mut cmd = Command::new(&a.qemu);
    cmd.args(["-M", "pc", "-m", &memory])
        .args(["-accel", &format!("tcg,tb-size={TCG_CODE_MIB}")])
        .args(["-smp", &a.guest.cpus.to_string()])
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ])
        .args(["-serial", "stdio", "-monitor", "none"])
        .arg("-kernel")
        .arg(&files.kernel)
        .arg("-initrd")
        .arg(a.image().join("initramfs.cpio.gz"))
        .args(["-append", &append])
        .args([
            "-netdev",
            &format!("stream,id=n0,server=off,addr.type=inet,addr.host=127.0.0.1,addr.port={port}"),
        ])
        .args(["-device", &format!("e1000,netdev=n0,mac={mac},romfile=")]);
    for (k, (path, bytes)) in pmems.iter().enumerate() {
        // Read-only and shared: every guest maps the same host pages.
        cmd.args([
            "-object",
            &format!(
                "memory-backend-file,id=pmem{k},mem-path={},size={bytes},share=on,readonly=on",
                path.display()
            ),
            "-device",
            &format!("virtio-pmem-pci,memdev=pmem{k}"),
        ]);
    }
    if let (0, Some(file)) = (index, &files.run) {
        cmd.arg("-fw_cfg")
            .arg(format!("name=opt/fsin/run,file={}", file.display()));
    }
    if let Some(dir) = &files.qmp {
        // Shared read-only memory (the root, --share) is left out of the
        // migration (`checkpoint`), set over QMP.
        cmd.arg("-qmp").arg(format!(
            "unix:{},server=on,wait=off",
            qmp_socket(dir, index as usize).display()
        ));
    }
    if files.incoming.is_some() {
        // No self-announcement after the load: QEMU would send RARP frames
        // on its wall-clock timer, which no guest sent.
        cmd.args(["-incoming", "defer"])
            .args(["-global", "migration.announce-rounds=0"]);
    }
    if let Some(sock) = sync {
        let plugin = plugin_path(a)?;
        // Guest time from instructions, idle time jumped over, the RTC on
        // guest time from a fixed date: nothing the guest sees comes from
        // the host's clock.
        cmd.args([
            "-icount",
            &format!("shift={},sleep=off", a.guest.icount_shift),
        ])
        .args(["-rtc", "base=2025-01-01T00:00:00,clock=vm"])
        .arg("-plugin")
        .arg(format!(
            "{},sock={},board={},slot={index},netdev=n0",
            plugin.display(),
            sock.display(),
            files.board.display()
        ));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    Ok(cmd)
}

/// File name of an image's uncompressed kernel: an x86-64 ELF `vmlinux`
/// with a PVH entry, which QEMU boots directly. When an image has it,
/// guests boot it instead of `vmlinuz`, which would first decompress
/// itself under TCG (35 guest seconds for Debian's XZ bzImage).
pub const UNCOMPRESSED_KERNEL_FILE: &str = "vmlinux";

/// The kernel a guest of `image` boots: [`UNCOMPRESSED_KERNEL_FILE`] if
/// the image has it, else `vmlinuz`.
fn kernel_file(image: &Path) -> PathBuf {
    let elf = image.join(UNCOMPRESSED_KERNEL_FILE);
    if elf.is_file() {
        elf
    } else {
        image.join(IMAGE_FILES[0])
    }
}

/// File name of an image's shared root file system (EROFS), beside
/// [`IMAGE_FILES`]: when it is there, every guest maps it read-only as
/// its root (virtio-pmem, read in place through DAX), and the initramfs
/// only mounts it (docs/qemu.md, "Lean guests").
pub const SHARED_ROOT_FILE: &str = "root.erofs";

/// The image's shared root and its size in bytes, if it has one.
///
/// # Errors
/// [`QemuError::Setup`] when the file is there but unreadable, or its size
/// is not a multiple of 2 MiB (QEMU's memory devices need that;
/// scripts/install-qemu.sh pads it).
fn shared_root(image: &Path) -> Result<Option<(PathBuf, u64)>, QemuError> {
    pmem_file(&image.join(SHARED_ROOT_FILE))
}

/// An EROFS file that guests map as a memory device, with its size in
/// bytes; `None` when it does not exist.
fn pmem_file(path: &Path) -> Result<Option<(PathBuf, u64)>, QemuError> {
    let path = path.to_path_buf();
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(QemuError::Setup(format!("{}: {e}", path.display()))),
    };
    let bytes = meta.len();
    if bytes == 0 || bytes % (2 << 20) != 0 {
        return Err(QemuError::Setup(format!(
            "{}: {bytes} bytes is not a non-zero multiple of 2 MiB (pad it: truncate -s, as scripts/install-qemu.sh does)",
            path.display()
        )));
    }
    Ok(Some((path, bytes)))
}

/// The files a run's guests boot and read, found once for all guests: the
/// image's kernel ([`kernel_file`]) and shared root with its size in bytes
/// ([`shared_root`]), guest 0's `--run` command file ([`run_file`]),
/// `--share`'s snapshot with its size in bytes, the lock-step slice board,
/// and with a checkpoint where QMP listens and the migration files are.
struct RunFiles {
    kernel: PathBuf,
    root: Option<(PathBuf, u64)>,
    run: Option<PathBuf>,
    share: Option<(PathBuf, u64)>,
    board: PathBuf,
    /// With a checkpoint: the run's directory, where each guest's QMP
    /// socket goes ([`qmp_socket`]).
    qmp: Option<PathBuf>,
    /// With a restore: the checkpoint directory with the guests' migration
    /// files ([`checkpoint::guest_file`]).
    incoming: Option<PathBuf>,
}

/// Size of guest 0's command file (the fw_cfg file `opt/fsin/run`), bytes:
/// the command, then newlines up to this size. The guest's kernel keeps a
/// file's size from boot, so a guest restored from a checkpoint reads a new
/// command of any length up to this in place of the blank lines it was
/// booted with (which tell its `/init` to ask for the save).
pub const RUN_FILE_BYTES: usize = 16 * 1024;

/// The bytes of guest 0's command file for `cmd` (`None`: blank, the boot
/// of a checkpoint).
///
/// # Errors
/// [`QemuError::Setup`] when the command is longer than [`RUN_FILE_BYTES`]
/// less one.
fn run_file(cmd: Option<&str>) -> Result<Vec<u8>, QemuError> {
    let mut text = cmd.unwrap_or_default().as_bytes().to_vec();
    if text.len() >= RUN_FILE_BYTES {
        return Err(QemuError::Setup(format!(
            "--run: a command of {} bytes; at most {} (put a longer one in a script under --share)",
            text.len(),
            RUN_FILE_BYTES - 1
        )));
    }
    text.resize(RUN_FILE_BYTES, b'\n');
    Ok(text)
}

/// The first line of `qemu --version`.
///
/// # Errors
/// [`QemuError::Setup`] when QEMU cannot be run.
fn qemu_version(qemu: &str) -> Result<String, QemuError> {
    let out = std::process::Command::new(qemu)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            QemuError::Setup(format!(
                "cannot run {qemu} (scripts/install-qemu.sh installs QEMU 10.0): {e}"
            ))
        })?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string())
}

/// The identity of the guests that `a` boots: what a checkpoint must have
/// been booted with to be restored for `a` ([`checkpoint::Identity`]).
///
/// # Errors
/// [`QemuError::Setup`] or [`QemuError::Io`] when an image file, the
/// plugin, `--share`'s directory or QEMU is missing.
pub fn identity(a: &Args) -> Result<Identity, QemuError> {
    check_image(&a.image())?;
    let stamp = |p: &Path| io(FileStamp::of(p), || format!("cannot read {}", p.display()));
    let mut files = vec![
        stamp(&kernel_file(&a.image()))?,
        stamp(&a.image().join(IMAGE_FILES[1]))?,
    ];
    if let Some((root, _)) = shared_root(&a.image())? {
        files.push(stamp(&root)?);
    }
    files.push(stamp(&plugin_path(a)?)?);
    let share = match &a.guest.share {
        Some(d) => Some(io(FileStamp::tree(d), || {
            format!("cannot read --share {}", d.display())
        })?),
        None => None,
    };
    Ok(Identity {
        qemu: qemu_version(&a.qemu)?,
        files,
        share,
        guests: a.guest.guests,
        first_node: a.first_node,
        memory_mb: a.memory_mb(),
        cpus: a.guest.cpus,
        icount_shift: a.guest.icount_shift,
        pings: a.pings(),
        ping_bytes: a.guest.ping_bytes,
        bench_bytes: a.guest.bench_bytes,
        app_timeout: a.guest.app_timeout,
        magic: a.magic,
    })
}

/// Where a run's guests come from.
enum Start {
    /// They boot.
    Boot,
    /// They boot and are saved in the directory (identity given), then
    /// the run ends.
    Save(PathBuf, Box<Identity>),
    /// They are restored from the checkpoint in the directory.
    Restore(PathBuf, Box<Manifest>),
}

/// Host disk a guest's migration file takes at most, MiB: the guest RAM
/// it has touched ([`GUEST_BOOT_MIB`] + [`GUEST_WORK_MIB`], at most its
/// RAM); pages that stayed zero are not written.
fn checkpoint_guest_mib(memory_mb: u32) -> u64 {
    u64::from(memory_mb).min(GUEST_BOOT_MIB + GUEST_WORK_MIB)
}

/// What `--checkpoint` makes of this run: a restore when its directory
/// holds a checkpoint of this identity, else a boot that saves one (the
/// directory made ready and checked for room first).
///
/// # Errors
/// [`QemuError::Setup`] without lock-step or --run, or when the
/// directory's file system has no room for the guests' files.
fn start_of(a: &Args) -> Result<Start, QemuError> {
    let Some(dir) = &a.checkpoint else {
        return Ok(Start::Boot);
    };
    if a.guest.timing != Mode::Lockstep || a.run.is_none() {
        return Err(QemuError::Setup(
            "--checkpoint needs --timing lockstep and --run (the command each restored run runs)"
                .into(),
        ));
    }
    let id = identity(a)?;
    let why = match checkpoint::find(dir, &id) {
        Found::Ready(m) => return Ok(Start::Restore(dir.clone(), m)),
        Found::Missing(why) => why,
    };
    io(checkpoint::prepare(dir), || {
        format!("cannot make the checkpoint directory {}", dir.display())
    })?;
    let need_mib = u64::from(a.guest.guests) * checkpoint_guest_mib(a.memory_mb());
    let free_mib = io(checkpoint::free_bytes(dir), || {
        format!("cannot query the file system of {}", dir.display())
    })? >> 20;
    if free_mib < need_mib {
        return Err(QemuError::Setup(format!(
            "--checkpoint {}: {} guests need up to {need_mib} MiB there, the file system has {free_mib} MiB free (free space, choose another directory or give less --memory-mb)",
            dir.display(),
            a.guest.guests
        )));
    }
    eprintln!("nic-bridge: {why}; booting the guests and saving them there (up to {need_mib} MiB)");
    Ok(Start::Save(dir.clone(), Box::new(id)))
}

/// A guest's QMP socket in the run's directory (checkpoints only).
fn qmp_socket(work: &Path, i: usize) -> PathBuf {
    work.join(format!("guest-{i}.qmp"))
}

/// The program that makes `--share`'s snapshot.
const MKFS_EROFS: &str = "mkfs.erofs";

/// Snapshots host directory `dir` as the EROFS image `dest` (every file
/// owned by root, fixed times and UUID: the same tree gives the same
/// bytes), padded to 2 MiB.
///
/// # Errors
/// [`QemuError::Setup`] when `dir` is not a directory, mkfs.erofs is
/// missing or fails, or `dest` cannot be written.
fn snapshot_share(dir: &Path, dest: &Path) -> Result<(PathBuf, u64), QemuError> {
    if !dir.is_dir() {
        return Err(QemuError::Setup(format!(
            "--share {}: not a directory",
            dir.display()
        )));
    }
    let out = std::process::Command::new(MKFS_EROFS)
        .args(["--quiet", "--all-root", "-T0", "-U", SHARE_UUID])
        .arg(dest)
        .arg(dir)
        .output()
        .map_err(|e| {
            QemuError::Setup(format!(
                "--share needs {MKFS_EROFS} (Debian's erofs-utils; scripts/install-qemu.sh installs it): {e}"
            ))
        })?;
    if !out.status.success() {
        return Err(QemuError::Setup(format!(
            "--share {}: {MKFS_EROFS} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let file = io(std::fs::OpenOptions::new().write(true).open(dest), || {
        format!("cannot open {}", dest.display())
    })?;
    let len = io(file.metadata(), || {
        format!("cannot read {}", dest.display())
    })?
    .len();
    io(
        file.set_len(len.next_multiple_of(2 << 20).max(2 << 20)),
        || format!("cannot pad {}", dest.display()),
    )?;
    pmem_file(dest)?.ok_or_else(|| QemuError::Setup(format!("{} vanished", dest.display())))
}

/// The file system UUID of `--share` snapshots (fixed, for repeatable
/// runs).
const SHARE_UUID: &str = "9d3e0c52-7a51-4c4e-8f0e-5f51a0000032";

/// The QEMU binary started for each guest by default (`--qemu`).
pub const QEMU_BINARY: &str = "qemu-system-x86_64";

/// The files of a guest image directory: the kernel and the initramfs.
pub const IMAGE_FILES: [&str; 2] = ["vmlinuz", "initramfs.cpio.gz"];

/// The first of [`IMAGE_FILES`] that `dir` lacks, as its path.
pub fn missing_image_file(dir: &Path) -> Option<PathBuf> {
    IMAGE_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|p| !p.is_file())
}

/// Checks that `dir` holds a guest image.
///
/// # Errors
/// [`QemuError::Setup`] naming the first missing file and what to run.
pub fn check_image(dir: &Path) -> Result<(), QemuError> {
    match missing_image_file(dir) {
        Some(p) => Err(QemuError::Setup(format!(
            "guest image incomplete: {} is missing (build it with scripts/install-qemu.sh; `fsin doctor` checks the machine)",
            p.display()
        ))),
        None => Ok(()),
    }
}

/// File name of the plugin library that `cargo build --release -p
/// fsin-qemu-plugin` writes, and scripts/install-qemu.sh copies into the
/// guest image directory.
pub const PLUGIN_FILE: &str = "libfsin_qemu_plugin.so";

/// Where the plugin library is looked for when no `--plugin` is given:
/// next to this executable (a `target/release` build), then in
/// [`default_image_dir`] (an installed `fsin`, after
/// scripts/install-qemu.sh); the first that exists, else the first.
pub fn default_plugin_path() -> PathBuf {
    let beside = std::env::current_exe()
        .map(|e| e.with_file_name(PLUGIN_FILE))
        .unwrap_or_else(|_| PathBuf::from(PLUGIN_FILE));
    let cached = default_image_dir().join(PLUGIN_FILE);
    if !beside.is_file() && cached.is_file() {
        cached
    } else {
        beside
    }
}

/// The plugin library: `--plugin`, else [`default_plugin_path`].
fn plugin_path(a: &Args) -> Result<PathBuf, QemuError> {
    let path = a.plugin.clone().unwrap_or_else(default_plugin_path);
    if !path.is_file() {
        return Err(QemuError::Setup(format!(
            "the fsin QEMU plugin {} is missing: build it with scripts/install-qemu.sh (or `cargo build --release -p fsin-qemu-plugin`) or give --plugin; `fsin doctor` checks the machine",
            path.display()
        )));
    }
    Ok(path)
}

/// Complete `-netdev stream` frames (4-byte big-endian length, frame) at
/// the front of `buf`, removed from it.
///
/// # Errors
/// A length outside 14..=9018 bytes.
fn take_frames(buf: &mut Vec<u8>) -> Result<Vec<Vec<u8>>, String> {
    let mut frames = Vec::new();
    let mut at = 0;
    while buf.len() - at >= 4 {
        let n = u32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
        if !(MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&n) {
            return Err(format!(
                "frame length {n} outside {MIN_FRAME_BYTES}..={MAX_FRAME_BYTES} bytes"
            ));
        }
        if buf.len() - at - 4 < n {
            break;
        }
        frames.push(buf[at + 4..at + 4 + n].to_vec());
        at += 4 + n;
    }
    buf.drain(..at);
    Ok(frames)
}

/// Appends to `buf` all that `try_read` has ready, without waiting;
/// `Ok(false)` when the stream ended.
fn read_ready(
    mut try_read: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match try_read(&mut chunk) {
            Ok(0) => return Ok(false),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) => return Err(e),
        }
    }
}

/// Reads what guest `i`'s NIC has sent so far without waiting and forwards
/// its frames; `false` when the stream ended or broke.
fn drain_nic(
    i: usize,
    rd: &tokio::net::tcp::OwnedReadHalf,
    buf: &mut Vec<u8>,
    tx: &mpsc::UnboundedSender<GuestEvent>,
) -> bool {
    match read_ready(|chunk| rd.try_read(chunk), buf) {
        Ok(true) => {}
        Ok(false) => return false, // QEMU exited, which its watcher reports
        Err(e) => {
            let _ = tx.send(GuestEvent::NicError(i, format!("read failed: {e}")));
            return false;
        }
    }
    match take_frames(buf) {
        Ok(frames) => frames
            .into_iter()
            .all(|f| tx.send(GuestEvent::Frame(i, None, f)).is_ok()),
        Err(e) => {
            let _ = tx.send(GuestEvent::NicError(i, e));
            false
        }
    }
}

/// Reads what guest `i`'s plugin has written so far without waiting and
/// forwards its messages ([`GuestEvent::Frame`] with the guest time,
/// [`GuestEvent::AllReached`]), then [`GuestEvent::Read`] with their bytes;
/// `false` when the socket ended, broke or carried a bad message.
fn drain_plugin(
    i: usize,
    rd: &tokio::net::unix::OwnedReadHalf,
    buf: &mut Vec<u8>,
    tx: &mpsc::UnboundedSender<GuestEvent>,
) -> bool {
    let fail = |e: String| {
        let _ = tx.send(GuestEvent::NicError(i, e));
        false
    };
    match read_ready(|chunk| rd.try_read(chunk), buf) {
        Ok(true) => {}
        Ok(false) => return fail("the QEMU plugin closed its socket".into()),
        Err(e) => return fail(format!("lost the QEMU plugin: {e}")),
    }
    let mut at = 0;
    loop {
        let msg = match FromPlugin::decode(&buf[at..]) {
            Ok(Some((msg, n))) => {
                at += n;
                msg
            }
            Ok(None) => break,
            Err(e) => return fail(format!("bad message from the QEMU plugin: {e}")),
        };
        let ev = match msg {
            FromPlugin::Sent { at_ns, frame } => {
                if !(MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&frame.len()) {
                    return fail(format!(
                        "frame length {} outside {MIN_FRAME_BYTES}..={MAX_FRAME_BYTES} bytes",
                        frame.len()
                    ));
                }
                GuestEvent::Frame(i, Some(at_ns), frame)
            }
            FromPlugin::AllReached { round } => GuestEvent::AllReached(i, round),
            FromPlugin::Woke {
                at_ns,
                idle_from_ns,
            } => GuestEvent::Woke(i, at_ns, idle_from_ns),
        };
        if tx.send(ev).is_err() {
            return false;
        }
    }
    buf.drain(..at);
    at == 0 || tx.send(GuestEvent::Read(i, at as u64)).is_ok()
}

/// Guest `i`'s sockets: accepts its NIC (and, in lock-step, its plugin),
/// forwards the frames it sends, and in lock-step writes each slice's
/// deliveries received on `slices` to the plugin and forwards what the
/// plugin says ([`drain_plugin`]).
async fn guest_io(
    i: usize,
    nic: TcpListener,
    sync: Option<UnixListener>,
    mut slices: mpsc::UnboundedReceiver<Vec<u8>>,
    timeout: Duration,
    tx: mpsc::UnboundedSender<GuestEvent>,
) {
    let fail = |e: String| {
        let _ = tx.send(GuestEvent::NicError(i, e));
    };
    let nic = match tokio::time::timeout(timeout, nic.accept()).await {
        Ok(Ok((sock, _))) => sock,
        Ok(Err(e)) => return fail(format!("accept failed: {e}")),
        Err(_) => return fail(format!("QEMU did not connect its NIC within {timeout:?}")),
    };
    let plugin = match sync {
        None => None,
        Some(l) => match tokio::time::timeout(timeout, l.accept()).await {
            Ok(Ok((sock, _))) => Some(sock.into_split()),
            Ok(Err(e)) => return fail(format!("plugin accept failed: {e}")),
            Err(_) => {
                return fail(format!(
                    "the QEMU plugin did not connect within {timeout:?}"
                ))
            }
        },
    };
    let _ = nic.set_nodelay(true);
    let (rd, wr) = nic.into_split();
    if tx.send(GuestEvent::Connected(i, wr)).is_err() {
        return;
    }
    // Deliveries are written by a task of their own, so that a plugin
    // busy writing frames is always read meanwhile.
    let from_plugin = plugin.map(|(prd, mut pwr)| {
        let fail_tx = tx.clone();
        tokio::spawn(async move {
            while let Some(msgs) = slices.recv().await {
                if let Err(e) = pwr.write_all(&msgs).await {
                    let _ = fail_tx.send(GuestEvent::NicError(
                        i,
                        format!("lost the QEMU plugin: {e}"),
                    ));
                    return;
                }
            }
        });
        prd
    });
    let plugin_readable = || async {
        match &from_plugin {
            Some(p) => p.readable().await,
            None => std::future::pending().await,
        }
    };
    let mut buf = Vec::new();
    let mut plugin_buf = Vec::new();
    loop {
        tokio::select! {
            r = rd.readable() => {
                if r.is_err() || !drain_nic(i, &rd, &mut buf, &tx) {
                    return;
                }
            }
            r = plugin_readable() => {
                let Some(p) = &from_plugin else { return };
                if let Err(e) = r {
                    return fail(format!("lost the QEMU plugin: {e}"));
                }
                if !drain_plugin(i, p, &mut plugin_buf, &tx) {
                    return;
                }
            }
        }
    }
}

/// Starts guest `i`: its NIC listener (and plugin socket in `sync_dir`),
/// QEMU (with the `--run` command file `run`), and the tasks that report
/// what it does; returns where to send each slice's plugin messages.
async fn start_guest(
    a: &Args,
    i: usize,
    sync_dir: Option<&Path>,
    files: &RunFiles,
    tx: &mpsc::UnboundedSender<GuestEvent>,
) -> Result<mpsc::UnboundedSender<Vec<u8>>, QemuError> {
    let listener = io(TcpListener::bind("127.0.0.1:0").await, || {
        "cannot listen on loopback".into()
    })?;
    let port = io(listener.local_addr(), || "cannot listen on loopback".into())?.port();
    let sock = sync_dir.map(|d| d.join(format!("guest-{i}.sock")));
    let sync = match &sock {
        Some(p) => Some(io(UnixListener::bind(p), || {
            format!("cannot listen on {}", p.display())
        })?),
        None => None,
    };
    let mut cmd = qemu_command(a, i as u32, port, sock.as_deref(), files)?;
    // A nic-bridge killed outright (SIGKILL: no `kill_on_drop`) takes its
    // QEMUs with it.
    // SAFETY: prctl only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
    let mut child: Child = io(cmd.spawn(), || {
        format!(
                "cannot start {} for guest {i} (scripts/install-qemu.sh installs QEMU 10.0; `fsin doctor` checks the machine)",
                a.qemu
            )
    })?;
    let (slices_tx, slices_rx) = mpsc::unbounded_channel();
    let timeout = Duration::from_secs(a.connect_timeout_s);
    tokio::spawn(guest_io(i, listener, sync, slices_rx, timeout, tx.clone()));
    for (pipe, name) in [
        (
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            "console",
        ),
        (
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            "stderr",
        ),
    ] {
        let Some(pipe) = pipe else { continue };
        let con_tx = tx.clone();
        tokio::spawn(async move {
            // Console bytes are the guest's: not necessarily UTF-8.
            let mut pipe = BufReader::new(pipe);
            let mut raw = Vec::new();
            while let Ok(1..) = pipe.read_until(b'\n', &mut raw).await {
                let text = String::from_utf8_lossy(&raw);
                let text = text.trim_end_matches(['\n', '\r']);
                let line = if name == "stderr" {
                    format!("qemu: {text}")
                } else {
                    text.to_string()
                };
                raw.clear();
                if con_tx.send(GuestEvent::Console(i, line)).is_err() {
                    return;
                }
            }
        });
    }
    let exit_tx = tx.clone();
    tokio::spawn(async move {
        let status = child.wait().await;
        let _ = exit_tx.send(GuestEvent::Exited(i, status));
    });
    Ok(slices_tx)
}

/// State of the guests while the run goes on.
struct Guests {
    reports: Vec<GuestReport>,
    nics: Vec<Option<OwnedWriteHalf>>,
    /// Last console lines of each guest, for error messages.
    tails: Vec<Vec<String>>,
    logs: Vec<Option<std::fs::File>>,
}

impl Guests {
    fn console(&mut self, i: usize, line: String) {
        use std::io::Write;
        if let Some(f) = &mut self.logs[i] {
            let _ = writeln!(f, "{line}");
        }
        self.reports[i].console(&line);
        let tail = &mut self.tails[i];
        if tail.len() == 8 {
            tail.remove(0);
        }
        tail.push(line);
    }

    /// The error for guest `i`'s QEMU having exited with `status` before
    /// the run ended, with its last console lines.
    fn ended(&self, i: usize, status: &std::io::Result<ExitStatus>) -> QemuError {
        let how = match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("wait failed: {e}"),
        };
        QemuError::Guest(format!(
            "{} ended before the run did (QEMU {how}); last console lines:\n  {}",
            self.describe(i),
            self.tails[i].join("\n  ")
        ))
    }

    fn describe(&self, i: usize) -> String {
        let r = &self.reports[i];
        format!("guest {i} (node {}, {}, {})", r.node, r.ip, r.mac)
    }
}

/// What a guest's console line says of a condition that its run cannot
/// survive, which ends the run at once instead of at the boot or command
/// timeout: a full root file system (the init's writes fail, the cluster
/// never comes up), the kernel out of memory, an initramfs that did not
/// unpack, an `/init` that cannot go on (`FSIN-INIT-FAILED`, say when it
/// cannot mount the shared root). The `--run` command's own output
/// (`FSIN-OUT` lines) is the command's business: its exit code tells.
fn fatal_condition(line: &str) -> Option<&'static str> {
    if line.contains("FSIN-OUT") {
        return None;
    }
    [
        (
            "No space left on device",
            "ran out of space in its root file system, which is in RAM (give more --memory-mb)",
        ),
        ("Out of memory", "ran out of memory (give more --memory-mb)"),
        (
            "Initramfs unpacking failed",
            "could not unpack its initramfs (give more --memory-mb)",
        ),
        ("FSIN-INIT-FAILED", "its /init could not go on"),
    ]
    .iter()
    .find(|(text, _)| line.contains(text))
    .map(|&(_, what)| what)
}

/// How long a broken NIC stream waits for its QEMU's exit to be reported.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Guest `i`'s exit status if its QEMU exits within [`EXIT_GRACE`]; the
/// console lines that arrive meanwhile are kept, other events dropped (the
/// run is ending).
async fn exit_of(
    rx: &mut mpsc::UnboundedReceiver<GuestEvent>,
    guests: &mut Guests,
    i: usize,
) -> Option<std::io::Result<ExitStatus>> {
    let end = tokio::time::Instant::now() + EXIT_GRACE;
    loop {
        match tokio::time::timeout_at(end, rx.recv()).await.ok()?? {
            GuestEvent::Exited(j, status) if j == i => return Some(status),
            GuestEvent::Console(j, line) => guests.console(j, line),
            _ => {}
        }
    }
}

/// Runs the guests through the server until it ends the run.
///
/// # Errors
/// QEMU or the image missing, a guest that crashes, stalls its NIC or is
/// killed, or a broken server connection; the guests are stopped first.
///
/// The QEMU processes belong to tasks of the caller's runtime and are
/// killed when it drops them (`kill_on_drop`), on success as on error.
pub async fn run(a: &Args) -> Result<Outcome, QemuError> {
    run_watched(a, &|progress| {
        if a.progress_lines {
            let line = BridgeLine::Progress { progress };
            println!("{}", serde_json::to_string(&line).unwrap_or_default());
        }
    })
    .await
}

/// [`run`], handing the guests' milestones to `watch` whenever they change
/// (a guest's NIC up, the cluster up, the command ended; and once after a
/// restore), as `fsin qemu`'s progress line shows them.
///
/// # Errors
/// As [`run`].
pub async fn run_watched(
    a: &Args,
    watch: &(dyn Fn(BridgeProgress) + Sync),
) -> Result<Outcome, QemuError> {
    if a.guest.guests == 0 || a.guest.guests > 250 {
        return Err(QemuError::Setup(format!(
            "--guests {}: between 1 and 250 guests",
            a.guest.guests
        )));
    }
    if !(1..=8).contains(&a.guest.cpus) {
        return Err(QemuError::Setup(format!(
            "--cpus {}: between 1 and 8 vCPUs per guest",
            a.guest.cpus
        )));
    }
    for (key, v) in [
        ("--app-timeout", a.guest.app_timeout),
        ("--boot-timeout-s", a.boot_timeout_s),
    ] {
        if !(v.is_finite() && (0.0..=sync_client::MAX_WAIT_S).contains(&v)) {
            return Err(QemuError::Setup(format!(
                "{key} {v}: expected seconds of guest time, 0 to {} (a week)",
                sync_client::MAX_WAIT_S
            )));
        }
    }
    for (key, v) in [
        ("--slice-timeout-s", a.slice_timeout_s),
        ("--connect-timeout-s", a.connect_timeout_s),
    ] {
        if !(1.0..=sync_client::MAX_WAIT_S).contains(&(v as f64)) {
            return Err(QemuError::Setup(format!(
                "{key} {v}: expected wall seconds, 1 to {} (a week)",
                sync_client::MAX_WAIT_S
            )));
        }
    }
    check_image(&a.image())?;
    let start = start_of(a)?;
    let work = WorkDir::new()?;
    let mut files = RunFiles {
        kernel: kernel_file(&a.image()),
        root: shared_root(&a.image())?,
        run: None,
        share: None,
        board: board_path(&work),
        qmp: (!matches!(start, Start::Boot)).then(|| work.0.clone()),
        incoming: match &start {
            Start::Restore(dir, _) => Some(dir.clone()),
            _ => None,
        },
    };
    if a.guest.share.is_some() && files.root.is_none() {
        return Err(QemuError::Setup(format!(
            "--share needs an image with a shared root ({SHARED_ROOT_FILE}, as in the MPI image); {} has none",
            a.image().display()
        )));
    }
    let lockstep = a.guest.timing == Mode::Lockstep;
    let n = a.guest.guests as usize;
    let trace = match (&a.trace_out, lockstep) {
        (None, _) => None,
        (Some(_), false) => {
            return Err(QemuError::Setup(
                "--trace-out needs --timing lockstep: free guests have no guest time to trace"
                    .into(),
            ))
        }
        (Some(o), true) => Some(io(trace_out::Recorder::new(o.clone(), n), || {
            format!("cannot write the trace {}", o.path.display())
        })?),
    };
    let board = match lockstep {
        true => {
            plugin_path(a)?;
            Some(io(board::Bridge::create(&files.board, n), || {
                format!("cannot make the slice board {}", files.board.display())
            })?)
        }
        false => None,
    };
    if let Some(cmd) = &a.run {
        let f = work.0.join("run.sh");
        let text = run_file(match start {
            Start::Save(..) => None,
            _ => Some(cmd),
        })?;
        io(std::fs::write(&f, text), || {
            format!("cannot write {}", f.display())
        })?;
        files.run = Some(f);
    }
    if let Some(dir) = &a.guest.share {
        files.share = Some(snapshot_share(dir, &work.0.join("share.erofs"))?);
    }
    let specs = (0..a.guest.guests)
        .map(|i| pb::NodeSpec {
            node_id: Some(a.first_node + i),
            mac: guest_mac(a.first_node + i).to_vec(),
            clock_hz: match a.guest.timing {
                Mode::Lockstep => lockstep_clock_hz(a.guest.icount_shift),
                Mode::Free => 0,
            },
        })
        .collect();
    let mut link = match &a.token {
        Some(token) => NodeLink::attach_with_token(&a.server, "nic-bridge", specs, token).await?,
        None => NodeLink::attach(&a.server, "nic-bridge", specs).await?,
    };
    let mut guests = Guests {
        reports: (0..a.guest.guests)
            .map(|i| GuestReport {
                guest: i,
                node: a.first_node + i,
                ip: guest_ip(i).to_string(),
                mac: guest_mac(a.first_node + i)
                    .map(|b| format!("{b:02x}"))
                    .join(":"),
                ..GuestReport::default()
            })
            .collect(),
        nics: (0..n).map(|_| None).collect(),
        tails: vec![Vec::new(); n],
        logs: io(
            (0..n)
                .map(|i| {
                    a.guest.logs.as_ref().map(|d| {
                        std::fs::create_dir_all(d)?;
                        std::fs::File::create(d.join(format!("guest-{i}.log")))
                    })
                })
                .map(|r| r.transpose())
                .collect::<std::io::Result<_>>(),
            || "cannot create the console logs".into(),
        )?,
    };
    let base_ns = match &start {
        Start::Restore(_, m) => {
            // The boot's reports: the guests are up, as they were saved.
            for (r, saved) in guests.reports.iter_mut().zip(&m.reports) {
                *r = GuestReport {
                    app: AppOutcome::default(),
                    ..saved.clone()
                };
            }
            watch(BridgeProgress::of(&guests.reports));
            m.base_ns
        }
        _ => 0,
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let mut plugins = Vec::with_capacity(n);
    for i in 0..n {
        let sync = lockstep.then_some(work.0.as_path());
        plugins.push(start_guest(a, i, sync, &files, &tx).await?);
    }
    if let Some(dir) = &files.incoming {
        let (work, dir) = (work.0.clone(), dir.clone());
        let mut loads = per_guest(n, move |i| {
            checkpoint::restore_guest(&qmp_socket(&work, i), &checkpoint::guest_file(&dir, i))
        });
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some((i, r)) = loads.recv().await {
                if let Err(e) = r {
                    let _ = tx.send(GuestEvent::RestoreFailed(i, e));
                }
            }
        });
    }
    let done_before: Vec<u32> = match &start {
        Start::Restore(..) => guests
            .reports
            .iter()
            .filter(|g| g.done_s.is_some())
            .map(|g| g.node)
            .collect(),
        _ => Vec::new(),
    };
    drop(tx);
    let set = GuestSet {
        a,
        watch,
        guests,
        rx,
        incoming: files.incoming.clone(),
        started: Instant::now(),
        cluster_at: None,
        milestones: BridgeProgress::default(),
        trace,
        measured_from: None,
        tcp: tcp::TcpWatch::default(),
    };
    let (ended, slices, set, overrun, used) = match board {
        None => {
            let mut run = FreeGuests { set };
            let (ended, slices) = drive(&mut link, &mut run, std::future::pending()).await?;
            (ended, slices, run.set, (0, 0, 0), None)
        }
        Some(board) => {
            let mut run = LockstepGuests {
                set,
                board,
                plugins,
                start,
                base_ns,
                idle: vec![0; n],
                delivered: vec![0; n],
                decoded: vec![0; n],
                round: 0,
                overrun: (0, 0, 0),
                save_asked: false,
                done_before,
                last_end: 0,
                used: None,
                boot_wall_s: 0.0,
            };
            let (ended, slices) = drive(&mut link, &mut run, std::future::pending()).await?;
            if let (Ended::Left(_), Start::Save(dir, id)) = (&ended, &run.start) {
                let m = save_guests(
                    dir,
                    id,
                    &work.0,
                    run.guest_ns(run.last_end),
                    &run.set.guests.reports,
                    run.boot_wall_s,
                )
                .await?;
                let reason = format!(
                    "saved the booted cluster in {} ({} MiB in {:.1} s)",
                    dir.display(),
                    m.bytes >> 20,
                    m.save_wall_s
                );
                run.used = Some(CheckpointUse::of(dir, &m, true, m.save_wall_s));
                let used = run.used;
                return Ok(outcome(
                    a,
                    run.set,
                    slices,
                    run.overrun,
                    used,
                    reason,
                    false,
                ));
            }
            (ended, slices, run.set, run.overrun, run.used)
        }
    };
    let (reason, error) = match ended {
        Ended::Shutdown(s) => (s.reason, s.error),
        Ended::Broken(e) => return Err(e.into()),
        Ended::Interrupted(sig) => (format!("interrupted by {sig}"), true),
        Ended::Left(_) => unreachable!("only a run that saves leaves"),
    };
    Ok(outcome(a, set, slices, overrun, used, reason, error))
}

/// The report of a run of `set` that ended after `slices` slices for
/// `reason` (an error when `error`), with its lock-step overruns (sum,
/// most, count, in guest cycles) and the checkpoint it `used`.
fn outcome(
    a: &Args,
    set: GuestSet,
    slices: u64,
    overrun: (u64, u64, u64),
    used: Option<CheckpointUse>,
    reason: String,
    error: bool,
) -> Outcome {
    let GuestSet {
        guests,
        started,
        trace,
        tcp,
        ..
    } = set;
    let (trace, reason, error) = match trace.map(|r| (r.path().to_path_buf(), r.finish())) {
        None => (None, reason, error),
        Some((_, Ok(t))) => (Some(t), reason, error),
        Some((path, Err(e))) => (
            None,
            format!("{reason}; cannot write the trace {}: {e}", path.display()),
            true,
        ),
    };
    let lockstep = a.guest.timing == Mode::Lockstep;
    let pingpong_rtt_us = bench_values(&guests.reports, "pingpong", |f| {
        Some(field(f, "elapsed_us")? / field(f, "rounds")?)
    })
    .reduce(f64::min);
    let a2a_us = bench_values(&guests.reports, "a2a", |f| field(f, "elapsed_us")).reduce(f64::max);
    let a2a_cycles = a2a_us
        .filter(|_| lockstep)
        .map(|us| (us * 1000.0) as u64 >> a.guest.icount_shift);
    let app = a.run.as_ref().map(|cmd| AppOutcome {
        command: cmd.clone(),
        ..guests.reports[0].app.clone()
    });
    let pings = guests.reports.iter().flat_map(|g| &g.pings);
    let rtts: Vec<f64> = pings.clone().filter_map(|p| p.rtt_avg_ms).collect();
    Outcome {
        mode: a.guest.timing,
        ping_sent: pings.clone().map(|p| p.sent).sum(),
        ping_received: pings.map(|p| p.received).sum(),
        rtt_avg_us: (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64 * 1e3),
        pingpong_rtt_us,
        a2a_us,
        a2a_cycles,
        guests: guests.reports,
        slices,
        wall_s: started.elapsed().as_secs_f64(),
        overrun_avg: overrun.0 as f64 / overrun.2.max(1) as f64,
        overrun_max: overrun.1,
        app,
        checkpoint: used,
        trace,
        tcp_segments: tcp.segments,
        tcp_retransmissions: tcp.retransmissions,
        reason,
        error,
    }
}

/// Saves every guest, paused at guest time `base_ns` by the board, in
/// `dir` (at most [`SAVING_AT_ONCE`] at a time), then writes the manifest
/// of identity `id` with their `reports`; each QEMU quits once saved.
///
/// # Errors
/// [`QemuError::Guest`] naming the guest whose save failed.
async fn save_guests(
    dir: &Path,
    id: &Identity,
    work: &Path,
    base_ns: u64,
    reports: &[GuestReport],
    boot_wall_s: f64,
) -> Result<Manifest, QemuError> {
    let started = Instant::now();
    let (work, into) = (work.to_path_buf(), dir.to_path_buf());
    let mut saves = per_guest(reports.len(), move |i| {
        checkpoint::save_guest(&qmp_socket(&work, i), &checkpoint::guest_file(&into, i))
    });
    let mut bytes = 0;
    while let Some((i, r)) = saves.recv().await {
        bytes += r.map_err(|e| {
            QemuError::Guest(format!(
                "guest {i} could not be saved in {}: {e}",
                dir.display()
            ))
        })?;
    }
    let m = Manifest {
        format: checkpoint::FORMAT,
        identity: id.clone(),
        base_ns,
        reports: reports.to_vec(),
        boot_wall_s,
        save_wall_s: started.elapsed().as_secs_f64(),
        bytes,
    };
    io(checkpoint::write_manifest(dir, &m), || {
        format!(
            "cannot write the checkpoint's manifest in {}",
            dir.display()
        )
    })?;
    Ok(m)
}

/// Guests saved, or restored, at the same time: each QEMU writes or reads
/// its file from its own thread, and the disk is shared.
const SAVING_AT_ONCE: usize = 4;

/// Runs `job(i)` for every guest `i` of `n` on blocking threads (QMP
/// sessions), at most [`SAVING_AT_ONCE`] at a time; each result, with its
/// guest, as it ends.
fn per_guest<T: Send + 'static>(
    n: usize,
    job: impl Fn(usize) -> Result<T, checkpoint::MigrationError> + Send + Sync + 'static,
) -> mpsc::UnboundedReceiver<(usize, Result<T, checkpoint::MigrationError>)> {
    let (done, results) = mpsc::unbounded_channel();
    let job = std::sync::Arc::new(job);
    let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(SAVING_AT_ONCE));
    for i in 0..n {
        let (job, limit, done) = (
            std::sync::Arc::clone(&job),
            std::sync::Arc::clone(&limit),
            done.clone(),
        );
        tokio::spawn(async move {
            let _turn = limit.acquire_owned().await;
            let r = tokio::task::spawn_blocking(move || job(i))
                .await
                .unwrap_or_else(|e| Err(checkpoint::MigrationError::Task(e.to_string())));
            let _ = done.send((i, r));
        });
    }
    results
}

/// Where a run's slice board goes: `/dev/shm` (memory, not disk), else
/// the run's directory.
fn board_path(work: &WorkDir) -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.join(format!("fsin-{}-board.shm", std::process::id()))
    } else {
        work.0.join("board.shm")
    }
}

/// This run's directory of plugin sockets and the command file, removed
/// when the run ends.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new() -> Result<Self, QemuError> {
        let d = std::env::temp_dir().join(format!("fsin-nic-bridge-{}", std::process::id()));
        io(std::fs::create_dir_all(&d), || {
            format!("cannot create {}", d.display())
        })?;
        Ok(Self(d))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fails when guest 0 has not brought the cluster up within
/// `--boot-timeout-s`, or not ended the `--run` command within
/// `--app-timeout` more, at `guest_s` seconds of guest time since the start:
/// an image whose /init never runs the command (or reports it) cannot hang
/// the run.
fn app_deadline(a: &Args, guests: &Guests, guest_s: f64) -> Result<(), QemuError> {
    let g = &guests.reports[0];
    let (limit, what) = if g.cluster_s.is_none() {
        (a.boot_timeout_s, "bring every guest up (FSIN-CLUSTER)")
    } else {
        (
            a.boot_timeout_s + a.guest.app_timeout + 60.0,
            "report the end of the command (FSIN-APP)",
        )
    };
    if guest_s > limit {
        return Err(QemuError::Guest(format!(
            "{} did not {what} within {limit:.0} s of guest time; last console lines:\n  {}",
            guests.describe(0),
            guests.tails[0].join("\n  ")
        )));
    }
    Ok(())
}

/// A numeric field of a benchmark result.
fn field(f: &HashMap<String, String>, key: &str) -> Option<f64> {
    f.get(key).and_then(|v| v.parse().ok())
}

/// `value` of every benchmark result of `kind` over the guests.
fn bench_values<'a>(
    reports: &'a [GuestReport],
    kind: &'a str,
    value: impl Fn(&HashMap<String, String>) -> Option<f64> + 'a,
) -> impl Iterator<Item = f64> + 'a {
    reports
        .iter()
        .flat_map(|g| &g.bench)
        .filter(move |(k, _)| k == kind)
        .filter_map(move |(_, f)| value(f))
}

/// Entry point of `nic-bridge` and `fsin nic-bridge`: runs [`run`] on a
/// single-threaded runtime and prints the outcome.
pub fn main_with(a: &Args) -> ExitCode {
    // On SIGINT, SIGTERM or SIGHUP the run is dropped: its QEMU processes
    // are killed (`kill_on_drop`) and its work directory removed.
    let interruptible = async {
        let stop = sync_client::signals::stop_requested();
        tokio::select! {
            r = run(a) => r,
            sig = stop => Err(QemuError::Interrupted(sig)),
        }
    };
    let result = match sync_client::block_on("nic-bridge", interruptible) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match result {
        Ok(o) => sync_client::print_outcome(&o, a.json, o.error, |o| {
            for g in &o.guests {
                for p in &g.pings {
                    eprintln!(
                        "guest {} -> {}: {}/{} replies, rtt avg {}",
                        g.guest,
                        p.peer,
                        p.received,
                        p.sent,
                        p.rtt_avg_ms.map_or("-".into(), |r| format!("{r:.3} ms"))
                    );
                }
            }
            eprintln!(
                "nic-bridge: {} slices in {:.1} s; {}",
                o.slices, o.wall_s, o.reason
            );
        }),
        Err(e) => {
            eprintln!("nic-bridge: error: {e}");
            if a.json {
                let reason = e.to_string().lines().next().unwrap_or_default().to_string();
                let line = BridgeLine::Failed {
                    error: true,
                    reason,
                };
                println!("{}", serde_json::to_string(&line).unwrap_or_default());
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsin_qemu_wire::ToPlugin;

    /// What `fsin qemu` reads back is what nic-bridge printed: an outcome
    /// with its guests and command, or the failure line.
    #[test]
    fn the_last_line_parses_back_typed() {
        let mut g = GuestReport::default();
        g.console("FSIN-UP 10.0.0.1 uptime=5.79");
        g.console("FSIN-PING 10.0.0.2 sent=3 received=2 rtt_avg_ms=0.748");
        g.console("FSIN-BENCH pingpong rounds=10 elapsed_us=5120");
        let o = Outcome {
            guests: vec![g],
            mode: Mode::Lockstep,
            ping_sent: 3,
            ping_received: 2,
            rtt_avg_us: Some(748.0),
            pingpong_rtt_us: Some(512.0),
            a2a_us: None,
            a2a_cycles: None,
            slices: 42,
            wall_s: 1.5,
            overrun_avg: 0.5,
            overrun_max: 3,
            app: Some(AppOutcome {
                command: "hostname".into(),
                exit_code: Some(0),
                guest_s: Some(0.25),
                output: "node0\n".into(),
                ..AppOutcome::default()
            }),
            checkpoint: Some(CheckpointUse {
                dir: "/tmp/ckpt".into(),
                saved: false,
                wall_s: 1.5,
                guest_s: 12.0,
                bytes: 1 << 20,
            }),
            trace: None,
            tcp_segments: 120,
            tcp_retransmissions: 3,
            reason: "every node finished its workload".into(),
            error: false,
        };
        let line = serde_json::to_string(&o).unwrap();
        assert_eq!(
            BridgeLine::parse(&line).unwrap(),
            BridgeLine::Ran(Box::new(o))
        );
        assert_eq!(
            BridgeLine::parse(r#"{"error":true,"reason":"no image"}"#).unwrap(),
            BridgeLine::Failed {
                error: true,
                reason: "no image".into()
            }
        );
        assert!(BridgeLine::parse("{}").is_err());
    }

    #[test]
    fn fatal_console_lines_are_told_from_the_commands_output() {
        let full = "sh: write error: No space left on device";
        assert!(fatal_condition(full).unwrap().contains("out of space"));
        let oom = "[   12.5] Out of memory: Killed process 97 (hpcc) total-vm:1000kB";
        assert!(fatal_condition(oom).unwrap().contains("out of memory"));
        let unpack = "[    0.9] Initramfs unpacking failed: write error";
        assert!(fatal_condition(unpack).unwrap().contains("initramfs"));
        assert_eq!(fatal_condition(&format!("FSIN-OUT {full}")), None);
        assert_eq!(fatal_condition("FSIN-UP 10.0.0.1 uptime=5.79"), None);
    }

    #[test]
    fn progress_lines_count_the_milestones_and_parse_back() {
        let mut reports = vec![GuestReport::default(), GuestReport::default()];
        assert_eq!(BridgeProgress::of(&reports), BridgeProgress::default());
        reports[1].console("FSIN-UP 10.0.0.2 uptime=4.10");
        reports[0].console("FSIN-UP 10.0.0.1 uptime=5.79");
        reports[0].console("FSIN-CLUSTER uptime=6.5");
        let p = BridgeProgress::of(&reports);
        assert_eq!(
            p,
            BridgeProgress {
                guests_up: 2,
                cluster_up: true,
                app_ended: false
            }
        );
        reports[0].console("FSIN-APP exit=0 guest_s=0.5");
        assert!(BridgeProgress::of(&reports).app_ended);
        let line = serde_json::to_string(&BridgeLine::Progress { progress: p }).unwrap();
        assert_eq!(
            line,
            r#"{"progress":{"guests_up":2,"cluster_up":true,"app_ended":false}}"#
        );
        assert_eq!(
            BridgeLine::parse(&line).unwrap(),
            BridgeLine::Progress { progress: p }
        );
    }

    #[test]
    fn console_records_are_parsed_after_escape_codes() {
        let mut g = GuestReport::default();
        g.console("Booting from ROM..\u{1b}[2J\u{1b}[0m.FSIN-UP 10.0.0.1 uptime=5.79");
        g.console("FSIN-PING 10.0.0.2 sent=3 received=2 rtt_avg_ms=0.748");
        g.console("FSIN-PING 10.0.0.3 sent=3 received=0 rtt_avg_ms=nan");
        g.console("[    7.37] reboot: Power down");
        g.console("FSIN-DONE uptime=6.93");
        assert_eq!(g.up_s, Some(5.79));
        assert_eq!(g.done_s, Some(6.93));
        assert_eq!(g.pings.len(), 2);
        assert_eq!(
            g.pings[0],
            PingResult {
                peer: "10.0.0.2".into(),
                sent: 3,
                received: 2,
                rtt_avg_ms: Some(0.748)
            }
        );
        assert_eq!(g.pings[1].received, 0);
        assert_eq!(g.pings[1].rtt_avg_ms, None);
    }

    /// A broken NIC stream of a QEMU that is exiting is reported as the
    /// exit, with the console lines that came meanwhile; without an exit
    /// within the grace period it stays a NIC error.
    #[tokio::test]
    async fn a_reset_nic_of_a_dying_guest_reports_its_exit() {
        use std::os::unix::process::ExitStatusExt;
        let mut guests = Guests {
            reports: (0..2)
                .map(|i| GuestReport {
                    guest: i,
                    node: i,
                    ..GuestReport::default()
                })
                .collect(),
            nics: vec![None, None],
            tails: vec![Vec::new(); 2],
            logs: vec![None, None],
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(GuestEvent::Frame(1, None, vec![0; 60])).unwrap();
        tx.send(GuestEvent::Console(1, "Kernel panic".into()))
            .unwrap();
        tx.send(GuestEvent::Exited(0, Ok(ExitStatus::from_raw(0))))
            .unwrap();
        tx.send(GuestEvent::Exited(1, Ok(ExitStatus::from_raw(9))))
            .unwrap();
        let status = exit_of(&mut rx, &mut guests, 1).await.expect("exit");
        let e = guests.ended(1, &status).to_string();
        assert!(e.contains("guest 1 (node 1"), "{e}");
        assert!(
            e.contains("ended before the run did (QEMU signal: 9"),
            "{e}"
        );
        assert!(e.ends_with("Kernel panic"), "{e}");
        let start = std::time::Instant::now();
        assert!(exit_of(&mut rx, &mut guests, 1).await.is_none());
        assert!(start.elapsed() >= EXIT_GRACE);
    }

    /// Lock-step through the plugin's socket: a slice's deliveries reach
    /// the plugin in order; the frames the guest sends come back with their
    /// guest times, before the round's end ([`GuestEvent::AllReached`]),
    /// and their bytes are counted ([`GuestEvent::Read`]); a frame shorter
    /// than an Ethernet header breaks the stream.
    #[tokio::test]
    async fn the_plugin_socket_carries_frames_both_ways_and_the_round_end_last() {
        use std::io::{Read, Write};
        let nic = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let nic_addr = nic.local_addr().unwrap();
        let dir = std::env::temp_dir().join(format!("fsin-bridge-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plugin.sock");
        let _ = std::fs::remove_file(&path);
        let sync = UnixListener::bind(&path).unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (slices_tx, slices_rx) = mpsc::unbounded_channel();
        let timeout = Duration::from_secs(5);
        tokio::spawn(guest_io(0, nic, Some(sync), slices_rx, timeout, tx));
        let qemu_nic = std::net::TcpStream::connect(nic_addr).unwrap();
        let mut qemu_plugin = std::os::unix::net::UnixStream::connect(&path).unwrap();
        assert!(matches!(rx.recv().await, Some(GuestEvent::Connected(0, _))));
        let mut msgs = Vec::new();
        ToPlugin::Deliver {
            at_ns: 8_000,
            frame: vec![9; 60],
        }
        .encode(&mut msgs);
        let expected = msgs.clone();
        slices_tx.send(msgs).unwrap();
        let (next_tx, next_rx) = std::sync::mpsc::channel::<()>();
        let vcpu = std::thread::spawn(move || {
            let mut got = vec![0u8; expected.len()];
            qemu_plugin.read_exact(&mut got).unwrap();
            assert_eq!(got, expected);
            let mut out = Vec::new();
            for k in 0..50u8 {
                FromPlugin::Sent {
                    at_ns: 8_000 + 8 * u64::from(k),
                    frame: vec![k; 60],
                }
                .encode(&mut out);
            }
            FromPlugin::AllReached { round: 7 }.encode(&mut out);
            qemu_plugin.write_all(&out).unwrap();
            // Then a frame of 3 bytes in the next slice.
            next_rx.recv().unwrap();
            out.clear();
            FromPlugin::Sent {
                at_ns: 90_000,
                frame: vec![1, 2, 3],
            }
            .encode(&mut out);
            qemu_plugin.write_all(&out).unwrap();
            (qemu_nic, qemu_plugin)
        });
        let (mut frames, mut read) = (0u8, 0);
        loop {
            match tokio::time::timeout(timeout, rx.recv()).await.unwrap() {
                Some(GuestEvent::Frame(0, at, f)) => {
                    assert_eq!(f, vec![frames; 60], "frame {frames}");
                    assert_eq!(at, Some(8_000 + 8 * u64::from(frames)));
                    frames += 1;
                }
                Some(GuestEvent::Read(0, k)) => read += k,
                Some(GuestEvent::AllReached(0, 7)) => break,
                _ => panic!("unexpected event"),
            }
        }
        assert_eq!(frames, 50, "every frame before the round's end");
        while read < 50 * (24 + 60) + 16 {
            match tokio::time::timeout(timeout, rx.recv()).await.unwrap() {
                Some(GuestEvent::Read(0, k)) => read += k,
                _ => panic!("unexpected event"),
            }
        }
        assert_eq!(read, 50 * (24 + 60) + 16, "every byte counted once");
        next_tx.send(()).unwrap();
        match tokio::time::timeout(timeout, rx.recv()).await.unwrap() {
            Some(GuestEvent::NicError(0, e)) => assert!(e.contains("frame length 3"), "{e}"),
            _ => panic!("a 3-byte frame must break the stream"),
        }
        drop(vcpu.join().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn application_records_are_parsed_and_output_is_bounded() {
        let mut g = GuestReport::default();
        g.console("FSIN-CLUSTER uptime=8.10");
        g.console("FSIN-OUT node0\r");
        g.console("FSIN-OUT   indented FSIN-DONE text");
        g.console("FSIN-OUT ");
        g.console("FSIN-APP exit=3 guest_s=2.577295 timed_out=0");
        assert_eq!(g.cluster_s, Some(8.1));
        assert_eq!(g.done_s, None, "a record inside the output is output");
        assert_eq!(g.app.output, "node0\n  indented FSIN-DONE text\n\n");
        assert_eq!(g.app.exit_code, Some(3));
        assert_eq!(g.app.guest_s, Some(2.577295));
        assert!(!g.app.timed_out);
        g.console("FSIN-APP exit=124 guest_s=2.0 timed_out=1");
        assert!(g.app.timed_out);
        g.console("FSIN-APP-ERROR no command: missing");
        assert_eq!(g.app.error.as_deref(), Some("no command: missing"));
        let mut big = GuestReport::default();
        for k in 0..2000 {
            big.console(&format!("FSIN-OUT line {k:04} \u{e9}"));
        }
        assert!(big.app.output.len() <= APP_OUTPUT_BYTES);
        assert!(big.app.output.ends_with("line 1999 \u{e9}\n"));
        assert!(
            big.app.output.len() > APP_OUTPUT_BYTES - 16,
            "the last 8 KiB kept"
        );
    }

    #[test]
    fn take_frames_keeps_partial_frames_and_rejects_bad_lengths() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&20u32.to_be_bytes());
        buf.extend_from_slice(&[7; 20]);
        buf.extend_from_slice(&30u32.to_be_bytes());
        buf.extend_from_slice(&[8; 10]);
        assert_eq!(take_frames(&mut buf).unwrap(), vec![vec![7; 20]]);
        assert_eq!(buf.len(), 14, "the partial second frame stays");
        let mut bad = 5u32.to_be_bytes().to_vec();
        bad.extend_from_slice(&[0; 5]);
        assert!(take_frames(&mut bad)
            .unwrap_err()
            .contains("frame length 5"));
    }

    #[test]
    fn node_cycles_become_guest_nanoseconds_or_never() {
        assert_eq!(cycle_ns(10_000, 3), 80_000);
        assert_eq!(cycle_ns(u64::MAX / 8, 3), u64::MAX / 8 * 8);
        assert_eq!(cycle_ns(u64::MAX / 8 + 1, 3), u64::MAX);
    }

    #[test]
    fn addresses_follow_the_node_and_guest_numbers() {
        assert_eq!(guest_mac(0x0102), [0x52, 0x54, 0, 0, 1, 2]);
        assert_eq!(guest_ip(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(guest_ip(249), Ipv4Addr::new(10, 0, 0, 250));
    }
}
