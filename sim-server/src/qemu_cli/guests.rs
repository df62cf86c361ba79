//! The QEMU guests of `fsin qemu` as a session's adapter ([`Guests`]): the
//! bridge that runs them, on a thread of its own, and what they add to the
//! server's report ([`GuestsReport`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fsin::config::SyncMode;
use fsin::figures::Figures;
use fsin_cosim::report::CosimReport;
use fsin_cosim::session::{Adapter, EndedEarly};
use qemu_adapter::apps::App;
use qemu_adapter::qemu::{
    AppOutcome, BridgeEvent, BridgeProgress, CheckpointUse, GuestFigures, GuestReport,
    GuestsOutcome, Mode, QemuError, RegionOutcome, WallSplit,
};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

/// What `fsin qemu` adds to the server's report (its JSON keys beside the
/// report's): the guests, and what they measured or why they failed.
#[derive(Debug, Serialize)]
pub(super) struct GuestsReport {
    /// Guests run.
    guests: u32,
    /// Why the guests' run failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) guest_fault: Option<String>,
    /// Why the guests stopped when a signal ended the run (no guest's
    /// fault): for the text report.
    #[serde(skip)]
    stopped: Option<String>,
    /// Lines the command adds after the guests' in the text report.
    #[serde(skip)]
    pub(super) notes: String,
    #[serde(flatten)]
    pub(super) ran: Option<GuestsRan>,
}

/// What the bridge measured of guests that ran (its [`GuestsOutcome`]).
#[derive(Debug, Serialize)]
pub(super) struct GuestsRan {
    /// The server's synchronisation, beside the guests' timing (`mode`).
    sync_mode: SyncMode,
    mode: Mode,
    #[serde(flatten)]
    pub(super) figures: GuestFigures,
    guest_reports: Vec<GuestReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint: Option<CheckpointUse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) app: Option<AppReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<qemu_adapter::qemu::trace_out::TraceOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline: Option<fsin::timeline::Written>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) mpi_trace: Option<qemu_adapter::qemu::mpi_in::MpiTraceOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) region: Option<RegionOutcome>,
    /// Where the run's wall time went (`wall` in the report).
    pub(super) wall: WallSplit,
}

impl GuestsRan {
    /// The report of guests that ran with `outcome` under a server in
    /// `sync_mode`, the command of guest 0 being the named application
    /// `app` (when one).
    fn of(outcome: GuestsOutcome, sync_mode: SyncMode, app: Option<App>) -> GuestsRan {
        // Every field named: a new one in GuestsOutcome does not compile until
        // the report says where it goes (a new figure goes in GuestFigures).
        let GuestsOutcome {
            guests,
            mode,
            figures,
            slices: _,
            wall_s: _,
            app: ran,
            checkpoint,
            trace,
            timeline,
            mpi_trace,
            region,
            wall,
            reason: _,
            error: _,
        } = outcome;
        GuestsRan {
            sync_mode,
            mode,
            figures,
            guest_reports: guests,
            checkpoint,
            app: ran.map(|outcome| AppReport {
                name: app.map(App::name),
                results: app.map(|named| named.results(&outcome.output)),
                outcome,
            }),
            trace,
            timeline,
            mpi_trace,
            region,
            wall,
        }
    }
}

/// Guest 0's command: what it did, and for `--app` the application's name
/// and results.
#[derive(Debug, Serialize)]
pub(super) struct AppReport {
    #[serde(flatten)]
    pub(super) outcome: AppOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) results: Option<Value>,
}

impl GuestsReport {
    /// The command's exit code: `Some(code)` when a command ran and
    /// ended.
    pub(super) fn app_exit(&self) -> Option<i32> {
        self.app()?.outcome.exit_code
    }

    /// The run booted the guests and saved them (`--checkpoint`).
    pub(super) fn saved(&self) -> bool {
        let checkpoint = self.ran.as_ref().and_then(|r| r.checkpoint.as_ref());
        checkpoint.is_some_and(|c| c.saved)
    }

    /// The command ended without its region beginning (`--roi
    /// mpi|marker`): the whole run was warm-up.
    pub(super) fn region_never_began(&self) -> bool {
        let ran = self.ran.as_ref();
        let region = ran.and_then(|r| r.region.as_ref());
        region.is_some_and(|g| !g.began) && self.app_exit().is_some()
    }

