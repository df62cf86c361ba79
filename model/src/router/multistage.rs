//! Requests of the multistage router of trees and of the hypercube router
//! (INSEE paper, section 2.2.3): which output VC a head packet asks for.
//!
//! Trees route up, then down, along minimal paths, which is deadlock-free
//! without any VC restriction:
//! - `rmode=static`: the upward port is fixed by the source (its digit of
//!   the current level, [`crate::topology::Tree::static_up`]), the
//!   downward one by the destination; the VC is drawn at injection and
//!   kept.
//! - `rmode=adaptive`: among the profitable output VCs (every upward port
//!   while climbing, the downward ports towards the destination while
//!   descending, every VC) that are free and pass virtual cut-through, the
//!   one with the most credit (free phits in the neighbour's queue); ties
//!   at random.
//!
//! Networks with faults route every family by up*/down* over the
//! surviving links ([`crate::topology::tables`]): the candidates are the
//! ports that keep the packet on a shortest legal route (climbing only
//! while it has not yet gone down); static takes the first, adaptive the
//! one with most credit.
//!
//! A request that finds no output sleeps until the first cycle one of its
//! outputs could take it (`RequestPolicy::retry_in`).
//!
//! Hypercubes: `rmode=static` corrects dimensions from the lowest (e-cube
//! order), keeping the VC drawn at injection, which is deadlock-free as no
//! ring exists. `rmode=adaptive` takes the adaptive VC (1 and up) with the
//! most credit along any dimension still to correct, and only when none
//! has room the escape VC 0 in dimension order (Duato's condition).

use std::ops::Range;

use super::routing::arrived;
use super::{members, RequestPolicy, RouterKind};
use rand::Rng;
use rand_pcg::Pcg64Mcg;

use crate::fabric::{Fabric, Slot};
use crate::spec::{Compat, NetworkSpec, RequestMode, TopoKind};
use crate::topology::icube::PortLayout;
use crate::topology::{Family, Record};

/// What the icube router reads of a head packet, copied out of the network
/// so that its candidates can be folded while the network changes.
struct IcubeHead {
    layout: PortLayout,
    ndim: usize,
    here: u32,
    at_switch: bool,
    rr: Record,
    src: u32,
    dst: u32,
    /// The port of a transit input on VC 0 (a packet on an escape ring).
    on_escape_from: Option<usize>,
}

/// The icube router's candidates for a head packet not at its
/// destination: `f(port, VCs, room)`, `room` the free phits the next
/// queue must have (`bubble[d]` phits to enter the escape ring of
/// dimension `d`). The node link up and the node port down take any VC.
/// In the torus, VC 0 is the escape ring in dimension order, entered (from
/// a node, another dimension, direction, lane or VC) only with the bubble's
/// room; `fixed` (`rmode=static`) takes only it, on lane `src mod L`;
/// adaptive also offers VCs 1 and up on every dimension and lane still to
/// travel.
fn icube_candidates(
    h: &IcubeHead,
    nchan: usize,
    fixed: bool,
    bubble: [u32; 3],
    mut f: impl FnMut(usize, Range<usize>, u32),
) {
    let lay = h.layout;
    let Some(d0) = (0..h.ndim).find(|&d| h.rr[d] != 0).filter(|_| h.at_switch) else {
        let port = if h.at_switch {
            h.dst as usize % lay.per_switch()
        } else {
            0
        };
        return f(port, 0..nchan, 0);
    };
    let room = |d: usize, positive: bool, lane: usize| {
        if h.on_escape_from == Some(lay.arrival_port(d, positive, lane)) {
            0
        } else {
            bubble[d]
        }
    };
    if fixed {
        let lane = h.src as usize % lay.lanes();
        let positive = h.rr[d0] > 0;
        return f(lay.port(d0, positive, lane), 0..1, room(d0, positive, lane));
    }
    for d in (d0..h.ndim).filter(|&d| h.rr[d] != 0) {
        let positive = h.rr[d] > 0;
        for lane in 0..lay.lanes() {
            let port = lay.port(d, positive, lane);
            if d == d0 {
                f(port, 0..1, room(d, positive, lane));
            }
            f(port, 1..nchan, 0);
        }
    }
}

