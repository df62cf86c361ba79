//! `--trace-out`: the measured phase's frames of a lock-step run as a
//! frame trace (FSIN `.trc` with `#fsin frames`, or Dimemas), which `fsin
//! run tracefile=` replays on any network (docs/model.md, "Traces out of
//! live runs"; the Simics paper's Fig. 4 sets such a trace-driven
//! prediction beside the full-system result).
//!
//! The recorder sees what nic-bridge carries: every frame a guest sends
//! (its node cycle), every frame the server delivers (its node cycle and
//! receiver), and the plugins' word on which deliveries ended an idle time
//! (`FromPlugin::Woke`). A delivery is paired with the earliest frame of
//! the same bytes not yet delivered to that guest; the pair becomes an `s`
//! event of its sender and an `r` event of its receiver with one tag. Each
//! guest's time between consecutive events becomes a `c` event, less the
//! idle time that a delivery ended: that part is a wait for the frame,
//! which the replay spends waiting instead.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use fsin_frames::is_magic;
use fsin_trace::{Event, Trace, TraceFormat};
use serde::{Deserialize, Serialize};

/// Where and how to write the trace (`fsin qemu --trace-out FILE
/// --trace-format F`).
#[derive(Debug, Clone)]
pub struct TraceOut {
    /// The trace file to write.
    pub path: PathBuf,
    /// `.trc` (a frame trace in node cycles) or Dimemas (CPU bursts in
    /// network cycles, converted with `net_per_node`).
    pub format: TraceFormat,
    /// Network cycles per node cycle of the run (its slice ratio).
    pub net_per_node: f64,
    /// Comment lines for the head of a `.trc` (how to replay it).
    pub comment: String,
}

/// What `--trace-out` wrote (`trace` in the report).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TraceOutcome {
    /// The trace file.
    pub path: PathBuf,
    /// Frames paired: each is one `s` and one `r` event.
    pub frames: u64,
    /// `s` events (frames sent), over all guests.
    pub sends: u64,
    /// `r` events (frames received), over all guests.
    pub receives: u64,
    /// `c` events (a guest's time between two events, less its waits for
    /// frames), over all guests.
    pub computations: u64,
    /// Node cycles the replay spends waiting for frames instead of
    /// computing, over all guests (idle time that a delivery ended).
    pub wait_cycles: u64,
    /// Measured-phase deliveries with no frame of the same bytes sent in
    /// the measured phase (sent before it, or forged).
    pub unpaired: u64,
    /// Node cycle at which the trace starts (the measured phase).
    pub start_cycle: u64,
    /// Each guest's last event, node cycles after `start_cycle`: what a
    /// replay on the same network gives back (self-consistency).
    pub last_event_cycles: Vec<u64>,
}

/// A frame sent and not yet delivered to every guest it goes to.
struct Sent {
    /// Its place among its sender's frames, from 1 (co-simulation injects
    /// a node's frames of one cycle in this order, a broadcast's copies
    /// by destination): the same whatever order the bridge met the
    /// guests' frames in.
    seq: u64,
    src: u32,
    cycle: u64,
    bytes: u64,
    /// Sent in the measured phase (else it is paired only to be dropped).
    measured: bool,
    /// Broadcast or multicast: delivered to several guests.
    group: bool,
    /// Guests it has reached.
    reached: Vec<u32>,
}

/// The frames sent and not yet delivered everywhere, to pair each
/// delivery with its send: the earliest frame of the same bytes not yet
/// delivered to that guest (shared by the frame trace and the timeline).
pub(super) struct Pairing {
    guests: usize,
    sent: HashMap<(u64, usize), VecDeque<Sent>>,
    /// Frames sent so far, per guest.
    sends: Vec<u64>,
}

/// A delivery paired with its frame's send.
pub(super) struct Paired {
    pub(super) src: u32,
    /// Node cycle it was sent in.
    pub(super) sent_at: u64,
    pub(super) bytes: u64,
    /// Sent in the measured phase.
    pub(super) measured: bool,
    /// Its place among its sender's frames, from 1.
    pub(super) seq: u64,
}

