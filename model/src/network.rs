//! The simulated network: its parts ([`crate::engine::Part`], one per
//! share of the routers) stepped together, one cycle at a time, on one thread
//! or on several (`threads`).
//!
//! A cycle runs every part's phases A and B (each on a thread of its own
//! when there are several); then the mail the parts sent each other is
//! delivered, in the order of the parts that sent it, and the network adds
//! up their counters and deliveries and watches for deadlock. Random
//! numbers belong to routers, the parts touch only their own routers'
//! state during the phases, and what they send each other commutes with
//! what the receiver did in the same cycle, so the report is the same for
//! every number of parts (docs/model.md, "One network on several
//! threads").

use std::sync::Arc;

use crate::crew::Crew;
use crate::deadlock::{wait_cycle, NetworkDeadlock, Watch};
use crate::engine::{Delivered, InjectError, Mail, NewPacket, Part};
use crate::fabric::Split;
use crate::spec::NetworkSpec;
use crate::stats::Counters;
use crate::topology::Topology;
use crate::ModelError;

/// The simulated network (FSIN router models on any [`Topology`]).
pub struct Network {
    /// The parts, each owning a share of the compute nodes and of each
    /// level of switches.
    parts: Vec<Part>,
    split: Arc<Split>,
    /// The mail of the cycle being delivered, by sending part then by
    /// receiving part (swapped with the parts' own, empty, each cycle, so
    /// that nothing is allocated once they have grown).
    outboxes: Vec<Vec<Vec<Mail>>>,
    /// The threads the parts but the first run on (the first runs on the
    /// calling thread), when there are several ([`crate::crew`]).
    crew: Option<Crew<Part>>,
    topo: Arc<Topology>,
    cfg: NetworkSpec,
    now: u64,
    /// Counters of the current measurement window.
    pub counters: Counters,
    delivered: Vec<Delivered>,
    /// Packets in the network (header left the source, tail not consumed).
    in_network: u64,
    /// Deadlock detection ([`crate::deadlock`]).
    watch: Watch,
}

impl Network {
    /// Bytes the engine for `cfg` will hold, estimated from the
    /// topology's shape before anything is built: the input-queue slots
    /// (routers x input queues x (`tql` + `iql` + 2)) dominate, plus the
    /// per-queue, per-link and per-node state; once per part (each part
    /// holds arrays over the whole network and fills its own range).
    pub fn memory_estimate(cfg: &NetworkSpec) -> u64 {
        let (_, routers, _) = Topology::shape(cfg);
        Part::memory_estimate(cfg) * u64::from(Self::parts_for(cfg, routers))
    }

    /// How many parts a network of `routers` routers has for `cfg`: its
    /// `threads`, at most one per router, but one under wormhole switching
    /// (whose requests and transfers read the next router's queue), with
    /// the timeouts of congestion control (which time packets as they
    /// cross between routers) and with the SpiNNaker router's discards
    /// (a discard in phase A frees room that the upstream router's request
    /// may take in the same phase).
    fn parts_for(cfg: &NetworkSpec, routers: usize) -> u32 {
        if cfg.wormhole || cfg.timeout_upper_limit > 0 || (cfg.hol && cfg.hol_timeout > 0) {
            1
        } else {
            cfg.threads.clamp(1, routers.min(u32::MAX as usize) as u32)
        }
    }