/// Calls `f` with the output VCs `vcs` of `port` (`nchan` VCs per port).
fn each_vc(nchan: usize, port: usize, vcs: Range<usize>, f: &mut dyn FnMut(usize)) {
    vcs.for_each(|vc| f(port * nchan + vc));
}

/// The multistage router of trees: up, then down, along minimal paths.
pub(crate) struct TreeRouter;

impl RequestPolicy for TreeRouter {
    /// INSEE's adaptive choice (`compat=insee`) may ask for a held output
    /// and changes with the neighbours' queues every cycle: no sleeping.
    fn sleeps(spec: &NetworkSpec) -> bool {
        spec.compat != Compat::Insee || spec.rmode == RequestMode::Static
    }

    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        _bet: &mut u8,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>) {
        if net.cfg.compat == Compat::Insee && net.cfg.rmode != RequestMode::Static {
            return (net.request_tree_insee(rng, r, slot), None);
        }
        (net.request_tree(rng, r, e, slot), None)
    }

    /// A static packet's VC drawn at injection may be any.
    fn candidates(net: &Fabric, r: usize, e: usize, slot: Slot, f: &mut dyn FnMut(usize)) {
        let vcs = net.vcs_ever(e);
        if net.cfg.rmode == RequestMode::Static {
            for vc in vcs {
                for port in net.tree_ports(r, slot, vc) {
                    each_vc(net.shape.nchan, port, vc..vc + 1, f);
                }
            }
        } else {
            for port in net.tree_ports(r, slot, 0) {
                each_vc(net.shape.nchan, port, vcs.clone(), f);
            }
        }
    }
}

/// The hypercube router: e-cube order (static) or Duato's adaptive VCs
/// over an e-cube escape VC.
pub(crate) struct HypercubeRouter;

impl RequestPolicy for HypercubeRouter {
    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        _bet: &mut u8,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>) {
        (net.request_hypercube(rng, r, e, slot), None)
    }

    fn candidates(net: &Fabric, _r: usize, e: usize, slot: Slot, f: &mut dyn FnMut(usize)) {
        let mask = slot.rr[0] as u32;
        let lowest = mask.trailing_zeros() as usize;
        if net.cfg.rmode == RequestMode::Static {
            each_vc(net.shape.nchan, lowest, net.vcs_ever(e), f);
        } else {
            for d in members(u128::from(mask)) {
                each_vc(net.shape.nchan, d, 1..net.shape.nchan, f);
            }
            each_vc(net.shape.nchan, lowest, 0..1, f);
        }
    }
}

/// Up*/down* routing over the surviving links of a network with faults,
/// whatever its family.
pub(crate) struct UpDownRouter;

impl RequestPolicy for UpDownRouter {
    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        _bet: &mut u8,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>) {
        (net.request_updown(rng, r, e, slot), None)
    }

    /// Static packets take the first legal port only.
    fn candidates(net: &Fabric, r: usize, e: usize, slot: Slot, f: &mut dyn FnMut(usize)) {
        let vcs = net.vcs_ever(e);
        for port in members(net.updown_ports(r, e, slot)) {
            each_vc(net.shape.nchan, port, vcs.clone(), f);
            if net.cfg.rmode == RequestMode::Static {
                break;
            }
        }
    }
}

/// Minimal paths of a file topology (`routing=shortest`): hop `k` of a
/// route on VC `k`, so that every channel waits only on channels of later
/// hops (no cycle; SST merlin anytopo's rule); the configuration refuses
/// a diameter beyond the VCs.
pub(crate) struct ShortestRouter;

