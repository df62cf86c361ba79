//! The synchronous heart of co-simulation: the network engine plus the
//! traffic manager (Simics paper, section 5), run one slice at a time.
//!
//! The server hands [`Coupler::run_slice`] the frames the nodes sent during
//! a slice, stamped in node cycles; the coupler maps each stamp to a network
//! cycle, segments the frame into packets at that cycle, simulates the
//! slice's network cycles (skipping idle stretches without stepping), and
//! reassembles frames whose last packet arrived. [`Coupler::take_deliveries`]
//! then gives every frame due before the end of the next slice, with the
//! node cycle at which it reaches its NIC: the network cycle of its last
//! phit plus `nic_latency`, mapped back to node cycles, and never earlier
//! than the start of the slice the nodes run next (the false delay of
//! lock-step, Simics paper section 4; zero in exact mode).
//!
//! Everything here is deterministic: frames of a slice are injected in the
//! order (stamp, node, arrival order of that node's frames).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;

use fsin_frames::pcap::{Capture, PcapError};
use fsin_frames::{MacTable, Reassembly};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use fsin::config::{Config, FrameOrder};
use fsin::counters::NetworkCounters;
use fsin::drive::run_feed;
use fsin::network::Network;
use fsin::stats::{Counters, Summary};
use fsin::timeline::CounterWindow;

mod links;
mod manager;

mod slice;

use links::{CounterLog, LinkWatch};
use manager::{Due, LoggedPackets, Manager, SliceFeed};
pub use slice::{Admission, Admitted, Conduct, FrameStats, InFrame, NodeTraffic, OutFrame, Slice};

/// Network + traffic manager, driven slice by slice.
pub struct Coupler {
    net: Network,
    tm: Manager,
    links: LinkWatch,
}

/// The links' view of a co-simulation's measured phase
/// ([`Coupler::link_load`]); in the report's JSON, the four figures under
/// the names given.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct LinkLoad {
    /// Every link's packets and utilization (phits per network cycle).
    #[serde(skip)]
    pub links: Vec<fsin::stats::detail::LinkUse>,
    /// The network's dimensions (for the heat map).
    #[serde(skip)]
    pub dims: Vec<u32>,
    /// Largest utilization over the links: `link_utilization_max`.
    #[serde(rename = "link_utilization_max")]
    pub max: f64,
    /// Mean utilization over the links: `link_utilization_avg`.
    #[serde(rename = "link_utilization_avg")]
    pub avg: f64,
    /// Largest utilization of a link over a window of `util_window`
    /// slices (the windows that ended so far): `link_utilization_peak`.
    #[serde(rename = "link_utilization_peak")]
    pub peak: f64,
    /// The accepted load (phits/node/cycle) of the busiest such window:
    /// `accepted_load_peak`, the load of an application's exchange
    /// phases, where `network.accepted_load` averages them with its
    /// computation.
    #[serde(rename = "accepted_load_peak")]
    pub load_peak: f64,
}

