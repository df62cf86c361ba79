//! The slice board: a shared-memory file through which nic-bridge starts
//! every guest's slice and the plugins report its end, so that a quiet
//! round costs no socket message but one (from the last guest to arrive).
//!
//! Per round nic-bridge writes each guest's slice end (and how many bytes of
//! [`crate::ToPlugin::Deliver`] messages it has written on that guest's
//! socket so far), publishes the round and wakes every plugin with one
//! futex wake. A plugin that reaches its slice end writes where it stopped,
//! its idle promise and how many bytes it has written on its socket so far,
//! and counts itself in; the last one to arrive sends
//! [`crate::FromPlugin::AllReached`] on its socket, the one message of a quiet
//! round. The byte counts keep the frames in order: a plugin reads its
//! deliveries up to the count before it runs the slice, and nic-bridge
//! reads every frame a guest sent up to its count before it ends the round.
//! Instead of a round, nic-bridge may end the run ([`Wait::Stop`]) or pause
//! every guest where it stands ([`Wait::Pause`], for a checkpoint).
//!
//! Layout (native-endian: both sides run on one host; every block one
//! 64-byte cache line):
//!
//! | block | fields |
//! |---|---|
//! | header | `magic` ([`MAGIC`]), `guests` |
//! | go | `word` (u32 futex word: low 32 bits of the published round), `round`, `stop` (0; [`STOP`]; [`PAUSE`]) |
//! | arrivals | `tagged` (round << 32 \| guests counted in it), `expected` |
//! | slot i | `until_ns`, `delivered_bytes`, `reached` (round + 1 of its last slice end), `at_ns`, `idle_until_ns`, `sent_bytes`, `kernel_insns` |
//!
//! Every field is only ever accessed atomically. Times are guest ns.

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use fsin_shm::{Atomics, OwnedFile};

/// First eight bytes of the file.
pub const MAGIC: u64 = u64::from_le_bytes(*b"fsinbrd2");

/// `go.stop` when nic-bridge has ended the run.
pub const STOP: u64 = 1;

/// `go.stop` when nic-bridge pauses every guest at its slice end.
pub const PAUSE: u64 = 2;

#[repr(C, align(64))]
struct Header {
    magic: AtomicU64,
    guests: AtomicU64,
}

#[repr(C, align(64))]
struct Go {
    word: AtomicU32,
    round: AtomicU64,
    stop: AtomicU64,
}

#[repr(C, align(64))]
struct Slot {
    until_ns: AtomicU64,
    delivered_bytes: AtomicU64,
    reached: AtomicU64,
    at_ns: AtomicU64,
    idle_until_ns: AtomicU64,
    sent_bytes: AtomicU64,
    kernel_insns: AtomicU64,
}

// SAFETY: each is a `#[repr(C, align(64))]` struct of atomics.
unsafe impl Atomics for Header {}
unsafe impl Atomics for Go {}
unsafe impl Atomics for Slot {}

/// A mapping of the board.
type Region = fsin_shm::Region<Header, Go, Slot>;

fn tag(round: u64) -> u64 {
    (round & 0xffff_ffff) << 32
}

/// Where a guest stopped at the end of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    /// Guest time it stopped at, ns (the slice end, or up to 7 ns past it).
    pub at_ns: u64,
    /// Its idle promise, as in [`crate::FromPlugin`]: 0 when busy.
    pub idle_until_ns: u64,
    /// Bytes it had written on its socket when it stopped.
    pub sent_bytes: u64,
    /// Instructions it had executed at kernel addresses since its QEMU
    /// started (or restored), when it stopped: under icount its kernel's
    /// guest time, 2^shift ns each (interrupts, system calls, page
    /// faults, the scheduler).
    pub kernel_insns: u64,
}

/// nic-bridge's side: creates the board, starts rounds, reads slice ends.
/// Dropping it tells the plugins that the run is over and removes the file.
pub struct Bridge {
    region: Region,
    /// The board's file, removed when the bridge drops (or at an
    /// immediate exit).
    _file: OwnedFile,
}

impl Bridge {
    /// Creates the board for `guests` guests at `path` (mode 0600, its
    /// space reserved before it is mapped, so that a full tmpfs is an error
    /// here and not a SIGBUS later).
    ///
    /// # Errors
    /// The file exists or cannot be created, reserved or mapped; nothing is
    /// left behind.
    pub fn create(path: &Path, guests: usize) -> std::io::Result<Bridge> {
        let region = Region::create(path, guests)?;
        region.broadcast().word.store(u32::MAX, Ordering::Relaxed);
        region.broadcast().round.store(u64::MAX, Ordering::Relaxed);
        region
            .header()
            .guests
            .store(guests as u64, Ordering::Relaxed);
        region.header().magic.store(MAGIC, Ordering::Release);
        Ok(Bridge {
            region,
            _file: OwnedFile::new(path),
        })
    }

