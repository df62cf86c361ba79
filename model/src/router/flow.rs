//! Flow-control admission checks (INSEE paper, sections 2.2.2 and 2.2.5).
//!
//! Virtual cut-through: a packet may take an output VC only if the input
//! queue it feeds at the neighbour has room for the whole packet. Bubble
//! flow control: a packet that *enters* a ring on an escape VC (from
//! injection, from another dimension or direction, or from another VC)
//! must also leave room for `bsize` packets in that ring's queue at this
//! router, so that a free packet buffer (the bubble) always remains in
//! every ring and the ring cannot deadlock (FSIN checks the local queue of
//! the ring being entered). Local bubble restriction (`bub_to_adap`,
//! INSEE's congestion control for the bubble routers): a packet being
//! injected needs `bub_to_adap` free packets in the local queue of the VC
//! it asks for, adaptive VCs included, which throttles injection when the
//! rings are full (with `timeout_upper_limit`, only at congested routers).

use crate::fabric::Fabric;

impl Fabric {
    /// Virtual cut-through: output VC `o` of router `r` leads somewhere and
    /// the neighbour's queue has room for a whole packet (wormhole
    /// switching: for one phit).
    #[inline]
    pub(crate) fn vct_ok(&self, r: usize, o: usize) -> bool {
        self.vct_wait(r, o) == 0
    }

    /// Bubble restriction for input `e` entering output VC `o` of router
    /// `r`: continuing straight on the same VC (`e == o`) is always allowed;
    /// entering the ring needs `bsize` free packets in its local queue.
    #[inline]
    pub(crate) fn bubble_ok(&self, r: usize, e: usize, o: usize) -> bool {
        self.lbr_ok(r, e, o) && self.ring_bubble_ok(r, e, o)
    }

    /// Local bubble restriction for input `e` (applies to injection
    /// inputs) asking for output VC `o` of router `r`.
    #[inline]
    pub(crate) fn lbr_ok(&self, r: usize, e: usize, o: usize) -> bool {
        let lbr = self.cfg.bub_to_adap;
        lbr == 0
            || e < self.shape.n_tr
            || !self.congestion.cc_active(r)
            || self.shape.cap - self.occ(r * self.shape.n_in + o) >= lbr * self.shape.plen
    }

    #[inline]
    fn ring_bubble_ok(&self, r: usize, e: usize, o: usize) -> bool {
        self.ring_bubble_wait(r, e, o) == 0
    }

    /// Phits the local queue of output VC `o` of router `r` must drain
    /// (at most one per cycle) before input `e` passes the ring's bubble
    /// restriction there; 0 when it passes now.
    #[inline]
    pub(crate) fn ring_bubble_wait(&self, r: usize, e: usize, o: usize) -> u32 {
        let bub = self.cfg.bsize[usize::from(self.shape.vc_info[o].dim)];
        if bub == 0 || e == o {
            0
        } else {
            (self.occ(r * self.shape.n_in + o) + bub * self.shape.plen)
                .saturating_sub(self.shape.cap)
        }
    }

    /// Phits the local queue of output VC `o` of router `r` must drain
    /// before injection input `e` passes the local bubble restriction
    /// there; 0 when it does not apply, and 0 with timeouts, where it can
    /// lift at any cycle.
    #[inline]
    pub(crate) fn lbr_wait(&self, r: usize, e: usize, o: usize) -> u32 {
        let lbr = self.cfg.bub_to_adap;
        if lbr == 0 || e < self.shape.n_tr || self.congestion.timeouts_on() {
            0
        } else {
            (self.occ(r * self.shape.n_in + o) + lbr * self.shape.plen)
                .saturating_sub(self.shape.cap)
        }
    }
}