/// Why a coupler cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum CouplerError {
    /// The network cannot be built from the configuration.
    #[error(transparent)]
    Model(#[from] fsin::ModelError),
    /// The nodes cannot be placed on it.
    #[error(transparent)]
    Placement(#[from] fsin::traffic::placement::PlacementError),
}

impl Coupler {
    /// A coupler for `cfg`'s network with the node <-> MAC map `table`.
    /// Statistics are off until [`Coupler::start_measure`].
    ///
    /// # Errors
    /// [`CouplerError`]: the network cannot be built (the configuration
    /// layer refuses such settings), or `placement` cannot place every
    /// node simulator ([`fsin::traffic::placement::nodes_of_simulators`];
    /// `fsin serve` refuses it before nodes attach).
    pub fn new(cfg: &Config, table: MacTable) -> Result<Coupler, CouplerError> {
        let place = fsin::traffic::placement::nodes_of_simulators(
            &cfg.traffic.app.placement,
            &cfg.net.dims,
            cfg.net.rseed,
        )?;
        let mut net = Network::new(&cfg.net)?;
        net.record_deliveries(true);
        let nodes = net.nodes();
        Ok(Coupler {
            links: LinkWatch {
                window: cfg.cosim.util_window.saturating_mul(cfg.cosim.slice.net),
                ..LinkWatch::default()
            },
            net,
            tm: Manager {
                table,
                flights: Reassembly::default(),
                due: Vec::new(),
                order: 0,
                in_order: cfg.cosim.frame_order == FrameOrder::Pair,
                pairs: HashMap::new(),
                held: 0,
                lost: vec![false; nodes],
                nic_latency: cfg.cosim.nic_latency,
                backlog: vec![0; nodes],
                nic_queue_bytes: cfg.cosim.nic_queue_bytes,
                loss: (cfg.cosim.frame_loss > 0.0).then(|| {
                    let rng = Pcg64Mcg::seed_from_u64(cfg.net.rseed ^ 0x6c6f_7373);
                    (cfg.cosim.frame_loss, rng)
                }),
                plength: cfg.net.plength,
                phit_bytes: cfg.phit_bytes,
                measuring: false,
                stats: FrameStats {
                    per_node: vec![NodeTraffic::default(); nodes],
                    ..FrameStats::default()
                },
                capture: None,
                capture_error: None,
                last: None,
                injections: None,
                place,
            },
        })
    }

    /// Keeps every packet handed to the network from now on (16 bytes
    /// each), for [`Coupler::engine_alone`].
    pub fn record_injections(&mut self) {
        self.tm.injections.get_or_insert_with(Vec::new);
    }

    /// Wall time the engine alone takes for this run's network: a fresh
    /// network of the same configuration, fed the packets recorded since
    /// [`Coupler::record_injections`] at their cycles and driven (idle
    /// stretches skipped, as in the run) to the cycle this one has
    /// reached. The co-simulation's overhead is its wall time over this.
    /// Also gives the fresh network's counters, which equal the run's when
    /// recording started with the measured phase. `None` when nothing was
    /// recorded.
    ///
    /// # Errors
    /// The network cannot be built again ([`fsin::ModelError`]; it was
    /// built once from the same settings).
    pub fn engine_alone(
        &self,
    ) -> Result<Option<(std::time::Duration, Counters)>, fsin::ModelError> {
        let Some(log) = &self.tm.injections else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let mut net = Network::new(self.net.spec())?;
        let mut feed = LoggedPackets { log, next: 0 };
        run_feed(&mut net, &mut feed, None, self.net.now(), |_, _| true);
        Ok(Some((started.elapsed(), net.counters)))
    }

    /// Records every frame sent from now on into `capture`.
    pub fn set_capture(&mut self, capture: Capture<BufWriter<File>>) {
        self.tm.capture = Some(capture);
    }

    /// Flushes the capture; the first write error, if any.
    ///
    /// # Errors
    /// The first [`PcapError`] met while capturing.
    pub fn finish_capture(&mut self) -> Result<(), PcapError> {
        if let Some(cap) = self.tm.capture.take() {
            cap.finish()?;
        }
        self.tm.capture_error.take().map_or(Ok(()), Err)
    }

    /// Starts the measured phase: statistics restart from zero (but for
    /// the count of frames that skipped the network) and frames cross the
    /// network (before it, they skip it).
    pub fn start_measure(&mut self) {
        self.tm.measuring = true;
        self.tm.stats = FrameStats {
            per_node: vec![NodeTraffic::default(); self.net.nodes()],
            bypassed: self.tm.stats.bypassed,
            ..FrameStats::default()
        };
        self.net.counters = Counters::default();
        let now = self.net.link_packets();
        self.links.window_base.clone_from(&now);
        self.links.base = now;
        (self.links.from, self.links.window_from) = (self.net.now(), self.net.now());
        // The measured phase starts at a barrier: the node cycle after the
        // last slice run.
        self.links.window_node_from = self.tm.last.map_or(0, |s| s.node_start + s.node_cycles);
        self.links.window_phits = 0;
    }

    /// Keeps the network's counters of every window of the measured phase
    /// (`util_window` slices each) from now on, for a timeline
    /// ([`Coupler::take_counter_windows`]).
    pub fn record_counters(&mut self) {
        if self.links.log.is_none() {
            self.links.log = Some(CounterLog {
                counters: NetworkCounters::new(&self.net),
                windows: Vec::new(),
            });
        }
    }

    /// The counters' names ([`NetworkCounters::names`]; none unless
    /// [`Coupler::record_counters`] was called).
    pub fn counter_names(&self) -> &[String] {
        self.links.log.as_ref().map_or(&[], |l| l.counters.names())
    }

    /// The windows ended since the last call, oldest first, in node
    /// cycles.
    pub fn take_counter_windows(&mut self) -> Vec<CounterWindow> {
        self.links
            .log
            .as_mut()
            .map(|l| std::mem::take(&mut l.windows))
            .unwrap_or_default()
    }

    /// The links' load over the measured phase (nothing before it starts).
    pub fn link_load(&self) -> LinkLoad {
        if !self.tm.measuring {
            return LinkLoad::default();
        }
        let packets: Vec<u64> = (self.net.link_packets().iter())
            .zip(&self.links.base)
            .map(|(n, b)| n - b)
            .collect();
        let links =
            fsin::stats::detail::link_uses(&self.net, &packets, self.net.now() - self.links.from);
        let max = links.iter().map(|l| l.utilization).fold(0.0, f64::max);
        let avg = links.iter().map(|l| l.utilization).sum::<f64>() / links.len().max(1) as f64;
        // A phase shorter than a window is its one window.
        let (peak, load_peak) = if self.links.windows == 0 {
            let phase = (self.net.now() - self.links.from).max(1) as f64;
            let load = self.net.counters.phits_delivered as f64 / self.net.nodes() as f64 / phase;
            (max, load)
        } else {
            (self.links.peak, self.links.load_peak)
        };
        LinkLoad {
            links,
            dims: self.net.spec().dims.clone(),
            max,
            avg,
            peak,
            load_peak,
        }
    }

    /// Whether the measured phase has started.
    pub fn measuring(&self) -> bool {
        self.tm.measuring
    }

    /// Takes `node` out of the run: frames to it are dropped from now on.
    pub fn lose_node(&mut self, node: u32) {
        self.tm.lost[node as usize] = true;
        self.tm.forget_pairs_to(node);
    }

    /// The NIC queues' room for the slice about to run: each node may send
    /// `nic_queue_bytes` less the bytes of frames it has in the network
    /// now or held for an earlier frame of their pair (sent, not yet due
    /// at their node). Taken at every barrier, filled
    /// by [`Admission::admit`] as frames arrive, and handed back to
    /// [`Coupler::settle`] at the next barrier.
    pub fn admission(&self) -> Admission {
        Admission {
            room: (self.tm.backlog.iter())
                .map(|b| self.tm.nic_queue_bytes.saturating_sub(*b))
                .collect(),
            dropped: Vec::new(),
            clear_stats: false,
        }
    }

    /// Counts the frames `admission` dropped (in the measured phase only,
    /// as every statistic) and tells whether a node asked for the measured
    /// phase with the CLEAR_STATS magic packet.
    pub fn settle(&mut self, admission: Admission) -> bool {
        for node in admission.dropped {
            self.tm.count_dropped(node);
        }
        admission.clear_stats
    }

    /// Frames sent but not yet handed to their node.
    pub fn frames_pending(&self) -> usize {
        self.tm.flights.in_flight() + self.tm.held + self.tm.due.len()
    }

    /// Whether no packet is anywhere in the network (nor waiting at a
    /// source): stepping it would change nothing but the clock.
    pub fn network_idle(&self) -> bool {
        self.net.is_idle()
    }

    /// Frame statistics of the measured phase.
    pub fn stats(&self) -> &FrameStats {
        &self.tm.stats
    }

    /// Network statistics of the measured phase.
    pub fn network_summary(&self) -> Summary {
        self.net.counters.summary(self.net.nodes())
    }

    /// Current network cycle.
    pub fn net_now(&self) -> u64 {
        self.net.now()
    }

    /// Simulates `slice`, injecting `frames` at their stamps moved `shift`
    /// node cycles later (parallel mode injects the frames of the previous
    /// slice one slice late; capped at the slice's last cycle). `frames` is
    /// sorted in place and left empty.
    ///
    /// # Panics
    /// If `slice` does not start at the network's current cycle.
    pub fn run_slice(&mut self, slice: Slice, frames: &mut Vec<InFrame>, shift: u64) {
        assert_eq!(slice.net_start, self.net.now(), "slices must be contiguous");
        self.tm.last = Some(slice);
        let (measuring, plength) = (self.tm.measuring, self.tm.plength);
        frames.sort_by_key(|f| (f.node_cycle, f.node, f.seq));
        let mut feed = SliceFeed {
            tm: &mut self.tm,
            frames,
            next: 0,
            slice,
            shift,
        };
        let end = slice.net_start + slice.net_cycles;
        // In the measured phase the network stops at every window's end,
        // wherever the slices end (skipped idle slices included).
        loop {
            let stop = if measuring {
                end.min(self.links.window_end())
            } else {
                end
            };
            run_feed(&mut self.net, &mut feed, None, stop, |_, _| true);
            if measuring && self.net.now() == self.links.window_end() {
                self.links.close(&self.net, plength, &slice);
            }
            if self.net.now() >= end {
                break;
            }
        }
        debug_assert_eq!(feed.next, feed.frames.len());
        frames.clear();
    }

    /// Frames that reach their node before node cycle `end`, in order of
    /// arrival, each stamped no earlier than `start` (the slice about to
    /// run is `[start, end)`).
    pub fn take_deliveries(&mut self, start: u64, end: u64) -> Vec<OutFrame> {
        let mut now: Vec<Due> = Vec::new();
        let mut i = 0;
        while i < self.tm.due.len() {
            if self.tm.due[i].node_cycle < end {
                now.push(self.tm.due.swap_remove(i));
            } else {
                i += 1;
            }
        }
        now.sort_by_key(|d| (d.node_cycle.max(start), d.order));
        now.into_iter()
            .map(|d| {
                let mut f = d.frame;
                f.node_cycle = d.node_cycle.max(start);
                if let (true, Some(n)) = (self.tm.measuring, d.net_latency) {
                    let r = &mut self.tm.stats.per_node[f.node as usize];
                    r.frames_received += 1;
                    r.bytes_received += f.data.len() as u64;
                    self.tm.stats.latency_node.add(f.node_cycle - f.sent);
                    self.tm.stats.latency_net.add(n);
                }
                f
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
