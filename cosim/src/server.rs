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

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fsin_frames::{mac_for_node, mac_from_bytes, Mac, MacTable, MacText};
use fsin_proto::v1::co_sim_server::{CoSim, CoSimServer};
use fsin_proto::v1::control_request::Command;
use fsin_proto::v1::node_message::Body as NodeBody;
use fsin_proto::v1::server_message::Body as ServerBody;
use fsin_proto::v1::{self as pb};
use fsin_sync::{Heard, Round, ServerPath, Standing, Via};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};

use super::coupler::{Coupler, InFrame, OutFrame, Slice};
use super::progress::CosimPhase;
use super::report::{CosimReport, Fault, NodeReport};
use super::{FaultPolicy, ServeOptions};
use fsin::config::{SyncMode, MAX_SLICE_CYCLES};

type Outbox = mpsc::Sender<Result<pb::ServerMessage, Status>>;

/// Messages the server may have queued for a client that has not read
/// them yet. A client reads Continue(k) before it can end slice k, so a
/// live one has two or three queued at most; one that stops reading its
/// stream while its SliceDones still come (e.g. as datagrams) is a fault
/// when this many are waiting, instead of growing the server without bound.
const OUTBOX: usize = 64;

/// Events (client messages, control requests) waiting for the coordinator.
/// A client that sends faster than the coordinator takes its messages (a
/// frame flood while the network runs a slice) is slowed by TCP flow control
/// beyond this many, instead of growing the server.
const EVENTS: usize = 1024;

/// Errors that stop `serve` before any slice could run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot open the pcap capture {path}: {source}")]
    Pcap {
        path: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot open the datagram (UDP) synchronisation socket: {0}")]
    Datagram(std::io::Error),
    #[error("cannot accept connections on the listening socket: {0}")]
    Incoming(Box<dyn std::error::Error + Send + Sync>),
    #[error("the gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

enum Event {
    Attach {
        client: u64,
        attach: pb::Attach,
        out: Outbox,
    },
    Msg {
        client: u64,
        body: NodeBody,
    },
    Closed {
        client: u64,
        error: Option<String>,
    },
    Control {
        req: pb::ControlRequest,
        reply: oneshot::Sender<pb::ControlReply>,
    },
    /// The run must stop (a signal, or the caller's reason).
    Interrupt(String),
}

struct Service {
    events: mpsc::Sender<Event>,
    next_client: AtomicU64,
}

#[tonic::async_trait]
impl CoSim for Service {
    type SyncStream = ReceiverStream<Result<pb::ServerMessage, Status>>;

    async fn sync(
        &self,
        req: Request<Streaming<pb::NodeMessage>>,
    ) -> Result<Response<Self::SyncStream>, Status> {
        let client = self.next_client.fetch_add(1, Ordering::Relaxed);
        let (out, rx) = mpsc::channel(OUTBOX);
        tokio::spawn(read_client(
            client,
            req.into_inner(),
            out,
            self.events.clone(),
        ));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn control(
        &self,
        req: Request<pb::ControlRequest>,
    ) -> Result<Response<pb::ControlReply>, Status> {
        let (reply, rx) = oneshot::channel();
        let gone = || Status::unavailable("the co-simulation run is over");
        self.events
            .send(Event::Control {
                req: req.into_inner(),
                reply,
            })
            .await
            .map_err(|_| gone())?;
        rx.await.map(Response::new).map_err(|_| gone())
    }
}

fn shutdown_msg(reason: &str, error: bool) -> pb::ServerMessage {
    pb::ServerMessage {
        body: Some(ServerBody::Shutdown(pb::Shutdown {
            reason: reason.to_string(),
            error,
        })),
    }
}

/// Forwards one client's messages to the coordinator, in order.
async fn read_client(
    client: u64,
    mut inbound: Streaming<pb::NodeMessage>,
    out: Outbox,
    events: mpsc::Sender<Event>,
) {
    match inbound.message().await {
        Ok(Some(pb::NodeMessage {
            body: Some(NodeBody::Attach(attach)),
        })) => {
            if events
                .send(Event::Attach {
                    client,
                    attach,
                    out,
                })
                .await
                .is_err()
            {
                return;
            }
        }
        Ok(Some(_)) => {
            tracing::warn!("client {client}: first message is not Attach; closing");
            let _ = out.try_send(Ok(shutdown_msg("the first message must be Attach", true)));
            return;
        }
        Ok(None) => return,
        Err(s) => {
            tracing::warn!("client {client}: broken before Attach: {}", s.message());
            return;
        }
    }
    loop {
        let ev = match inbound.message().await {
            Ok(Some(pb::NodeMessage { body: Some(body) })) => Event::Msg { client, body },
            Ok(Some(pb::NodeMessage { body: None })) => Event::Closed {
                client,
                error: Some("malformed message: no body".into()),
            },
            Ok(None) => Event::Closed {
                client,
                error: None,
            },
            Err(s) => Event::Closed {
                client,
                error: Some(format!("stream broken: {}", s.message())),
            },
        };
        let last = matches!(ev, Event::Closed { .. });
        if events.send(ev).await.is_err() || last {
            return;
        }
    }
}

/// Serves one co-simulation run on `listener` and returns its report once
/// the run ends (every node finished, the slice limit, a control shutdown,
/// a fault, or `interrupt` completing with the reason for the report, e.g.
/// "interrupted by SIGTERM").
///
/// # Errors
/// [`ServeError`] when the pcap file cannot be created or the gRPC server
/// fails; faults of nodes are not errors but end up in the report.
pub async fn serve(
    opts: ServeOptions,
    listener: TcpListener,
    interrupt: impl Future<Output = String> + Send + 'static,
) -> Result<CosimReport, ServeError> {
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
            let file = std::fs::File::create(path).map_err(|e| ServeError::Pcap {
                path: path.display().to_string(),
                source: Box::new(e),
            })?;
            let cap = fsin_frames::pcap::Capture::new(
                std::io::BufWriter::new(file),
                opts.config.node_clock_hz,
            )
            .map_err(|e| ServeError::Pcap {
                path: path.display().to_string(),
                source: Box::new(e),
            })?;
            Some(cap)
        }
    };
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
    let report = Coordinator::new(opts, events, capture, fast).run().await;
    watcher.abort();
    let _ = stop_tx.send(());
    // Clients close their streams on Shutdown; do not wait for ones that
    // do not.
    if let Ok(Ok(Err(e))) = tokio::time::timeout(Duration::from_secs(2), server).await {
        return Err(e.into());
    }
    Ok(report)
}

