//! What a run reports: the guests' console records ([`GuestReport`], from
//! `crate::console`), the run's [`GuestsOutcome`], and the
//! lines `nic-bridge --json` prints ([`BridgeLine`]).

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::args::Mode;
use super::trace_out::TraceOutcome;
pub use crate::console::{AppOutcome, GuestReport, PingResult, APP_OUTPUT_BYTES};

/// What the guests measured of a run, the figures every report of it
/// shows: a field added here reaches `fsin qemu`'s JSON, text report and
/// `runs.csv` with no other edit, and one added to [`StudyFigures`] its
/// study's `study.csv` and summary table too (docs/architecture.md,
/// "Adding a report field").
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct GuestFigures {
    /// Pings sent, over all guests and peers.
    pub ping_sent: u32,
    /// Pings answered, over all guests and peers.
    pub ping_received: u32,
    /// Mean of the guests' mean round-trip times, microseconds of guest time.
    pub rtt_avg_us: Option<f64>,
    /// Benchmark (`--bench-bytes`): mean UDP ping-pong round trip between
    /// guests 0 and 1, guest microseconds (the lower of the two guests'
    /// means).
    pub pingpong_rtt_us: Option<f64>,
    /// Benchmark: the TCP all-to-all's completion time, guest microseconds
    /// (the slowest guest's).
    pub a2a_us: Option<f64>,
    /// `a2a_us` in node cycles (lock-step only).
    pub a2a_cycles: Option<u64>,
    /// Lock-step: by how many node cycles the guests overran the slice
    /// ends (0: the plugin's timer stops them at the exact instruction;
    /// an idle jump may leave guest time up to 2^N - 1 ns past it): mean
    /// over every guest and slice.
    pub overrun_avg: f64,
    /// Lock-step: the largest overrun of a slice end by a guest, node
    /// cycles.
    pub overrun_max: u64,
    /// The figures a study also averages (flattened into this object).
    #[serde(flatten)]
    pub study: StudyFigures,
}

/// The guests' figures that a study (`fsin qemu --vary`) also averages
/// over each value's repeats: counts of every run, each a number.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StudyFigures {
    /// TCP segments carrying data (or SYN, FIN) that the guests sent in
    /// the measured phase.
    pub tcp_segments: u64,
    /// Those among them that their TCP sent again (a retransmission:
    /// nothing beyond what that connection had sent).
    pub tcp_retransmissions: u64,
}

/// The adapter's result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuestsOutcome {
    /// Each guest's report from its console, guest 0 first.
    pub guests: Vec<GuestReport>,
    /// How guest time followed the network (`--timing`).
    pub mode: Mode,
    /// What the guests measured (flattened into this object).
    #[serde(flatten)]
    pub figures: GuestFigures,
    /// Slices the guests ran: the server's rounds that they ended with
    /// SliceDone (idle slices skipped in one round count once).
    pub slices: u64,
    /// Wall seconds from the start of the guests' QEMUs to the report.
    pub wall_s: f64,
    /// The `--run` command's result (guest 0), when one was given.
    pub app: Option<AppOutcome>,
    /// What the run did with `--checkpoint`'s directory, if given.
    pub checkpoint: Option<CheckpointUse>,
    /// What `--trace-out` wrote, if asked.
    pub trace: Option<TraceOutcome>,
    /// What `--timeline` wrote, if asked.
    #[serde(default)]
    pub timeline: Option<fsin_timeline::Written>,
    /// What `--trace-level mpi` wrote, if asked.
    #[serde(default)]
    pub mpi_trace: Option<super::mpi_in::MpiTraceOutcome>,
    /// The region of interest, with `--roi mpi|marker`.
    #[serde(default)]
    pub region: Option<RegionOutcome>,
    /// Where the run's wall time went.
    #[serde(default)]
    pub wall: WallSplit,
    /// Why the run ended (the server's Shutdown reason, or the fault).
    pub reason: String,
    /// The run failed: the server ended it with an error, a signal stopped
    /// it, or a trace or timeline could not be written (`reason` says so).
    pub error: bool,
}

/// The region of interest of a run (`--roi mpi|marker`; docs/qemu.md,
/// "The region of interest"): the measured phase, against the launch
/// before it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RegionOutcome {
    /// The region's kind (`--roi`): `mpi` or `marker`.
    pub roi: super::roi::Roi,
    /// Whether every rank's region began; if not, the whole run was
    /// warm-up and nothing was measured.
    pub began: bool,
    /// Ranks that told the host their region began.
    pub ranks: u32,
    /// The world's size, from the ranks' datagrams (none: no rank told
    /// it).
    pub world: Option<u32>,
    /// Node cycle at which the region, and the measured phase, began.
    pub from_cycle: Option<u64>,
    /// Guest seconds from the region's start until the last rank's region
    /// ended (`MPI_Finalize` entered, or `MPI_Pcontrol(0)`), else until
    /// the command ended (within a slice).
    pub guest_s: Option<f64>,
    /// Guest seconds of the command before the region (Open MPI's launch):
    /// its `guest_s` less the time from the region's start to its end.
    pub launch_guest_s: Option<f64>,
    /// Wall seconds from the command's start to the region's.
    pub launch_wall_s: Option<f64>,
    /// Wall seconds from the region's start to the command's end.
    pub region_wall_s: Option<f64>,
    /// Region datagrams that could not be read, with why (the first 8).
    pub refused: Vec<String>,
}

