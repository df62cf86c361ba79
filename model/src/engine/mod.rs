//! The network engine: a plain, synchronous state machine with FSIN's
//! cycle semantics (INSEE paper, section 2.2; behaviour traced in
//! `docs/model.md`), one [`Part`] per share of the routers ([`Split`]),
//! each the single owner of its routers' state.
//!
//! Interface ([`Network`](crate::network::Network)): [`Network::inject`](crate::network::Network::inject) hands a generated packet
//! to its source node, [`Network::step`](crate::network::Network::step) simulates one cycle,
//! [`Network::drain_delivered`](crate::network::Network::drain_delivered) returns the packets whose last phit
//! reached their destination.
//!
//! One cycle has two phases. In phase A every router with work moves
//! phits from its injection buffers into its injection ports, lets each
//! input queue whose head packet holds no output post at most one request
//! (the request mode of [`crate::router::request`]), and arbitrates every
//! free output VC ([`crate::router::arbitration`]). In phase B every
//! physical link carries at most one phit (one packet at a time, VCs served
//! round robin between packets) and every consuming input delivers one
//! phit. A packet generated in cycle `t` can cross its first link in cycle
//! `t`; a header that crosses a link in cycle `c` can be routed in `c+1`.
//! An uncontended hop therefore costs one cycle: the header of a packet
//! that travels `h` hops is consumed in cycle `t + h` and its last phit in
//! cycle `t + h + L - 1`. Latency is the difference of those stamps,
//! `h + L - 1` at zero load, which is what FSIN reports (the paper's
//! "distance + packet length", INSEE paper section 2.5, counts both the first
//! and the last cycle).
//!
//! Virtual cut-through makes every transfer contiguous: once a link starts
//! a packet it sends one phit per cycle until the tail, and the phits are
//! always there (they arrive one per cycle, one cycle ahead). The engine
//! therefore keeps phit *counts* per queue and packet *identities* per
//! queue, instead of phit objects, and a link is only visited in the two
//! cycles its header and its tail cross: in between, the phits it has sent
//! are a function of the clock. State is struct-of-arrays indexed by
//! router, input port, output VC port and physical link (fields read
//! together grouped in small structs); only routers with requests, links
//! with a header or tail crossing and consumers with work are visited, and
//! a blocked oblivious request sleeps until the first cycle it could
//! succeed, so idle and blocked parts of the network cost nothing. Nothing
//! is allocated per cycle once the packet pool and the event wheels have
//! grown to the network's capacity.

mod injection;
mod link_state;
mod links;
mod outputs;
mod queues;
mod sources;

use rand_pcg::Pcg64Mcg;

use link_state::{Link, Links};
use sources::Sources;

use crate::fabric::{
    ring_slots, ActiveSet, Congestion, Fabric, InQueue, OutVc, Outputs, Packet, Queues, Shape,
    Slot, Split, VcInfo, CONSUME, NONE, NOT_STARTED,
};

use crate::router::{arbitration, with_policy, RequestPolicy, Router, RouterState};
use crate::spec::{Arbitration, NetworkSpec};
use crate::stats::Counters;
use crate::topology::Topology;
use crate::ModelError;

/// A packet handed to the engine by a traffic source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewPacket {
    /// Source node.
    pub src: u32,
    /// Destination node (must differ from `src`).
    pub dst: u32,
    /// Caller's tag, returned on delivery (e.g. a frame or message id).
    pub tag: u64,
}

/// A packet whose last phit has been consumed at its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// The node that injected it.
    pub src: u32,
    /// The node that consumed it.
    pub dst: u32,
    /// The caller's tag, as given to
    /// [`Network::inject`](crate::network::Network::inject).
    pub tag: u64,
    /// Cycle the packet was handed to [`Network::inject`](crate::network::Network::inject) (with
    /// `compat=insee`, the cycle it entered its injection buffer).
    pub t_gen: u64,
    /// Cycle its header left the injection queue into the network.
    pub t_inj: u64,
    /// Cycle its last phit was consumed.
    pub t_done: u64,
    /// Router-to-router hops travelled.
    pub hops: u32,
}