struct Client {
    name: String,
    nodes: Vec<u32>,
    out: Outbox,
    live: bool,
    detached: bool,
    /// Last slice it finished.
    done: Option<u64>,
    /// Its standing promise (`SliceDone.idle_until`; 0: none).
    idle_until: u64,
    done_at: Instant,
    wait: Duration,
    seq: u64,
}

#[derive(Default)]
struct NodeSlot {
    client: Option<u64>,
    mac: Option<Mac>,
    app: Option<pb::AppReport>,
    lost: bool,
    /// What it waits for, from its client's report until a frame is
    /// delivered to it (`SliceDone.waiting`).
    waiting: Option<String>,
}

/// Why the slice loop stops.
struct End {
    reason: String,
    ok: bool,
}

/// After the stall timeout, how long the barrier still reads what clients
/// sent before it names the ones missing as stalled.
const STALL_GRACE: Duration = Duration::from_millis(200);

/// How many waiting nodes the deadlock reason names before "and N more".
const NAMED_WAITING: usize = 4;

enum Net {
    Ready(Box<Coupler>),
    Running(tokio::task::JoinHandle<Box<Coupler>>),
}

struct Coordinator {
    opts: ServeOptions,
    events: mpsc::Receiver<Event>,
    capture: Option<fsin_frames::pcap::Capture<std::io::BufWriter<std::fs::File>>>,
    clients: BTreeMap<u64, Client>,
    nodes: Vec<NodeSlot>,
    faults: Vec<Fault>,
    frames: Vec<InFrame>,
    controls: Vec<(pb::ControlRequest, Reply)>,
    /// Nodes lost since the last barrier (applied to the coupler there).
    newly_lost: Vec<u32>,
    start_measure: bool,
    measured_from: u64,
    ratio: (u64, u64),
    /// Rounds so far, less one: the index of the slice running (Continue
    /// and SliceDone carry it).
    slice_index: u64,
    /// Slices skipped as idle (`SliceDone.idle_until`): the slice grid's
    /// index is `slice_index + skipped`.
    skipped: u64,
    started: Instant,
    end_request: Option<End>,
    /// The fast path(s) of quiet rounds, if offered.
    fast: Option<fsin_sync::Server>,
    /// Continues sent so far through shared memory, as datagrams, and on
    /// the streams (logged at the end: which fast path the clients used).
    sent: fsin_sync::Sent,
    /// The run ended in a deadlock.
    deadlocked: bool,
    /// Clients whose stream held [`OUTBOX`] unread messages when a
    /// Continue was due (faulted at the next barrier).
    unread: Vec<u64>,
    /// Per node: bytes of frames in the network after the last slice, plus
    /// those sent during this one; a frame that would take it past
    /// `nic_queue_bytes` is dropped on arrival (and counted in `dropped`).
    queued: Vec<u64>,
    dropped: Vec<u32>,
}

/// Where a control reply goes.
enum Reply {
    Rpc(oneshot::Sender<pb::ControlReply>),
    Stream(u64),
}

impl Coordinator {
    fn new(
        opts: ServeOptions,
        events: mpsc::Receiver<Event>,
        capture: Option<fsin_frames::pcap::Capture<std::io::BufWriter<std::fs::File>>>,
        fast: Option<fsin_sync::Server>,
    ) -> Self {
        let nodes = (0..opts.nodes).map(|_| NodeSlot::default()).collect();
        let ratio = (opts.config.slice_node_cycles, opts.config.slice_net_cycles);
        Coordinator {
            events,
            capture,
            clients: BTreeMap::new(),
            nodes,
            faults: Vec::new(),
            frames: Vec::new(),
            controls: Vec::new(),
            newly_lost: Vec::new(),
            start_measure: !opts.warmup,
            measured_from: 0,
            ratio,
            slice_index: 0,
            skipped: 0,
            started: Instant::now(),
            end_request: None,
            fast,
            sent: fsin_sync::Sent::default(),
            deadlocked: false,
            unread: Vec::new(),
            queued: vec![0; opts.nodes],
            dropped: Vec::new(),
            opts,
        }
    }

    async fn run(mut self) -> CosimReport {
        if let Err(end) = self.attach_all().await {
            self.opts.status.set_phase(CosimPhase::Ended);
            self.broadcast_shutdown(&end.reason, !end.ok);
            return self.report(None, end, None);
        }
        let mut table = MacTable::new(self.opts.config.nodes());
        for (id, n) in self.nodes.iter().enumerate() {
            let mac = n.mac.expect("every node attached");
            table
                .insert(id as u32, mac)
                .expect("MACs checked at attach");
        }
        let mut coupler = match Coupler::new(&self.opts.config, table) {
            Ok(c) => c,
            Err(e) => {
                let end = End {
                    reason: format!("cannot build the network: {e}"),
                    ok: false,
                };
                self.opts.status.set_phase(CosimPhase::Ended);
                self.broadcast_shutdown(&end.reason, true);
                return self.report(None, end, None);
            }
        };
        if let Some(cap) = self.capture.take() {
            coupler.set_capture(cap);
        }
        if self.opts.measure_overhead {
            coupler.record_injections();
        }
        self.welcome();
        self.started = Instant::now();
        let (end, coupler, last) = self.slices(Box::new(coupler)).await;
        self.opts.status.set_phase(CosimPhase::Ended);
        self.broadcast_shutdown(&end.reason, !end.ok);
        tracing::info!("Continues sent: {}", self.sent);
        self.report(Some(coupler), end, Some(last))
    }

    // ----- Attach ---------------------------------------------------------