impl RequestPolicy for ShortestRouter {
    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        _bet: &mut u8,
        r: usize,
        _e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>) {
        if slot.rr[0] == 0 {
            return (Some(net.shape.n_tr), None);
        }
        let vc = net.shortest_vc(slot);
        let mut best = None;
        for port in members(net.shortest_ports(r, slot)) {
            net.best_vc(rng, r, port, vc..vc + 1, 0, &mut best);
            if net.cfg.rmode == RequestMode::Static {
                break;
            }
        }
        (best.map(|(o, _, _)| o), None)
    }

    /// Static packets take the first minimal port only.
    fn candidates(net: &Fabric, r: usize, _e: usize, slot: Slot, f: &mut dyn FnMut(usize)) {
        if slot.rr[0] == 0 {
            return;
        }
        let vc = net.shortest_vc(slot);
        for port in members(net.shortest_ports(r, slot)) {
            each_vc(net.shape.nchan, port, vc..vc + 1, f);
            if net.cfg.rmode == RequestMode::Static {
                break;
            }
        }
    }
}

/// Duato's minimal adaptive routing with an up*/down* escape channel on
/// a file topology (`routing=duato`): a packet on an adaptive VC (1 and
/// up) or at injection asks for the free adaptive VC with most credit on
/// any minimal port, and only when none passes for VC 0 on a port of a
/// shortest legal up*/down* route from here (it may climb: its escape
/// route starts here); a packet on VC 0 keeps to VC 0 and its up*/down*
/// route. Escape channels wait only on escape channels along legal
/// routes, which never climb after descending, so their dependencies
/// form no cycle; adaptive channels can always drain into them (Duato's
/// condition, without return to the adaptive VCs).
pub(crate) struct DuatoRouter;

impl DuatoRouter {
    /// The head packet's ports (bit sets): the minimal ones, for the
    /// adaptive VCs (none once it is on the escape VC 0), and those of a
    /// shortest legal up*/down* route, for VC 0 (from an adaptive VC or
    /// injection it enters the escape here, and may climb).
    fn ports(net: &Fabric, r: usize, e: usize, slot: Slot) -> (u128, u128) {
        if e < net.shape.n_tr && e.is_multiple_of(net.shape.nchan) {
            (0, net.updown_ports(r, e, slot))
        } else {
            (
                net.shortest_ports(r, slot),
                net.updown_ports_climbing(r, slot, true),
            )
        }
    }
}

impl RequestPolicy for DuatoRouter {
    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        _bet: &mut u8,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>) {
        if slot.rr[0] == 0 {
            return (Some(net.shape.n_tr), None);
        }
        let (adaptive, escape) = Self::ports(net, r, e, slot);
        let mut best = None;
        for port in members(adaptive) {
            net.best_vc(rng, r, port, 1..net.shape.nchan, 0, &mut best);
        }
        if best.is_none() {
            for port in members(escape) {
                net.best_vc(rng, r, port, 0..1, 0, &mut best);
            }
        }
        (best.map(|(o, _, _)| o), None)
    }

    fn candidates(net: &Fabric, r: usize, e: usize, slot: Slot, f: &mut dyn FnMut(usize)) {
        if slot.rr[0] == 0 {
            return;
        }
        let (adaptive, escape) = Self::ports(net, r, e, slot);
        for port in members(adaptive) {
            each_vc(net.shape.nchan, port, 1..net.shape.nchan, f);
        }
        for port in members(escape) {
            each_vc(net.shape.nchan, port, 0..1, f);
        }
    }
}

/// INSEE's icube router. Its blocked requests do not sleep: its bubble
/// rings would need their own bound.
pub(crate) struct IcubeRouter;

impl RequestPolicy for IcubeRouter {
    fn sleeps(_: &NetworkSpec) -> bool {
        false
    }

    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        _bet: &mut u8,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>) {
        (net.request_icube(rng, r, e, slot), None)
    }

    fn retry_in(_: &Fabric, _: usize, _: usize, _: Slot, _: Option<usize>) -> u32 {
        1
    }

    /// A bubble's room is not required.
    fn candidates(net: &Fabric, r: usize, e: usize, slot: Slot, f: &mut dyn FnMut(usize)) {
        let head = net.icube_head(r, e, slot);
        let fixed = net.cfg.rmode == RequestMode::Static;
        icube_candidates(&head, net.shape.nchan, fixed, [0; 3], |port, vcs, _| {
            each_vc(net.shape.nchan, port, vcs, f);
        });
    }
}

