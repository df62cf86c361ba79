//! The guests' TCP timers in a replay of a lowered MPI-level trace
//! ([`fsin_trace::TcpTimers`]): per connection, Linux's tail-loss probe
//! (RFC 8985, section 7: a sender whose last frames go unacknowledged
//! for twice its smoothed round trip plus 2 jiffies sends the last one
//! again) and delayed acknowledgement (`TCP_DELACK_MIN`). Every frame of
//! a connection acknowledges what its sender has received from the other
//! side, as TCP's cumulative acknowledgement does; frames are counted,
//! not bytes. Times are network cycles.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// One direction of a connection: what its sender has sent and its
/// receiver has received.
#[derive(Debug, Default)]
struct Flow {
    /// Frames of data sent that the receiver has acknowledged.
    acked: u32,
    /// The cycle each frame after `acked` was sent, oldest first.
    unacked: VecDeque<u64>,
    /// Bytes of the last frame of data sent (what a probe sends again).
    last_bytes: u64,
    /// The smoothed round trip (RFC 6298), cycles; 0: no sample yet.
    srtt: f64,
    /// Whether a probe has gone and its acknowledgement has not come.
    probing: bool,
    /// The armed probe's generation (a timer of another is stale).
    probe_gen: u32,
    /// Frames of data the receiver has received.
    delivered: u32,
    /// Whether the receiver holds a delayed acknowledgement's timer.
    delack: bool,
    /// The armed delayed acknowledgement's generation.
    delack_gen: u32,
}

impl Flow {
    /// Arms the probe at `now` if 2 or more frames are unacknowledged
    /// (Linux's timeout for a single one, `TCP_RTO_MIN` more, is the
    /// retransmission timeout's, which this model leaves out); returns
    /// its cycle, or disarms it.
    fn arm_probe(&mut self, now: u64, least: u64) -> Option<u64> {
        self.probe_gen = self.probe_gen.wrapping_add(1);
        if least == 0 || self.probing || self.unacked.len() < 2 {
            return None;
        }
        Some(now + (2.0 * self.srtt).round() as u64 + least)
    }
}

/// What a timer makes a node's kernel send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fire {
    /// The tail-loss probe: agent `from`'s last frame to `to` again,
    /// `bytes`.
    Probe { from: u32, to: u32, bytes: u64 },
    /// A delayed acknowledgement from agent `from` to `to`.
    Ack { from: u32, to: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Probe,
    DelayedAck,
}

/// A timer: (cycle, order armed, kind, sender, receiver, generation).
type Timer = (u64, u64, Kind, u32, u32, u32);

/// The TCP timers of every connection of a replay.
#[derive(Debug, Default)]
pub(super) struct Tcp {
    /// Each direction of each connection, (sending agent, receiving
    /// agent).
    flows: HashMap<(u32, u32), Flow>,
    timers: BinaryHeap<Reverse<Timer>>,
    armed: u64,
}

impl Tcp {
    fn arm(&mut self, at: u64, kind: Kind, from: u32, to: u32, generation: u32) {
        self.armed += 1;
        self.timers
            .push(Reverse((at, self.armed, kind, from, to, generation)));
    }

    /// Agent `from` sends a frame to `to` in cycle `now` (`data`: one of
    /// the connection's data, `bytes` long, not an acknowledgement or a
    /// probe); `least` is the probe's least timeout, cycles. Returns the
    /// frames of `to`'s data it acknowledges (all `from` has received).
    pub(super) fn sent(
        &mut self,
        from: u32,
        to: u32,
        data: Option<u64>,
        now: u64,
        least: u64,
    ) -> u32 {
        let back = self.flows.entry((to, from)).or_default();
        let acks = back.delivered;
        back.delack = false;
        back.delack_gen = back.delack_gen.wrapping_add(1);
        if let Some(bytes) = data {
            let f = self.flows.entry((from, to)).or_default();
            f.unacked.push_back(now);
            f.last_bytes = bytes;
            if let Some(at) = f.arm_probe(now, least) {
                let g = f.probe_gen;
                self.arm(at, Kind::Probe, from, to, g);
            }
        }
        acks
    }

