//! The keys of traces, kernels and the MPI model (the middle part of
//! [`super::keys`]).

use super::profile::set_mpi_profile;
use super::values::*;
use super::*;

/// Trace, kernel and MPI-model keys, in the order reports list them.
pub(super) static TRACES: &[KeySpec] = &[
    KeySpec {
        names: &["tracefile"],
        help: "Trace files to replay, comma separated; implies tpattern=trace. Each file is one job (times the instances of placement). FSIN .trc (traces paper), Dimemas (first line #DIMEMAS; CPU bursts in seconds, ceil(s * 1e6 / 50) cycles as INSEE converts them, whatever trace_cpu_units) or alog (first character -; point-to-point records only), told apart by how the file begins, as INSEE does",
        values: "PATH[,PATH...] (empty: none)",
        apply: |c, v| {
            c.traffic.app.tracefiles = v.split(',').filter(|s| !s.is_empty()).map(PathBuf::from).collect();
            Ok(())
        },
        show: |c| {
            c.traffic.app
                .tracefiles
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(",")
        },
    },
    KeySpec {
        names: &["kernel"],
        help: "Application kernel replayed as a trace (thin-trees paper, 4.3): all2all, w2 (2D wave-front), w3, m2 (2D mesh neighbour exchange), m3, bu (butterfly, recursive doubling), bt (binary-tree reduction), wf (waterfall); implies tpattern=trace",
        values: "all2all, w2, w3, m2, m3, bu, bt, wf (aliases alltoall, wavefront, butterfly, bintree, waterfall); empty: none",
        apply: |c, v| {
            c.traffic.app.kernel = if v.is_empty() {
                None
            } else {
                Some(choice(v, KERNELS)?)
            };
            Ok(())
        },
        show: |c| c.traffic.app.kernel.map_or_else(String::new, |k| k.name().to_string()),
    },
    KeySpec {
        names: &["kernel_bytes"],
        help: "Kernel message size in bytes (waterfall: bytes per link, sent in 1 KiB messages); thin-trees paper used 40 KB",
        values: "bytes >= 1",
        apply: |c, v| {
            c.traffic.app.kernel_bytes = int(v, 1, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.kernel_bytes.to_string(),
    },
    KeySpec {
        names: &["kernel_tasks"],
        help: "Kernel tasks (0: one per node); w2/m2/wf need a square count, w3/m3 a cube, bu a power of two",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.kernel_tasks = small(v, 0, u32::MAX)?;
            Ok(())
        },
        show: |c| c.traffic.app.kernel_tasks.to_string(),
    },
    KeySpec {
        names: &["placement"],
        help: "Placement of trace/kernel tasks on nodes, with INSEE's parameters: consecutive (alias row), column, shift_S, shuffle (cubes: column), random, quadrant (one instance per quadrant), diagonal (2D, one instance), file_PATH (lines `node task instance`); optional _TASKS_INSTANCES: tasks per trace (0: the trace's) and instances of every trace. Nodes without a task send background load",
        values: "NAME[_SHIFT|_PATH][_TASKS[_INSTANCES]], e.g. consecutive_64_2, shift_8, file_place.txt",
        apply: set_placement,
        show: show_placement,
    },
    KeySpec {
        names: &["bg_load", "background", "bg"],
        help: "Load of the nodes without a task, in phits/node/cycle: uniform traffic among themselves while the workload runs",
        values: "number in [0, 1]",
        apply: |c, v| {
            c.traffic.app.bg_load = real(v, 0.0, 1.0)?;
            Ok(())
        },
        show: |c| c.traffic.app.bg_load.to_string(),
    },
    KeySpec {
        names: &["trace_cpu_units", "cpu_units"],
        help: "Units of trace computation events (c lines); times are converted to cycles with link_bandwidth (one cycle carries one phit)",
        values: "cycles, ms, us, ns (aliases cycle, milliseconds, microseconds, nanoseconds)",
        apply: |c, v| {
            c.traffic.app.cpu_units = choice(v, CPU_UNITS)?;
            Ok(())
        },
        show: |c| name_of(c.traffic.app.cpu_units, CPU_UNITS),
    },
    KeySpec {
        names: &["link_bandwidth", "bandwidth", "bw"],
        help: "Link bandwidth in Mb/s: converts time units of computation events to cycles and the execution time to predicted seconds (traces paper, 4.3); 0 = not given",
        values: "Mb/s >= 0",
        apply: |c, v| {
            c.traffic.app.link_bandwidth = real(v, 0.0, 1e12)?;
            Ok(())
        },
        show: |c| c.traffic.app.link_bandwidth.to_string(),
    },
    KeySpec {
        names: &["cpu_speed"],
        help: "Speed of the simulated CPUs relative to the traced ones (fsin-rs): computation events take 1/cpu_speed of their traced time",
        values: "number > 0",
        apply: |c, v| {
            let s = real(v, 0.0, 1e9)?;
            if s <= 0.0 {
                return Err(ValueError::Expected("a number > 0"));
            }
            c.traffic.app.cpu_speed = s;
            Ok(())
        },
        show: |c| c.traffic.app.cpu_speed.to_string(),
    },
    KeySpec {
        names: &["mpi_profile"],
        help: "MPI-level traces: the MPI layer's model from a profile, as `fsin qemu --calibrate` writes it for the guests it ran (a file of mpi_* settings, key=value lines, # comments). It starts the costs afresh where this key stands (mpi_costs, mpi_message_ns, mpi_byte_ps, mpi_wake_ns, mpi_rx_ns, mpi_arp_rx_ns, mpi_irq_window_ns, mpi_connect_ns, mpi_event_tick_ns and mpi_tcp_acks given before it are dropped, keys after it override it; the eager limit, segments, headers and handshake stay). `default` is the built-in profile, the calibration of the default guests (`fsin help config` lists its settings); `none` the model without a profile: the straight line of mpi_message_ns and mpi_byte_ps, no wake-up, receive or set-up cost, no interrupt window",
        values: "PATH, default or none (empty: none)",
        apply: set_mpi_profile,
        show: |c| match &c.traffic.app.mpi_profile {
            MpiProfile::BuiltIn => "default".into(),
            MpiProfile::None => "none".into(),
            MpiProfile::File(p) => p.display().to_string(),
        },
    },
    KeySpec {
        names: &["mpi_eager_limit"],
        help: "MPI-level traces (fsin qemu --trace-level mpi): largest message the MPI layer sends eagerly, bytes; larger ones go by rendezvous (the first mpi_eager_limit bytes, an acknowledgement from the receiver once it receives, then the rest). Default: Open MPI's btl_tcp_eager_limit",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.eager_limit = int(v, 0, 1 << 32)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.eager_limit.to_string(),
    },
    KeySpec {
        names: &["mpi_segment_bytes"],
        help: "MPI-level traces: most payload bytes of one TCP segment (one frame); default the MSS of a 1500-byte MTU with TCP timestamps",
        values: "integer 1..=9000",
        apply: |c, v| {
            c.traffic.app.mpi.segment_bytes = int(v, 1, 9000)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.segment_bytes.to_string(),
    },
    KeySpec {
        names: &["mpi_segment_header"],
        help: "MPI-level traces: header bytes of each segment's frame (Ethernet 14 + IPv4 20 + TCP with timestamps 32), and the bytes of a TCP acknowledgement's frame",
        values: "integer 0..=1514 (at most one Ethernet frame)",
        apply: |c, v| {
            c.traffic.app.mpi.segment_header = int(v, 0, fsin_trace::MAX_FRAME_BYTES)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.segment_header.to_string(),
    },
    KeySpec {
        names: &["mpi_message_header"],
        help: "MPI-level traces: bytes the MPI layer adds to each message (22: Open MPI's ob1 match header, 14, and TCP BTL header, 8)",
        values: "integer 0..=4096",
        apply: |c, v| {
            c.traffic.app.mpi.message_header = int(v, 0, 4096)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.message_header.to_string(),
    },
    KeySpec {
        names: &["mpi_message_ns"],
        help: "MPI-level traces: software cost of one message on each side, ns of guest time (before a send leaves, after a receive is in): the straight line of this and mpi_byte_ps, which applies only without a cost table (the built-in profile has one): giving either empties mpi_costs (mpi_profile=none before it leaves out the profile's other costs too)",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.message_ns = int(v, 0, 1 << 40)?;
            c.traffic.app.mpi.costs = fsin_trace::mpi::costs::CostTable::default();
            Ok(())
        },
        show: |c| c.traffic.app.mpi.message_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_byte_ps"],
        help: "MPI-level traces: software cost of one byte of a message on each side, picoseconds of guest time: giving it applies the straight line (as mpi_message_ns)",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.byte_ps = int(v, 0, 1 << 30)?;
            c.traffic.app.mpi.costs = fsin_trace::mpi::costs::CostTable::default();
            Ok(())
        },
        show: |c| c.traffic.app.mpi.byte_ps.to_string(),
    },
    KeySpec {
        names: &["mpi_wake_ns"],
        help: "MPI-level traces: what a rank pays when it waited for a frame, ns of guest time (its wake-up: the interrupt, the scheduler, the return from its poll); a rank busy with earlier messages does not pay it, so several messages in flight at once cost less than one after another. `fsin qemu --calibrate` measures it with exchanges of several messages at once; the built-in profile sets it (0 without a profile)",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.wake_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.wake_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_rx_ns"],
        help: "MPI-level traces: the kernel's receive of one frame, ns of guest time (the NIC's interrupt and the IP and TCP input, which run when the frame arrives whatever the rank does): a rank busy then is held up this long, and a rank that waits for the frame takes it this much later; it comes out of the receive's cost (mpi_costs, mpi_message_ns), so a message costs its receiver as much in all, but a frame that arrives while its receiver works on another message delays that one. `fsin qemu --calibrate` measures it (fsin-pingpong -k: what a rank spinning in user space loses to each frame that comes in; 10.7 us on the default guests, the built-in profile's); 0 (without a profile): a receiver pays a message's whole cost when it takes it. An MPI-level trace's CPU bursts lose this much for each frame that came during them in the live run (at most the kernel time the trace records for the burst): the replay charges it again as its own frames arrive",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.rx_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.rx_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_irq_window_ns"],
        help: "MPI-level traces: how long a guest's NIC holds its interrupts back after each one, ns of guest time (QEMU's e1000 raises the next interrupt no sooner than 500 x 256 ns = 128 us after one, and QEMU 10 cannot turn this off): every frame a node sends or takes in (MPI's data, TCP's acknowledgements, ARP) raises an interrupt at once when the window is over, else at its end, one interrupt for all that came inside it, and a frame in reaches the kernel (mpi_rx_ns) at its interrupt, or joins the kernel's poll of the frames before it if that still runs; a send hands the NIC its frames together (up to 45, 64 KiB: TCP's segmentation offload). So two ranks that send to each other at once each take the other's frame a window after their own. A calibration fits the costs with the window it is given (`fsin qemu --calibrate P mpi_irq_window_ns=128000`) and writes it in its profile. 0 (the built-in profile's): every frame at once",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.irq_window_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.irq_window_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_connect_ns"],
        help: "MPI-level traces: a rank's set-up of a new peer, ns of guest time: its first send to each peer blocks this long before the connect (Open MPI's modex lookup of the peer's addresses through the local daemon), and the peer, accepting, sets the sender up as long unless it sent to it first; with mpi_event_tick_ns, this makes a pair's first contact (the pair's frames wait until it is open). Not for traces of runs with --mpi-preconnect (their connections opened in MPI_Init; the trace's header says so). `fsin qemu --calibrate` measures it with a first exchange between 2 guests, and the built-in profile sets it; 0 (without a profile): no connection model",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.connect_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.connect_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_event_tick_ns"],
        help: "MPI-level traces with mpi_connect_ns: how often a rank with no connection yet runs its event loop, ns of guest time (Open MPI's mpi_event_tick_rate, 10,000 us by default; Open MPI 4.1 runs the loop at most once a tick inside MPI calls, and at every call once the rank holds a TCP connection): a rank runs it only while it waits, so a first contact waits for the sender's first run once its TCP handshake is done (mpi_handshake_ns; its connect completes) and then the receiver's (its accept); the first wait after MPI_Init runs it; 0: every wait runs it",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.event_tick_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.event_tick_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_handshake_ns"],
        help: "MPI-level traces with mpi_connect_ns: ns of guest time from a rank's connect to its TCP handshake's end (a SYN and its SYN-ACK); its event loop finds the connect done at its first run after that, so a rank that waits right after its connect (a ping-pong, a recursive-doubling step) finds it only at its next tick, one that first sets up other peers (a linear all-to-all) at once. Only which side of it a rank waits matters; default 200000",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.handshake_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.handshake_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_tcp_acks"],
        help: "MPI-level traces: TCP's acknowledgements as frames: a rank that reads a message which leaves more than a segment's payload (mpi_segment_bytes) taken from its peer since its last frame to it sends the peer an acknowledgement of mpi_segment_header bytes (Linux acknowledges when the application reads; a frame to the peer carries it instead), which the peer's kernel takes in (mpi_rx_ns) and no call receives; 0: only the frames that carry MPI's bytes. Default 1",
        values: "0, 1",
        apply: |c, v| {
            c.traffic.app.mpi.tcp_acks = flag(v)?;
            Ok(())
        },
        show: |c| u8::from(c.traffic.app.mpi.tcp_acks).to_string(),
    },
    KeySpec {
        names: &["mpi_arp_rx_ns"],
        help: "MPI-level traces with mpi_arp: the kernel's receive of an ARP request, ns of guest time, in place of mpi_rx_ns: every guest's kernel takes in each broadcast (the NIC's interrupt, the input, the request dropped or answered), so that among G guests opening their connections each takes in about (G - 1)(G - 2) / 2 of them, and a rank busy when one arrives is held up this long. `fsin qemu --calibrate` measures it (fsin-pingpong -k: what a rank spinning in user space loses to each ARP request its guest takes in for an address not its own; 49.7 us on the default guests, the built-in profile's, nearly five times a TCP frame's mpi_rx_ns); 0 (without a profile): as mpi_rx_ns",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.arp_rx_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.arp_rx_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_arp"],
        help: "MPI-level traces with mpi_connect_ns: the first connection of a pair of nodes begins with an ARP request of 60 bytes that the connecting rank's kernel broadcasts, a copy to every other node, which each one's kernel takes in (mpi_rx_ns); rank 0's node (where mpirun runs) knows every address. On 64 guests these copies are most of the network's load while the ranks open their connections; 0: no ARP. Default 1",
        values: "0, 1",
        apply: |c, v| {
            c.traffic.app.mpi.arp = flag(v)?;
            Ok(())
        },
        show: |c| u8::from(c.traffic.app.mpi.arp).to_string(),
    },
    KeySpec {
        names: &["mpi_loss_probe_ns"],
        help: "MPI-level traces with mpi_tcp_acks: the guests' TCP tail-loss probe, its least timeout in ns of guest time (Linux's 2 jiffies, 8 ms at the guests' 250 Hz): a sender with 2 or more frames of a connection unacknowledged, and no acknowledgement for twice the connection's smoothed round trip plus this long, sends its last frame again, which the receiver's kernel takes in (mpi_rx_ns) and answers with a D-SACK. The live runs send these when a busy rank reads late (IS on 64 guests: 1,977 frames sent again, none lost); replays report them as tcp_probes. 0: none. Default 8000000",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.loss_probe_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.loss_probe_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_delayed_ack_ns"],
        help: "MPI-level traces with mpi_tcp_acks: how long a receiver's kernel holds an acknowledgement that no frame to the sender has carried, ns of guest time, before it sends one (Linux's delayed acknowledgement, 40 ms); 0: never. Default 40000000",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.delayed_ack_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.delayed_ack_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_poll_ns"],
        help: "MPI-level traces: what a run of a rank's event loop costs per TCP connection it holds beyond the first, ns of guest time: Open MPI's progress engine polls every connection's socket each time it runs (libevent's poll backend, Open MPI's default on Linux), and a rank finds a frame by such a run: one that waited for the frame runs it when the frame comes, one whose frame is already in runs it when it asks, unless a run since the frame came found it (one run finds every frame in by then). So a rank of 64 holding 63 connections takes its frames later than the calibration's 2 guests, which hold one. A connection counts from the pair's first frame (from the start with --mpi-preconnect). Measured: an 8-byte round trip between ranks holding 15 connections each takes 160 us more than between ranks holding one. 0: none. Default 5700",
        values: "integer >= 0",
        apply: |c, v| {
            c.traffic.app.mpi.poll_ns = int(v, 0, 1 << 40)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.poll_ns.to_string(),
    },
    KeySpec {
        names: &["mpi_costs"],
        help: "MPI-level traces: the software cost of a message by its size, on each side, as `fsin qemu --calibrate` measures it on the guests (its profile sets this key): points BYTES:SEND_NS:RECV_NS[:RECV_TAIL_NS[:SEND_TAIL_NS]] in increasing size, ns of guest time, interpolated linearly between points, below the first the first's, beyond the last along the last two's slope; a message of B bytes pays the sender's cost at 0 bytes once before its first segment (less what its tail takes beyond the spread part), the sender's tail once after its last segment has gone (SEND_TAIL_NS, at most SEND_NS; where not given, 0), the receiver's tail once after its last (the part of its cost paid once the message is whole: the point's RECV_TAIL_NS, at most RECV_NS; where not given, the first point's RECV_NS), and the rest spread over its segments by their payload. Replaces mpi_message_ns and mpi_byte_ps (giving either of those empties it); the built-in profile sets it; empty (without a profile): those apply",
        values: "BYTES:SEND_NS:RECV_NS[:RECV_TAIL_NS[:SEND_TAIL_NS]][,...] (at most 64 points), or empty",
        apply: |c, v| {
            c.traffic.app.mpi.costs = fsin_trace::mpi::costs::CostTable::parse(v)?;
            Ok(())
        },
        show: |c| c.traffic.app.mpi.costs.to_string(),
    },
];
