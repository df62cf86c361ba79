//! What a co-simulation run measured: slices, wall time, frames and bytes
//! per node, frame latency in node and network cycles, barrier waits,
//! faults, the applications' own reports, and the network statistics of the
//! measured phase. Printed as text, or as one JSON object (`--json`).

use std::fmt::Write as _;

use serde::Serialize;

use fsin::config::SyncMode;
use fsin::stats::Summary;

use fsin::figures::Figures;

use crate::coupler::NodeTraffic;

/// A node that failed, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Fault {
    /// Client name given at attach (or `client N` before attach).
    pub client: String,
    /// Node ids of that client.
    pub nodes: Vec<u32>,
    /// Slice during which it happened.
    pub slice: u64,
    /// What happened.
    pub reason: String,
}

/// Per-node figures.
#[derive(Debug, Clone, Serialize, Default)]
pub struct NodeReport {
    /// The node's id.
    pub node: u32,
    /// Its MAC address (`52:54:00:00:00:03`).
    pub mac: String,
    /// The name its client gave at attach.
    pub client: String,
    /// Its frames and bytes sent and received, drops and unusual frames,
    /// as the coupler counted them (their keys beside these).
    #[serde(flatten)]
    pub traffic: NodeTraffic,
    /// Wall seconds the node's client spent at the barrier (from its
    /// SliceDone to the next Continue). A wall-clock figure: left out of
    /// the JSON object so that two runs give identical JSON (apart from
    /// `wall_s` and `slices_per_s`); in the text report and `nodes.csv`.
    #[serde(skip)]
    pub barrier_wait_s: f64,
    /// Node cycle at which its workload completed, if it did.
    pub app_done_cycle: Option<u64>,
    /// Application messages it received, as its client reported them.
    pub app_messages: u64,
    /// Their mean send-to-receipt latency, node cycles.
    pub app_latency_avg: f64,
    /// Their largest, node cycles.
    pub app_latency_max: u64,
    /// Messages that reached the application damaged.
    pub app_corrupt: u64,
    /// Whether the node was lost during the run.
    pub lost: bool,
    /// What the node waited for when the run ended, if its client had
    /// reported it waiting only for frames (`SliceDone.waiting`).
    pub waiting_for: Option<String>,
}

