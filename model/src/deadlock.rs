//! The network deadlock detector: stops a run whose packets can never move
//! again and reports the cycle of waiting channels, instead of simulating
//! a frozen network for ever (useful with routings that are not
//! deadlock-free, e.g. the SpiNNaker router without discards).
//!
//! Under virtual cut-through nothing in the network changes unless a phit
//! crosses a link, a phit is consumed, or the SpiNNaker router discards a
//! packet: a request only becomes grantable when a queue drains or an
//! output frees. So a network with packets in it, no link transferring and
//! nothing being consumed for longer than a packet time and the discard
//! timeout is deadlocked. The detector then builds the wait-for graph of
//! the input queues whose head packet cannot move (each waits for the
//! queues its candidate outputs feed, which have no room; under wormhole
//! switching a packet that holds an output waits for the queue it feeds;
//! behind the SpiNNaker engine, for the input that holds it) and returns
//! one cycle.
//!
//! Under wormhole switching the same holds with "a phit moved" for "a link
//! transferred".

use serde::Serialize;

use crate::engine::Part;
use crate::fabric::{CONSUME, NONE};
use crate::router::{with_policy, RequestPolicy};
use crate::spec::NetworkSpec;

/// One input queue of a deadlock cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitingChannel {
    /// Router (trees: compute nodes first, then switches).
    pub router: u32,
    /// Link port of the input (`None`: an injection queue).
    pub port: Option<usize>,
    /// Virtual channel of the input (injection queue index when injecting).
    pub vc: usize,
    /// Source of the packet at its head.
    pub src: u32,
    /// Destination of the packet at its head.
    pub dst: u32,
}

/// A deadlock found by the detector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkDeadlock {
    /// Cycle at which it was declared.
    pub cycle: u64,
    /// Cycles the network had been frozen.
    pub frozen_cycles: u64,
    /// Packets inside the network.
    pub packets_in_network: u64,
    /// A cycle of input queues, each waiting for the next (and the last for
    /// the first).
    pub cycle_of_channels: Vec<WaitingChannel>,
}

impl std::fmt::Display for NetworkDeadlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "network deadlock at cycle {} ({} packets frozen for {} cycles); waiting channels:",
            self.cycle, self.packets_in_network, self.frozen_cycles
        )?;
        for w in &self.cycle_of_channels {
            match w.port {
                Some(p) => write!(f, " router {} port {} vc {}", w.router, p, w.vc)?,
                None => write!(f, " router {} injection {}", w.router, w.vc)?,
            }
            write!(f, " ({}->{}) ->", w.src, w.dst)?;
        }
        write!(f, " back to the first")
    }
}

impl Part {
    /// The input queues the head packet of blocked input `gi` waits for.
    pub(crate) fn waits_for(&self, gi: usize) -> Vec<usize> {
        let (r, e) = (gi / self.fab.shape.n_in, gi % self.fab.shape.n_in);
        let held = self.fab.queues.inq(gi).aop;
        if held != NONE {
            // Wormhole: a packet stalled on the output it holds.
            return vec![self.fab.outputs.out(held as usize).dst as usize];
        }
        if self.fab.cfg.hol {
            let cur = self.fab.queues.hol_holder(r);
            if cur != NONE && cur as usize != e {
                return vec![r * self.fab.shape.n_in + cur as usize];
            }
        }
        let slot = self.fab.queues.head_slot(gi);
        let mut outputs = Vec::new();
        with_policy!(self.fab.shape.kind, P => P::candidates(&self.fab, r, e, slot, &mut |o| outputs.push(o)));
        outputs
            .into_iter()
            .map(|o| self.fab.outputs.out(r * self.fab.shape.n_tr + o).dst)
            .filter(|&d| d != NONE)
            .map(|d| d as usize)
            .collect()
    }

    /// Whether input `gi` has a head packet that waits: one that holds no
    /// output, or under wormhole switching one that holds an output it
    /// cannot move on (in a frozen network, any).
    pub(crate) fn blocked(&self, gi: usize) -> bool {
        let aop = self.fab.queues.inq(gi).aop;
        self.fab.queues.len(gi) > 0
            && (aop == NONE || (self.fab.shape.admit < self.fab.shape.plen && aop != CONSUME))
    }

