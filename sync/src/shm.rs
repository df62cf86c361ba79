//! Shared-memory slice barrier (`ShmBarrier` in `proto/fsin/v1/sync.proto`):
//! the layout of the file the server maps with its same-host clients, and
//! both sides' operations on it.
//!
//! A quiet round of lock-step then costs one store and one atomic increment
//! per client, one datagram (the doorbell, from the last client to arrive)
//! and one futex wake for all clients, instead of a datagram each way per
//! client. With one process per node and more processes than cores this is
//! what lets a round take less than one socket wake-up per process.
//!
//! Layout (little-endian, every block one 64-byte cache line):
//!
//! | block | fields |
//! |---|---|
//! | header | `magic` ([`MAGIC`]), `run`, `slots` |
//! | continue | `word` (u32 futex word: low 32 bits of the published slice; bumped by shutdown), `slice`, `start_cycle`, `node_cycles` (node cycles), `shutdown` |
//! | arrivals | `tagged` (slice << 32 \| SliceDones counted for it), `expected` |
//! | slot i | `token`, `mapped`, `done` (slice + 1 of its last quiet SliceDone), `done_ns` (CLOCK_MONOTONIC ns of it), `stream` (slice + 1 whose Continue comes on the stream) |
//!
//! Every field is only ever accessed atomically, by either side.
//!
//! [`ServerSide`] and [`ClientSide`] are the two sides' operations on the
//! mapping; [`Server`] and [`ShmClient`] are the halves of the transport
//! ([`ServerPath`], [`ClientPath`]). The barrier rings its doorbell through
//! the datagram path, so each half holds that path's half: the server's
//! reads the doorbells and serves the clients that could not map the file
//! (another host) with datagrams; the client's sends the doorbells.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fsin_proto::v1 as pb;
use fsin_shm::{wake_all, Atomics, OwnedFile};

use crate::{datagram, ClientPath, Heard, Next, Round, ServerPath, Standing, Via};

/// First eight bytes of the file.
pub const MAGIC: u64 = u64::from_le_bytes(*b"fsinshm1");

#[repr(C, align(64))]
struct Header {
    magic: AtomicU64,
    run: AtomicU64,
    slots: AtomicU64,
}

#[repr(C, align(64))]
struct Cont {
    word: AtomicU32,
    slice: AtomicU64,
    start_cycle: AtomicU64,
    node_cycles: AtomicU64,
    shutdown: AtomicU64,
}

#[repr(C, align(64))]
struct Slot {
    token: AtomicU64,
    mapped: AtomicU64,
    done: AtomicU64,
    done_ns: AtomicU64,
    stream: AtomicU64,
}

// SAFETY: each is a `#[repr(C, align(64))]` struct of atomics.
unsafe impl Atomics for Header {}
unsafe impl Atomics for Cont {}
unsafe impl Atomics for Slot {}

/// A mapping of the barrier file. Both sides hold one; the server also
/// removes the file when its side is dropped.
type Region = fsin_shm::Region<Header, Cont, Slot>;

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every process of a
/// host, so a client's SliceDone time can be compared with the server's.
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn tag(slice: u64) -> u64 {
    (slice & 0xffff_ffff) << 32
}

/// Removes the barrier files in `dir` of server processes that no longer
/// exist (killed before they could remove theirs); files of live processes
/// and of other users (the sticky `/dev/shm` refuses) stay.
fn remove_stale(dir: &Path) {
    // Without /proc no process could be told alive.
    let Ok(entries) = std::fs::read_dir(dir).and_then(|d| {
        Path::new("/proc/self")
            .exists()
            .then_some(d)
            .ok_or(io::ErrorKind::NotFound.into())
    }) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| {
                n.strip_prefix("fsin-")?
                    .strip_suffix(".shm")?
                    .split_once('-')
            })
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The server's side: creates the file, publishes Continues, reads quiet
/// SliceDones.
pub struct ServerSide {
    region: Region,
    file: OwnedFile,
}

