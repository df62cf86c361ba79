//! The key table itself: one [`KeySpec`] per key, in `fsin help
//! config`'s order within each group.

use super::values::*;
use super::*;

/// The keys of the network, its routing and flow control, co-simulation
/// and synthetic traffic (the first part of [`super::keys`]).
pub(super) static NETWORK_AND_TRAFFIC: &[KeySpec] = &[
    KeySpec {
        names: &["topo"],
        help: "Topology and its size: nodes per dimension (X varies fastest in node ids; a torus or mesh dimension of size 1 is absent, as in INSEE: torus_64_1 is torus_64), or the node count of a midimew",
        values: "torus_X[_Y[_Z]], mesh_X[_Y[_Z]], ttorus_X_Y[_Z] (with sk_..), midimew_N, circulant_N_S (jumps 1 and S), circpk_A_K (= circulant_(2A^2)_(2KA-1)), spinnaker_X_Y (triangular torus), icube_N_L_X[_Y[_Z]] (alias tricube: a torus of switches with N nodes each and L links per direction), fattree_K_N (k-ary n-tree, K^N nodes), thintree_K_K'_N (K down and K' up ports per switch, K^N nodes), slimtree_K_K'_N (K*K'*(K/K')^(N-1) nodes), hypercube_N (2^N nodes), file:PATH (a topology file: BookSim2 anynet, GraphML as SST's anytopo, or an edge list; see routing; `fsin topology --write` writes dragonflies, Slim Flies, Jellyfish and HyperX as such files)",
        apply: set_topo,
        show: show_topo,
    },
    KeySpec {
        names: &["nways"],
        help: "Link direction: 1 = unidirectional (positive direction only), 2 = bidirectional",
        values: "1, 2 (meshes: 2)",
        apply: |c, v| {
            c.net.nways = small(v, 1, 2)?;
            Ok(())
        },
        show: |c| c.net.nways.to_string(),
    },
    KeySpec {
        names: &["sk_xy"],
        help: "Twisted torus: shift of Y when crossing an X wrap-around link (likewise sk_xz, sk_yx, sk_yz, sk_zx, sk_zy); only one dimension's wrap-around links may be twisted",
        values: "0 <= skew < nodes of the skewed dimension",
        apply: |c, v| {
            c.net.skews.xy = small(v, 0, 1 << 16)?;
            Ok(())
        },
        show: |c| c.net.skews.xy.to_string(),
    },
    skew_key!("sk_xz", xz),
    skew_key!("sk_yx", yx),
    skew_key!("sk_yz", yz),
    skew_key!("sk_zx", zx),
    skew_key!("sk_zy", zy),
    KeySpec {
        names: &["plength"],
        help: "Packet length in phits, optionally followed by the phit width in bytes",
        values: "PHITS[_BYTES], e.g. 16_4",
        apply: set_plength,
        show: |c| format!("{}_{}", c.net.plength, c.phit_bytes),
    },
    KeySpec {
        names: &["tql"],
        help: "Transit queue capacity per virtual channel, in packets",
        values: "integer >= 1 (>= 2 with bubble flow control)",
        apply: |c, v| {
            c.net.tql = small(v, 1, 1 << 16)?;
            Ok(())
        },
        show: |c| c.net.tql.to_string(),
    },
    KeySpec {
        names: &["iql"],
        help: "Injection queue capacity, in packets",
        values: "integer >= 1",
        apply: |c, v| {
            c.net.iql = small(v, 1, 1 << 16)?;
            Ok(())
        },
        show: |c| c.net.iql.to_string(),
    },
    KeySpec {
        names: &["nchan"],
        help: "Virtual channels per physical link",
        values: "integer 1..=16",
        apply: |c, v| {
            c.net.nchan = small(v, 1, 16)?;
            Ok(())
        },
        show: |c| c.net.nchan.to_string(),
    },
    KeySpec {
        names: &["ninj"],
        help: "Injection queues per node (pre-routed imodes raise it to one per dimension and direction)",
        values: "integer 1..=16",
        apply: |c, v| {
            c.net.ninj = small(v, 1, 16)?;
            Ok(())
        },
        show: |c| c.net.ninj.to_string(),
    },
    KeySpec {
        names: &["par_inj"],
        help: "Parallel injection: every injection queue may inject a packet in the same cycle (0: one per node per cycle)",
        values: "0, 1",
        apply: |c, v| {
            c.net.par_inj = flag(v)?;
            Ok(())
        },
        show: |c| u8::from(c.net.par_inj).to_string(),
    },
    KeySpec {
        names: &["drop_packets", "drop"],
        help: "Drop a generated packet when its injection queue is full (0: it waits at the source)",
        values: "0, 1",
        apply: |c, v| {
            c.net.drop_packets = flag(v)?;
            Ok(())
        },
        show: |c| u8::from(c.net.drop_packets).to_string(),
    },
    KeySpec {
        names: &["extract"],
        help: "Extract (drop) the packet at the head of an injection queue when it cannot be injected",
        values: "0, 1",
        apply: |c, v| {
            c.net.extract = flag(v)?;
            Ok(())
        },
        show: |c| u8::from(c.net.extract).to_string(),
    },
    KeySpec {
        names: &["switching"],
        help: "Switching: virtual cut-through (a packet moves on only into a queue with room for all of it) or wormhole (SimuRed paper: room for one phit is enough, a blocked packet stays spread over several routers, the VCs of a link share it phit by phit). Wormhole is deadlock-free with dimension order on meshes, vc=dally on tori, trees, hypercubes and faults; bubble flow control needs virtual cut-through, and the deadlock detector reports the cycle when a network freezes",
        values: "vct, wormhole",
        apply: |c, v| {
            c.net.wormhole = match v {
                "vct" | "cut-through" => false,
                "wormhole" | "wh" => true,
                _ => return Err(ValueError::OneOf(vec!["vct", "wormhole"])),
            };
            Ok(())
        },
        show: |c| if c.net.wormhole { "wormhole" } else { "vct" }.into(),
    },
    KeySpec {
        names: &["compat"],
        help: "Whose behaviour to follow where INSEE's code departs from the INSEE paper (docs/model.md, \"Deliberate differences from INSEE\"). none: the corrected model. insee: INSEE's code, to reproduce its published figures from its configuration: keys left unset take INSEE's defaults (topo=torus_4_4, trace_cpu_units=ns, link_bandwidth=10000); imode=dor, dsh, shp and lpath choose the injection queue from a routing record of their own, drawn again at every try (ties may break differently), and dor takes the last dimension to correct instead of the first hop's; vc=dally rmode=adaptive never takes an adaptive VC (INSEE's request_port_dally_adaptive falls back to improved); latency (and age arbitration) starts when a packet enters its injection buffer instead of when it is generated; the static thin tree climbs by the destination's digits; adaptive trees choose, every cycle, among all VCs the one whose neighbour queue holds the fewest phits (held or not; the first of equals counted twice); tornado adds (n_x-1)/2 to the node id and transpose of an odd bit count rotates the other way, as INSEE's pattern.c does; bimodal traffic tries at INSEE's rate, load (L (1-q) + q) / (plength L), and bursts make Bernoulli trials at load; batches start on a multiple of sample_size and the report averages their latencies, as INSEE's AVG line; traces replay as INSEE's trace.c does: its clock (starting at 1, ending with the last event without draining the network), computations ticking at the start of a cycle, the CPU-burst skip, receives matching source node, tag and length in packets, and the 10,000-cycle deadlock wait",
        values: "none, insee",
        apply: |c, v| {
            c.net.compat = choice(v, COMPAT)?;
            Ok(())
        },
        show: |c| name_of(c.net.compat, COMPAT),
    },
    KeySpec {
        names: &["faults"],
        help: "Failed links: this many full-duplex links between routers (in trees, between switches) fail, drawn with rseed; routing then follows up*/down* over the surviving links (shortest legal routes; routing=static|adaptive). A fault set that disconnects two nodes is refused",
        values: "0 or more links",
        apply: |c, v| {
            c.net.faults = small(v, 0, 1 << 20)?;
            Ok(())
        },
        show: |c| c.net.faults.to_string(),
    },
    KeySpec {
        names: &["updown_root"],
        help: "Root of up*/down* routing (file topologies, and networks with faults): the router its breadth-first search starts from; hops towards the root's side are up, and a route takes its up hops first. center: the router with the smallest eccentricity, then the smallest total distance, then the lowest id (good for irregular graphs; in a fat tree it is one top switch, through which every route must then turn). Default 0: in an indirect network node 0, so that every top switch of a tree ranks alike",
        values: "center, or a router id as the engine numbers them: in a direct network the node's; in an indirect one (trees, files with other than one node per router) the nodes come first, switch s is router nodes + s",
        apply: |c, v| {
            c.net.updown_root = Some(if v == "center" {
                UpDownRoot::Center
            } else {
                UpDownRoot::Router(small(v, 0, u32::MAX)?)
            });
            Ok(())
        },
        show: |c| match c.net.updown_root {
            Some(UpDownRoot::Router(r)) => r.to_string(),
            Some(UpDownRoot::Center) => "center".into(),
            None => "0".into(),
        },
    },
    KeySpec {
        names: &["hol"],
        help: "The SpiNNaker router (INSEE paper section 2.2.4): one routing engine per router takes the input queues in turn, one packet at a time; a packet that cannot be forwarded holds it and blocks every input (head-of-line blocking), until it is forwarded or discarded (hol_timeout). No bubble flow control. Default 1 for topo=spinnaker, 0 otherwise",
        values: "0, 1 (direct networks)",
        apply: |c, v| {
            c.net.hol = flag(v)?;
            Ok(())
        },
        show: |c| u8::from(c.net.hol).to_string(),
    },
    KeySpec {
        names: &["hol_timeout"],
        help: "SpiNNaker router: cycles a packet that cannot be forwarded may hold the routing engine before the router discards it (counted in packets_dropped), which is how SpiNNaker keeps its head-of-line router from deadlocking; 0 = never discard",
        values: "cycles",
        apply: |c, v| {
            c.net.hol_timeout = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.net.hol_timeout.to_string(),
    },
    KeySpec {
        names: &["vc"],
        help: "Virtual-channel management (deadlock avoidance): bubble flow control, Dally's escape channels, or double (one bubble escape VC per dimension)",
        values: "bubble, dally, double",
        apply: |c, v| {
            c.vc = choice(v, VCS)?;
            Ok(())
        },
        show: |c| name_of(c.vc, VCS),
    },
    KeySpec {
        names: &["bsize", "bub"],
        help: "Bubble size in packets: room a packet must leave free when it enters an escape VC (X[_Y[_Z]])",
        values: "integer <= tql, per dimension",
        apply: set_bsize,
        show: |c| format!("{}_{}_{}", c.net.bsize[0], c.net.bsize[1], c.net.bsize[2]),
    },
    KeySpec {
        names: &["rmode"],
        help: "Request mode: how a head packet picks its output VC. bubble: oblivious, random, shortest, smart; dally: trc, basic, improved, adaptive; double: doubleob, doubleadap. Trees and hypercubes: static (trees: up port = digit of the source, down port by the destination; hypercubes: dimension order; VC kept) or adaptive (the profitable VC with most credit, the default; hypercubes escape to VC 0 in dimension order)",
        values: "oblivious, random, shortest, smart, trc, basic, improved, adaptive, doubleob, doubleadap, static",
        apply: |c, v| {
            c.net.rmode = choice(v, RMODES)?;
            Ok(())
        },
        show: |c| name_of(c.net.rmode, RMODES),
    },
    KeySpec {
        names: &["routing"],
        help: "Cubes: escape routing order, dimension order (X, Y, Z) or direction order (positive hops first). Trees and hypercubes (INSEE): static or adaptive routing, as rmode=static|adaptive (trees default to adaptive). File topologies: duato by default with nchan >= 2 (up*/down* with nchan=1 or faults), up*/down* (static, or adaptive alias updown), shortest (minimal paths, hop k on VC k: needs nchan >= the diameter in hops; rmode=static|adaptive picks among the minimal ports) or duato (Duato's minimal adaptive routing on VCs 1 and up, with VC 0 an up*/down* escape that a packet finding no minimal VC free takes and keeps: nchan >= 2)",
        values: "dim, dir (cubes); static, adaptive (trees, hypercubes, file topologies); shortest, duato, updown (file topologies)",
        apply: |c, v| {
            c.net.routing = choice(v, ROUTINGS)?;
            Ok(())
        },
        show: |c| match c.net.rmode {
            _ if c.net.routing == RoutingOrder::Shortest => "shortest".into(),
            _ if c.net.routing == RoutingOrder::Duato => "duato".into(),
            RequestMode::Static => "static".into(),
            RequestMode::Adaptive if !c.net.topo.is_cube() => "adaptive".into(),
            _ => name_of(c.net.routing, ROUTINGS),
        },
    },
    KeySpec {
        names: &["imode"],
        help: "Injection mode: shortest (queue with most room), dor (per-direction queue by DOR pre-routing), dsh (dor, else shortest), shp (profitable queue with most room), lpath (direction with most hops)",
        values: "shortest, dor, dsh, shp, lpath",
        apply: |c, v| {
            c.net.imode = choice(v, IMODES)?;
            Ok(())
        },
        show: |c| name_of(c.net.imode, IMODES),
    },
    KeySpec {
        names: &["amode"],
        help: "Output-port arbitration among requesting input queues",
        values: "rr, fifo, longest, random, age (alias oldest)",
        apply: |c, v| {
            c.net.amode = choice(v, AMODES)?;
            Ok(())
        },
        show: |c| name_of(c.net.amode, AMODES),
    },
    KeySpec {
        names: &["cmode"],
        help: "Consumption: single (one packet at a time, arbitrated) or multiple (one phit per input per cycle)",
        values: "single, multiple",
        apply: |c, v| {
            c.net.cmode = choice(v, CMODES)?;
            Ok(())
        },
        show: |c| name_of(c.net.cmode, CMODES),
    },
    KeySpec {
        names: &["fsin_cycle_relation"],
        help: "Co-simulation: network cycles per slice (NET of --slice NET:NODE)",
        values: "integer >= 1",
        apply: |c, v| {
            c.cosim.slice.net = int(v, 1, MAX_SLICE_CYCLES)?;
            Ok(())
        },
        show: |c| c.cosim.slice.net.to_string(),
    },
    KeySpec {
        names: &["simics_cycle_relation", "node_cycle_relation"],
        help: "Co-simulation: node-simulator cycles per slice (NODE of --slice NET:NODE)",
        values: "integer >= 1",
        apply: |c, v| {
            c.cosim.slice.node = int(v, 1, MAX_SLICE_CYCLES)?;
            Ok(())
        },
        show: |c| c.cosim.slice.node.to_string(),
    },
    KeySpec {
        names: &["sync_mode"],
        help: "Co-simulation: lockstep (false delay < 1 slice), parallel (network one slice behind, nodes and network run at once) or exact (no false delay; needs fsin_cycle_relation <= nic_latency)",
        values: "lockstep, parallel, exact",
        apply: |c, v| {
            c.cosim.sync_mode = choice(v, SYNC_MODES)?;
            Ok(())
        },
        show: |c| name_of(c.cosim.sync_mode, SYNC_MODES),
    },
    KeySpec {
        names: &["nic_latency"],
        help: "Co-simulation: network cycles from a frame's last phit leaving the network to its arrival at the NIC (the lookahead of exact mode)",
        values: "integer >= 0",
        apply: |c, v| {
            c.cosim.nic_latency = int(v, 0, MAX_NIC_LATENCY)?;
            Ok(())
        },
        show: |c| c.cosim.nic_latency.to_string(),
    },
    KeySpec {
        names: &["nic_queue_bytes"],
        help: "Co-simulation: bytes of frames one node may have waiting for the network (sent, not yet delivered); frames beyond are dropped and counted (frames_dropped), as a full transmit queue drops them. The default, 4 MiB, is Linux's largest TCP send buffer",
        values: "integer >= 9018",
        apply: |c, v| {
            c.cosim.nic_queue_bytes = int(v, 9018, 1 << 40)?;
            Ok(())
        },
        show: |c| c.cosim.nic_queue_bytes.to_string(),
    },
    KeySpec {
        names: &["frame_order"],
        help: "Co-simulation: pair (a source's frames reach each destination's NIC in the order sent, as an Ethernet switch keeps them: a frame whose last packet arrives before an earlier frame's waits for it) or network (as the network delivers them: adaptive routes can carry a later frame past an earlier one, which TCP takes for a loss). Both count such frames in frames_reordered",
        values: "pair, network",
        apply: |c, v| {
            c.cosim.frame_order = choice(v, FRAME_ORDERS)?;
            Ok(())
        },
        show: |c| name_of(c.cosim.frame_order, FRAME_ORDERS),
    },
    KeySpec {
        names: &["frame_loss"],
        help: "Co-simulation: probability that the network loses a frame of the measured phase (each frame on its own, drawn with rseed; counted in frames_lost): a lossy link, to see TCP retransmit",
        values: "number from 0 to 1 (0: none)",
        apply: |c, v| {
            c.cosim.frame_loss = real(v, 0.0, 1.0)?;
            Ok(())
        },
        show: |c| c.cosim.frame_loss.to_string(),
    },
    KeySpec {
        names: &["util_window"],
        help: "Co-simulation: slices per window of the report's peak link utilization (link_utilization_peak: the busiest link over its busiest window of this many slices of the measured phase)",
        values: "integer >= 1",
        apply: |c, v| {
            c.cosim.util_window = int(v, 1, 1 << 40)?;
            Ok(())
        },
        show: |c| c.cosim.util_window.to_string(),
    },
    KeySpec {
        names: &["node_clock"],
        help: "Co-simulation: node clock in Hz (Simics paper: 200 MHz)",
        values: "integer >= 1",
        apply: |c, v| {
            c.cosim.node_clock_hz = int(v, 1, u64::MAX)?;
            Ok(())
        },
        show: |c| c.cosim.node_clock_hz.to_string(),
    },
    KeySpec {
        names: &["tpattern"],
        help: "Spatial traffic pattern (destinations of generated packets)",
        values: "uniform (alias random), hotregion (1/4 of packets to the first 1/8 of nodes), hotspot (node 0 in 2% of draws), semi (lower half of X among itself), distribute, rsdist (every other node in turn, from the next / a random one); permutations (INSEE paper Table 2): complement, reversal, transpose, butterfly, shuffle (power-of-two node counts), tornado; local (mostly near neighbours, >= 16 nodes per dimension); population, histogram (destinations by hop distance from tracefile=FILE: a distance per line / `distance weight` lines); trace (set by tracefile or kernel)",
        apply: |c, v| {
            c.traffic.tpattern = choice(v, PATTERNS)?;
            Ok(())
        },
        show: |c| name_of(c.traffic.tpattern, PATTERNS),
    },
    KeySpec {
        names: &["plevel"],
        help: "Detailed outputs written under --out DIR (sum of bits): 1 source/destination pair map (pairs.csv), 2 link utilization (links.csv, utilization.svg heat map), 4 distance histogram (distance.csv), 8 queue occupancy histograms (queues.csv), 16 packet-level trace (packets.csv); plevel.json holds 1, 2 and 4",
        values: "0..=31 (bits 1, 2, 4, 8, 16)",
        apply: |c, v| {
            let bits = small(v, 0, u32::MAX)?;
            if bits & !PLEVEL_SUPPORTED != 0 {
                return Err(ValueError::PlevelBits);
            }
            c.method.plevel = bits;
            Ok(())
        },
        show: |c| c.method.plevel.to_string(),
    },
    KeySpec {
        names: &["intransit_pr", "ipr"],
        help: "In-transit priority (INSEE): probability that an output is first arbitrated among in-transit packets only, injection requests competing only if none of those asks for it",
        values: "probability in [0, 1]",
        apply: |c, v| {
            c.net.intransit_pr = real(v, 0.0, 1.0)?;
            Ok(())
        },
        show: |c| c.net.intransit_pr.to_string(),
    },
    KeySpec {
        names: &["bub_to_adap", "lbr"],
        help: "Local bubble restriction (INSEE, bubble routers): a packet being injected needs this many free packets in the local queue of the VC it asks for, adaptive VCs included; 0 = off",
        values: "packets, below tql",
        apply: |c, v| {
            c.net.bub_to_adap = small(v, 0, 1 << 16)?;
            Ok(())
        },
        show: |c| c.net.bub_to_adap.to_string(),
    },
    KeySpec {
        names: &["timeout_upper_limit"],
        help: "Timeout-based congestion detection (INSEE): a router that holds a packet longer than this many cycles is congested, and intransit_pr and bub_to_adap apply only at congested routers; 0 = off (they apply everywhere)",
        values: "cycles",
        apply: |c, v| {
            c.net.timeout_upper_limit = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.net.timeout_upper_limit.to_string(),
    },
    KeySpec {
        names: &["timeout_lower_limit"],
        help: "Timeout-based congestion detection: a congested router whose timed packet leaves within this many cycles is congested no more; -1 = 3/4 of timeout_upper_limit",
        values: "cycles, or -1",
        apply: |c, v| {
            c.net.timeout_lower_limit = if v == "-1" { None } else { Some(int(v, 0, 1 << 40)?) };
            Ok(())
        },
        show: |c| c.net.timeout_lower_limit.map_or_else(|| "-1".to_string(), |l| l.to_string()),
    },
    KeySpec {
        names: &["global_cc"],
        help: "Global congestion control (INSEE): sources stop generating while the packets in the network exceed this percentage of the transit buffer capacity (nodes x ports x nchan x tql packets), as last measured (see update_period); 100 = off",
        values: "percentage in [0, 100]",
        apply: |c, v| {
            c.traffic.global_cc = real(v, 0.0, 100.0)?;
            Ok(())
        },
        show: |c| c.traffic.global_cc.to_string(),
    },
    KeySpec {
        names: &["update_period"],
        help: "Global congestion control: the packets in the network are measured every update_period x (sum of half ring sizes: torus; sum of sizes - ndim: mesh) cycles, INSEE's scaling; 0 = every cycle",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.update_period = int(v, 0, 1 << 32)?;
            Ok(())
        },
        show: |c| c.traffic.update_period.to_string(),
    },
    KeySpec {
        names: &["longmessages"],
        help: "Bimodal traffic: packets per long message (1: every message is one packet); the trial rate drops so the offered load stays `load`",
        values: "integer >= 1",
        apply: |c, v| {
            c.traffic.longmessages = small(v, 1, 1 << 20)?;
            Ok(())
        },
        show: |c| c.traffic.longmessages.to_string(),
    },
    KeySpec {
        names: &["lng_msg_ratio"],
        help: "Bimodal traffic: fraction of the packets that travel in long messages",
        values: "number in [0, 1]",
        apply: |c, v| {
            c.traffic.lng_msg_ratio = real(v, 0.0, 1.0)?;
            Ok(())
        },
        show: |c| c.traffic.lng_msg_ratio.to_string(),
    },
    KeySpec {
        names: &["trigger_rate"],
        help: "Reactive traffic (INSEE paper, 3.2.2): probability that a packet consumed at a node triggers packets there (generated one per cycle, to the pattern's destinations)",
        values: "number in [0, 1]",
        apply: |c, v| {
            c.traffic.trigger_rate = real(v, 0.0, 1.0)?;
            Ok(())
        },
        show: |c| c.traffic.trigger_rate.to_string(),
    },
    KeySpec {
        names: &["triggered"],
        help: "Reactive traffic: packets triggered per trigger, a number or a range MAX_MIN (INSEE's order; either order works)",
        values: "N or A_B",
        apply: |c, v| {
            let p = parts(v);
            let a = p
                .first()
                .map_or(Err(ValueError::Expected("N or A_B")), |s| small(s, 0, 1 << 20))?;
            let b = p.get(1).map_or(Ok(a), |s| small(s, 0, 1 << 20))?;
            if p.len() > 2 {
                return Err(ValueError::Expected("N or A_B"));
            }
            c.traffic.triggered = (a.min(b), a.max(b));
            Ok(())
        },
        show: |c| {
            if c.traffic.triggered.0 == c.traffic.triggered.1 {
                c.traffic.triggered.0.to_string()
            } else {
                format!("{}_{}", c.traffic.triggered.1, c.traffic.triggered.0)
            }
        },
    },
    KeySpec {
        names: &["shotmode"],
        help: "Bursty traffic (INSEE paper, 3.2.3): every node sends shotsize packets as fast as it can, then waits until all packets of the burst have arrived (a barrier); nsamples (alias numshots) bursts, each reported with its time; load does not apply",
        values: "0, 1",
        apply: |c, v| {
            c.traffic.shotmode = flag(v)?;
            Ok(())
        },
        show: |c| u8::from(c.traffic.shotmode).to_string(),
    },
    KeySpec {
        names: &["shotsize"],
        help: "Bursty traffic: packets per node and burst (0: one per other node)",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.shotsize = small(v, 0, 1 << 24)?;
            Ok(())
        },
        show: |c| c.traffic.shotsize.to_string(),
    },
];