    /// The region's guest seconds, when one began (`--roi mpi|marker`).
    pub(super) fn region_guest_s(&self) -> Option<f64> {
        let region = self.ran.as_ref()?.region.as_ref()?;
        region.guest_s.filter(|_| region.began)
    }

    /// The guest's command, when it ran.
    pub(super) fn app(&self) -> Option<&AppReport> {
        self.ran.as_ref()?.app.as_ref()
    }

    /// The text report's lines about the guests, after the server's.
    pub(super) fn text(&self) -> String {
        let mut text = self.ran_text();
        text.push_str(&self.notes);
        text
    }

    fn ran_text(&self) -> String {
        if let Some(fault) = &self.guest_fault {
            return format!("guest fault: {fault}\n");
        }
        if let Some(why) = &self.stopped {
            return format!("guests: stopped: {why}\n");
        }
        let Some(b) = &self.ran else {
            return String::new();
        };
        let f = &b.figures;
        let mut lines = format!(
            "guests: {} pings sent, {} answered, mean RTT {} us (guest-measured)\n",
            f.ping_sent,
            f.ping_received,
            f.rtt_avg_us.map_or("-".into(), |r| format!("{r:.1}"))
        );
        lines.push_str(
            &Figures::of(f)
                .unwrap_or_default()
                .lines_except(GUESTS_SHOWN),
        );
        if let Some(c) = &b.checkpoint {
            lines.push_str(&if c.saved {
                format!(
                    "checkpoint: saved the booted guests in {} ({} MiB, {:.1} s)\n",
                    c.dir.display(),
                    c.bytes >> 20,
                    c.wall_s
                )
            } else {
                format!(
                    "checkpoint: restored the guests from {} in {:.1} s (saved at {:.3} guest s)\n",
                    c.dir.display(),
                    c.wall_s,
                    c.guest_s
                )
            });
        }
        if let Some(app) = &b.app {
            lines.push_str(&app_text(app));
        }
        if let Some(r) = &b.region {
            lines.push_str(&region_text(r));
        }
        let w = &b.wall;
        let floor = w.floor_rounds_per_s.map_or(String::new(), |f| {
            format!(
                "; the futex floor for {} processes: {f:.0} rounds/s",
                b.guest_reports.len()
            )
        });
        let bound = w.guests_bound_s.zip(w.guest_alone_ips).map_or(String::new(), |(b, ips)| {
            format!(
                "; at the guests' own speed at least {b:.2} s, here {:.2} times that (one guest alone: {:.0} M instructions/s)",
                w.region_s / b,
                ips / 1e6
            )
        });
        lines.push_str(&format!(
            "wall time: {:.1} s to start the command, {:.1} s of launch in warm-up, {:.1} s measured ({} rounds, {:.0} rounds/s{floor}{bound}), {:.1} s to end\n",
            w.start_s, w.launch_s, w.region_s, w.region_rounds, w.region_rounds_per_s, w.end_s
        ));
        if let Some(t) = &b.mpi_trace {
            let calls: u64 = t.calls.values().sum();
            let span = |f: fn(f64, f64) -> f64| t.rank_s.iter().copied().reduce(f).unwrap_or(0.0);
            lines.push_str(&format!(
                "MPI trace: {} ({} ranks, {calls} calls; {:.6}-{:.6} guest s per rank from MPI_Init to MPI_Finalize)\n",
                t.path.display(),
                t.ranks,
                span(f64::min),
                span(f64::max),
            ));
            lines.push_str(&format!("  replay: {}\n", t.replay));
        }
        lines
    }
}

/// The text report's lines about the region of interest (`--roi`).
fn region_text(r: &RegionOutcome) -> String {
    let s = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.6}"));
    let w = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
    let mut text = if r.began {
        format!(
            "region ({:?}): began at node cycle {} with {} ranks; region {} guest s in {} wall s, launch before it {} guest s in {} wall s\n",
            r.roi,
            r.from_cycle.unwrap_or(0),
            r.ranks,
            s(r.guest_s),
            w(r.region_wall_s),
            s(r.launch_guest_s),
            w(r.launch_wall_s),
        )
    } else {
        format!(
            "region ({:?}): never began ({} of {} ranks told the host): the whole run was warm-up, nothing was measured\n",
            r.roi,
            r.ranks,
            r.world.map_or("?".into(), |n| n.to_string()),
        )
    };
    for why in &r.refused {
        text.push_str(&format!("  refused: {why}\n"));
    }
    text
}

