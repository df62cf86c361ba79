//! Router policies of the FSIN direct-topology router (INSEE paper, section
//! 2.2, Fig. 5): input-queued, virtual cut-through, a crossbar with one
//! port per virtual channel. Each policy is a small module:
//!
//! - [`routing`]: the escape (oblivious) route, dimension or direction
//!   order, and the set of profitable directions for adaptive VCs;
//! - [`flow`]: the virtual cut-through and bubble admission checks;
//! - [`request`]: the request modes (`rmode`) of the bubble, Dally and
//!   double VC managements, which pick the output VC a head packet asks for;
//! - [`multistage`]: the requests of the tree (multistage) router and of
//!   the hypercube router;
//! - [`arbitration`]: output-port arbitration (`amode`).
//!
//! Every router (the cube routers, the tree, hypercube, up*/down* and
//! indirect-cube routers) is a `RequestPolicy`; the engine's per-cycle
//! loop is generic over it and picks the network's router once per cycle
//! (`with_policy!`), so the request of each input is a direct call. To add
//! a router: a unit struct implementing `RequestPolicy` next to its
//! requests, a variant of `RouterKind` (`fabric/shape.rs`), its arm in
//! `with_policy!`, and when the network uses it in `Router::new` (the
//! factory).

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

pub(crate) use crate::fabric::RouterKind;
use crate::fabric::{Fabric, Slot};
use crate::spec::NetworkSpec;
use crate::topology::{Family, Topology};

pub mod arbitration;
pub mod flow;
pub mod multistage;

/// Iterates the set bits of a mask (requesters, ports, dimensions) in
/// ascending order.
pub(crate) fn members(mut m: u128) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let e = m.trailing_zeros() as usize;
            m &= m - 1;
            e
        })
    })
}
pub mod request;
pub mod routing;

/// A router's request policy (INSEE paper, section 2.2): which output VC
/// the head packet of an input asks for in a cycle, and what the engine
/// may skip while it is blocked.
pub(crate) trait RequestPolicy {
    /// Whether blocked requests sleep until [`RequestPolicy::retry_in`]
    /// under `spec` (the engine also rules it out with extraction and the
    /// SpiNNaker engine, which act on blocked packets). Default: yes.
    fn sleeps(_spec: &NetworkSpec) -> bool {
        true
    }

    /// The output VC (local index; `n_tr` = consumption) that the head
    /// packet (`slot`) of input `e` of router `r` requests this cycle, or
    /// `None` when nothing it may take is free; and the bound that
    /// [`RequestPolicy::retry_in`] would give should the request be
    /// blocked, where the request computes it on its way at little cost
    /// (`None`: ask `retry_in`). It reads the part through `net` and
    /// changes nothing but `rng`, router `r`'s random stream, and `bet`,
    /// the input's memory between cycles (the smart request mode's).
    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        bet: &mut u8,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>);

    /// Whether a packet at an injection queue whose request finds nothing
    /// it may take is extracted (dropped, `extract=1`), as FSIN's cube
    /// routers do. Default: no.
    fn extracts(_spec: &NetworkSpec) -> bool {
        false
    }

    /// Lower bound, in cycles, on when a blocked request of that head
    /// packet could be granted (1: next cycle); `requested` is what it
    /// asked for this cycle (`None`: nothing could take it; `Some`: an
    /// output VC still busy with another packet). Called only when
    /// [`RequestPolicy::sleeps`]. Default: the least
    /// [`Fabric::output_wait`] over the [`RequestPolicy::candidates`],
    /// exact for routers that nothing but those outputs decides (the tree,
    /// hypercube and up*/down* routers), so skipping the cycles before
    /// leaves the model unchanged.
    fn retry_in(net: &Fabric, r: usize, e: usize, slot: Slot, _requested: Option<usize>) -> u32 {
        let mut wait = u32::MAX;
        Self::candidates(net, r, e, slot, &mut |o| {
            wait = wait.min(net.output_wait(r, o));
        });
        wait
    }

    /// Calls `f` with every output VC (local index) that head packet may
    /// ask for in some cycle: the edges of the deadlock detector's
    /// wait-for graph.
    fn candidates(net: &Fabric, r: usize, e: usize, slot: Slot, f: &mut dyn FnMut(usize));
}

