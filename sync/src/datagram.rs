//! The datagram fast path of `fsin.v1` (`DatagramSync` in
//! `proto/fsin/v1/sync.proto`), both halves: quiet rounds of lock-step cost
//! one UDP datagram each way instead of two HTTP/2 frames through several
//! tasks, and with a multicast group one datagram reaches every client (the
//! multicast continue of the Simics paper, section 4).
//!
//! [`Server`] owns the server's socket, the run identity, the clients'
//! tokens and the last Continue (answered again to a client that repeats
//! its SliceDone because a datagram was lost); the coordinator decides per
//! client and per slice which path a Continue takes ([`ServerPath::answer`]).
//! [`DatagramClient`] is a client's UDP socket connected to the server for
//! SliceDone (and unicast Continue), plus, with a multicast group, a socket
//! that joined the group for the one Continue sent to every client.
//!
//! The same socket carries the doorbell of the shared-memory barrier
//! ([`crate::shm`]), which builds on this path.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::warn_limit::WarnLimit;
use fsin_proto::v1::{self as pb};
use prost::Message;
use tokio::net::UdpSocket;

use crate::{ClientPath, Heard, Next, Round, ServerPath, Standing, Via};

/// A datagram a client sends.
enum Inbound {
    /// A quiet SliceDone.
    Done(pb::DatagramSliceDone),
    /// Read the shared-memory barrier (`ShmDoorbell`).
    Doorbell(pb::ShmDoorbell),
}

/// What the server knows of one client of the run.
struct Peer {
    /// The coordinator's id of the client (`DatagramSync.client`).
    id: u64,
    /// Secret carried by its DatagramSliceDone (`DatagramSync.token`).
    token: u64,
    /// Where its last DatagramSliceDone came from.
    from: Option<SocketAddr>,
    /// SliceDone of the current slice came as a datagram.
    done: bool,
    /// The current slice's Continue went to it as a datagram.
    answered: bool,
}

/// The server half: its UDP socket, the run's clients and what it last
/// sent.
pub struct Server {
    sock: tokio::net::UdpSocket,
    port: u16,
    group: Option<SocketAddrV4>,
    run: u64,
    buf: Vec<u8>,
    last: Vec<u8>,
    /// Datagrams that are not ours, or carry no known token.
    junk: WarnLimit,
    /// The run's clients, by id (ascending).
    peers: Vec<Peer>,
    /// Index in `peers` of each token.
    tokens: HashMap<u64, usize>,
    /// Where the Continue of the round goes as a datagram.
    to: Vec<SocketAddr>,
}

impl Server {
    /// Binds a UDP socket on `addr`: the address the gRPC service listens
    /// on, and a fixed port or 0 for a free one; with `group`, Continue
    /// goes to that multicast group through the interface of that address
    /// (loopback stays on loopback).
    ///
    /// # Errors
    /// The socket error (address in use, no permission for the group).
    pub fn bind(addr: SocketAddr, group: Option<SocketAddrV4>) -> io::Result<Server> {
        let ip = addr.ip();
        let std_sock = std::net::UdpSocket::bind(addr)?;
        if group.is_some() {
            let sock = socket2::Socket::from(std_sock.try_clone()?);
            let iface = match ip {
                IpAddr::V4(v4) if !v4.is_unspecified() => v4,
                _ => Ipv4Addr::UNSPECIFIED,
            };
            sock.set_multicast_if_v4(&iface)?;
            sock.set_multicast_loop_v4(true)?;
            sock.set_multicast_ttl_v4(1)?;
        }
        std_sock.set_nonblocking(true)?;
        let port = std_sock.local_addr()?.port();
        Ok(Server {
            sock: tokio::net::UdpSocket::from_std(std_sock)?,
            port,
            group,
            run: rand::random(),
            buf: vec![0; 2048],
            last: Vec::new(),
            junk: WarnLimit::new("stray datagrams"),
            peers: Vec::new(),
            tokens: HashMap::new(),
            to: Vec::new(),
        })
    }

