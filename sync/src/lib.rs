//! Synchronisation transports of `fsin.v1` for quiet rounds of lock-step:
//! rounds in which a client sent nothing on its gRPC stream and gets no
//! frame, so that SliceDone and Continue can take a faster way than the
//! stream (which stays, for everything else, in `sync-client` and
//! `fsin-cosim`).
//!
//! Each transport is one module holding both halves:
//!
//! - [`datagram`]: SliceDone and Continue as UDP datagrams, optionally one
//!   multicast Continue for all (`DatagramSync` in `sync.proto`).
//! - [`shm`]: the shared-memory slice barrier of same-host clients, which
//!   rings the server through the datagram path (`ShmBarrier`).
//!
//! [`warn_limit`] rate-limits the warnings about what strangers send, for
//! the transports' sockets and the legacy adapter's.
//!
//! A client half implements [`ClientPath`], a server half [`ServerPath`];
//! [`QuietPath`] and [`Server`] are the one a client, or the coordinator, uses.
//! To add a transport: a module with both halves, a variant in [`QuietPath`]
//! and [`Server`] (and in [`Via`] and [`Sent`], for the server's log of the
//! ways Continues took), how [`Server::start`] and [`QuietPath::open`] choose
//! it, and its offer in `proto/fsin/v1/sync.proto` (docs/architecture.md,
//! "Adding a synchronisation transport").

#![warn(missing_docs)]

pub mod datagram;
pub mod floor;
pub mod shm;
pub mod warn_limit;

use std::future::Future;
use std::net::{SocketAddr, SocketAddrV4};
use std::time::Instant;

use fsin_proto::v1 as pb;

pub use shm::monotonic_ns;

/// What a client's fast path says about the Continue its client waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Continue(`slice`) without frames came on this path: run the slice
    /// of `node_cycles` node cycles from node cycle `start_cycle`.
    Continue {
        /// The slice's number.
        slice: u64,
        /// Its first node cycle.
        start_cycle: u64,
        /// Its length, node cycles.
        node_cycles: u64,
    },
    /// The Continue (or the Shutdown) comes on the stream.
    Stream,
}

/// The client half of a quiet-round transport. The caller (`NodeLink` of
/// `sync-client`) keeps the stream: it sends there what this path does not
/// take, and reads it while it waits on this path.
pub trait ClientPath {
    /// Carries SliceDone(`slice`) of a quiet slice (nothing sent on the
    /// stream in it, nothing to report); false when this path cannot carry
    /// it now, and the caller sends it on the stream.
    fn quiet_done(&self, slice: u64) -> bool;

    /// SliceDone(`slice`) went on the stream.
    fn stream_done(&self, slice: u64);

    /// Waits for the Continue that comes on this path: `unanswered` is the
    /// slice of the last SliceDone this path carried if no Continue came
    /// since, `last` the slice of the last Continue received (a Continue of
    /// that slice or before is a duplicate). The future does not complete
    /// while nothing comes: the caller reads the stream meanwhile and drops
    /// it when the stream speaks first.
    fn next_continue(
        &self,
        unanswered: Option<u64>,
        last: Option<u64>,
    ) -> impl Future<Output = Next>;

    /// Test hook: this path loses its messages of round `slice` once each,
    /// as a congested host could (paths with nothing to lose ignore it).
    fn simulate_loss(&mut self, slice: u64) {
        let _ = slice;
    }
}

/// Where a client stands in the current round, as the coordinator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Not in the run (left, faulted, or unknown).
    Gone,
    /// Has not finished the current slice.
    Running,
    /// Has finished the current slice.
    Done,
}

/// What a server path heard from a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// `client` ended the current slice quietly, at `at`.
    Done {
        /// The client's id.
        client: u64,
        /// When it was heard.
        at: Instant,
    },
    /// `client` broke the protocol on this path: `why`, for its fault.
    Malformed {
        /// The client's id.
        client: u64,
        /// What it broke.
        why: String,
    },
}

/// The way a Continue went to a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Published in the shared-memory barrier.
    SharedMemory,
    /// A Continue datagram.
    Datagram,
    /// The client's stream (the caller sends it).
    Stream,
}

/// How many Continues went each way ([`Via`]) so far; displayed as the
/// server logs it at the end of a run: "X through shared memory, Y as
/// datagrams, Z on streams".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    shared_memory: u64,
    datagrams: u64,
    streams: u64,
}