impl Fabric {
    /// The output VC (local index; `n_tr` = consumption) that the head
    /// packet of input `e` of tree router `r` requests this cycle.
    fn request_tree(&self, rng: &mut Pcg64Mcg, r: usize, e: usize, slot: Slot) -> Option<usize> {
        if arrived(&slot.rr) {
            return Some(self.shape.n_tr);
        }
        let vcs = self.vcs_now(rng, e);
        let ports = self.tree_ports(r, slot, vcs.start);
        let mut best = None;
        for port in ports {
            self.best_vc(rng, r, port, vcs.clone(), 0, &mut best);
        }
        best.map(|(o, _, _)| o)
    }

    /// The output VC that the head packet of tree router `r` requests this
    /// cycle as INSEE's adaptive trees choose it (`min_queue_occupation`,
    /// `compat=insee`): among every VC of the ports it may take, one whose
    /// neighbour queue holds the fewest phits, drawn among the equals with
    /// the first of them counted twice (INSEE appends it twice), whether or
    /// not another packet holds it; no request when virtual cut-through
    /// does not admit the packet there.
    fn request_tree_insee(&self, rng: &mut Pcg64Mcg, r: usize, slot: Slot) -> Option<usize> {
        if arrived(&slot.rr) {
            return Some(self.shape.n_tr);
        }
        let (mut least, mut ties) = (u32::MAX, 0u128);
        for port in self.tree_ports(r, slot, 0) {
            for o in port * self.shape.nchan..(port + 1) * self.shape.nchan {
                let occ = self.down_occ(r * self.shape.n_tr + o);
                if occ < least {
                    (least, ties) = (occ, 0);
                }
                if occ == least {
                    ties |= 1u128 << o;
                }
            }
        }
        let k = rng.gen_range(0..ties.count_ones() as usize + 1);
        let o = members(ties).nth(k.saturating_sub(1))?;
        self.vct_ok(r, o).then_some(o)
    }

    /// The output VC that the head packet of input `e` of indirect-cube
    /// router `r` requests this cycle (INSEE's icube router): the node
    /// link up, the switch torus, the node link down; the candidate with
    /// most credit among [`icube_candidates`].
    fn request_icube(&self, rng: &mut Pcg64Mcg, r: usize, e: usize, slot: Slot) -> Option<usize> {
        let head = self.icube_head(r, e, slot);
        if !head.at_switch && head.here == head.dst {
            return Some(self.shape.n_tr);
        }
        let bsize = self.cfg.bsize.map(|b| b * self.shape.plen);
        let (nchan, fixed) = (self.shape.nchan, self.cfg.rmode == RequestMode::Static);
        let mut best = None;
        icube_candidates(&head, nchan, fixed, bsize, |port, vcs, room| {
            self.best_vc(rng, r, port, vcs, room, &mut best);
        });
        best.map(|(o, _, _)| o)
    }

    /// What the icube router reads of the head packet (`slot`) of input
    /// `e` of router `r`.
    fn icube_head(&self, r: usize, e: usize, slot: Slot) -> IcubeHead {
        let Family::Icube(ic) = self.topo.family() else {
            unreachable!("icube request on another family")
        };
        let pkt = &self.packets[slot.pkt as usize];
        IcubeHead {
            layout: ic.layout(),
            ndim: ic.ndim(),
            here: r as u32,
            at_switch: ic.switch_of(r as u32).is_some(),
            rr: slot.rr,
            src: pkt.src,
            dst: pkt.dst,
            on_escape_from: (e < self.shape.n_tr && e.is_multiple_of(self.shape.nchan))
                .then_some(e / self.shape.nchan),
        }
    }

