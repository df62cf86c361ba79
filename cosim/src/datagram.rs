//! Server side of the datagram fast path of `fsin.v1` (`DatagramSync` in
//! `proto/fsin/v1/sync.proto`): quiet rounds of lock-step cost one UDP
//! datagram each way instead of two HTTP/2 frames through several tasks, and
//! with a multicast group one datagram reaches every client (the multicast
//! continue of the Simics paper, section 4).
//!
//! The coordinator decides per client and per slice which path a Continue
//! takes; this module owns the socket, the run identity and the last
//! Continue (answered again to a client that repeats its SliceDone because
//! a datagram was lost).

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

use fsin_proto::v1::{self as pb};
use prost::Message;

use fsin_frames::warn_limit::WarnLimit;

/// A datagram a client sends.
pub enum Inbound {
    /// A quiet SliceDone.
    Done(pb::DatagramSliceDone),
    /// Read the shared-memory barrier (`ShmDoorbell`).
    Doorbell(pb::ShmDoorbell),
}

/// The server's UDP socket and what it last sent.
pub struct DatagramSide {
    sock: tokio::net::UdpSocket,
    port: u16,
    group: Option<SocketAddrV4>,
    run: u64,
    buf: Vec<u8>,
    last: Vec<u8>,
    /// Datagrams that are not ours, or carry no known token.
    junk: WarnLimit,
}

impl DatagramSide {
    /// Binds a UDP socket on `ip` (the address the gRPC service listens on)
    /// with a free port; with `group`, Continue goes to that multicast group
    /// through the interface of `ip` (loopback stays on loopback).
    ///
    /// # Errors
    /// The socket error (address in use, no permission for the group).
    pub fn bind(ip: IpAddr, group: Option<SocketAddrV4>) -> io::Result<DatagramSide> {
        let std_sock = std::net::UdpSocket::bind(SocketAddr::new(ip, 0))?;
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
        Ok(DatagramSide {
            sock: tokio::net::UdpSocket::from_std(std_sock)?,
            port,
            group,
            run: rand::random(),
            buf: vec![0; 2048],
            last: Vec::new(),
            junk: WarnLimit::new("stray datagrams"),
        })
    }

    /// What a client is told in its Welcome, with its slot of the
    /// shared-memory barrier if there is one.
    pub fn offer(&self, token: u64, client: u64, shm: Option<pb::ShmBarrier>) -> pb::DatagramSync {
        pb::DatagramSync {
            port: u32::from(self.port),
            group: self.group.map(|g| g.to_string()).unwrap_or_default(),
            token,
            client,
            run: self.run,
            shm,
        }
    }

    /// Waits until a datagram can be read.
    pub async fn readable(&self) -> io::Result<()> {
        self.sock.readable().await
    }

    /// Identifies the run (`DatagramSync.run`).
    pub fn run(&self) -> u64 {
        self.run
    }

    /// Reads the next waiting SliceDone or doorbell datagram and its
    /// sender; `None` when none is waiting or the socket fails (logged;
    /// the barrier's timeout still names clients that never report).
    /// Anything else that arrives is logged and skipped.
    pub fn try_recv(&mut self) -> Option<(SocketAddr, Inbound)> {
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

    /// Logs (rate-limited) a datagram that is well formed but not for this
    /// run, e.g. one with an unknown token.
    pub fn stray(&mut self, message: impl FnOnce() -> String) {
        self.junk.warn(message);
    }

    /// Sends Continue(`slice`) as a datagram: once to the multicast group,
    /// or to each address in `to`. `stream_clients` (multicast only) names
    /// the clients that must wait for their stream instead.
    pub fn send_continue(
        &mut self,
        slice: u64,
        start_cycle: u64,
        node_cycles: u64,
        to: &[SocketAddr],
        stream_clients: Vec<u64>,
    ) {
        let stream_clients = if self.group.is_some() {
            stream_clients
        } else {
            Vec::new()
        };
        let msg = pb::SyncDatagram {
            body: Some(pb::sync_datagram::Body::Cont(pb::DatagramContinue {
                run: self.run,
                slice,
                start_cycle,
                node_cycles,
                stream_clients,
            })),
        };
        self.last = msg.encode_to_vec();
        if to.is_empty() {
            return;
        }
        match self.group {
            Some(g) => self.send(SocketAddr::V4(g)),
            None => to.iter().for_each(|&a| self.send(a)),
        }
    }

    /// Sends the last Continue again to `to` (a client repeated its
    /// SliceDone, so it has not seen it).
    pub fn resend(&self, to: SocketAddr) {
        self.send(to);
    }

    /// A lost or refused send is recovered by the client repeating its
    /// SliceDone, so errors are only logged.
    fn send(&self, to: SocketAddr) {
        if let Err(e) = self.sock.try_send_to(&self.last, to) {
            tracing::debug!("datagram Continue to {to}: {e}");
        }
    }
}
