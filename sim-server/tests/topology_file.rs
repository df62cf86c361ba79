//! Topologies read from a file (`topo=file:PATH`): a ring as an
//! edge list measures as the built-in ring does, a fully connected anynet
//! file by hand, and the same graph as GraphML gives its very reports;
//! `fsin topology` gives a file network's bisection and draws it;
//! built-in topologies written by `fsin topology --write`
//! measure as themselves; every pair is delivered along a path of the
//! graph; saturated file networks keep delivering (up*/down* is
//! deadlock-free), generated dragonflies, Slim Flies and Jellyfish of
//! 1,000 nodes and more too; `routing=shortest` takes minimal routes only
//! (a VC per hop) and keeps delivering at saturation; a co-simulation
//! (`fsin demo`) runs on a file network, its nodes placed by `placement`
//! too; a bad file is refused naming the
//! file and what is wrong.

mod common;

use common::{cfg, deliver_all_pairs, keeps_delivering, run, summary};
use fsin::config::topology_gen::{edge_list, generate};
use fsin::topology::{hops_from, Topology};

/// `text` written as `name` in a directory of its own; the `topo=` value.
fn file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("fsin-topofile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    format!("topo=file:{}", p.display())
}

/// `fsin ARGS`, which must succeed: the JSON of its last line.
fn fsin_json(args: &[&str]) -> serde_json::Value {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fsin"))
        .args(args)
        .output()
        .expect("fsin runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// A packet from `src` to `dst` alone in `net` (which records
/// deliveries), delivered within `cycles`.
fn alone(
    net: &mut fsin::network::Network,
    src: u32,
    dst: u32,
    cycles: u32,
) -> fsin::engine::Delivered {
    net.inject(fsin::engine::NewPacket { src, dst, tag: 0 })
        .unwrap();
    (0..cycles)
        .find_map(|_| {
            net.step();
            net.drain_delivered().next()
        })
        .unwrap_or_else(|| panic!("{src} -> {dst} delivered within {cycles} cycles"))
}

/// A ring of `n` routers as an edge list (a direct network).
fn ring(n: u32) -> String {
    (0..n).map(|i| format!("{i} {}\n", (i + 1) % n)).collect()
}

/// 4 routers, each linked to the 3 others, with 2 nodes each (anynet).
const K4: &str = "router 0 node 0 node 1 router 1 router 2 router 3\n\
                  router 1 node 2 node 3 router 2 router 3\n\
                  router 2 node 4 node 5 router 3\n\
                  router 3 node 6 node 7\n";

/// K4 as GraphML (SST anytopo's form): the routers in the anynet
/// file's order with 2 endpoints each, its links in the order its lines
/// give them.
const K4_GRAPHML: &str = r#"<?xml version="1.0"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="ep" for="node" attr.name="endpoints" attr.type="int"><default>2</default></key>
  <graph edgedefault="undirected">
    <node id="r0"/><node id="r1"/><node id="r2"/><node id="r3"/>
    <edge source="r0" target="r1"/><edge source="r0" target="r2"/><edge source="r0" target="r3"/>
    <edge source="r1" target="r2"/><edge source="r1" target="r3"/>
    <edge source="r2" target="r3"/>
  </graph>
</graphml>"#;

/// The same graph as BookSim2's anynet and as GraphML gives identical
/// reports (issue 58's goal): a loaded run and a saturated one, every
/// figure but the wall clock and the file's name.
#[test]
fn anynet_and_graphml_of_one_graph_give_identical_reports() {
    for load in ["load=0.2", "load=1"] {
        let report = |topo: &str| {
            let mut v = serde_json::to_value(run(&[topo, load, "nsamples=3"])).unwrap();
            let o = v.as_object_mut().unwrap();
            for k in ["wall_s", "cycles_per_s"] {
                o.remove(k);
            }
            o["config"].as_object_mut().unwrap().remove("topo");
            v
        };
        let a = report(&file("k4-same.anynet", K4));
        let g = report(&file("k4-same.graphml", K4_GRAPHML));
        assert!(a["accepted_load"].as_f64().unwrap() > 0.1, "{a}");
        assert_eq!(a, g, "{load}");
    }
}

#[test]
fn a_file_ring_measures_as_the_built_in_one() {
    let f = summary(&[&file("ring8.edges", &ring(8))]);
    let b = summary(&["topo=torus_8"]);
    assert_eq!(
        (
            f.nodes,
            f.switches,
            f.links,
            f.router_links,
            f.ports,
            f.diameter
        ),
        (
            b.nodes,
            b.switches,
            b.links,
            b.router_links,
            b.ports,
            b.diameter
        )
    );
    // From a node of a ring of 8: 1, 1, 2, 2, 3, 3 and 4 hops: 16 / 7.
    assert!(
        (f.avg_distance - 16.0 / 7.0).abs() < 1e-9,
        "{}",
        f.avg_distance
    );
    assert_eq!(
        f.topology,
        format!(
            "file:{}",
            file("ring8.edges", &ring(8)).trim_start_matches("topo=file:")
        )
    );
}

#[test]
fn an_anynet_file_counts_by_hand() {
    // 8 node links and 6 router links; a node reaches its router-mate in 2
    // hops and the 6 others in 3: (2 + 6 * 3) / 7.
    let s = summary(&[&file("k4.anynet", K4)]);
    assert_eq!(
        (
            s.nodes,
            s.switches,
            s.links,
            s.router_links,
            s.ports,
            s.diameter
        ),
        (8, 4, 14, 6, 5, 3)
    );
    assert!(
        (s.avg_distance - 20.0 / 7.0).abs() < 1e-9,
        "{}",
        s.avg_distance
    );
}

#[test]
fn every_pair_is_delivered_along_the_graph() {
    for topo in [file("ring6.edges", &ring(6)), file("k4b.anynet", K4)] {
        let c = cfg(&[&topo]);
        let t = Topology::build(&c.net).expect("a valid network");
        let n = t.nodes() as u32;
        let (_, got) = deliver_all_pairs(&c, 100_000);
        assert_eq!(
            got.len(),
            (n * (n - 1)) as usize,
            "{topo}: packets lost or stuck"
        );
        let dist: Vec<Vec<u32>> = (0..n).map(|s| hops_from(&t, s)).collect();
        assert!(
            got.iter()
                .all(|d| d.hops >= dist[d.src as usize][d.dst as usize]),
            "{topo}"
        );
    }
}

#[test]
fn saturated_file_networks_keep_delivering() {
    keeps_delivering(&[&file("ring16.edges", &ring(16))]);
    keeps_delivering(&[&file("k4c.anynet", K4), "nchan=1"]);
    // Low load: everything offered is delivered.
    let r = run(&[&file("ring12.edges", &ring(12)), "load=0.05"]);
    assert!(r.network_deadlock.is_none());
    let m = &r.measured;
    assert!((m.accepted_load - 0.05).abs() < 0.01, "{}", m.accepted_load);
}

#[test]
fn bad_files_are_refused_naming_them() {
    let two = file("two.edges", "0 1\n2 3\n");
    let e = fsin::config::Config::from_settings(&[two.as_str()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("two.edges") && e.contains("2 parts") && e.contains("routers 2-3"),
        "{e}"
    );
    let none = "topo=file:/nonexistent/net.edges";
    let e = fsin::config::Config::from_settings(&[none])
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/net.edges"), "{e}");
}

/// `fsin topology --write NAME` of a built-in topology, read back, has
/// the built-in one's nodes, switches, links, ports, diameter and mean
/// distance (the graph is the same; only the routing differs).
#[test]
fn built_in_topologies_written_as_files_measure_as_themselves() {
    for name in [
        "torus_4_4",
        "mesh_3_5",
        "fattree_4_2",
        "fattree_2_3",
        "hypercube_4",
        "icube_2_1_3_3",
    ] {
        let c = cfg(&[&format!("topo={name}")]);
        let g = Topology::build(&c.net).unwrap().to_graph().unwrap();
        let f = summary(&[&file(&format!("{name}.edges"), &edge_list(&g, name))]);
        let b = summary(&[&format!("topo={name}")]);
        assert_eq!(
            (f.nodes, f.switches, f.links, f.router_links, f.diameter),
            (b.nodes, b.switches, b.links, b.router_links, b.diameter),
            "{name}"
        );
        assert!((f.avg_distance - b.avg_distance).abs() < 1e-9, "{name}");
    }
}

/// `torus_4_4` and `fattree_4_2` written as files and routed by
/// `routing=shortest` (a VC per hop) deliver every packet, alone in the
/// network, in as many hops and cycles as the built-in family does:
/// both take minimal routes through routers of the same pipeline.
#[test]
fn file_torus_and_tree_have_the_built_in_zero_load_latency() {
    for (name, vcs) in [("torus_4_4", "nchan=4"), ("fattree_4_2", "nchan=4")] {
        let c = cfg(&[&format!("topo={name}")]);
        let g = Topology::build(&c.net).unwrap().to_graph().unwrap();
        let topo = file(&format!("{name}-zl.edges"), &edge_list(&g, name));
        let built = cfg(&[&format!("topo={name}"), vcs]);
        let from_file = cfg(&[&topo, "routing=shortest", vcs]);
        let mut b = fsin::network::Network::new(&built.net).unwrap();
        let mut f = fsin::network::Network::new(&from_file.net).unwrap();
        b.record_deliveries(true);
        f.record_deliveries(true);
        let n = built.net.nodes() as u32;
        let mut latencies = std::collections::BTreeSet::new();
        for src in 0..n {
            for dst in (0..n).filter(|&d| d != src) {
                let x = alone(&mut b, src, dst, 1_000);
                let y = alone(&mut f, src, dst, 1_000);
                assert_eq!(
                    (x.hops, x.t_done - x.t_gen),
                    (y.hops, y.t_done - y.t_gen),
                    "{name}: {src} -> {dst}"
                );
                latencies.insert(x.t_done - x.t_gen);
            }
        }
        // Latency grows with the distance: more than one value.
        assert!(latencies.len() > 1, "{name}: {latencies:?}");
    }
}

/// Mean router-to-router hops of a uniform pattern on `g`: over every
/// ordered pair of distinct compute nodes, the shortest path between their
/// routers (breadth-first here, not the engine's tables).
fn mean_min_hops(g: &fsin::spec::Graph) -> f64 {
    let r = g.routers as usize;
    let mut next = vec![Vec::new(); r];
    for l in &g.links {
        next[l.a as usize].push(l.b as usize);
        next[l.b as usize].push(l.a as usize);
    }
    let mut nodes_on = vec![0u64; r];
    for &x in &g.node_router {
        nodes_on[x as usize] += 1;
    }
    let mut total = 0u64;
    for s in 0..r {
        let mut dist = vec![u64::MAX; r];
        let mut queue = std::collections::VecDeque::from([s]);
        dist[s] = 0;
        while let Some(u) = queue.pop_front() {
            for &v in &next[u] {
                if dist[v] == u64::MAX {
                    dist[v] = dist[u] + 1;
                    queue.push_back(v);
                }
            }
        }
        total += (0..r)
            .map(|d| nodes_on[s] * nodes_on[d] * dist[d])
            .sum::<u64>();
    }
    let n = g.node_router.len() as f64;
    total as f64 / (n * (n - 1.0))
}

/// The generators' families at 1,000 nodes and more, saturated, with the
/// deadlock detector on: they never freeze, every batch delivering at
/// least half the mean (up*/down* funnels traffic through the routers
/// near its root, so the accepted load itself is low: 0.025
/// phits/node/cycle for the Jellyfish), and the mean below what the
/// links could carry: each of the `2 L` directed links between routers
/// one phit a cycle, shared by `N` nodes whose phits cross at least the
/// minimal hops on average (up*/down* paths are no shorter).
#[test]
fn generated_networks_of_a_thousand_nodes_keep_delivering() {
    for (name, nodes) in [
        ("dragonfly_8_4_4", 8 * 33 * 4),
        ("slimfly_11_5", 242 * 5),
        ("jellyfish_250_8_4", 1000),
    ] {
        let g = generate(name, 17).unwrap();
        assert_eq!(g.node_router.len(), nodes, "{name}");
        let topo = file(&format!("{name}.edges"), &edge_list(&g, name));
        let r = run(&[
            &topo,
            "load=1.0",
            "warm_up_period=1000",
            "conv_period=1000",
            "max_conv_time=3000",
            "nsamples=6",
            "sample_size=2500",
        ]);
        assert!(r.network_deadlock.is_none(), "{name}: deadlock");
        let mean = r.measured.accepted_load;
        assert!(mean > 0.01, "{name}: {mean}");
        let capacity = 2.0 * g.links.len() as f64 / (nodes as f64 * mean_min_hops(&g));
        assert!(mean < capacity, "{name}: {mean} >= {capacity}");
        assert!(
            r.batches.iter().all(|b| b.accepted_load > 0.5 * mean),
            "{name}: a batch below half of {mean}"
        );
    }
}

/// `fsin demo` on a file network: 4 fake nodes on a 2 x 2 HyperX (a
/// ring of 4) exchange all to all, 4 x 3 frames, all delivered.
#[test]
fn a_co_simulation_runs_on_a_file_network() {
    let g = generate("hyperx_2_2_1", 0).unwrap();
    let topo = file("hx.edges", &edge_list(&g, "hyperx_2_2_1"));
    let r = fsin_json(&["demo", &topo, "--json"]);
    assert_eq!(r["nodes"], 4);
    assert_eq!(r["frames_delivered"], 12, "{r}");
    assert_eq!(r["topology"], topo.trim_start_matches("topo="));
    // Placed at random, the nodes still exchange every frame; a
    // placement that leaves nodes out is refused before any attaches.
    let r = fsin_json(&["demo", &topo, "placement=random", "--json"]);
    assert_eq!(r["frames_delivered"], 12, "{r}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fsin"))
        .args(["demo", &topo, "placement=consecutive_2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("placement: co-simulation places one node simulator on every node: 2 tasks given, 4 nodes"), "{err}");
}

/// `routing=shortest`: every packet takes a minimal route (its hops equal
/// the breadth-first distance, where up*/down* takes longer ones on a
/// ring), saturated networks keep delivering, and a diameter beyond the
/// VCs is refused naming nchan.
#[test]
fn shortest_routing_takes_minimal_routes_on_a_vc_per_hop() {
    for (topo, vcs) in [
        (file("ring8s.edges", &ring(8)), "nchan=4"),
        (file("k4s.anynet", K4), "nchan=3"),
    ] {
        let c = cfg(&[&topo, "routing=shortest", vcs]);
        let t = Topology::build(&c.net).unwrap();
        let n = t.nodes() as u32;
        let (_, got) = deliver_all_pairs(&c, 100_000);
        assert_eq!(got.len(), (n * (n - 1)) as usize, "{topo}");
        let dist: Vec<Vec<u32>> = (0..n).map(|s| hops_from(&t, s)).collect();
        assert!(
            got.iter()
                .all(|d| d.hops == dist[d.src as usize][d.dst as usize]),
            "{topo}: a route longer than minimal"
        );
        keeps_delivering(&[&topo, "routing=shortest", vcs]);
    }
    // Up*/down* on the same ring takes some longer routes (2.505 hops on
    // average at low load against the minimal 16/7 = 2.286).
    let (_, updown) = deliver_all_pairs(&cfg(&[&file("ring8u.edges", &ring(8))]), 100_000);
    let minimal = 8 * 16;
    assert!(updown.iter().map(|d| d.hops).sum::<u32>() > minimal);
    // A ring of 8 has a diameter of 4 hops: 3 VCs are too few.
    let e = fsin::config::Config::from_settings(&[
        file("ring8t.edges", &ring(8)).as_str(),
        "routing=shortest",
        "nchan=3",
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("nchan") && e.contains("diameter is 4 hops"),
        "{e}"
    );
    let e = fsin::config::Config::from_settings(&["topo=torus_4", "routing=shortest"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("routing"), "{e}");
}

/// Up*/down* roots at router 0 by default, or where `updown_root` says
/// (a router, or `center`). On a ring of 5 with router 5 hanging on
/// router 2, router 2 is the center (the smallest eccentricity, 2, then
/// the smallest total distance, 7): from it, 4 -> 3 -> 2 climbs twice, 2
/// hops; rooted at router 0, that route turns down at 3 and back up,
/// illegal, and the packet goes round by 0 and 1, 3 hops
/// (model/src/topology/faults.rs has the ranks by hand). A root the
/// network lacks, or one on a network without up*/down*, is refused
/// naming the key.
#[test]
fn up_down_roots_at_router_0_or_where_updown_root_says() {
    let topo = file("tail.edges", "0 1\n1 2\n2 3\n3 4\n4 0\n2 5\n");
    let hops_4_to_2 = |extra: &[&str]| {
        let mut keys = vec![topo.as_str()];
        keys.extend_from_slice(extra);
        let (_, got) = deliver_all_pairs(&cfg(&keys), 100_000);
        assert_eq!(got.len(), 30);
        got.iter()
            .find(|d| d.src == 4 && d.dst == 2)
            .map(|d| d.hops)
            .unwrap()
    };
    assert_eq!(hops_4_to_2(&[]), 3);
    assert_eq!(hops_4_to_2(&["updown_root=center"]), 2);
    assert_eq!(hops_4_to_2(&["updown_root=2"]), 2);
    let refused = |keys: &[&str], want: &str| {
        let e = fsin::config::Config::from_settings(keys)
            .unwrap_err()
            .to_string();
        assert!(e.contains("updown_root") && e.contains(want), "{e}");
    };
    refused(&[&topo, "updown_root=6"], "routers are 0 to 5");
    refused(&["topo=torus_4", "updown_root=1"], "does not use it");
    refused(
        &[&topo, "routing=shortest", "nchan=4", "updown_root=1"],
        "does not use it",
    );
}

/// Duato's routing (`routing=duato`, `nchan=2`): alone in the network a
/// packet takes a minimal route (its hops are the breadth-first
/// distance, on a ring of 8 and on a dragonfly); all pairs at once, some
/// take the up*/down* escape VC and travel longer, and every one is
/// delivered; saturated, the networks keep delivering (Duato's condition:
/// no deadlock). Refused on a cube, with faults and without an adaptive
/// VC, naming the key.
#[test]
fn duato_routes_minimally_with_an_up_down_escape() {
    let dragonfly = generate("dragonfly_4_2_2", 0).unwrap();
    for topo in [
        file("ring8d.edges", &ring(8)),
        file("df.edges", &edge_list(&dragonfly, "dragonfly_4_2_2")),
    ] {
        let c = cfg(&[&topo, "routing=duato", "nchan=2"]);
        let t = Topology::build(&c.net).unwrap();
        let n = t.nodes() as u32;
        let dist: Vec<Vec<u32>> = (0..n).map(|s| hops_from(&t, s)).collect();
        let mut net = fsin::network::Network::new(&c.net).unwrap();
        net.record_deliveries(true);
        for (src, dst) in (0..n).flat_map(|s| (0..n).filter(move |&d| d != s).map(move |d| (s, d)))
        {
            let got = alone(&mut net, src, dst, 1000);
            assert_eq!(
                got.hops, dist[src as usize][dst as usize],
                "{topo}: {src} -> {dst} alone"
            );
        }
        let (_, got) = deliver_all_pairs(&c, 200_000);
        assert_eq!(got.len(), (n * (n - 1)) as usize, "{topo}");
        assert!(got
            .iter()
            .all(|d| d.hops >= dist[d.src as usize][d.dst as usize]));
        assert!(
            got.iter()
                .any(|d| d.hops > dist[d.src as usize][d.dst as usize]),
            "{topo}: no packet took the escape VC"
        );
        keeps_delivering(&[&topo, "routing=duato", "nchan=2"]);
    }
    let ring8 = file("ring8e.edges", &ring(8));
    for (keys, key) in [
        (vec!["topo=torus_4", "routing=duato"], "routing"),
        (vec![ring8.as_str(), "routing=duato", "faults=1"], "routing"),
        (vec![ring8.as_str(), "routing=duato", "nchan=1"], "nchan"),
        (vec![ring8.as_str(), "routing=duato", "rmode=static"], "r"),
    ] {
        let e = fsin::config::Config::from_settings(&keys)
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains("duato"), "{keys:?}: {e}");
    }
}

/// A file's link latency moves phits as a pipeline of that many cycles:
/// a header that crosses a link of `L` cycles in cycle `c` is routed at
/// the far end in `c + L`, one hop of a 16-phit packet then takes
/// `1 + 15 + (L - 1)` cycles at zero load, by hand: 20 over a link of 5,
/// 16 the way back where the anynet file gives none (1). A row of 8 with a
/// slow chord keeps delivering at saturation; wormhole switching, which
/// would run ahead of the phits in flight, is refused naming the link.
#[test]
fn link_latency_is_a_pipeline_of_that_many_cycles() {
    let one_way = |text: &str, name: &str| {
        let c = cfg(&[&file(name, text)]);
        let mut net = fsin::network::Network::new(&c.net).unwrap();
        net.record_deliveries(true);
        [(0, 1), (1, 0)].map(|(src, dst)| {
            let d = alone(&mut net, src, dst, 100);
            d.t_done - d.t_gen
        })
    };
    assert_eq!(one_way("0 1 5\n", "lat5.edges"), [20, 20]);
    assert_eq!(
        one_way(
            "router 0 node 0 router 1 5\nrouter 1 node 1\n",
            "lat5.anynet"
        ),
        [20, 16]
    );
    let slow = format!("{}0 4 7\n", ring(8).replace("7 0\n", ""));
    let topo = file("slow-ring.edges", &slow);
    keeps_delivering(&[&topo]);
    let e = fsin::config::Config::from_settings(&[topo.as_str(), "switching=wormhole"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("switching") && e.contains("routers 0 and 4 takes 7"),
        "{e}"
    );
}

/// `fsin topology` on file networks gives the bisection and says how it
/// was found: a ring of 8 is cut in 2 links, found exactly; a ring of 40
/// (beyond the exact search) in 2 by METIS; K4 with 2 nodes per router in
/// 4 of its 6 links. `--out` draws the ring into topology.svg: 8 router
/// dots and its 2 cut links in red.
#[test]
fn fsin_topology_gives_a_file_networks_bisection_and_draws_it() {
    let out = std::env::temp_dir().join(format!("fsin-topodraw-{}", std::process::id()));
    for (topo, links, method) in [
        (
            file("ring8b.edges", &ring(8)),
            2,
            "exact: every split of 8 routers",
        ),
        (
            file("ring40b.edges", &ring(40)),
            2,
            "METIS recursive bisection of 40 routers, an upper bound",
        ),
        (file("k4d.anynet", K4), 4, "exact: every split of 4 routers"),
    ] {
        let r = fsin_json(&["topology", &topo, "--json", "--out", out.to_str().unwrap()]);
        assert_eq!(r["bisection_links"], links, "{topo}: {r}");
        assert_eq!(r["bisection_method"], method, "{topo}");
        if topo.contains("ring8b") {
            let svg = std::fs::read_to_string(out.join("topology.svg")).unwrap();
            assert_eq!(svg.matches("<circle").count(), 8);
            assert_eq!(svg.matches("stroke=\"#FF0000\"").count(), 2);
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// A file network's default routing: on the dragonfly of
/// `fsin topology --write dragonfly_4_2_2` it is Duato's, and at an
/// offered load of 1.0 it accepts at least 90% of the best routing's
/// (up*/down* static and adaptive, Duato; docs/model.md's table has them
/// all, and the other networks). A run that picks up*/down* is told that
/// its paths' channel-load bound is more than 30% below minimal paths'
/// (on this dragonfly 0.55 against 0.84); on a 4x4 HyperX (1.41 against
/// 1.94, 27% below) it is not.
#[test]
fn a_file_dragonfly_routes_by_its_best_routing_by_default() {
    let df = generate("dragonfly_4_2_2", 17).unwrap();
    let topo = file("df-default.edges", &edge_list(&df, "dragonfly_4_2_2"));
    let at = |extra: &[&str]| {
        let mut s = vec![topo.as_str(), "load=1.0"];
        s.extend(extra);
        run(&s)
    };
    let default = at(&[]);
    assert!(default.routing.starts_with("Duato"), "{}", default.routing);
    assert!(default.warnings.is_empty(), "{:?}", default.warnings);
    let best = ["routing=static", "routing=adaptive", "routing=duato"]
        .iter()
        .map(|r| at(&[r]).measured.accepted_load)
        .fold(0.0, f64::max);
    let got = default.measured.accepted_load;
    assert!(got >= 0.9 * best, "default {got}, best {best}");
    let updown = at(&["routing=adaptive"]);
    assert!(
        updown.routing.starts_with("up*/down*"),
        "{}",
        updown.routing
    );
    assert!(
        updown
            .warnings
            .iter()
            .any(|w| w.contains("below minimal paths")),
        "{:?}",
        updown.warnings
    );
    let hx = generate("hyperx_4_4_2", 17).unwrap();
    let hx = file("hx-default.edges", &edge_list(&hx, "hyperx_4_4_2"));
    let r = run(&[hx.as_str(), "routing=adaptive", "cycles=2000"]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}