/// Errors of [`Network::inject`](crate::network::Network::inject).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InjectError {
    /// A node id beyond the network.
    #[error("node {node} does not exist (the network has {nodes} nodes)")]
    NoSuchNode {
        /// The node asked for.
        node: u32,
        /// Nodes of the network.
        nodes: usize,
    },
    /// A packet addressed to its own source.
    #[error("packet from node {0} to itself")]
    SelfAddressed(u32),
}

/// What one part of the network sends another at the end of a cycle: the
/// effects of its routers' phases on the state of routers it does not own
/// (see [`Part`]). Each commutes with the others and with the owner's own
/// changes of that cycle, so applying them after every part has run its
/// cycle gives the state a single part would have reached.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mail {
    /// A header crossed into queue `gi`: the packet's slot and record.
    Push { gi: u32, slot: Slot, packet: Packet },
    /// `delta` phits for the settled count of queue `gi` (the sender, its
    /// feeder's owner, has updated its copy).
    AddBase { gi: u32, delta: i32 },
    /// `delta` phits for the copy of the settled count its queue keeps in
    /// output VC `go` (the queue's owner has updated the count).
    AddDownBase { go: u32, delta: i32 },
    /// The feeder of queue `gi` started (or ended) a transfer at `start`.
    InStart { gi: u32, start: u64 },
    /// The queue output VC `go` feeds drains from `from`.
    DownDrain { go: u32, from: u64 },
    /// Packet id `id`, which the receiver issued, is free again.
    Free { id: u32 },
}

/// A part of the simulated network (FSIN router models on any
/// [`Topology`]): a share of the compute nodes and of each level of
/// switches ([`Split`]), their queues, output VCs and links, stepped one cycle at
/// a time by [`crate::network::Network`], on a thread of its own when the
/// network has several parts (`threads`).
///
/// Its arrays are indexed by global router, input, output VC and link ids,
/// as a single part's are; a part reads and writes only its own routers'
/// entries, and the rest stay as built (the static `feeder` and `dst`
/// links included, which every part reads). What its routers do to a
/// neighbour's state in another part goes out as [`Mail`] (phase B: a
/// header entering the neighbour's queue, the phit counts and transfer
/// starts of a queue and of the copies its feeder keeps); nothing of
/// another part is read during a cycle. Requests read only their own
/// router's state and the copies in its output VCs, which is why this
/// split changes nothing. Packets live in the part holding them: the
/// record travels with the packet's header, ids are issued by the part
/// of the packet's source (`id % parts`) and go back to it when freed.
pub(crate) struct Part {
    /// What its routers' requests read: shape, queues, output VCs,
    /// congestion, packets and the clock.
    pub(crate) fab: Fabric,
    /// Whether this part is the whole network.
    whole: bool,
    /// What this cycle's phases did to other parts' routers, by
    /// receiving part.
    pub(crate) mail: Vec<Vec<Mail>>,
    /// The routers' own state: random streams and request memory.
    pub(crate) router: RouterState,
    /// Physical links.
    pub(crate) links: Links,
    /// Sources and injection buffers of the compute nodes.
    pub(crate) sources: Sources,
    /// Ids this part has issued (`k * parts + index`, `k < issued`), and
    /// those of them free again.
    issued: u32,
    free: Vec<u32>,
    /// Packets that entered the network here minus those that left it
    /// here (the network's count is the sum over its parts).
    pub(crate) in_network: i64,
    /// Whether a phit moved this cycle where the transfers in progress at
    /// its end do not tell: under wormhole switching (stalls), and for
    /// transfers and deliveries that start and end within the cycle
    /// (one-phit packets).
    pub(crate) moved: bool,
    /// Counters of this cycle (the network adds them to its own).
    pub(crate) counters: Counters,
    pub(crate) delivered: Vec<Delivered>,
    pub(crate) record_deliveries: bool,
}

