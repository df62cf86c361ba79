//! Unit tests of the network model (crate `fsin-model`) that describe
//! their networks with INSEE's settings: they live here, above the
//! configuration layer that parses those (the model knows no key names).

mod topology {
    use fsin::config::Config;
    use fsin_model::topology::*;

    fn sum(settings: &[&str]) -> TopologySummary {
        let cfg = Config::from_settings(settings).unwrap();
        summary(&cfg.net, cfg.topology_name()).expect("a valid network")
    }

    #[test]
    fn torus_and_mesh_against_closed_forms() {
        // 8x8 torus: 64 nodes, 128 router links + 64 node links, diameter
        // 8, mean distance 4 * 64 / 63 (every ring of 8 adds 2 on average
        // over all 64 nodes, self included), bisection 2 * 8 links.
        let t = sum(&["topo=torus_8_8"]);
        assert_eq!(
            (t.nodes, t.switches, t.router_links, t.links),
            (64, 64, 128, 192)
        );
        assert_eq!(t.diameter, 8);
        assert!((t.avg_distance - 4.0 * 64.0 / 63.0).abs() < 1e-12);
        assert_eq!(
            (t.bisection_links, t.throughput_bound),
            (Some(16), Some(1.0))
        );
        // 4x4 mesh: 24 links, diameter 6, mean 2 * (64 - 4) / 3 / 16 per
        // dimension over ordered pairs, 8/3 in all, over 240 distinct pairs.
        let m = sum(&["topo=mesh_4_4"]);
        assert_eq!(
            (m.router_links, m.diameter, m.bisection_links),
            (24, 6, Some(4))
        );
        assert!(
            (m.avg_distance - 2.0 * 4.0 * 4.0 * 20.0 / 240.0).abs() < 1e-12,
            "{}",
            m.avg_distance
        );
        // The closed form used for large meshes agrees with the search.
        let (d, a) = mesh_distances(&[4, 4]);
        assert_eq!(d, 6);
        assert!((a - m.avg_distance).abs() < 1e-12);
        let (d, a) = mesh_distances(&[5, 3, 2]);
        let b = sum(&["topo=mesh_5_3_2"]);
        assert_eq!((d, b.diameter), (7, 7));
        assert!((a - b.avg_distance).abs() < 1e-12);
        // Unidirectional ring of 5: every node 1..4 hops away.
        let u = sum(&["topo=torus_5", "nways=1"]);
        assert_eq!((u.router_links, u.diameter), (5, 4));
        assert!((u.avg_distance - 2.5).abs() < 1e-12);
        // Midimew of 32 nodes (jumps 4 and 3): the minimum-distance
        // circulant of degree 4 has diameter 4.
        let w = sum(&["topo=midimew_32"]);
        assert_eq!(
            (w.router_links, w.diameter, w.bisection_links),
            (64, 4, None)
        );
    }