impl Pairing {
    pub(super) fn new(guests: usize) -> Pairing {
        Pairing {
            guests,
            sent: HashMap::new(),
            sends: Vec::new(),
        }
    }

    /// Guest `i` sent `frame` in node cycle `cycle` (in the measured phase
    /// or not).
    pub(super) fn sent(&mut self, i: usize, cycle: u64, frame: &[u8], measured: bool) {
        if is_magic(frame) {
            return;
        }
        if self.sends.len() <= i {
            self.sends.resize(i + 1, 0);
        }
        self.sends[i] += 1;
        self.sent.entry(digest(frame)).or_default().push_back(Sent {
            seq: self.sends[i],
            src: i as u32,
            cycle,
            bytes: frame.len() as u64,
            measured,
            group: frame.first().is_some_and(|b| b & 1 == 1),
            reached: Vec::new(),
        });
    }

    /// `frame` reached guest `dst`: its send, if one is known.
    pub(super) fn delivered(&mut self, dst: usize, frame: &[u8]) -> Option<Paired> {
        let key = digest(frame);
        let to = dst as u32;
        let queue = self.sent.get_mut(&key)?;
        let k = queue
            .iter()
            .position(|s| s.src != to && !s.reached.contains(&to))?;
        let s = &mut queue[k];
        s.reached.push(to);
        let paired = Paired {
            src: s.src,
            sent_at: s.cycle,
            bytes: s.bytes,
            measured: s.measured,
            seq: s.seq,
        };
        if !s.group || s.reached.len() + 1 >= self.guests {
            queue.remove(k);
            if queue.is_empty() {
                self.sent.remove(&key);
            }
        }
        Some(paired)
    }
}

/// One guest's event at a node cycle, with its order among the events of
/// that cycle of its kind (a send's frame and destination, a receive's
/// tag).
#[derive(Clone, Copy)]
struct Timed {
    cycle: u64,
    order: (u64, u32),
    event: Event,
}

/// The recorder of one run ([`TraceOut`]); nic-bridge hands it every frame
/// and wake-up, and [`Recorder::finish`] writes the trace.
pub(super) struct Recorder {
    out: TraceOut,
    guests: usize,
    start: Option<u64>,
    pairs: Pairing,
    events: Vec<Vec<Timed>>,
    /// Per guest: (delivery cycle, first idle cycle) of each wake-up.
    wakes: Vec<Vec<(u64, u64)>>,
    tag: u32,
    unpaired: u64,
}

fn digest(frame: &[u8]) -> (u64, usize) {
    let mut h = DefaultHasher::new();
    frame.hash(&mut h);
    (h.finish(), frame.len())
}

impl Recorder {
    /// A recorder for `guests` guests writing to `out`.
    ///
    /// # Errors
    /// The file cannot be created (checked before any guest starts).
    pub(super) fn new(out: TraceOut, guests: usize) -> std::io::Result<Recorder> {
        std::fs::File::create(&out.path)?;
        Ok(Recorder {
            out,
            guests,
            start: None,
            pairs: Pairing::new(guests),
            events: vec![Vec::new(); guests],
            wakes: vec![Vec::new(); guests],
            tag: 0,
            unpaired: 0,
        })
    }

    /// The file it writes.
    pub(super) fn path(&self) -> &std::path::Path {
        &self.out.path
    }

    /// The measured phase starts at node cycle `cycle`.
    pub(super) fn start_at(&mut self, cycle: u64) {
        self.start.get_or_insert(cycle);
    }

    /// Guest `i` sent `frame` in node cycle `cycle`.
    pub(super) fn sent(&mut self, i: usize, cycle: u64, frame: &[u8]) {
        let measured = self.start.is_some_and(|s| cycle >= s);
        self.pairs.sent(i, cycle, frame, measured);
    }

