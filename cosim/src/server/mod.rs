//! The gRPC service `fsin.v1.CoSim` and the coordinator behind it.
//!
//! Every client stream gets a reader task that forwards its messages, in
//! order, to one coordinator task; the coordinator alone owns the network
//! ([`Coupler`]), so the run is deterministic whatever the interleaving of
//! clients: frames of a slice are sorted before injection, and nothing
//! depends on arrival order across clients.
//!
//! Per slice k (Simics paper, section 4): the coordinator waits until every
//! live client has sent `SliceDone(k)` (the barrier), runs the network for
//! slice k (lock-step and exact modes) or collects the network's slice k that
//! ran meanwhile (parallel mode), then sends `Continue(k+1)` to every client
//! at once with the frames that reach its nodes during slice k+1. A client
//! that closes its stream without `Detach`, sends a malformed message, or
//! does not finish a slice within `node_timeout` is a fault: named in the
//! log and the report, then the run ends (statistics kept) or goes on
//! without it.
//!
//! Quiet rounds (nothing sent, nothing to deliver) may use a fast path
//! instead of the stream (crate `fsin-sync`: datagrams, `DatagramSync` in
//! `sync.proto`, and the shared-memory barrier, `ShmBarrier`): the barrier
//! then also takes the SliceDones the path heard, and Continue goes back
//! the way each SliceDone came.
//!
//! The coordinator's state is split by owner: [`edge`] (the tonic service
//! and the events it hands over), [`roster`] (clients, nodes, attach,
//! faults), [`barrier`] (rounds, fast paths, Continue, idle skips),
//! [`inbox`] (what a slice's messages do), [`control`] (control requests and
//! the slice ratio), [`reporting`] (the report) and [`end`] (why a run ends
//! or a client fails). The NIC queue rule belongs to the coupler
//! ([`crate::coupler::Admission`]).

mod barrier;
mod control;
mod edge;
mod end;
mod inbox;
mod reporting;
mod roster;
mod timeline;

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use fsin_proto::v1::co_sim_server::CoSimServer;
use fsin_proto::v1::{self as pb};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tonic::transport::server::TcpIncoming;

use self::barrier::Barrier;
use self::control::{control_error, Control};
use self::edge::{Event, Service, EVENTS};
use self::end::End;
use self::inbox::{Inbox, Intake};
use self::reporting::ReportParts;
use self::roster::Roster;
use self::timeline::SliceTimeline;
use super::coupler::{Coupler, Slice};
use super::progress::CosimPhase;
use super::report::CosimReport;
use super::ServeOptions;
use fsin::config::{SliceRatio, SyncMode};

/// The pcap capture of a run.
type Capture = fsin_frames::pcap::Capture<std::io::BufWriter<std::fs::File>>;