    /// The thin-trees paper, Tables 2 and 3: nodes, switches, radix and links of the
    /// thin trees, counted on the built topology (links of both ends
    /// paired, node links included); and Theta = (k'/k)^(n-1).
    #[test]
    fn thin_trees_match_the_thin_trees_paper_tables() {
        let table2 = [
            // (k', nodes, switches, links) for 8:k',2 / 8:k',3 / 8:k',4.
            (2, [(1, 9, 72), (2, 10, 80), (3, 11, 88), (4, 12, 96)]),
            (2, [(5, 13, 104), (6, 14, 112), (7, 15, 120), (8, 16, 128)]),
            (3, [(1, 73, 584), (2, 84, 672), (3, 97, 776), (4, 112, 896)]),
            (
                3,
                [
                    (5, 129, 1032),
                    (6, 148, 1184),
                    (7, 169, 1352),
                    (8, 192, 1536),
                ],
            ),
            (
                4,
                [
                    (1, 585, 4680),
                    (2, 680, 5440),
                    (3, 803, 6424),
                    (4, 960, 7680),
                ],
            ),
            (
                4,
                [
                    (5, 1157, 9256),
                    (6, 1400, 11200),
                    (7, 1695, 13560),
                    (8, 2048, 16384),
                ],
            ),
        ];
        for (n, row) in table2 {
            for (up, switches, links) in row {
                let s = sum(&[&format!("topo=thintree_8_{up}_{n}")]);
                assert_eq!(
                    (s.nodes, s.switches, s.ports, s.links),
                    (8u64.pow(n), switches, 8 + up, links),
                    "8:{up},{n}"
                );
                let theta = (f64::from(up as u32) / 8.0).powi(n as i32 - 1);
                assert!((s.theta.unwrap() - theta).abs() < 1e-12, "8:{up},{n}");
            }
        }
        // Table 3 (switches of radix 12).
        for (k, up, n, nodes, switches, links) in [
            (11, 1, 2, 121, 12, 132),
            (10, 2, 2, 100, 12, 120),
            (9, 3, 2, 81, 12, 108),
            (7, 5, 3, 343, 109, 763),
            (6, 6, 3, 216, 108, 648),
            (11, 1, 3, 1331, 133, 1463),
            (10, 2, 3, 1000, 124, 1240),
            (9, 3, 3, 729, 117, 1053),
            (7, 5, 4, 2401, 888, 6216),
            (6, 6, 4, 1296, 864, 5184),
            (10, 2, 4, 10000, 1248, 12480),
            (9, 3, 4, 6561, 1080, 9720),
        ] {
            let s = sum(&[&format!("topo=thintree_{k}_{up}_{n}")]);
            assert_eq!(
                (s.nodes, s.switches, s.ports, s.links),
                (nodes, switches, 12, links),
                "{k}:{up},{n}"
            );
        }
        // The k-ary n-tree names the 1:1 case: 8:8,4 has Theta 1.
        let f = sum(&["topo=fattree_8_4"]);
        assert_eq!((f.switches, f.links, f.theta), (2048, 16384, Some(1.0)));
    }

    #[test]
    fn tree_and_hypercube_distances_by_hand() {
        // 4-ary 3-tree: from a node, 3 others 2 links away (same switch),
        // 12 at 4, 48 at 6.
        let f = sum(&["topo=fattree_4_3"]);
        assert_eq!((f.diameter, f.bisection_links), (6, Some(32)));
        assert!((f.avg_distance - (3.0 * 2.0 + 12.0 * 4.0 + 48.0 * 6.0) / 63.0).abs() < 1e-12);
        // 4:2-ary 3-thin-tree: same distances, 28 switches (16 + 8 + 4),
        // 8 channels in the bisection, Theta 1/4.
        let t = sum(&["topo=thintree_4_2_3"]);
        assert_eq!((t.switches, t.links, t.bisection_links), (28, 112, Some(8)));
        assert!((t.avg_distance - f.avg_distance).abs() < 1e-12);
        assert_eq!(t.theta, Some(0.25));
        // Hypercube of 6 dimensions: 192 links, mean distance n/2 over
        // every node but self, N/2 links in the bisection.
        let h = sum(&["topo=hypercube_6"]);
        assert_eq!(
            (h.nodes, h.router_links, h.diameter, h.bisection_links),
            (64, 192, 6, Some(32))
        );
        assert!((h.avg_distance - 3.0 * 64.0 / 63.0).abs() < 1e-12);
    }

    #[test]
    fn every_node_reaches_every_other_and_routes_are_minimal() {
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        for settings in [
            &["topo=torus_5_4"][..],
            &["topo=torus_4_4_2"],
            &["topo=mesh_3_4"],
            &["topo=torus_6", "nways=1"],
            &["topo=ttorus_4_4", "sk_xy=1"],
            &["topo=ttorus_6_3", "sk_xy=2"],
            &["topo=midimew_13"],
            &["topo=midimew_50"],
            &["topo=circulant_16_4"],
            &["topo=circulant_23_5"],
            &["topo=circulant_10_5"],
            &["topo=fattree_3_3"],
            &["topo=thintree_4_3_3"],
            &["topo=slimtree_4_2_3"],
            &["topo=hypercube_5"],
            &["topo=spinnaker_5_4"],
            &["topo=icube_2_1_4_3"],
            &["topo=icube_1_2_5"],
        ] {
            let cfg = Config::from_settings(settings).unwrap();
            let topo = Topology::build(&cfg.net).expect("a valid network");
            for src in 0..topo.nodes() as u32 {
                let dist = hops_from(&topo, src);
                for (dst, &d) in dist.iter().enumerate() {
                    assert_ne!(d, u32::MAX, "{settings:?}: {src} -> {dst} unreachable");
                    if dst as u32 == src {
                        continue; // no packet is addressed to its source
                    }
                    let r = topo.record(src, dst as u32, &mut rng);
                    let hops = topo.hops(&r);
                    assert_eq!(hops, d, "{settings:?}: {src} -> {dst} record {r:?}");
                }
            }
        }
    }
}