/// The report of `fsin serve` / `fsin demo`.
#[derive(Debug, Clone, Serialize)]
pub struct CosimReport {
    /// `lockstep`, `parallel` or `exact`.
    pub mode: SyncMode,
    /// Node cycles per slice.
    pub slice_node_cycles: u64,
    /// Network cycles per slice.
    pub slice_net_cycles: u64,
    /// Nodes of the network.
    pub nodes: usize,
    /// The network, as `topo=` writes it (`torus_8_8`).
    pub topology: String,
    /// Slices simulated (including warm-up slices, and those skipped).
    pub slices: u64,
    /// Slices skipped as idle, each without a round of its own (every
    /// client had promised to do nothing in them, `SliceDone.idle_until`);
    /// the rounds run were `slices - slices_skipped`.
    pub slices_skipped: u64,
    /// Slice at which the measured phase started.
    pub measured_from_slice: u64,
    /// Simulated node cycles at the end.
    pub node_cycles: u64,
    /// Simulated network cycles at the end.
    pub net_cycles: u64,
    /// Simulated seconds (node cycles / node clock).
    pub simulated_s: f64,
    /// Wall-clock seconds of the run.
    pub wall_s: f64,
    /// Slices per wall-clock second.
    pub slices_per_s: f64,
    /// Frames the nodes sent into the network.
    pub frames_sent: u64,
    /// Frames delivered to their destination nodes.
    pub frames_delivered: u64,
    /// Bytes of the frames sent.
    pub bytes_sent: u64,
    /// Bytes of the frames delivered.
    pub bytes_delivered: u64,
    /// Frames rejected for their size (outside 14..=9018 bytes) or their
    /// sender.
    pub frames_rejected: u64,
    /// Frames to a MAC address of no node.
    pub frames_unknown_mac: u64,
    /// Frames to nodes that were lost.
    pub frames_to_lost_nodes: u64,
    /// Frames that skipped the network during warm-up.
    pub frames_bypassed: u64,
    /// Frames dropped because their sender already had `nic_queue_bytes`
    /// of frames waiting for the network (a full transmit queue).
    pub frames_dropped: u64,
    /// Frames the network lost on purpose (`frame_loss`: a lossy link).
    pub frames_lost: u64,
    /// Frames whose last packet arrived before an earlier frame of their
    /// source and destination had (adaptive routes, several virtual
    /// channels): held for it at the NIC with `frame_order=pair`,
    /// delivered ahead of it with `frame_order=network`.
    pub frames_reordered: u64,
    /// Mean from a frame's send stamp to its NIC arrival, node cycles
    /// (false delay included).
    pub frame_latency_avg: f64,
    /// Their standard deviation, node cycles.
    pub frame_latency_std: f64,
    /// The shortest, node cycles.
    pub frame_latency_min: u64,
    /// The longest, node cycles.
    pub frame_latency_max: u64,
    /// Mean from the injection of a frame's first packet to the
    /// consumption of its last, network cycles.
    pub frame_net_latency_avg: f64,
    /// Their standard deviation, network cycles.
    pub frame_net_latency_std: f64,
    /// The shortest, network cycles.
    pub frame_net_latency_min: u64,
    /// The longest, network cycles.
    pub frame_net_latency_max: u64,
    /// Latest completion cycle over the nodes whose workload completed.
    pub app_cycles: Option<u64>,
    /// Mean of the applications' message latencies (node cycles).
    pub app_latency_avg: f64,
    /// Why the run ended.
    pub end_reason: String,
    /// False when the run ended because of a fault, an interruption or a
    /// deadlock.
    pub ok: bool,
    /// The run ended because every node that had not finished waited for
    /// a frame and none was in flight (`per_node[].waiting_for` says what
    /// each waited for); `fsin` then exits with code 3.
    pub deadlock: bool,
    /// The nodes that failed, in the order they did.
    pub faults: Vec<Fault>,
    /// Each node's figures, by node id.
    pub per_node: Vec<NodeReport>,
    /// Network statistics of the measured phase (packets).
    pub network: Summary,
    /// The links over the measured phase, phits per network cycle
    /// (`link_utilization_max`, `_avg`, `_peak` and `accepted_load_peak`
    /// in the JSON; every link for `links.csv` and `utilization.svg`
    /// under `--out`).
    #[serde(flatten)]
    pub links: crate::coupler::LinkLoad,
    /// Slices per window of `links.peak` and `links.load_peak`.
    pub util_window_slices: u64,
    /// With `--overhead` ([`crate::ServeOptions::measure_overhead`]): wall
    /// seconds the engine alone takes for the same network cycles and
    /// packets (a fresh network fed the packets this run injected, at
    /// their cycles), and `wall_s` over it: what co-simulation costs
    /// beyond the network model. `null` otherwise.
    pub engine_alone_s: Option<f64>,
    /// `wall_s` over `engine_alone_s`, with `--overhead`.
    pub overhead: Option<f64>,
    /// With `--timeline` ([`crate::ServeOptions::timeline`]): what the
    /// run's timeline holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<fsin::timeline::Written>,
}

/// The text report.
pub fn text(r: &CosimReport) -> String {
    let mut s = String::new();
    run_lines(r, &mut s);
    frame_lines(r, &mut s);
    network_lines(r, &mut s);
    // Every other figure of the report, by its name: a field added to the
    // report is printed without an edit here.
    if let Ok(figures) = Figures::of(r) {
        s.push_str(&figures.lines_except(SHOWN));
    }
    let _ = writeln!(
        s,
        "  end               {}{}",
        r.end_reason,
        if r.ok { "" } else { " (error)" }
    );
    s
}

/// The text report's first lines: the run, its overhead and timeline.
fn run_lines(r: &CosimReport, s: &mut String) {
    let _ = writeln!(
        s,
        "fsin co-simulation: {} nodes ({}), {} mode, slice {}:{} (network:node cycles)",
        r.nodes, r.topology, r.mode, r.slice_net_cycles, r.slice_node_cycles
    );
    let _ = writeln!(
        s,
        "  {} slices{} in {:.2} s ({:.0} slices/s); {} node cycles = {:.6} simulated s; measured from slice {}",
        r.slices,
        if r.slices_skipped > 0 {
            format!(" ({} skipped as idle)", r.slices_skipped)
        } else {
            String::new()
        },
        r.wall_s,
        r.slices_per_s,
        r.node_cycles,
        r.simulated_s,
        r.measured_from_slice
    );
    if let (Some(alone), Some(overhead)) = (r.engine_alone_s, r.overhead) {
        let _ = writeln!(
            s,
            "  overhead          {overhead:.2}x: the engine alone takes {alone:.2} s for the same {} network cycles and packets",
            r.net_cycles
        );
    }
    if let Some(t) = &r.timeline {
        let file = t.files.first().map(|f| f.display().to_string());
        let _ = write!(
            s,
            "  timeline          {} states, {} frames: {}",
            t.states,
            t.messages,
            file.unwrap_or_default()
        );
        match t.cut_at {
            Some(ns) => {
                let _ = writeln!(
                    s,
                    " (size limit: left out from {:.3} s on)",
                    ns as f64 / 1e9
                );
            }
            None => s.push('\n'),
        }
    }
}

