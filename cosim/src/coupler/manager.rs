//! The traffic manager (Simics paper, section 5): frames to packets and
//! back, the frames in flight and those due at their nodes, and the feeds
//! that hand them to the engine.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;

use fsin::drive::Feed;
use fsin::engine::{Delivered, NewPacket};
use fsin::network::Network;
use fsin::stats::detail::Detail;
use fsin_frames::pcap::{Capture, PcapError};
use fsin_frames::{FrameError, MacTable, Reassembly, Route};
use rand::Rng;
use rand_pcg::Pcg64Mcg;

use super::slice::{FrameStats, InFrame, OutFrame, Slice};

/// A frame in the network: where it goes and what it carries.
#[derive(Debug)]
pub(super) struct Flight {
    pub(super) src: u32,
    pub(super) dst: u32,
    pub(super) sent: u64,
    pub(super) injected: u64,
    /// Its place among the frames its source sent its destination in the
    /// measured phase, from 0.
    pub(super) seq: u64,
    pub(super) data: Vec<u8>,
}

/// A frame whose last packet arrived before an earlier frame of its pair
/// had: what it needs to be due once they have (`frame_order=pair`).
#[derive(Debug)]
pub(super) struct Held {
    net_latency: u64,
    sent: u64,
    data: Vec<u8>,
}

/// The order of one source's frames to one destination.
#[derive(Debug, Default)]
pub(super) struct PairOrder {
    /// Frames sent so far (the next one's sequence number).
    sent: u64,
    /// The sequence number of the next frame to reach the NIC.
    next: u64,
    /// Frames that arrived before `next`, by sequence number: held
    /// (`frame_order=pair`) or already due (`None`, `frame_order=network`).
    ahead: BTreeMap<u64, Option<Held>>,
}

/// A reassembled frame waiting for the slice in which it reaches its node.
#[derive(Debug)]
pub(super) struct Due {
    pub(super) node_cycle: u64,
    /// Network cycles it took; `None` if it skipped the network (warm-up),
    /// which keeps it out of the statistics.
    pub(super) net_latency: Option<u64>,
    pub(super) order: u64,
    pub(super) frame: OutFrame,
}

/// The traffic manager (Simics paper, section 5): frames to packets and
/// back, the frames in flight and those due at their nodes, per-node queues
/// and statistics.
pub(super) struct Manager {
    pub(super) table: MacTable,
    pub(super) flights: Reassembly<Flight>,
    pub(super) due: Vec<Due>,
    pub(super) order: u64,
    /// `frame_order=pair`: a pair's frames reach the NIC in the order sent.
    pub(super) in_order: bool,
    /// Each (source, destination) pair's frames of the measured phase.
    pub(super) pairs: HashMap<(u32, u32), PairOrder>,
    /// Frames held for an earlier one of their pair.
    pub(super) held: usize,
    pub(super) lost: Vec<bool>,
    pub(super) nic_latency: u64,
    /// Bytes of frames each node has in the network or held at their
    /// destination's NIC (sent, not yet due there), and the most it may
    /// have (`nic_queue_bytes`).
    pub(super) backlog: Vec<u64>,
    pub(super) nic_queue_bytes: u64,
    /// `frame_loss` and the generator that draws which frames it loses
    /// (seeded with `rseed`; one draw per frame, in the order frames
    /// reach the network).
    pub(super) loss: Option<(f64, Pcg64Mcg)>,
    pub(super) plength: u32,
    pub(super) phit_bytes: u32,
    pub(super) measuring: bool,
    pub(super) stats: FrameStats,
    pub(super) capture: Option<Capture<BufWriter<File>>>,
    pub(super) capture_error: Option<PcapError>,
    /// The slice being (or last) simulated.
    pub(super) last: Option<Slice>,
    /// Every packet handed to the network, in order, when asked for
    /// ([`Coupler::record_injections`]).
    pub(super) injections: Option<Vec<Injection>>,
    /// The network node of each node simulator (`placement`).
    pub(super) place: Vec<u32>,
}

/// A packet handed to the network: its network cycle, source and
/// destination network node.
#[derive(Debug, Clone, Copy)]
pub(super) struct Injection {
    pub(super) cycle: u64,
    pub(super) src: u32,
    pub(super) dst: u32,
}

impl Manager {
    /// Counts a frame of `node` dropped for its full queue.
    pub(super) fn count_dropped(&mut self, node: u32) {
        if self.measuring {
            self.stats.dropped += 1;
            self.stats.per_node[node as usize].frames_dropped += 1;
        }
    }

