//! The guests of one bridge run as node simulators
//! ([`sync_client::drive::NodeSimulator`]), one type per timing:
//! [`LockstepGuests`] (deterministic lock-step: the plugins' slice board,
//! guest time from the instruction count) and [`FreeGuests`] (free-running
//! guests on wall time, frames through their NIC streams). Both read the
//! guests' events through [`GuestSet`], which owns what they share.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fsin_frames::{MAGIC_CHECKPOINT, MAGIC_MPI_TRACE, MAGIC_PAYLOAD, MAGIC_REGION};
use fsin_proto::v1 as pb;
use fsin_qemu_wire::{board, ToPlugin};
use sync_client::drive::{Begin, NodeSimulator, SliceEnd};
use sync_client::NodeLink;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::args::{cycle_ns, guest_ip, guest_mac, lockstep_clock_hz, restore_timeout_s, Args};
use super::error::QemuError;
use super::guest_io::GuestEvent;
use super::guests::{app_deadline, exit_of, fatal_condition, GuestsState};
use super::kernel::KernelTime;
use super::mpi_in::Collector;
use super::outcome::{BridgeEvent, BridgeProgress, CheckpointUse};
use super::roi::{self, Region, RegionCheckpoint, Roi, Step};
use super::start::Start;
use super::tcp::TcpWatch;
use super::timeline_out::GuestTimeline;
use super::trace_out::Recorder;

/// What both timings own while the guests run: the guests and their
/// events, progress milestones and the clocks of the report.
pub(super) struct GuestSet<'a> {
    pub(super) a: &'a Args,
    pub(super) watch: &'a (dyn Fn(BridgeEvent) + Sync),
    pub(super) guests: GuestsState,
    pub(super) rx: mpsc::UnboundedReceiver<GuestEvent>,
    /// The checkpoint the guests are restored from, if they are.
    pub(super) incoming: Option<PathBuf>,
    pub(super) started: Instant,
    pub(super) cluster_at: Option<Instant>,
    pub(super) milestones: BridgeProgress,
    /// `--trace-out`'s recorder (lock-step only).
    pub(super) trace: Option<Recorder>,
    /// `--timeline`'s recorder (lock-step only).
    pub(super) timeline: Option<GuestTimeline>,
    /// The ranks' MPI trace records (`--trace-level mpi`).
    pub(super) mpi: Option<Collector>,
    /// The region of interest (`--roi`), as the ranks tell it.
    pub(super) region: Region,
    /// Node cycle of the end of the slice in which guest 0's command
    /// ended, and the wall time and round then.
    pub(super) app_end: Option<u64>,
    pub(super) app_end_at: Option<(Instant, u64)>,
    /// Rounds (slices) run so far, and the rounds at which the command
    /// started and the region began.
    pub(super) rounds: u64,
    pub(super) command_round: Option<u64>,
    pub(super) region_round: Option<u64>,
    /// Node cycle at which the measured phase starts: the end of the slice
    /// in which guest 0 sent INSEE's CLEAR_STATS magic packet (or, with
    /// `--roi mpi|marker`, in which the region began), where the server
    /// starts measuring.
    pub(super) measured_from: Option<u64>,
    /// TCP segments the guests sent in the measured phase.
    pub(super) tcp: TcpWatch,
}

/// Command byte of INSEE's CLEAR_STATS magic packet.
const CLEAR_STATS: u8 = 1;

/// An event [`GuestSet::event`] leaves to the timing: the lock-step
/// board's, guest 0's request to save the cluster, and the region's start.
enum Left {
    AllReached(usize, u64),
    Read(usize, u64),
    SaveAsked(usize),
    /// Every rank's region began, in the slice that ends at this node
    /// cycle.
    RegionBegan(u64),
}

