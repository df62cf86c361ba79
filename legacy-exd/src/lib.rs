//! Adapter for INSEE's original co-simulation protocol ("exd", docs/contracts.md "Legacy
//! INSEE/Simics protocol"), so that existing INSEE Simics modules work
//! unchanged with `fsin serve --legacy-exd`.
//!
//! The adapter speaks the legacy protocol to the nodes and stands for all
//! of them as one `fsin.v1` client of the server (two-level
//! synchronisation, Simics paper section 5):
//! - sync on UDP multicast (225.0.0.37:12345): `CONNECT:`, u64 nodes,
//!   `:`, MAC (23 bytes), answered by `OK:`, MAC (9 bytes); per slice
//!   `TS:`, MAC, `:`, u64 node time (18 bytes) from every node, then
//!   `CONTINUE:`, u64 first node cycle, u64 node cycles (25 bytes) to all;
//!   the last CONTINUE is sent again after `resend` without a message
//!   (INSEE waited 10 s, as long as fsin's default node timeout: one lost
//!   datagram then ended the run; `fsin serve` passes a quarter of it);
//!   a TS whose time is not past the slice's start repeats the previous
//!   slice's and is ignored;
//! - frames on TCP (port 8082, on the address `fsin serve --listen` gives):
//!   the node sends its MAC and gets `OK\0`, then u16 length and frame; it
//!   receives u64 `when` (slices of extra delay: always 0), u16 length and
//!   frame. The MAC is read off the main path (an idle connection delays
//!   nothing and is closed after 5 s); a second connection for a node that
//!   has one, or with a MAC other than the one its CONNECT gave, is refused
//!   (closed without `OK`).
//!
//! All integers are little-endian. The node id is the last byte of the
//! MAC. Legacy frames carry no time stamp: a frame read during slice k is
//! stamped with the first node cycle of slice k (INSEE injected it at the
//! start of the network slice). When the last TS of a slice arrives, every
//! frame socket is read to its end before the slice is reported done, so a
//! frame written before the node's TS is counted in its slice; frame
//! sockets acknowledge at once (TCP_QUICKACK), so a node that keeps Nagle's
//! algorithm on does not hold a frame back behind a delayed ACK (two frames
//! written back to back just before TS may still see the second one
//! counted one slice later: legacy frames carry no stamp to tell).
//! The guest "magic" packets (to 1.2.3.4) go to the server (CLEAR_STATS
//! starts the measured phase) and are answered back to the sender with
//! addresses swapped, as INSEE did.
//!
//! Malformed input (a message of the wrong length, an unknown prefix, a MAC
//! whose node id is outside the network, a frame over 9018 bytes) is
//! logged; a bad frame connection is closed; the run goes on for the others.

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use fsin_proto::v1 as pb;
use sync_client::drive::{drive, DriveEnd, NodeSimulator, SliceEnd};
use sync_client::{ClientError, NodeLink};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream, UdpSocket};

use fsin_sync::warn_limit::WarnLimit;

pub mod wire;

use wire::{parse_sync, split_frames, Mac, SyncMsg, MAX_FRAME};

/// INSEE's multicast group and port for the sync messages.
pub const SYNC_GROUP: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(225, 0, 0, 37), 12345);
/// INSEE's TCP port for frames (`serv_addr`).
pub const FRAME_PORT: u16 = 8082;
/// How long a new frame connection may take to send its MAC.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// New frame connections whose MAC may be awaited at once; more are
/// closed at once (a connection flood costs no more than this many sockets).
const HELLOS: usize = 64;

