//! `fsin qemu --trace-level mpi`: the MPI-level trace of a run.
//!
//! The application's ranks run with the MPI image's PMPI library
//! (`mpi-trace/fsin-mpitrace.c`, `/usr/local/lib/libfsin-mpitrace.so`),
//! which [`library_command`] loads into them: the command runs with
//! `mpirun` and `mpiexec` wrappers first on its `PATH` that add `-x
//! LD_PRELOAD=...` (so that the ranks, and not `mpirun`, load it, and the
//! user's own `-x` options still work), and with most of Open MPI's
//! collective algorithms pinned ([`fsin_trace::mpi::algorithms`]:
//! Alltoall and Alltoallv keep Open MPI's fixed rules, which the replay
//! computes) so that a replay can expand each collective as the live run
//! did.
//!
//! After `MPI_Finalize` each rank sends its records as UDP datagrams to
//! INSEE's magic address with command byte `M`; nic-bridge keeps them
//! from the server (they never cross the simulated network) and hands
//! them to the [`Collector`], which puts each rank's stream together
//! (datagrams in order, as the guest's NIC sent them) and, at the end of
//! the run, writes the trace as Dimemas (docs/contracts.md, "MPI trace
//! records"; docs/qemu.md, "MPI-level traces"). Each datagram carries
//! the guest's clock as it left; paired with the node time its NIC sent
//! it at, that places the rank's calls on the network's clock
//! ([`RankClock`]), for `--timeline`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use fsin_frames::MAGIC_PAYLOAD;
use fsin_trace::mpi::algorithms::{Algorithms, PINNED};
use fsin_trace::mpi::{BurstFrames, LiveFrames, MpiTrace, Rank, RankStream};
use serde::{Deserialize, Serialize};

/// The tracing library in the MPI image.
pub const LIBRARY: &str = "/usr/local/lib/libfsin-mpitrace.so";
/// The directory of the image's `mpirun`/`mpiexec` wrappers that load it.
pub const WRAPPERS: &str = "/usr/local/libexec/fsin-mpitrace";

/// The most bytes one rank's stream may claim (the library stops at 64
/// MiB of records).
const MAX_STREAM_BYTES: u32 = 128 << 20;
/// The most bytes all streams of a run may hold together.
const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Header bytes of a datagram before its piece of the stream, by version:
/// version 1's 16, version 2's 24 (with the guest's clock as it left).
const DATAGRAM_HEADERS: [usize; 2] = [16, 24];

/// The environment that pins Open MPI's collective algorithms
/// ([`PINNED`]); `mpirun` passes `OMPI_MCA_*` on to the ranks.
fn pins() -> String {
    let mut pins = String::from("OMPI_MCA_coll_tuned_use_dynamic_rules=1");
    for (_, name, n, _) in PINNED {
        pins.push_str(&format!(" OMPI_MCA_coll_tuned_{name}_algorithm={n}"));
    }
    pins
}

/// `cmd` as guest 0 runs it with the MPI image's library in its ranks,
/// doing what `words` say (the library's `FSIN_MPI`: `trace`, `roi=mpi`,
/// `roi=marker`): the wrappers first on the `PATH`; Open MPI's collective
/// algorithms pinned when `pin` (as a trace needs them).
pub fn library_command(cmd: &str, words: &[&str], pin: bool) -> String {
    let pins = if pin {
        format!(" {}", pins())
    } else {
        String::new()
    };
    format!(
        "export PATH={WRAPPERS}:$PATH FSIN_MPI={}{pins}\n{cmd}",
        words.join(",")
    )
}

/// `cmd` with Open MPI's collective algorithms pinned, untraced.
pub fn pinned_command(cmd: &str) -> String {
    format!("export {}\n{cmd}", pins())
}

/// `cmd` with Open MPI opening every pair of ranks' connection inside
/// `MPI_Init` (`mpi_preconnect_mpi`; `fsin qemu --mpi-preconnect`).
pub fn preconnected_command(cmd: &str) -> String {
    format!("export OMPI_MCA_mpi_preconnect_mpi=1\n{cmd}")
}