impl Part {
    /// Bytes the engine for `cfg` will hold, estimated from the
    /// topology's shape before anything is built: the input-queue slots
    /// (routers x input queues x (`tql` + `iql` + 2)) dominate, plus the
    /// per-queue, per-link and per-node state.
    pub(crate) fn memory_estimate(cfg: &NetworkSpec) -> u64 {
        let (nodes, routers, radix) = Topology::shape(cfg);
        let size = |bytes: usize| bytes as u64;
        let routers = routers as u64;
        let n_tr = (radix * cfg.nchan as usize) as u64;
        let n_in = n_tr + u64::from(cfg.ninj);
        let ring = |transit| ring_slots(cfg.tql, cfg.iql, transit) as u64 + 1;
        let slots = routers
            * (n_tr * ring(true) + u64::from(cfg.ninj) * ring(false))
            * size(std::mem::size_of::<Slot>());
        let queues = routers * n_in * (size(std::mem::size_of::<InQueue>()) + 24);
        let outs = routers * n_tr * (size(std::mem::size_of::<OutVc>()) + 8);
        let links = routers * radix as u64 * (size(std::mem::size_of::<Link>()) + 16);
        slots + queues + outs + links + nodes as u64 * 256
    }

    /// Builds part `index` of `split` of an empty network for `cfg` on
    /// `topo`.
    ///
    /// # Errors
    /// [`ModelError::TooManyQueues`]: a router with more than 127 input
    /// queues (ports x nchan + ninj); the configuration layer refuses it.
    pub(crate) fn new(
        cfg: &NetworkSpec,
        topo: std::sync::Arc<Topology>,
        index: usize,
        split: std::sync::Arc<Split>,
    ) -> Result<Part, ModelError> {
        let nodes = topo.nodes();
        let routers = topo.routers();
        let radix = topo.ports();
        let nchan = cfg.nchan as usize;
        let ninj = cfg.ninj as usize;
        let n_tr = radix * nchan;
        let n_in = n_tr + ninj;
        if n_in >= 128 {
            return Err(ModelError::TooManyQueues(n_in));
        }
        let plen = cfg.plength;
        let Router {
            kind,
            ndim,
            nways,
            sleep_blocked,
        } = Router::new(&topo, cfg);
        let mut queues = Queues::new(
            routers,
            n_in,
            n_tr,
            cfg.tql,
            cfg.iql,
            plen,
            cfg.hol,
            cfg.amode == Arbitration::Fifo,
            sleep_blocked,
        );
        let mut outputs = Outputs::new(routers, n_tr, nodes);
        for r in 0..routers {
            for o in 0..n_tr {
                if let Some((nb, q)) = topo.neighbour(r as u32, o / nchan) {
                    let dst = nb as usize * n_in + q * nchan + o % nchan;
                    outputs.out_mut(r * n_tr + o).dst = dst as u32;
                    queues.inq_mut(dst).feeder = (r * n_tr + o) as u32;
                }
            }
        }
        let parts = split.parts();
        Ok(Part {
            fab: Fabric {
                part: index as u32,
                split,
                now: 0,
                shape: Shape {
                    kind,
                    ndim,
                    nways,
                    radix,
                    nchan,
                    ninj,
                    n_tr,
                    n_in,
                    vc_info: (0..n_tr)
                        .map(|o| {
                            let (dim, positive) = topo.direction(o / nchan);
                            VcInfo {
                                dim: dim as u8,
                                positive,
                                vc: (o % nchan) as u8,
                            }
                        })
                        .collect(),
                    cap: cfg.tql * plen,
                    qi_cap: cfg.iql * plen,
                    plen,
                    wormhole: cfg.wormhole,
                    admit: if cfg.wormhole { 1 } else { plen },
                },
                queues,
                outputs,
                congestion: Congestion::new(routers, cfg.timeout_upper_limit),
                packets: Vec::with_capacity(nodes * 4),
                topo,
                cfg: cfg.clone(),
            },
            whole: parts == 1,
            mail: vec![Vec::new(); parts],
            router: RouterState::new(routers, n_in, cfg.rseed),
            links: Links::new(routers, radix, plen, cfg.wormhole),
            sources: Sources::new(nodes, ninj),
            issued: 0,
            free: Vec::new(),
            in_network: 0,
            moved: false,
            counters: Counters::default(),
            delivered: Vec::new(),
            record_deliveries: false,
        })
    }

