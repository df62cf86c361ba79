//! Routing tables over any connected graph of routers (file topologies,
//! and every network with failed links): up*/down* (Autonet's rule, as
//! used for irregular and faulty networks), deadlock-free on any
//! connected graph without virtual channels, and minimal paths
//! (`routing=shortest`, and Duato's adaptive channels).
//!
//! Up*/down*: a breadth-first search from a root (`updown_root`: router 0
//! by default, or the most central router, [`center`]) gives every router
//! a depth; a hop from `u` to `v` goes *up* when `(depth v, v) < (depth
//! u, u)`, *down* otherwise. A legal route takes any up hops first, then only
//! down hops; with every router ordered that way no cycle of channel
//! dependencies exists. Per destination node the tables hold the shortest
//! all-down distance and the shortest legal distance from every router;
//! packets take only hops that keep to a shortest legal route, so their
//! record (the links still to cross) reaches zero at the destination.

use std::collections::VecDeque;

/// Marker for "no route" in the distance tables.
const FAR: u16 = u16::MAX;

/// Most table entries (routers x nodes) the fault tables may take.
pub const MAX_ENTRIES: usize = 1 << 25;

/// Up*/down* routing tables over a faulty network.
#[derive(Debug, Clone)]
pub struct UpDown {
    nodes: usize,
    /// Sort key of each router: (depth, id) as one number.
    rank: Vec<u64>,
    /// `down[r * nodes + d]`: shortest all-down distance from `r` to `d`.
    down: Vec<u16>,
    /// `legal[r * nodes + d]`: shortest up*/down* distance.
    legal: Vec<u16>,
    /// `next[r * nodes + d]`: the ports of `r` on a shortest legal route
    /// to `d` for a packet that may still climb (0) and for one that has
    /// gone down (1), when the tables hold at most
    /// [`MASK_ENTRIES`] entries; else empty, and
    /// [`UpDown::ports`] folds them from the distances.
    next: Vec<[u128; 2]>,
}

/// Hops from router `from` to every router over `neighbour(r, p)`
/// (`u32::MAX`: unreachable).
pub(crate) fn hops(
    routers: usize,
    ports: usize,
    from: u32,
    neighbour: &impl Fn(u32, usize) -> Option<u32>,
) -> Vec<u32> {
    let mut depth = vec![u32::MAX; routers];
    depth[from as usize] = 0;
    let mut q = VecDeque::from([from]);
    while let Some(u) = q.pop_front() {
        for p in 0..ports {
            if let Some(v) = neighbour(u, p) {
                if depth[v as usize] == u32::MAX {
                    depth[v as usize] = depth[u as usize] + 1;
                    q.push_back(v);
                }
            }
        }
    }
    depth
}

/// The most central of `routers` connected routers (links
/// `neighbour(r, p)` over `ports` ports): the smallest eccentricity (its
/// longest distance to a router, in hops), then the smallest total
/// distance, then the lowest id. A breadth-first search from every
/// router: routers x links steps.
pub fn center(routers: usize, ports: usize, neighbour: impl Fn(u32, usize) -> Option<u32>) -> u32 {
    (0..routers as u32)
        .min_by_key(|&r| {
            let d = hops(routers, ports, r, &neighbour);
            let ecc = d.iter().copied().max().unwrap_or(0);
            let total: u64 = d.iter().map(|&x| u64::from(x)).sum();
            (ecc, total, r)
        })
        .unwrap_or(0)
}