mod cube {
    use fsin::config::{Config, ConfigError};
    use fsin_model::topology::cube::*;
    use fsin_model::topology::{Record, RecordRouting, TopologyFamily};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;
    use std::collections::VecDeque;

    fn cube(settings: &[&str]) -> Cube {
        Cube::new(&Config::from_settings(settings).unwrap().net)
    }

    /// Hop distances from `src` by breadth-first search over built links.
    fn bfs(c: &Cube, src: u32) -> Vec<u32> {
        let mut dist = vec![u32::MAX; c.nodes()];
        dist[src as usize] = 0;
        let mut q = VecDeque::from([src]);
        while let Some(u) = q.pop_front() {
            for p in 0..c.ports() {
                if let Some(v) = c.neighbour(u, p) {
                    if dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        q.push_back(v);
                    }
                }
            }
        }
        dist
    }

    /// Follows a record in dimension order; returns the node reached.
    fn walk(c: &Cube, mut node: u32, rec: Record) -> u32 {
        for (dim, &hops) in rec.iter().enumerate().take(c.ndim()) {
            let port = c.port(dim, hops > 0);
            for _ in 0..hops.unsigned_abs() {
                node = c.neighbour(node, port).expect("link exists");
            }
        }
        node
    }

    fn check_minimal_records(c: &Cube) {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        for s in 0..c.nodes() as u32 {
            let dist = bfs(c, s);
            for d in 0..c.nodes() as u32 {
                let rec = c.record(s, d, &mut rng);
                assert_eq!(walk(c, s, rec), d, "record {rec:?} from {s} misses {d}");
                let hops: i32 = rec.iter().map(|x| x.abs()).sum();
                assert_eq!(
                    hops as u32, dist[d as usize],
                    "record {rec:?} from {s} to {d}"
                );
            }
        }
    }

    #[test]
    fn records_are_minimal_and_reach_destination() {
        for t in [
            vec!["topo=torus_8_8"],
            vec!["topo=torus_5_4_3"],
            vec!["topo=mesh_4_5"],
            vec!["topo=mesh_3_3_3"],
            vec!["topo=torus_7", "nways=1"],
            vec!["topo=torus_4_4", "nways=1"],
            vec!["topo=ttorus_8_4", "sk_xy=2"],
            vec!["topo=ttorus_4_8", "sk_yx=2"],
            vec!["topo=ttorus_6_3", "sk_xy=1"],
            vec!["topo=ttorus_4_4_4", "sk_xz=1"],
            vec!["topo=ttorus_4_4_4", "sk_xz=2", "sk_yz=2"],
            vec!["topo=ttorus_4_6_4", "sk_yx=2", "sk_zx=1"],
            vec!["topo=midimew_13"],
            vec!["topo=midimew_32"],
            vec!["topo=midimew_50"],
            vec!["topo=circulant_16_4"],
            vec!["topo=circulant_23_5"],
            vec!["topo=circulant_10_5"],
            vec!["topo=spinnaker_4_4"],
            vec!["topo=spinnaker_6_4"],
            vec!["topo=spinnaker_5_7"],
        ] {
            check_minimal_records(&cube(&t));
        }
    }

    #[test]
    fn spinnaker_links_and_routes_by_hand() {
        // 4x4 (INSEE paper Fig. 2e): node 5 = (1, 1) links U to 6 and 4, V to
        // 9 and 1, W to (2, 2) = 10 and (0, 0) = 0; (3, 3) W+ wraps to 0.
        let c = cube(&["topo=spinnaker_4_4"]);
        let ns: Vec<u32> = (0..6).filter_map(|p| c.neighbour(5, p)).collect();
        assert_eq!(ns, [6, 4, 9, 1, 10, 0]);
        assert_eq!(c.neighbour(15, c.port(2, true)), Some(0));
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        // (0,0) -> (2,2): two diagonal hops; -> (2,1): one W and one U;
        // -> (3,1): U- (wrapping) and V+, 2 hops.
        assert_eq!(c.record(0, 10, &mut rng), [0, 0, 2]);
        assert_eq!(c.record(0, 6, &mut rng), [1, 0, 1]);
        assert_eq!(c.record(0, 7, &mut rng), [-1, 1, 0]);
        // Diameter of the 4x4 triangular torus: 2 (BFS).
        assert_eq!(bfs(&c, 0).into_iter().max(), Some(2));
    }

    #[test]
    fn circulant_jumps_and_every_minimal_route() {
        // C_16(1, 4): node 0 links to 1, 15, 4, 12. Offset 6 takes 3 hops,
        // only as +4 +1 +1 (2, 1) (+4 +4 -1 -1 and -4 -4 -1 -1 take 4).
        // Offset 8 takes 2 hops either way: (0, 2) and (0, -2).
        let c = cube(&["topo=circulant_16_4"]);
        let ns: Vec<u32> = (0..4).filter_map(|p| c.neighbour(0, p)).collect();
        assert_eq!(ns, [1, 15, 4, 12]);
        assert_eq!(c.circulant_routes(6), [(2, 1)]);
        let mut r8 = c.circulant_routes(8).to_vec();
        r8.sort_unstable();
        assert_eq!(r8, [(0, -2), (0, 2)]);
        // circpk_3_1 (INSEE): N = 2 * 3^2 = 18, jump 2 * 1 * 3 - 1 = 5;
        // circpk_4_3: N = 32, jump 23, i.e. 32 - 23 = 9.
        let c = cube(&["topo=circpk_3_1"]);
        assert_eq!((c.nodes(), c.neighbour(0, 2)), (18, Some(5)));
        let c = cube(&["topo=circpk_4_3"]);
        assert_eq!((c.nodes(), c.neighbour(0, 2)), (32, Some(9)));
        check_minimal_records(&c);
        // gcd(4, 2) = 2: the jump does not generate the ring.
        let shared = Config::from_settings(&["topo=circpk_4_2"]).map(|_| ());
        assert!(
            matches!(&shared, Err(ConfigError::BadValue { key, value, .. })
                if key == "topo" && value == "circpk_4_2"),
            "{shared:?}"
        );
    }

    #[test]
    fn mesh_edges_have_no_links() {
        let c = cube(&["topo=mesh_4_4"]);
        assert_eq!(c.neighbour(0, c.port(0, false)), None);
        assert_eq!(c.neighbour(3, c.port(0, true)), None);
        assert_eq!(c.neighbour(0, c.port(0, true)), Some(1));
        assert_eq!(c.neighbour(0, c.port(1, true)), Some(4));
    }

    #[test]
    fn twisted_wrap_shifts_the_other_dimension() {
        // 4x4 with sk_xy=2: (3, y) -> X+ -> (0, y+2 mod 4), INSEE paper Fig. 2d.
        let c = cube(&["topo=ttorus_4_4", "sk_xy=2"]);
        assert_eq!(c.neighbour(3, c.port(0, true)), Some(8)); // (0,2)
        assert_eq!(c.neighbour(8, c.port(0, false)), Some(3));
        assert_eq!(c.neighbour(1 + 4 * 3, c.port(1, true)), Some(1)); // Y wrap: plain
    }

    #[test]
    fn midimew_13_is_circulant_3_4() {
        // b = ceil(sqrt(6.5)) = 3: jumps 3 and 2; diameter 2 covers 13 nodes.
        let c = cube(&["topo=midimew_13"]);
        assert_eq!(c.neighbour(0, c.port(0, true)), Some(3));
        assert_eq!(c.neighbour(0, c.port(1, false)), Some(11));
        assert_eq!(bfs(&c, 0).into_iter().max(), Some(2));
    }
}

