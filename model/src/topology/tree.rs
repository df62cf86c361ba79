//! Multistage trees (INSEE paper, section 2.1.2; thin-trees paper, section 3): the
//! k-ary n-tree (`fattree_K_N`), the k:k'-ary n-thin-tree
//! (`thintree_K_K'_N`) and INSEE's slim tree (`slimtree_K_K'_N`).
//!
//! Every switch has `k` downward and `k'` upward ports; switches are in
//! levels 0 (attached to the compute nodes) to n-1 (top, upward ports left
//! unplugged, as in the thin-trees paper). As in INSEE, each compute node is a network
//! element of its own with one link to its level-0 switch, so injection and
//! consumption are serialized by that link (INSEE paper, section 2.3).
//!
//! Router ids: the N compute nodes first (`0..N`), then the switches level
//! by level. Ports: `0..k'` upward, `k'..k'+k` downward (down port `d` is
//! `k' + d`); a node's only port is port 0, upward.
//!
//! A switch of level `l` covers a block of consecutive nodes of size
//! `B_l`; a packet climbs until the block of its switch holds the
//! destination (any upward port leads to a switch with that same block)
//! and then descends. Its routing record is `[up, down, 0]`: the links
//! still to climb and to descend, `L + 1` each for a lowest common level
//! `L` (node links included, INSEE's `nhops * 2`).
//!
//! - Thin tree (fat tree: `k' = k`): the level-`l` switch `w = P k'^l + q`
//!   covers block `P` of `B_l = k^(l+1)` nodes; its upward port `j` leads
//!   to switch `(P / k) k'^(l+1) + q + j k'^l` of level `l+1`, arriving at
//!   downward port `P mod k` (thin-trees paper, section 3.3: `S_l = k^(n-1-l) k'^l`
//!   switches per level).
//! - Slim tree (`k'` divides `k`): the level-`l` switch `r` leads up
//!   through port `j` to switch `k' (r / k) + j` of level `l+1`, arriving at
//!   downward port `r mod k`: every group of `k` switches shares the same
//!   `k'` parents. Level 0 has `N / k` switches, each level `k'/k` times
//!   the one below, the top `k'`; `N = k k' (k/k')^(n-1)`. Blocks: `B_0 =
//!   k`, `B_l = k^2 (k/k')^(l-1)` (switch `r` covers block `r / k'`), so
//!   from level 2 up `k'` downward ports lead towards each destination.

use rand::Rng;

use super::family::{Record, RecordRouting, TopologyFamily};

/// A built tree: sizes, levels and blocks.
#[derive(Debug, Clone)]
pub struct Tree {
    slim: bool,
    /// Downward ports per switch.
    k: u32,
    /// Upward ports per switch.
    up: u32,
    /// Switch levels.
    levels: u32,
    nodes: u32,
    /// First router id of each switch level, and one past the last switch.
    first: Vec<u32>,
    /// Nodes covered by a switch of each level.
    block: Vec<u64>,
}

/// Where a link leads: router and its arrival port.
pub type Peer = (u32, usize);

impl Tree {
    /// Builds the tree with `k` ports down and `up` ports up per switch,
    /// `levels` levels and `nodes` compute nodes (INSEE's slim tree if
    /// `slim`), as validated by the configuration layer.
    pub fn new(k: u32, up: u32, levels: u32, slim: bool, nodes: u32) -> Tree {
        let (k64, up64) = (u64::from(k), u64::from(up));
        let mut per_level = Vec::with_capacity(levels as usize);
        let mut block = Vec::with_capacity(levels as usize);
        for l in 0..levels {
            let (count, size) = if slim {
                let size = if l == 0 {
                    k64
                } else {
                    k64 * k64 * (k64 / up64).pow(l - 1)
                };
                (u64::from(nodes) / k64 * up64.pow(l) / k64.pow(l), size)
            } else {
                let size = k64.pow(l + 1);
                (u64::from(nodes) / size * up64.pow(l), size)
            };
            per_level.push(count as u32);
            block.push(size);
        }
        let mut first = vec![nodes];
        for c in &per_level {
            first.push(first.last().unwrap() + c);
        }
        Tree {
            slim,
            k,
            up,
            levels,
            nodes,
            first,
            block,
        }
    }

    /// Upward ports per switch (`k'`).
    pub fn up_ports(&self) -> usize {
        self.up as usize
    }

    /// Switches in `level`.
    pub fn switches_in(&self, level: u32) -> u32 {
        self.first[level as usize + 1] - self.first[level as usize]
    }

    /// Switch levels (`n`).
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// Level of router `r` (`None` for a compute node) and its index
    /// within the level.
    #[inline]
    pub fn level_of(&self, r: u32) -> Option<(u32, u32)> {
        if r < self.nodes {
            return None;
        }
        let l = self.first.partition_point(|&f| f <= r) - 1;
        Some((l as u32, r - self.first[l]))
    }

