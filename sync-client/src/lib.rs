//! Node-side library for coupling node simulators (QEMU guests through
//! `nic-bridge`, Simics modules, the `fake-node` emulator) to the `fsin`
//! co-simulation server over the `fsin.v1` protocol (crate `fsin-proto`).
//!
//! A client attaches its node(s) with [`NodeLink::attach`], then per slice:
//! waits for [`ServerEvent::Continue`] from [`NodeLink::next_event`] (which carries the frames reaching its
//! nodes during the slice, each with its node cycle), runs its nodes to the
//! end of the slice sending frames with [`NodeLink::send_frame`], and
//! reports [`NodeLink::slice_done`]. [`blocking::NodeLink`] offers the same
//! calls without async. The slice ratio itself is
//! `fsin_traffic::SliceRatio`, the server's.

pub mod blocking;
pub mod drive;
pub mod ffi;
pub mod signals;

use std::cell::{Cell, RefCell};

use fsin_proto::v1::co_sim_client::CoSimClient;
use fsin_proto::v1::node_message::Body as NodeBody;
use fsin_proto::v1::server_message::Body as ServerBody;
use fsin_proto::v1::{self as pb};
use fsin_sync::{ClientPath, Next};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::Endpoint;
use tonic::Streaming;

pub use fsin_proto::PROTOCOL_VERSION;
/// The shared-memory slice barrier (crate `fsin-sync`): its layout and
/// primitives, and [`shm::monotonic_ns`].
pub use fsin_sync::shm;

/// The longest wait any command of fsin-rs accepts, seconds (a week): the
/// bound of every timeout and period given on a command line (`--node-timeout`,
/// `--app-timeout`, `--progress-s`...). Above it, the command refuses the
/// option (exit 2) instead of overflowing a clock.
pub const MAX_WAIT_S: f64 = 7.0 * 24.0 * 3600.0;

/// A number of seconds as an error message shows it: as written for
/// everyday values, in exponent form from 10^9 on (`1e300`, not 301
/// digits).
pub fn seconds_shown(v: f64) -> String {
    if v.abs() >= 1e9 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// Environment variable holding the run's shared secret, which
/// [`NodeLink::attach`] sends in `Attach.token` (`fsin serve --token`).
pub const TOKEN_ENV: &str = "FSIN_TOKEN";

/// Runs `fut` to completion on a new single-threaded runtime, for a node
/// program's `main`; the runtime, and every task still on it, is dropped
/// before this returns.
///
/// # Errors
/// When the runtime cannot start: the message is printed as `program:
/// ...` and the program should exit with the returned code.
pub fn block_on<F: std::future::Future>(
    program: &str,
    fut: F,
) -> Result<F::Output, std::process::ExitCode> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Ok(rt.block_on(fut)),
        Err(e) => {
            eprintln!("{program}: cannot start a runtime: {e}");
            Err(std::process::ExitCode::FAILURE)
        }
    }
}

/// Ends a node program with its outcome: one JSON object on stdout with
/// `json`, otherwise `text` (which writes the summary to stderr); exit code
/// 1 when the run `failed`, 0 otherwise.
pub fn print_outcome<T: serde::Serialize>(
    outcome: &T,
    json: bool,
    failed: bool,
    text: impl FnOnce(&T),
) -> std::process::ExitCode {
    if json {
        println!("{}", serde_json::to_string(outcome).unwrap_or_default());
    } else {
        text(outcome);
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// Errors of the client side.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached.
    #[error("cannot reach the fsin server at {url}: {source}")]
    Connect {
        /// The server's address as given (`http://HOST:PORT`).
        url: String,
        /// Why the connection failed.
        source: tonic::transport::Error,
    },
    /// The server answered the stream's RPC with an error status.
    #[error("the fsin server refused the stream: {0}")]
    Rpc(Box<tonic::Status>),
    /// The server refused the node's attach request (its reason).
    #[error("the fsin server refused to attach: {0}")]
    Refused(String),
    /// The server closed the stream.
    #[error("the fsin server closed the stream")]
    Closed,
    /// The server sent a message out of the protocol's order (what).
    #[error("unexpected message from the server: {0}")]
    Protocol(String),
}

impl From<tonic::Status> for ClientError {
    fn from(s: tonic::Status) -> Self {
        ClientError::Rpc(Box::new(s))
    }
}

/// What the server says next.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// Run the slice it describes, with the frames it delivers.
    Continue(pb::Continue),
    /// The run is over for this client.
    Shutdown(pb::Shutdown),
    /// Answer to an in-stream control request.
    Control(pb::ControlReply),
}