impl ServerSide {
    /// Creates the barrier file for `slots` clients in `dir` (named
    /// `fsin-<pid>-<run>.shm`), with each slot's `tokens[i]`. The file is
    /// private to the user (mode 0600: the tokens in it authenticate
    /// datagram SliceDones) and its space is reserved before it is mapped,
    /// so a full `dir` is an error here rather than a SIGBUS later. Files
    /// that processes which no longer exist left in `dir` are removed first.
    ///
    /// # Errors
    /// The file cannot be created, its space reserved (e.g. `ENOSPC` on a
    /// full tmpfs), or mapped; nothing is left behind.
    pub fn create(dir: &Path, run: u64, tokens: &[u64]) -> io::Result<ServerSide> {
        remove_stale(dir);
        let path = dir.join(format!("fsin-{}-{run:016x}.shm", std::process::id()));
        let region = Region::create(&path, tokens.len())?;
        for (i, &t) in tokens.iter().enumerate() {
            region.slot(i).token.store(t, Ordering::Relaxed);
        }
        let h = region.header();
        h.run.store(run, Ordering::Relaxed);
        h.slots.store(tokens.len() as u64, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
        Ok(ServerSide {
            region,
            file: OwnedFile::new(&path),
        })
    }

    /// The file's path, for the offer.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether the client of `slot` has mapped the file (it then counts
    /// its SliceDones and waits for Continues here).
    pub fn mapped(&self, slot: usize) -> bool {
        self.region.slot(slot).mapped.load(Ordering::Acquire) != 0
    }

    /// If the client of `slot` ended `slice` quietly here: when, in
    /// [`monotonic_ns`] nanoseconds.
    pub fn quiet_done(&self, slot: usize, slice: u64) -> Option<u64> {
        let s = self.region.slot(slot);
        (s.done.load(Ordering::Acquire) == slice + 1).then(|| s.done_ns.load(Ordering::Relaxed))
    }

    /// Starts the round of `slice`: zero SliceDones counted, `expected`
    /// to come. Call before any Continue(`slice`) is sent, on any path.
    pub fn open_round(&self, slice: u64, expected: usize) {
        let a = self.region.arrivals();
        a.expected.store(expected as u64, Ordering::Relaxed);
        a.tagged.store(tag(slice), Ordering::Release);
    }

    /// Publishes Continue(`slice`) and wakes the waiting clients; the
    /// clients in `on_stream` are told to read theirs from the stream.
    pub fn publish(&self, slice: u64, start_cycle: u64, node_cycles: u64, on_stream: &[usize]) {
        for &i in on_stream {
            self.region
                .slot(i)
                .stream
                .store(slice + 1, Ordering::Relaxed);
        }
        let c = self.region.broadcast();
        c.slice.store(slice, Ordering::Relaxed);
        c.start_cycle.store(start_cycle, Ordering::Relaxed);
        c.node_cycles.store(node_cycles, Ordering::Relaxed);
        c.word.store(slice as u32, Ordering::Release);
        wake_all(&c.word);
    }

    /// Tells every waiting client to read its stream (which carries the
    /// Shutdown).
    pub fn shutdown(&self) {
        let c = self.region.broadcast();
        c.shutdown.store(1, Ordering::Release);
        c.word.fetch_add(1, Ordering::Release);
        wake_all(&c.word);
    }
}

/// What a client waiting for Continue(k) learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Continue(k) without frames: run it.
    Continue {
        /// The slice's number.
        slice: u64,
        /// Its first node cycle.
        start_cycle: u64,
        /// Its length, node cycles.
        node_cycles: u64,
    },
    /// Continue(k) (or the Shutdown) comes on the stream.
    Stream,
    /// Nothing yet within the timeout.
    Timeout,
}

/// A client's side: its slot, SliceDones, the wait for Continue.
pub struct ClientSide {
    region: Region,
    slot: usize,
}