mod tree {
    use fsin::config::{Config, FamilyParams, TopoKind};
    use fsin_model::topology::tree::*;
    use fsin_model::topology::TopologyFamily;

    fn tree(topo: &str) -> Tree {
        let cfg = Config::from_settings(&[topo]).unwrap();
        let FamilyParams::Tree { down, up, levels } = cfg.net.family else {
            panic!("{topo} is not a tree");
        };
        Tree::new(
            down,
            up,
            levels,
            cfg.net.topo == TopoKind::SlimTree,
            cfg.net.dims[0],
        )
    }

    /// Follows the routing functions through the built links from `src`
    /// to `dst`, taking the static choice (`pick = None`) or the `pick`-th
    /// of every set of profitable ports; returns the links crossed.
    fn walk(t: &Tree, src: u32, dst: u32, pick: Option<usize>) -> u32 {
        let [mut up, mut down, _] = t.record(src, dst);
        let (mut r, mut links) = (src, 0);
        while up + down > 0 {
            let port = match t.level_of(r) {
                None => 0,
                Some((l, _)) if up > 0 => match pick {
                    None => t.static_up(l, src, 1),
                    Some(i) => i % t.up_ports(),
                },
                Some((l, _)) => {
                    let (first, count) = t.down_ports(l, dst);
                    first + pick.map_or(dst as usize % count, |i| i % count)
                }
            };
            let (next, arrive) = t.neighbour(r, port).expect("a link on the route");
            assert_eq!(t.neighbour(next, arrive), Some((r, port)), "links pair up");
            if up > 0 {
                up -= 1;
            } else {
                down -= 1;
            }
            r = next;
            links += 1;
        }
        assert_eq!(r, dst, "route {src} -> {dst} ends at {r}");
        links
    }