    async fn attach_all(&mut self) -> Result<(), End> {
        let deadline = tokio::time::Instant::now() + self.opts.attach_timeout;
        while self.nodes.iter().any(|n| n.client.is_none()) {
            let attached = self.nodes.iter().filter(|n| n.client.is_some()).count();
            self.opts.status.set_attached(attached as u64);
            let ev = tokio::select! {
                ev = self.events.recv() => ev,
                () = tokio::time::sleep_until(deadline) => {
                    let missing: Vec<String> = self.nodes.iter().enumerate()
                        .filter(|(_, n)| n.client.is_none())
                        .map(|(i, _)| i.to_string())
                        .collect();
                    let reason = format!(
                        "attach timeout after {:.0} s: {} of {} nodes attached; missing node ids {}",
                        self.opts.attach_timeout.as_secs_f64(),
                        self.nodes.len() - missing.len(),
                        self.nodes.len(),
                        missing.join(", ")
                    );
                    tracing::error!("{reason}");
                    return Err(End { reason, ok: false });
                }
            };
            match ev {
                Some(Event::Attach {
                    client,
                    attach,
                    out,
                }) => self.attach(client, attach, out),
                Some(Event::Closed { client, error }) => {
                    if let Some(c) = self.clients.remove(&client) {
                        tracing::warn!(
                            "{} left before the run started ({}); its nodes are free again",
                            c.name,
                            error.unwrap_or_else(|| "stream closed".into())
                        );
                        for n in c.nodes {
                            self.nodes[n as usize] = NodeSlot::default();
                        }
                    }
                }
                Some(Event::Msg { client, .. }) => {
                    self.reject_client(client, "message before the run started");
                }
                Some(Event::Control { reply, .. }) => {
                    let _ = reply.send(control_error("the run has not started yet"));
                }
                Some(Event::Interrupt(why)) => {
                    return Err(End {
                        reason: format!("{why} while waiting for nodes to attach"),
                        ok: false,
                    })
                }
                None => {
                    return Err(End {
                        reason: "the server stopped while waiting for nodes to attach".into(),
                        ok: false,
                    })
                }
            }
        }
        self.opts.status.set_attached(self.nodes.len() as u64);
        Ok(())
    }

    fn attach(&mut self, client: u64, a: pb::Attach, out: Outbox) {
        let name = if a.client_name.is_empty() {
            format!("client {client}")
        } else {
            bounded(a.client_name.clone())
        };
        let refuse = |why: String| {
            tracing::warn!("{name}: attach refused: {why}");
            let _ = out.try_send(Ok(shutdown_msg(&format!("attach refused: {why}"), true)));
        };
        if a.protocol_version != fsin_proto::PROTOCOL_VERSION {
            return refuse(format!(
                "protocol version {} (this server speaks {})",
                a.protocol_version,
                fsin_proto::PROTOCOL_VERSION
            ));
        }
        if !token_matches(self.opts.token.as_deref(), &a.token) {
            return refuse(
                "wrong or missing token (fsin serve --token; clients read FSIN_TOKEN)".into(),
            );
        }
        if a.nodes.is_empty() {
            return refuse("no nodes in Attach".into());
        }
        let mut taken: Vec<u32> = Vec::new();
        let mut macs: Vec<Mac> = Vec::new();
        for spec in &a.nodes {
            if spec.clock_hz != 0 && spec.clock_hz != self.opts.config.node_clock_hz {
                return refuse(format!(
                    "node clock {} Hz differs from the server's node_clock={} Hz",
                    spec.clock_hz, self.opts.config.node_clock_hz
                ));
            }
            let free = |id: u32, taken: &[u32]| {
                (id as usize) < self.nodes.len()
                    && self.nodes[id as usize].client.is_none()
                    && !taken.contains(&id)
            };
            let id = match spec.node_id {
                Some(id) if free(id, &taken) => id,
                Some(id) if id as usize >= self.nodes.len() => {
                    return refuse(format!(
                        "node id {id} is beyond the run's {} nodes",
                        self.nodes.len()
                    ))
                }
                Some(id) => return refuse(format!("node id {id} is already attached")),
                None => match (0..self.nodes.len() as u32).find(|&i| free(i, &taken)) {
                    Some(id) => id,
                    None => return refuse("every node id is already attached".into()),
                },
            };
            let mac = if spec.mac.is_empty() {
                mac_for_node(id)
            } else {
                match mac_from_bytes(&spec.mac) {
                    Ok(m) if !fsin_frames::is_group(&m) => m,
                    Ok(m) => return refuse(format!("MAC {} is a group address", MacText(m))),
                    Err(e) => return refuse(e.to_string()),
                }
            };
            let dup = self.nodes.iter().any(|n| n.mac == Some(mac)) || macs.contains(&mac);
            if dup {
                return refuse(format!("MAC {} is already in use", MacText(mac)));
            }
            taken.push(id);
            macs.push(mac);
        }
        for (&id, &mac) in taken.iter().zip(&macs) {
            self.nodes[id as usize] = NodeSlot {
                client: Some(client),
                mac: Some(mac),
                ..NodeSlot::default()
            };
        }
        tracing::info!("{name} attached with nodes {taken:?}");
        self.clients.insert(
            client,
            Client {
                name,
                nodes: taken,
                out,
                live: true,
                detached: false,
                done: None,
                done_at: Instant::now(),
                wait: Duration::ZERO,
                seq: 0,
                idle_until: 0,
            },
        );
    }

    fn reject_client(&mut self, client: u64, why: &str) {
        if let Some(c) = self.clients.remove(&client) {
            let _ = c.out.try_send(Ok(shutdown_msg(why, true)));
            for n in c.nodes {
                self.nodes[n as usize] = NodeSlot::default();
            }
        }
    }