/// The name written into the trace's header: whether the run opened its
/// connections in `MPI_Init` (`preconnected`,
/// [`fsin_trace::mpi::read::PRECONNECTED`]), the frames its guests sent
/// while the ranks ran (`live`, [`LiveFrames::header`]) and how each
/// collective's algorithm was chosen ([`Algorithms::header`]).
pub fn trace_name(preconnected: bool, live: Option<LiveFrames>) -> String {
    format!(
        "fsin-rs MPI trace{}{} Open MPI coll_tuned {}",
        if preconnected {
            fsin_trace::mpi::read::PRECONNECTED
        } else {
            ";"
        },
        live.map(|l| format!(" {};", l.header()))
            .unwrap_or_default(),
        Algorithms::default().header()
    )
}

/// Where `--trace-level mpi` writes, and the command that replays it.
#[derive(Debug, Clone)]
pub struct MpiTraceOut {
    /// The Dimemas file to write.
    pub path: PathBuf,
    /// `fsin run tracefile=PATH` with the run's network, slice ratio and
    /// node clock.
    pub replay: String,
    /// The command opens every connection in `MPI_Init`
    /// (`--mpi-preconnect`): the header says so.
    pub preconnected: bool,
}

/// What `--trace-level mpi` wrote (`mpi_trace` in the report).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MpiTraceOutcome {
    /// The Dimemas file.
    pub path: PathBuf,
    /// The command that replays it on the run's own network.
    pub replay: String,
    /// Ranks traced (the world's size).
    pub ranks: u32,
    /// Calls of all ranks, by MPI function.
    pub calls: BTreeMap<String, u64>,
    /// Each rank's time from its `MPI_Init` returning to its
    /// `MPI_Finalize` being entered, guest seconds: what a replay on the
    /// same network should give back.
    pub rank_s: Vec<f64>,
    /// How long after the world's first rank each left `MPI_Init`, guest
    /// seconds on the network's clock (the ranks' datagrams place their
    /// guests' clocks on it): the start skew the trace's replay starts the
    /// ranks with. Empty where a rank's clock is unknown (a version-1
    /// library). A replay's rank `r` ends `start_s[r] + rank_s[r]` after
    /// the first rank's start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_s: Vec<f64>,
    /// The host each rank ran on (`node3`).
    pub hosts: Vec<String>,
    /// Ranks that ran out of room for records (their traces end early).
    pub truncated: Vec<u32>,
    /// MPI trace datagrams the guests sent (command byte `M`), read or
    /// refused.
    pub datagrams: u64,
    /// Bytes of records taken from them, headers left out.
    pub bytes: u64,
    /// Frames the guests sent into the network from the first rank's
    /// `MPI_Init` exit to the last rank's `MPI_Finalize` entry (on the
    /// network's clock), which a replay of the trace reports beside its
    /// own; `None` where the ranks' clocks are unknown, or more than
    /// 8,388,608 frames came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<u64>,
    /// Of `frames`, TCP's pure acknowledgements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acks: Option<u64>,
}

/// One rank's stream as its datagrams arrive.
#[derive(Default)]
struct Stream {
    next: u32,
    len: u32,
    data: Vec<u8>,
    done: bool,
    /// The least of (node time the datagram was sent at, ns) minus (the
    /// guest's clock in it): the guest's clock on the node clock, up to
    /// the time a datagram takes from `sendto` to the NIC.
    offset_ns: Option<i128>,
    /// The guest's clock in its first datagram: as `MPI_Finalize`
    /// returned.
    shipped_ns: Option<u64>,
}

/// Where one rank's guest clock (`CLOCK_MONOTONIC`) falls on the network's
/// clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RankClock {
    /// The guest the rank ran on.
    pub guest: usize,
    /// Node time (ns from the run's first node cycle) minus the guest's
    /// clock, as the rank's datagrams tell it (`None`: a version-1
    /// library, which does not).
    pub offset_ns: Option<i128>,
    /// The guest's clock as its `MPI_Finalize` returned (as it sent its
    /// first datagram).
    pub shipped_ns: Option<u64>,
}

/// What a run's MPI records gave: the report's part, the trace, and each
/// rank's clock (by rank).
pub(super) struct Collected {
    pub outcome: MpiTraceOutcome,
    pub trace: MpiTrace,
    pub clocks: Vec<Option<RankClock>>,
}