/// The text report's frames: sent, delivered, not routed, dropped, lost,
/// unusual, and their latencies.
fn frame_lines(r: &CosimReport, s: &mut String) {
    let _ = writeln!(
        s,
        "  frames            {} sent ({} bytes), {} delivered ({} bytes)",
        r.frames_sent, r.bytes_sent, r.frames_delivered, r.bytes_delivered
    );
    if r.frames_rejected + r.frames_unknown_mac + r.frames_to_lost_nodes + r.frames_bypassed > 0 {
        let _ = writeln!(
            s,
            "  not routed        {} rejected (size), {} unknown MAC, {} to lost nodes, {} bypassed (warm-up)",
            r.frames_rejected, r.frames_unknown_mac, r.frames_to_lost_nodes, r.frames_bypassed
        );
    }
    if r.frames_dropped > 0 {
        let _ = writeln!(
            s,
            "  dropped           {} (sender's nic_queue_bytes full)",
            r.frames_dropped
        );
    }
    if r.frames_lost > 0 {
        let _ = writeln!(s, "  lost              {} (frame_loss)", r.frames_lost);
    }
    if r.frames_reordered > 0 {
        let _ = writeln!(
            s,
            "  reordered         {} (overtook an earlier frame of their pair in the network; frame_order)",
            r.frames_reordered
        );
    }
    for n in r.per_node.iter().filter(|n| n.traffic.conduct.unusual()) {
        let c = n.traffic.conduct;
        let _ = writeln!(
            s,
            "  unusual frames    node {}: {} short and {} oversized (dropped), {} with a foreign source (carried), {} to unknown destinations (dropped)",
            n.node, c.short, c.oversized, c.foreign_source, c.unknown_destination
        );
    }
    let _ = writeln!(
        s,
        "  frame latency     avg {:.1}  std {:.1}  min {}  max {} node cycles",
        r.frame_latency_avg, r.frame_latency_std, r.frame_latency_min, r.frame_latency_max
    );
    let _ = writeln!(
        s,
        "  in the network    avg {:.1}  std {:.1}  min {}  max {} network cycles",
        r.frame_net_latency_avg,
        r.frame_net_latency_std,
        r.frame_net_latency_min,
        r.frame_net_latency_max
    );
}

/// The text report's application, network, links, barrier waits, waiting
/// nodes and faults.
fn network_lines(r: &CosimReport, s: &mut String) {
    if let Some(c) = r.app_cycles {
        let _ = writeln!(
            s,
            "  application       completed at node cycle {c}; message latency avg {:.1} node cycles",
            r.app_latency_avg
        );
    }
    let n = &r.network;
    let _ = writeln!(
        s,
        "  network           {} packets delivered, latency avg {:.2} cycles, distance {:.2} hops, accepted {:.4} phits/node/cycle",
        n.packets_delivered, n.latency_avg, n.avg_distance, n.accepted_load
    );
    if n.packets_delivered > 0 {
        let _ = writeln!(
            s,
            "  links             utilization avg {:.4}, max {:.4}; busiest window of {} slices: link {:.4}, accepted {:.4} phits/node/cycle",
            r.links.avg,
            r.links.max,
            r.util_window_slices,
            r.links.peak,
            r.links.load_peak
        );
    }
    let waits: Vec<f64> = r.per_node.iter().map(|p| p.barrier_wait_s).collect();
    if !waits.is_empty() {
        let max = waits.iter().copied().fold(0.0, f64::max);
        let avg = waits.iter().sum::<f64>() / waits.len() as f64;
        let _ = writeln!(
            s,
            "  barrier wait      avg {avg:.3} s, max {max:.3} s per node"
        );
    }
    for p in &r.per_node {
        if let (true, Some(w)) = (r.deadlock, &p.waiting_for) {
            let _ = writeln!(s, "  WAITING           node {} ({}): {w}", p.node, p.client);
        }
    }
    for f in &r.faults {
        let _ = writeln!(
            s,
            "  FAULT             {} (nodes {:?}) in slice {}: {}",
            f.client, f.nodes, f.slice, f.reason
        );
    }
}