impl GuestSet<'_> {
    /// Handles guest event `ev` during slice `c`: sends the guests' frames
    /// (stamped within the slice from their guest time `at_ns` in ns after
    /// `base_ns`, at the slice start without one), keeps consoles and
    /// milestones, adds the nodes that finished to `finished`, and fails on
    /// a guest that cannot go on. Returns what only a timing knows how to
    /// handle.
    async fn event(
        &mut self,
        ev: GuestEvent,
        link: &mut NodeLink,
        c: &pb::Continue,
        base_ns: u64,
        finished: &mut Vec<pb::AppReport>,
    ) -> Result<Option<Left>, QemuError> {
        let a = self.a;
        let shift = a.guest.icount_shift;
        let slice_end = c.start_cycle + c.node_cycles;
        let guests = &mut self.guests;
        match ev {
            GuestEvent::AllReached(i, r) => return Ok(Some(Left::AllReached(i, r))),
            GuestEvent::Read(i, k) => return Ok(Some(Left::Read(i, k))),
            GuestEvent::Connected(i, w) => guests.nics[i] = Some(w),
            GuestEvent::Frame(i, at_ns, data) => {
                return self.frame(i, at_ns, data, link, c, base_ns)
            }
            GuestEvent::Woke(i, at_ns, idle_from_ns) => {
                // Idle from the cycle after the last instruction's.
                let from = idle_from_ns.saturating_sub(base_ns).div_ceil(1 << shift);
                let at = at_ns.saturating_sub(base_ns) >> shift;
                if let Some(r) = &mut self.trace {
                    r.woke(i, at, from);
                }
                if let Some(t) = &mut self.timeline {
                    t.woke(i, at, from);
                }
            }
            GuestEvent::Console(i, line) => self.console_line(i, line, slice_end, finished)?,
            GuestEvent::NicError(i, e) => {
                // A QEMU that dies with frames unread resets its NIC
                // stream, which may be seen before its exit is.
                return Err(match exit_of(&mut self.rx, guests, i).await {
                    Some(status) => guests.ended(i, &status),
                    None => QemuError::Guest(format!("{}: NIC stream: {e}", guests.describe(i))),
                });
            }
            GuestEvent::RestoreFailed(i, e) => {
                // QEMU's own reason comes on its stderr as it exits.
                let _ = exit_of(&mut self.rx, guests, i).await;
                return Err(QemuError::Guest(format!(
                    "{} could not be restored: {e} (remove {} to boot again); last console lines:\n  {}",
                    guests.describe(i),
                    self.incoming
                        .as_deref()
                        .unwrap_or(Path::new("the checkpoint"))
                        .display(),
                    guests.tails[i].join("\n  ")
                )));
            }
            GuestEvent::Exited(i, status) => return Err(guests.ended(i, &status)),
        }
        Ok(None)
    }

    /// A frame guest `i` sent at guest time `at_ns` (ns after `base_ns`;
    /// the slice start without one) in slice `c`: a word to the host
    /// (checkpoint, MPI records, region marks) is kept here, any other
    /// is recorded and sent into the network, stamped within the slice.
    fn frame(
        &mut self,
        i: usize,
        at_ns: Option<u64>,
        data: Vec<u8>,
        link: &mut NodeLink,
        c: &pb::Continue,
        base_ns: u64,
    ) -> Result<Option<Left>, QemuError> {
        let shift = self.a.guest.icount_shift;
        let slice_end = c.start_cycle + c.node_cycles;
        // The instruction that ends at guest time t ran in node
        // cycle (t - 1) >> shift; a frame is stamped within its
        // slice (a guest may stop up to 2^shift - 1 ns late).
        let cycle = at_ns.map_or(c.start_cycle, |t| {
            (t.saturating_sub(base_ns).saturating_sub(1) >> shift)
                .clamp(c.start_cycle, slice_end - 1)
        });
        let magic = fsin_frames::is_magic(&data).then(|| data[MAGIC_PAYLOAD]);
        match magic {
            Some(MAGIC_CHECKPOINT) => return Ok(Some(Left::SaveAsked(i))),
            Some(MAGIC_MPI_TRACE) => {
                // Records for the host, never for the network.
                if let Some(m) = &mut self.mpi {
                    let sent_ns = at_ns.map_or(cycle_ns(c.start_cycle, shift), |t| {
                        t.saturating_sub(base_ns)
                    });
                    m.datagram(i, sent_ns, &data);
                }
                return Ok(None);
            }
            // A mark in a command measured whole: its go at once.
            Some(MAGIC_REGION) if self.region.roi == Roi::Command => {
                if let Ok(roi::Said::Begin { .. }) = roi::read(&data) {
                    self.region.go_now(i, slice_end);
                }
                return Ok(None);
            }
            Some(MAGIC_REGION) => {
                // The ranks' word to the host, never for the
                // network.
                let step = self.region.datagram(i, cycle, slice_end, &data);
                return Ok((step == Step::Begin).then_some(Left::RegionBegan(slice_end)));
            }
            // Guest 0's CLEAR_STATS as it starts the command: the
            // measure starts there unless the region is the ranks'.
            Some(CLEAR_STATS) if self.region.roi != Roi::Command => return Ok(None),
            Some(CLEAR_STATS) if i == 0 && self.measured_from.is_none() => {
                self.start_measuring(slice_end);
            }
            _ => {}
        }
        if self.measured_from.is_some_and(|m| cycle >= m) {
            self.tcp.sent(&data);
        }
        if let Some(m) = &mut self.mpi {
            m.sent(i, cycle_ns(cycle, shift), &data);
        }
        if let Some(r) = &mut self.trace {
            r.sent(i, cycle, &data);
        }
        if let Some(t) = &mut self.timeline {
            t.sent(i, cycle, &data);
        }
        link.send_frame(self.a.first_node + i as u32, cycle, data)?;
        Ok(None)
    }

    /// A console line of guest `i` in the slice that ends at node cycle
    /// `slice_end`: kept, its milestones reported; a fatal one fails the
    /// run; a guest that finished is added to `finished` (guest 0 only once
    /// its command has run).
    fn console_line(
        &mut self,
        i: usize,
        line: String,
        slice_end: u64,
        finished: &mut Vec<pb::AppReport>,
    ) -> Result<(), QemuError> {
        let a = self.a;
        let guests = &mut self.guests;
        let was_done = guests.reports[i].done_s.is_some();
        let fatal = fatal_condition(&line).map(|what| {
            let said: String = line.trim().chars().take(200).collect();
            format!("{} {what}: \"{said}\"", guests.describe(i))
        });
        guests.console(i, line);
        if let Some(fault) = fatal {
            return Err(QemuError::Guest(format!(
                "{fault}; last console lines:\n  {}",
                guests.tails[i].join("\n  ")
            )));
        }
        if i == 0 {
            let g = &mut guests.reports[0];
            if g.cluster_s.is_some() && self.cluster_at.is_none() {
                self.cluster_at = Some(Instant::now());
                self.command_round = Some(self.rounds);
            }
            if let (Some(at), Some(_), None) = (self.cluster_at, g.app.exit_code, g.app.wall_s) {
                g.app.wall_s = Some(at.elapsed().as_secs_f64());
                self.app_end = Some(slice_end);
                self.app_end_at = Some((Instant::now(), self.rounds));
            }
        }
        let now = BridgeProgress::of(&guests.reports);
        if now != self.milestones {
            (self.watch)(BridgeEvent::Progress(now));
        }
        self.milestones = now;
        if !was_done && guests.reports[i].done_s.is_some() {
            if let (0, Some(_), None) = (i, &a.run, guests.reports[0].app.exit_code) {
                return Err(QemuError::Guest(format!(
                    "{} finished without running the command: {}; last console lines:\n  {}",
                    guests.describe(0),
                    guests.reports[0].app.error.as_deref().unwrap_or(
                        "its image's /init does not run fsin.app commands (README, \"Bring your own image\")"
                    ),
                    guests.tails[0].join("\n  ")
                )));
            }
            finished.push(pb::AppReport {
                node: a.first_node + i as u32,
                done_cycle: slice_end - 1,
                ..pb::AppReport::default()
            });
        }
        Ok(())
    }

    /// Begins the region at node cycle `at`, the end of the current slice:
    /// the server is told to measure from there (a CLEAR_STATS of the
    /// bridge's own, sent in this slice), and the ranks get their go.
    fn begin_region(&mut self, link: &mut NodeLink, at: u64) -> Result<(), QemuError> {
        let a = self.a;
        self.start_measuring(at);
        self.region.begin(at, a.go_seed, a.guest.icount_shift);
        self.region_round = Some(self.rounds + 1);
        let clear =
            fsin_frames::magic_frame(guest_mac(a.first_node), guest_ip(0).octets(), CLEAR_STATS);
        link.send_frame(a.first_node, at - 1, clear)?;
        Ok(())
    }

    /// Starts the measured phase at node cycle `from` (the end of the
    /// current slice, where the server starts measuring): the trace and
    /// the timeline start there.
    pub(super) fn start_measuring(&mut self, from: u64) {
        self.measured_from = Some(from);
        if let Some(r) = &mut self.trace {
            r.start_at(from);
        }
        if let Some(t) = &mut self.timeline {
            t.start_at(from);
        }
    }

    /// The next guest event, or `None` at `deadline`.
    ///
    /// # Errors
    /// [`QemuError::Guest`] when every guest task has ended.
    async fn next(
        &mut self,
        deadline: tokio::time::Instant,
    ) -> Result<Option<GuestEvent>, QemuError> {
        tokio::select! {
            ev = self.rx.recv() => ev
                .map(Some)
                .ok_or_else(|| QemuError::Guest("every guest task ended".into())),
            () = tokio::time::sleep_until(deadline) => Ok(None),
        }
    }

    /// Fails a `--run` command out of time at `guest_s` seconds of guest
    /// time ([`app_deadline`]).
    fn check_deadline(&self, guest_s: f64) -> Result<(), QemuError> {
        if self.a.run.is_some() && self.guests.reports[0].app.exit_code.is_none() {
            app_deadline(self.a, &self.guests, guest_s)?;
        }
        Ok(())
    }
}