/// The guests' figures that [`GuestsReport::text`]'s own first line shows;
/// the others follow it, one line each.
const GUESTS_SHOWN: &[&str] = &["ping_sent", "ping_received", "rtt_avg_us"];

/// The text report's lines about the application.
fn app_text(app: &AppReport) -> String {
    let o = &app.outcome;
    let what = match app.name {
        Some(named) => format!("--app {named}"),
        None => o.command.clone(),
    };
    let mut s = format!(
        "application: {}\n  exit code {}, {} guest s, {} wall s{}\n",
        what.lines().next().unwrap_or_default(),
        o.exit_code
            .map_or("- (did not end)".into(), |c| c.to_string()),
        o.guest_s.map_or("-".into(), |s| format!("{s:.6}")),
        o.wall_s.map_or("-".into(), |s| format!("{s:.1}")),
        if o.timed_out {
            " (timed out: killed after --app-timeout)"
        } else {
            ""
        }
    );
    s.push_str("  output (last 8 KiB):\n");
    for l in o.output.lines() {
        s.push_str("  | ");
        s.push_str(l);
        s.push('\n');
    }
    if let Some(Value::Object(r)) = &app.results {
        match r.get("points").and_then(Value::as_array) {
            Some(points) => s.push_str(&format!("  results: {} points", points.len())),
            None => s.push_str(&format!("  results: {} values", r.len())),
        }
        for k in [
            "latency_us",
            "max_mbps",
            "HPL_Tflops",
            "AvgPingPongLatency_usec",
        ] {
            if let Some(v) = r.get(k).filter(|v| !v.is_null()) {
                s.push_str(&format!(", {k} {v}"));
            }
        }
        s.push('\n');
    }
    s
}

/// What the bridge's thread gives back: `None` when it was stopped, or
/// had no runtime to run on (the error).
type BridgeResult = std::io::Result<Option<Result<GuestsOutcome, QemuError>>>;

/// How long the bridge has to end after the server's run ended.
const BRIDGE_END: Duration = Duration::from_secs(30);

/// The guests of one `fsin qemu` run: the bridge (nic-bridge's library)
/// on a thread of its own with a runtime of its own, as `fsin nic-bridge`
/// runs in a process of its own: its guests' lock-step channels block.
pub(super) struct Guests {
    /// The bridge's arguments (its server URL is set at start).
    pub(super) bridge: qemu_adapter::qemu::Args,
    /// Where the bridge publishes its milestones, for the progress line.
    pub(super) milestones: Arc<Mutex<BridgeProgress>>,
    /// The named application of guest 0, for its results.
    pub(super) app: Option<App>,
    /// Dropped (or sent) to stop the bridge: its QEMU processes die with
    /// it.
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<Result<BridgeResult, oneshot::error::RecvError>>>,
}

/// The bridge could not start or end.
#[derive(Debug, thiserror::Error)]
pub(super) enum GuestsError {
    #[error("cannot start the bridge's thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("nic-bridge did not end within {} s of the end of the run", BRIDGE_END.as_secs())]
    NoEnd,
    #[error("the bridge's thread ended without a result")]
    Lost,
    #[error("the bridge has no runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("the bridge stopped")]
    Stopped,
}

impl Guests {
    pub(super) fn new(
        bridge: qemu_adapter::qemu::Args,
        milestones: Arc<Mutex<BridgeProgress>>,
        app: Option<App>,
    ) -> Guests {
        Guests {
            bridge,
            milestones,
            app,
            stop: None,
            done: None,
        }
    }
}

impl Adapter for Guests {
    type Report = GuestsReport;
    type Error = GuestsError;