/// The records of a run's ranks, put together from their datagrams.
#[derive(Default)]
pub(super) struct Collector {
    /// By (guest, rank).
    streams: BTreeMap<(usize, u32), Stream>,
    total: u64,
    datagrams: u64,
    /// What could not be taken, first of each kind.
    problems: Vec<String>,
    /// The node time (ns) of every frame the guests sent into the
    /// network, [`ACK_BIT`] set for TCP's pure acknowledgements; at most
    /// [`MAX_FRAMES_KEPT`], then none (the live counts are not given).
    frames: Vec<u64>,
    /// More frames came than [`MAX_FRAMES_KEPT`].
    frames_cut: bool,
    /// Per guest, its kernel's time slice by slice of the measured phase
    /// where it ran (the QEMU plugin's count), for each CPU burst's
    /// ([`burst_kernel_ns`]); at most [`MAX_FRAMES_KEPT`] slices in all
    /// (24 bytes each: 192 MiB), then none.
    kernel: Vec<Vec<KernelSlice>>,
    kernel_kept: usize,
    kernel_cut: bool,
    /// Per guest, every frame handed to it or sent by it, for the frames
    /// around each CPU burst ([`burst_frames`]); at most
    /// [`MAX_FRAMES_KEPT`] in all (16 bytes each: 128 MiB), then none.
    marks: Vec<Vec<FrameMark>>,
    marks_kept: usize,
    marks_cut: bool,
}

/// A frame of a guest: its node time (ns from the run's first node
/// cycle), its bytes, and whether the guest sent it (else received it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FrameMark {
    ns: u64,
    bytes: u32,
    sent: bool,
}

/// Per call of `rank`, its node's frames around the CPU burst before it
/// ([`Rank::bursts`], [`BurstFrames`]) from its guest's `marks` (sorted
/// by time); the rank's `MPI_Init` returned at node time `init_exit`. A
/// frame at a burst's end counts for the call.
fn burst_frames(rank: &Rank, marks: &[FrameMark], init_exit: i128) -> Vec<BurstFrames> {
    let at = |rel: u64| {
        let t = init_exit + i128::from(rel);
        marks.partition_point(|m| i128::from(m.ns) < t)
    };
    let between = |from: u64, to: u64| {
        let first = at(from);
        &marks[first..at(to).max(first)]
    };
    let mut call_before: Option<(u64, u64)> = None;
    rank.calls
        .iter()
        .zip(rank.bursts())
        .map(|(call, burst)| {
            let mut f = BurstFrames::default();
            if let Some((from, to)) = burst {
                for m in between(from, to) {
                    if m.sent {
                        f.sent += 1;
                    } else {
                        f.received += 1;
                        f.received_bytes += u64::from(m.bytes);
                    }
                }
                if let Some((enter, exit)) = call_before {
                    let sent = between(enter, exit).iter().filter(|m| m.sent).count();
                    f.sent_in_call = u32::try_from(sent).unwrap_or(u32::MAX);
                }
            }
            call_before = Some((call.enter_ns, call.exit_ns));
            f
        })
        .collect()
}

/// A slice in which a guest's kernel ran: node times (ns from the run's
/// first node cycle) of its start and end, and the kernel's ns from the
/// guest's first such slice to its end (what it ran in this one is the
/// difference from the slice before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KernelSlice {
    start: u64,
    end: u64,
    total: u64,
}

/// The kernel's ns in `slices` (increasing) up to node time `t`: the
/// slices before whole, the one that holds `t` in proportion.
fn kernel_until(slices: &[KernelSlice], t: i128) -> f64 {
    let i = slices.partition_point(|s| i128::from(s.end) <= t);
    let before = i.checked_sub(1).map_or(0, |j| slices[j].total);
    match slices.get(i) {
        Some(s) if i128::from(s.start) < t => {
            let part = (t - i128::from(s.start)) as f64 / (s.end - s.start).max(1) as f64;
            before as f64 + (s.total - before) as f64 * part
        }
        _ => before as f64,
    }
}

