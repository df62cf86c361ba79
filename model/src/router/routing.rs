//! Routing functions on a routing record (INSEE paper, section 2.2).

use crate::fabric::wrap;
use crate::spec::RoutingOrder;
use crate::topology::Record;

/// The escape (deadlock-free, oblivious) direction for a packet with
/// record `rr` in a cube of `ndim` dimensions: `(dimension, positive)`, or
/// `None` when the packet has arrived.
///
/// - [`RoutingOrder::Dimension`]: the first dimension with hops left,
///   scanning from `start` (0 for X-Y-Z order; `vc=double` starts each
///   VC's order at a different dimension).
/// - [`RoutingOrder::Direction`]: the first dimension with positive hops
///   left, and only when there is none, the first with negative hops.
///
/// `start` must be below `ndim`.
pub fn escape_direction(
    rr: &Record,
    ndim: usize,
    order: RoutingOrder,
    start: usize,
) -> Option<(usize, bool)> {
    debug_assert!(start < ndim.max(1), "start dimension {start} of {ndim}");
    // Dimension `start + k` cyclically, without a division per dimension
    // (requests call this for every waiting head every cycle).
    let dims = (0..ndim).map(move |k| wrap(start + k, ndim));
    match order {
        // Trees, hypercubes and file topologies never come here (cube
        // routers only).
        RoutingOrder::Dimension
        | RoutingOrder::Static
        | RoutingOrder::Adaptive
        | RoutingOrder::Shortest
        | RoutingOrder::Duato => dims.clone().find(|&d| rr[d] != 0).map(|d| (d, rr[d] > 0)),
        RoutingOrder::Direction => dims
            .clone()
            .find(|&d| rr[d] > 0)
            .map(|d| (d, true))
            .or_else(|| dims.clone().find(|&d| rr[d] < 0).map(|d| (d, false))),
    }
}

/// Whether the packet has reached its destination.
#[inline]
pub fn arrived(rr: &Record) -> bool {
    rr.iter().all(|&x| x == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimension_and_direction_orders() {
        let rr = [-2, 3, 0];
        assert_eq!(
            escape_direction(&rr, 3, RoutingOrder::Dimension, 0),
            Some((0, false))
        );
        assert_eq!(
            escape_direction(&rr, 3, RoutingOrder::Direction, 0),
            Some((1, true))
        );
        assert_eq!(
            escape_direction(&rr, 3, RoutingOrder::Dimension, 1),
            Some((1, true))
        );
        assert_eq!(
            escape_direction(&[0, 0, 0], 3, RoutingOrder::Dimension, 0),
            None
        );
    }
}