/// Free-running guests (`--timing free`): frames cross through the guests'
/// NIC streams, a slice lasts one wall-clock tick, and a frame is stamped
/// at the slice start.
pub(super) struct FreeGuests<'a> {
    pub(super) set: GuestSet<'a>,
}

impl NodeSimulator for FreeGuests<'_> {
    type Error = QemuError;

    /// Ends a command that ran out of `--app-timeout` (wall time stands
    /// for guest time).
    async fn begin(&mut self, _: &mut NodeLink, _: &pb::Continue) -> Result<Begin, QemuError> {
        self.set
            .check_deadline(self.set.started.elapsed().as_secs_f64())?;
        Ok(Begin::Run)
    }

    async fn run_slice(
        &mut self,
        link: &mut NodeLink,
        c: &pb::Continue,
    ) -> Result<SliceEnd, QemuError> {
        let set = &mut self.set;
        let (n, first) = (set.a.guest.guests as usize, set.a.first_node);
        for d in &c.frames {
            let i = d.node.wrapping_sub(first) as usize;
            if i >= n {
                continue;
            }
            if let Some(w) = &mut set.guests.nics[i] {
                let mut buf = Vec::with_capacity(4 + d.data.len());
                buf.extend_from_slice(&(d.data.len() as u32).to_be_bytes());
                buf.extend_from_slice(&d.data);
                if w.write_all(&buf).await.is_err() {
                    set.guests.nics[i] = None;
                }
            }
        }
        let end = tokio::time::Instant::now() + Duration::from_millis(set.a.guest.tick_ms.max(1));
        let mut finished = Vec::new();
        while let Some(ev) = set.next(end).await? {
            // Free guests have no board, and save nothing.
            set.event(ev, link, c, 0, &mut finished).await?;
        }
        set.rounds += 1;
        Ok(SliceEnd {
            finished,
            idle_until: None,
        })
    }
}

