//! The MPI layer's model: the `mpi_*` keys a lowering follows
//! ([`super::MpiProgram::lower`]).

use crate::mpi::costs::{CostTable, Side};

/// The MPI layer's model (the `mpi_*` keys; docs/model.md gives how each
/// default was measured on the guests).
#[derive(Debug, Clone, PartialEq)]
pub struct MpiModel {
    /// Largest message sent eagerly, bytes (Open MPI's
    /// `btl_tcp_eager_limit`, 65,536).
    pub eager_limit: u64,
    /// Most payload bytes per TCP segment (the MSS of a 1,500-byte MTU
    /// with TCP timestamps: 1,448).
    pub segment_bytes: u64,
    /// Header bytes of every segment's frame: Ethernet 14, IPv4 20, TCP
    /// with timestamps 32.
    pub segment_header: u64,
    /// Bytes the MPI layer adds to a message (22: Open MPI's ob1 match
    /// header, 14, and the TCP BTL's header, 8; the live frames of an
    /// eager message of `B` bytes are `B + 22` bytes of TCP payload).
    pub message_header: u64,
    /// Software cost of a message on each side, ns of guest time
    /// (149,000: fsin-pingpong's 8-byte round trips on 2 guests, 602.6 us,
    /// less the network's part, over 4).
    pub message_ns: u64,
    /// Software cost of a byte of a segment on each side, picoseconds of
    /// guest time (24,000: fsin-pingpong's 60,000-byte round trips within
    /// 1%; docs/model.md).
    pub byte_ps: u64,
    /// A calibrated cost per message size and side (`mpi_costs`, as
    /// `fsin qemu --calibrate` measures it); empty: `message_ns` and
    /// `byte_ps` apply.
    pub costs: CostTable,
    /// What a rank pays, ns of guest time, when it waited for a frame:
    /// its wake-up (the interrupt, the scheduler, the return from its
    /// poll), which a rank busy with the messages before does not pay
    /// ([`crate::Trace::wake`]; 0 by default, a calibrated profile sets it).
    pub wake_ns: u64,
    /// The kernel's receive of a frame, ns of guest time (`mpi_rx_ns`:
    /// the NIC's interrupt and the IP and TCP input, which run when the
    /// frame arrives whatever the rank does): a rank busy then is held up
    /// that long, and one that waits for the frame takes it that much
    /// later ([`crate::Trace::rx`]). Taken out of the receive's cost (its
    /// segments' first, then its once cost), so that a message costs its
    /// receiver as much in all; 0 (the default): the receiver pays its
    /// whole cost when it takes the message.
    pub rx_ns: u64,
    /// How long a guest's NIC holds its interrupts back after each one,
    /// ns of guest time (`mpi_irq_window_ns`; QEMU's e1000 raises the
    /// next interrupt no sooner than 500 x 256 ns = 128 us after one,
    /// `hw/net/e1000.c`): a frame a node sends or takes in (data,
    /// acknowledgements, ARP) raises one at once after the window, else
    /// at its end, and a frame in reaches the kernel at its interrupt
    /// ([`crate::Trace::irq`]); with a window a send hands the NIC its frames
    /// together ([`super::OFFLOAD_FRAMES`]). 0 (the default): every frame at
    /// once, each after its own payload's cost.
    pub irq_window_ns: u64,
    /// The kernel's receive of an ARP request, ns of guest time
    /// (`mpi_arp_rx_ns`): every node's kernel takes each broadcast in, so
    /// that among G guests opening their connections each takes in about
    /// (G - 1)(G - 2) / 2 of them; a rank busy when one arrives is held
    /// up that long ([`crate::Trace::arp_rx`]). 0 (the default): as
    /// [`MpiModel::rx_ns`].
    pub arp_rx_ns: u64,
    /// A rank's set-up of a new peer, ns of guest time (Open MPI's modex
    /// lookup of the peer's addresses through the local daemon): its
    /// first send to the peer blocks that long, and the peer accepting
    /// the connection sets it up as long unless it has already; the
    /// pair's frames wait until both have ([`crate::Trace::contact`]); 0 (the
    /// default): no connection model. Not
    /// for traces of runs whose connections opened in `MPI_Init`
    /// (`--mpi-preconnect`, [`crate::mpi::read::MpiProgram::preconnected`]).
    pub connect_ns: u64,
    /// With `connect_ns`: ns of guest time between the event loop's runs
    /// in a rank that has no connection yet (10,000,000: Open MPI's
    /// `mpi_event_tick_rate` of 10,000 us; Open MPI 4.1's `opal_progress`
    /// runs libevent's loop at most once a tick until the TCP BTL holds an
    /// endpoint, then at every call), so that a first contact waits for
    /// the sender's loop (its connect completes) and then the peer's (it
    /// accepts) ([`crate::Trace::tick`]).
    pub event_tick_ns: u64,
    /// With `connect_ns`: ns of guest time from a connect's start to its
    /// TCP handshake's end (`mpi_handshake_ns`, 200,000: a SYN and its
    /// SYN-ACK through both guests' kernels and the network),
    /// [`crate::Trace::handshake`]. Only whether a rank waits before or after it
    /// matters (a rank that waits right after its connect finds it done
    /// only a tick later; one that first sets up other peers finds it at
    /// once), so it is not calibrated.
    pub handshake_ns: u64,
    /// TCP's acknowledgements as frames (`mpi_tcp_acks`, on by default):
    /// a guest's kernel acknowledges a connection's data when its rank
    /// reads it, once a read leaves more than a segment's payload
    /// (`segment_bytes`) taken since its last frame to the sender (Linux's
    /// `tcp_cleanup_rbuf`; any frame to the sender carries the
    /// acknowledgement instead). The lowering sends a
    /// `segment_header`-byte frame ([`crate::TCP_ACK_TAG`]) back when the
    /// rank has taken a message's last segment; the sender's kernel takes
    /// it in (`rx_ns`), and no call waits for it. On CG's 16 guests
    /// (two-segment messages) the rule gives 6,351 acknowledgements where
    /// the live run's steady iterations sent 6,303; a 64 KiB stream's
    /// receiver sends one a message live, as the rule does
    /// (docs/model.md). Off: only the frames that carry MPI's bytes.
    pub tcp_acks: bool,
    /// With `connect_ns`: the first connection of a pair of nodes that
    /// do not know each other's address begins with an ARP request that
    /// the connecting rank's kernel broadcasts
    /// ([`super::ARP_REQUEST_BYTES`], [`crate::Trace::arp`]; `mpi_arp`, on by default),
    /// a copy to every other node, which each one's kernel takes in
    /// (`rx_ns`). Rank 0's node (where `mpirun` runs, which reached every
    /// node) knows every address. The live runs' captures show it: IS on
    /// 64 guests sent 1,958 requests while its ranks ran, one for each of
    /// 1,898 of the 1,953 pairs without rank 0, and their 63 copies each
    /// are most of the network's load while the first `MPI_Alltoallv`
    /// opens its connections. The reply (one frame) is left out.
    pub arp: bool,
    /// With `tcp_acks`: the tail-loss probe's least timeout, ns of guest
    /// time (`mpi_loss_probe_ns`, 8,000,000: Linux's `TCP_TIMEOUT_MIN`,
    /// 2 jiffies at the guests' 250 Hz): a sender with 2 or more frames
    /// unacknowledged sends its last one again when no acknowledgement
    /// came for twice its smoothed round trip plus this long, and the
    /// receiver answers with a D-SACK ([`crate::TcpTimers::probe`]).
    /// IS on 64 guests sent 1,977 such frames again while its ranks ran,
    /// 1,815 answered by a D-SACK (none was lost): two-segment messages
    /// to the busy ranks, whose reads came late. 0: no probes.
    pub loss_probe_ns: u64,
    /// With `tcp_acks`: how long a receiver's kernel holds an
    /// acknowledgement that no frame to the sender carried, ns of guest
    /// time (`mpi_delayed_ack_ns`, 40,000,000: Linux's `TCP_DELACK_MIN`;
    /// the live runs' acknowledgements of single segments come at most
    /// 44 ms after them), [`crate::TcpTimers::delack`]. 0: never.
    pub delayed_ack_ns: u64,
    /// What a run of a rank's event loop costs per TCP connection it
    /// holds beyond the first, ns of guest time (`mpi_poll_ns`, 5,700),
    /// [`crate::Trace::poll`]: Open MPI's progress engine runs libevent's
    /// loop, on its `poll` backend (Open MPI's default everywhere but
    /// macOS), which asks the kernel about every socket each run, and a
    /// rank finds a frame by such a run: a waiting rank a poll of all its
    /// connections after the frame comes, one whose frame is already in
    /// when it asks, unless a run since the frame came found it (one run
    /// takes every frame in by then). Measured on 16 guests (docs/model.md):
    /// an 8-byte round trip between two ranks that hold 15 connections
    /// each takes 160 us longer than between two that hold one. A
    /// calibration's 2 guests hold one, a run of 64 ranks up to 63. A
    /// connection counts from the pair's first frame (from the start in
    /// a preconnected run). 0: none.
    pub poll_ns: u64,
    /// Nanoseconds of guest time per node cycle (`1e9 / node_clock`).
    pub ns_per_node_cycle: f64,
}