/// Errors that stop `serve` before any slice could run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The `--pcap` file cannot be created.
    #[error("cannot open the pcap capture {path}: {source}")]
    Pcap {
        /// The file.
        path: String,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The UDP socket of the datagram synchronisation cannot be opened.
    #[error("cannot open the datagram (UDP) synchronisation socket: {0}")]
    Datagram(std::io::Error),
    /// The listening socket fails to accept connections.
    #[error("cannot accept connections on the listening socket: {0}")]
    Incoming(Box<dyn std::error::Error + Send + Sync>),
    /// The gRPC server fails.
    #[error("the gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// `--timeline`'s file cannot be created.
    #[error(transparent)]
    Timeline(#[from] fsin::timeline::TimelineError),
    /// The node simulators' placement (the error follows as its source).
    #[error("placement")]
    Placement(#[from] fsin::traffic::placement::PlacementError),
}

/// Serves one co-simulation run on `listener` and returns its report once
/// the run ends (every node finished, the slice limit, a control shutdown,
/// a fault, or `interrupt` completing with the reason for the report, e.g.
/// "interrupted by SIGTERM").
///
/// # Errors
/// [`ServeError`] when the placement cannot place every node simulator,
/// the pcap file cannot be created or the gRPC server fails; faults of
/// nodes are not errors but end up in the report.
pub async fn serve(
    opts: ServeOptions,
    listener: TcpListener,
    interrupt: impl Future<Output = String> + Send + 'static,
) -> Result<CosimReport, ServeError> {
    // Refused before any node attaches: the node simulators' placement.
    let c = &opts.config;
    fsin::traffic::placement::nodes_of_simulators(
        &c.traffic.app.placement,
        &c.net.dims,
        c.net.rseed,
    )?;
    let (events_tx, events) = mpsc::channel(EVENTS);
    let fast = if opts.datagram_sync {
        let ip = listener.local_addr().map_err(ServeError::Datagram)?.ip();
        let addr = std::net::SocketAddr::new(ip, opts.datagram_port);
        Some(fsin_sync::Server::bind(addr, opts.multicast).map_err(ServeError::Datagram)?)
    } else {
        None
    };
    let capture = match &opts.pcap {
        None => None,
        Some(path) => {
            let pcap_error = |e: Box<dyn std::error::Error + Send + Sync>| ServeError::Pcap {
                path: path.display().to_string(),
                source: e,
            };
            let file = std::fs::File::create(path).map_err(|e| pcap_error(Box::new(e)))?;
            let cap = fsin_frames::pcap::Capture::new(
                std::io::BufWriter::new(file),
                opts.config.cosim.node_clock_hz,
            )
            .map_err(|e| pcap_error(Box::new(e)))?;
            Some(cap)
        }
    };
    let timeline = (opts.timeline.as_ref())
        .map(|t| SliceTimeline::new(t, opts.nodes))
        .transpose()?;
    let interrupts = events_tx.clone();
    let watcher = tokio::spawn(async move {
        let why = interrupt.await;
        let _ = interrupts.send(Event::Interrupt(why)).await;
    });
    let service = Service {
        events: events_tx,
        next_client: AtomicU64::new(0),
    };
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    // `Server::tcp_nodelay` applies only to listeners tonic binds itself: an
    // accepted stream without TCP_NODELAY waits for delayed ACKs (40 ms per
    // slice on Linux).
    let incoming =
        TcpIncoming::from_listener(listener, true, None).map_err(ServeError::Incoming)?;
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CoSimServer::new(service))
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stop_rx.await;
            }),
    );
    let report = Coordinator::new(opts, events, capture, fast, timeline)
        .run()
        .await;
    watcher.abort();
    let _ = stop_tx.send(());
    // Clients close their streams on Shutdown; do not wait for ones that
    // do not.
    if let Ok(Ok(Err(e))) = tokio::time::timeout(Duration::from_secs(2), server).await {
        return Err(e.into());
    }
    Ok(report)
}

/// The network: with the coordinator, or running a slice (parallel mode).
enum Net {
    Ready(Box<Coupler>),
    Running(tokio::task::JoinHandle<Box<Coupler>>),
}

/// The one task that owns a run: its parts, each the one owner of its
/// state.
struct Coordinator {
    opts: ServeOptions,
    events: mpsc::Receiver<Event>,
    capture: Option<Capture>,
    roster: Roster,
    barrier: Barrier,
    control: Control,
    intake: Intake,
    started: Instant,
    timeline: Option<SliceTimeline>,
}

impl Coordinator {
    fn new(
        opts: ServeOptions,
        events: mpsc::Receiver<Event>,
        capture: Option<Capture>,
        fast: Option<fsin_sync::Server>,
        timeline: Option<SliceTimeline>,
    ) -> Self {
        Coordinator {
            events,
            capture,
            roster: Roster::new(opts.nodes, opts.on_fault),
            barrier: Barrier::new(fast),
            control: Control::new(&opts),
            intake: Intake::default(),
            started: Instant::now(),
            timeline,
            opts,
        }
    }