    /// A draw from `0..n` of router `r`'s random stream.
    #[inline]
    pub(crate) fn draw(&mut self, r: usize, n: usize) -> usize {
        rand::Rng::gen_range(&mut self.router.rngs[r], 0..n)
    }

    /// Whether every packet id this part issued is free again: no packet of
    /// its sources is anywhere in the network.
    pub(crate) fn all_free(&self) -> bool {
        self.issued as usize == self.free.len()
    }

    /// Advances the clock of an idle network by `cycles` (see
    /// `Network::skip_idle`).
    pub(crate) fn skip_idle(&mut self, cycles: u64) {
        self.fab.now += cycles;
        if self.fab.congestion.timeouts {
            self.fab
                .congestion
                .skip_idle(cycles, self.fab.cfg.timeout_upper_limit);
        }
    }

    /// The next cycle begins.
    pub(crate) fn tick(&mut self) {
        self.fab.now += 1;
    }

    /// Packets that have crossed each of this part's links (the others'
    /// entries are 0).
    pub(crate) fn link_packets(&self) -> &[u64] {
        self.links.packets()
    }

    /// Dimension and direction of output `port` (see `Network::link_direction`).
    pub(crate) fn link_direction(&self, port: usize) -> (usize, bool) {
        let v = self.fab.shape.vc_info[port * self.fab.shape.nchan];
        (usize::from(v.dim), v.positive)
    }

    /// Input queues per router.
    pub(crate) fn inputs_per_router(&self) -> usize {
        self.fab.shape.n_in
    }

    /// Whole packets in input queue `input` of this part's `node`.
    pub(crate) fn queue_packets(&self, node: u32, input: usize) -> u32 {
        self.occ(node as usize * self.fab.shape.n_in + input) / self.fab.shape.plen
    }

    /// Stores the record of packet `id`, which is now in this part.
    #[inline]
    fn keep(&mut self, id: u32, pkt: Packet) {
        let i = id as usize;
        if i >= self.fab.packets.len() {
            self.fab.packets.resize(i + 1, Packet::default());
        }
        self.fab.packets[i] = pkt;
    }

    /// Packet `id` has left the network: its id goes back to the part
    /// that issued it.
    #[inline]
    fn release(&mut self, id: u32) {
        let parts = self.fab.split.parts() as u32;
        let owner = id % parts;
        if owner == self.fab.part {
            self.free.push(id);
        } else {
            self.mail[owner as usize].push(Mail::Free { id });
        }
    }

    /// What the request of input `gi` of router `r` reads and changes:
    /// the fabric, the router's random stream and the input's memory
    /// between cycles.
    #[inline]
    fn requester(&mut self, r: usize, gi: usize) -> (&Fabric, &mut Pcg64Mcg, &mut u8) {
        (
            &self.fab,
            &mut self.router.rngs[r],
            &mut self.router.in_bet[gi],
        )
    }

    /// Whether router `r` is this part's.
    #[inline]
    fn owns(&self, r: usize) -> bool {
        self.fab.owns(r)
    }

    /// Phits in input queue `gi` now ([`Fabric::occ`]).
    #[inline]
    pub(crate) fn occ(&self, gi: usize) -> u32 {
        self.fab.occ(gi)
    }

    /// [`Fabric::copied_occ`] (debug builds check the copies with it).
    #[cfg(debug_assertions)]
    pub(crate) fn copied_occ(&self, go: usize) -> u32 {
        self.fab.copied_occ(go)
    }

    /// Phits output VC `go` has sent of its transfer ([`Fabric::sent`]).
    #[inline]
    pub(crate) fn sent(&self, go: usize) -> u32 {
        self.fab.sent(go)
    }

    /// Whether input queue `gi` is this part's (at no cost when the
    /// network is one part).
    #[inline]
    fn owns_input(&self, gi: usize) -> bool {
        self.whole || self.owns(gi / self.fab.shape.n_in)
    }

