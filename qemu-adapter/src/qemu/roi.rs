//! `fsin qemu --roi`: the region of interest of a run, the part of the
//! command that is measured (docs/qemu.md, "The region of interest").
//!
//! Under `--roi command` the measured phase starts when guest 0 runs the
//! command (its CLEAR_STATS magic packet), as it always did. Under `mpi`
//! and `marker` the command's ranks run with the MPI image's library
//! (`mpi-trace/fsin-mpitrace.c`), which tells the host when each rank's
//! region begins (`MPI_Init` has returned, or the application called
//! `MPI_Pcontrol(1)`) with a datagram to INSEE's magic address, command
//! byte `R` (docs/contracts.md, "Region of interest"), and waits for the
//! host's go. nic-bridge keeps guest 0's CLEAR_STATS and the datagrams from
//! the server; once every rank of the world has told it, [`Region`] starts
//! the measured phase at the end of that slice (it sends the server a
//! CLEAR_STATS of its own) and hands each guest that has ranks the go, a
//! UDP broadcast to port [`GO_PORT`], at the measured phase's first cycle.
//! The launch (Open MPI starting the ranks) so runs in warm-up: long
//! slices, frames beside the network.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use fsin_frames::{udp_frame, MAGIC_IP, MAGIC_MAC, MAGIC_PAYLOAD, MAGIC_PORT};
use serde::{Deserialize, Serialize};

use super::error::RegionError;

/// Where a run's measured phase begins (`--roi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Roi {
    /// When guest 0 starts the command: the launch is measured.
    #[default]
    Command,
    /// When every rank's `MPI_Init` has returned.
    Mpi,
    /// When every rank has called `MPI_Pcontrol(1)`.
    Marker,
}

impl Roi {
    /// The region a run takes without `--roi`: `Mpi` when `command` runs
    /// Open MPI's launcher (a word `mpirun` or `mpiexec`, with or without
    /// a directory: the MPI image's wrappers load the library into the
    /// ranks) in lock-step, so that the launch runs in warm-up; else
    /// `Command`, the whole command measured. A command that reaches
    /// `mpirun` only through a script of its own is measured whole.
    pub fn default_for(command: Option<&str>, timing: super::args::Mode) -> Roi {
        let launches = |c: &str| {
            c.split(|ch: char| !(ch.is_ascii_alphanumeric() || "_.-/".contains(ch)))
                .map(|w| w.rsplit('/').next().unwrap_or(w))
                .any(|w| w == "mpirun" || w == "mpiexec")
        };
        match command {
            Some(c) if timing == super::args::Mode::Lockstep && launches(c) => Roi::Mpi,
            _ => Roi::Command,
        }
    }

    /// The word of the MPI library's `FSIN_MPI` that asks for this region,
    /// if the library has a part in it.
    pub fn library_word(self) -> Option<&'static str> {
        match self {
            Roi::Command => None,
            Roi::Mpi => Some("roi=mpi"),
            Roi::Marker => Some("roi=marker"),
        }
    }
}

/// A checkpoint at the region's start (`--roi mpi|marker` with
/// `--checkpoint`): the cluster is saved once every rank waits for its go,
/// so that each run of a study restores there and pays only for the
/// region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionCheckpoint {
    /// Launch the command (from `--checkpoint`'s booted cluster), save the
    /// cluster in this directory when the region begins, and end the run.
    Save(PathBuf),
    /// `--checkpoint` names a checkpoint at the region's start: restore it
    /// and begin the region at once.
    Restore,
}

/// The most the go is spread over the guests ([`Args::go_seed`]), guest
/// nanoseconds: a few microseconds, as a perturbation of the ranks' start.
///
/// [`Args::go_seed`]: super::Args::go_seed
pub const GO_SPREAD_NS: u64 = 5_000;

/// Node cycles after the region's start at which guest `guest` gets its go
/// for seed `seed` (`None`: at once), at 2^`shift` ns a cycle: below
/// [`GO_SPREAD_NS`], from a SplitMix64 hash of the seed and the guest.
pub fn go_delay(seed: Option<u64>, guest: usize, shift: u32) -> u64 {
    let Some(seed) = seed else {
        return 0;
    };
    let mut z = seed ^ (guest as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % GO_SPREAD_NS) >> shift.min(29)
}

/// The UDP port of the host's go (the library's `GO_PORT`).
pub const GO_PORT: u16 = 5042;

/// Bytes of a region datagram's payload: `R`, version 1, what (0 end, 1
/// begin at `MPI_Init`, 2 begin at `MPI_Pcontrol(1)`), a zero byte, u32
/// rank at 4, u32 world size at 8, 4 zero bytes, u64 the guest's
/// `CLOCK_MONOTONIC` at 16 (little-endian).
const DATAGRAM_BYTES: usize = 24;