    /// Hands `frame` to the network at network cycle `now`.
    pub(super) fn send(&mut self, f: InFrame, now: u64, net: &mut Network) {
        if f.node as usize >= net.nodes() {
            self.stats.rejected += 1;
            return;
        }
        if let Some(cap) = self.capture.as_mut() {
            if let Err(e) = cap.record(f.node_cycle, &f.data) {
                self.capture_error.get_or_insert(e);
                self.capture = None;
            }
        }
        let sender = &mut self.stats.per_node[f.node as usize];
        let route = match fsin_frames::route(&self.table, &f.data) {
            Ok(r) => r,
            Err(e) => {
                // route refuses frames for their size only.
                match e {
                    FrameError::TooShort(_) => sender.conduct.short += 1,
                    _ => sender.conduct.oversized += 1,
                }
                self.stats.rejected += 1;
                return;
            }
        };
        sender.frames_sent += 1;
        sender.bytes_sent += f.data.len() as u64;
        if self
            .table
            .mac(f.node)
            .is_some_and(|own| f.data[6..12] != own)
        {
            sender.conduct.foreign_source += 1;
        }
        match route {
            Route::Unknown => {
                sender.conduct.unknown_destination += 1;
                self.stats.unknown_mac += 1;
            }
            Route::Unicast(dst) if dst == f.node => {
                // A frame to oneself never reaches the wire.
                sender.conduct.unknown_destination += 1;
                self.stats.unknown_mac += 1;
            }
            Route::Unicast(dst) => self.send_to(&f, dst, now, net),
            Route::AllOthers => {
                sender.conduct.broadcast += 1;
                let attached = |d: u32| d != f.node && self.table.mac(d).is_some();
                let dsts: Vec<u32> = (0..net.nodes() as u32).filter(|&d| attached(d)).collect();
                for dst in dsts {
                    self.send_to(&f, dst, now, net);
                }
            }
        }
    }

    pub(super) fn send_to(&mut self, f: &InFrame, dst: u32, now: u64, net: &mut Network) {
        if dst as usize >= net.nodes() {
            self.stats.unknown_mac += 1;
            return;
        }
        if self.lost[dst as usize] {
            self.stats.to_lost_nodes += 1;
            return;
        }
        if !self.measuring {
            self.stats.bypassed += 1;
            self.push_due(
                dst,
                self.last_slice_node_of(now),
                None,
                (f.node, f.node_cycle),
                f.data.clone(),
            );
            return;
        }
        let bytes = f.data.len() as u64;
        if self.backlog[f.node as usize] + bytes > self.nic_queue_bytes {
            self.count_dropped(f.node);
            return;
        }
        if let Some((p, rng)) = self.loss.as_mut() {
            if rng.gen::<f64>() < *p {
                self.stats.lost += 1;
                return;
            }
        }
        self.backlog[f.node as usize] += bytes;
        let pair = self.pairs.entry((f.node, dst)).or_default();
        let seq = pair.sent;
        pair.sent += 1;
        let packets = fsin_frames::packets_for_frame(f.data.len(), self.plength, self.phit_bytes)
            .expect(
            "send's route checked the size, and the config's plength and phit_bytes are at least 1",
        );
        let id = self.flights.begin(
            packets,
            Flight {
                src: f.node,
                dst,
                sent: f.node_cycle,
                injected: now,
                seq,
                data: f.data.clone(),
            },
        );
        let (src, dst) = (self.place[f.node as usize], self.place[dst as usize]);
        if let Some(log) = self.injections.as_mut() {
            log.extend((0..packets).map(|_| Injection {
                cycle: now,
                src,
                dst,
            }));
        }
        for _ in 0..packets {
            net.inject(NewPacket { src, dst, tag: id }).expect(
                "send checked the source, send_to the destination, and send that they differ",
            );
        }
    }

    /// Node cycle of network cycle `t` on the ratio of the slice running.
    pub(super) fn last_slice_node_of(&self, t: u64) -> u64 {
        self.last.map_or(0, |s| s.node_of(t))
    }

    /// Frame `data` from node `src`, sent at node cycle `sent`, reaches
    /// node `node` at node cycle `node_cycle` after `net` network cycles.
    pub(super) fn push_due(
        &mut self,
        node: u32,
        node_cycle: u64,
        net: Option<u64>,
        (src, sent): (u32, u64),
        data: Vec<u8>,
    ) {
        self.order += 1;
        self.due.push(Due {
            node_cycle,
            net_latency: net,
            order: self.order,
            frame: OutFrame {
                node,
                node_cycle,
                src,
                sent,
                data,
            },
        });
    }

