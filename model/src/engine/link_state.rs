//! The state of a part's physical links: which VCs hold each link, the
//! transfers in progress and the cycles of their next events
//! ([`super::links`] moves phits across them).

use crate::fabric::{ActiveSet, Wheel};

/// A physical link: which of its VCs hold a packet, and which VC it
/// serves or served last (round robin between packets).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Link {
    /// Bit per VC holding the link's output.
    pub(super) mask: u32,
    pub(super) vc: u32,
    /// Whether VC `vc` is in the middle of a transfer.
    pub(super) busy: bool,
}

/// The physical links of a part's routers (index `router * radix + port`).
pub(crate) struct Links {
    /// Which VCs hold each link, and the one it serves.
    pub(super) state: Vec<Link>,
    /// Packets that have crossed each link (utilization = packets *
    /// plength / cycles).
    pub(super) link_packets: Vec<u64>,
    /// Links by the cycle of their next transfer start or tail (a tail
    /// follows its header by `plength - 1` cycles).
    pub(super) link_events: Wheel<ActiveSet>,
    /// Deadlock detection ([`crate::deadlock`]): links in the middle of a
    /// transfer.
    pub(super) busy_links: u32,
    /// Wormhole switching: links with transfers in progress, and transfers
    /// that stall this cycle (their start moves one cycle later at its
    /// end).
    pub(super) wh_links: ActiveSet,
    pub(super) wh_stalled: Vec<u32>,
    /// Scratch of [`super::Part::advance_wormhole`]: (link, output VC, VC)
    /// of the transfers that move, and the consuming inputs that take a
    /// phit.
    pub(super) wh_movers: Vec<(u32, u32, u32)>,
    pub(super) wh_consumers: Vec<u32>,
}

impl Links {
    /// Idle links, `radix` per router, for packets of `plen` phits.
    pub(crate) fn new(routers: usize, radix: usize, plen: u32, wormhole: bool) -> Links {
        Links {
            state: vec![Link::default(); routers * radix],
            link_packets: vec![0; routers * radix],
            link_events: Wheel::new(plen as usize - 1, ActiveSet::new(routers * radix)),
            busy_links: 0,
            wh_links: ActiveSet::new(if wormhole { routers * radix } else { 0 }),
            wh_stalled: Vec::new(),
            wh_movers: Vec::new(),
            wh_consumers: Vec::new(),
        }
    }

    /// VC `vc` of `link` is taken at cycle `now`: under virtual
    /// cut-through an idle link has an event now; under `wormhole`
    /// switching the link moves every cycle from now on.
    #[inline]
    pub(super) fn take_vc(&mut self, link: usize, vc: usize, now: u64, wormhole: bool) {
        self.state[link].mask |= 1 << vc;
        if wormhole {
            self.wh_links.insert(link);
        } else if !self.state[link].busy {
            self.link_events.at(now).insert(link);
        }
    }

    /// Packets that have crossed each link.
    #[inline]
    pub(super) fn packets(&self) -> &[u64] {
        &self.link_packets
    }

    /// Whether a transfer is in the middle of a link (deadlock detection).
    #[inline]
    pub(crate) fn busy(&self) -> bool {
        self.busy_links > 0
    }
}