    /// The output ports a tree packet may take at router `r`: its node
    /// link, the upward ports while it climbs (one with `rmode=static`),
    /// the downward ports towards its destination while it descends (`vc`:
    /// the VC a static packet travels on).
    pub(crate) fn tree_ports(&self, r: usize, slot: Slot, vc: usize) -> Range<usize> {
        let Family::Tree(tree) = self.topo.family() else {
            unreachable!("tree request on another family")
        };
        let pkt = &self.packets[slot.pkt as usize];
        let fixed = self.cfg.rmode == RequestMode::Static;
        let (first, count) = match tree.level_of(r as u32) {
            None => (0, 1),
            Some((l, _)) if slot.rr[0] > 0 => {
                if fixed {
                    // INSEE's thin tree climbs by the destination's digits
                    // (`check_rr_thintree_static`), its fat tree by the
                    // source's, as the paper does for both.
                    let by = if self.cfg.compat == Compat::Insee
                        && self.cfg.topo == TopoKind::ThinTree
                    {
                        pkt.dst
                    } else {
                        pkt.src
                    };
                    (tree.static_up(l, by, vc), 1)
                } else {
                    (0, tree.up_ports())
                }
            }
            Some((l, _)) => {
                let (first, count) = tree.down_ports(l, pkt.dst);
                if fixed {
                    (first + pkt.dst as usize % count, 1)
                } else {
                    (first, count)
                }
            }
        };
        first..first + count
    }

    /// VCs a packet at input `e` may ask for now: with `rmode=static`, the
    /// VC it travels on, or at injection one drawn at random from `rng`
    /// (its router's stream); otherwise every VC (hypercubes: the
    /// adaptive ones, from 1).
    fn vcs_now(&self, rng: &mut Pcg64Mcg, e: usize) -> Range<usize> {
        if self.cfg.rmode != RequestMode::Static {
            let first = usize::from(self.shape.kind == RouterKind::Hypercube);
            return first..self.shape.nchan;
        }
        let vc = if e < self.shape.n_tr {
            e % self.shape.nchan
        } else {
            rng.gen_range(0..self.shape.nchan)
        };
        vc..vc + 1
    }

    /// VCs a packet at input `e` might ask for in any cycle (the VC drawn
    /// at injection may be any).
    fn vcs_ever(&self, e: usize) -> Range<usize> {
        if self.cfg.rmode == RequestMode::Static && e < self.shape.n_tr {
            let vc = e % self.shape.nchan;
            vc..vc + 1
        } else {
            0..self.shape.nchan
        }
    }

    /// The VC of the head packet `slot` under `routing=shortest`: the hop
    /// it is at (its route's length less the links it has left), at most
    /// the last VC.
    #[inline]
    fn shortest_vc(&self, slot: Slot) -> usize {
        let length = self.packets[slot.pkt as usize].rr[0];
        ((length - slot.rr[0]).max(0) as usize).min(self.shape.nchan - 1)
    }

    /// The ports (bit set) of router `r` that keep the head packet
    /// `slot` on a minimal route (`routing=shortest`): those one link
    /// nearer to its destination, as many as it has left.
    fn shortest_ports(&self, r: usize, slot: Slot) -> u128 {
        let sp = self
            .topo
            .shortest()
            .expect("minimal-path tables with routing=shortest");
        let dst = self.packets[slot.pkt as usize].dst;
        debug_assert_eq!(
            sp.dist(r as u32, dst),
            slot.rr[0] as u32,
            "off its minimal route"
        );
        sp.next(r as u32, dst, self.shape.radix, |u, p| {
            self.topo.neighbour(u, p).map(|(v, _)| v)
        })
    }