impl ClientSide {
    /// Maps the server's file and claims `slot` after checking the file is
    /// this run's and the slot is this client's.
    ///
    /// # Errors
    /// The file cannot be opened or mapped (another host), or its header
    /// or slot token do not match the offer.
    pub fn open(path: &Path, run: u64, slot: u32, token: u64) -> io::Result<ClientSide> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let region = Region::open(path).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => bad("not this run's barrier file"),
            _ => e,
        })?;
        let slots = region.slots();
        let h = region.header();
        if h.magic.load(Ordering::Acquire) != MAGIC || h.run.load(Ordering::Relaxed) != run {
            return Err(bad("not this run's barrier file"));
        }
        let slot = slot as usize;
        if slot >= slots || region.slot(slot).token.load(Ordering::Relaxed) != token {
            return Err(bad("slot token does not match"));
        }
        region.slot(slot).mapped.store(1, Ordering::Release);
        Ok(ClientSide { region, slot })
    }

    /// Ends `slice` quietly (nothing sent on the stream in it).
    pub fn quiet_done(&self, slice: u64) {
        let s = self.region.slot(self.slot);
        s.done_ns.store(monotonic_ns(), Ordering::Relaxed);
        s.done.store(slice + 1, Ordering::Release);
    }

    /// Counts this client's SliceDone(`slice`) (after it went out, on
    /// either path); true when the server must be rung because the count
    /// reached the number it expects.
    pub fn arrive(&self, slice: u64) -> bool {
        let a = self.region.arrivals();
        let mut v = a.tagged.load(Ordering::Acquire);
        loop {
            if v & !0xffff_ffff != tag(slice) {
                // The server already closed this round: it has seen us.
                return false;
            }
            match a
                .tagged
                .compare_exchange_weak(v, v + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return (v & 0xffff_ffff) + 1 >= a.expected.load(Ordering::Relaxed),
                Err(now) => v = now,
            }
        }
    }

    /// Waits up to `timeout` (blocking the thread) for Continue(`slice`).
    pub fn wait(&self, slice: u64, timeout: Duration) -> Wait {
        let c = self.region.broadcast();
        let mut waited = false;
        loop {
            let word = c.word.load(Ordering::Acquire);
            if c.shutdown.load(Ordering::Acquire) != 0 {
                return Wait::Stream;
            }
            if word == slice as u32 && c.slice.load(Ordering::Relaxed) == slice {
                if self.region.slot(self.slot).stream.load(Ordering::Relaxed) == slice + 1 {
                    return Wait::Stream;
                }
                return Wait::Continue {
                    slice,
                    start_cycle: c.start_cycle.load(Ordering::Relaxed),
                    node_cycles: c.node_cycles.load(Ordering::Relaxed),
                };
            }
            if waited {
                return Wait::Timeout;
            }
            waited = fsin_shm::wait(&c.word, word, timeout);
        }
    }
}