/// One client stream: a node simulator, or an aggregator for several.
///
/// When the server offers the datagram fast path (`Welcome.datagram`), a
/// slice in which the client sent nothing on the stream ends with a UDP
/// SliceDone and usually gets a UDP Continue back; the calls are the same
/// either way (see `DatagramSync` in `sync.proto` for the rules). The
/// transports of these quiet rounds are in `fsin-sync`; this link keeps
/// the stream.
pub struct NodeLink {
    out: mpsc::UnboundedSender<pb::NodeMessage>,
    inbound: Streaming<pb::ServerMessage>,
    /// The server's Welcome: this client's node ids and MACs, the map of
    /// all nodes, the node clock and the synchronisation mode.
    pub welcome: pb::Welcome,
    /// The transport of quiet rounds: datagrams, or the shared-memory
    /// barrier once [`NodeLink::use_shared_memory`] mapped it.
    fast: Option<fsin_sync::QuietPath>,
    /// Nothing went on the stream since the last SliceDone.
    quiet: Cell<bool>,
    /// Nodes reported waiting, for the next SliceDone.
    waiting: RefCell<Vec<pb::Waiting>>,
    /// The promise for the next SliceDone (`SliceDone.idle_until`; 0:
    /// none), and the one standing at the server.
    idle_until: Cell<u64>,
    idle_told: Cell<u64>,
    /// Where the slice after the last Continue's ends (node cycles), if
    /// it is as long: a promise before it could skip nothing.
    next_end: u64,
    /// Slice of the last SliceDone the fast path carried and not yet
    /// answered.
    unanswered: Cell<Option<u64>>,
    /// Slice of the last Continue received.
    last_slice: Option<u64>,
}

impl NodeLink {
    /// Connects to `url` (e.g. `http://127.0.0.1:50051`), attaches `nodes`
    /// (with the shared secret of [`TOKEN_ENV`], if set), and waits until
    /// the server has every node of the run (Welcome).
    ///
    /// # Errors
    /// [`ClientError`]: unreachable server, refused attach (the reason the
    /// server gave), or a closed stream.
    pub async fn attach(
        url: &str,
        client_name: &str,
        nodes: Vec<pb::NodeSpec>,
    ) -> Result<NodeLink, ClientError> {
        let token = std::env::var(TOKEN_ENV).unwrap_or_default();
        NodeLink::attach_with_token(url, client_name, nodes, &token).await
    }

