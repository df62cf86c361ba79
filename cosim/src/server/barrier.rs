//! The barrier: rounds of slices. Continue goes out to every live client at
//! once (on its stream, or the way its last SliceDone came on a fast path of
//! crate `fsin-sync`); the barrier then waits until every live client has
//! ended the slice, naming the ones that stall; idle stretches that every
//! client promised to sleep through are skipped in one round.

use std::time::{Duration, Instant};

use fsin::config::SliceRatio;
use fsin_proto::v1::server_message::Body as ServerBody;
use fsin_proto::v1::{self as pb};
use fsin_sync::{Heard, Round, ServerPath, Standing, Via};
use tokio::sync::mpsc;

use super::edge::{Event, OUTBOX};
use super::end::{Cause, End};
use super::roster::Roster;
use crate::coupler::{Coupler, OutFrame, Slice};
use crate::progress::CosimStatus;
use crate::ServeOptions;

/// After the stall timeout, how long the barrier still reads what clients
/// sent before it names the ones missing as stalled.
const STALL_GRACE: Duration = Duration::from_millis(200);

/// The rounds of one run.
pub(super) struct Barrier {
    /// Rounds so far, less one: the index of the slice running (Continue
    /// and SliceDone carry it).
    pub(super) slice_index: u64,
    /// Slices skipped as idle (`SliceDone.idle_until`): the slice grid's
    /// index is `slice_index + skipped`.
    pub(super) skipped: u64,
    /// The fast path(s) of quiet rounds, if offered.
    fast: Option<fsin_sync::Server>,
    /// Continues sent so far through shared memory, as datagrams, and on
    /// the streams (logged at the end: which fast path the clients used).
    pub(super) sent: fsin_sync::Sent,
}

impl Barrier {
    pub(super) fn new(fast: Option<fsin_sync::Server>) -> Barrier {
        Barrier {
            slice_index: 0,
            skipped: 0,
            fast,
            sent: fsin_sync::Sent::default(),
        }
    }

    /// The slice grid's index of the slice running.
    pub(super) fn grid_index(&self) -> u64 {
        self.slice_index + self.skipped
    }

    /// Opens the fast paths for the clients `ids` (with the shared-memory
    /// barrier if `shared_memory`).
    pub(super) fn start(&mut self, ids: &[u64], shared_memory: bool) {
        self.fast = self.fast.take().map(|f| f.start(ids, shared_memory));
    }

    /// Adds the fast paths to `client`'s Welcome.
    pub(super) fn offer(&self, client: u64, welcome: &mut pb::Welcome) {
        if let Some(f) = &self.fast {
            f.offer(client, welcome);
        }
    }

    /// Sends Continue for `slice` to every live client, with its frames.
    pub(super) fn send_continue(
        &mut self,
        roster: &mut Roster,
        slice: &Slice,
        deliveries: Vec<OutFrame>,
        status: &CosimStatus,
    ) {
        status.add_delivered(deliveries.len() as u64);
        let mut per_client: std::collections::BTreeMap<u64, Vec<pb::Delivery>> =
            std::collections::BTreeMap::new();
        for f in deliveries {
            if let Some(c) = roster.delivered(f.node) {
                per_client.entry(c).or_default().push(pb::Delivery {
                    node: f.node,
                    node_cycle: f.node_cycle,
                    data: f.data,
                });
            }
        }
        let now = Instant::now();
        let mut by_stream = Vec::new();
        if let Some(f) = &mut self.fast {
            f.open_round(self.slice_index, &roster.live_ids());
        }
        for (id, c) in roster.clients.iter_mut().filter(|(_, c)| c.live) {
            if c.done.is_some() {
                c.wait += now - c.done_at;
            }
            // Answer the way it was spoken to (sync.proto, DatagramSync and
            // ShmBarrier).
            let quiet = !per_client.contains_key(id);
            let via = self
                .fast
                .as_mut()
                .map_or(Via::Stream, |f| f.answer(*id, quiet));
            self.sent.count(via);
            if via != Via::Stream {
                continue;
            }
            by_stream.push(*id);
            let msg = pb::ServerMessage {
                body: Some(ServerBody::Cont(pb::Continue {
                    slice: self.slice_index,
                    start_cycle: slice.node_start,
                    node_cycles: slice.node_cycles,
                    frames: per_client.remove(id).unwrap_or_default(),
                })),
            };
            if let Err(mpsc::error::TrySendError::Full(_)) = c.out.try_send(Ok(msg)) {
                roster.unread.push(*id);
            }
        }
        if let Some(f) = &mut self.fast {
            f.publish(&Round {
                slice: self.slice_index,
                start_cycle: slice.node_start,
                node_cycles: slice.node_cycles,
                stream: &by_stream,
            });
        }
    }

    /// Takes what the fast path heard about the current slice: quiet
    /// SliceDones (the client is done) and faults.
    fn take_quiet(&mut self, roster: &mut Roster) -> Option<End> {
        let k = self.slice_index;
        loop {
            let clients = &roster.clients;
            let standing = |id: u64| match clients.get(&id) {
                Some(c) if c.live && c.done == Some(k) => Standing::Done,
                Some(c) if c.live => Standing::Running,
                _ => Standing::Gone,
            };
            match self.fast.as_mut()?.take(k, &standing)? {
                Heard::Done { client, at } => roster.done_quietly(client, k, at),
                Heard::Malformed { client, why } => {
                    if roster.is_live(client) {
                        if let Some(end) = roster.fault(client, Cause::FastPath(why), k) {
                            return Some(end);
                        }
                    }
                }
            }
        }
    }