/// Guests in lock-step (`--timing lockstep`, the Simics paper's
/// slice-based lock-step): deliveries go to each guest's plugin stamped
/// in guest time, a slice ends when every guest reached its end on the
/// slice board, and the guests' idle promises become the slice's. Saves
/// and restores a booted cluster.
pub(super) struct LockstepGuests<'a> {
    pub(super) set: GuestSet<'a>,
    /// The slice board, and a sender to each guest's plugin.
    pub(super) board: board::Bridge,
    pub(super) plugins: Vec<mpsc::UnboundedSender<Vec<u8>>>,
    pub(super) start: Start,
    /// Guest time of node cycle 0 (restored guests go on from the time
    /// they were saved at).
    pub(super) base_ns: u64,
    /// Each guest's idle promise at the end of this slice (guest ns, 0:
    /// busy; every guest reports one before the SliceDone).
    pub(super) idle: Vec<u64>,
    /// Per guest: bytes of deliveries written to its plugin, and of its
    /// plugin's messages decoded; the board's round.
    pub(super) delivered: Vec<u64>,
    pub(super) decoded: Vec<u64>,
    pub(super) round: u64,
    /// Guest cycles past the slice ends: sum, most, count.
    pub(super) overrun: (u64, u64, u64),
    /// The guests' kernel time, from their plugins' counts.
    pub(super) kernel: KernelTime,
    /// Checkpoints: guest 0 asked for the save (its magic packet), or
    /// every rank's region began with a checkpoint at its start to make.
    pub(super) save_asked: bool,
    /// Nodes that had finished when they were saved: they finish in the
    /// first slice of a restored run.
    pub(super) done_before: Vec<u32>,
    /// The end of the last slice, node cycles.
    pub(super) last_end: u64,
    pub(super) used: Option<CheckpointUse>,
    /// Wall seconds from the start to the save.
    pub(super) boot_wall_s: f64,
}