/// Errors that end the adapter.
#[derive(Debug, thiserror::Error)]
pub enum ExdError {
    /// The sync group's socket failed (why).
    #[error("legacy sync socket on {SYNC_GROUP}: {0}")]
    Sync(std::io::Error),
    /// The frame port's socket failed (why).
    #[error("legacy frame port {FRAME_PORT}: {0}")]
    Frames(std::io::Error),
    /// The link to the fsin server failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

fn mac_text(m: &Mac) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The frame connection of one node and its unparsed bytes.
struct FrameConn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A frame connection that has sent its MAC.
type Hello = (TcpStream, Mac, SocketAddr);

/// The adapter's state.
struct Exd {
    nodes: usize,
    /// The last CONTINUE is sent again after this long without a message.
    resend: Duration,
    /// First node cycle of the slice the nodes run.
    slice_start: u64,
    /// Malformed sync datagrams (logged rate-limited).
    junk: WarnLimit,
    sync: UdpSocket,
    /// Node id -> MAC, from CONNECT.
    macs: BTreeMap<u32, Mac>,
    conns: BTreeMap<u32, FrameConn>,
    /// Frames read (node, bytes) not yet sent to the server.
    frames: Vec<(u32, Vec<u8>)>,
    /// Magic packets to answer at the next Continue.
    echoes: Vec<(u32, Vec<u8>)>,
    last_continue: Vec<u8>,
}

/// Serves the legacy protocol for `nodes` nodes and couples them to the
/// fsin server at `url` as one client. The frame port listens on `iface`
/// (the address of `fsin serve --listen`) and the sync group is joined on
/// its interface (loopback when the server listens on loopback, the default
/// interface for 0.0.0.0). The last CONTINUE is sent again after `resend`
/// without a message (keep it well inside the server's node timeout).
/// Returns when the server ends the run (its reason).
///
/// # Errors
/// [`ExdError`]: the sockets cannot be opened, or the server refuses or
/// drops the client.
pub async fn run(
    url: &str,
    nodes: usize,
    iface: Ipv4Addr,
    resend: Duration,
) -> Result<String, ExdError> {
    let sync = sync_socket(iface).map_err(ExdError::Sync)?;
    let listener = TcpListener::bind((iface, FRAME_PORT))
        .await
        .map_err(ExdError::Frames)?;
    tracing::info!(
        "legacy exd: sync on {SYNC_GROUP}, frames on {iface}:{FRAME_PORT}; waiting for {nodes} nodes"
    );
    let (hello_tx, mut frames) = tokio::sync::mpsc::channel(64);
    let acceptor = tokio::spawn(accept_hellos(listener, hello_tx));
    let _stop_acceptor = AbortOnDrop(acceptor);
    let frames = &mut frames;
    let mut x = Exd {
        nodes,
        resend,
        slice_start: 0,
        junk: WarnLimit::new("malformed legacy sync messages"),
        sync,
        macs: BTreeMap::new(),
        conns: BTreeMap::new(),
        frames: Vec::new(),
        echoes: Vec::new(),
        last_continue: Vec::new(),
    };
    x.connect_all(frames).await;
    let specs = x
        .macs
        .iter()
        .map(|(&id, mac)| pb::NodeSpec {
            node_id: Some(id),
            mac: mac.to_vec(),
            clock_hz: 0,
        })
        .collect();
    let mut link = NodeLink::attach(url, "legacy exd nodes", specs).await?;
    let mut sim = ExdNodes { x, frames };
    match drive(&mut link, &mut sim, std::future::pending()).await?.0 {
        DriveEnd::Shutdown(s) => Ok(s.reason),
        DriveEnd::Broken(e) => Err(e.into()),
        DriveEnd::Interrupted(sig) => Ok(format!("interrupted by {sig}")),
        DriveEnd::Left(why) => Ok(why),
    }
}

/// The legacy nodes as a [`NodeSimulator`]: each slice is a CONTINUE to
/// the nodes, and ends when every node has sent its timestamp.
struct ExdNodes<'a> {
    x: Exd,
    /// Frame connections from the acceptor.
    frames: &'a mut tokio::sync::mpsc::Receiver<Hello>,
}

impl NodeSimulator for ExdNodes<'_> {
    type Error = ExdError;

    async fn run_slice(
        &mut self,
        link: &mut NodeLink,
        c: &pb::Continue,
    ) -> Result<SliceEnd, ExdError> {
        let x = &mut self.x;
        x.deliver(c).await;
        x.slice_start = c.start_cycle;
        let mut msg = b"CONTINUE:".to_vec();
        msg.extend(c.start_cycle.to_le_bytes());
        msg.extend(c.node_cycles.to_le_bytes());
        x.last_continue = msg;
        x.send_sync(&x.last_continue).await;
        x.wait_timestamps(self.frames).await;
        for (node, data) in x.frames.drain(..) {
            link.send_frame(node, c.start_cycle, data)?;
        }
        Ok(SliceEnd::default())
    }
}