impl Sent {
    /// Counts one Continue sent `via`.
    pub fn count(&mut self, via: Via) {
        *match via {
            Via::SharedMemory => &mut self.shared_memory,
            Via::Datagram => &mut self.datagrams,
            Via::Stream => &mut self.streams,
        } += 1;
    }
}

impl std::fmt::Display for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} through shared memory, {} as datagrams, {} on streams",
            self.shared_memory, self.datagrams, self.streams
        )
    }
}

/// One round's Continue, as the coordinator sends it to every client.
#[derive(Debug, Clone, Copy)]
pub struct Round<'a> {
    /// The slice it starts.
    pub slice: u64,
    /// First node cycle of the slice.
    pub start_cycle: u64,
    /// Node cycles in the slice.
    pub node_cycles: u64,
    /// Clients whose Continue goes on their stream (coordinator ids).
    pub stream: &'a [u64],
}

/// The server half of a quiet-round transport, driven by the coordinator
/// of `fsin-cosim` once per round: [`ServerPath::open_round`], then
/// [`ServerPath::answer`] for each live client, then
/// [`ServerPath::publish`]; while it waits at the barrier,
/// [`ServerPath::take`] until `None` whenever it looks, and
/// [`ServerPath::wake`] among the events it waits for. Clients are named
/// by the coordinator's ids.
pub trait ServerPath {
    /// Adds this path's offer to `client` to its `welcome`.
    fn offer(&self, client: u64, welcome: &mut pb::Welcome);

    /// Starts the round of `slice` with the clients `live`; before any
    /// Continue(`slice`) goes out, on any path.
    fn open_round(&mut self, slice: u64, live: &[u64]);

    /// How the round's Continue goes to `client`; `quiet`: it carries no
    /// frames. A path answers quietly only a client that ended the slice
    /// quietly on it. On [`Via::Stream`] the caller sends it; otherwise
    /// this path does, at [`ServerPath::publish`].
    fn answer(&mut self, client: u64, quiet: bool) -> Via;

    /// Sends the round's Continue to the clients answered on this path.
    fn publish(&mut self, round: &Round<'_>);

    /// Completes when this path may have something new for
    /// [`ServerPath::take`] that the caller would not otherwise wake for
    /// (a datagram came).
    fn wake(&self) -> impl Future<Output = ()>;

    /// The next thing heard about the current `slice` (quiet SliceDones of
    /// clients [`Standing::Running`], protocol faults), without waiting;
    /// `None` when nothing more is there now. `standing` tells where each
    /// client stands.
    fn take(&mut self, slice: u64, standing: &dyn Fn(u64) -> Standing) -> Option<Heard>;

    /// The run is over: clients waiting on this path go to their stream
    /// (which carries the Shutdown).
    fn shutdown(&self);
}

/// The quiet-round transport a client uses.
pub enum QuietPath {
    /// Datagrams each way.
    Datagram(datagram::DatagramClient),
    /// The shared-memory barrier (with its datagram doorbell).
    SharedMemory(shm::ShmClient),
}

impl QuietPath {
    /// Opens the transport the server at `url` offered in `offer`: the
    /// datagram path (the shared-memory barrier only on request,
    /// [`QuietPath::with_shared_memory`]); `None` when it cannot be set up
    /// (logged), and the client keeps everything on the stream.
    pub async fn open(url: &str, offer: &pb::DatagramSync) -> Option<QuietPath> {
        datagram::DatagramClient::open(url, offer)
            .await
            .map(QuietPath::Datagram)
    }

    /// Moves onto the shared-memory barrier of `offer` when it is offered
    /// and on this host; returns the transport in use and whether it is the
    /// barrier. The barrier's [`ClientPath::next_continue`] blocks the
    /// thread in a futex wait (20 ms at a time, then the caller looks at
    /// its stream).
    pub fn with_shared_memory(self, offer: &pb::DatagramSync) -> (QuietPath, bool) {
        let link = match self {
            QuietPath::Datagram(link) => link,
            QuietPath::SharedMemory(s) => return (QuietPath::SharedMemory(s), true),
        };
        let Some(barrier) = &offer.shm else {
            return (QuietPath::Datagram(link), false);
        };
        let path = std::path::Path::new(&barrier.path);
        match shm::ClientSide::open(path, link.run(), barrier.slot, link.token()) {
            Ok(side) => (
                QuietPath::SharedMemory(shm::ShmClient::new(side, link)),
                true,
            ),
            Err(e) => {
                tracing::debug!("shared-memory barrier {} unavailable: {e}", barrier.path);
                (QuietPath::Datagram(link), false)
            }
        }
    }
}

impl ClientPath for QuietPath {
    fn quiet_done(&self, slice: u64) -> bool {
        match self {
            QuietPath::Datagram(c) => c.quiet_done(slice),
            QuietPath::SharedMemory(c) => c.quiet_done(slice),
        }
    }