impl<'a> LockstepGuests<'a> {
    /// The lock-step run of `set` on `board`, each guest's plugin messages
    /// sent to `plugins`, its guests coming from `start`, node cycle 0 at
    /// guest time `base_ns`.
    pub(super) fn new(
        set: GuestSet<'a>,
        board: board::Bridge,
        plugins: Vec<mpsc::UnboundedSender<Vec<u8>>>,
        start: Start,
        base_ns: u64,
    ) -> Self {
        let n = plugins.len();
        let mut set = set;
        if let Start::Restore(_, m) = &start {
            if let Some(saved) = &m.region {
                // Restored at the region's start: it begins at once.
                let a = set.a;
                set.region = Region::restored(a.roi(), saved.world, &saved.waiting);
                set.start_measuring(0);
                set.region.begin(0, a.go_seed, a.guest.icount_shift);
                set.region_round = Some(0);
            }
        }
        let done_before = match &start {
            Start::Restore(..) => set
                .guests
                .reports
                .iter()
                .filter(|g| g.done_s.is_some())
                .map(|g| g.node)
                .collect(),
            _ => Vec::new(),
        };
        LockstepGuests {
            set,
            board,
            plugins,
            start,
            base_ns,
            idle: vec![0; n],
            delivered: vec![0; n],
            decoded: vec![0; n],
            round: 0,
            overrun: (0, 0, 0),
            kernel: KernelTime::new(n),
            save_asked: false,
            done_before,
            last_end: 0,
            used: None,
            boot_wall_s: 0.0,
        }
    }

    /// Where the cluster is to be saved at the region's start, if it is.
    pub(super) fn region_save(&self) -> Option<&Path> {
        match &self.set.a.region_checkpoint {
            Some(RegionCheckpoint::Save(dir)) => Some(dir),
            _ => None,
        }
    }

    /// Guest time (ns) of node cycle `cycle`.
    pub(super) fn guest_ns(&self, cycle: u64) -> u64 {
        self.base_ns
            .saturating_add(cycle_ns(cycle, self.set.a.guest.icount_shift))
    }