/// Per call of `rank`, the kernel's ns during the CPU burst before it
/// ([`Rank::bursts`]), from its guest's `slices`, at most the burst (a
/// slice's count, spread over it, may run a few ns past its end); the
/// rank's `MPI_Init` returned at node time `init_exit`.
fn burst_kernel_ns(rank: &Rank, slices: &[KernelSlice], init_exit: i128) -> Vec<u64> {
    let at = |rel: u64| kernel_until(slices, init_exit + i128::from(rel));
    rank.bursts()
        .map(|burst| {
            burst.map_or(0, |(from, to)| {
                let ran = (at(to) - at(from)).round().max(0.0) as u64;
                ran.min(to - from)
            })
        })
        .collect()
}

/// The bit of [`Collector::frames`]'s entries that marks a TCP pure
/// acknowledgement (node times stay far below it).
const ACK_BIT: u64 = 1 << 63;

/// The most frames whose times a run keeps for the live counts (8 bytes
/// each: 64 MiB).
const MAX_FRAMES_KEPT: usize = 1 << 23;

/// Of `frames` ([`Collector::frames`]), those sent from node time `from`
/// to `to` (ns, both included).
fn live_between(frames: &[u64], from: i128, to: i128) -> LiveFrames {
    let mut live = LiveFrames::default();
    for &f in frames {
        if (from..=to).contains(&i128::from(f & !ACK_BIT)) {
            live.frames += 1;
            live.acks += u64::from(f & ACK_BIT != 0);
        }
    }
    live
}

/// Calls `f` with each rank whose clock (`clocks`, by rank) is known,
/// its guest, and the node time its `MPI_Init` returned at.
fn for_each_clocked(
    trace: &mut MpiTrace,
    clocks: &BTreeMap<u32, RankClock>,
    mut f: impl FnMut(&mut Rank, usize, i128),
) {
    for (r, rank) in trace.ranks.iter_mut().enumerate() {
        if let Some(RankClock {
            guest,
            offset_ns: Some(offset),
            ..
        }) = clocks.get(&(r as u32)).copied()
        {
            let at = i128::from(rank.init_exit_ns) + offset;
            f(rank, guest, at);
        }
    }
}

impl Collector {
    /// A frame `frame` that a guest sent into the network at node time
    /// `ns` (ns from the run's first node cycle).
    pub(super) fn sent(&mut self, i: usize, ns: u64, frame: &[u8]) {
        self.mark(i, ns, frame.len(), true);
        if self.frames.len() == MAX_FRAMES_KEPT {
            self.frames_cut = true;
            self.frames = Vec::new();
        }
        if self.frames_cut {
            return;
        }
        let ack = if super::tcp::is_pure_ack(frame) {
            ACK_BIT
        } else {
            0
        };
        self.frames.push(ns.min(ACK_BIT - 1) | ack);
    }

    /// A frame of `bytes` handed to guest `i` at node time `ns` (ns from
    /// the run's first node cycle).
    pub(super) fn received(&mut self, i: usize, ns: u64, bytes: usize) {
        self.mark(i, ns, bytes, false);
    }

    /// Keeps a frame of guest `i` ([`FrameMark`]).
    fn mark(&mut self, i: usize, ns: u64, bytes: usize, sent: bool) {
        if self.marks_kept == MAX_FRAMES_KEPT {
            self.marks_cut = true;
            self.marks = Vec::new();
        }
        if self.marks_cut {
            return;
        }
        if self.marks.len() <= i {
            self.marks.resize(i + 1, Vec::new());
        }
        let bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
        self.marks[i].push(FrameMark { ns, bytes, sent });
        self.marks_kept += 1;
    }

    /// Guest `i`'s kernel ran `ns` in the slice from node time `start`
    /// to `end` (ns from the run's first node cycle).
    pub(super) fn kernel(&mut self, i: usize, (start, end): (u64, u64), ns: u64) {
        if self.kernel_kept == MAX_FRAMES_KEPT {
            self.kernel_cut = true;
            self.kernel = Vec::new();
        }
        if self.kernel_cut || ns == 0 {
            return;
        }
        if self.kernel.len() <= i {
            self.kernel.resize(i + 1, Vec::new());
        }
        let slices = &mut self.kernel[i];
        let total = slices.last().map_or(0, |s| s.total) + ns;
        slices.push(KernelSlice {
            start,
            end: end.max(start + 1),
            total,
        });
        self.kernel_kept += 1;
    }