    /// Gives each client of the run (`clients`: the coordinator's ids,
    /// ascending) its random token; a datagram that carries no token of
    /// these is stray.
    pub fn start(&mut self, clients: &[u64]) {
        self.peers = clients
            .iter()
            .map(|&id| Peer {
                id,
                token: rand::random(),
                from: None,
                done: false,
                answered: false,
            })
            .collect();
        self.tokens = self
            .peers
            .iter()
            .enumerate()
            .map(|(i, p)| (p.token, i))
            .collect();
    }

    /// Identifies the run (`DatagramSync.run`).
    pub fn run(&self) -> u64 {
        self.run
    }

    /// The tokens of the run's clients, in the order of their ids.
    pub fn tokens(&self) -> Vec<u64> {
        self.peers.iter().map(|p| p.token).collect()
    }

    fn peer(&self, client: u64) -> Option<usize> {
        self.peers.binary_search_by_key(&client, |p| p.id).ok()
    }

    /// Reads the next waiting SliceDone or doorbell datagram and its
    /// sender; `None` when none is waiting or the socket fails (logged;
    /// the barrier's timeout still names clients that never report).
    /// Anything else that arrives is logged and skipped.
    fn try_recv(&mut self) -> Option<(SocketAddr, Inbound)> {
        loop {
            let (n, from) = match self.sock.try_recv_from(&mut self.buf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) => {
                    tracing::warn!("datagram socket: {e}");
                    return None;
                }
            };
            match pb::SyncDatagram::decode(&self.buf[..n]) {
                Ok(pb::SyncDatagram {
                    body: Some(pb::sync_datagram::Body::Done(d)),
                }) => return Some((from, Inbound::Done(d))),
                Ok(pb::SyncDatagram {
                    body: Some(pb::sync_datagram::Body::Doorbell(d)),
                }) => return Some((from, Inbound::Doorbell(d))),
                Ok(_) => self.junk.warn(|| {
                    format!("datagram from {from} is neither SliceDone nor doorbell; skipped")
                }),
                Err(e) => self
                    .junk
                    .warn(|| format!("undecodable datagram from {from}: {e}")),
            }
        }
    }

    /// A lost or refused send is recovered by the client repeating its
    /// SliceDone, so errors are only logged.
    fn send(&self, to: SocketAddr) {
        if let Err(e) = self.sock.try_send_to(&self.last, to) {
            tracing::debug!("datagram Continue to {to}: {e}");
        }
    }
}

impl ServerPath for Server {
    fn offer(&self, client: u64, welcome: &mut pb::Welcome) {
        let Some(i) = self.peer(client) else { return };
        welcome.datagram = Some(pb::DatagramSync {
            port: u32::from(self.port),
            group: self.group.map(|g| g.to_string()).unwrap_or_default(),
            token: self.peers[i].token,
            client,
            run: self.run,
            shm: None,
        });
    }

    fn open_round(&mut self, _slice: u64, _live: &[u64]) {
        self.to.clear();
    }

    fn answer(&mut self, client: u64, quiet: bool) -> Via {
        let Some(i) = self.peer(client) else {
            return Via::Stream;
        };
        let p = &mut self.peers[i];
        p.answered = std::mem::take(&mut p.done) && quiet;
        match (p.answered, p.from) {
            (true, Some(from)) => {
                self.to.push(from);
                Via::Datagram
            }
            _ => Via::Stream,
        }
    }

    /// Sends Continue as a datagram: once to the multicast group, or to
    /// each client answered here. With multicast the datagram names the
    /// clients that must wait for their stream instead.
    fn publish(&mut self, round: &Round<'_>) {
        let stream_clients = if self.group.is_some() {
            round.stream.to_vec()
        } else {
            Vec::new()
        };
        let msg = pb::SyncDatagram {
            body: Some(pb::sync_datagram::Body::Cont(pb::DatagramContinue {
                run: self.run,
                slice: round.slice,
                start_cycle: round.start_cycle,
                node_cycles: round.node_cycles,
                stream_clients,
            })),
        };
        self.last = msg.encode_to_vec();
        if self.to.is_empty() {
            return;
        }
        match self.group {
            Some(g) => self.send(SocketAddr::V4(g)),
            None => self.to.iter().for_each(|&a| self.send(a)),
        }
    }

    async fn wake(&self) {
        if let Err(e) = self.sock.readable().await {
            tracing::warn!("datagram socket: {e}");
        }
    }