    /// Whether output VC `go` is this part's.
    #[inline]
    fn owns_output(&self, go: usize) -> bool {
        self.whole || self.owns(go / self.fab.shape.n_tr)
    }

    /// Sends `mail` to the part owning router `r` (out of line: the
    /// callers are on every hop's path, and most of their effects stay in
    /// the part).
    #[inline(never)]
    fn post(&mut self, r: usize, mail: Mail) {
        let part = self.fab.split.part_of(r);
        self.mail[part].push(mail);
    }

    /// Applies the mail that every part (`outboxes`, by sending part, then
    /// by receiving part) sent this one, part `index`, in the cycle that
    /// has just run, in the order of the senders.
    pub(crate) fn receive_all(&mut self, outboxes: &[Vec<Vec<Mail>>]) {
        for outbox in outboxes {
            for &m in &outbox[self.fab.part as usize] {
                self.receive(m);
            }
        }
    }

    /// Applies what another part's routers did to this part's state in
    /// the cycle that has just run (see [`Mail`]).
    fn receive(&mut self, mail: Mail) {
        match mail {
            Mail::Push { gi, slot, packet } => {
                self.keep(slot.pkt, packet);
                self.fab.queues.push(gi as usize, slot);
            }
            Mail::AddBase { gi, delta } => {
                let q = self.fab.queues.inq_mut(gi as usize);
                q.base = q.base.wrapping_add_signed(delta);
            }
            Mail::AddDownBase { go, delta } => {
                let o = self.fab.outputs.out_mut(go as usize);
                o.down_base = o.down_base.wrapping_add_signed(delta);
            }
            Mail::InStart { gi, start } => self.fab.queues.inq_mut(gi as usize).in_start = start,
            Mail::DownDrain { go, from } => self.fab.outputs.out_mut(go as usize).down_drain = from,
            Mail::Free { id } => self.free.push(id),
        }
    }

    /// Simulates this part's share of one network cycle: phases A and B
    /// (the network then delivers the mail, adds up the counters and
    /// watches for deadlock).
    pub(crate) fn cycle(&mut self) {
        self.accept_pending();
        self.data_injection();
        self.route_and_arbitrate();
        if self.fab.shape.wormhole {
            self.advance_wormhole();
        } else {
            self.advance_links();
            self.consume();
        }
        if self.fab.congestion.timeouts {
            self.fab
                .congestion
                .time_stays(self.fab.cfg.timeout_upper_limit);
        }
        if self.fab.shape.wormhole {
            self.settle_stalls();
        }
    }

    // ----- Occupancy and FIFO of packets per input queue ------------------

