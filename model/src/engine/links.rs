//! Physical links: which VCs hold each link, the transfers in progress and
//! the cycles of their next events (a header or a tail crossing).

use super::{ActiveSet, Link, Wheel};

/// The physical links of a part's routers (index `router * radix + port`).
pub(crate) struct Links {
    /// Which VCs hold each link, and the one it serves.
    pub(crate) state: Vec<Link>,
    /// Packets that have crossed each link (utilization = packets *
    /// plength / cycles).
    pub(crate) link_packets: Vec<u64>,
    /// Links by the cycle of their next transfer start or tail (a tail
    /// follows its header by `plength - 1` cycles).
    pub(crate) link_events: Wheel<ActiveSet>,
    /// Deadlock detection ([`crate::deadlock`]): links in the middle of a
    /// transfer.
    pub(crate) busy_links: u32,
    /// Wormhole switching: links with transfers in progress, and transfers
    /// that stall this cycle (their start moves one cycle later at its
    /// end).
    pub(crate) wh_links: ActiveSet,
    pub(crate) wh_stalled: Vec<u32>,
    /// Scratch of [`super::Part::advance_wormhole`]: (link, output VC, VC)
    /// of the transfers that move, and the consuming inputs that take a
    /// phit.
    pub(crate) wh_movers: Vec<(u32, u32, u32)>,
    pub(crate) wh_consumers: Vec<u32>,
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
}