fn sync_socket(iface: Ipv4Addr) -> std::io::Result<UdpSocket> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    s.bind(&SocketAddr::V4(SYNC_GROUP).into())?;
    s.join_multicast_v4(SYNC_GROUP.ip(), &iface)?;
    s.set_multicast_if_v4(&iface)?;
    s.set_multicast_loop_v4(true)?;
    s.set_multicast_ttl_v4(1)?;
    s.set_nonblocking(true)?;
    UdpSocket::from_std(s.into())
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Accepts frame connections and reads each one's MAC in a task of its
/// own (at most [`HELLO_TIMEOUT`]), so that a connection that sends
/// nothing holds up neither the others nor the run.
async fn accept_hellos(listener: TcpListener, hellos: tokio::sync::mpsc::Sender<Hello>) {
    use tokio::io::AsyncReadExt;
    let pending = std::sync::Arc::new(tokio::sync::Semaphore::new(HELLOS));
    let mut refused = WarnLimit::new("frame connections refused (too many without a MAC)");
    loop {
        let (mut s, from) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("legacy exd: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = pending.clone().try_acquire_owned() else {
            refused.warn(|| {
                format!("legacy exd: frame connection from {from} closed: {HELLOS} others have not sent their MAC yet")
            });
            continue;
        };
        let hellos = hellos.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let _ = s.set_nodelay(true);
            let _ = socket2::SockRef::from(&s).set_quickack(true);
            let mut mac = [0u8; 6];
            match tokio::time::timeout(HELLO_TIMEOUT, s.read_exact(&mut mac)).await {
                Ok(Ok(_)) => {
                    let _ = hellos.send((s, mac, from)).await;
                }
                _ => tracing::error!(
                    "legacy exd: frame connection from {from} sent no MAC within {HELLO_TIMEOUT:?}; closed"
                ),
            }
        });
    }
}

impl Exd {
    async fn send_sync(&self, msg: &[u8]) {
        if let Err(e) = self.sync.send_to(msg, SYNC_GROUP).await {
            tracing::warn!("legacy exd: multicast send: {e}");
        }
    }

    /// Node id of `mac` (its last byte), if it is inside the network.
    fn node_of(&self, mac: &Mac, what: &str) -> Option<u32> {
        let id = u32::from(mac[5]);
        if (id as usize) < self.nodes {
            Some(id)
        } else {
            tracing::error!(
                "legacy exd: {what} with MAC {}: node id {id} (its last byte) is outside the {} nodes",
                mac_text(mac),
                self.nodes
            );
            None
        }
    }

    /// Waits until every node has sent CONNECT and opened its frame
    /// connection.
    async fn connect_all(&mut self, frames: &mut tokio::sync::mpsc::Receiver<Hello>) {
        let mut buf = [0u8; 64];
        while self.macs.len() < self.nodes || self.conns.len() < self.nodes {
            tokio::select! {
                r = self.sync.recv_from(&mut buf) => match r {
                    Ok((n, from)) => self.on_sync(&buf[..n], from, None).await,
                    Err(e) => tracing::warn!("legacy exd: sync socket: {e}"),
                },
                Some(h) = frames.recv() => self.hello(h).await,
            }
        }
        tracing::info!("legacy exd: all {} nodes connected", self.nodes);
    }

    /// A node's frame connection with its MAC: answered by `OK\0`, or
    /// closed when the MAC is outside the network, another connection of
    /// that node is open, or its CONNECT gave another MAC.
    async fn hello(&mut self, (mut s, mac, from): Hello) {
        let Some(id) = self.node_of(&mac, "frame connection") else {
            return;
        };
        if self.conns.contains_key(&id) {
            tracing::error!(
                "legacy exd: frame connection from {from} for node {id} ({}), which has one; refused",
                mac_text(&mac)
            );
            return;
        }
        if let Some(known) = self.macs.get(&id).filter(|&&m| m != mac) {
            tracing::error!(
                "legacy exd: frame connection from {from} with MAC {} for node {id}, whose CONNECT gave {}; refused",
                mac_text(&mac),
                mac_text(known)
            );
            return;
        }
        if s.write_all(b"OK\0").await.is_err() {
            return;
        }
        tracing::info!(
            "legacy exd: node {id} ({}) frame connection from {from}",
            mac_text(&mac)
        );
        self.conns.insert(
            id,
            FrameConn {
                stream: s,
                buf: Vec::new(),
            },
        );
    }