    /// Sets guest `i`'s slice end for the next round, and the bytes of
    /// deliveries written on its socket up to that round's.
    pub fn set_slice(&self, i: usize, until_ns: u64, delivered_bytes: u64) {
        let s = self.region.slot(i);
        s.until_ns.store(until_ns, Ordering::Relaxed);
        s.delivered_bytes.store(delivered_bytes, Ordering::Relaxed);
    }

    /// Starts `round` for every guest (after [`Bridge::set_slice`] for
    /// each) and wakes the plugins.
    pub fn start(&self, round: u64) {
        let a = self.region.arrivals();
        a.expected
            .store(self.region.slots() as u64, Ordering::Relaxed);
        a.tagged.store(tag(round), Ordering::Relaxed);
        let go = self.region.broadcast();
        go.round.store(round, Ordering::Relaxed);
        go.word.store(round as u32, Ordering::Release);
        fsin_shm::wake_all(&go.word);
    }

    /// Pauses every guest at the end of the round it has reached, instead
    /// of starting another ([`Wait::Pause`]), and wakes the plugins.
    pub fn pause(&self) {
        self.tell(PAUSE);
    }

    /// Sets `go.stop` to `what` and wakes every waiting plugin.
    fn tell(&self, what: u64) {
        let go = self.region.broadcast();
        go.stop.store(what, Ordering::Release);
        go.word.fetch_add(1, Ordering::Release);
        fsin_shm::wake_all(&go.word);
    }

    /// Where guest `i` stopped, if it has reached the end of `round`.
    pub fn reached(&self, i: usize, round: u64) -> Option<Reached> {
        let s = self.region.slot(i);
        (s.reached.load(Ordering::Acquire) == round + 1).then(|| Reached {
            at_ns: s.at_ns.load(Ordering::Relaxed),
            idle_until_ns: s.idle_until_ns.load(Ordering::Relaxed),
            sent_bytes: s.sent_bytes.load(Ordering::Relaxed),
            kernel_insns: s.kernel_insns.load(Ordering::Relaxed),
        })
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.tell(STOP);
    }
}

/// What a plugin waiting for its next round learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Run until `until_ns`, after reading the deliveries on the socket up
    /// to `delivered_bytes` in all.
    Run {
        /// Guest time to run to, ns.
        until_ns: u64,
        /// Bytes of deliveries on the socket to read first, in all.
        delivered_bytes: u64,
    },
    /// nic-bridge ended the run.
    Stop,
    /// nic-bridge pauses the guest where it stands (to save it).
    Pause,
    /// Nothing yet within the timeout.
    Timeout,
}

/// A plugin's side: its slot, its slice ends, the wait for the next round.
pub struct Plugin {
    region: Region,
    slot: usize,
}