    /// [`NodeLink::attach`] with the shared secret `token` instead of
    /// [`TOKEN_ENV`]'s (for a client inside the server's own process, such
    /// as `fsin qemu`'s bridge).
    ///
    /// # Errors
    /// As [`NodeLink::attach`].
    pub async fn attach_with_token(
        url: &str,
        client_name: &str,
        nodes: Vec<pb::NodeSpec>,
        token: &str,
    ) -> Result<NodeLink, ClientError> {
        let connect_err = |source| ClientError::Connect {
            url: url.to_string(),
            source,
        };
        let channel = Endpoint::from_shared(url.to_string())
            .map_err(connect_err)?
            .tcp_nodelay(true)
            .connect()
            .await
            .map_err(connect_err)?;
        let mut client = CoSimClient::new(channel);
        let (out, rx) = mpsc::unbounded_channel();
        let attach = pb::Attach {
            protocol_version: PROTOCOL_VERSION,
            nodes,
            client_name: client_name.to_string(),
            token: token.to_string(),
        };
        out.send(wrap(NodeBody::Attach(attach)))
            .map_err(|_| ClientError::Closed)?;
        let mut inbound = client
            .sync(UnboundedReceiverStream::new(rx))
            .await?
            .into_inner();
        match inbound.message().await?.and_then(|m| m.body) {
            Some(ServerBody::Welcome(welcome)) => {
                let fast = match &welcome.datagram {
                    Some(offer) => fsin_sync::QuietPath::open(url, offer).await,
                    None => None,
                };
                Ok(NodeLink {
                    out,
                    inbound,
                    welcome,
                    fast,
                    quiet: Cell::new(true),
                    waiting: RefCell::new(Vec::new()),
                    idle_until: Cell::new(0),
                    idle_told: Cell::new(0),
                    next_end: 0,
                    unanswered: Cell::new(None),
                    last_slice: None,
                })
            }
            Some(ServerBody::Shutdown(s)) => Err(ClientError::Refused(s.reason)),
            Some(other) => Err(ClientError::Protocol(format!(
                "expected Welcome, got {other:?}"
            ))),
            None => Err(ClientError::Closed),
        }
    }

    /// Uses the shared-memory slice barrier when the server offers it and
    /// runs on this host (`ShmBarrier` in `sync.proto`); returns whether it
    /// is in use. From then on [`NodeLink::next_event`] after a quiet slice
    /// blocks the calling thread in a futex wait (20 ms at a time, then it
    /// looks at the stream), so call this only when nothing else must run
    /// on the thread meanwhile (e.g. a node program that only waits).
    pub fn use_shared_memory(&mut self) -> bool {
        let Some(offer) = self.welcome.datagram.as_ref() else {
            return false;
        };
        let Some(fast) = self.fast.take() else {
            return false;
        };
        let (fast, used) = fast.with_shared_memory(offer);
        self.fast = Some(fast);
        used
    }

    fn send(&self, body: NodeBody) -> Result<(), ClientError> {
        self.quiet.set(false);
        self.out.send(wrap(body)).map_err(|_| ClientError::Closed)
    }

    /// Sends an Ethernet frame that left `node`'s NIC at `node_cycle`
    /// (within the current slice).
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn send_frame(&self, node: u32, node_cycle: u64, data: Vec<u8>) -> Result<(), ClientError> {
        self.send(NodeBody::Frame(pb::Frame {
            node,
            node_cycle,
            data,
        }))
    }

    /// Tells the server, with the next SliceDone, that `node` has nothing
    /// left to do until a frame reaches it, and what it waits for
    /// (`SliceDone.waiting` in `sync.proto`: once after each delivery that
    /// leaves it waiting). Lets the server end a run that deadlocked.
    pub fn waiting(&self, node: u32, reason: String) {
        self.waiting.borrow_mut().push(pb::Waiting { node, reason });
    }

    /// Promises, with the next SliceDone and until a frame reaches one of
    /// this client's nodes, that none of them does anything on its own
    /// before node cycle `node_cycle` (`u64::MAX`: none has anything
    /// left; 0: no promise, the default). In lockstep and exact modes the server
    /// skips the slices in which nothing can happen (`SliceDone.idle_until`
    /// in `sync.proto`): the next Continue may start later. A promise that
    /// ends before the next slice does could not skip anything and goes out
    /// as none, so that busy stretches keep their quiet rounds.
    pub fn idle_until(&self, node_cycle: u64) {
        self.idle_until.set(node_cycle);
    }