    /// Builds an empty network for `cfg`, in `threads` parts (fewer where
    /// the model needs them: see [`Network::parts`]).
    ///
    /// # Errors
    /// [`ModelError`]: faults that cannot be failed or routed around, a
    /// router with more than 127 input queues (ports x nchan + ninj), or
    /// threads that cannot be started; the configuration layer refuses the
    /// first two.
    pub fn new(cfg: &NetworkSpec) -> Result<Network, ModelError> {
        let topo = Arc::new(Topology::build(cfg)?);
        let routers = topo.routers();
        let n = Self::parts_for(cfg, routers) as usize;
        let split = Arc::new(Split::new(&topo, n));
        let parts = (0..n)
            .map(|p| Part::new(cfg, topo.clone(), p, split.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let crew = if n > 1 {
            Some(Crew::new(n).map_err(|e| ModelError::Threads(e.to_string()))?)
        } else {
            None
        };
        Ok(Network {
            outboxes: vec![vec![Vec::new(); n]; n],
            parts,
            split,
            crew,
            topo,
            cfg: cfg.clone(),
            now: 0,
            counters: Counters::default(),
            delivered: Vec::new(),
            in_network: 0,
            watch: Watch::new(cfg),
        })
    }

    /// The part owning router `r`.
    #[inline]
    fn part_of(&self, r: usize) -> usize {
        self.split.part_of(r)
    }

    /// How many parts (threads) the network runs in: `threads`, at most
    /// one per router, and one under wormhole switching, with the
    /// congestion-control timeouts and with SpiNNaker discards.
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.topo.nodes()
    }

    /// Current cycle (cycles simulated so far).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Packets inside the network (header left the source, tail not yet
    /// consumed).
    pub fn in_flight(&self) -> u64 {
        self.in_network
    }

    /// Whether nothing at all is left to simulate: no packet in any queue,
    /// buffer or source. Stepping an idle network changes nothing but the
    /// clock, so callers may [`Network::skip_idle`] to their next event.
    pub fn is_idle(&self) -> bool {
        self.parts.iter().all(Part::all_free)
    }

    /// Advances the clock of an idle network by `cycles` without simulating
    /// them (the occupancy statistics stay exact: the network is empty).
    ///
    /// # Panics
    /// If the network is not idle.
    pub fn skip_idle(&mut self, cycles: u64) {
        assert!(self.is_idle(), "skip_idle on a busy network");
        self.now += cycles;
        self.counters.cycles += cycles;
        for p in &mut self.parts {
            p.skip_idle(cycles);
        }
    }

    /// Packets that have crossed each physical link since the start, index
    /// `router * ports + port` (ports of [`Topology::ports`], see
    /// [`Network::link_direction`]).
    pub fn link_packets(&self) -> Vec<u64> {
        let mut all = self.parts[0].link_packets().to_vec();
        for p in &self.parts[1..] {
            for (a, b) in all.iter_mut().zip(p.link_packets()) {
                *a += b;
            }
        }
        all
    }

    /// The network it simulates.
    pub fn spec(&self) -> &NetworkSpec {
        &self.cfg
    }

    /// Dimension and direction (true: positive) of output `port` (trees:
    /// dimension 0 up, 1 down; see [`Topology::direction`]).
    pub fn link_direction(&self, port: usize) -> (usize, bool) {
        self.parts[0].link_direction(port)
    }

    /// Input queues per router (transit VCs, then injection ports).
    pub fn inputs_per_router(&self) -> usize {
        self.parts[0].inputs_per_router()
    }

    /// Whole packets in input queue `input` of `node` now (phits / L).
    pub fn queue_packets(&self, node: u32, input: usize) -> u32 {
        self.parts[self.part_of(node as usize)].queue_packets(node, input)
    }

    /// Packets waiting at `node`'s source for room in an injection buffer.
    pub fn source_backlog(&self, node: u32) -> usize {
        self.parts[self.part_of(node as usize)]
            .sources
            .source_backlog(node)
    }

    /// Whether router `r` is congested (always false without timeouts).
    pub fn is_congested(&self, r: usize) -> bool {
        self.parts[self.part_of(r)].fab.congestion.is_congested(r)
    }

    /// Whether blocked requests sleep until their earliest possible grant
    /// (the default where a lower bound is known) or request again every
    /// cycle: the same deliveries either way, which tests check.
    pub fn set_sleep_blocked(&mut self, on: bool) {
        for p in &mut self.parts {
            p.fab.queues.set_sleep_blocked(on);
        }
    }

    /// Keeps a record of every delivered packet for
    /// [`Network::drain_delivered`] (off by default: synthetic runs only
    /// need the counters).
    pub fn record_deliveries(&mut self, on: bool) {
        for p in &mut self.parts {
            p.record_deliveries = on;
        }
    }

    /// Returns and forgets the packets delivered since the last call, each
    /// cycle's in the order of (destination, source, tag, stamps, hops).
    pub fn drain_delivered(&mut self) -> std::vec::Drain<'_, Delivered> {
        self.delivered.drain(..)
    }