    /// The last packet of a frame arrived (`d`): the frame is due at its
    /// node `nic_latency` network cycles later, or, with
    /// `frame_order=pair`, once every earlier frame of its pair is (a
    /// frame that arrived before one of them is counted in `reordered`
    /// either way).
    pub(super) fn arrived(&mut self, d: &Delivered) {
        let Some(fl) = self.flights.arrived(d.tag) else {
            return;
        };
        if self.lost[fl.dst as usize] {
            self.backlog[fl.src as usize] -= fl.data.len() as u64;
            self.stats.to_lost_nodes += 1;
            return;
        }
        let at = self.last_slice_node_of(d.t_done + self.nic_latency);
        let net_latency = d.t_done - fl.injected;
        let key = (fl.src, fl.dst);
        let pair = self.pairs.entry(key).or_default();
        if fl.seq != pair.next {
            self.stats.reordered += 1;
            if self.in_order {
                let held = Held {
                    net_latency,
                    sent: fl.sent,
                    data: fl.data,
                };
                pair.ahead.insert(fl.seq, Some(held));
                self.held += 1;
                return;
            }
            pair.ahead.insert(fl.seq, None);
        }
        let first = fl.seq == pair.next;
        self.backlog[fl.src as usize] -= fl.data.len() as u64;
        self.push_due(fl.dst, at, Some(net_latency), (fl.src, fl.sent), fl.data);
        if first {
            self.release(key, at);
        }
    }

    /// The frame `pair.next` of `key` is due at node cycle `at`: so are
    /// the frames of the pair held for it, in order, up to the next that
    /// has not arrived.
    fn release(&mut self, key: (u32, u32), at: u64) {
        loop {
            let pair = self
                .pairs
                .get_mut(&key)
                .expect("a frame of the pair arrived");
            pair.next += 1;
            match pair.ahead.remove(&pair.next) {
                None => return,
                Some(None) => {}
                Some(Some(h)) => {
                    self.held -= 1;
                    self.backlog[key.0 as usize] -= h.data.len() as u64;
                    self.push_due(key.1, at, Some(h.net_latency), (key.0, h.sent), h.data);
                }
            }
        }
    }

    /// Node `node` left the run: the frames held for it go with it.
    pub(super) fn forget_pairs_to(&mut self, node: u32) {
        self.pairs.retain(|&(src, dst), pair| {
            if dst == node {
                for h in pair.ahead.values().flatten() {
                    self.held -= 1;
                    self.backlog[src as usize] -= h.data.len() as u64;
                }
            }
            dst != node
        });
    }
}

/// The frames of one slice as a [`Feed`]: each enters the network at the
/// network cycle of its stamp (moved `shift` node cycles later, capped at
/// the slice's last cycle).
pub(super) struct SliceFeed<'a> {
    pub(super) tm: &'a mut Manager,
    pub(super) frames: &'a mut [InFrame],
    pub(super) next: usize,
    pub(super) slice: Slice,
    pub(super) shift: u64,
}

impl SliceFeed<'_> {
    pub(super) fn due_at(&self, f: &InFrame) -> u64 {
        let end = self.slice.net_start + self.slice.net_cycles;
        self.slice.net_of(f.node_cycle + self.shift).min(end - 1)
    }
}

impl Feed for SliceFeed<'_> {
    /// Returns false: whatever the frames became is in the network.
    fn inject_due(&mut self, now: u64, net: &mut Network, _detail: Option<&mut Detail>) -> bool {
        while self.next < self.frames.len() && self.due_at(&self.frames[self.next]) <= now {
            let f = std::mem::take(&mut self.frames[self.next]);
            self.tm.send(f, now, net);
            self.next += 1;
        }
        false
    }

    fn next_due(&self, _now: u64) -> Option<u64> {
        self.frames.get(self.next).map(|f| self.due_at(f))
    }

    fn delivered(&mut self, packet: &Delivered) {
        self.tm.arrived(packet);
    }
}

/// The packets a run handed to its network, again at their cycles
/// ([`Coupler::engine_alone`]).
pub(super) struct LoggedPackets<'a> {
    pub(super) log: &'a [Injection],
    pub(super) next: usize,
}

impl Feed for LoggedPackets<'_> {
    fn inject_due(&mut self, now: u64, net: &mut Network, _detail: Option<&mut Detail>) -> bool {
        while let Some(p) = self.log.get(self.next).filter(|p| p.cycle <= now) {
            net.inject(NewPacket {
                src: p.src,
                dst: p.dst,
                tag: 0,
            })
            .expect("the run injected it into the same network");
            self.next += 1;
        }
        false
    }

    fn next_due(&self, _now: u64) -> Option<u64> {
        self.log.get(self.next).map(|p| p.cycle)
    }

    fn delivered(&mut self, _packet: &Delivered) {}
}
