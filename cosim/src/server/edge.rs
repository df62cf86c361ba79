//! The tonic edge: the `fsin.v1.CoSim` service, one reader task per client
//! stream, and the events they hand the coordinator. Everything that comes
//! from a socket is checked or bounded here or by its owner: client text is
//! cut ([`bounded`]), tokens compared in constant time, control requests
//! decoded into [`Command`]s.

use std::sync::atomic::{AtomicU64, Ordering};

use fsin::config::{SliceError, SliceRatio};
use fsin_proto::v1::co_sim_server::CoSim;
use fsin_proto::v1::control_request::Command as PbCommand;
use fsin_proto::v1::node_message::Body as NodeBody;
use fsin_proto::v1::server_message::Body as ServerBody;
use fsin_proto::v1::{self as pb};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// Where the coordinator writes a client's messages.
pub(super) type Outbox = mpsc::Sender<Result<pb::ServerMessage, Status>>;

/// Messages the server may have queued for a client that has not read
/// them yet. A client reads Continue(k) before it can end slice k, so a
/// live one has two or three queued at most; one that stops reading its
/// stream while its SliceDones still come (e.g. as datagrams) is a fault
/// when this many are waiting, instead of growing the server without bound.
pub(super) const OUTBOX: usize = 64;

/// Events (client messages, control requests) waiting for the coordinator.
/// A client that sends faster than the coordinator takes its messages (a
/// frame flood while the network runs a slice) is slowed by TCP flow control
/// beyond this many, instead of growing the server.
pub(super) const EVENTS: usize = 1024;

/// What the edge hands the coordinator, in the order it happened on each
/// stream.
pub(super) enum Event {
    Attach {
        client: u64,
        attach: pb::Attach,
        out: Outbox,
    },
    Msg {
        client: u64,
        body: NodeBody,
    },
    /// The stream ended: `None` when it closed, the reason when it broke.
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

/// A control request (`fsin.v1.ControlRequest`), decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Command {
    /// Start the measured phase at the next barrier.
    StartMeasure,
    /// End the run at the next barrier, statistics kept.
    StopMeasure,
    /// This slice from the next one on (its range checked when decoded).
    SetSlice(SliceRatio),
    /// The report so far, as JSON in the reply.
    GetStats,
    /// End the run at the next barrier, with a reason (cut to 256 bytes).
    Shutdown(String),
}

/// A control request that cannot be carried out, whatever the run's state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refused {
    #[error("empty control request")]
    Empty,
    #[error("set_slice.{0}")]
    Slice(#[from] SliceError),
}

impl Command {
    /// The command of `req`.
    ///
    /// # Errors
    /// [`Refused`]: no command, or a slice out of range.
    pub(super) fn decode(req: pb::ControlRequest) -> Result<Command, Refused> {
        Ok(match req.command.ok_or(Refused::Empty)? {
            PbCommand::StartMeasure(_) => Command::StartMeasure,
            PbCommand::StopMeasure(_) => Command::StopMeasure,
            PbCommand::SetSlice(r) => {
                Command::SetSlice(SliceRatio::new(r.net_cycles, r.node_cycles)?)
            }
            PbCommand::GetStats(_) => Command::GetStats,
            PbCommand::Shutdown(reason) => Command::Shutdown(bounded(reason)),
        })
    }
}

/// The gRPC service: forwards everything to the coordinator.
pub(super) struct Service {
    pub(super) events: mpsc::Sender<Event>,
    pub(super) next_client: AtomicU64,
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

/// The Shutdown message that ends a client's run.
pub(super) fn shutdown_msg(reason: &str, error: bool) -> pb::ServerMessage {
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

/// Whether `given` is the run's token (`None`: no token needed). Compared
/// in time independent of where they differ.
pub(super) fn token_matches(token: Option<&str>, given: &str) -> bool {
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
pub(super) fn bounded(text: String) -> String {
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