/// The most ranks a world may claim: more than any run of at most 250
/// guests starts, few enough to keep the sets of ranks small.
pub const MAX_RANKS: u32 = 1 << 16;

/// What a region datagram said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// A rank's region begins: `rank` of a world of `size`.
    Begin {
        /// The rank, in the world.
        rank: u32,
        /// The world's size, ranks.
        size: u32,
    },
    /// A rank's region ends (`MPI_Finalize` entered, or `MPI_Pcontrol(0)`).
    End {
        /// The rank, in the world.
        rank: u32,
        /// The world's size, ranks.
        size: u32,
    },
}

/// Reads a region datagram's payload (`frame` a magic frame whose command
/// byte is `R`).
///
/// # Errors
/// [`RegionError`]: a payload too short, of another version, with an
/// unknown `what`, a world of 0 or more than [`MAX_RANKS`] ranks, or a
/// rank outside it.
pub fn read(frame: &[u8]) -> Result<Said, RegionError> {
    let p = frame
        .get(MAGIC_PAYLOAD..MAGIC_PAYLOAD + DATAGRAM_BYTES)
        .ok_or(RegionError::Short(frame.len()))?;
    let u32_at = |i: usize| u32::from_le_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
    let (rank, size) = (u32_at(4), u32_at(8));
    if p[1] != 1 {
        return Err(RegionError::Version(p[1]));
    }
    if size == 0 || size > MAX_RANKS || rank >= size {
        return Err(RegionError::World { rank, size });
    }
    match p[2] {
        0 => Ok(Said::End { rank, size }),
        1 | 2 => Ok(Said::Begin { rank, size }),
        w => Err(RegionError::What(w)),
    }
}

/// The go each guest with ranks is handed: a UDP broadcast from the magic
/// address to 10.0.0.255, port [`GO_PORT`], payload `G` and version 1.
pub fn go_frame() -> Vec<u8> {
    udp_frame(
        [0xff; 6],
        MAGIC_MAC,
        (MAGIC_IP, MAGIC_PORT),
        ([10, 0, 0, 255], GO_PORT),
        b"G\x01",
    )
}

/// The region of one run, as its datagrams tell it: the ranks that began
/// and ended, and when.
#[derive(Debug, Default)]
pub struct Region {
    /// Where the run's measured phase begins (`--roi`).
    pub roi: Roi,
    /// The world's size, from the first datagram.
    size: Option<u32>,
    begun: BTreeSet<u32>,
    ended: BTreeSet<u32>,
    /// Guests whose ranks wait for the go.
    waiting: BTreeSet<usize>,
    /// Node cycle at which the region began (the measured phase's first).
    pub began_at: Option<u64>,
    /// Wall time at which it began.
    pub began_wall: Option<Instant>,
    /// Node cycle at which the last rank ended its region.
    pub ended_at: Option<u64>,
    /// Gos to hand over: guest and node cycle, in order.
    pub due: Vec<(usize, u64)>,
    /// Datagrams that could not be read, with why (the first few).
    pub refused: Vec<String>,
}

/// What [`Region::datagram`] asks of the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing yet.
    None,
    /// Every rank has begun (its node cycle is [`Region::began_at`] once
    /// the bridge calls [`Region::begin`]).
    Begin,
}

impl Region {
    /// The region of a run under `roi`.
    pub fn new(roi: Roi) -> Region {
        Region {
            roi,
            ..Region::default()
        }
    }

    /// Guest `guest` sent the region datagram `frame` in node cycle
    /// `cycle`, during a slice that ends at `slice_end`. A begin after the
    /// region began (a later job's ranks) gets its go at `slice_end`.
    pub fn datagram(&mut self, guest: usize, cycle: u64, slice_end: u64, frame: &[u8]) -> Step {
        let said = match read(frame) {
            Ok(s) => s,
            Err(e) => return self.refuse(guest, e.to_string()),
        };
        let (Said::Begin { rank, size } | Said::End { rank, size }) = said;
        let world = *self.size.get_or_insert(size);
        if world != size {
            return self.refuse(
                guest,
                format!("rank {rank} of a world of {size}, not {world}"),
            );
        }
        match said {
            Said::Begin { .. } if self.began_at.is_some() => {
                self.due.push((guest, slice_end));
                Step::None
            }
            Said::Begin { .. } => {
                self.begun.insert(rank);
                self.waiting.insert(guest);
                if self.begun.len() as u32 == size {
                    Step::Begin
                } else {
                    Step::None
                }
            }
            Said::End { .. } => {
                self.ended.insert(rank);
                if self.ended.len() as u32 == size && self.ended_at.is_none() {
                    self.ended_at = Some(cycle);
                }
                Step::None
            }
        }
    }