    /// Hands slice `c`'s frames to their guests' plugins (recorded in the
    /// trace and timeline), with the host's go to ranks that wait for the
    /// region, and sets each guest's slice end on the board.
    fn hand_over(&mut self, c: &pb::Continue) {
        let a = self.set.a;
        let n = a.guest.guests as usize;
        let (base_ns, shift) = (self.base_ns, a.guest.icount_shift);
        let guest_ns = |cycle: u64| base_ns.saturating_add(cycle_ns(cycle, shift));
        let slice_end = c.start_cycle + c.node_cycles;
        let mut msgs = vec![Vec::new(); n];
        for d in &c.frames {
            let i = d.node.wrapping_sub(a.first_node) as usize;
            if i < n {
                if let Some(r) = &mut self.set.trace {
                    r.delivered(i, d.node_cycle, &d.data);
                }
                if let Some(t) = &mut self.set.timeline {
                    t.delivered(i, d.node_cycle, &d.data);
                }
                if let Some(m) = &mut self.set.mpi {
                    m.received(i, cycle_ns(d.node_cycle, shift), d.data.len());
                }
                ToPlugin::Deliver {
                    at_ns: guest_ns(d.node_cycle),
                    frame: d.data.clone(),
                }
                .encode(&mut msgs[i]);
            }
        }
        // The host's go to the guests whose ranks wait for the region.
        for (i, at) in self.set.region.take_due(slice_end) {
            ToPlugin::Deliver {
                at_ns: guest_ns(at.max(c.start_cycle)),
                frame: roi::go_frame(),
            }
            .encode(&mut msgs[i]);
        }
        for (i, m) in msgs.into_iter().enumerate() {
            if !m.is_empty() {
                self.delivered[i] += m.len() as u64;
                // A guest whose task ended is reported by its events.
                let _ = self.plugins[i].send(m);
            }
            self.board
                .set_slice(i, guest_ns(slice_end), self.delivered[i]);
        }
    }

    /// Handles the guests' events of slice `c` until every guest reached
    /// its end and every frame it sent before is read (by `end`, else the
    /// late guests are named): their reports on the board.
    async fn wait_for_slice(
        &mut self,
        link: &mut NodeLink,
        c: &pb::Continue,
        end: tokio::time::Instant,
        timeout_s: u64,
        finished: &mut Vec<pb::AppReport>,
    ) -> Result<Vec<board::Reached>, QemuError> {
        let n = self.set.a.guest.guests as usize;
        let base_ns = self.base_ns;
        let mut all_reached = false;
        loop {
            // Every guest reached the slice end, and every frame it sent
            // before is read.
            if all_reached {
                let ends: Option<Vec<board::Reached>> = (0..n)
                    .map(|i| {
                        self.board
                            .reached(i, self.round)
                            .filter(|r| self.decoded[i] >= r.sent_bytes)
                    })
                    .collect();
                if let Some(ends) = ends {
                    return Ok(ends);
                }
            }
            let Some(ev) = self.set.next(end).await? else {
                let late: Vec<String> = (0..n)
                    .filter(|&i| self.board.reached(i, self.round).is_none())
                    .map(|i| self.set.guests.describe(i))
                    .collect();
                return Err(QemuError::Guest(format!(
                    "{} did not reach the end of slice {} within {timeout_s} s",
                    late.join(", "),
                    c.slice,
                )));
            };
            match self.set.event(ev, link, c, base_ns, finished).await? {
                None => {}
                Some(Left::AllReached(i, r)) => {
                    if r != self.round {
                        return Err(QemuError::Guest(format!(
                            "{}: its QEMU plugin ended board round {r} during round {}",
                            self.set.guests.describe(i),
                            self.round
                        )));
                    }
                    all_reached = true;
                }
                Some(Left::Read(i, k)) => self.decoded[i] += k,
                // Guest 0 waits for its command (ours, not the server's).
                Some(Left::SaveAsked(i)) => self.save_asked |= i == 0,
                // The ranks wait for their go: saved first, if asked.
                Some(Left::RegionBegan(_)) if self.region_save().is_some() => {
                    self.save_asked = true;
                }
                Some(Left::RegionBegan(at)) => self.set.begin_region(link, at)?,
            }
        }
    }
}