/// Where the server creates its barrier file: `/dev/shm`, or the
/// temporary directory where there is none.
pub fn dir() -> PathBuf {
    let dir = Path::new("/dev/shm");
    if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The server half: the barrier for the clients that mapped it, the
/// datagram path for its doorbells and for the other clients.
pub struct Server {
    barrier: ServerSide,
    datagram: datagram::Server,
    /// The run's clients, by slot (ascending ids).
    clients: Vec<u64>,
    /// Per slot: SliceDone of the current slice came through shared memory.
    done: Vec<bool>,
    /// Slots whose Continue of the round goes on the stream.
    on_stream: Vec<usize>,
    /// Next slot [`ServerPath::take`] looks at.
    cursor: usize,
    /// When that pass over the slots began: [`Instant`] and
    /// [`monotonic_ns`].
    pass: (Instant, u64),
}

impl Server {
    /// The transport over `barrier`, created with the run and the tokens of
    /// the started datagram path `datagram` ([`datagram::Server::start`]),
    /// which it then builds on; `clients` are the ids of the slots'
    /// clients, in the order of the slots (ascending).
    pub fn new(barrier: ServerSide, datagram: datagram::Server, clients: &[u64]) -> Server {
        Server {
            barrier,
            datagram,
            clients: clients.to_vec(),
            done: vec![false; clients.len()],
            on_stream: Vec::new(),
            cursor: 0,
            pass: (Instant::now(), monotonic_ns()),
        }
    }

    /// The file's path, for the offer.
    pub fn path(&self) -> &Path {
        self.barrier.path()
    }

    fn slot(&self, client: u64) -> Option<usize> {
        self.clients.binary_search(&client).ok()
    }

    /// The slot of `client` if it has mapped the file (it then counts its
    /// SliceDones and waits for Continues here).
    fn mapped(&self, client: u64) -> Option<usize> {
        self.slot(client).filter(|&i| self.barrier.mapped(i))
    }
}

impl ServerPath for Server {
    fn offer(&self, client: u64, welcome: &mut pb::Welcome) {
        self.datagram.offer(client, welcome);
        if let (Some(d), Some(slot)) = (welcome.datagram.as_mut(), self.slot(client)) {
            d.shm = Some(pb::ShmBarrier {
                path: self.path().display().to_string(),
                slot: slot as u32,
            });
        }
    }

    /// Opens the round in the mapping, expecting the live clients that
    /// mapped it.
    fn open_round(&mut self, slice: u64, live: &[u64]) {
        self.datagram.open_round(slice, live);
        self.on_stream.clear();
        let expected = live.iter().filter(|&&c| self.mapped(c).is_some()).count();
        self.barrier.open_round(slice, expected);
    }

    fn answer(&mut self, client: u64, quiet: bool) -> Via {
        let Some(slot) = self.mapped(client) else {
            return self.datagram.answer(client, quiet);
        };
        if std::mem::take(&mut self.done[slot]) && quiet {
            return Via::SharedMemory;
        }
        self.on_stream.push(slot);
        Via::Stream
    }

    /// Sends the round's Continue datagram, then publishes the Continue in
    /// the mapping and wakes the clients waiting there.
    fn publish(&mut self, round: &Round<'_>) {
        self.datagram.publish(round);
        self.barrier.publish(
            round.slice,
            round.start_cycle,
            round.node_cycles,
            &self.on_stream,
        );
    }

    async fn wake(&self) {
        self.datagram.wake().await;
    }

    /// Reads the datagrams first, then every slot of a client still
    /// running; `None` once both are read through. A doorbell is rung
    /// after the SliceDones it rings for are in the mapping, so the slots
    /// are read after the datagrams: one that comes during the reading of
    /// the slots wakes the caller ([`ServerPath::wake`]) for another pass.
    fn take(&mut self, slice: u64, standing: &dyn Fn(u64) -> Standing) -> Option<Heard> {
        if self.cursor == 0 {
            if let Some(h) = self.datagram.take(slice, standing) {
                return Some(h);
            }
            self.pass = (Instant::now(), monotonic_ns());
        }
        let now = self.pass;
        while self.cursor < self.clients.len() {
            let slot = self.cursor;
            self.cursor += 1;
            if self.done[slot] {
                continue;
            }
            let Some(ns) = self.barrier.quiet_done(slot, slice) else {
                continue;
            };
            let client = self.clients[slot];
            if standing(client) != Standing::Running {
                continue;
            }
            self.done[slot] = true;
            let ago = Duration::from_nanos(now.1.saturating_sub(ns));
            return Some(Heard::Done {
                client,
                at: now.0.checked_sub(ago).unwrap_or(now.0),
            });
        }
        self.cursor = 0;
        None
    }

    /// Tells every waiting client to read its stream (which carries the
    /// Shutdown).
    fn shutdown(&self) {
        self.barrier.shutdown();
    }
}

/// The client half: its slot in the barrier, and the datagram path for
/// the doorbell.
pub struct ShmClient {
    barrier: ClientSide,
    doorbell: datagram::DatagramClient,
}

impl ShmClient {
    /// The transport over `barrier`, opened with the run and the token of
    /// the datagram path `doorbell`, through which it then only rings.
    pub fn new(barrier: ClientSide, doorbell: datagram::DatagramClient) -> ShmClient {
        ShmClient { barrier, doorbell }
    }

    /// Counts SliceDone(`slice`) in the barrier and rings the server when
    /// it was the last one expected.
    fn arrive(&self, slice: u64) {
        if self.barrier.arrive(slice) {
            self.doorbell.send_doorbell(slice);
        }
    }
}

impl ClientPath for ShmClient {
    fn quiet_done(&self, slice: u64) -> bool {
        self.barrier.quiet_done(slice);
        self.arrive(slice);
        true
    }

    fn stream_done(&self, slice: u64) {
        self.arrive(slice);
    }

    /// Waits in the barrier (blocking the thread in a futex wait) for
    /// Continue(`unanswered` + 1). While nothing comes it rings the server
    /// again (after 20 ms, doubling up to 1 s) and lets the caller look at
    /// the stream for 1 ms, which carries a Shutdown or reports a broken
    /// connection. Without a SliceDone unanswered, or once the Continue
    /// comes on the stream, only the stream has something to say.
    async fn next_continue(&self, unanswered: Option<u64>, _last: Option<u64>) -> Next {
        let Some(k) = unanswered else {
            return std::future::pending().await;
        };
        let mut repeat = Duration::from_millis(20);
        loop {
            match self.barrier.wait(k + 1, repeat) {
                Wait::Continue {
                    slice,
                    start_cycle,
                    node_cycles,
                } => {
                    return Next::Continue {
                        slice,
                        start_cycle,
                        node_cycles,
                    }
                }
                Wait::Stream => return Next::Stream,
                Wait::Timeout => {
                    tracing::debug!(
                        "no Continue after SliceDone({k}) for {repeat:?}: ringing again"
                    );
                    self.doorbell.send_doorbell(k);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    repeat = (repeat * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("fsin-shm-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The tokens in the file authenticate SliceDones: only the user may
    /// read it. Files of processes that are gone are removed; those of
    /// live ones stay.
    #[test]
    fn the_file_is_private_and_stale_ones_are_removed() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir().join("stale");
        std::fs::create_dir_all(&d).unwrap();
        // Above the kernel's largest pid (2^22): no such process.
        let gone = d.join("fsin-999999999-0000000000000001.shm");
        let live = d.join(format!("fsin-{}-0000000000000002.shm", std::process::id()));
        let other = d.join("notes.shm");
        for f in [&gone, &live, &other] {
            std::fs::write(f, b"x").unwrap();
        }
        let server = ServerSide::create(&d, 3, &[1]).unwrap();
        let mode = std::fs::metadata(server.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!gone.exists());
        assert!(live.exists() && other.exists());
        drop(server);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_round_through_the_barrier() {
        let server = ServerSide::create(&dir(), 7, &[11, 22]).unwrap();
        let a = ClientSide::open(server.path(), 7, 0, 11).unwrap();
        let b = ClientSide::open(server.path(), 7, 1, 22).unwrap();
        assert!(server.mapped(0) && server.mapped(1));
        server.open_round(1, 2);
        // a ends slice 1 quietly, b on its stream: only the second to
        // arrive rings, and only a's SliceDone is in the mapping.
        a.quiet_done(1);
        assert!(!a.arrive(1));
        assert!(b.arrive(1));
        assert!(server.quiet_done(0, 1).is_some());
        assert_eq!(server.quiet_done(1, 1), None);
        assert_eq!(server.quiet_done(0, 0), None);
        // Continue(2): a reads it here, b is sent to its stream.
        server.open_round(2, 2);
        server.publish(2, 1000, 500, &[1]);
        let cont = Wait::Continue {
            slice: 2,
            start_cycle: 1000,
            node_cycles: 500,
        };
        assert_eq!(a.wait(2, Duration::from_millis(1)), cont);
        assert_eq!(b.wait(2, Duration::from_millis(1)), Wait::Stream);
        // A late count for a closed round neither counts nor rings.
        assert!(!a.arrive(1));
        assert!(!a.arrive(2));
        assert!(b.arrive(2));
        // Nothing published for slice 3 yet: the wait times out.
        let t = std::time::Instant::now();
        assert_eq!(a.wait(3, Duration::from_millis(30)), Wait::Timeout);
        assert!(t.elapsed() >= Duration::from_millis(30));
        server.shutdown();
        assert_eq!(a.wait(3, Duration::from_millis(1)), Wait::Stream);
    }

    #[test]
    fn every_waiting_client_is_woken_by_the_publish() {
        let server = ServerSide::create(&dir(), 1, &[5, 6, 7]).unwrap();
        let waiters: Vec<_> = (0..3u32)
            .map(|i| {
                let path = server.path().to_path_buf();
                std::thread::spawn(move || {
                    let c = ClientSide::open(&path, 1, i, 5 + u64::from(i)).unwrap();
                    let t = std::time::Instant::now();
                    (c.wait(1, Duration::from_secs(10)), t.elapsed())
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        server.publish(1, 0, 10, &[]);
        for w in waiters {
            let (w, took) = w.join().unwrap();
            assert!(matches!(w, Wait::Continue { slice: 1, .. }), "{w:?}");
            assert!(
                took < Duration::from_secs(5),
                "woken, not timed out: {took:?}"
            );
        }
    }

    #[test]
    fn another_run_or_slot_is_refused() {
        let server = ServerSide::create(&dir(), 3, &[9, 10]).unwrap();
        let refusal = |run, slot, token| match ClientSide::open(server.path(), run, slot, token) {
            Ok(_) => panic!("run {run}, slot {slot}, token {token} accepted"),
            Err(e) => (e.kind(), e.to_string()),
        };
        let bad = io::ErrorKind::InvalidData;
        assert_eq!(
            refusal(4, 0, 9),
            (bad, "not this run's barrier file".into())
        );
        assert_eq!(refusal(3, 0, 10), (bad, "slot token does not match".into()));
        assert_eq!(refusal(3, 2, 9), (bad, "slot token does not match".into()));
        assert!(!server.mapped(0));
        let path = server.path().to_path_buf();
        drop(server);
        assert!(!path.exists(), "the server removes its file");
    }
}
