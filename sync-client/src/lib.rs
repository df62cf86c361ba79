//! Node-side library for coupling node simulators (QEMU guests through
//! `nic-bridge`, Simics modules, the `fake-node` emulator) to the `fsin`
//! co-simulation server over the `fsin.v1` protocol (crate `fsin-proto`).
//!
//! A client attaches its node(s) with [`NodeLink::attach`], then per slice:
//! waits for [`ServerEvent::Continue`] from [`NodeLink::next_event`] (which carries the frames reaching its
//! nodes during the slice, each with its node cycle), runs its nodes to the
//! end of the slice sending frames with [`NodeLink::send_frame`], and
//! reports [`NodeLink::slice_done`]. [`blocking::NodeLink`] offers the same
//! calls without async. [`SliceRatio`] holds the slice arithmetic both sides
//! share (seed 003, section 4).

pub mod blocking;
pub mod fake_node;
pub mod frame;

use fsin_proto::v1::co_sim_client::CoSimClient;
use fsin_proto::v1::node_message::Body as NodeBody;
use fsin_proto::v1::server_message::Body as ServerBody;
use fsin_proto::v1::{self as pb};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::Endpoint;
use tonic::Streaming;

pub use fsin_proto::PROTOCOL_VERSION;

/// Ratio between node-simulator cycles and network cycles in one slice
/// (INSEE `simics_cycle_relation` : `fsin_cycle_relation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceRatio {
    /// Network cycles simulated per slice (`fsin_cycle_relation`).
    pub net_cycles: u64,
    /// Node-simulator cycles per slice (`simics_cycle_relation`).
    pub node_cycles: u64,
}

impl SliceRatio {
    /// Link bandwidth seen by the nodes, in bits per second, for a node
    /// clock of `node_hz` Hz and phits of `phit_bytes` bytes: one phit per
    /// network cycle, `net_cycles` network cycles per `node_cycles` node
    /// cycles (seed 003, section 4: 200 MHz, 4-byte phits, 1000:200 gives
    /// 1280 Mb/s).
    pub fn link_bits_per_second(&self, node_hz: f64, phit_bytes: u32) -> f64 {
        node_hz * self.net_cycles as f64 / self.node_cycles as f64 * f64::from(phit_bytes) * 8.0
    }
}

/// Errors of the client side.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the fsin server at {url}: {source}")]
    Connect {
        url: String,
        source: tonic::transport::Error,
    },
    #[error("the fsin server refused the stream: {0}")]
    Rpc(Box<tonic::Status>),
    #[error("the fsin server refused to attach: {0}")]
    Refused(String),
    #[error("the fsin server closed the stream")]
    Closed,
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
pub struct NodeLink {
    out: mpsc::UnboundedSender<pb::NodeMessage>,
    inbound: Streaming<pb::ServerMessage>,
    /// The server's Welcome: this client's node ids and MACs, the map of
    /// all nodes, the node clock and the synchronisation mode.
    pub welcome: pb::Welcome,
}

impl NodeLink {
    /// Connects to `url` (e.g. `http://127.0.0.1:50051`), attaches `nodes`,
    /// and waits until the server has every node of the run (Welcome).
    ///
    /// # Errors
    /// [`ClientError`]: unreachable server, refused attach (the reason the
    /// server gave), or a closed stream.
    pub async fn attach(
        url: &str,
        client_name: &str,
        nodes: Vec<pb::NodeSpec>,
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
        };
        out.send(wrap(NodeBody::Attach(attach)))
            .map_err(|_| ClientError::Closed)?;
        let mut inbound = client
            .sync(UnboundedReceiverStream::new(rx))
            .await?
            .into_inner();
        match inbound.message().await?.and_then(|m| m.body) {
            Some(ServerBody::Welcome(welcome)) => Ok(NodeLink {
                out,
                inbound,
                welcome,
            }),
            Some(ServerBody::Shutdown(s)) => Err(ClientError::Refused(s.reason)),
            Some(other) => Err(ClientError::Protocol(format!(
                "expected Welcome, got {other:?}"
            ))),
            None => Err(ClientError::Closed),
        }
    }

    fn send(&self, body: NodeBody) -> Result<(), ClientError> {
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

    /// Reports the end of slice `slice`, with the nodes whose workload
    /// completed in it.
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn slice_done(&self, slice: u64, finished: Vec<pb::AppReport>) -> Result<(), ClientError> {
        self.send(NodeBody::SliceDone(pb::SliceDone { slice, finished }))
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

    /// Waits for the server's next message.
    ///
    /// # Errors
    /// [`ClientError`] when the stream breaks or closes without Shutdown.
    pub async fn next_event(&mut self) -> Result<ServerEvent, ClientError> {
        match self.inbound.message().await?.and_then(|m| m.body) {
            Some(ServerBody::Cont(c)) => Ok(ServerEvent::Continue(c)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_003_bandwidth_example() {
        let r = SliceRatio {
            net_cycles: 200,
            node_cycles: 1000,
        };
        assert_eq!(r.link_bits_per_second(200e6, 4), 1280e6);
    }
}