    /// Reports the end of slice `slice`, with the nodes whose workload
    /// completed in it (and those reported [`NodeLink::waiting`], and the
    /// promise of [`NodeLink::idle_until`] when it changed).
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn slice_done(&self, slice: u64, finished: Vec<pb::AppReport>) -> Result<(), ClientError> {
        let waiting = self.waiting.take();
        let idle_until = Some(self.idle_until.get())
            .filter(|&t| t >= self.next_end)
            .unwrap_or(0);
        let quiet = self.quiet.get()
            && finished.is_empty()
            && waiting.is_empty()
            && idle_until == self.idle_told.get();
        if quiet && self.fast.as_ref().is_some_and(|f| f.quiet_done(slice)) {
            self.unanswered.set(Some(slice));
            return Ok(());
        }
        self.send(NodeBody::SliceDone(pb::SliceDone {
            slice,
            finished,
            waiting,
            idle_until,
        }))?;
        self.idle_told.set(idle_until);
        self.quiet.set(true);
        if let Some(f) = &self.fast {
            f.stream_done(slice);
        }
        Ok(())
    }

    /// Sends a control request in-stream; the reply comes as
    /// [`ServerEvent::Control`].
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn control(&self, req: pb::ControlRequest) -> Result<(), ClientError> {
        self.send(NodeBody::Control(req))
    }

    /// Leaves the run cleanly.
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn detach(&self, reason: &str) -> Result<(), ClientError> {
        self.send(NodeBody::Detach(pb::Detach {
            reason: reason.to_string(),
        }))
    }

    /// Fault injection for tests: the datagram SliceDone(`slice`) and the
    /// datagram Continue answering it are each lost once, as a congested
    /// host could lose them; the repeat of SliceDone must recover both.
    /// Datagrams only: a client on the shared-memory barrier is unaffected.
    pub fn simulate_datagram_loss(&mut self, slice: u64) {
        if let Some(f) = &mut self.fast {
            f.simulate_loss(slice);
        }
    }

    /// Waits for the server's next message.
    ///
    /// # Errors
    /// [`ClientError`] when the stream breaks or closes without Shutdown.
    pub async fn next_event(&mut self) -> Result<ServerEvent, ClientError> {
        let msg = loop {
            let (unanswered, last) = (self.unanswered.get(), self.last_slice);
            let fast = self.fast.as_ref();
            // The fast path first: the shared-memory barrier blocks in its
            // futex wait before the stream is looked at.
            tokio::select! {
                biased;
                next = async {
                    match fast {
                        Some(f) => f.next_continue(unanswered, last).await,
                        None => std::future::pending().await,
                    }
                } => match next {
                    Next::Continue {
                        slice,
                        start_cycle,
                        node_cycles,
                    } => {
                        return Ok(self.continued(pb::Continue {
                            slice,
                            start_cycle,
                            node_cycles,
                            frames: Vec::new(),
                        }));
                    }
                    Next::Stream => self.unanswered.set(None),
                },
                m = self.inbound.message() => break m?,
            }
        };
        self.event(msg)
    }

    /// Continue `c` arrived (on any path): nothing is left unanswered, and
    /// a frame for one of the nodes voids the standing promise.
    fn continued(&mut self, c: pb::Continue) -> ServerEvent {
        self.last_slice = Some(c.slice);
        self.unanswered.set(None);
        self.next_end = c
            .start_cycle
            .saturating_add(c.node_cycles)
            .saturating_add(c.node_cycles);
        if !c.frames.is_empty() {
            self.idle_told.set(0);
        }
        ServerEvent::Continue(c)
    }

    /// What a message of the stream (`None`: closed) says.
    fn event(&mut self, msg: Option<pb::ServerMessage>) -> Result<ServerEvent, ClientError> {
        match msg.and_then(|m| m.body) {
            Some(ServerBody::Cont(c)) => Ok(self.continued(c)),
            Some(ServerBody::Shutdown(s)) => Ok(ServerEvent::Shutdown(s)),
            Some(ServerBody::Control(c)) => Ok(ServerEvent::Control(c)),
            Some(ServerBody::Welcome(_)) => Err(ClientError::Protocol("a second Welcome".into())),
            None => Err(ClientError::Closed),
        }
    }
}

fn wrap(body: NodeBody) -> pb::NodeMessage {
    pb::NodeMessage { body: Some(body) }
}