/// `$body` with `$p` the [`RequestPolicy`] type of router kind `$kind` (the
/// one place that lists them).
macro_rules! with_policy {
    ($kind:expr, $p:ident => $body:expr) => {
        match $kind {
            $crate::router::RouterKind::Cube => {
                type $p = $crate::router::request::CubeRouter;
                $body
            }
            $crate::router::RouterKind::Tree => {
                type $p = $crate::router::multistage::TreeRouter;
                $body
            }
            $crate::router::RouterKind::Hypercube => {
                type $p = $crate::router::multistage::HypercubeRouter;
                $body
            }
            $crate::router::RouterKind::UpDown => {
                type $p = $crate::router::multistage::UpDownRouter;
                $body
            }
            $crate::router::RouterKind::Shortest => {
                type $p = $crate::router::multistage::ShortestRouter;
                $body
            }
            $crate::router::RouterKind::Duato => {
                type $p = $crate::router::multistage::DuatoRouter;
                $body
            }
            $crate::router::RouterKind::Icube => {
                type $p = $crate::router::multistage::IcubeRouter;
                $body
            }
        }
    };
}
pub(crate) use with_policy;

/// What a part's routers remember between cycles for their requests and
/// arbitration: one random stream per router, and the smart request
/// mode's bet per input.
pub(crate) struct RouterState {
    /// One random stream per router, seeded from `rseed` and the router's
    /// index: every draw of a router's requests and arbitration, and of
    /// its node's routes and injection choices, comes from its own stream,
    /// so the order in which routers are visited in a cycle does not
    /// change the report.
    pub(crate) rngs: Vec<Pcg64Mcg>,
    /// Smart request mode state per input (next dimension offset, or
    /// escape).
    pub(crate) in_bet: Vec<u8>,
}

impl RouterState {
    /// The state of `routers` routers with `n_in` inputs each, seeded
    /// from `rseed`.
    pub(crate) fn new(routers: usize, n_in: usize, rseed: u64) -> RouterState {
        RouterState {
            rngs: (0..routers as u64)
                .map(|r| {
                    Pcg64Mcg::seed_from_u64(
                        rseed ^ 0x6673_696e_656e_6731 ^ r.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    )
                })
                .collect(),
            in_bet: vec![0; routers * n_in],
        }
    }
}

/// The router a network is built with: its kind, and what its requests
/// need to know. The factory of the routers, as BookSim2's
/// `Router::NewRouter` is.
pub(crate) struct Router {
    pub(crate) kind: RouterKind,
    /// Dimensions and ways per dimension of a k-ary n-cube (0 otherwise).
    pub(crate) ndim: usize,
    pub(crate) nways: usize,
    /// Whether blocked requests sleep to their earliest grant.
    pub(crate) sleep_blocked: bool,
}

impl Router {
    /// The router of `topo` under `spec`: up*/down* around failed links,
    /// else the topology family's own.
    pub(crate) fn new(topo: &Topology, spec: &NetworkSpec) -> Router {
        let (kind, ndim, nways) = match topo.family() {
            _ if topo.duato() => (RouterKind::Duato, 0, 0),
            _ if topo.up_down().is_some() => (RouterKind::UpDown, 0, 0),
            _ if topo.shortest().is_some() => (RouterKind::Shortest, 0, 0),
            Family::Cube(c) => (RouterKind::Cube, c.ndim(), c.nways()),
            Family::Tree(_) => (RouterKind::Tree, 0, 0),
            Family::Hypercube(_) => (RouterKind::Hypercube, 0, 0),
            Family::Icube(_) => (RouterKind::Icube, 0, 0),
            Family::Graph(_) => (RouterKind::UpDown, 0, 0),
        };
        // Blocked requests sleep to their earliest grant where a lower
        // bound is known: oblivious cube requests, and the tree, hypercube
        // and up*/down* routers (not icube, whose bubble rings would need
        // their own bound, nor the SpiNNaker engine or extraction, which
        // act on blocked packets).
        let sleep_blocked = !spec.extract && !spec.hol && with_policy!(kind, P => P::sleeps(spec));
        Router {
            kind,
            ndim,
            nways,
            sleep_blocked,
        }
    }
}