    /// A frame from agent `from` that acknowledges `acks` frames of
    /// `to`'s data reaches `to` in cycle `now` (`data`: one of the
    /// connection's data); `least` is the probe's least timeout and
    /// `delack` the delayed acknowledgement's, cycles (0: none).
    pub(super) fn delivered(
        &mut self,
        (from, to): (u32, u32),
        data: bool,
        acks: u32,
        now: u64,
        (least, delack): (u64, u64),
    ) {
        let back = self.flows.entry((to, from)).or_default();
        if acks > back.acked {
            let newly = (acks - back.acked) as usize;
            if let Some(&oldest) = back.unacked.front() {
                let rtt = now.saturating_sub(oldest) as f64;
                back.srtt = if back.srtt == 0.0 {
                    rtt
                } else {
                    back.srtt + (rtt - back.srtt) / 8.0
                };
            }
            back.unacked.drain(..newly.min(back.unacked.len()));
            back.acked = acks;
            back.probing = false;
            if let Some(at) = back.arm_probe(now, least) {
                let g = back.probe_gen;
                self.arm(at, Kind::Probe, to, from, g);
            }
        }
        if data {
            let f = self.flows.entry((from, to)).or_default();
            f.delivered += 1;
            if delack > 0 && !f.delack {
                f.delack = true;
                f.delack_gen = f.delack_gen.wrapping_add(1);
                let g = f.delack_gen;
                self.arm(now + delack, Kind::DelayedAck, from, to, g);
            }
        }
    }

    /// The cycle of the next timer (`None`: none is armed).
    pub(super) fn next(&self) -> Option<u64> {
        self.timers.peek().map(|Reverse(t)| t.0)
    }

    /// The next timer due by cycle `now` that has not been disarmed,
    /// and what it sends.
    pub(super) fn fire(&mut self, now: u64) -> Option<Fire> {
        while let Some(&Reverse((at, _, kind, from, to, g))) = self.timers.peek() {
            if at > now {
                return None;
            }
            self.timers.pop();
            let Some(f) = self.flows.get_mut(&(from, to)) else {
                continue;
            };
            // A timer is live while its generation is the flow's: every
            // frame sent or acknowledged since arming has moved it.
            match kind {
                Kind::Probe if f.probe_gen == g => {
                    f.probing = true;
                    let bytes = f.last_bytes;
                    return Some(Fire::Probe { from, to, bytes });
                }
                Kind::DelayedAck if f.delack_gen == g => {
                    f.delack = false;
                    // The receiver acknowledges the sender's frames.
                    return Some(Fire::Ack { from: to, to: from });
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two frames from 0 to 1 at cycles 10 and 20, no round trip known:
    /// the probe is due 100 cycles (its least timeout) after the second;
    /// an acknowledgement of both at 60 disarms it and gives a round
    /// trip of 50 (from the oldest frame it acknowledges); two more
    /// frames at 70 and 80 put the probe at 80 + 2 x 50 + 100 = 280.
    #[test]
    fn a_probe_waits_twice_the_round_trip_plus_its_least_timeout() {
        let mut t = Tcp::default();
        assert_eq!(t.sent(0, 1, Some(1514), 10, 100), 0);
        assert_eq!(t.next(), None, "one frame out: no probe");
        t.sent(0, 1, Some(300), 20, 100);
        assert_eq!(t.next(), Some(120));
        assert_eq!(t.fire(119), None);
        // Each of 1's frames to 0 acknowledges 0's frames it has.
        t.delivered((0, 1), true, 0, 30, (100, 0));
        t.delivered((0, 1), true, 0, 40, (100, 0));
        assert_eq!(t.sent(1, 0, None, 45, 100), 2);
        t.delivered((1, 0), false, 2, 60, (100, 0));
        assert_eq!(t.fire(200), None, "acknowledged: disarmed");
        t.sent(0, 1, Some(1514), 70, 100);
        t.sent(0, 1, Some(700), 80, 100);
        assert_eq!(t.fire(279), None);
        assert_eq!(
            t.fire(280),
            Some(Fire::Probe {
                from: 0,
                to: 1,
                bytes: 700
            })
        );
        // One probe until an acknowledgement comes.
        t.sent(0, 1, Some(700), 290, 100);
        assert_eq!(t.fire(10_000), None);
    }

    /// A frame of data held by its receiver: the delayed
    /// acknowledgement goes `delack` cycles after it, unless a frame
    /// back carries the acknowledgement first.
    #[test]
    fn an_acknowledgement_no_frame_carried_goes_after_the_delay() {
        let mut t = Tcp::default();
        t.sent(0, 1, Some(100), 0, 0);
        t.delivered((0, 1), true, 0, 10, (0, 40));
        t.sent(0, 1, Some(100), 20, 0);
        t.delivered((0, 1), true, 0, 30, (0, 40));
        assert_eq!(t.fire(49), None);
        assert_eq!(t.fire(50), Some(Fire::Ack { from: 1, to: 0 }));
        // A frame back before the delay carries it: nothing is due.
        t.sent(0, 1, Some(100), 60, 0);
        t.delivered((0, 1), true, 0, 70, (0, 40));
        assert_eq!(t.sent(1, 0, Some(100), 80, 0), 3);
        assert_eq!(t.fire(1_000), None);
    }
}