impl Plugin {
    /// Maps the board at `path` as guest `slot`.
    ///
    /// # Errors
    /// The file cannot be opened or mapped, is not a slice board, or has
    /// no slot `slot`.
    pub fn open(path: &Path, slot: usize) -> std::io::Result<Plugin> {
        let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let region = Region::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => bad("not a slice board".into()),
            _ => e,
        })?;
        let slots = region.slots();
        let h = region.header();
        if h.magic.load(Ordering::Acquire) != MAGIC {
            return Err(bad("not a slice board".into()));
        }
        let guests = h.guests.load(Ordering::Relaxed) as usize;
        if slot >= guests.min(slots) {
            return Err(bad(format!("no guest {slot} on a board of {guests}")));
        }
        Ok(Plugin { region, slot })
    }

    /// Reports the end of `round`; true when this guest is the last to
    /// arrive, and must then send [`crate::FromPlugin::AllReached`].
    pub fn reach(&self, round: u64, r: Reached) -> bool {
        let s = self.region.slot(self.slot);
        s.at_ns.store(r.at_ns, Ordering::Relaxed);
        s.idle_until_ns.store(r.idle_until_ns, Ordering::Relaxed);
        s.sent_bytes.store(r.sent_bytes, Ordering::Relaxed);
        s.kernel_insns.store(r.kernel_insns, Ordering::Relaxed);
        s.reached.store(round + 1, Ordering::Release);
        let a = self.region.arrivals();
        let before = a.tagged.fetch_add(1, Ordering::AcqRel);
        before & !0xffff_ffff == tag(round)
            && (before & 0xffff_ffff) + 1 == a.expected.load(Ordering::Relaxed)
    }

    /// Waits up to `timeout` (blocking the thread) for `round` to start.
    pub fn wait(&self, round: u64, timeout: Duration) -> Wait {
        let go = self.region.broadcast();
        let mut waited = false;
        loop {
            let word = go.word.load(Ordering::Acquire);
            match go.stop.load(Ordering::Acquire) {
                0 => {}
                PAUSE => return Wait::Pause,
                _ => return Wait::Stop,
            }
            if word == round as u32 && go.round.load(Ordering::Relaxed) == round {
                let s = self.region.slot(self.slot);
                return Wait::Run {
                    until_ns: s.until_ns.load(Ordering::Relaxed),
                    delivered_bytes: s.delivered_bytes.load(Ordering::Relaxed),
                };
            }
            if waited {
                return Wait::Timeout;
            }
            waited = fsin_shm::wait(&go.word, word, timeout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn board(name: &str, guests: usize) -> (PathBuf, Bridge) {
        let path =
            std::env::temp_dir().join(format!("fsin-board-test-{}-{name}.shm", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let b = Bridge::create(&path, guests).unwrap();
        (path, b)
    }

    #[test]
    fn a_round_starts_every_guest_and_only_the_last_arrival_rings() {
        let (path, bridge) = board("round", 3);
        let plugins: Vec<Plugin> = (0..3).map(|i| Plugin::open(&path, i).unwrap()).collect();
        let short = Duration::from_millis(1);
        assert_eq!(plugins[0].wait(0, short), Wait::Timeout);
        for i in 0..3 {
            bridge.set_slice(i, 8_000 * (i as u64 + 1), 100 * i as u64);
        }
        bridge.start(0);
        for (i, p) in plugins.iter().enumerate() {
            assert_eq!(
                p.wait(0, short),
                Wait::Run {
                    until_ns: 8_000 * (i as u64 + 1),
                    delivered_bytes: 100 * i as u64
                }
            );
        }
        let r = |at_ns| Reached {
            at_ns,
            idle_until_ns: 0,
            sent_bytes: 7,
            kernel_insns: at_ns / 16,
        };
        assert!(!plugins[2].reach(0, r(24_000)));
        assert_eq!(bridge.reached(2, 0), Some(r(24_000)));
        assert_eq!(bridge.reached(0, 0), None);
        assert!(!plugins[0].reach(0, r(8_000)));
        assert!(plugins[1].reach(0, r(16_003)));
        // The next round: counted afresh; a slot reached in round 0 is not
        // reached in round 1.
        bridge.start(1);
        assert_eq!(bridge.reached(1, 1), None);
        assert!(!plugins[1].reach(1, r(1)));
        assert!(!plugins[0].reach(1, r(1)));
        assert!(plugins[2].reach(1, r(1)));
        drop(bridge);
        assert_eq!(plugins[0].wait(2, short), Wait::Stop);
        assert!(!path.exists());
    }

    #[test]
    fn a_pause_reaches_a_waiting_plugin_instead_of_a_round() {
        let (path, bridge) = board("pause", 2);
        let p = Plugin::open(&path, 1).unwrap();
        let t = std::thread::spawn(move || p.wait(0, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(20));
        bridge.pause();
        assert_eq!(t.join().unwrap(), Wait::Pause);
        let late = Plugin::open(&path, 0).unwrap();
        assert_eq!(late.wait(3, Duration::from_millis(1)), Wait::Pause);
        drop(bridge);
        assert_eq!(late.wait(3, Duration::from_millis(1)), Wait::Stop);
    }

    #[test]
    fn a_waiting_plugin_wakes_when_its_round_starts() {
        let (path, bridge) = board("wake", 1);
        let p = Plugin::open(&path, 0).unwrap();
        let t = std::thread::spawn(move || p.wait(0, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(20));
        bridge.set_slice(0, 80_000, 0);
        bridge.start(0);
        assert_eq!(
            t.join().unwrap(),
            Wait::Run {
                until_ns: 80_000,
                delivered_bytes: 0
            }
        );
    }

    #[test]
    fn a_plugin_refuses_a_missing_slot_and_a_file_that_is_not_a_board() {
        let (path, _bridge) = board("refuse", 2);
        let refusal = |path: &std::path::Path, slot| match Plugin::open(path, slot) {
            Ok(_) => panic!("slot {slot} of {} accepted", path.display()),
            Err(e) => (e.kind(), e.to_string()),
        };
        let bad = std::io::ErrorKind::InvalidData;
        assert_eq!(
            refusal(&path, 2),
            (bad, "no guest 2 on a board of 2".into())
        );
        let other =
            std::env::temp_dir().join(format!("fsin-board-test-{}-other.shm", std::process::id()));
        std::fs::write(&other, vec![0u8; 4096]).unwrap();
        assert_eq!(refusal(&other, 0), (bad, "not a slice board".into()));
        let _ = std::fs::remove_file(&other);
    }
}