    fn problem(&mut self, what: String) {
        if self.problems.len() < 16 {
            self.problems.push(what);
        }
    }

    /// Guest `i` sent `frame`, a magic frame with command byte `M`, at
    /// node time `sent_ns` (ns from the run's first node cycle).
    pub(super) fn datagram(&mut self, i: usize, sent_ns: u64, frame: &[u8]) {
        self.datagrams += 1;
        // The UDP length says where the payload ends (a short frame is
        // padded to 60 bytes).
        let udp_len = frame
            .get(38..40)
            .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        let end = 34 + udp_len;
        let Some(payload) = frame
            .get(MAGIC_PAYLOAD..end)
            .filter(|p| p.len() >= DATAGRAM_HEADERS[0])
        else {
            self.problem(format!(
                "guest {i}: an MPI trace datagram of {} bytes that holds no header",
                frame.len()
            ));
            return;
        };
        let word = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().expect("4 bytes"));
        let (version, last, rank, seq, len) =
            (payload[1], payload[2] & 1 == 1, word(4), word(8), word(12));
        let header = DATAGRAM_HEADERS
            .get(usize::from(version).wrapping_sub(1))
            .copied()
            .filter(|&h| payload.len() >= h);
        let Some(header) = header.filter(|_| len <= MAX_STREAM_BYTES) else {
            self.problem(format!(
                "guest {i}: an MPI trace datagram of version {version} and {} bytes claiming {len} (version 1 or 2, at most {MAX_STREAM_BYTES})",
                payload.len()
            ));
            return;
        };
        let clock = (version == 2)
            .then(|| u64::from_le_bytes(payload[16..24].try_into().expect("8 bytes")));
        let piece = &payload[header..];
        if self.total + piece.len() as u64 > MAX_TOTAL_BYTES {
            self.problem(format!(
                "guest {i}: MPI trace records beyond {MAX_TOTAL_BYTES} bytes in all"
            ));
            return;
        }
        let s = self.streams.entry((i, rank)).or_default();
        if s.len == u32::MAX {
            // Refused already, its problem named once.
            return;
        }
        let refused = if s.done && seq == 0 && s.data.len() == s.len as usize {
            // A whole stream, then another from the start: a second MPI
            // program (`--run 'mpirun ... && mpirun ...'`).
            Some(format!(
                "guest {i} rank {rank}: a second MPI program began after the first one's MPI_Finalize (an MPI-level trace holds one program: run one mpirun under --trace-level mpi)"
            ))
        } else if s.done
            || seq != s.next
            || (seq > 0 && len != s.len)
            || s.data.len() + piece.len() > len as usize
        {
            Some(format!(
                "guest {i} rank {rank}: datagram {seq} of a stream of {len} bytes after {} datagrams and {} bytes",
                s.next,
                s.data.len(),
            ))
        } else {
            None
        };
        if let Some(what) = refused {
            s.done = true;
            s.data.clear();
            s.len = u32::MAX;
            self.problem(what);
            return;
        }
        if let Some(clock) = clock {
            let offset = i128::from(sent_ns) - i128::from(clock);
            s.offset_ns = Some(s.offset_ns.map_or(offset, |o| o.min(offset)));
            if seq == 0 {
                s.shipped_ns = Some(clock);
            }
        }
        s.len = len;
        s.next += 1;
        s.data.extend_from_slice(piece);
        self.total += piece.len() as u64;
        s.done = last;
    }

    /// Gives each rank of `trace` whose clock is known (`clocks`, by
    /// rank) its bursts' kernel time and frames, where kept.
    fn around_bursts(&mut self, trace: &mut MpiTrace, clocks: &BTreeMap<u32, RankClock>) {
        if !self.kernel_cut {
            for_each_clocked(trace, clocks, |rank, guest, at| {
                if let Some(slices) = self.kernel.get(guest) {
                    rank.burst_kernel_ns = burst_kernel_ns(rank, slices, at);
                }
            });
        }
        if !self.marks_cut {
            for marks in &mut self.marks {
                marks.sort_by_key(|m| m.ns);
            }
            for_each_clocked(trace, clocks, |rank, guest, at| {
                if let Some(marks) = self.marks.get(guest) {
                    rank.burst_frames = burst_frames(rank, marks, at);
                }
            });
        }
    }

    /// The trace of the streams, written as Dimemas to `path`, with each
    /// rank's clock.
    ///
    /// # Errors
    /// A message saying what was missing or wrong (a rank's stream cut
    /// short, a stream the reader refuses, ranks that do not make one
    /// application), or why the file could not be written.
    pub(super) fn finish(mut self, out: &MpiTraceOut) -> Result<Collected, String> {
        let path = out.path.clone();
        let mut problems = std::mem::take(&mut self.problems);
        let mut streams = Vec::new();
        let mut clocks = BTreeMap::new();
        for ((i, rank), s) in std::mem::take(&mut self.streams) {
            if s.len == u32::MAX {
                continue;
            }
            if !s.done || s.data.len() != s.len as usize {
                problems.push(format!(
                    "guest {i} rank {rank}: {} of its {} bytes arrived",
                    s.data.len(),
                    s.len
                ));
                continue;
            }
            match RankStream::parse(&s.data) {
                Ok(st) => {
                    let clock = RankClock {
                        guest: i,
                        offset_ns: s.offset_ns,
                        shipped_ns: s.shipped_ns,
                    };
                    clocks.insert(st.rank, clock);
                    streams.push(st);
                }
                Err(e) => problems.push(format!("guest {i} rank {rank}: {e}")),
            }
        }
        if !problems.is_empty() {
            return Err(format!("the MPI trace's records: {}", problems.join("; ")));
        }
        let mut trace =
            MpiTrace::from_streams(streams).map_err(|e| format!("the MPI trace: {e}"))?;
        // Each rank's MPI_Init exit on the network's clock, where every
        // rank's clock is known: the start skew.
        let exits: Option<Vec<i128>> = (trace.ranks.iter().enumerate())
            .map(|(r, rank)| {
                let offset = clocks.get(&(r as u32))?.offset_ns?;
                Some(i128::from(rank.init_exit_ns) + offset)
            })
            .collect();
        let mut live = None;
        if let Some(first) = exits.as_ref().and_then(|e| e.iter().min().copied()) {
            for (rank, at) in trace.ranks.iter_mut().zip(exits.iter().flatten()) {
                rank.start_ns = u64::try_from(at - first).unwrap_or(u64::MAX);
            }
            // From the first rank's start to the last one's end.
            let last = (trace.ranks.iter().zip(exits.iter().flatten()))
                .map(|(rank, at)| at + i128::from(rank.live_ns))
                .max()
                .unwrap_or(first);
            live = (!self.frames_cut).then(|| live_between(&self.frames, first, last));
        }
        self.around_bursts(&mut trace, &clocks);
        std::fs::write(&path, trace.to_dimemas(&trace_name(out.preconnected, live)))
            .map_err(|e| format!("cannot write the MPI trace {}: {e}", path.display()))?;
        let outcome = MpiTraceOutcome {
            path,
            replay: out.replay.clone(),
            ranks: trace.ranks.len() as u32,
            calls: trace
                .call_counts()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            rank_s: trace
                .ranks
                .iter()
                .map(|r| r.live_ns as f64 * 1e-9)
                .collect(),
            start_s: match exits {
                Some(_) => trace
                    .ranks
                    .iter()
                    .map(|r| r.start_ns as f64 * 1e-9)
                    .collect(),
                None => Vec::new(),
            },
            hosts: trace.ranks.iter().map(|r| r.host.clone()).collect(),
            truncated: (0..trace.ranks.len() as u32)
                .filter(|&r| trace.ranks[r as usize].truncated)
                .collect(),
            datagrams: self.datagrams,
            bytes: self.total,
            frames: live.map(|l| l.frames),
            acks: live.map(|l| l.acks),
        };
        let clocks = (0..trace.ranks.len() as u32)
            .map(|r| clocks.get(&r).copied())
            .collect();
        Ok(Collected {
            outcome,
            trace,
            clocks,
        })
    }
}

#[cfg(test)]
mod tests;
