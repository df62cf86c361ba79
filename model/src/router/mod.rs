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
