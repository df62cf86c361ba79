//! The compute nodes' sources and injection buffers: the packets each
//! node generated and the phits in its injection buffers, and the nodes
//! with work in the injection phase ([`super::injection`] runs it).

use std::collections::VecDeque;

use crate::fabric::NONE;

/// Sources (index node, and `node * ninj + j` for injectors; compute
/// nodes are routers `0..nodes`).
pub(crate) struct Sources {
    /// Packets waiting at each node's source, the nodes with any, and
    /// whether each is listed.
    pub(super) pending: Vec<VecDeque<u32>>,
    pub(super) pending_nodes: Vec<u32>,
    pub(super) pending_listed: Vec<bool>,
    /// Injection buffer that the packet at the front of a node's source
    /// queue waits for, when `imode` picks it from the packet alone
    /// ([`NONE`] otherwise): the node is skipped until that buffer has
    /// room.
    pub(super) front_injector: Vec<u32>,
    /// Phits in each injection buffer.
    pub(super) qi_occ: Vec<u32>,
    /// Nodes with phits in their injection buffers, and whether listed.
    pub(super) inj_nodes: Vec<u32>,
    pub(super) inj_listed: Vec<bool>,
    /// Serial injection: injector in progress per node and phits moved.
    pub(super) serial_cur: Vec<u32>,
    pub(super) serial_moved: Vec<u32>,
    pub(super) serial_next: Vec<u32>,
}

impl Sources {
    /// Empty sources of `nodes` nodes with `ninj` injection buffers each.
    pub(crate) fn new(nodes: usize, ninj: usize) -> Sources {
        Sources {
            pending: vec![VecDeque::new(); nodes],
            pending_nodes: Vec::with_capacity(nodes),
            pending_listed: vec![false; nodes],
            front_injector: vec![NONE; nodes],
            qi_occ: vec![0; nodes * ninj],
            inj_nodes: Vec::with_capacity(nodes),
            inj_listed: vec![false; nodes],
            serial_cur: vec![NONE; nodes],
            serial_moved: vec![0; nodes],
            serial_next: vec![0; nodes],
        }
    }
    /// Packets waiting at this part's `node`'s source.
    pub(crate) fn source_backlog(&self, node: u32) -> usize {
        self.pending[node as usize].len()
    }

    /// Injector `j` of `node` (of `ninj`) dropped its head packet, of
    /// which `phits` were still in its buffer (`extract=1`): serial
    /// injection moves on to the next injector.
    pub(crate) fn extracted(&mut self, node: usize, j: usize, ninj: usize, phits: u32) {
        self.qi_occ[node * ninj + j] -= phits;
        if self.serial_cur[node] == j as u32 {
            self.serial_cur[node] = NONE;
            self.serial_next[node] = ((j + 1) % ninj) as u32;
        }
    }

    /// Has `data_injection` visit `node` from this cycle on.
    pub(crate) fn list_injection(&mut self, node: usize) {
        if !self.inj_listed[node] {
            self.inj_listed[node] = true;
            self.inj_nodes.push(node as u32);
        }
    }
}