    /// Notes why guest `guest`'s datagram was refused (the first 8).
    fn refuse(&mut self, guest: usize, why: String) -> Step {
        if self.refused.len() < 8 {
            self.refused.push(format!("guest {guest}: {why}"));
        }
        Step::None
    }

    /// Begins the region at node cycle `at`: each waiting guest gets its
    /// go [`go_delay`] cycles later.
    pub fn begin(&mut self, at: u64, seed: Option<u64>, shift: u32) {
        self.began_at = Some(at);
        self.began_wall = Some(Instant::now());
        let due = self
            .waiting
            .iter()
            .map(|&g| (g, at + go_delay(seed, g, shift)));
        self.due.extend(due);
    }

    /// The region of a run restored from a checkpoint at its start, in
    /// which the `world`'s ranks on the guests `waiting` wait for their go.
    pub fn restored(roi: Roi, world: u32, waiting: &[usize]) -> Region {
        Region {
            roi,
            size: Some(world),
            begun: (0..world).collect(),
            waiting: waiting.iter().copied().collect(),
            ..Region::default()
        }
    }

    /// What a checkpoint at the region's start keeps: the world's size and
    /// the guests whose ranks wait.
    pub fn saved(&self) -> (u32, Vec<usize>) {
        (
            self.size.unwrap_or(0),
            self.waiting.iter().copied().collect(),
        )
    }

    /// A process on guest `guest` that marks a region begin in a run that
    /// measures the whole command (`--roi command`) gets its go at node
    /// cycle `at` and changes nothing else.
    pub fn go_now(&mut self, guest: usize, at: u64) {
        self.due.push((guest, at));
    }

    /// Takes the gos due before node cycle `end`.
    pub fn take_due(&mut self, end: u64) -> Vec<(usize, u64)> {
        let (now, later): (Vec<_>, Vec<_>) = self.due.iter().partition(|&&(_, c)| c < end);
        self.due = later;
        now
    }

    /// The earliest node cycle at which a go is due.
    pub fn next_due(&self) -> Option<u64> {
        self.due.iter().map(|&(_, c)| c).min()
    }