    #[test]
    fn every_route_reaches_its_destination_through_the_built_links() {
        for topo in [
            "topo=fattree_4_3",
            "topo=fattree_2_4",
            "topo=thintree_4_2_3",
            "topo=thintree_3_1_3",
            "topo=thintree_8_6_2",
            "topo=slimtree_4_2_3",
            "topo=slimtree_6_3_3",
            "topo=slimtree_4_1_4",
        ] {
            let t = tree(topo);
            for src in 0..t.nodes() as u32 {
                for dst in 0..t.nodes() as u32 {
                    if src == dst {
                        continue;
                    }
                    let [up, down, _] = t.record(src, dst);
                    for pick in [None, Some(0), Some(1), Some(src as usize + dst as usize)] {
                        assert_eq!(walk(&t, src, dst, pick), (up + down) as u32, "{topo}");
                    }
                }
            }
        }
    }

    #[test]
    fn slim_trees_by_hand() {
        // slimtree_4_2_3: N = 4 * 2 * 2^2 = 32 nodes; 8, 4 and 2 switches.
        let t = tree("topo=slimtree_4_2_3");
        assert_eq!(t.nodes(), 32);
        assert_eq!(
            (t.switches_in(0), t.switches_in(1), t.switches_in(2)),
            (8, 4, 2)
        );
        // Level-0 switches 0..3 (nodes 0..15) share level-1 switches 0, 1;
        // switch 5 of level 0 (router 37) leads up to level-1 switches 2
        // and 3 (routers 42, 43), arriving at their down port 1 (port 3).
        assert_eq!(t.neighbour(37, 0), Some((42, 3)));
        assert_eq!(t.neighbour(37, 1), Some((43, 3)));
        // Nodes 0 and 17 meet at the top: 3 links up, 3 down; at the top
        // both down ports lead on (level-1 switches 2 and 3).
        assert_eq!(t.record(0, 17), [3, 3, 0]);
        assert_eq!(t.down_ports(2, 17), (2 + 2, 2)); // after the 2 up ports
        assert_eq!(t.record(0, 5), [2, 2, 0]);
    }
}