/// The keys of measurement and the run (the last part of [`super::keys`]).
pub(super) static RUN: &[KeySpec] = &[
    KeySpec {
        names: &["trace_mode"],
        help: "Trace replay (fsin-rs): causal (a receive waits for its message, traces paper 4.2) or at_will (receives are ignored: tasks send as fast as the network accepts, traces paper 4.1)",
        values: "causal, at_will (alias inject)",
        apply: |c, v| {
            c.traffic.app.trace_mode = choice(v, TRACE_MODES)?;
            Ok(())
        },
        show: |c| name_of(c.traffic.app.trace_mode, TRACE_MODES),
    },
    KeySpec {
        names: &["load"],
        help: "Offered load in phits/node/cycle (Bernoulli packet generation with probability load/plength per node per cycle)",
        values: "number in [0, 1]",
        apply: |c, v| {
            c.traffic.load = real(v, 0.0, 1.0)?;
            Ok(())
        },
        show: |c| c.traffic.load.to_string(),
    },
    KeySpec {
        names: &["rseed", "rnds"],
        help: "Random seed: the same configuration and seed give identical results",
        values: "non-negative integer",
        apply: |c, v| {
            c.net.rseed = int(v, 0, u64::MAX)?;
            Ok(())
        },
        show: |c| c.net.rseed.to_string(),
    },
    KeySpec {
        names: &["threads"],
        help: "Threads one network's cycles run on (fsin-rs): its routers split into this many parts (consecutive nodes and consecutive switches), each stepped on a thread of its own; the report is the same for every value. Helps on large, loaded networks; give it no more than the cores the machine has free, as its threads wait for each other by spinning. One under switching=wormhole, with timeouts and with SpiNNaker discards (hol=1 hol_timeout>0)",
        values: "integer 1..=256",
        apply: |c, v| {
            c.net.threads = small(v, 1, 256)?;
            Ok(())
        },
        show: |c| c.net.threads.to_string(),
    },
    KeySpec {
        names: &["warm_up_period"],
        help: "Warm-up: cycles simulated before any statistic is taken",
        values: "cycles",
        apply: |c, v| {
            c.method.warm_up_period = int(v, 0, u64::MAX / 4)?;
            Ok(())
        },
        show: |c| c.method.warm_up_period.to_string(),
    },
    KeySpec {
        names: &["conv_period"],
        help: "Convergence phase: length of each window, in cycles; the phase ends when 3 windows in a row each change accepted load and mean latency by less than conv_thres from the one before (compat=none: or by less than their noise, 1.96 standard errors of the difference)",
        values: "cycles >= 1",
        apply: |c, v| {
            c.method.conv_period = int(v, 1, u64::MAX / 4)?;
            Ok(())
        },
        show: |c| c.method.conv_period.to_string(),
    },
    KeySpec {
        names: &["conv_thres"],
        help: "Convergence tolerance, relative: the change allowed between consecutive windows of the convergence phase and (compat=none) the 95% confidence intervals' half-widths of mean latency and accepted load, over their means, that the batches must reach",
        values: "number in [0, 1]",
        apply: |c, v| {
            c.method.conv_thres = real(v, 0.0, 1.0)?;
            Ok(())
        },
        show: |c| c.method.conv_thres.to_string(),
    },
    KeySpec {
        names: &["max_conv_time"],
        help: "Longest convergence phase, in cycles; sampling starts anyway (reported as not converged: the windows did not settle)",
        values: "cycles",
        apply: |c, v| {
            c.method.max_conv_time = int(v, 0, u64::MAX / 4)?;
            Ok(())
        },
        show: |c| c.method.max_conv_time.to_string(),
    },
    KeySpec {
        names: &["nsamples", "numshots"],
        help: "Batches (samples) of sample_size cycles measured after convergence; compat=none takes more, up to max_samples, until the 95% intervals of mean latency and accepted load are within conv_thres of their means; with shotmode=1, the number of bursts",
        values: "integer >= 1",
        apply: |c, v| {
            c.method.nsamples = int(v, 0, 1 << 32)?;
            Ok(())
        },
        show: |c| c.method.nsamples.to_string(),
    },
    KeySpec {
        names: &["max_samples"],
        help: "Most batches a run measures (fsin-rs, compat=none): batches are added after nsamples until the 95% intervals meet conv_thres; a run that reaches max_samples first is reported as not converged (the intervals too wide). A value below nsamples counts as nsamples",
        values: "integer >= 1",
        apply: |c, v| {
            c.method.max_samples = int(v, 1, 1 << 32)?;
            Ok(())
        },
        show: |c| c.method.max_samples.to_string(),
    },
    KeySpec {
        names: &["sample_size", "sampling_period"],
        help: "Length of each batch, in cycles",
        values: "cycles >= 1",
        apply: |c, v| {
            c.method.sample_size = int(v, 1, u64::MAX / 4)?;
            Ok(())
        },
        show: |c| c.method.sample_size.to_string(),
    },
    KeySpec {
        names: &["cycles"],
        help: "Fixed-length mode (fsin-rs): run exactly this many cycles with statistics over all of them, instead of warm-up, convergence and batches: no warm-up, convergence not checked (the report's converged is null); 0 = TrGen phases",
        values: "cycles",
        apply: |c, v| {
            c.method.cycles = int(v, 0, u64::MAX / 4)?;
            Ok(())
        },
        show: |c| c.method.cycles.to_string(),
    },
    KeySpec {
        names: &["pinterval"],
        help: "Print partial results every this many cycles (0 = none)",
        values: "cycles",
        apply: |c, v| {
            c.method.pinterval = int(v, 0, u64::MAX / 4)?;
            Ok(())
        },
        show: |c| c.method.pinterval.to_string(),
    },
];