    /// `frame` reached guest `dst` in node cycle `cycle`.
    pub(super) fn delivered(&mut self, dst: usize, cycle: u64, frame: &[u8]) {
        let to = dst as u32;
        let Some(Paired {
            src,
            sent_at,
            bytes,
            measured,
            seq,
        }) = self.pairs.delivered(dst, frame)
        else {
            self.unpaired += u64::from(self.start.is_some_and(|s| cycle >= s));
            return;
        };
        if !measured {
            return;
        }
        let tag = self.tag;
        self.tag = self.tag.saturating_add(1);
        self.events[src as usize].push(Timed {
            cycle: sent_at,
            order: (seq, to),
            event: Event::Send {
                dst: to,
                tag,
                bytes,
            },
        });
        self.events[dst].push(Timed {
            cycle,
            order: (u64::from(tag), 0),
            event: Event::Recv { src, tag, bytes },
        });
    }

    /// The frames delivered to guest `i` in node cycle `cycle` found it
    /// idle since node cycle `idle_from`.
    pub(super) fn woke(&mut self, i: usize, cycle: u64, idle_from: u64) {
        if self.start.is_some_and(|s| cycle >= s) {
            self.wakes[i].push((cycle, idle_from.min(cycle)));
        }
    }

    /// Writes the trace and says what it holds.
    ///
    /// # Errors
    /// The file cannot be written.
    pub(super) fn finish(self) -> std::io::Result<TraceOutcome> {
        let start = self.start.unwrap_or(0);
        let mut out = TraceOutcome {
            path: self.out.path.clone(),
            unpaired: self.unpaired,
            start_cycle: start,
            ..TraceOutcome::default()
        };
        let mut trace = Trace::new(
            &format!("fsin qemu --trace-out, {} guests", self.guests),
            self.guests,
        );
        trace.frames = true;
        for (i, (mut events, wakes)) in self.events.into_iter().zip(self.wakes).enumerate() {
            // Receives before sends of the same cycle: a guest may answer
            // a frame in the cycle it arrives, never before. Sends in the
            // order the guest sent them.
            events.sort_by_key(|t| (t.cycle, matches!(t.event, Event::Send { .. }), t.order));
            let mut wakes = wakes.into_iter().peekable();
            let mut prev = start;
            for t in events {
                let mut busy_until = t.cycle;
                if let Event::Recv { .. } = t.event {
                    while wakes.next_if(|w| w.0 < t.cycle).is_some() {}
                    if let Some((_, from)) = wakes.next_if(|w| w.0 == t.cycle) {
                        busy_until = from.max(prev);
                        out.wait_cycles += t.cycle - busy_until;
                    }
                }
                if busy_until > prev {
                    trace.push(
                        i as u32,
                        Event::Cpu {
                            amount: busy_until - prev,
                        },
                        0,
                    );
                    out.computations += 1;
                }
                match t.event {
                    Event::Send { .. } => out.sends += 1,
                    Event::Recv { .. } => out.receives += 1,
                    Event::Cpu { .. } => {}
                }
                trace.push(i as u32, t.event, 0);
                prev = t.cycle;
            }
            out.last_event_cycles.push(prev - start);
        }
        out.frames = out.sends;
        let text = match self.out.format {
            TraceFormat::Trc => format!("{}{}", self.out.comment, trace.write(TraceFormat::Trc)),
            other => {
                let r = self.out.net_per_node;
                for task in &mut trace.tasks {
                    for e in task {
                        if let Event::Cpu { amount } = e {
                            *amount = (*amount as f64 * r).round() as u64;
                        }
                    }
                }
                trace.frames = false;
                trace.write(other)
            }
        };
        std::fs::write(&self.out.path, text)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dst: u8, src: u8, body: u8, len: usize) -> Vec<u8> {
        let mut f = vec![body; len];
        f[..6].copy_from_slice(&[dst; 6]);
        f[6..12].copy_from_slice(&[src; 6]);
        f
    }