    /// Reads the waiting datagrams: DatagramSliceDone of quiet clients,
    /// and doorbells of the shared-memory barrier (which only wake the
    /// caller, who then reads the barrier).
    fn take(&mut self, slice: u64, standing: &dyn Fn(u64) -> Standing) -> Option<Heard> {
        let k = slice;
        while let Some((from, d)) = self.try_recv() {
            let d = match d {
                Inbound::Done(d) => d,
                Inbound::Doorbell(b) => {
                    if !self.tokens.contains_key(&b.token) {
                        self.junk
                            .warn(|| format!("doorbell from {from} with an unknown token"));
                    }
                    continue;
                }
            };
            let Some(&i) = self.tokens.get(&d.token) else {
                self.junk
                    .warn(|| format!("datagram SliceDone from {from} with an unknown token"));
                continue;
            };
            let p = &mut self.peers[i];
            let client = p.id;
            let st = standing(client);
            if st == Standing::Gone {
                continue;
            }
            if d.slice == k && st == Standing::Running {
                p.done = true;
                p.from = Some(from);
                return Some(Heard::Done {
                    client,
                    at: Instant::now(),
                });
            } else if d.slice.checked_add(1) == Some(k) && st == Standing::Running && p.answered {
                // It repeats SliceDone(k-1): our Continue(k) was lost.
                self.send(from);
            } else if d.slice > k {
                return Some(Heard::Malformed {
                    client,
                    why: format!(
                        "malformed message: datagram SliceDone({}) while slice {k} runs",
                        d.slice
                    ),
                });
            }
        }
        None
    }

    fn shutdown(&self) {}
}

/// The client half: the sockets and identity of one client's datagram
/// path.
pub struct DatagramClient {
    sock: UdpSocket,
    /// The same socket for sends: tokio's `try_send` refuses to send until
    /// the runtime has seen the socket writable, which a client blocked in
    /// the shared-memory barrier may not let it see.
    send: std::net::UdpSocket,
    group: Option<UdpSocket>,
    token: u64,
    client: u64,
    run: u64,
    /// Test hook: the round whose datagrams are lost, and which of them
    /// are still to lose (SliceDone, Continue).
    lose: Option<(u64, AtomicBool, AtomicBool)>,
}