    /// Sends Welcome to every client and logs the node id / MAC map.
    fn welcome(&mut self) {
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        let shared_memory = self.opts.shared_memory;
        self.fast = self.fast.take().map(|f| f.start(&ids, shared_memory));
        let all: Vec<pb::NodeAssignment> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| pb::NodeAssignment {
                node_id: i as u32,
                mac: n.mac.expect("attached").to_vec(),
            })
            .collect();
        tracing::info!("node id / MAC map:");
        for (i, n) in self.nodes.iter().enumerate() {
            let c = &self.clients[&n.client.expect("attached")];
            tracing::info!(
                "  node {i:>4}  {}  {}",
                MacText(n.mac.expect("attached")),
                c.name
            );
        }
        for (&id, c) in &self.clients {
            let mine = c.nodes.iter().map(|&i| all[i as usize].clone()).collect();
            let mut welcome = pb::Welcome {
                nodes: mine,
                all_nodes: all.clone(),
                clock_hz: self.opts.config.node_clock_hz,
                mode: match self.opts.config.sync_mode {
                    SyncMode::Lockstep => pb::SyncMode::Lockstep,
                    SyncMode::Parallel => pb::SyncMode::Parallel,
                    SyncMode::Exact => pb::SyncMode::Exact,
                } as i32,
                datagram: None,
            };
            if let Some(f) = &self.fast {
                f.offer(id, &mut welcome);
            }
            let _ = c.out.try_send(Ok(pb::ServerMessage {
                body: Some(ServerBody::Welcome(welcome)),
            }));
        }
    }

    // ----- Slices ---------------------------------------------------------

    /// Length of the next slice (`node`, `net` cycles): warm-up slices are
    /// `warmup_factor` slices long.
    fn next_lengths(&self, measuring: bool) -> (u64, u64) {
        let f = if measuring {
            1
        } else {
            self.opts.warmup_factor.max(1)
        };
        (self.ratio.0 * f, self.ratio.1 * f)
    }

    async fn slices(&mut self, mut coupler: Box<Coupler>) -> (End, Box<Coupler>, Slice) {
        let parallel = self.opts.config.sync_mode == SyncMode::Parallel;
        if self.start_measure {
            coupler.start_measure();
            self.start_measure = false;
        }
        let (node_cycles, net_cycles) = self.next_lengths(coupler.measuring());
        let mut slice = Slice {
            node_start: 0,
            node_cycles,
            net_start: 0,
            net_cycles,
        };
        self.opts
            .status
            .set_phase(CosimPhase::running(coupler.measuring()));
        let mut net = if parallel {
            Net::Running(spawn_slice(coupler, slice, Vec::new(), 0))
        } else {
            Net::Ready(coupler)
        };
        self.send_continue(&slice, Vec::new());
        loop {
            let end = self.wait_barrier(slice).await;
            let mut frames = std::mem::take(&mut self.frames);
            let mut coupler = match net {
                Net::Ready(c) => c,
                Net::Running(h) => h.await.expect("network slice panicked"),
            };
            if !parallel {
                coupler.run_slice(slice, &mut frames, 0);
            }
            for n in self.newly_lost.drain(..) {
                coupler.lose_node(n);
            }
            for n in self.dropped.drain(..) {
                coupler.count_dropped(n);
            }
            for (n, q) in self.queued.iter_mut().enumerate() {
                *q = coupler.backlog(n as u32);
            }
            self.publish(&coupler, slice);
            if let Some(end) = end {
                return (end, coupler, slice);
            }
            self.apply_controls(&mut coupler, slice);
            if let Some(end) = self.end_request.take() {
                return (end, coupler, slice);
            }
            if let Some(limit) = self.opts.slices {
                if self.grid_index() + 1 >= limit {
                    let end = End {
                        reason: format!("ran the requested {limit} slices"),
                        ok: true,
                    };
                    return (end, coupler, slice);
                }
            }
            let all_finished = self.nodes.iter().all(|n| n.lost || n.app.is_some());
            if self.opts.slices.is_none()
                && all_finished
                && coupler.frames_pending() == 0
                && frames.is_empty()
            {
                let end = End {
                    reason: "every node finished its workload".into(),
                    ok: true,
                };
                return (end, coupler, slice);
            }
            if let Some(end) = self.deadlock(&coupler, &frames) {
                return (end, coupler, slice);
            }
            let (node_cycles, net_cycles) = self.next_lengths(coupler.measuring());
            if frames.is_empty() {
                slice = self.skip_idle(&mut coupler, slice, node_cycles, net_cycles);
            }
            let Some(next) = slice.next(node_cycles, net_cycles) else {
                let end = End {
                    reason: format!(
                        "the next slice ({node_cycles} node cycles from node cycle {}) would pass the clocks' 2^64 cycles",
                        slice.node_start + slice.node_cycles
                    ),
                    ok: false,
                };
                return (end, coupler, slice);
            };
            let deliveries =
                coupler.take_deliveries(next.node_start, next.node_start + next.node_cycles);
            self.slice_index += 1;
            self.send_continue(&next, deliveries);
            net = if parallel {
                Net::Running(spawn_slice(coupler, next, frames, slice.node_cycles))
            } else {
                Net::Ready(coupler)
            };
            slice = next;
        }
    }

    /// Publishes the progress after `done`, the slice that just ended
    /// ([`ServeOptions::status`]).
    fn publish(&self, coupler: &Coupler, done: Slice) {
        let status = &self.opts.status;
        status.set_slices(self.grid_index() + 1, done.node_start + done.node_cycles);
        status.set_phase(CosimPhase::running(coupler.measuring()));
    }

    /// The slice grid's index of the slice running.
    fn grid_index(&self) -> u64 {
        self.slice_index + self.skipped
    }

    /// When every live client has promised to do nothing before some node
    /// cycle (`SliceDone.idle_until`) and no frame is in flight or due,
    /// runs the whole slices of `node_cycles : net_cycles` that end before
    /// the earliest promise, at once (the network is empty, so the drive
    /// loop jumps its clock) and returns the last of them, so that the next
    /// round runs the slice of the promise: the same grid and results as
    /// one round per slice. `slice` otherwise. In parallel mode the
    /// network has finished the slice whose frames it was running, and no
    /// frame waits to enter it (the caller checks), so nothing is in flight
    /// there either.
    fn skip_idle(
        &mut self,
        coupler: &mut Coupler,
        slice: Slice,
        node_cycles: u64,
        net_cycles: u64,
    ) -> Slice {
        if !self.opts.idle_skip || coupler.frames_pending() > 0 || !coupler.network_idle() {
            return slice;
        }
        let Some(until) = self
            .clients
            .values()
            .filter(|c| c.live)
            .map(|c| c.idle_until)
            .min()
            .filter(|&t| t > 0 && (t < u64::MAX || self.opts.slices.is_some()))
        else {
            return slice;
        };
        let next_start = slice.node_start.saturating_add(slice.node_cycles);
        let mut whole = until.saturating_sub(next_start) / node_cycles;
        if let Some(limit) = self.opts.slices {
            // Leave the last requested slice to run as a round.
            whole = whole.min(limit.saturating_sub(self.grid_index() + 2));
        }
        if whole == 0 {
            return slice;
        }
        let (Some(node_skip), Some(net_skip)) = (
            whole.checked_mul(node_cycles),
            whole.checked_mul(net_cycles),
        ) else {
            return slice;
        };
        let Some(gap) = slice.next(node_skip, net_skip) else {
            return slice;
        };
        coupler.run_slice(gap, &mut Vec::new(), 0);
        self.skipped += whole;
        Slice {
            node_start: gap.node_start + gap.node_cycles - node_cycles,
            node_cycles,
            net_start: gap.net_start + gap.net_cycles - net_cycles,
            net_cycles,
        }
    }

    /// The end of the run when it cannot go on: every node that has not
    /// finished waits for a frame (as its client reported) and no frame is
    /// in flight or about to be injected.
    fn deadlock(&mut self, coupler: &Coupler, frames: &[InFrame]) -> Option<End> {
        if coupler.frames_pending() > 0 || !frames.is_empty() {
            return None;
        }
        let mut waiting = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !n.lost && n.app.is_none() {
                waiting.push(format!("node {i} waits for {}", n.waiting.as_deref()?));
            }
        }
        if waiting.is_empty() {
            return None;
        }
        self.deadlocked = true;
        let more = waiting.len().saturating_sub(NAMED_WAITING);
        let mut reason = format!(
            "deadlock: no frame in flight and every node that has not finished waits for one: {}",
            waiting[..waiting.len() - more].join("; ")
        );
        if more > 0 {
            reason += &format!("; and {more} more (per_node waiting_for)");
        }
        tracing::error!("{reason}");
        Some(End { reason, ok: false })
    }

    /// Sends Continue for `slice` to every live client, with its frames.
    fn send_continue(&mut self, slice: &Slice, deliveries: Vec<OutFrame>) {
        self.opts.status.add_delivered(deliveries.len() as u64);
        let mut per_client: BTreeMap<u64, Vec<pb::Delivery>> = BTreeMap::new();
        for f in deliveries {
            self.nodes[f.node as usize].waiting = None;
            if let Some(c) = self.nodes[f.node as usize].client {
                if let Some(client) = self.clients.get_mut(&c) {
                    client.idle_until = 0;
                }
                per_client.entry(c).or_default().push(pb::Delivery {
                    node: f.node,
                    node_cycle: f.node_cycle,
                    data: f.data,
                });
            }
        }
        let now = Instant::now();
        let mut by_stream = Vec::new();
        if let Some(f) = &mut self.fast {
            let live: Vec<u64> = self
                .clients
                .iter()
                .filter(|(_, c)| c.live)
                .map(|(&id, _)| id)
                .collect();
            f.open_round(self.slice_index, &live);
        }
        for (id, c) in self.clients.iter_mut().filter(|(_, c)| c.live) {
            if c.done.is_some() {
                c.wait += now - c.done_at;
            }
            // Answer the way it was spoken to (sync.proto, DatagramSync and
            // ShmBarrier).
            let quiet = !per_client.contains_key(id);
            let via = self
                .fast
                .as_mut()
                .map_or(Via::Stream, |f| f.answer(*id, quiet));
            self.sent.count(via);
            if via != Via::Stream {
                continue;
            }
            by_stream.push(*id);
            let msg = pb::ServerMessage {
                body: Some(ServerBody::Cont(pb::Continue {
                    slice: self.slice_index,
                    start_cycle: slice.node_start,
                    node_cycles: slice.node_cycles,
                    frames: per_client.remove(id).unwrap_or_default(),
                })),
            };
            if let Err(mpsc::error::TrySendError::Full(_)) = c.out.try_send(Ok(msg)) {
                self.unread.push(*id);
            }
        }
        if let Some(f) = &mut self.fast {
            f.publish(&Round {
                slice: self.slice_index,
                start_cycle: slice.node_start,
                node_cycles: slice.node_cycles,
                stream: &by_stream,
            });
        }
    }

    /// Takes what the fast path heard about the current slice: quiet
    /// SliceDones (the client is done) and faults.
    fn take_quiet(&mut self) -> Option<End> {
        let k = self.slice_index;
        loop {
            let clients = &self.clients;
            let standing = |id: u64| match clients.get(&id) {
                Some(c) if c.live && c.done == Some(k) => Standing::Done,
                Some(c) if c.live => Standing::Running,
                _ => Standing::Gone,
            };
            let heard = self.fast.as_mut()?.take(k, &standing)?;
            match heard {
                Heard::Done { client, at } => {
                    if let Some(c) = self.clients.get_mut(&client).filter(|c| c.live) {
                        c.done = Some(k);
                        c.done_at = at;
                    }
                }
                Heard::Malformed { client, why } => {
                    if self.clients.get(&client).is_some_and(|c| c.live) {
                        if let Some(end) = self.fault(client, why) {
                            return Some(end);
                        }
                    }
                }
            }
        }
    }

    /// Waits until every live client has finished the current slice.
    /// Returns why the run must end instead, if it must.
    async fn wait_barrier(&mut self, slice: Slice) -> Option<End> {
        let k = self.slice_index;
        for id in std::mem::take(&mut self.unread) {
            let why = format!("does not read its stream: {OUTBOX} messages unread");
            if let Some(end) = self.fault(id, why) {
                return Some(end);
            }
        }
        let timeout = tokio::time::sleep(self.opts.node_timeout);
        tokio::pin!(timeout);
        let mut grace = true;
        loop {
            if let Some(end) = self.take_quiet() {
                return Some(end);
            }
            if self.clients.values().all(|c| !c.live) {
                return Some(End {
                    reason: "every client has left".into(),
                    ok: self.faults.is_empty(),
                });
            }
            if self.clients.values().all(|c| !c.live || c.done == Some(k)) {
                return None;
            }
            let fast = &self.fast;
            let ev = tokio::select! {
                ev = self.events.recv() => ev,
                () = async {
                    match fast {
                        Some(f) => f.wake().await,
                        None => std::future::pending().await,
                    }
                } => continue,
                () = &mut timeout => {
                    let now = tokio::time::Instant::now();
                    let late = now.saturating_duration_since(timeout.deadline());
                    if late > STALL_GRACE * 5 {
                        // The server itself was not running when the time
                        // ran out (stopped, swapped out): nobody to blame,
                        // every client gets a full period from now.
                        tracing::warn!(
                            "the server did not run for {:.1} s; the stall timeout starts again",
                            late.as_secs_f64()
                        );
                        timeout.as_mut().reset(now + self.opts.node_timeout);
                        continue;
                    }
                    if std::mem::take(&mut grace) {
                        // SliceDones may still be in the server's buffers:
                        // let its tasks run before blaming anyone.
                        timeout.as_mut().reset(now + STALL_GRACE);
                        continue;
                    }
                    let stalled: Vec<u64> = self.clients.iter()
                        .filter(|(_, c)| c.live && c.done != Some(k))
                        .map(|(&id, _)| id)
                        .collect();
                    let secs = self.opts.node_timeout.as_secs_f64();
                    for id in stalled {
                        let why = format!("stalled: no SliceDone({k}) within {secs:.1} s");
                        if let Some(end) = self.fault(id, why) {
                            return Some(end);
                        }
                    }
                    grace = true;
                    timeout.as_mut().reset(tokio::time::Instant::now() + self.opts.node_timeout);
                    continue;
                }
            };
            let end = match ev {
                Some(ev) => self.handle(ev, slice),
                None => Some(End {
                    reason: "the server stopped".into(),
                    ok: false,
                }),
            };
            if end.is_some() {
                return end;
            }
        }
    }

    fn handle(&mut self, ev: Event, slice: Slice) -> Option<End> {
        let k = self.slice_index;
        match ev {
            Event::Attach { out, .. } => {
                let _ = out.try_send(Ok(shutdown_msg(
                    "the run has started; no more nodes can attach",
                    true,
                )));
                None
            }
            Event::Interrupt(reason) => Some(End { reason, ok: false }),
            Event::Control { req, reply } => {
                if token_matches(self.opts.token.as_deref(), &req.token) {
                    self.controls.push((req, Reply::Rpc(reply)));
                } else {
                    let _ = reply.send(control_error("wrong or missing token"));
                }
                None
            }
            Event::Closed { client, error } => {
                let c = self.clients.get(&client)?;
                if c.detached || !c.live {
                    return None;
                }
                let why = match error {
                    None => "disconnected without Detach".to_string(),
                    Some(e) => format!("disconnected: {e}"),
                };
                self.fault(client, why)
            }
            Event::Msg { client, body } => {
                let live = self.clients.get(&client).is_some_and(|c| c.live);
                if !live {
                    return None;
                }
                match self.message(client, body, slice) {
                    Ok(()) => None,
                    Err(why) => self.fault(client, format!("malformed message: {why} (slice {k})")),
                }
            }
        }
    }

    /// One message of a live client during slice `slice`.
    fn message(&mut self, client: u64, body: NodeBody, slice: Slice) -> Result<(), String> {
        let k = self.slice_index;
        let c = self.clients.get_mut(&client).expect("live client");
        match body {
            NodeBody::Attach(_) => Err("a second Attach".into()),
            NodeBody::Frame(f) => {
                if c.done == Some(k) {
                    return Err(format!("a frame after SliceDone({k})"));
                }
                if !c.nodes.contains(&f.node) {
                    return Err(format!(
                        "a frame from node {} which this client does not own (it owns {:?})",
                        f.node, c.nodes
                    ));
                }
                let end = slice.node_start + slice.node_cycles;
                if !(slice.node_start..end).contains(&f.node_cycle) {
                    return Err(format!(
                        "a frame stamped at node cycle {} outside slice {k} [{}, {end})",
                        f.node_cycle, slice.node_start
                    ));
                }
                c.seq += 1;
                let seq = c.seq;
                let mut f = f;
                // Still too long, so the coupler counts it as rejected,
                // but no longer than that: gRPC lets 4 MiB through.
                f.data.truncate(fsin_frames::MAX_FRAME_BYTES + 1);
                let queued = &mut self.queued[f.node as usize];
                if *queued + f.data.len() as u64 > self.opts.config.nic_queue_bytes {
                    self.dropped.push(f.node);
                    return Ok(());
                }
                *queued += f.data.len() as u64;
                if fsin_frames::is_magic(&f.data) {
                    match f.data.get(fsin_frames::MAGIC_PAYLOAD) {
                        Some(1) => {
                            tracing::info!("node {}: CLEAR_STATS magic packet", f.node);
                            self.start_measure = true;
                        }
                        other => tracing::info!(
                            "node {}: magic packet with command {other:?} ignored",
                            f.node
                        ),
                    }
                    return Ok(());
                }
                self.frames.push(InFrame {
                    node: f.node,
                    node_cycle: f.node_cycle,
                    seq,
                    data: f.data,
                });
                Ok(())
            }
            NodeBody::SliceDone(d) => {
                if d.slice != k || c.done == Some(k) {
                    return Err(format!(
                        "SliceDone({}) while slice {k} runs{}",
                        d.slice,
                        if c.done == Some(k) {
                            " (already done)"
                        } else {
                            ""
                        }
                    ));
                }
                let reports = d.finished.iter().map(|r| (r.node, "a workload report"));
                let waits = d.waiting.iter().map(|w| (w.node, "a waiting report"));
                if let Some((node, what)) = reports.chain(waits).find(|(n, _)| !c.nodes.contains(n))
                {
                    return Err(format!("{what} for node {node} it does not own"));
                }
                c.done = Some(k);
                c.done_at = Instant::now();
                c.idle_until = d.idle_until;
                for r in d.finished {
                    self.nodes[r.node as usize].app = Some(r);
                }
                for w in d.waiting {
                    self.nodes[w.node as usize].waiting = Some(bounded(w.reason));
                }
                Ok(())
            }
            NodeBody::Control(req) => {
                self.controls.push((req, Reply::Stream(client)));
                Ok(())
            }
            NodeBody::Detach(d) => {
                tracing::info!("{} detached: {}", c.name, bounded(d.reason));
                c.detached = true;
                c.live = false;
                let nodes = c.nodes.clone();
                self.newly_lost.extend(nodes);
                Ok(())
            }
        }
    }

    /// Records a fault of `client`; returns the end of the run if the
    /// policy is to stop.
    fn fault(&mut self, client: u64, reason: String) -> Option<End> {
        let c = self.clients.get_mut(&client)?;
        tracing::error!("{} (nodes {:?}): {reason}", c.name, c.nodes);
        c.live = false;
        let _ = c.out.try_send(Ok(shutdown_msg(&reason, true)));
        self.faults.push(Fault {
            client: c.name.clone(),
            nodes: c.nodes.clone(),
            slice: self.slice_index,
            reason: reason.clone(),
        });
        for &n in &c.nodes {
            self.nodes[n as usize].lost = true;
        }
        self.newly_lost.extend(c.nodes.iter().copied());
        match self.opts.on_fault {
            FaultPolicy::Stop => Some(End {
                reason: format!("{}: {reason}", c.name),
                ok: false,
            }),
            FaultPolicy::Continue => None,
        }
    }

    /// Applies the control requests received during the slice.
    fn apply_controls(&mut self, coupler: &mut Coupler, slice: Slice) {
        if self.start_measure && !coupler.measuring() {
            coupler.start_measure();
            self.measured_from = self.grid_index() + 1;
        }
        self.start_measure = false;
        for (req, to) in std::mem::take(&mut self.controls) {
            let reply = match req.command {
                Some(Command::StartMeasure(_)) => {
                    if !coupler.measuring() {
                        coupler.start_measure();
                        self.measured_from = self.grid_index() + 1;
                    }
                    control_ok()
                }
                Some(Command::StopMeasure(_)) => {
                    self.end_request = Some(End {
                        reason: "the measured phase was stopped".into(),
                        ok: true,
                    });
                    control_ok()
                }
                Some(Command::SetSlice(r)) => self.set_ratio(r.node_cycles, r.net_cycles),
                Some(Command::GetStats(_)) => {
                    let end = End {
                        reason: "running".into(),
                        ok: true,
                    };
                    let report = self.report_now(coupler, &end, slice);
                    pb::ControlReply {
                        ok: true,
                        error: String::new(),
                        stats_json: serde_json::to_string(&report).unwrap_or_default(),
                    }
                }
                Some(Command::Shutdown(reason)) => {
                    self.end_request = Some(End {
                        reason: format!("shutdown requested: {}", bounded(reason)),
                        ok: true,
                    });
                    control_ok()
                }
                None => control_error("empty control request"),
            };
            match to {
                Reply::Rpc(tx) => {
                    let _ = tx.send(reply);
                }
                Reply::Stream(client) => {
                    if let Some(c) = self.clients.get(&client) {
                        let _ = c.out.try_send(Ok(pb::ServerMessage {
                            body: Some(ServerBody::Control(reply)),
                        }));
                    }
                }
            }
        }
    }

    fn set_ratio(&mut self, node: u64, net: u64) -> pb::ControlReply {
        if node == 0 || net == 0 {
            return control_error("a slice needs at least one node cycle and one network cycle");
        }
        for (field, v) in [("node_cycles", node), ("net_cycles", net)] {
            if v > MAX_SLICE_CYCLES {
                return control_error(&format!(
                    "set_slice.{field} = {v} is above the limit of {MAX_SLICE_CYCLES} cycles per slice"
                ));
            }
        }
        let cfg = &self.opts.config;
        if cfg.sync_mode == SyncMode::Exact && net > cfg.nic_latency {
            return control_error(&format!(
                "exact mode needs network slices <= nic_latency ({}), got {net}",
                cfg.nic_latency
            ));
        }
        tracing::info!("slice ratio now {net}:{node} (network:node cycles)");
        self.ratio = (node, net);
        control_ok()
    }

    fn broadcast_shutdown(&mut self, reason: &str, error: bool) {
        for c in self.clients.values().filter(|c| c.live) {
            let _ = c.out.try_send(Ok(shutdown_msg(reason, error)));
        }
        if let Some(f) = &self.fast {
            f.shutdown();
        }
    }

    // ----- Report ---------------------------------------------------------

    fn report_now(&self, coupler: &Coupler, end: &End, slice: Slice) -> CosimReport {
        let mut r = self.report_base(end);
        r.slices = self.grid_index() + 1;
        r.slices_skipped = self.skipped;
        r.node_cycles = slice.node_start + slice.node_cycles;
        r.net_cycles = coupler.net_now();
        r.simulated_s = r.node_cycles as f64 / self.opts.config.node_clock_hz as f64;
        let s = coupler.stats();
        for (p, t) in r.per_node.iter_mut().zip(&s.per_node) {
            p.frames_sent = t.frames_sent;
            p.bytes_sent = t.bytes_sent;
            p.frames_received = t.frames_received;
            p.bytes_received = t.bytes_received;
            p.frames_dropped = t.frames_dropped;
        }
        r.frames_sent = s.per_node.iter().map(|t| t.frames_sent).sum();
        r.bytes_sent = s.per_node.iter().map(|t| t.bytes_sent).sum();
        r.frames_delivered = s.per_node.iter().map(|t| t.frames_received).sum();
        r.bytes_delivered = s.per_node.iter().map(|t| t.bytes_received).sum();
        r.frames_rejected = s.rejected;
        r.frames_unknown_mac = s.unknown_mac;
        r.frames_to_lost_nodes = s.to_lost_nodes;
        r.frames_bypassed = s.bypassed;
        r.frames_dropped = s.dropped;
        r.frame_latency_avg = s.latency_node.mean();
        r.frame_latency_std = s.latency_node.std();
        r.frame_latency_min = s.latency_node.min;
        r.frame_latency_max = s.latency_node.max;
        r.frame_net_latency_avg = s.latency_net.mean();
        r.frame_net_latency_std = s.latency_net.std();
        r.frame_net_latency_min = s.latency_net.min;
        r.frame_net_latency_max = s.latency_net.max;
        r.network = coupler.network_summary();
        r
    }

    fn report_base(&self, end: &End) -> CosimReport {
        let wall_s = self.started.elapsed().as_secs_f64();
        let per_node: Vec<NodeReport> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let c = n.client.and_then(|c| self.clients.get(&c));
                let app = n.app.unwrap_or_default();
                NodeReport {
                    node: i as u32,
                    mac: n.mac.map(|m| MacText(m).to_string()).unwrap_or_default(),
                    client: c.map(|c| c.name.clone()).unwrap_or_default(),
                    barrier_wait_s: c.map_or(0.0, |c| c.wait.as_secs_f64()),
                    app_done_cycle: n.app.as_ref().map(|a| a.done_cycle),
                    app_messages: app.messages,
                    app_latency_avg: app.latency_avg,
                    app_latency_max: app.latency_max,
                    app_corrupt: app.corrupt,
                    lost: n.lost,
                    waiting_for: n.waiting.clone().filter(|_| n.app.is_none()),
                    ..NodeReport::default()
                }
            })
            .collect();
        let apps: Vec<&pb::AppReport> = self.nodes.iter().filter_map(|n| n.app.as_ref()).collect();
        let msgs: u64 = apps.iter().map(|a| a.messages).sum();
        let app_latency_avg = if msgs == 0 {
            0.0
        } else {
            apps.iter()
                .map(|a| a.latency_avg * a.messages as f64)
                .sum::<f64>()
                / msgs as f64
        };
        let cfg = &self.opts.config;
        CosimReport {
            mode: match cfg.sync_mode {
                SyncMode::Lockstep => "lockstep",
                SyncMode::Parallel => "parallel",
                SyncMode::Exact => "exact",
            }
            .into(),
            slice_node_cycles: self.ratio.0,
            slice_net_cycles: self.ratio.1,
            nodes: self.nodes.len(),
            slices: 0,
            slices_skipped: 0,
            measured_from_slice: self.measured_from,
            node_cycles: 0,
            net_cycles: 0,
            simulated_s: 0.0,
            wall_s,
            slices_per_s: 0.0,
            frames_sent: 0,
            frames_delivered: 0,
            bytes_sent: 0,
            bytes_delivered: 0,
            frames_rejected: 0,
            frames_unknown_mac: 0,
            frames_to_lost_nodes: 0,
            frames_bypassed: 0,
            frames_dropped: 0,
            frame_latency_avg: 0.0,
            frame_latency_std: 0.0,
            frame_latency_min: 0,
            frame_latency_max: 0,
            frame_net_latency_avg: 0.0,
            frame_net_latency_std: 0.0,
            frame_net_latency_min: 0,
            frame_net_latency_max: 0,
            app_cycles: apps.iter().map(|a| a.done_cycle).max(),
            app_latency_avg,
            end_reason: end.reason.clone(),
            ok: end.ok && self.faults.is_empty(),
            deadlock: self.deadlocked,
            faults: self.faults.clone(),
            per_node,
            network: fsin::stats::Counters::default().summary(self.nodes.len()),
            engine_alone_s: None,
            overhead: None,
        }
    }

    fn report(
        &mut self,
        mut coupler: Option<Box<Coupler>>,
        end: End,
        last: Option<Slice>,
    ) -> CosimReport {
        let mut r = match (&coupler, last) {
            (Some(c), Some(s)) => self.report_now(c, &end, s),
            _ => self.report_base(&end),
        };
        if let Some(c) = coupler.as_deref_mut() {
            if let Err(e) = c.finish_capture() {
                tracing::error!("{e}");
                r.ok = false;
                r.end_reason = format!("{}; {e}", r.end_reason);
            }
        }
        r.wall_s = self.started.elapsed().as_secs_f64();
        if let Some(c) = coupler.as_deref() {
            match c.engine_alone() {
                Ok(Some((alone, _))) => {
                    r.engine_alone_s = Some(alone.as_secs_f64());
                    r.overhead = Some(r.wall_s / alone.as_secs_f64().max(1e-9));
                }
                Ok(None) => {}
                Err(e) => tracing::error!("cannot measure the overhead: {e}"),
            }
        }
        r.slices_per_s = if r.wall_s > 0.0 {
            r.slices as f64 / r.wall_s
        } else {
            0.0
        };
        r
    }
}

