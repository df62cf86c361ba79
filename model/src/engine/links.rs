//! Physical links: which VCs hold each link, the transfers in progress and
//! the cycles of their next events (a header or a tail crossing).

use super::link_state::Link;
use super::{Mail, OutVc, Part, CONSUME, NONE, NOT_STARTED};

// ----- Phase B: link transfers ------------------------------------------
impl Part {
    /// Every physical link with a granted VC carries one phit. Transfers
    /// are contiguous, so a link only needs attention in the cycle its
    /// header crosses and in the cycle its tail does; in between, the
    /// phits sent are a function of the clock ([`Fabric::sent`]).
    pub(super) fn advance_links(&mut self) {
        self.moved = false;
        let now = self.fab.now;
        let mut due = std::mem::take(&mut self.links.link_events.at(now).words);
        for (w, word) in due.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let link = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.link_event(link);
            }
        }
        self.links.link_events.at(now).words = due;
    }

    /// The event of `link` in this cycle: the tail of the transfer in
    /// progress crosses, or the next granted VC (round robin after the one
    /// served last) sends its header.
    pub(super) fn link_event(&mut self, link: usize) {
        let r = link / self.fab.shape.radix;
        let port = link % self.fab.shape.radix;
        let Link { mask, vc, busy } = self.links.state[link];
        if busy {
            self.tail_crosses(
                link,
                r * self.fab.shape.n_tr + port * self.fab.shape.nchan + vc as usize,
            );
            return;
        }
        if mask == 0 {
            return;
        }
        let after = mask >> vc;
        let vc = if after != 0 {
            vc + after.trailing_zeros()
        } else {
            mask.trailing_zeros()
        };
        let go = r * self.fab.shape.n_tr + port * self.fab.shape.nchan + vc as usize;
        let OutVc { dst, sip, .. } = *self.fab.outputs.out(go);
        debug_assert!(
            self.occ(r * self.fab.shape.n_in + sip as usize) > 0,
            "phit not present"
        );
        self.set_start(go, self.fab.now);
        self.links.state[link] = Link {
            mask,
            vc,
            busy: true,
        };
        self.links.busy_links += 1;
        self.links.link_packets[link] += 1;
        self.header_crosses(r * self.fab.shape.n_in + sip as usize, port, dst as usize);
        if self.fab.shape.plen == 1 {
            self.tail_crosses(link, go);
        } else {
            let tail = self.fab.now + u64::from(self.fab.shape.plen) - 1;
            self.links.link_events.at(tail).insert(link);
        }
    }

    /// The last phit of output VC `go`'s packet crosses `link`: the packet
    /// leaves its input queue and the output VC is free from the next
    /// cycle on.
    pub(super) fn tail_crosses(&mut self, link: usize, go: usize) {
        self.links.busy_links -= 1;
        self.moved = true;
        self.packet_crossed(link, go);
        let Link { mask, vc, .. } = self.links.state[link];
        let mask = mask & !(1 << vc);
        self.links.state[link] = Link {
            mask,
            vc: if vc + 1 == self.fab.shape.nchan as u32 {
                0
            } else {
                vc + 1
            },
            busy: false,
        };
        if mask != 0 {
            self.links.link_events.at(self.fab.now + 1).insert(link);
        }
    }

    /// The last phit of output VC `go`'s packet has crossed `link`: the
    /// packet's phits move from its input queue's count to the next one's,
    /// the output VC is free and the packet leaves the input queue.
    pub(super) fn packet_crossed(&mut self, link: usize, go: usize) {
        let r = link / self.fab.shape.radix;
        let OutVc { dst, sip, .. } = *self.fab.outputs.out(go);
        let src = r * self.fab.shape.n_in + sip as usize;
        self.add_base(src, -(self.fab.shape.plen as i32));
        self.add_base(dst as usize, self.fab.shape.plen as i32);
        self.set_start(go, NOT_STARTED);
        self.fab.outputs.out_mut(go).sip = NONE;
        self.fab.queues.pop(src, self.fab.now);
    }

    /// The header of the head packet of input `src` crosses link port
    /// `port` into input `dst` of the next router.
    pub(super) fn header_crosses(&mut self, src: usize, port: usize, dst: usize) {
        let (entry, delta) = self.fab.topo.hop(port);
        let mut slot = self.fab.queues.head_slot(src);
        slot.rr[entry] += delta;
        if self.fab.topo.slow_links() {
            // The header reaches the next router's end of the link
            // `latency - 1` cycles after this one's.
            let latency = self.fab.topo.latency(src / self.fab.shape.n_in, port);
            self.fab.packets[slot.pkt as usize].ready = self.fab.now + u64::from(latency);
        }
        if self.fab.topo.duato() {
            // The record counts the links left on the route the packet's
            // new VC follows; a route that grows (onto the escape VC)
            // adds its extra links to the packet's hops.
            let n_in = self.fab.shape.n_in;
            let escape = (dst % n_in).is_multiple_of(self.fab.shape.nchan);
            let pkt = &mut self.fab.packets[slot.pkt as usize];
            let left =
                self.fab
                    .topo
                    .duato_left((src / n_in) as u32, (dst / n_in) as u32, pkt.dst, escape);
            pkt.hops += (left as i32 - slot.rr[0]).max(0) as u32;
            slot.rr[0] = left as i32;
        }
        if src % self.fab.shape.n_in >= self.fab.shape.n_tr {
            self.fab.packets[slot.pkt as usize].t_inj = self.fab.now;
            self.in_network += 1;
        }
        if self.fab.congestion.timeouts {
            // The next router times this packet if it times none; the
            // router it leaves stops timing it (and is relieved if it left
            // within the lower limit).
            let (from, to) = (src / self.fab.shape.n_in, dst / self.fab.shape.n_in);
            if self.fab.congestion.to_packet[to] == NONE {
                self.fab.congestion.to_counter[to] = 0;
                self.fab.congestion.to_packet[to] = slot.pkt;
            }
            if self.fab.congestion.to_packet[from] == slot.pkt {
                if self.fab.congestion.to_counter[from] < self.fab.cfg.timeout_lower() {
                    self.fab.congestion.congested[from] = false;
                }
                self.fab.congestion.to_counter[from] = 0;
                self.fab.congestion.to_packet[from] = NONE;
            }
        }
        if self.owns_input(dst) {
            self.fab.queues.push(dst, slot);
        } else {
            let packet = self.fab.packets[slot.pkt as usize];
            self.post(
                dst / self.fab.shape.n_in,
                Mail::Push {
                    gi: dst as u32,
                    slot,
                    packet,
                },
            );
        }
    }

    /// Phase B under wormhole switching. A packet holds its output VC from
    /// the grant to its tail, but moves only while phits of it are at hand
    /// and the next queue has room: every link carries at most one phit,
    /// of one of its granted VCs that can move (round robin after the one
    /// that moved last, so a blocked VC never blocks the link), and every
    /// consuming input takes one phit if it has one. All decisions read
    /// the state at the start of the cycle; a transfer that does not move
    /// has its start moved one cycle later at the end of the cycle, so
    /// [`Fabric::sent`] stays exact.
    pub(super) fn advance_wormhole(&mut self) {
        self.moved = false;
        let mut movers = std::mem::take(&mut self.links.wh_movers);
        let mut consumers = std::mem::take(&mut self.links.wh_consumers);
        for w in 0..self.links.wh_links.words.len() {
            let mut bits = self.links.wh_links.words[w];
            while bits != 0 {
                let link = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let Link { mask, vc: last, .. } = self.links.state[link];
                let (r, port) = (link / self.fab.shape.radix, link % self.fab.shape.radix);
                let nchan = self.fab.shape.nchan as u32;
                let mover = (1..=nchan)
                    .map(|k| (last + k) % nchan)
                    .filter(|&vc| mask & (1 << vc) != 0)
                    .find(|&vc| {
                        self.can_move(
                            r * self.fab.shape.n_tr + port * self.fab.shape.nchan + vc as usize,
                        )
                    });
                for vc in (0..nchan).filter(|&vc| mask & (1 << vc) != 0) {
                    let go = r * self.fab.shape.n_tr + port * self.fab.shape.nchan + vc as usize;
                    if Some(vc) == mover {
                        movers.push((link as u32, go as u32, vc));
                    } else {
                        self.links.wh_stalled.push(go as u32);
                    }
                }
            }
        }
        for &gi in self.fab.outputs.consuming() {
            let g = gi as usize;
            if (self.fab.shape.plen - self.fab.queues.inq(g).cons_sent).min(self.occ(g)) > 0 {
                consumers.push(gi);
            }
        }
        for &(link, go, vc) in &movers {
            let (link, go) = (link as usize, go as usize);
            self.moved = true;
            self.links.state[link].vc = vc;
            let r = link / self.fab.shape.radix;
            let sent = self.sent(go);
            let OutVc { dst, sip, .. } = *self.fab.outputs.out(go);
            if sent == 0 {
                self.links.link_packets[link] += 1;
                self.header_crosses(
                    r * self.fab.shape.n_in + sip as usize,
                    link % self.fab.shape.radix,
                    dst as usize,
                );
            }
            if sent + 1 == self.fab.shape.plen {
                self.packet_crossed(link, go);
                self.links.state[link].mask &= !(1 << vc);
                if self.links.state[link].mask == 0 {
                    self.links.wh_links.words[link / 64] &= !(1 << (link % 64));
                }
            }
        }
        let mut delivered = false;
        for &gi in &consumers {
            self.moved = true;
            delivered |= self.consume_phit(gi as usize);
        }
        if delivered {
            // A delivered packet's input no longer holds consumption.
            let inq = self.fab.queues.inqs();
            (self.fab.outputs).retain_consuming(|&g| inq[g as usize].aop == CONSUME);
        }
        movers.clear();
        consumers.clear();
        self.links.wh_movers = movers;
        self.links.wh_consumers = consumers;
    }

    /// Whether output VC `go`'s packet has a phit at hand in its input
    /// queue (the head packet's phits present: all of the queue when it is
    /// still arriving, since nothing follows it then) and room for it in
    /// the next queue.
    pub(super) fn can_move(&self, go: usize) -> bool {
        let OutVc { dst, sip, .. } = *self.fab.outputs.out(go);
        let r = go / self.fab.shape.n_tr;
        let src = r * self.fab.shape.n_in + sip as usize;
        let avail = (self.fab.shape.plen - self.sent(go)).min(self.occ(src));
        avail > 0 && self.occ(dst as usize) < self.fab.shape.cap
    }

    /// Moves the starts of the transfers that stalled this cycle.
    pub(super) fn settle_stalls(&mut self) {
        let mut stalled = std::mem::take(&mut self.links.wh_stalled);
        for &go in &stalled {
            let start = self.fab.outputs.out(go as usize).start + 1;
            self.set_start(go as usize, start);
        }
        stalled.clear();
        self.links.wh_stalled = stalled;
    }
}