    /// This part's output VCs that feed a queue of another part: (output
    /// VC, the queue it feeds).
    #[cfg(debug_assertions)]
    pub(crate) fn border_outputs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let n_tr = self.fab.shape.n_tr;
        self.fab
            .split
            .routers_of(self.fab.part as usize)
            .flat_map(move |r| r * n_tr..(r + 1) * n_tr)
            .filter_map(|go| {
                let dst = self.fab.outputs.out(go).dst;
                (dst != NONE && !self.owns(dst as usize / self.fab.shape.n_in))
                    .then_some((go, dst as usize))
            })
    }

    // ----- Sources and injection (INSEE paper, section 2.3) -----------------

    // ----- Phase A: requests and arbitration -----------------------------

    /// Visits the members of the set `select` picks, in index order;
    /// `visit` does their work and says whether they stay in the set.
    #[inline]
    fn sweep(
        &mut self,
        select: impl Fn(&mut Part) -> &mut ActiveSet,
        mut visit: impl FnMut(&mut Part, usize) -> bool,
    ) {
        for w in 0..select(self).words.len() {
            let mut bits = select(self).words[w];
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if !visit(self, i) {
                    select(self).words[w] &= !(1 << (i % 64));
                }
            }
        }
    }

    fn route_and_arbitrate(&mut self) {
        self.fab.queues.wake(self.fab.now);
        with_policy!(self.fab.shape.kind, P => self.sweep(
            |n| n.fab.queues.requesting_routers(),
            |n, r| {
                n.router_cycle::<P>(r);
                n.fab.queues.waiting(r) != 0
            },
        ));
    }

    /// Requests and arbitration of one router (INSEE paper, sections
    /// 2.2.1-2.2.2 and 2.2.5).
    fn router_cycle<P: RequestPolicy>(&mut self, r: usize) {
        // Bit `o` for each output VC requested (`n_tr`: consumption; a
        // router has fewer than 128 inputs, so as many outputs at most).
        let mut requested_outs = 0u128;
        let mut mask = self.fab.queues.waiting(r);
        if self.fab.cfg.hol {
            mask = self.hol_engine(r, mask);
        }
        while mask != 0 {
            let e = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let gi = r * self.fab.shape.n_in + e;
            if e >= self.fab.shape.n_tr && self.occ(gi) == 0 {
                continue; // header still in the injection buffer
            }
            if self.fab.queues.asleep(gi, self.fab.now) {
                self.fab.queues.sleep(r, e, self.fab.now);
                continue;
            }
            let slot = self.fab.queues.head_slot(gi);
            let ready = if self.fab.topo.slow_links() {
                self.fab.packets[slot.pkt as usize].ready
            } else {
                0
            };
            if ready > self.fab.now {
                // Its header is still on a slow link (a file's latency).
                if self.fab.queues.sleep_blocked() {
                    self.fab.queues.sleep_until(r, e, ready, self.fab.now);
                }
                continue;
            }
            self.fab.queues.note_request(gi, self.fab.now);
            let (requested, bound) = {
                let (fab, rng, bet) = self.requester(r, gi);
                P::request(fab, rng, bet, r, e, slot)
            };
            if requested.is_none() && e >= self.fab.shape.n_tr && P::extracts(&self.fab.cfg) {
                self.extract(gi);
            }
            let blocked = match requested {
                Some(o) => {
                    requested_outs |= 1u128 << o;
                    self.fab.queues.request(o, e);
                    o != self.fab.shape.n_tr && self.fab.outputs.held(r, self.fab.shape.n_tr, o)
                }
                None => true,
            };
            if blocked && self.fab.queues.sleep_blocked() {
                let wait = bound.unwrap_or_else(|| P::retry_in(&self.fab, r, e, slot, requested));
                debug_assert!(
                    bound.is_none_or(|w| {
                        let sleep = |w: u32| if w > 1 { w } else { 1 };
                        sleep(w) == sleep(P::retry_in(&self.fab, r, e, slot, requested))
                    }),
                    "request bound of input {e} of router {r}"
                );
                if wait > 1 {
                    let now = self.fab.now;
                    let wake = now.saturating_add(u64::from(wait));
                    self.fab.queues.sleep_until(r, e, wake, now);
                }
            }
        }
        while requested_outs != 0 {
            let o = requested_outs.trailing_zeros() as usize;
            requested_outs &= requested_outs - 1;
            let requesters = self.fab.queues.take_requests(o);
            if o == self.fab.shape.n_tr {
                self.grant_consumption(r, requesters);
            } else if !self.fab.outputs.held(r, self.fab.shape.n_tr, o) {
                let e =
                    arbitration::arbitrate(&self.fab, &mut self.router.rngs[r], r, o, requesters);
                self.reserve(r, e, o);
            }
        }
        if self.fab.cfg.hol {
            let cur = self.fab.queues.hol_holder(r);
            if cur != NONE && self.fab.queues.waiting(r) & (1u128 << cur) == 0 {
                // Forwarded: the engine takes the next input next cycle.
                self.fab.queues.hol_free(r);
            }
        }
    }

    /// The SpiNNaker routing engine of router `r` (INSEE paper, section
    /// 2.2.4): of the inputs `waiting` with a head packet, only the one
    /// holding the engine may request; a free engine takes the next one
    /// after the input it served last (round robin). A holder that has
    /// waited `hol_timeout` cycles is discarded once all its phits are in
    /// (the engine is free the next cycle). Returns the requesting input's
    /// bit, or 0.
    fn hol_engine(&mut self, r: usize, waiting: u128) -> u128 {
        let cur = self.fab.queues.hol_holder(r);
        let (since, last) = self.fab.queues.hol_taken(r);
        if cur != NONE {
            let gi = r * self.fab.shape.n_in + cur as usize;
            let timeout = self.fab.cfg.hol_timeout;
            if timeout > 0 && self.fab.now - since >= timeout && self.fab.queues.head_complete(gi) {
                self.fab.queues.hol_free(r);
                if cur as usize >= self.fab.shape.n_tr {
                    self.extract(gi);
                } else {
                    self.discard_transit(gi);
                }
                return 0;
            }
            return waiting & (1u128 << cur);
        }
        let start = match last {
            NONE => 0,
            last => (last as usize + 1) % self.fab.shape.n_in,
        };
        let ready = (0..self.fab.shape.n_in)
            .map(|k| (start + k) % self.fab.shape.n_in)
            .find(|&e| {
                waiting & (1u128 << e) != 0
                    && (e < self.fab.shape.n_tr || self.occ(r * self.fab.shape.n_in + e) > 0)
            });
        match ready {
            Some(e) => {
                self.fab.queues.hol_take(r, e, self.fab.now);
                1u128 << e
            }
            None => 0,
        }
    }

    // ----- Phase B: links and consumption --------------------------------

    // ----- Wormhole switching (SimuRed paper) --------------------------
}