    /// The output VC that the head packet of input `e` of router `r`
    /// requests this cycle in a network with faults (up*/down*).
    fn request_updown(&self, rng: &mut Pcg64Mcg, r: usize, e: usize, slot: Slot) -> Option<usize> {
        if slot.rr[0] == 0 {
            return Some(self.shape.n_tr);
        }
        let vcs = self.vcs_now(rng, e);
        let ports = self.updown_ports(r, e, slot);
        let fixed = self.cfg.rmode == RequestMode::Static;
        let mut best = None;
        for port in members(ports) {
            self.best_vc(rng, r, port, vcs.clone(), 0, &mut best);
            if fixed {
                break;
            }
        }
        best.map(|(o, _, _)| o)
    }

    /// The ports (bit set) that keep the head packet (`slot`) of input `e`
    /// of router `r` on a shortest up*/down* route.
    pub(crate) fn updown_ports(&self, r: usize, e: usize, slot: Slot) -> u128 {
        let ud = self.topo.up_down().expect("up*/down* tables with faults");
        let here = r as u32;
        let may_climb = e >= self.shape.n_tr
            || self
                .topo
                .sender(here, e / self.shape.nchan)
                .is_some_and(|from| ud.is_up(from, here));
        self.updown_ports_climbing(r, slot, may_climb)
    }

    /// [`Fabric::updown_ports`] for a packet that may still climb
    /// (`may_climb`) or not.
    fn updown_ports_climbing(&self, r: usize, slot: Slot, may_climb: bool) -> u128 {
        let ud = self.topo.up_down().expect("up*/down* tables with faults");
        let dst = self.packets[slot.pkt as usize].dst;
        ud.ports(r as u32, dst, may_climb, self.shape.radix, |u, p| {
            self.topo.neighbour(u, p).map(|(v, _)| v)
        })
    }

    /// The output VC that the head packet of input `e` of hypercube router
    /// `r` requests this cycle.
    fn request_hypercube(
        &self,
        rng: &mut Pcg64Mcg,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> Option<usize> {
        let mask = slot.rr[0] as u32;
        if mask == 0 {
            return Some(self.shape.n_tr);
        }
        let lowest = mask.trailing_zeros() as usize;
        let vcs = self.vcs_now(rng, e);
        if self.cfg.rmode == RequestMode::Static {
            let mut best = None;
            self.best_vc(rng, r, lowest, vcs, 0, &mut best);
            return best.map(|(o, _, _)| o);
        }
        let mut best = None;
        for d in members(u128::from(mask)) {
            self.best_vc(rng, r, d, vcs.clone(), 0, &mut best);
        }
        if best.is_none() {
            self.best_vc(rng, r, lowest, 0..1, 0, &mut best);
        }
        best.map(|(o, _, _)| o)
    }

    /// Folds the VCs `vcs` of output `port` of router `r` into `best`
    /// (output VC, credit in phits, number of ties so far): the free one
    /// that passes virtual cut-through (and has `room` free phits in the
    /// next queue, for a bubble) with the most credit (free phits in the
    /// neighbour's queue, INSEE paper section 2.2.3), a tie replacing the
    /// choice with probability 1/ties (uniform among equals).
    fn best_vc(
        &self,
        rng: &mut Pcg64Mcg,
        r: usize,
        port: usize,
        vcs: Range<usize>,
        room: u32,
        best: &mut Option<(usize, u32, u32)>,
    ) {
        for vc in vcs {
            let o = port * self.shape.nchan + vc;
            if self.outputs.held(r, self.shape.n_tr, o) || !self.vct_ok(r, o) {
                continue;
            }
            let credit = self.shape.cap - self.down_occ(r * self.shape.n_tr + o);
            if credit < room {
                continue;
            }
            *best = match *best {
                Some((_, c, _)) if credit > c => Some((o, credit, 1)),
                None => Some((o, credit, 1)),
                Some((b, c, ties)) if credit == c => {
                    let ties = ties + 1;
                    if rng.gen_range(0..ties as usize) == 0 {
                        Some((o, c, ties))
                    } else {
                        Some((b, c, ties))
                    }
                }
                keep => keep,
            };
        }
    }
}