fn spawn_slice(
    mut coupler: Box<Coupler>,
    slice: Slice,
    mut frames: Vec<InFrame>,
    shift: u64,
) -> tokio::task::JoinHandle<Box<Coupler>> {
    tokio::task::spawn_blocking(move || {
        coupler.run_slice(slice, &mut frames, shift);
        coupler
    })
}

/// Whether `given` is the run's token (`None`: no token needed). Compared
/// in time independent of where they differ.
fn token_matches(token: Option<&str>, given: &str) -> bool {
    let Some(token) = token else {
        return true;
    };
    let (a, b) = (token.as_bytes(), given.as_bytes());
    let diff = a
        .iter()
        .zip(b)
        .fold(a.len() ^ b.len(), |d, (x, y)| d | usize::from(x ^ y));
    diff == 0
}

/// Longest text from a client kept for logs and reports (names, reasons),
/// in bytes.
const MAX_CLIENT_TEXT: usize = 256;

/// `text` from a client, cut to [`MAX_CLIENT_TEXT`] bytes (at a character
/// boundary, marked with "...") and with control characters replaced, so
/// that it can neither flood nor forge log lines.
fn bounded(text: String) -> String {
    let mut t: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if t.len() > MAX_CLIENT_TEXT {
        let mut cut = MAX_CLIENT_TEXT;
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        t.truncate(cut);
        t.push_str("...");
    }
    t
}

fn control_ok() -> pb::ControlReply {
    pb::ControlReply {
        ok: true,
        error: String::new(),
        stats_json: String::new(),
    }
}

fn control_error(why: &str) -> pb::ControlReply {
    pb::ControlReply {
        ok: false,
        error: why.to_string(),
        stats_json: String::new(),
    }
}
