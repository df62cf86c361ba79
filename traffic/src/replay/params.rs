//! How a replay maps the network's cycles to its nodes' and carries a
//! frame between them: the parameters of a [`super::Replay`].

use fsin_trace::Trace;

use crate::SliceRatio;

/// How receives are treated (`trace_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceMode {
    /// Receives block until their message has arrived (traces paper, 4.2).
    Causal,
    /// Receives are ignored; every task sends as fast as the network and
    /// its computations allow (traces paper, 4.1).
    AtWill,
}

/// Replay parameters.
#[derive(Debug, Clone, Copy)]
pub struct ReplayParams {
    /// Bytes per packet (`plength * phit bytes`).
    pub packet_bytes: u64,
    /// Network cycles per CPU unit of `c` events (after `cpu_speed`).
    pub cycles_per_unit: f64,
    /// CPU speed relative to the traced machine (`cpu_speed`), which
    /// divides computations given in network cycles (Dimemas bursts).
    pub cpu_speed: f64,
    /// Whether receives wait for their messages (`trace_mode`).
    pub mode: TraceMode,
    /// The co-simulation's slice ratio (`fsin_cycle_relation`,
    /// `node_cycle_relation`), for frame traces.
    pub slice: SliceRatio,
    /// Network cycles from a frame's last phit to its NIC (`nic_latency`),
    /// for frame traces.
    pub nic_latency: u64,
    /// How the frames of MPI-level traces ([`Trace::mpi`]) enter and
    /// leave the network, as the co-simulation's `sync_mode` would carry
    /// the guests' frames.
    pub sync: SliceSync,
}

/// How co-simulation carries a frame between its node and the network
/// (`sync_mode`; docs/cosim.md, "Modes"), for MPI-level traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceSync {
    /// Injected at its cycle, handed over at its cycle.
    Exact,
    /// Injected at its cycle, handed over at the start of the slice after
    /// the one it arrives in.
    Lockstep,
    /// Injected one slice after its cycle (the network runs a slice
    /// behind), handed over as in lock-step.
    Parallel,
}

impl ReplayParams {
    /// Network cycle of node cycle `n` at the slice ratio (frame traces).
    pub fn net_of(&self, n: u64) -> u64 {
        let SliceRatio { net, node } = self.slice;
        (u128::from(n) * u128::from(net) / u128::from(node.max(1))) as u64
    }

    /// First node cycle of network cycle `t` at the slice ratio.
    pub fn node_of(&self, t: u64) -> u64 {
        let SliceRatio { net, node } = self.slice;
        (u128::from(t) * u128::from(node)).div_ceil(u128::from(net.max(1))) as u64
    }

    /// The node cycle at which a frame of `trace` that reaches its NIC in
    /// network cycle `t` reaches its task: [`ReplayParams::node_of`], or
    /// in lock-step and parallel [`ReplayParams::sync`] (MPI-level
    /// traces) the start of the next slice.
    pub fn arrival_node(&self, trace: &Trace, t: u64) -> u64 {
        if self.sync != SliceSync::Exact && trace.mpi {
            let SliceRatio { net, node } = self.slice;
            (t / net.max(1) + 1).saturating_mul(node)
        } else {
            self.node_of(t)
        }
    }

    /// The node cycle at which a frame of `trace` that reached its NIC in
    /// network cycle `ready` reaches its node's kernel: its arrival
    /// ([`ReplayParams::arrival_node`]) and the `held` node cycles its
    /// NIC's window held it back ([`Trace::irq`]).
    pub(super) fn kernel_node(&self, trace: &Trace, ready: u64, held: u64) -> u64 {
        self.arrival_node(trace, ready) + held
    }

    /// A frame of `trace` that reached its NIC in network cycle `ready`,
    /// received by a task at node cycle `node_time`: the task's node cycle
    /// once it has the frame (for frame traces; [`Self::arrival_node`])
    /// and the network cycle it goes on at (an MPI-level trace's task at
    /// its new node cycle, others at `ready`).
    /// An MPI-level trace's task that waited for the frame (it arrives
    /// after the task's own node cycle) pays its wake-up, [`Trace::wake`],
    /// and `poll` node cycles (its event loop's poll of its connections,
    /// [`Trace::poll`]) after the kernel's receive of the frame,
    /// [`Trace::rx`], from `arrival`, the node cycle the frame reached
    /// the kernel ([`ReplayParams::kernel_node`]).
    pub(super) fn hand_over(
        &self,
        trace: &Trace,
        (node_time, poll): (u64, u64),
        (ready, arrival): (u64, u64),
    ) -> (u64, u64) {
        let node_time = if trace.mpi && arrival > node_time {
            (arrival.saturating_add(trace.wake).saturating_add(trace.rx)).saturating_add(poll)
        } else {
            node_time.max(arrival)
        };
        let at = if trace.mpi {
            self.net_of(node_time).max(ready)
        } else {
            ready
        };
        (node_time, at)
    }

    /// Network cycles (unrounded) of a computation of `amount` in `trace`:
    /// CPU units times `cycles_per_unit`, cycles over `cpu_speed` when
    /// the trace gives cycles ([`Trace::cpu_in_cycles`]), node cycles over
    /// `cpu_speed` in a frame trace.
    pub fn cpu_cycles(&self, trace: &Trace, amount: u64) -> f64 {
        if trace.frames || trace.cpu_in_cycles {
            amount as f64 / self.cpu_speed
        } else {
            amount as f64 * self.cycles_per_unit
        }
    }
}