impl NodeSimulator for LockstepGuests<'_> {
    type Error = QemuError;

    /// Leaves to save the booted cluster once guest 0 asked and every guest
    /// idles (the server skipped idle slices: no frame in flight or due);
    /// ends a command that ran out of `--app-timeout` of guest time.
    async fn begin(&mut self, _: &mut NodeLink, c: &pb::Continue) -> Result<Begin, QemuError> {
        let saves = matches!(self.start, Start::Save(..)) || self.region_save().is_some();
        if saves && self.save_asked && c.start_cycle > self.last_end {
            self.boot_wall_s = self.set.started.elapsed().as_secs_f64();
            self.board.pause();
            // The save takes longer than the server waits for a slice.
            return Ok(Begin::Leave("the cluster is being saved".into()));
        }
        let hz = lockstep_clock_hz(self.set.a.guest.icount_shift);
        self.set.check_deadline(c.start_cycle as f64 / hz as f64)?;
        Ok(Begin::Run)
    }

    async fn run_slice(
        &mut self,
        link: &mut NodeLink,
        c: &pb::Continue,
    ) -> Result<SliceEnd, QemuError> {
        let a = self.set.a;
        let (base_ns, shift) = (self.base_ns, a.guest.icount_shift);
        let slice_end = c.start_cycle + c.node_cycles;
        if let Some(t) = &mut self.set.timeline {
            t.reached(slice_end);
        }
        self.hand_over(c);
        self.board.start(self.round);
        let timeout_s = match (self.round, &self.start) {
            (0, Start::Restore(..)) => restore_timeout_s(a.slice_timeout_s, a.guest.guests),
            _ => a.slice_timeout_s,
        };
        let end = tokio::time::Instant::now() + Duration::from_secs(timeout_s);
        // Guests that had finished their part when they were saved finish
        // in the first slice of a restored run.
        let mut finished: Vec<pb::AppReport> = std::mem::take(&mut self.done_before)
            .into_iter()
            .map(|node| pb::AppReport {
                node,
                done_cycle: slice_end - 1,
                ..pb::AppReport::default()
            })
            .collect();
        let reached = self
            .wait_for_slice(link, c, end, timeout_s, &mut finished)
            .await?;
        let measured = self.set.measured_from.is_some_and(|m| c.start_cycle >= m);
        let slice = ((c.start_cycle, slice_end), shift);
        let (mpi, reports) = (self.set.mpi.as_mut(), &mut self.set.guests.reports);
        (self.kernel).slice_end(&reached, slice, measured, mpi, reports);
        for (promise, r) in self.idle.iter_mut().zip(&reached) {
            *promise = r.idle_until_ns;
            let over = (r.at_ns.saturating_sub(base_ns) >> shift).saturating_sub(slice_end);
            let o = &mut self.overrun;
            *o = (o.0 + over, o.1.max(over), o.2 + 1);
        }
        if let (0, Start::Restore(dir, m)) = (self.round, &self.start) {
            // Every guest has run its first slice: restored.
            let restored = self.set.started.elapsed().as_secs_f64();
            self.set.cluster_at = Some(Instant::now());
            self.set.command_round = Some(self.set.rounds + 1);
            self.used = Some(CheckpointUse::of(dir, m, false, restored));
        }
        self.round += 1;
        self.set.rounds += 1;
        self.last_end = slice_end;
        // Nothing happens before the earliest promise, if every guest made
        // one, nor after a go that is due.
        let promise = self.idle.iter().min().copied().unwrap_or(0);
        let idle_until = if promise == u64::MAX {
            promise
        } else {
            promise.saturating_sub(base_ns) >> shift
        };
        let idle_until = self
            .set
            .region
            .next_due()
            .map_or(idle_until, |due| idle_until.min(due));
        Ok(SliceEnd {
            finished,
            idle_until: Some(idle_until),
        })
    }
}