    async fn run(mut self) -> CosimReport {
        if let Err(end) = self.attach_all().await {
            return self.end_early(end);
        }
        let mut coupler = match Coupler::new(&self.opts.config, self.roster.mac_table()) {
            Ok(c) => c,
            Err(e) => return self.end_early(End::Network(e.to_string())),
        };
        if let Some(cap) = self.capture.take() {
            coupler.set_capture(cap);
        }
        if self.opts.measure_overhead {
            coupler.record_injections();
        }
        if self.timeline.is_some() || self.opts.counters.is_some() {
            coupler.record_counters();
        }
        self.welcome();
        self.started = Instant::now();
        let (end, coupler, last) = self.slices(Box::new(coupler)).await;
        self.shut_down(&end);
        tracing::info!("Continues sent: {}", self.barrier.sent);
        let report = self.report_parts().report(Some(coupler), &end, Some(last));
        self.with_timeline(report)
    }

    /// `report` with what the timeline wrote, or why it could not.
    fn with_timeline(&mut self, mut report: CosimReport) -> CosimReport {
        match self.timeline.take().map(SliceTimeline::finish) {
            Some(Ok(written)) => report.timeline = Some(written),
            Some(Err(e)) => {
                tracing::error!("{e}");
                report.ok = false;
                report.end_reason = format!("{}; {e}", report.end_reason);
            }
            None => {}
        }
        report
    }

    /// Tells every client that the run ends, and why.
    fn shut_down(&mut self, end: &End) {
        self.opts.status.set_phase(CosimPhase::Ended);
        self.roster.broadcast_shutdown(&end.to_string(), !end.ok());
        self.barrier.shutdown();
    }

    /// The report of a run that ended before its first slice.
    fn end_early(&mut self, end: End) -> CosimReport {
        self.shut_down(&end);
        let report = self.report_parts().report(None, &end, None);
        self.with_timeline(report)
    }