    /// The router and arrival port at the other end of `port` of router
    /// `r`, or `None` (a node's unused ports, the top level's upward ports).
    pub fn neighbour(&self, r: u32, port: usize) -> Option<Peer> {
        let up = self.up as usize;
        let k = self.k;
        let Some((l, w)) = self.level_of(r) else {
            return (port == 0).then(|| (self.first[0] + r / k, up + (r % k) as usize));
        };
        if port >= up {
            let d = (port - up) as u32;
            if l == 0 {
                return Some((w * k + d, 0));
            }
            // The child whose upward port leads here through down port d.
            let below = l - 1;
            let (child, j) = if self.slim {
                (k * (w / self.up) + d, w % self.up)
            } else {
                let span = self.up.pow(below);
                let (p, q) = (w / (span * self.up), w % (span * self.up));
                ((p * k + d) * span + q % span, q / span)
            };
            return Some((self.first[below as usize] + child, j as usize));
        }
        if l + 1 == self.levels {
            return None;
        }
        let j = port as u32;
        let (parent, arrive) = if self.slim {
            (self.up * (w / k) + j, w % k)
        } else {
            let span = self.up.pow(l);
            let (p, q) = (w / span, w % span);
            ((p / k) * span * self.up + q + j * span, p % k)
        };
        Some((self.first[l as usize + 1] + parent, up + arrive as usize))
    }

    /// Routing record `[up, down, 0]` from node `src` to node `dst`.
    pub fn record(&self, src: u32, dst: u32) -> Record {
        if src == dst {
            return [0; 3];
        }
        let (s, d) = (u64::from(src), u64::from(dst));
        let level = self.block.iter().position(|&b| s / b == d / b);
        let hops = level.map_or(self.levels, |l| l as u32) as i32 + 1;
        [hops, hops, 0]
    }

    /// The downward ports of switch `(level, w)` that lead towards node
    /// `dst` (inside its block): `(first, count)`, consecutive ports.
    #[inline]
    pub fn down_ports(&self, level: u32, dst: u32) -> (usize, usize) {
        let up = self.up as usize;
        let k = u64::from(self.k);
        let d = u64::from(dst);
        if level == 0 {
            return (up + (d % k) as usize, 1);
        }
        let child_block = d / self.block[level as usize - 1];
        if self.slim && level >= 2 {
            let first = (u64::from(self.up) * child_block) % k;
            (up + first as usize, self.up as usize)
        } else {
            (up + (child_block % k) as usize, 1)
        }
    }

    /// Static up port at switch level `level` for a packet from `src` on
    /// VC `vc`: `(src / k^level + vc) mod k'`, INSEE's fat-tree rule (INSEE
    /// paper section 2.2.3's "source mod k" at level 0, the next digits of
    /// the source above, shifted by the VC drawn at injection).
    #[inline]
    pub fn static_up(&self, level: u32, src: u32, vc: usize) -> usize {
        let k = u64::from(self.k);
        ((u64::from(src) / k.pow(level) + vc as u64) % u64::from(self.up)) as usize
    }

    /// Channels in the bisection, `S_(n-1) k / 2` (thin-trees paper, eq.
    /// 4); a half when `S_(n-1) k` is odd.
    fn bisection_channels(&self) -> f64 {
        f64::from(self.switches_in(self.levels - 1)) * f64::from(self.k) / 2.0
    }

    /// The thin-trees paper's links, `L = S k` (every switch's downward links, node
    /// links included).
    pub fn links(&self) -> u64 {
        (self.routers() as u64 - u64::from(self.nodes)) * u64::from(self.k)
    }
}

/// Nodes are routers of their own (numbered first), then the switches level
/// by level; ports `0..k'` upward, `k'..k'+k` downward.
impl TopologyFamily for Tree {
    /// Compute nodes.
    fn nodes(&self) -> usize {
        self.nodes as usize
    }

    /// Routers: compute nodes plus switches.
    fn routers(&self) -> usize {
        *self.first.last().unwrap() as usize
    }

    /// The compute nodes, then each level's switches: a level numbers its
    /// switches by the block of nodes they cover, so the first switches of
    /// every level below the top serve the first nodes.
    fn router_classes(&self) -> Vec<std::ops::Range<usize>> {
        std::iter::once(0..self.nodes as usize)
            .chain(self.first.windows(2).map(|w| w[0] as usize..w[1] as usize))
            .collect()
    }

    /// Ports per router: `k' + k`.
    fn ports(&self) -> usize {
        (self.up + self.k) as usize
    }

    fn link(&self, r: u32, port: usize) -> Option<Peer> {
        self.neighbour(r, port)
    }

    fn reverse_port(&self, _port: usize, arrive: usize) -> Option<usize> {
        Some(arrive)
    }

    fn indirect(&self) -> bool {
        true
    }

    /// Channels in the bisection: half the links of the top level's
    /// downward ports, `S_(n-1) k / 2` (thin-trees paper, eq. 4).
    fn bisection_links(&self) -> Option<u64> {
        Some(self.bisection_channels() as u64)
    }

    /// Ideal uniform throughput relative to the injection rate, `2 B_C /
    /// N` (thin-trees paper, eq. 3): `(k'/k)^(n-1)` for thin trees.
    fn theta(&self) -> Option<f64> {
        Some(2.0 * self.bisection_channels() / f64::from(self.nodes))
    }

    /// Theta: a node's link carries one phit per cycle.
    fn throughput_bound(&self) -> Option<f64> {
        self.theta()
    }
}

impl RecordRouting for Tree {
    /// Entry 0 (links to climb) on an upward port, 1 (to descend) on a
    /// downward one; one fewer either way.
    fn hop(&self, port: usize) -> (u8, i32) {
        (u8::from(port >= self.up_ports()), -1)
    }

    /// 0 for upward, 1 for downward ports.
    fn direction(&self, port: usize) -> (usize, bool) {
        (usize::from(port >= self.up_ports()), true)
    }

    fn record<R: Rng>(&self, src: u32, dst: u32, _rng: &mut R) -> Record {
        Tree::record(self, src, dst)
    }
}
