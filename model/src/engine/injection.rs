//! The compute nodes' sources and injection buffers: packets generated and
//! waiting, and the nodes with work in the injection phase.

use std::collections::VecDeque;

use super::NONE;

/// Sources (index node, and `node * ninj + j` for injectors; compute
/// nodes are routers `0..nodes`).
pub(crate) struct Sources {
    /// Packets waiting at each node's source, the nodes with any, and
    /// whether each is listed.
    pub(crate) pending: Vec<VecDeque<u32>>,
    pub(crate) pending_nodes: Vec<u32>,
    pub(crate) pending_listed: Vec<bool>,
    /// Injection buffer that the packet at the front of a node's source
    /// queue waits for, when `imode` picks it from the packet alone
    /// ([`NONE`] otherwise): the node is skipped until that buffer has
    /// room.
    pub(crate) front_injector: Vec<u32>,
    /// Phits in each injection buffer.
    pub(crate) qi_occ: Vec<u32>,
    /// Nodes with phits in their injection buffers, and whether listed.
    pub(crate) inj_nodes: Vec<u32>,
    pub(crate) inj_listed: Vec<bool>,
    /// Serial injection: injector in progress per node and phits moved.
    pub(crate) serial_cur: Vec<u32>,
    pub(crate) serial_moved: Vec<u32>,
    pub(crate) serial_next: Vec<u32>,
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

    /// Has `data_injection` visit `node` from this cycle on.
    pub(crate) fn list_injection(&mut self, node: usize) {
        if !self.inj_listed[node] {
            self.inj_listed[node] = true;
            self.inj_nodes.push(node as u32);
        }
    }
}