    fn stream_done(&self, slice: u64) {
        match self {
            QuietPath::Datagram(c) => c.stream_done(slice),
            QuietPath::SharedMemory(c) => c.stream_done(slice),
        }
    }

    async fn next_continue(&self, unanswered: Option<u64>, last: Option<u64>) -> Next {
        match self {
            QuietPath::Datagram(c) => c.next_continue(unanswered, last).await,
            QuietPath::SharedMemory(c) => c.next_continue(unanswered, last).await,
        }
    }

    fn simulate_loss(&mut self, slice: u64) {
        match self {
            QuietPath::Datagram(c) => c.simulate_loss(slice),
            QuietPath::SharedMemory(c) => c.simulate_loss(slice),
        }
    }
}

/// The quiet-round transports of the server.
pub enum Server {
    /// Datagrams each way, with every client.
    Datagram(datagram::Server),
    /// The shared-memory barrier with the clients that map it, datagrams
    /// with the others.
    SharedMemory(shm::Server),
}

impl Server {
    /// Binds the datagram path on `addr` (the address the gRPC service
    /// listens on; port 0 for a free one), with Continues to the multicast
    /// `group` if given; see [`datagram::Server::bind`].
    ///
    /// # Errors
    /// The socket error.
    pub fn bind(addr: SocketAddr, group: Option<SocketAddrV4>) -> std::io::Result<Server> {
        datagram::Server::bind(addr, group).map(Server::Datagram)
    }

    /// Starts the run with `clients` (the coordinator's ids, ascending):
    /// their tokens, and with `shared_memory` the barrier in [`shm::dir`].
    /// A barrier that cannot be created only costs speed: logged, and the
    /// quiet rounds use datagrams.
    pub fn start(self, clients: &[u64], shared_memory: bool) -> Server {
        let mut d = match self {
            Server::Datagram(d) => d,
            started @ Server::SharedMemory(_) => return started,
        };
        d.start(clients);
        if !shared_memory {
            return Server::Datagram(d);
        }
        let dir = shm::dir();
        match shm::ServerSide::create(&dir, d.run(), &d.tokens()) {
            Ok(side) => {
                tracing::debug!("shared-memory barrier {}", side.path().display());
                Server::SharedMemory(shm::Server::new(side, d, clients))
            }
            Err(e) => {
                tracing::warn!(
                    "shared-memory barrier unavailable in {} ({e}); quiet rounds use datagrams",
                    dir.display()
                );
                Server::Datagram(d)
            }
        }
    }
}

impl ServerPath for Server {
    fn offer(&self, client: u64, welcome: &mut pb::Welcome) {
        match self {
            Server::Datagram(s) => s.offer(client, welcome),
            Server::SharedMemory(s) => s.offer(client, welcome),
        }
    }

    fn open_round(&mut self, slice: u64, live: &[u64]) {
        match self {
            Server::Datagram(s) => s.open_round(slice, live),
            Server::SharedMemory(s) => s.open_round(slice, live),
        }
    }

    fn answer(&mut self, client: u64, quiet: bool) -> Via {
        match self {
            Server::Datagram(s) => s.answer(client, quiet),
            Server::SharedMemory(s) => s.answer(client, quiet),
        }
    }

    fn publish(&mut self, round: &Round<'_>) {
        match self {
            Server::Datagram(s) => s.publish(round),
            Server::SharedMemory(s) => s.publish(round),
        }
    }

    async fn wake(&self) {
        match self {
            Server::Datagram(s) => s.wake().await,
            Server::SharedMemory(s) => s.wake().await,
        }
    }

    fn take(&mut self, slice: u64, standing: &dyn Fn(u64) -> Standing) -> Option<Heard> {
        match self {
            Server::Datagram(s) => s.take(slice, standing),
            Server::SharedMemory(s) => s.take(slice, standing),
        }
    }