    /// Hands a packet to its source node in the current cycle: it enters an
    /// injection buffer at once if one has room for it (`imode`), otherwise
    /// it waits at the source (or is dropped with `drop_packets=1`).
    ///
    /// # Errors
    /// [`InjectError`] for an unknown node or a self-addressed packet.
    pub fn inject(&mut self, p: NewPacket) -> Result<(), InjectError> {
        let nodes = self.nodes();
        for node in [p.src, p.dst] {
            if node as usize >= nodes {
                return Err(InjectError::NoSuchNode { node, nodes });
            }
        }
        if p.src == p.dst {
            return Err(InjectError::SelfAddressed(p.src));
        }
        self.counters.generated += 1;
        let part = self.part_of(p.src as usize);
        self.parts[part].inject(p);
        Ok(())
    }

    /// Simulates one network cycle.
    pub fn step(&mut self) {
        each_part(self.crew.as_ref(), &mut self.parts, &Part::cycle);
        if self.parts.len() > 1 {
            self.deliver_mail();
        }
        let first = self.delivered.len();
        let mut in_network = 0;
        let mut moving = false;
        for p in &mut self.parts {
            self.counters.merge(&p.counters);
            p.counters = Counters::default();
            self.delivered.append(&mut p.delivered);
            in_network += p.in_network;
            moving |= p.moved
                || (!p.fab.shape.wormhole
                    && (p.links.busy() || !p.fab.outputs.consuming().is_empty()));
            p.tick();
        }
        if self.delivered.len() - first > 1 {
            self.delivered[first..]
                .sort_unstable_by_key(|d| (d.dst, d.src, d.tag, d.t_gen, d.t_inj, d.hops));
        }
        self.in_network = u64::try_from(in_network).expect("packets in the network");
        #[cfg(debug_assertions)]
        self.check_borders();
        self.watch_for_deadlock(moving);
        self.counters.occupancy += self.in_network;
        self.counters.cycles += 1;
        self.now += 1;
    }

    /// Hands every part the mail the others sent it this cycle, each part
    /// on its thread, in the order of the parts that sent it.
    fn deliver_mail(&mut self) {
        for (p, outbox) in self.parts.iter_mut().zip(&mut self.outboxes) {
            std::mem::swap(&mut p.mail, outbox);
        }
        let outboxes = &self.outboxes;
        each_part(self.crew.as_ref(), &mut self.parts, &|p: &mut Part| {
            p.receive_all(outboxes)
        });
        for outbox in &mut self.outboxes {
            outbox.iter_mut().for_each(Vec::clear);
        }
    }

    /// Debug builds: the copies that output VCs keep of the queues they
    /// feed in another part agree with those queues once the mail is in.
    #[cfg(debug_assertions)]
    fn check_borders(&self) {
        if self.cfg.wormhole {
            return;
        }
        let n_in = self.inputs_per_router();
        for p in &self.parts {
            for (go, gi) in p.border_outputs() {
                let theirs = self.parts[self.part_of(gi / n_in)].occ(gi);
                assert_eq!(
                    p.copied_occ(go),
                    theirs,
                    "copies of output VC {go} of queue {gi}"
                );
            }
        }
    }

    /// Watches for deadlock after a cycle in which `moving` tells whether
    /// a link carried a phit or something was consumed ([`Watch`]).
    fn watch_for_deadlock(&mut self, moving: bool) {
        let (parts, topo) = (&self.parts, &self.topo);
        let n_in = parts[0].inputs_per_router();
        let split = &self.split;
        self.watch.observe(self.now, self.in_network, moving, || {
            wait_cycle(parts, topo.routers() * n_in, |gi| split.part_of(gi / n_in))
        });
    }

    /// The deadlock the detector declared, if any: nothing in the network
    /// can move again (callers stop and report it).
    pub fn deadlock(&self) -> Option<&NetworkDeadlock> {
        self.watch.found()
    }
}

/// Runs `f` on every part: the first on the calling thread, the others on
/// `crew`'s workers (all on the calling thread without one), and returns
/// once all have run.
fn each_part(crew: Option<&Crew<Part>>, parts: &mut [Part], f: &(dyn Fn(&mut Part) + Sync)) {
    match crew {
        Some(crew) => crew.run(parts, f),
        None => parts.iter_mut().for_each(f),
    }
}