#[cfg(test)]
mod tests {
    use super::Split;
    use crate::spec::{FamilyParams, NetworkSpec, TopoKind};
    use crate::topology::Topology;

    /// A tree of `k` ports down, `up` up and `levels` levels over `nodes`.
    fn tree(topo: TopoKind, k: u32, up: u32, levels: u32, nodes: u32) -> Topology {
        Topology::build(&NetworkSpec {
            topo,
            dims: vec![nodes],
            family: FamilyParams::Tree {
                down: k,
                up,
                levels,
            },
            ..NetworkSpec::default()
        })
        .expect("tree")
    }

    /// In a tree in parts, every part gets its share of each level, and a
    /// packet climbing from a node reaches switches of the node's part up
    /// to the level whose blocks are no smaller than a part's nodes: each
    /// level numbers its switches by the block they cover.
    #[test]
    fn a_tree_splits_level_by_level_along_its_blocks() {
        for (topo, k, up, levels, nodes) in [
            (TopoKind::FatTree, 4, 4, 3, 64),
            (TopoKind::ThinTree, 4, 2, 3, 64),
            (TopoKind::SlimTree, 4, 2, 3, 32),
        ] {
            let t = tree(topo, k, up, levels, nodes);
            for parts in [2, 4] {
                let split = Split::new(&t, parts);
                for class in t.router_classes() {
                    let mut count = vec![0; parts];
                    class.clone().for_each(|r| count[split.part_of(r)] += 1);
                    let fair =
                        |&c: &usize| c == class.len() / parts || c == class.len().div_ceil(parts);
                    assert!(
                        count.iter().all(fair),
                        "{topo:?} in {parts} parts: {class:?} as {count:?}"
                    );
                }
                // Every node's level-0 switch is in the node's part, and
                // in the fat tree of 64 nodes in 4 parts so are the
                // level-1 switches above it (their blocks are 16 nodes,
                // a part's).
                for n in 0..nodes as usize {
                    let (leaf, _) = t.neighbour(n as u32, 0).expect("leaf switch");
                    assert_eq!(
                        split.part_of(leaf as usize),
                        split.part_of(n),
                        "{topo:?} in {parts} parts: node {n} and its switch {leaf}"
                    );
                    if topo == TopoKind::FatTree && parts == 4 {
                        for j in 0..up as usize {
                            let (s, _) = t.neighbour(leaf, j).expect("level-1 switch");
                            assert_eq!(split.part_of(s as usize), n / 16, "node {n} up {j}");
                        }
                    }
                }
            }
        }
    }
}