/// The figures (JSON keys) of a [`CosimReport`] that [`text`]'s own lines
/// print. A field added to the report and not named here gets a line of
/// its own.
const SHOWN: &[&str] = &[
    "mode",
    "slice_node_cycles",
    "slice_net_cycles",
    "nodes",
    "topology",
    "slices",
    "slices_skipped",
    "measured_from_slice",
    "node_cycles",
    "simulated_s",
    "wall_s",
    "slices_per_s",
    "frames_sent",
    "frames_delivered",
    "bytes_sent",
    "bytes_delivered",
    "frames_rejected",
    "frames_unknown_mac",
    "frames_to_lost_nodes",
    "frames_bypassed",
    "frames_dropped",
    "frames_lost",
    "frames_reordered",
    "frame_latency_avg",
    "frame_latency_std",
    "frame_latency_min",
    "frame_latency_max",
    "frame_net_latency_avg",
    "frame_net_latency_std",
    "frame_net_latency_min",
    "frame_net_latency_max",
    "app_cycles",
    "app_latency_avg",
    "end_reason",
    "ok",
    "deadlock",
    "link_utilization_max",
    "link_utilization_avg",
    "link_utilization_peak",
    "accepted_load_peak",
    "util_window_slices",
    "engine_alone_s",
    "overhead",
];

/// Per-node figures as CSV (`nodes.csv` of `--out DIR`), barrier waits
/// included; the columns of a [`NodeReport`]'s other figures after these.
pub fn nodes_csv(r: &CosimReport) -> String {
    let rows: Vec<Figures> = (r.per_node.iter())
        .filter_map(|n| Figures::of(n).ok())
        .collect();
    Figures::append_csv(&nodes_csv_columns(r), &rows, &[])
}

fn nodes_csv_columns(r: &CosimReport) -> String {
    let mut s = String::from(
        "node,mac,client,frames_sent,bytes_sent,frames_received,bytes_received,barrier_wait_s,app_done_cycle,app_messages,app_latency_avg,app_latency_max,app_corrupt,lost\n",
    );
    for p in &r.per_node {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{:.6},{},{},{:.3},{},{},{}",
            p.node,
            p.mac,
            p.client.replace(',', ";"),
            p.traffic.frames_sent,
            p.traffic.bytes_sent,
            p.traffic.frames_received,
            p.traffic.bytes_received,
            p.barrier_wait_s,
            p.app_done_cycle.map_or(String::new(), |c| c.to_string()),
            p.app_messages,
            p.app_latency_avg,
            p.app_latency_max,
            p.app_corrupt,
            p.lost
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report with every optional figure present.
    fn full() -> CosimReport {
        CosimReport {
            mode: SyncMode::Lockstep,
            slice_node_cycles: 1000,
            slice_net_cycles: 200,
            nodes: 2,
            topology: "torus_2".into(),
            slices: 10,
            slices_skipped: 1,
            measured_from_slice: 0,
            node_cycles: 10_000,
            net_cycles: 2_000,
            simulated_s: 5e-5,
            wall_s: 0.5,
            slices_per_s: 20.0,
            frames_sent: 4,
            frames_delivered: 4,
            bytes_sent: 512,
            bytes_delivered: 512,
            frames_rejected: 0,
            frames_unknown_mac: 0,
            frames_to_lost_nodes: 0,
            frames_bypassed: 0,
            frames_dropped: 0,
            frames_lost: 0,
            frames_reordered: 0,
            frame_latency_avg: 1000.0,
            frame_latency_std: 0.0,
            frame_latency_min: 1000,
            frame_latency_max: 1000,
            frame_net_latency_avg: 30.0,
            frame_net_latency_std: 0.0,
            frame_net_latency_min: 30,
            frame_net_latency_max: 30,
            app_cycles: Some(9000),
            app_latency_avg: 1000.0,
            end_reason: "every node finished its workload".into(),
            ok: true,
            deadlock: false,
            faults: vec![],
            per_node: vec![NodeReport::default()],
            network: Summary::default(),
            links: crate::coupler::LinkLoad::default(),
            util_window_slices: 10,
            engine_alone_s: Some(0.1),
            overhead: Some(5.0),
            timeline: None,
        }
    }

    #[test]
    fn every_figure_of_the_report_is_in_its_text() {
        let r = full();
        // net_cycles, which its lines leave out, comes before the end line.
        let text = text(&r);
        assert!(text.contains("  net cycles        2000\n  end "), "{text}");
        // SHOWN names only figures the report has, and a figure it leaves
        // out is printed by its name.
        let figures = Figures::of(&r).unwrap();
        assert_eq!(
            figures.uncovered(SHOWN, &text),
            Vec::<String>::new(),
            "{text}"
        );
    }

    #[test]
    fn nodes_csv_has_a_column_for_every_node_figure() {
        let csv = nodes_csv(&full());
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        for name in ["barrier_wait_s", "frames_dropped", "waiting_for", "lost"] {
            assert!(head.contains(&name), "{name}: {csv}");
        }
        assert_eq!(csv.lines().count(), 2, "{csv}");
        let cells = csv.lines().nth(1).unwrap().split(',').count();
        assert_eq!(cells, head.len(), "{csv}");
    }
}