    /// Waits until every live client has finished the current slice,
    /// passing every event to `handle` meanwhile. Returns why the run must
    /// end instead, if it must.
    pub(super) async fn wait(
        &mut self,
        roster: &mut Roster,
        events: &mut mpsc::Receiver<Event>,
        node_timeout: Duration,
        mut handle: impl FnMut(Event, &mut Roster) -> Option<End>,
    ) -> Option<End> {
        let k = self.slice_index;
        for id in std::mem::take(&mut roster.unread) {
            if let Some(end) = roster.fault(id, Cause::Unread(OUTBOX), k) {
                return Some(end);
            }
        }
        let timeout = tokio::time::sleep(node_timeout);
        tokio::pin!(timeout);
        let mut grace = true;
        loop {
            if let Some(end) = self.take_quiet(roster) {
                return Some(end);
            }
            if roster.clients.values().all(|c| !c.live) {
                return Some(End::EveryClientLeft);
            }
            if roster
                .clients
                .values()
                .all(|c| !c.live || c.done == Some(k))
            {
                return None;
            }
            let fast = &self.fast;
            let ev = tokio::select! {
                ev = events.recv() => ev,
                () = async {
                    match fast {
                        Some(f) => f.wake().await,
                        None => std::future::pending().await,
                    }
                } => continue,
                () = &mut timeout => {
                    let now = tokio::time::Instant::now();
                    let late = now.saturating_duration_since(timeout.deadline());
                    if late > STALL_GRACE * 5 {
                        // The server itself was not running when the time
                        // ran out (stopped, swapped out): nobody to blame,
                        // every client gets a full period from now.
                        tracing::warn!(
                            "the server did not run for {:.1} s; the stall timeout starts again",
                            late.as_secs_f64()
                        );
                        timeout.as_mut().reset(now + node_timeout);
                        continue;
                    }
                    if std::mem::take(&mut grace) {
                        // SliceDones may still be in the server's buffers:
                        // let its tasks run before blaming anyone.
                        timeout.as_mut().reset(now + STALL_GRACE);
                        continue;
                    }
                    let stalled: Vec<u64> = (roster.clients.iter())
                        .filter(|(_, c)| c.live && c.done != Some(k))
                        .map(|(&id, _)| id)
                        .collect();
                    let secs = node_timeout.as_secs_f64();
                    for id in stalled {
                        let cause = Cause::Stalled { slice: k, secs };
                        if let Some(end) = roster.fault(id, cause, k) {
                            return Some(end);
                        }
                    }
                    grace = true;
                    timeout.as_mut().reset(tokio::time::Instant::now() + node_timeout);
                    continue;
                }
            };
            let end = match ev {
                Some(ev) => handle(ev, roster),
                None => Some(End::ServerStopped),
            };
            if end.is_some() {
                return end;
            }
        }
    }

    /// When every live client has promised to do nothing before some node
    /// cycle (`SliceDone.idle_until`) and no frame is in flight or due,
    /// runs the whole slices of `node_cycles : net_cycles` that end before
    /// the earliest promise, at once (the network is empty, so the drive
    /// loop jumps its clock) and returns the last of them, so that the next
    /// round runs the slice of the promise: the same grid and results as
    /// one round per slice. `slice` otherwise. In parallel mode the
    /// network has finished the slice whose frames it was running, and no
    /// frame waits to enter it (the caller checks), so nothing is in flight
    /// there either.
    pub(super) fn skip_idle(
        &mut self,
        roster: &Roster,
        coupler: &mut Coupler,
        slice: Slice,
        SliceRatio {
            node: node_cycles,
            net: net_cycles,
        }: SliceRatio,
        opts: &ServeOptions,
    ) -> Slice {
        if !opts.idle_skip || coupler.frames_pending() > 0 || !coupler.network_idle() {
            return slice;
        }
        let Some(until) = (roster.clients.values())
            .filter(|c| c.live)
            .map(|c| c.idle_until)
            .min()
            .filter(|&t| t > 0 && (t < u64::MAX || opts.slices.is_some()))
        else {
            return slice;
        };
        let next_start = slice.node_start.saturating_add(slice.node_cycles);
        let mut whole = until.saturating_sub(next_start) / node_cycles;
        if let Some(limit) = opts.slices {
            // Leave the last requested slice to run as a round.
            whole = whole.min(limit.saturating_sub(self.grid_index() + 2));
        }
        if whole == 0 {
            return slice;
        }
        let (Some(node_skip), Some(net_skip)) = (
            whole.checked_mul(node_cycles),
            whole.checked_mul(net_cycles),
        ) else {
            return slice;
        };
        let Some(gap) = slice.next(SliceRatio {
            net: net_skip,
            node: node_skip,
        }) else {
            return slice;
        };
        coupler.run_slice(gap, &mut Vec::new(), 0);
        self.skipped += whole;
        Slice {
            node_start: gap.node_start + gap.node_cycles - node_cycles,
            node_cycles,
            net_start: gap.net_start + gap.net_cycles - net_cycles,
            net_cycles,
        }
    }

    /// Ends the fast paths (their clients see the run end).
    pub(super) fn shutdown(&self) {
        if let Some(f) = &self.fast {
            f.shutdown();
        }
    }
}
