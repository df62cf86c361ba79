//! Client side of the datagram fast path (`DatagramSync` in
//! `proto/fsin/v1/sync.proto`): a UDP socket connected to the server for
//! SliceDone (and unicast Continue), plus, with a multicast group, a socket
//! that joined the group for the one Continue sent to every client.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

use fsin_proto::v1::{self as pb};
use prost::Message;
use tokio::net::UdpSocket;

/// The sockets and identity of one client's datagram path.
pub(crate) struct Link {
    sock: UdpSocket,
    /// The same socket for sends: tokio's `try_send` refuses to send until
    /// the runtime has seen the socket writable, which a client blocked in
    /// the shared-memory barrier may not let it see.
    send: std::net::UdpSocket,
    group: Option<UdpSocket>,
    token: u64,
    client: u64,
    run: u64,
}

impl Link {
    /// Opens the datagram path the server offered; `None` (the client
    /// keeps everything on the stream) when the sockets cannot be set up.
    pub(crate) async fn open(url: &str, offer: &pb::DatagramSync) -> Option<Link> {
        match Self::try_open(url, offer).await {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!("datagram synchronisation unavailable, using the stream: {e}");
                None
            }
        }
    }

    async fn try_open(url: &str, offer: &pb::DatagramSync) -> io::Result<Link> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
        let uri: tonic::codegen::http::Uri = url.parse().map_err(|e| bad(format!("{url}: {e}")))?;
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
        Ok(Link {
            sock,
            send,
            group,
            token: offer.token,
            client: offer.client,
            run: offer.run,
        })
    }

    /// Sends SliceDone(`slice`); false when the datagram could not be sent
    /// now (the caller then uses the stream).
    pub(crate) fn send_done(&self, slice: u64) -> bool {
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
    pub(crate) fn send_doorbell(&self, slice: u64) {
        let msg = pb::SyncDatagram {
            body: Some(pb::sync_datagram::Body::Doorbell(pb::ShmDoorbell {
                token: self.token,
                slice,
            })),
        };
        let _ = self.send.send(&msg.encode_to_vec());
    }

    /// The run this link belongs to (`DatagramSync.run`).
    pub(crate) fn run(&self) -> u64 {
        self.run
    }

    /// The token of this client (`DatagramSync.token`).
    pub(crate) fn token(&self) -> u64 {
        self.token
    }

    /// Waits for a Continue datagram of this run that is meant for this
    /// client (not one that sends it to its stream).
    pub(crate) async fn recv_continue(&self, buf: &mut [u8]) -> pb::DatagramContinue {
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