    fn report_parts(&self) -> ReportParts<'_> {
        ReportParts {
            opts: &self.opts,
            roster: &self.roster,
            barrier: &self.barrier,
            control: &self.control,
            started: self.started,
        }
    }

    /// Waits until every node has a client, or the attach timeout.
    async fn attach_all(&mut self) -> Result<(), End> {
        let deadline = tokio::time::Instant::now() + self.opts.attach_timeout;
        loop {
            let missing = self.roster.missing();
            if missing.is_empty() {
                break;
            }
            let nodes = self.roster.nodes();
            self.opts
                .status
                .set_attached((nodes - missing.len()) as u64);
            let ev = tokio::select! {
                ev = self.events.recv() => ev,
                () = tokio::time::sleep_until(deadline) => {
                    let end = End::AttachTimeout {
                        secs: self.opts.attach_timeout.as_secs_f64(),
                        nodes,
                        missing,
                    };
                    tracing::error!("{end}");
                    return Err(end);
                }
            };
            match ev {
                Some(Event::Attach {
                    client,
                    attach,
                    out,
                }) => self.roster.attach(client, attach, out, &self.opts),
                Some(Event::Closed { client, error }) => self.roster.left_early(client, error),
                Some(Event::Msg { client, .. }) => {
                    self.roster.reject(client, "message before the run started");
                }
                Some(Event::Control { reply, .. }) => {
                    let _ = reply.send(control_error("the run has not started yet"));
                }
                Some(Event::Interrupt(why)) => {
                    return Err(End::Interrupted {
                        why,
                        attaching: true,
                    })
                }
                None => return Err(End::StoppedAttaching),
            }
        }
        self.opts.status.set_attached(self.roster.nodes() as u64);
        Ok(())
    }

    /// Opens the fast paths and sends every client its Welcome.
    fn welcome(&mut self) {
        let ids: Vec<u64> = self.roster.clients.keys().copied().collect();
        self.barrier.start(&ids, self.opts.shared_memory);
        let cfg = &self.opts.config;
        let template = pb::Welcome {
            nodes: Vec::new(),
            all_nodes: Vec::new(),
            clock_hz: cfg.cosim.node_clock_hz,
            mode: match cfg.cosim.sync_mode {
                SyncMode::Lockstep => pb::SyncMode::Lockstep,
                SyncMode::Parallel => pb::SyncMode::Parallel,
                SyncMode::Exact => pb::SyncMode::Exact,
            } as i32,
            datagram: None,
        };
        let barrier = &self.barrier;
        self.roster.welcome(template, |id, w| barrier.offer(id, w));
    }

    // ----- Slices ---------------------------------------------------------

    /// The slice loop: one round per slice until the run ends. Gives why,
    /// the network and the last slice.
    async fn slices(&mut self, mut coupler: Box<Coupler>) -> (End, Box<Coupler>, Slice) {
        let parallel = self.opts.config.cosim.sync_mode == SyncMode::Parallel;
        if std::mem::take(&mut self.control.start_measure) {
            coupler.start_measure();
        }
        let SliceRatio {
            node: node_cycles,
            net: net_cycles,
        } = self.next_lengths(&coupler);
        let mut slice = Slice {
            node_start: 0,
            node_cycles,
            net_start: 0,
            net_cycles,
        };
        self.intake.admission = coupler.admission();
        let phase = CosimPhase::running(coupler.measuring());
        self.opts.status.set_phase(phase);
        let mut net = if parallel {
            Net::Running(spawn_slice(coupler, slice, Vec::new(), 0))
        } else {
            Net::Ready(coupler)
        };
        self.send_continue(&slice, Vec::new());
        loop {
            let end = self.wait_barrier(slice).await;
            if let Some(t) = &mut self.timeline {
                t.met(&self.roster, self.barrier.slice_index);
            }
            let mut frames = std::mem::take(&mut self.intake.frames);
            let mut coupler = match net {
                Net::Ready(c) => c,
                Net::Running(h) => h.await.expect("network slice panicked"),
            };
            if !parallel {
                coupler.run_slice(slice, &mut frames, 0);
            }
            self.settle(&mut coupler, slice);
            self.pass_counters(&mut coupler);
            if let Some(end) = end.or_else(|| self.stop(&mut coupler, slice, &frames)) {
                return (end, coupler, slice);
            }
            let lengths = self.next_lengths(&coupler);
            if frames.is_empty() {
                let (roster, opts) = (&self.roster, &self.opts);
                slice = (self.barrier).skip_idle(roster, &mut coupler, slice, lengths, opts);
            }
            let Some(next) = slice.next(lengths) else {
                let from = slice.node_start + slice.node_cycles;
                let node_cycles = lengths.node;
                return (End::ClockOverflow { node_cycles, from }, coupler, slice);
            };
            let deliveries =
                coupler.take_deliveries(next.node_start, next.node_start + next.node_cycles);
            self.barrier.slice_index += 1;
            self.send_continue(&next, deliveries);
            net = if parallel {
                Net::Running(spawn_slice(coupler, next, frames, slice.node_cycles))
            } else {
                Net::Ready(coupler)
            };
            slice = next;
        }
    }

    /// The network's counters of the windows that ended: into the
    /// timeline, and onto the board of the node simulators' timeline.
    fn pass_counters(&mut self, coupler: &mut Coupler) {
        let windows = coupler.take_counter_windows();
        if windows.is_empty() {
            return;
        }
        if let Some(t) = &mut self.timeline {
            t.counters(coupler.counter_names(), &windows);
        }
        if let Some(board) = &self.opts.counters {
            let mut b = board.lock().unwrap_or_else(|e| e.into_inner());
            if b.names.is_empty() {
                b.names = coupler.counter_names().to_vec();
            }
            b.windows.extend(windows);
        }
    }

    /// Length of the next slice (`node`, `net` cycles).
    fn next_lengths(&self, coupler: &Coupler) -> SliceRatio {
        (self.control).next_lengths(coupler.measuring(), self.opts.warmup_factor)
    }

    /// Sends Continue for `slice` with `deliveries` to every live client.
    fn send_continue(&mut self, slice: &Slice, deliveries: Vec<crate::coupler::OutFrame>) {
        if let Some(t) = &mut self.timeline {
            t.released(slice, &deliveries);
        }
        let status = &self.opts.status;
        (self.barrier).send_continue(&mut self.roster, slice, deliveries, status);
    }

    /// Waits until every live client has finished `slice`, taking what
    /// they send meanwhile; why the run must end instead, if it must.
    async fn wait_barrier(&mut self, slice: Slice) -> Option<End> {
        let mut inbox = Inbox {
            token: self.opts.token.as_deref(),
            control: &mut self.control,
            intake: &mut self.intake,
            slice,
            k: self.barrier.slice_index,
        };
        // The first slice also starts the nodes (a QEMU guest restored
        // from its checkpoint runs its first instruction there): it may
        // take as long as attaching.
        let timeout = if self.barrier.slice_index == 0 {
            self.opts.node_timeout.max(self.opts.attach_timeout)
        } else {
            self.opts.node_timeout
        };
        (self.barrier)
            .wait(&mut self.roster, &mut self.events, timeout, |ev, roster| {
                inbox.handle(ev, roster)
            })
            .await
    }

    /// At the barrier after `done`: the coupler takes the nodes lost and
    /// the frames dropped, the NIC queues' room for the next slice, and
    /// the progress is published.
    fn settle(&mut self, coupler: &mut Coupler, done: Slice) {
        for n in self.roster.take_lost() {
            coupler.lose_node(n);
        }
        let admission = std::mem::replace(&mut self.intake.admission, coupler.admission());
        if coupler.settle(admission) {
            self.control.start_measure = true;
        }
        let status = &self.opts.status;
        status.set_slices(
            self.barrier.grid_index() + 1,
            done.node_start + done.node_cycles,
        );
        status.set_phase(CosimPhase::running(coupler.measuring()));
    }

    /// Why the run ends after `slice`, if it does: control requests (applied
    /// here), the slice limit, every workload finished, a deadlock.
    fn stop(
        &mut self,
        coupler: &mut Coupler,
        slice: Slice,
        frames: &[crate::coupler::InFrame],
    ) -> Option<End> {
        let grid = self.barrier.grid_index();
        let (opts, roster, barrier, started) =
            (&self.opts, &self.roster, &self.barrier, self.started);
        self.control
            .apply(coupler, grid, opts, roster, |coupler, control| {
                let parts = ReportParts {
                    opts,
                    roster,
                    barrier,
                    control,
                    started,
                };
                parts.report_now(coupler, &End::Running, slice)
            });
        if let Some(end) = self.control.end_request.take() {
            return Some(end);
        }
        if let Some(limit) = self.opts.slices {
            if grid + 1 >= limit {
                return Some(End::SliceLimit(limit));
            }
        }
        let idle = coupler.frames_pending() == 0 && frames.is_empty();
        if self.opts.slices.is_none() && self.roster.all_finished() && idle {
            return Some(End::AllFinished);
        }
        let end = self.roster.deadlock().filter(|_| idle)?;
        tracing::error!("{end}");
        Some(end)
    }
}

/// Runs `slice` of the network on a blocking thread (parallel mode), with
/// the frames of the slice before it moved `shift` node cycles later.
fn spawn_slice(
    mut coupler: Box<Coupler>,
    slice: Slice,
    mut frames: Vec<crate::coupler::InFrame>,
    shift: u64,
) -> tokio::task::JoinHandle<Box<Coupler>> {
    tokio::task::spawn_blocking(move || {
        coupler.run_slice(slice, &mut frames, shift);
        coupler
    })
}