    /// One sync datagram; `ts` collects the nodes that sent TS.
    async fn on_sync(&mut self, d: &[u8], from: SocketAddr, ts: Option<&mut Vec<u32>>) {
        match parse_sync(d) {
            Ok(None) => {}
            Ok(Some(SyncMsg::Connect { nodes, mac })) => {
                if let Some(id) = self.node_of(&mac, "CONNECT") {
                    if self.macs.insert(id, mac).is_none() {
                        tracing::info!(
                            "legacy exd: node {id} ({}) connected from {from} (its simulator has {nodes} nodes)",
                            mac_text(&mac)
                        );
                    }
                    let mut ok = b"OK:".to_vec();
                    ok.extend(mac);
                    self.send_sync(&ok).await;
                }
            }
            Ok(Some(SyncMsg::Ts { mac, time })) => match (ts, self.node_of(&mac, "TS")) {
                (Some(_), Some(id)) if time <= self.slice_start => {
                    tracing::debug!(
                        "legacy exd: TS of node {id} at node time {time}, not past the slice's start {}: a repeat; ignored",
                        self.slice_start
                    );
                }
                (Some(ts), Some(id)) if self.macs.get(&id) == Some(&mac) => {
                    tracing::trace!("legacy exd: TS of node {id} at node time {time}");
                    if !ts.contains(&id) {
                        ts.push(id);
                    }
                }
                (None, _) => {
                    tracing::warn!("legacy exd: TS from {from} before the run started; ignored")
                }
                (Some(_), _) => tracing::error!(
                    "legacy exd: TS from {from} with MAC {} of no connected node; ignored",
                    mac_text(&mac)
                ),
            },
            Err(why) => self
                .junk
                .warn(|| format!("legacy exd: malformed sync message from {from}: {why}")),
        }
    }

    /// Waits for the TS of every node of the run, reading frames meanwhile;
    /// then reads every frame connection to its end.
    async fn wait_timestamps(&mut self, frames: &mut tokio::sync::mpsc::Receiver<Hello>) {
        let mut ts = Vec::new();
        let mut buf = [0u8; 64];
        while ts.len() < self.macs.len() {
            let conns = &self.conns;
            let readable = std::future::poll_fn(|cx| {
                for (&id, c) in conns {
                    if c.stream.poll_read_ready(cx).is_ready() {
                        return std::task::Poll::Ready(id);
                    }
                }
                std::task::Poll::Pending
            });
            tokio::select! {
                r = self.sync.recv_from(&mut buf) => match r {
                    Ok((n, from)) => self.on_sync(&buf[..n], from, Some(&mut ts)).await,
                    Err(e) => tracing::warn!("legacy exd: sync socket: {e}"),
                },
                id = readable => self.read_frames(id, false),
                Some(h) = frames.recv() => self.hello(h).await,
                () = tokio::time::sleep(self.resend) => {
                    tracing::warn!(
                        "legacy exd: no message for {:?}: CONTINUE sent again",
                        self.resend
                    );
                    self.send_sync(&self.last_continue).await;
                }
            }
        }
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in ids {
            self.read_frames(id, true);
        }
    }