    /// Input `gi` as a reported channel.
    pub(crate) fn channel(&self, gi: usize) -> WaitingChannel {
        let (r, e) = (gi / self.fab.shape.n_in, gi % self.fab.shape.n_in);
        let p = self.fab.packets[self.fab.queues.head(gi) as usize];
        let (port, vc) = if e < self.fab.shape.n_tr {
            (Some(e / self.fab.shape.nchan), e % self.fab.shape.nchan)
        } else {
            (None, e - self.fab.shape.n_tr)
        };
        WaitingChannel {
            router: r as u32,
            port,
            vc,
            src: p.src,
            dst: p.dst,
        }
    }
}

/// The deadlock watch of a network: the cycle since which nothing has
/// moved, how long that may last, and the deadlock once declared.
pub(crate) struct Watch {
    frozen_since: u64,
    /// Cycles a network may stay frozen without deadlock: a packet time,
    /// the SpiNNaker discard timeout, a file's slowest link, and two to
    /// spare.
    limit: u64,
    found: Option<NetworkDeadlock>,
}

impl Watch {
    /// The watch of a network built from `spec`.
    pub(crate) fn new(spec: &NetworkSpec) -> Watch {
        let hold = if spec.hol { spec.hol_timeout } else { 0 };
        let slowest = match &spec.family {
            crate::spec::FamilyParams::File { graph, .. } => graph.max_latency(),
            _ => 1,
        };
        Watch {
            frozen_since: 0,
            limit: u64::from(spec.plength) + hold + u64::from(slowest) + 2,
            found: None,
        }
    }

    /// After cycle `now`, with `in_network` packets in the network and
    /// `moving` telling whether a link carried a phit or something was
    /// consumed: declares a deadlock when packets have been frozen for
    /// longer than the limit, with the cycle of waiting channels that
    /// `cycle_of` finds.
    pub(crate) fn observe(
        &mut self,
        now: u64,
        in_network: u64,
        moving: bool,
        cycle_of: impl FnOnce() -> Vec<WaitingChannel>,
    ) {
        if in_network == 0 || moving {
            self.frozen_since = now + 1;
            return;
        }
        if self.found.is_none() && now + 1 - self.frozen_since > self.limit {
            self.found = Some(NetworkDeadlock {
                cycle: now,
                frozen_cycles: now + 1 - self.frozen_since,
                packets_in_network: in_network,
                cycle_of_channels: cycle_of(),
            });
        }
    }

    /// The deadlock declared, if any.
    pub(crate) fn found(&self) -> Option<&NetworkDeadlock> {
        self.found.as_ref()
    }
}

/// One cycle of the wait-for graph among blocked inputs (depth-first
/// search), as channels. `parts` hold the network's `inputs` inputs;
/// `part_of` gives the part owning an input, whose state answers for it.
pub(crate) fn wait_cycle(
    parts: &[Part],
    inputs: usize,
    part_of: impl Fn(usize) -> usize,
) -> Vec<WaitingChannel> {
    let at = |g: usize| &parts[part_of(g)];
    // 0: unseen, 1: on the path, 2: done.
    let mut state = vec![0u8; inputs];
    for start in 0..inputs {
        if state[start] != 0 || !at(start).blocked(start) {
            continue;
        }
        let mut path: Vec<(usize, Vec<usize>)> = Vec::new();
        state[start] = 1;
        let next = at(start).waits_for(start);
        path.push((start, next));
        while let Some((_, pending)) = path.last_mut() {
            match pending.pop() {
                Some(v) if state[v] == 1 => {
                    let from = path.iter().position(|(g, _)| *g == v).unwrap_or(0);
                    let cycle: Vec<usize> = path[from..].iter().map(|(g, _)| *g).collect();
                    return cycle.into_iter().map(|g| at(g).channel(g)).collect();
                }
                Some(v) if state[v] == 0 && at(v).blocked(v) => {
                    state[v] = 1;
                    let next = at(v).waits_for(v);
                    path.push((v, next));
                }
                Some(_) => {}
                None => {
                    let (g, _) = path.pop().expect("non-empty path");
                    state[g] = 2;
                }
            }
        }
    }
    Vec::new()
}