    /// Ranks that told their region began, of the world's size.
    pub fn ranks(&self) -> (u32, Option<u32>) {
        (self.begun.len() as u32, self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qemu::args::Mode;

    #[test]
    fn mpi_launches_default_to_the_mpi_region_in_lock_step() {
        let lockstep = |c| Roi::default_for(Some(c), Mode::Lockstep);
        assert_eq!(
            lockstep("mpirun --hostfile /etc/fsin/hostfile -np 4 fsin-is 4096 10"),
            Roi::Mpi
        );
        assert_eq!(
            lockstep("cd /root && /usr/bin/mpiexec -n 2 a.out"),
            Roi::Mpi
        );
        assert_eq!(lockstep("x=1;mpirun -np 2 hostname"), Roi::Mpi);
        // Words that only contain the launcher's name, and plain commands.
        for c in [
            "mpirun2 -np 2",
            "echo my-mpirun",
            "sleep 1",
            "fsin-bench rsh node1 true",
        ] {
            assert_eq!(lockstep(c), Roi::Command, "{c}");
        }
        assert_eq!(Roi::default_for(None, Mode::Lockstep), Roi::Command);
        assert_eq!(
            Roi::default_for(Some("mpirun -np 2 x"), Mode::Free),
            Roi::Command
        );
    }

    /// A region datagram as the library sends it, in a magic frame.
    fn datagram(what: u8, rank: u32, size: u32) -> Vec<u8> {
        let mut p = [0u8; DATAGRAM_BYTES];
        p[0] = b'R';
        p[1] = 1;
        p[2] = what;
        p[4..8].copy_from_slice(&rank.to_le_bytes());
        p[8..12].copy_from_slice(&size.to_le_bytes());
        p[16..24].copy_from_slice(&123_456u64.to_le_bytes());
        udp_frame(
            MAGIC_MAC,
            [0x52, 0x54, 0, 0, 0, 1],
            ([10, 0, 0, 2], 40000),
            (MAGIC_IP, MAGIC_PORT),
            &p,
        )
    }

    #[test]
    fn the_region_begins_when_every_rank_has_begun() {
        let mut r = Region::new(Roi::Mpi);
        // Four ranks on guests 0, 1, 1 and 3; slices end at 100, 200.
        assert_eq!(r.datagram(0, 10, 100, &datagram(1, 0, 4)), Step::None);
        assert_eq!(r.datagram(1, 20, 100, &datagram(1, 2, 4)), Step::None);
        assert_eq!(
            r.datagram(1, 30, 100, &datagram(1, 2, 4)),
            Step::None,
            "a repeat"
        );
        assert_eq!(r.datagram(1, 150, 200, &datagram(1, 1, 4)), Step::None);
        assert_eq!(r.began_at, None);
        assert_eq!(r.datagram(3, 160, 200, &datagram(1, 3, 4)), Step::Begin);
        r.begin(200, None, 3);
        assert_eq!(r.began_at, Some(200));
        assert_eq!(r.next_due(), Some(200));
        assert_eq!(r.take_due(200), vec![], "due at the next slice's start");
        assert_eq!(r.take_due(300), vec![(0, 200), (1, 200), (3, 200)]);
        assert_eq!(r.next_due(), None);
        // The ends: the last one's cycle.
        for (g, rank, c) in [(0, 0, 900), (1, 1, 950), (1, 2, 990)] {
            r.datagram(g, c, 1000, &datagram(0, rank, 4));
        }
        assert_eq!(r.ended_at, None);
        r.datagram(3, 1010, 2000, &datagram(0, 3, 4));
        assert_eq!(r.ended_at, Some(1010));
        assert_eq!(r.ranks(), (4, Some(4)));
    }

    #[test]
    fn a_later_jobs_ranks_get_their_go_at_once() {
        let mut r = Region::new(Roi::Mpi);
        assert_eq!(r.datagram(0, 1, 10, &datagram(1, 0, 1)), Step::Begin);
        r.begin(10, None, 3);
        assert_eq!(r.take_due(20), vec![(0, 10)]);
        assert_eq!(r.datagram(2, 31, 40, &datagram(1, 0, 1)), Step::None);
        assert_eq!(r.take_due(50), vec![(2, 40)]);
    }

    #[test]
    fn bad_datagrams_are_named_and_ignored() {
        let mut r = Region::new(Roi::Mpi);
        let mut v2 = datagram(1, 0, 2);
        v2[MAGIC_PAYLOAD + 1] = 2;
        for (f, why) in [
            (datagram(1, 2, 2), "rank 2 of a world of 2"),
            (datagram(1, 0, 0), "rank 0 of a world of 0"),
            (datagram(1, 0, MAX_RANKS + 1), "a world of 65537"),
            (datagram(7, 0, 2), "says 7"),
            (v2, "version 2"),
            (
                datagram(1, 0, 2)[..MAGIC_PAYLOAD + 8].to_vec(),
                "of 50 bytes",
            ),
        ] {
            assert_eq!(r.datagram(0, 1, 10, &f), Step::None);
            let last = r.refused.last().unwrap();
            assert!(last.contains(why), "{last} lacks {why}");
        }
        r.datagram(0, 1, 10, &datagram(1, 0, 2));
        assert_eq!(
            r.datagram(1, 2, 10, &datagram(1, 1, 3)),
            Step::None,
            "another world"
        );
        assert!(r.refused.last().unwrap().contains("not 2"));
        assert_eq!(r.began_at, None);
    }

    #[test]
    fn the_go_is_spread_by_the_seed_within_a_few_microseconds() {
        let delays = |seed| (0..64).map(|g| go_delay(seed, g, 3)).collect::<Vec<u64>>();
        assert!(delays(None).iter().all(|&d| d == 0));
        let (a, b) = (delays(Some(17)), delays(Some(18)));
        assert_eq!(a, delays(Some(17)), "the same seed, the same spread");
        assert_ne!(a, b, "another seed, another spread");
        // 5 us at 8 ns a cycle: below 625 cycles, and spread over them.
        assert!(a.iter().chain(&b).all(|&d| d < 625), "{a:?}");
        assert!(
            a.iter().max().unwrap() - a.iter().min().unwrap() > 300,
            "{a:?}"
        );
        // A restored region: every rank waits; its gos at the start plus
        // the spread.
        let mut r = Region::restored(Roi::Mpi, 4, &[0, 2]);
        assert_eq!(r.saved(), (4, vec![0, 2]));
        r.begin(0, Some(17), 3);
        assert_eq!(r.take_due(625), vec![(0, a[0]), (2, a[2])]);
        assert_eq!(r.ranks(), (4, Some(4)));
    }

    #[test]
    fn the_go_is_a_broadcast_to_the_go_port() {
        let f = go_frame();
        assert_eq!(f[..6], [0xff; 6]);
        assert_eq!(fsin_frames::ipv4_checksum(&f[14..34]), 0);
        assert_eq!(f[30..34], [10, 0, 0, 255]);
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), GO_PORT);
        assert_eq!(f[MAGIC_PAYLOAD], b'G');
    }
}