    fn start(&mut self, url: &str) -> Result<EndedEarly, GuestsError> {
        let mut bridge = self.bridge.clone();
        bridge.server = url.to_string();
        let (stop, stopped) = oneshot::channel::<()>();
        let (done_tx, done_rx) = oneshot::channel();
        let watched = Arc::clone(&self.milestones);
        std::thread::Builder::new()
            .name("nic-bridge".into())
            .spawn(move || {
                // fsin qemu says itself why it boots (`run_from`).
                let watch = |event| match event {
                    BridgeEvent::Progress(p) => {
                        *watched.lock().unwrap_or_else(|e| e.into_inner()) = p;
                    }
                    BridgeEvent::Saving { dir } => {
                        eprintln!("fsin qemu: saving the booted guests in {}", dir.display());
                    }
                    BridgeEvent::Booting { .. } => {}
                };
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let ran: BridgeResult = runtime.map(|rt| {
                    rt.block_on(async {
                        tokio::select! {
                            r = qemu_adapter::qemu::run(&bridge, &watch) => Some(r),
                            _ = stopped => None,
                        }
                    })
                });
                let _ = done_tx.send(ran);
            })
            .map_err(GuestsError::Thread)?;
        // A bridge that ends before the run does (e.g. refused to attach)
        // ends the run instead of leaving the server waiting for it.
        let (gone_tx, gone_rx) = oneshot::channel::<()>();
        self.done = Some(tokio::spawn(async move {
            let ran = done_rx.await;
            let _ = gone_tx.send(());
            ran
        }));
        self.stop = Some(stop);
        Ok(Box::pin(async move {
            let _ = gone_rx.await;
            "nic-bridge exited before the run ended".to_string()
        }))
    }

    async fn finish(mut self, run: &CosimReport) -> Result<GuestsReport, GuestsError> {
        let done = self.done.take().ok_or(GuestsError::Lost)?;
        let Ok(done) = tokio::time::timeout(BRIDGE_END, done).await else {
            return Err(GuestsError::NoEnd);
        };
        let bridge = done
            .map_err(|_| GuestsError::Lost)?
            .map_err(|_| GuestsError::Lost)?
            .map_err(GuestsError::Runtime)?
            .ok_or(GuestsError::Stopped)?;
        let mut report = GuestsReport {
            guests: self.bridge.guest.guests,
            guest_fault: None,
            stopped: None,
            notes: String::new(),
            ran: None,
        };
        match bridge {
            Err(e) => {
                eprintln!("nic-bridge: error: {e}");
                let reason = e.to_string().lines().next().unwrap_or_default().to_string();
                report.guest_fault = Some(reason);
            }
            // Stopped by a signal: no guest's fault.
            Ok(b) if b.error && run.end_reason.starts_with("interrupted by") => {
                report.stopped = Some(b.reason);
            }
            Ok(b) if b.error => report.guest_fault = Some(b.reason),
            Ok(b) => {
                report.ran = Some(GuestsRan::of(b, run.mode, self.app));
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qemu_adapter::qemu::StudyFigures;

    /// The text report names every figure of the guests: its first line
    /// the pings, a line each for the others (a figure added to
    /// `GuestFigures` shows up with no edit here).
    #[test]
    #[allow(
        clippy::needless_update,
        reason = "a figure added to GuestFigures takes its default here"
    )]
    fn the_text_names_every_figure_of_the_guests() {
        let figures = GuestFigures {
            ping_sent: 4,
            ping_received: 3,
            rtt_avg_us: Some(250.5),
            pingpong_rtt_us: Some(512.0),
            a2a_us: None,
            a2a_cycles: Some(9),
            overrun_avg: 0.25,
            overrun_max: 7,
            study: StudyFigures {
                tcp_segments: 120,
                tcp_retransmissions: 3,
                ..StudyFigures::default()
            },
            ..GuestFigures::default()
        };
        let outcome = GuestsOutcome {
            guests: vec![GuestReport::default()],
            mode: Mode::Lockstep,
            figures: figures.clone(),
            slices: 10,
            wall_s: 1.0,
            app: None,
            checkpoint: None,
            trace: None,
            timeline: None,
            mpi_trace: None,
            region: None,
            wall: WallSplit::default(),
            reason: "every node finished its workload".into(),
            error: false,
        };
        let report = GuestsReport {
            guests: 1,
            guest_fault: None,
            stopped: None,
            notes: String::new(),
            ran: Some(GuestsRan::of(outcome, SyncMode::Lockstep, None)),
        };
        let text = report.text();
        assert!(
            text.starts_with("guests: 4 pings sent, 3 answered, mean RTT 250.5 us"),
            "{text}"
        );
        assert!(text.contains("  tcp retransmissions 3\n"), "{text}");
        assert!(text.contains("  overrun avg       0.2500\n"), "{text}");
        let all = Figures::of(&figures).unwrap();
        assert_eq!(
            all.uncovered(GUESTS_SHOWN, &text),
            Vec::<String>::new(),
            "{text}"
        );
    }
}