impl UpDown {
    /// Builds the tables for `routers` routers (the first `nodes` are the
    /// compute nodes) whose links are given by `neighbour(r, p)` over
    /// `ports` ports, rooted at router `root`. Every node must reach the
    /// root.
    pub fn new(
        routers: usize,
        nodes: usize,
        ports: usize,
        root: u32,
        neighbour: impl Fn(u32, usize) -> Option<u32>,
    ) -> UpDown {
        let depth = hops(routers, ports, root, &neighbour);
        let rank: Vec<u64> = (0..routers)
            .map(|r| (u64::from(depth[r]) << 32) | r as u64)
            .collect();
        // Routers by rank: up hops lead to earlier ones.
        let mut order: Vec<u32> = (0..routers as u32).collect();
        order.sort_unstable_by_key(|&r| rank[r as usize]);
        let mut down = vec![FAR; routers * nodes];
        let mut legal = vec![FAR; routers * nodes];
        let mut scratch = vec![FAR; routers];
        for d in 0..nodes {
            // All-down distances: backwards from d over links whose
            // forward hop is down (from a lower rank to a higher one).
            scratch.fill(FAR);
            scratch[d] = 0;
            let mut q = VecDeque::from([d as u32]);
            while let Some(v) = q.pop_front() {
                for p in 0..ports {
                    if let Some(u) = neighbour(v, p) {
                        let is_down = rank[u as usize] < rank[v as usize];
                        if is_down && scratch[u as usize] == FAR {
                            scratch[u as usize] = scratch[v as usize] + 1;
                            q.push_back(u);
                        }
                    }
                }
            }
            // Legal distances: down only, or one up hop to a legal route;
            // up hops lead to lower ranks, done first.
            for &r in &order {
                let mut best = scratch[r as usize];
                for p in 0..ports {
                    if let Some(v) = neighbour(r, p) {
                        if rank[v as usize] < rank[r as usize] {
                            let via = legal[v as usize * nodes + d];
                            if via != FAR {
                                best = best.min(via + 1);
                            }
                        }
                    }
                }
                legal[r as usize * nodes + d] = best;
            }
            for r in 0..routers {
                down[r * nodes + d] = scratch[r];
            }
        }
        let mut ud = UpDown {
            nodes,
            rank,
            down,
            legal,
            next: Vec::new(),
        };
        if routers * nodes <= MASK_ENTRIES {
            ud.next = (0..routers * nodes)
                .map(|i| {
                    let (r, d) = ((i / nodes) as u32, (i % nodes) as u32);
                    [true, false].map(|climb| ud.fold_ports(r, d, climb, ports, &neighbour))
                })
                .collect();
        }
        ud
    }

    /// The ports of router `r` (bit set) that keep a packet to node `d`
    /// on a shortest legal route; `may_climb`: it has only gone up so
    /// far. Read from the table or folded over `r`'s links
    /// (`neighbour(r, p)` over `ports` ports, those the tables were built
    /// with).
    #[inline]
    pub fn ports(
        &self,
        r: u32,
        d: u32,
        may_climb: bool,
        ports: usize,
        neighbour: impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        match self.next.get(r as usize * self.nodes + d as usize) {
            Some(m) => m[usize::from(!may_climb)],
            None => self.fold_ports(r, d, may_climb, ports, &neighbour),
        }
    }

    /// The links left from `r` to `d` on a shortest legal route: the
    /// legal distance while the packet may climb, the all-down one after.
    fn left(&self, r: u32, d: u32, may_climb: bool) -> Option<u32> {
        if may_climb {
            self.legal(r, d)
        } else {
            self.down(r, d)
        }
    }

    fn fold_ports(
        &self,
        r: u32,
        d: u32,
        may_climb: bool,
        ports: usize,
        neighbour: &impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        let Some(left) = self.left(r, d, may_climb).filter(|&l| l > 0) else {
            return 0;
        };
        ports_where(r, ports, neighbour, |v| {
            self.on_route(r, v, d, left, may_climb)
        })
    }

    /// Whether the hop from `u` to `v` goes up.
    #[inline]
    pub fn is_up(&self, u: u32, v: u32) -> bool {
        self.rank[v as usize] < self.rank[u as usize]
    }

    /// Shortest legal distance from router `r` to node `d` (`None`: none).
    #[inline]
    pub fn legal(&self, r: u32, d: u32) -> Option<u32> {
        let x = self.legal[r as usize * self.nodes + d as usize];
        (x != FAR).then_some(u32::from(x))
    }

    /// Shortest all-down distance from router `r` to node `d`.
    #[inline]
    pub fn down(&self, r: u32, d: u32) -> Option<u32> {
        let x = self.down[r as usize * self.nodes + d as usize];
        (x != FAR).then_some(u32::from(x))
    }

    /// Whether the hop from `r` to `v` keeps a packet with `left` links to
    /// go to node `d` on a shortest legal route; `may_climb`: it has only
    /// gone up so far.
    #[inline]
    pub fn on_route(&self, r: u32, v: u32, d: u32, left: u32, may_climb: bool) -> bool {
        if self.is_up(r, v) {
            may_climb && self.legal(v, d) == Some(left - 1)
        } else {
            self.down(v, d) == Some(left - 1)
        }
    }
}