    fn shutdown(&self) {
        match self {
            Server::Datagram(s) => s.shutdown(),
            Server::SharedMemory(s) => s.shutdown(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const URL: &str = "http://127.0.0.1:1";

    fn offer(server: &Server, client: u64) -> pb::DatagramSync {
        let mut welcome = pb::Welcome::default();
        server.offer(client, &mut welcome);
        welcome.datagram.expect("an offer")
    }

    /// Everything `server` heard about `slice` once it woke up.
    async fn heard(
        server: &mut Server,
        slice: u64,
        standing: &dyn Fn(u64) -> Standing,
    ) -> Vec<Heard> {
        tokio::time::timeout(Duration::from_secs(5), server.wake())
            .await
            .expect("woken");
        std::iter::from_fn(|| server.take(slice, standing)).collect()
    }

    fn round(slice: u64, stream: &[u64]) -> Round<'_> {
        Round {
            slice,
            start_cycle: slice * 100,
            node_cycles: 100,
            stream,
        }
    }

    #[tokio::test]
    async fn a_quiet_round_through_datagrams() {
        let ip = "127.0.0.1".parse().unwrap();
        let mut server = Server::bind(SocketAddr::new(ip, 0), None)
            .unwrap()
            .start(&[4], false);
        assert!(matches!(server, Server::Datagram(_)));
        let client = QuietPath::open(URL, &offer(&server, 4)).await.unwrap();
        let (client, shm) = client.with_shared_memory(&offer(&server, 4));
        assert!(!shm, "not offered");
        server.open_round(0, &[4]);
        assert_eq!(server.answer(4, true), Via::Stream);
        server.publish(&round(0, &[4]));
        assert!(client.quiet_done(0));
        let h = heard(&mut server, 0, &|_| Standing::Running).await;
        assert!(matches!(h[..], [Heard::Done { client: 4, .. }]), "{h:?}");
        server.open_round(1, &[4]);
        assert_eq!(server.answer(4, true), Via::Datagram);
        server.publish(&round(1, &[]));
        let next = tokio::time::timeout(
            Duration::from_secs(5),
            client.next_continue(Some(0), Some(0)),
        );
        let want = Next::Continue {
            slice: 1,
            start_cycle: 100,
            node_cycles: 100,
        };
        assert_eq!(next.await.unwrap(), want);
    }

    #[tokio::test]
    async fn a_quiet_round_through_shared_memory() {
        let ip = "127.0.0.1".parse().unwrap();
        let mut server = Server::bind(SocketAddr::new(ip, 0), None)
            .unwrap()
            .start(&[3, 7], true);
        assert!(matches!(server, Server::SharedMemory(_)));
        let mut clients = Vec::new();
        for id in [3, 7] {
            let link = QuietPath::open(URL, &offer(&server, id)).await.unwrap();
            let (link, shm) = link.with_shared_memory(&offer(&server, id));
            assert!(shm);
            clients.push(link);
        }
        server.open_round(0, &[3, 7]);
        for id in [3, 7] {
            assert_eq!(server.answer(id, true), Via::Stream);
        }
        server.publish(&round(0, &[3, 7]));
        // Client 3 ends slice 0 quietly, client 7 on its stream: the
        // second to arrive rings, and the server reads client 3's slot.
        assert!(clients[0].quiet_done(0));
        clients[1].stream_done(0);
        let standing = |id| match id {
            3 => Standing::Running,
            _ => Standing::Done,
        };
        let h = heard(&mut server, 0, &standing).await;
        assert!(matches!(h[..], [Heard::Done { client: 3, .. }]), "{h:?}");
        server.open_round(1, &[3, 7]);
        assert_eq!(server.answer(3, true), Via::SharedMemory);
        assert_eq!(server.answer(7, true), Via::Stream);
        server.publish(&round(1, &[7]));
        let want = Next::Continue {
            slice: 1,
            start_cycle: 100,
            node_cycles: 100,
        };
        assert_eq!(clients[0].next_continue(Some(0), Some(0)).await, want);
        assert_eq!(
            clients[1].next_continue(Some(0), Some(0)).await,
            Next::Stream
        );
        server.shutdown();
        assert_eq!(
            clients[0].next_continue(Some(1), Some(1)).await,
            Next::Stream
        );
    }
}