    fn recorder(path: &std::path::Path, guests: usize) -> Recorder {
        Recorder::new(
            TraceOut {
                path: path.to_path_buf(),
                format: TraceFormat::Trc,
                net_per_node: 0.02,
                comment: "# test\n".into(),
            },
            guests,
        )
        .unwrap()
    }

    /// A frame's number is its place among its sender's frames: two
    /// guests' frames of one slice, met by the bridge in either order,
    /// pair with the same numbers (guest 0's 1 and 2, guest 1's 1).
    #[test]
    fn a_frames_number_does_not_depend_on_the_order_the_guests_are_met_in() {
        let (a1, a2, b1) = (frame(2, 1, 1, 60), frame(2, 1, 2, 60), frame(1, 2, 3, 60));
        let numbers = |first_b: bool| {
            let mut p = Pairing::new(2);
            if first_b {
                p.sent(1, 100, &b1, true);
            }
            p.sent(0, 100, &a1, true);
            p.sent(0, 100, &a2, true);
            if !first_b {
                p.sent(1, 100, &b1, true);
            }
            [(1, &a1), (1, &a2), (0, &b1)].map(|(dst, f)| {
                let got = p.delivered(dst, f).unwrap();
                (got.src, got.seq)
            })
        };
        assert_eq!(numbers(false), [(0, 1), (0, 2), (1, 1)]);
        assert_eq!(numbers(true), [(0, 1), (0, 2), (1, 1)]);
    }

    /// Hand-computed: guest 0 sends at 1,100 (100 after the start at
    /// 1,000), guest 1 idles from 1,050 and is woken by it at 1,400 (a
    /// wait of 350), answers at 1,450; guest 0 is busy when the answer
    /// arrives at 1,800. A frame sent before the start is dropped; a
    /// broadcast pairs once per other guest.
    #[test]
    fn pairs_frames_and_splits_time_into_computation_and_waits() {
        let path = std::env::temp_dir().join(format!("fsin-trace-out-{}.trc", std::process::id()));
        let mut r = recorder(&path, 3);
        let early = frame(2, 1, 9, 60);
        r.sent(0, 900, &early);
        r.start_at(1_000);
        let ping = frame(2, 1, 1, 98);
        let pong = frame(1, 2, 2, 98);
        let bcast = frame(0xff, 3, 3, 60);
        r.sent(0, 1_100, &ping);
        r.delivered(1, 1_005, &early);
        r.delivered(1, 1_400, &ping);
        r.woke(1, 1_400, 1_050);
        r.sent(1, 1_450, &pong);
        r.sent(2, 1_500, &bcast);
        r.delivered(0, 1_800, &pong);
        r.delivered(0, 1_900, &bcast);
        r.delivered(1, 1_900, &bcast);
        let out = r.finish().unwrap();
        assert_eq!(out.start_cycle, 1_000);
        assert_eq!((out.frames, out.sends, out.receives), (4, 4, 4));
        assert_eq!(out.unpaired, 0);
        assert_eq!(out.wait_cycles, 350);
        assert_eq!(out.last_event_cycles, [900, 900, 500]);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(text.starts_with("# test\n"), "{text}");
        let t = fsin_trace::parse_str(&text, "t").unwrap();
        assert!(t.frames);
        let s = |dst, tag, bytes| Event::Send { dst, tag, bytes };
        let r = |src, tag, bytes| Event::Recv { src, tag, bytes };
        let c = |amount| Event::Cpu { amount };
        assert_eq!(
            t.tasks[0],
            [
                c(100),
                s(1, 0, 98),
                c(700),
                r(1, 1, 98),
                c(100),
                r(2, 2, 60)
            ]
        );
        assert_eq!(
            t.tasks[1],
            [c(50), r(0, 0, 98), c(50), s(0, 1, 98), c(450), r(2, 3, 60)]
        );
        assert_eq!(t.tasks[2], [c(500), s(0, 2, 60), s(1, 3, 60)]);
    }
}