/// Minimal-path tables of a file topology (`routing=shortest`): the hops
/// from every router to every compute node, by breadth-first search from
/// each node over the links (`routers x nodes` entries).
#[derive(Debug, Clone)]
pub struct ShortestPaths {
    nodes: usize,
    /// `dist[r * nodes + d]`: links from router `r` to node `d`.
    dist: Vec<u16>,
    /// `next[r * nodes + d]`: the ports of `r` one link nearer to `d` (bit
    /// set), when the tables hold at most [`MASK_ENTRIES`] entries; else
    /// empty, and [`ShortestPaths::next`] folds them from `dist`.
    next: Vec<u128>,
}

/// Most routers x nodes entries for which the routing tables keep each
/// router's ports towards each node (16 bytes an entry, 16 MiB; up*/down*
/// keeps two, 32 MiB): a request then reads its ports instead of folding
/// them over the router's links.
pub const MASK_ENTRIES: usize = 1 << 20;

/// The ports `p` (bit set) of router `r` whose neighbour `v` passes
/// `keep(v)`.
pub(crate) fn ports_where(
    r: u32,
    ports: usize,
    neighbour: &impl Fn(u32, usize) -> Option<u32>,
    keep: impl Fn(u32) -> bool,
) -> u128 {
    (0..ports)
        .filter(|&p| neighbour(r, p).is_some_and(&keep))
        .fold(0, |m, p| m | 1 << p)
}

impl ShortestPaths {
    /// The tables of `routers` routers (the first `nodes` are the compute
    /// nodes' own, as the engine numbers them) whose links are
    /// `neighbour(r, p)` over `ports` ports, full duplex. Every node
    /// reaches every router (the file was checked connected).
    pub fn new(
        routers: usize,
        nodes: usize,
        ports: usize,
        neighbour: impl Fn(u32, usize) -> Option<u32>,
    ) -> ShortestPaths {
        let mut dist = vec![u16::MAX; routers * nodes];
        let mut queue = std::collections::VecDeque::new();
        for d in 0..nodes {
            dist[d * nodes + d] = 0;
            queue.push_back(d as u32);
            while let Some(u) = queue.pop_front() {
                let du = dist[u as usize * nodes + d];
                for p in 0..ports {
                    if let Some(v) = neighbour(u, p) {
                        let at = v as usize * nodes + d;
                        if dist[at] == u16::MAX {
                            dist[at] = du.saturating_add(1);
                            queue.push_back(v);
                        }
                    }
                }
            }
        }
        let mut sp = ShortestPaths {
            nodes,
            dist,
            next: Vec::new(),
        };
        if routers * nodes <= MASK_ENTRIES {
            sp.next = (0..routers * nodes)
                .map(|i| sp.fold_next((i / nodes) as u32, (i % nodes) as u32, ports, &neighbour))
                .collect();
        }
        sp
    }

    /// Links from router `r` to node `d`.
    #[inline]
    pub fn dist(&self, r: u32, d: u32) -> u32 {
        u32::from(self.dist[r as usize * self.nodes + d as usize])
    }

    /// The ports of router `r` one link nearer to node `d` (bit set), read
    /// from the table or folded over `r`'s links (`neighbour(r, p)` over
    /// `ports` ports, those the tables were built with).
    #[inline]
    pub fn next(
        &self,
        r: u32,
        d: u32,
        ports: usize,
        neighbour: impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        match self.next.get(r as usize * self.nodes + d as usize) {
            Some(&m) => m,
            None => self.fold_next(r, d, ports, &neighbour),
        }
    }

