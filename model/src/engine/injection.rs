//! The compute nodes' sources and injection buffers: packets generated and
//! waiting, and the nodes with work in the injection phase.

use super::{NewPacket, Packet, Part, Slot, CONSUME, NONE};
use crate::spec::{Compat, InjectionMode, RoutingOrder};
use crate::topology::Record;

// ----- Phase A: sources and injection -----------------------------------
impl Part {
    /// Hands a packet to its source node, one of this part's, in the
    /// current cycle (see `Network::inject`, which checks the nodes).
    pub(crate) fn inject(&mut self, p: NewPacket) {
        let rr = self
            .fab
            .topo
            .record(p.src, p.dst, &mut self.router.rngs[p.src as usize]);
        let pkt = Packet {
            src: p.src,
            dst: p.dst,
            tag: p.tag,
            t_gen: self.fab.now,
            t_inj: 0,
            rr,
            hops: self.fab.topo.hops(&rr),
            ready: 0,
        };
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let parts = self.fab.split.parts() as u32;
                self.issued += 1;
                let id = (self.issued - 1) * parts + self.fab.part;
                // Each part has 2^32 / parts ids: far more packets than
                // fit in memory at once.
                debug_assert!(id < CONSUME, "packet ids of part {} run out", self.fab.part);
                id
            }
        };
        self.keep(id, pkt);
        let node = p.src as usize;
        self.sources.pending[node].push_back(id);
        if !self.sources.pending_listed[node] {
            self.sources.pending_listed[node] = true;
            self.sources.pending_nodes.push(p.src);
        }
    }

    /// Moves waiting packets into injection buffers with room for them.
    pub(super) fn accept_pending(&mut self) {
        let mut i = 0;
        while i < self.sources.pending_nodes.len() {
            let node = self.sources.pending_nodes[i] as usize;
            let known = self.sources.front_injector[node];
            if known != NONE
                && self.fab.shape.qi_cap
                    - self.sources.qi_occ[node * self.fab.shape.ninj + known as usize]
                    < self.fab.shape.plen
            {
                i += 1;
                continue;
            }
            // No buffer of the node has room for a packet: whichever the
            // front packet would choose, it waits (only a choice's random
            // draw, which could not matter, is skipped, as for sleeping
            // requests). Not under compat=insee, which redraws a record at
            // every try, nor with drop_packets, which drops it.
            if !self.fab.cfg.drop_packets
                && self.fab.cfg.compat != Compat::Insee
                && (0..self.fab.shape.ninj).all(|j| {
                    self.fab.shape.qi_cap - self.sources.qi_occ[node * self.fab.shape.ninj + j]
                        < self.fab.shape.plen
                })
            {
                i += 1;
                continue;
            }
            while let Some(&id) = self.sources.pending[node].front() {
                let j = self.select_injector(node, id);
                let qi = node * self.fab.shape.ninj + j;
                self.sources.front_injector[node] = NONE;
                if self.fab.shape.qi_cap - self.sources.qi_occ[qi] >= self.fab.shape.plen {
                    self.sources.pending[node].pop_front();
                    if self.fab.cfg.compat == Compat::Insee {
                        // INSEE stamps a packet when it enters its
                        // injection buffer (latency and age start there).
                        self.fab.packets[id as usize].t_gen = self.fab.now;
                    }
                    self.sources.qi_occ[qi] += self.fab.shape.plen;
                    let gi = node * self.fab.shape.n_in + self.fab.shape.n_tr + j;
                    let rr = self.fab.packets[id as usize].rr;
                    self.fab.queues.push(gi, Slot { pkt: id, rr });
                    self.counters.injected += 1;
                    self.counters.phits_injected += u64::from(self.fab.shape.plen);
                    self.sources.list_injection(node);
                } else if self.fab.cfg.drop_packets {
                    self.sources.pending[node].pop_front();
                    self.counters.dropped += 1;
                    self.release(id);
                } else {
                    // A blocked pre-routed packet waits for the same buffer
                    // (INSEE draws its queue again at every try).
                    if matches!(
                        self.fab.cfg.imode,
                        InjectionMode::Dor | InjectionMode::LongestPath
                    ) && self.fab.cfg.compat != Compat::Insee
                    {
                        self.sources.front_injector[node] = j as u32;
                    }
                    break;
                }
            }
            if self.sources.pending[node].is_empty() {
                self.sources.pending_listed[node] = false;
                self.sources.pending_nodes.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Injection buffer for a packet of `node` (`imode`). With
    /// `compat=insee` the pre-routed modes read a routing record of their
    /// own, drawn at every try as INSEE's `calc_rr` does (a tie may break
    /// the other way), and `dor` takes the last dimension to correct
    /// (INSEE's `select_input_port_dor_only` has no early exit).
    pub(super) fn select_injector(&mut self, node: usize, id: u32) -> usize {
        let insee = self.fab.cfg.compat == Compat::Insee;
        let rr = if insee && self.fab.cfg.imode != InjectionMode::Shortest {
            let p = self.fab.packets[id as usize];
            self.fab
                .topo
                .record(p.src, p.dst, &mut self.router.rngs[node])
        } else {
            self.fab.packets[id as usize].rr
        };
        let base = node * self.fab.shape.ninj;
        let load = |net: &Part, j: usize| {
            net.sources.qi_occ[base + j]
                + net.occ(node * net.fab.shape.n_in + net.fab.shape.n_tr + j)
        };
        let shortest = |net: &mut Part| {
            let start = match net.fab.shape.ninj {
                1 => 0,
                n => net.draw(node, n),
            };
            (0..net.fab.shape.ninj)
                .map(|k| (start + k) % net.fab.shape.ninj)
                .min_by_key(|&j| load(net, j))
                .unwrap_or(0)
        };
        match self.fab.cfg.imode {
            InjectionMode::Shortest => shortest(self),
            InjectionMode::Dor if insee => self.last_dor_port(&rr),
            InjectionMode::Dor => self.first_hop_port(&rr),
            InjectionMode::DorShortest => {
                let j = if insee {
                    self.last_dor_port(&rr)
                } else {
                    self.first_hop_port(&rr)
                };
                if self.fab.shape.qi_cap - self.sources.qi_occ[base + j] >= self.fab.shape.plen {
                    j
                } else {
                    shortest(self)
                }
            }
            InjectionMode::ShortestProfitable => {
                let cube = self.fab.topo.cube();
                (0..cube.ndim())
                    .filter(|&d| rr[d] != 0)
                    .map(|d| cube.port(d, rr[d] > 0))
                    .min_by_key(|&j| load(self, j))
                    .unwrap_or(0)
            }
            InjectionMode::LongestPath => {
                let cube = self.fab.topo.cube();
                let d = (0..cube.ndim())
                    .max_by_key(|&d| (rr[d].abs(), std::cmp::Reverse(d)))
                    .unwrap_or(0);
                cube.port(d, rr[d] >= 0)
            }
        }
    }

    /// INSEE's DOR pre-routing port: the last dimension with a nonzero
    /// offset (`routing=dim`), or the last with a positive offset and then
    /// the last with a negative one overriding it (`routing=dir`).
    pub(super) fn last_dor_port(&self, rr: &Record) -> usize {
        let cube = self.fab.topo.cube();
        let dims = 0..cube.ndim();
        let last = match self.fab.cfg.routing {
            RoutingOrder::Direction => dims
                .clone()
                .rev()
                .find(|&d| rr[d] < 0)
                .map(|d| (d, false))
                .or_else(|| dims.rev().find(|&d| rr[d] > 0).map(|d| (d, true))),
            _ => dims.rev().find(|&d| rr[d] != 0).map(|d| (d, rr[d] > 0)),
        };
        let (d, positive) = last.unwrap_or((0, true));
        cube.port(d, positive)
    }

    /// Link port of a packet's first escape hop (DOR pre-routing).
    pub(super) fn first_hop_port(&self, rr: &Record) -> usize {
        let cube = self.fab.topo.cube();
        let (d, positive) =
            crate::router::routing::escape_direction(rr, cube.ndim(), self.fab.cfg.routing, 0)
                .unwrap_or((0, true));
        cube.port(d, positive)
    }

    /// Moves phits from injection buffers into injection ports: all that
    /// fit (`par_inj=1`) or one phit per node per cycle (`par_inj=0`).
    pub(super) fn data_injection(&mut self) {
        let mut i = 0;
        while i < self.sources.inj_nodes.len() {
            let node = self.sources.inj_nodes[i] as usize;
            if self.fab.cfg.par_inj {
                for j in 0..self.fab.shape.ninj {
                    self.move_to_port(node, j, u32::MAX);
                }
            } else {
                self.serial_injection(node);
            }
            if (0..self.fab.shape.ninj).all(|j| self.injector_stuck(node, j)) {
                self.sources.inj_listed[node] = false;
                self.sources.inj_nodes.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Whether injector `j` of `node` cannot move a phit until its buffer
    /// receives a packet or its port's head packet is granted an output or
    /// extracted (which list the node again): its buffer is empty, or its
    /// port is full and not draining.
    pub(super) fn injector_stuck(&self, node: usize, j: usize) -> bool {
        let q = self
            .fab
            .queues
            .inq(node * self.fab.shape.n_in + self.fab.shape.n_tr + j);
        self.sources.qi_occ[node * self.fab.shape.ninj + j] == 0
            || (q.aop == NONE && q.base == self.fab.shape.cap)
    }

    /// Moves up to `max` phits from buffer `j` of `node` to its injection
    /// port; returns how many moved.
    pub(super) fn move_to_port(&mut self, node: usize, j: usize, max: u32) -> u32 {
        let qi = node * self.fab.shape.ninj + j;
        let gi = node * self.fab.shape.n_in + self.fab.shape.n_tr + j;
        let m = self.sources.qi_occ[qi]
            .min(self.fab.shape.cap - self.occ(gi))
            .min(max);
        if m > 0 {
            self.sources.qi_occ[qi] -= m;
            // An injection port is its node's part's and has no feeder to
            // keep a copy of its count.
            self.fab.queues.inq_mut(gi).base += m;
        }
        m
    }

    pub(super) fn serial_injection(&mut self, node: usize) {
        if self.sources.serial_cur[node] == NONE {
            let start = self.sources.serial_next[node] as usize;
            let found = (0..self.fab.shape.ninj)
                .map(|k| (start + k) % self.fab.shape.ninj)
                .find(|&j| {
                    self.sources.qi_occ[node * self.fab.shape.ninj + j] > 0
                        && self.occ(node * self.fab.shape.n_in + self.fab.shape.n_tr + j)
                            < self.fab.shape.cap
                });
            let Some(j) = found else { return };
            self.sources.serial_cur[node] = j as u32;
            self.sources.serial_moved[node] = 0;
        }
        let j = self.sources.serial_cur[node] as usize;
        self.sources.serial_moved[node] += self.move_to_port(node, j, 1);
        if self.sources.serial_moved[node] == self.fab.shape.plen {
            self.sources.serial_cur[node] = NONE;
            self.sources.serial_next[node] = ((j + 1) % self.fab.shape.ninj) as u32;
        }
    }
}