mod engine {
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg32;

    use fsin::config::Config;
    use fsin_model::engine::{Delivered, NewPacket};
    use fsin_model::network::Network;

    /// Runs `cycles` cycles of saturating uniform traffic (the same packet
    /// sequence whatever the network does) and returns every delivery.
    fn deliveries(net: &mut Network, cycles: u64) -> Vec<Delivered> {
        let nodes = net.nodes() as u32;
        let mut traffic = Pcg32::seed_from_u64(7);
        net.record_deliveries(true);
        let mut out = Vec::new();
        for _ in 0..cycles {
            for src in 0..nodes {
                if traffic.gen_bool(0.05) && net.source_backlog(src) < 4 {
                    let dst = (src + traffic.gen_range(1..nodes)) % nodes;
                    net.inject(NewPacket { src, dst, tag: 0 }).unwrap();
                }
            }
            net.step();
            out.extend(net.drain_delivered());
        }
        out
    }

    /// Sleeping blocked requests must not change the model: with one VC
    /// and static routes nothing is random, and neither is it in the
    /// adaptive modes below on odd tori and meshes (no half-way ties; the
    /// smart mode's adaptive VC is VC 1 whatever it draws with two VCs,
    /// the shortest mode takes the most room, Dally's trc and basic modes
    /// fix the VC), so every packet must be delivered at the same cycle as
    /// by an engine that re-requests every cycle.
    #[test]
    fn sleeping_requests_change_nothing() {
        let cube = |topo: &str, lbr: u32| {
            vec![
                format!("topo={topo}"),
                "nchan=1".into(),
                "rmode=oblivious".into(),
                "imode=dor".into(),
                "bsize=2".into(),
                format!("bub_to_adap={lbr}"),
            ]
        };
        let other = |topo: &str| {
            vec![
                format!("topo={topo}"),
                "nchan=1".into(),
                "rmode=static".into(),
            ]
        };
        let adaptive = |topo: &str, more: &[&str]| {
            let mut w = vec![format!("topo={topo}")];
            w.extend(more.iter().map(|s| s.to_string()));
            w
        };
        for settings in [
            adaptive("torus_5_5", &["rmode=smart"]),
            adaptive("mesh_6_6", &["rmode=smart", "bub_to_adap=3"]),
            adaptive("torus_5_5_5", &["rmode=smart", "imode=dor"]),
            adaptive("torus_7_5", &["rmode=shortest", "nchan=3"]),
            adaptive("torus_7_7", &["rmode=shortest", "nchan=3", "bub_to_adap=2"]),
            adaptive("torus_7_5", &["vc=dally", "rmode=basic", "nchan=3"]),
            adaptive("torus_5_5", &["vc=dally", "rmode=trc"]),
            adaptive("torus_7_7", &["vc=dally", "rmode=basic"]),
            adaptive(
                "mesh_6_6",
                &["rmode=smart", "switching=wormhole", "bsize=0", "tql=1"],
            ),
            cube("torus_8_8", 0),
            cube("mesh_6_6", 0),
            cube("torus_4_4_4", 0),
            cube("torus_8_8", 3),
            other("fattree_4_3"),
            other("thintree_4_2_3"),
            other("slimtree_4_2_3"),
            other("hypercube_6"),
            {
                let mut w = cube("mesh_6_6", 0);
                w.extend([
                    "switching=wormhole".into(),
                    "bsize=0".into(),
                    "tql=1".into(),
                ]);
                w
            },
            {
                let mut w = other("fattree_4_3");
                w.push("switching=wormhole".into());
                w
            },
        ] {
            let cfg = Config::from_settings(&settings).unwrap();
            let mut sleeping = Network::new(&cfg.net).expect("a valid network");
            let mut eager = Network::new(&cfg.net).expect("a valid network");
            eager.set_sleep_blocked(false);
            let a = deliveries(&mut sleeping, 3000);
            let b = deliveries(&mut eager, 3000);
            assert!(a.len() > 1000, "{settings:?}: only {} deliveries", a.len());
            assert_eq!(a, b, "{settings:?}");
        }
    }
}