    fn fold_next(
        &self,
        r: u32,
        d: u32,
        ports: usize,
        neighbour: &impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        let left = self.dist(r, d);
        ports_where(r, ports, neighbour, |v| self.dist(v, d) + 1 == left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of five routers, all of them nodes.
    fn ring5(r: u32, p: usize) -> Option<u32> {
        Some(if p == 0 { (r + 1) % 5 } else { (r + 4) % 5 })
    }

    #[test]
    fn up_down_on_a_ring_of_five_by_hand() {
        // Depths from router 0: 1 and 4 at 1, 2 and 3 at 2; ranks order
        // 0, 1, 4, 2, 3. 4 -> 3 goes down and 3 -> 2 up, so the two-hop
        // path from 4 to 2 is illegal: the legal route climbs 4 -> 0 and
        // descends 0 -> 1 -> 2 (3 hops). 1 -> 2 -> 3 descends (2 hops).
        let ud = UpDown::new(5, 5, 2, 0, ring5);
        assert!(ud.is_up(4, 0) && !ud.is_up(4, 3) && ud.is_up(3, 2));
        assert_eq!(ud.legal(4, 2), Some(3));
        assert_eq!(ud.down(4, 2), None);
        assert_eq!(ud.legal(1, 3), Some(2));
        assert_eq!(ud.down(1, 3), Some(2));
        assert_eq!(ud.legal(3, 2), Some(1));
        // From 4 towards 2 only the climb to 0 stays on a shortest route.
        assert!(ud.on_route(4, 0, 2, 3, true));
        assert!(!ud.on_route(4, 3, 2, 3, true));
        // Once it has gone down, a packet may not climb again.
        assert!(!ud.on_route(3, 2, 2, 1, false));
    }

    /// The ring of five with router 5 hanging on router 2.
    fn ring5_tail(r: u32, p: usize) -> Option<u32> {
        match (r, p) {
            (5, 0) => Some(2),
            (5, _) => None,
            (2, 2) => Some(5),
            (_, 2) => None,
            _ => ring5(r, p),
        }
    }

    #[test]
    fn the_center_roots_shorter_legal_routes_by_hand() {
        // Eccentricities: 3 for routers 0, 4 and 5 (0 and 4 reach 5 in
        // three hops), 2 for 1, 2 and 3; of those, total distances 8, 7
        // and 8: router 2 is the center.
        assert_eq!(center(6, 3, ring5_tail), 2);
        // From router 2, ranks order 2, 1, 3, 5, 0, 4: 4 -> 3 -> 2 climbs
        // twice, a legal route of 2 hops, where the root 0 forces 3 (the
        // ring test above).
        let ud = UpDown::new(6, 6, 3, 2, ring5_tail);
        assert!(ud.is_up(4, 3) && ud.is_up(3, 2) && ud.is_up(4, 0) && ud.is_up(0, 1));
        assert_eq!(ud.legal(4, 2), Some(2));
        assert_eq!(ud.legal(4, 1), Some(2));
        assert_eq!(UpDown::new(6, 6, 3, 0, ring5_tail).legal(4, 2), Some(3));
        // The ports towards 2: from 4 only the climb to 3 (port 1); from 3
        // the climb to 2, which a packet that came down to 3 may not take
        // (no legal route of its would pass there).
        assert_eq!(ud.ports(4, 2, true, 3, ring5_tail), 0b10);
        assert_eq!(ud.ports(3, 2, true, 3, ring5_tail), 0b10);
        assert_eq!(ud.ports(3, 2, false, 3, ring5_tail), 0);
        // The table and the fold agree everywhere.
        for r in 0..6 {
            for d in 0..6 {
                for climb in [true, false] {
                    let folded = ud.fold_ports(r, d, climb, 3, &ring5_tail);
                    assert_eq!(ud.ports(r, d, climb, 3, ring5_tail), folded);
                }
            }
        }
    }

    /// A ring of eight routers, all of them nodes.
    fn ring8(r: u32, p: usize) -> Option<u32> {
        Some(if p == 0 { (r + 1) % 8 } else { (r + 7) % 8 })
    }

    /// A balanced dragonfly of groups of four fully connected routers
    /// with two global links each (nine groups, 36 routers), global links
    /// in the consecutive arrangement (`fsin topology --write
    /// dragonfly_4_2_1`): ports 0-2 local, 3-4 global; group G's global
    /// link j (router j / 2, port 3 + j % 2) leads to group j if j < G,
    /// else j + 1, arriving on that group's link back to G.
    fn dragonfly(r: u32, p: usize) -> Option<u32> {
        let (g, i) = (r / 4, r % 4);
        if p < 3 {
            let other = if (p as u32) < i {
                p as u32
            } else {
                p as u32 + 1
            };
            return Some(g * 4 + other);
        }
        let j = i * 2 + (p as u32 - 3);
        let to = if j < g { j } else { j + 1 };
        let back = if g < to { g } else { g - 1 };
        Some(to * 4 + back / 2)
    }

    /// The channel dependency graph of a routing function over
    /// `routers` routers of `ports` ports, all of them nodes: the
    /// channels `(router, port)` a packet to some node may hold while it
    /// asks for the next one, found by following every packet from every
    /// source with the ports `route(r, d, climb)` offers (`climb`: it has
    /// only gone up so far, as `up(r, v)` says of each hop). Panics if a
    /// packet reaches a router other than its destination with no port
    /// (a pair the routing cannot deliver).
    fn dependencies(
        routers: u32,
        ports: usize,
        neighbour: impl Fn(u32, usize) -> Option<u32>,
        route: impl Fn(u32, u32, bool) -> u128,
        up: impl Fn(u32, u32) -> bool,
    ) -> Vec<Vec<usize>> {
        let channel = |r: u32, p: usize| r as usize * ports + p;
        let mut edges = vec![Vec::new(); routers as usize * ports];
        for d in 0..routers {
            // States: (router, may climb, the channel it came in on).
            let mut seen = std::collections::HashSet::new();
            let mut q: VecDeque<(u32, bool, Option<usize>)> =
                (0..routers).map(|s| (s, true, None)).collect();
            while let Some((r, climb, came)) = q.pop_front() {
                if r == d || !seen.insert((r, climb, came)) {
                    continue;
                }
                let mask = route(r, d, climb);
                assert_ne!(mask, 0, "router {r} has no port towards {d}");
                for p in (0..ports).filter(|&p| mask >> p & 1 == 1) {
                    let v = neighbour(r, p).expect("a routed port has a link");
                    if let Some(c) = came {
                        if !edges[c].contains(&channel(r, p)) {
                            edges[c].push(channel(r, p));
                        }
                    }
                    q.push_back((v, climb && up(r, v), Some(channel(r, p))));
                }
            }
        }
        edges
    }

    /// Whether the directed graph `edges` has a cycle (depth-first search
    /// with three colours).
    fn has_cycle(edges: &[Vec<usize>]) -> bool {
        fn visit(v: usize, edges: &[Vec<usize>], colour: &mut [u8]) -> bool {
            colour[v] = 1;
            for &w in &edges[v] {
                if colour[w] == 1 || (colour[w] == 0 && visit(w, edges, colour)) {
                    return true;
                }
            }
            colour[v] = 2;
            false
        }
        let mut colour = vec![0u8; edges.len()];
        (0..edges.len()).any(|v| colour[v] == 0 && visit(v, edges, &mut colour))
    }

    /// Up*/down* on a ring of eight and on a dragonfly of 36 routers:
    /// every pair is routed, and the channels' dependencies, built from
    /// the tables' ports, have no cycle (checked, not assumed). The check
    /// can fail: every minimal port on the ring, without up*/down*, has a
    /// cycle around it.
    #[test]
    fn up_down_channel_dependencies_have_no_cycle() {
        for (name, routers, ports, neighbour) in [
            ("ring of 8", 8, 2, ring8 as fn(u32, usize) -> Option<u32>),
            ("dragonfly", 36, 5, dragonfly),
        ] {
            for r in 0..routers {
                for p in 0..ports {
                    let v = neighbour(r, p).unwrap();
                    assert!((0..ports).any(|q| neighbour(v, q) == Some(r)), "{name}");
                }
            }
            for root in [0, center(routers as usize, ports, neighbour)] {
                let ud = UpDown::new(routers as usize, routers as usize, ports, root, neighbour);
                let deps = dependencies(
                    routers,
                    ports,
                    neighbour,
                    |r, d, climb| ud.ports(r, d, climb, ports, neighbour),
                    |u, v| ud.is_up(u, v),
                );
                assert!(!has_cycle(&deps), "{name}, root {root}");
            }
        }
        let minimal = |r: u32, d: u32, _: bool| {
            let cw = (d + 8 - r) % 8;
            match cw {
                1..=3 => 0b01,
                4 => 0b11,
                _ => 0b10,
            }
        };
        assert!(has_cycle(&dependencies(8, 2, ring8, minimal, |_, _| true)));
    }

    /// A ring of 6 routers (ports 0: next, 1: previous).
    fn ring6(r: u32, p: usize) -> Option<u32> {
        Some(if p == 0 { (r + 1) % 6 } else { (r + 5) % 6 })
    }

    #[test]
    fn the_next_ports_are_the_ones_a_link_nearer_by_hand() {
        let sp = ShortestPaths::new(6, 6, 2, ring6);
        assert!(!sp.next.is_empty());
        // From 0: 1 and 2 by port 0, 4 and 5 by port 1, 3 both ways.
        let want = [0, 0b01, 0b01, 0b11, 0b10, 0b10];
        for (d, &m) in want.iter().enumerate() {
            assert_eq!(sp.next(0, d as u32, 2, ring6), m, "to {d}");
        }
        // The table and the fold agree everywhere.
        for r in 0..6 {
            for d in 0..6 {
                assert_eq!(sp.next(r, d, 2, ring6), sp.fold_next(r, d, 2, &ring6));
            }
        }
    }
}