/// Where a run's wall time went (docs/qemu.md, "Where the time went"),
/// seconds, in order: they add up to the run's `wall_s`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WallSplit {
    /// Until the command started: the guests booted (until guest 0 saw
    /// every guest up) or restored (until each ran its first slice).
    pub start_s: f64,
    /// The launch in warm-up, from the command's start to the region's
    /// (`--roi mpi|marker`; 0 otherwise, and 0 when restored at the
    /// region's start).
    pub launch_s: f64,
    /// The measured command: from the region's start (the command's with
    /// `--roi command`) to the command's end.
    pub region_s: f64,
    /// From the command's end (or the last of the above) to the run's.
    pub end_s: f64,
    /// Slices (rounds) run in the measured command, the span of
    /// `region_s`.
    pub region_rounds: u64,
    /// Their rate: `region_rounds` over `region_s`, rounds per wall second
    /// (0 when `region_s` is).
    pub region_rounds_per_s: f64,
    /// This machine's futex floor for as many processes as guests: rounds
    /// per second of the bare barrier (`fsin_sync::floor`), which no round
    /// that wakes every guest can beat; `fsin qemu` measures it after a
    /// lock-step run, once per guest count (then cached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_rounds_per_s: Option<f64>,
    /// Guest seconds of the measured command (the span of `region_s`):
    /// the command's under `--roi command`, from the region's start to
    /// the command's end otherwise; `None` when no region began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_guest_s: Option<f64>,
    /// Instructions per wall second of one guest alone on this machine
    /// (a shell loop at slices of 2000:100000); `fsin qemu` measures it
    /// once per icount shift (then cached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_alone_ips: Option<f64>,
    /// The bound of `region_s` by the guests' own speed, wall seconds:
    /// every guest running every instruction of `region_guest_s` at
    /// `guest_alone_ips`, the guests shared by this machine's cores
    /// (guests x instructions / speed / cores). Optimistic where the
    /// guests' code runs slower than a shell loop, pessimistic where
    /// guests idle (idle time is skipped, not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guests_bound_s: Option<f64>,
}

/// What a run did with a checkpoint ([`Args::checkpoint`](super::Args::checkpoint)).
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

/// A line `nic-bridge --json` prints, for the program that started it
/// (`fsin qemu`): with `--progress-lines`, [`BridgeLine::Progress`] lines
/// while it runs; last, its [`GuestsOutcome`], or why it could not run
/// (`{"error": true, "reason": ...}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum BridgeLine {
    /// The run's outcome, the last line (`error` in it when the run
    /// failed).
    Ran(Box<GuestsOutcome>),
    /// Why the run could not start or go on ([`QemuError`](super::QemuError)),
    /// the last line.
    Failed {
        /// Always true.
        error: bool,
        /// The error's first line.
        reason: String,
    },
    /// The guests' milestones, whenever they change (`--progress-lines`).
    Progress {
        /// The milestones so far.
        progress: BridgeProgress,
    },
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

/// What a run tells its caller while it goes on (the `watch` of
/// [`run`](super::run)).
#[derive(Debug, Clone, PartialEq)]
pub enum BridgeEvent {
    /// The guests' milestones changed (a guest's NIC up, the cluster up,
    /// the command ended), or the guests were restored with theirs.
    Progress(BridgeProgress),
    /// `--checkpoint`'s directory holds no checkpoint of this run, for the
    /// reason given: the guests boot and are saved there, in up to
    /// `need_mib` MiB. Sent once, before the boot (which takes minutes).
    Booting {
        /// Why the directory holds no checkpoint of this run, for people.
        why: String,
        /// Host disk the guests' migration files may take, MiB.
        need_mib: u64,
    },
    /// The booted guests are being saved into `dir` (the run is over; the
    /// save takes seconds per guest).
    Saving {
        /// The checkpoint directory.
        dir: std::path::PathBuf,
    },
}

impl BridgeProgress {
    /// The milestones in `reports` (guest 0 first).
    pub(super) fn of(reports: &[GuestReport]) -> BridgeProgress {
        BridgeProgress {
            guests_up: reports.iter().filter(|g| g.up_s.is_some()).count() as u32,
            cluster_up: reports.first().is_some_and(|g| g.cluster_s.is_some()),
            app_ended: reports.first().is_some_and(|g| g.app.exit_code.is_some()),
        }
    }
}

/// A numeric field of a benchmark result.
pub(super) fn field(f: &HashMap<String, String>, key: &str) -> Option<f64> {
    f.get(key).and_then(|v| v.parse().ok())
}

/// `value` of every benchmark result of `kind` over the guests.
pub(super) fn bench_values<'a>(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What `fsin qemu` reads back is what nic-bridge printed: an outcome
    /// with its guests and command, or the failure line.
    #[test]
    fn the_last_line_parses_back_typed() {
        let mut g = GuestReport::default();
        g.console("FSIN-UP 10.0.0.1 uptime=5.79");
        g.console("FSIN-PING 10.0.0.2 sent=3 received=2 rtt_avg_ms=0.748");
        g.console("FSIN-BENCH pingpong rounds=10 elapsed_us=5120");
        let o = GuestsOutcome {
            guests: vec![g],
            mode: Mode::Lockstep,
            figures: GuestFigures {
                ping_sent: 3,
                ping_received: 2,
                rtt_avg_us: Some(748.0),
                pingpong_rtt_us: Some(512.0),
                a2a_us: None,
                a2a_cycles: Some(7),
                overrun_avg: 0.5,
                overrun_max: 3,
                study: StudyFigures {
                    tcp_segments: 120,
                    tcp_retransmissions: 3,
                },
            },
            slices: 42,
            wall_s: 1.5,
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
            timeline: None,
            mpi_trace: None,
            region: None,
            wall: WallSplit::default(),
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
}