impl DatagramClient {
    /// Opens the datagram path the server at `url` (e.g.
    /// `http://127.0.0.1:50051`) offered; `None` (the client keeps
    /// everything on the stream) when the sockets cannot be set up (logged).
    pub async fn open(url: &str, offer: &pb::DatagramSync) -> Option<DatagramClient> {
        match Self::try_open(url, offer).await {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!("datagram synchronisation unavailable, using the stream: {e}");
                None
            }
        }
    }

    async fn try_open(url: &str, offer: &pb::DatagramSync) -> io::Result<DatagramClient> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
        let uri: http::Uri = url.parse().map_err(|e| bad(format!("{url}: {e}")))?;
        let host = uri.host().ok_or_else(|| bad(format!("{url}: no host")))?;
        let server_ip = tokio::net::lookup_host(format!("{host}:0"))
            .await?
            .next()
            .ok_or_else(|| bad(format!("{host}: no address")))?
            .ip();
        let port = u16::try_from(offer.port).map_err(|_| bad(format!("port {}", offer.port)))?;
        let any: IpAddr = match server_ip {
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
        };
        let send = std::net::UdpSocket::bind(SocketAddr::new(any, 0))?;
        send.connect(SocketAddr::new(server_ip, port))?;
        send.set_nonblocking(true)?;
        let sock = UdpSocket::from_std(send.try_clone()?)?;
        let group = if offer.group.is_empty() {
            None
        } else {
            let g: SocketAddrV4 = offer
                .group
                .parse()
                .map_err(|e| bad(format!("multicast group {}: {e}", offer.group)))?;
            let iface = match server_ip {
                IpAddr::V4(v4) if v4.is_loopback() => v4,
                _ => Ipv4Addr::UNSPECIFIED,
            };
            let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
            s.set_reuse_address(true)?;
            s.bind(&SocketAddr::V4(g).into())?;
            s.join_multicast_v4(g.ip(), &iface)?;
            s.set_nonblocking(true)?;
            Some(UdpSocket::from_std(s.into())?)
        };
        Ok(DatagramClient {
            sock,
            send,
            group,
            token: offer.token,
            client: offer.client,
            run: offer.run,
            lose: None,
        })
    }

    /// Sends SliceDone(`slice`); false when the datagram could not be sent
    /// now (the caller then uses the stream).
    fn send_done(&self, slice: u64) -> bool {
        let msg = pb::SyncDatagram {
            body: Some(pb::sync_datagram::Body::Done(pb::DatagramSliceDone {
                token: self.token,
                slice,
            })),
        };
        self.send.send(&msg.encode_to_vec()).is_ok()
    }

    /// Rings the server to read the shared-memory barrier for `slice`. A
    /// lost doorbell is recovered by the waiting client ringing again.
    pub fn send_doorbell(&self, slice: u64) {
        let msg = pb::SyncDatagram {
            body: Some(pb::sync_datagram::Body::Doorbell(pb::ShmDoorbell {
                token: self.token,
                slice,
            })),
        };
        let _ = self.send.send(&msg.encode_to_vec());
    }

    /// The run this link belongs to (`DatagramSync.run`).
    pub fn run(&self) -> u64 {
        self.run
    }

    /// The token of this client (`DatagramSync.token`).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Waits for a Continue datagram of this run that is meant for this
    /// client (not one that sends it to its stream).
    async fn recv_continue(&self, buf: &mut [u8]) -> pb::DatagramContinue {
        loop {
            let ready = match &self.group {
                Some(g) => tokio::select! {
                    r = self.sock.readable() => r,
                    r = g.readable() => r,
                },
                None => self.sock.readable().await,
            };
            if ready.is_err() {
                // The socket is broken; the stream still reports the end.
                return std::future::pending().await;
            }
            for s in std::iter::once(&self.sock).chain(&self.group) {
                // Errors (e.g. ICMP port unreachable once the server has
                // gone) are left to the stream, which reports the end.
                let Ok(n) = s.try_recv(buf) else { continue };
                let Ok(pb::SyncDatagram {
                    body: Some(pb::sync_datagram::Body::Cont(c)),
                }) = pb::SyncDatagram::decode(&buf[..n])
                else {
                    continue;
                };
                if c.run == self.run && !c.stream_clients.contains(&self.client) {
                    return c;
                }
            }
        }
    }
}

impl ClientPath for DatagramClient {
    fn quiet_done(&self, slice: u64) -> bool {
        let lost = self
            .lose
            .as_ref()
            .is_some_and(|(k, done, _)| *k == slice && done.swap(false, Ordering::Relaxed));
        lost || self.send_done(slice)
    }

    fn stream_done(&self, _slice: u64) {}

    /// Takes the Continue datagrams; with a SliceDone `unanswered` it
    /// repeats it after 20 ms without a Continue, doubling up to 1 s.
    /// Never [`Next::Stream`]: the stream is read meanwhile by the caller.
    async fn next_continue(&self, unanswered: Option<u64>, last: Option<u64>) -> Next {
        let mut repeat = Duration::from_millis(20);
        let mut buf = [0u8; 1024];
        loop {
            tokio::select! {
                c = self.recv_continue(&mut buf) => {
                    if last.is_some_and(|l| c.slice <= l) {
                        continue;
                    }
                    let lost = self
                        .lose
                        .as_ref()
                        .is_some_and(|(k, _, cont)| k + 1 == c.slice && cont.swap(false, Ordering::Relaxed));
                    if lost {
                        continue;
                    }
                    return Next::Continue {
                        slice: c.slice,
                        start_cycle: c.start_cycle,
                        node_cycles: c.node_cycles,
                    };
                }
                () = async {
                    match unanswered {
                        Some(_) => tokio::time::sleep(repeat).await,
                        None => std::future::pending().await,
                    }
                } => {
                    if let Some(k) = unanswered {
                        tracing::debug!("no Continue after SliceDone({k}) for {repeat:?}: repeating it");
                        self.send_done(k);
                    }
                    repeat = (repeat * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// The datagram SliceDone(`slice`) and the datagram Continue answering
    /// it are each lost once.
    fn simulate_loss(&mut self, slice: u64) {
        self.lose = Some((slice, AtomicBool::new(true), AtomicBool::new(true)));
    }
}