impl Default for MpiModel {
    fn default() -> MpiModel {
        MpiModel {
            eager_limit: 65_536,
            segment_bytes: 1448,
            segment_header: 66,
            message_header: 22,
            message_ns: 149_000,
            byte_ps: 24_000,
            costs: CostTable::default(),
            wake_ns: 0,
            rx_ns: 0,
            irq_window_ns: 0,
            arp_rx_ns: 0,
            connect_ns: 0,
            event_tick_ns: 10_000_000,
            handshake_ns: 200_000,
            tcp_acks: true,
            arp: true,
            loss_probe_ns: 8_000_000,
            delayed_ack_ns: 40_000_000,
            poll_ns: 5_700,
            ns_per_node_cycle: 8.0,
        }
    }
}

impl MpiModel {
    /// The software cost on `side` of a message of `bytes`: ns once (the
    /// sender's before its first segment, the receiver's after its last:
    /// the table's receive tail) and ns per payload byte of each of its
    /// segments (module doc); the sender's tail
    /// ([`CostTable::send_tail_ns`]) is neither.
    pub fn message_costs(&self, side: Side, bytes: u64) -> (f64, f64) {
        if self.costs.is_empty() {
            return (self.message_ns as f64, self.byte_ps as f64 / 1000.0);
        }
        let limit = self.eager_limit;
        let cost = self.costs.ns(side, bytes, limit);
        let (once, cost) = match side {
            Side::Send => {
                let before = cost - self.costs.send_tail_ns(bytes, limit);
                (self.costs.ns(side, 0, limit).min(before), before)
            }
            Side::Recv => (self.costs.recv_tail_ns(bytes, limit), cost),
        };
        let spread = (cost - once).max(0.0);
        (once, spread / (bytes + self.message_header).max(1) as f64)
    }
}
