//! What a co-simulation run has done so far, for a progress line: the
//! coordinator ([`crate::server`]) publishes it as it goes, and whoever
//! shows progress (the `fsin` binary's status line, from another thread)
//! takes a [`CosimSnapshot`] whenever it likes.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Where a co-simulation run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CosimPhase {
    /// Waiting for the nodes to attach.
    Attaching = 0,
    /// Warm-up: long slices, frames bypass the network (a QEMU cluster
    /// boots here), until a control request or the CLEAR_STATS magic
    /// packet.
    WarmUp = 1,
    /// The measured phase.
    Measuring = 2,
    /// The run has ended: the report is being gathered.
    Ended = 3,
}

impl CosimPhase {
    /// The phase of a run past its attach: measuring or in warm-up.
    pub(crate) fn running(measuring: bool) -> CosimPhase {
        if measuring {
            CosimPhase::Measuring
        } else {
            CosimPhase::WarmUp
        }
    }

    const ALL: [CosimPhase; 4] = [
        CosimPhase::Attaching,
        CosimPhase::WarmUp,
        CosimPhase::Measuring,
        CosimPhase::Ended,
    ];
}

/// The counters of a run in progress. The coordinator writes them with
/// relaxed atomic stores once per round, so a reader may see one round's
/// slices with the previous round's frames.
#[derive(Debug, Default)]
pub struct CosimStatus {
    phase: AtomicU8,
    attached: AtomicU64,
    slices: AtomicU64,
    node_cycles: AtomicU64,
    frames_delivered: AtomicU64,
}

/// A copy of a [`CosimStatus`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CosimSnapshot {
    /// The phase the run is in.
    pub phase: CosimPhase,
    /// Nodes attached so far.
    pub nodes_attached: u64,
    /// Slices of the slice grid done (skipped idle slices included).
    pub slices: u64,
    /// The nodes' clock at the end of the last slice done, node cycles
    /// (guest time: divided by `node_clock`).
    pub node_cycles: u64,
    /// Frames handed to their destination nodes so far (warm-up's
    /// bypassed frames included).
    pub frames_delivered: u64,
}

impl CosimStatus {
    pub(crate) fn set_phase(&self, phase: CosimPhase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    pub(crate) fn set_attached(&self, nodes: u64) {
        self.attached.store(nodes, Ordering::Relaxed);
    }

    /// `slices` slices done, the last ending at node cycle `node_cycles`.
    pub(crate) fn set_slices(&self, slices: u64, node_cycles: u64) {
        self.slices.store(slices, Ordering::Relaxed);
        self.node_cycles.store(node_cycles, Ordering::Relaxed);
    }

    pub(crate) fn add_delivered(&self, frames: u64) {
        self.frames_delivered.fetch_add(frames, Ordering::Relaxed);
    }

    /// The status now.
    pub fn snapshot(&self) -> CosimSnapshot {
        CosimSnapshot {
            phase: CosimPhase::ALL
                .get(usize::from(self.phase.load(Ordering::Relaxed)))
                .copied()
                .unwrap_or(CosimPhase::Attaching),
            nodes_attached: self.attached.load(Ordering::Relaxed),
            slices: self.slices.load(Ordering::Relaxed),
            node_cycles: self.node_cycles.load(Ordering::Relaxed),
            frames_delivered: self.frames_delivered.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_gives_back_what_was_published() {
        let s = CosimStatus::default();
        assert_eq!(s.snapshot().phase, CosimPhase::Attaching);
        s.set_attached(3);
        s.set_phase(CosimPhase::WarmUp);
        s.set_slices(7, 7_000);
        s.add_delivered(2);
        s.add_delivered(5);
        s.set_phase(CosimPhase::Measuring);
        assert_eq!(
            s.snapshot(),
            CosimSnapshot {
                phase: CosimPhase::Measuring,
                nodes_attached: 3,
                slices: 7,
                node_cycles: 7_000,
                frames_delivered: 7,
            }
        );
    }
}