    /// Reads what node `id`'s connection holds and splits it into frames;
    /// closes the connection on EOF, error or an oversized frame. With
    /// `direct`, reads even when the runtime has not yet seen the socket
    /// readable (a frame written before the node's TS is already in it);
    /// otherwise through the runtime, which then waits for the next bytes.
    fn read_frames(&mut self, id: u32, direct: bool) {
        use std::io::Read;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let sock = socket2::SockRef::from(&c.stream);
        let mut chunk = [0u8; 16384];
        let closed = loop {
            // Acknowledge at once: a node that leaves Nagle's algorithm on
            // holds a frame until the previous one is acknowledged, which a
            // delayed ACK would make come after the node's TS.
            let _ = sock.set_quickack(true);
            let r = if direct {
                (&*sock).read(&mut chunk)
            } else {
                c.stream
                    .try_io(tokio::io::Interest::READABLE, || (&*sock).read(&mut chunk))
            };
            match r {
                Ok(0) => break Some("closed by the node".to_string()),
                Ok(n) => c.buf.extend(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        let split = split_frames(&c.buf);
        for r in split.frames {
            let frame = c.buf[r].to_vec();
            tracing::debug!("legacy exd: node {id} sent a {}-byte frame", frame.len());
            if fsin_frames::is_magic(&frame) {
                self.echoes.push((id, swap_addresses(&frame)));
            }
            self.frames.push((id, frame));
        }
        let at = split.consumed;
        let bad = split
            .oversized
            .map(|len| format!("a frame of {len} bytes (at most {MAX_FRAME})"));
        c.buf.drain(..at);
        if let Some(why) = bad.or(closed) {
            tracing::error!("legacy exd: node {id} frame connection: {why}; closed");
            self.conns.remove(&id);
        }
    }

    /// Writes the frames of Continue `c` (and the answers to magic packets)
    /// to their nodes' connections.
    async fn deliver(&mut self, c: &pb::Continue) {
        let echoes = std::mem::take(&mut self.echoes);
        let all = c
            .frames
            .iter()
            .map(|d| (d.node, &d.data[..]))
            .chain(echoes.iter().map(|(n, f)| (*n, &f[..])));
        for (node, data) in all {
            let Some(conn) = self.conns.get_mut(&node) else {
                tracing::warn!("legacy exd: frame for node {node}, which has no frame connection");
                continue;
            };
            let mut msg = Vec::with_capacity(10 + data.len());
            msg.extend(0u64.to_le_bytes());
            msg.extend((data.len() as u16).to_le_bytes());
            msg.extend(data);
            if let Err(e) = conn.stream.write_all(&msg).await {
                tracing::error!("legacy exd: node {node} frame connection: {e}; closed");
                self.conns.remove(&node);
            }
        }
    }
}

/// The frame with Ethernet and IPv4 addresses and UDP ports swapped.
fn swap_addresses(f: &[u8]) -> Vec<u8> {
    let mut g = f.to_vec();
    g[..6].copy_from_slice(&f[6..12]);
    g[6..12].copy_from_slice(&f[..6]);
    g[26..30].copy_from_slice(&f[30..34]);
    g[30..34].copy_from_slice(&f[26..30]);
    g[34..36].copy_from_slice(&f[36..38]);
    g[36..38].copy_from_slice(&f[34..36]);
    g
}

#[cfg(test)]
mod tests {
    use super::wire::SyncError;
    use super::*;
    use fsin_frames::{is_magic, MAGIC_PAYLOAD};

    #[test]
    fn sync_messages_parse_by_the_design_layout() {
        let mut connect = b"CONNECT:".to_vec();
        connect.extend(8u64.to_le_bytes());
        connect.push(b':');
        connect.extend([0, 1, 2, 3, 4, 5]);
        assert_eq!(connect.len(), 23);
        assert_eq!(
            parse_sync(&connect),
            Ok(Some(SyncMsg::Connect {
                nodes: 8,
                mac: [0, 1, 2, 3, 4, 5]
            }))
        );
        let mut ts = b"TS:".to_vec();
        ts.extend([9, 8, 7, 6, 5, 4]);
        ts.push(b':');
        ts.extend(123_456u64.to_le_bytes());
        assert_eq!(ts.len(), 18);
        assert_eq!(
            parse_sync(&ts),
            Ok(Some(SyncMsg::Ts {
                mac: [9, 8, 7, 6, 5, 4],
                time: 123_456
            }))
        );
        assert_eq!(parse_sync(b"CONTINUE:0123456789abcdef"), Ok(None));
        assert_eq!(parse_sync(&ts[..17]), Err(SyncError::Ts(17)));
        assert_eq!(
            parse_sync(&ts[..17]).unwrap_err().to_string(),
            "TS of 17 bytes (want 18: \"TS:\" MAC \":\" u64)"
        );
        assert_eq!(parse_sync(&connect[..20]), Err(SyncError::Connect(20)));
        assert_eq!(
            parse_sync(b"HELLO").unwrap_err().to_string(),
            "unknown message \"HELLO\" (5 bytes)"
        );
    }

    #[test]
    fn magic_packets_are_answered_with_addresses_swapped() {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[0x11, 0x22, 0x33, 0x44, 0x55, 0x66]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 3]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 4]);
        f[30..34].copy_from_slice(&[1, 2, 3, 4]);
        f[34..36].copy_from_slice(&1000u16.to_be_bytes());
        f[36..38].copy_from_slice(&33434u16.to_be_bytes());
        f[MAGIC_PAYLOAD] = 1;
        assert!(is_magic(&f));
        let g = swap_addresses(&f);
        assert_eq!(g[..6], [2, 0, 0, 0, 0, 3]);
        assert_eq!(g[6..12], [0x11, 0x22, 0x33, 0x44, 0x55, 0x66]);
        assert_eq!(g[26..30], [1, 2, 3, 4]);
        assert_eq!(g[30..34], [10, 0, 0, 4]);
        assert_eq!(g[34..36], 33434u16.to_be_bytes());
        assert_eq!(g[MAGIC_PAYLOAD], 1);
        assert!(!is_magic(&g));
    }
}
