//! Fuzzing the configuration reader: any `key=value`
//! settings, and any file text (INSEE's `key=value` lines or TOML), give a
//! configuration or a [`ConfigError`], never a panic; and a configuration
//! that builds is a fixed point of its own settings: written with
//! [`Config::settings`] and read back, it gives the same settings.

use fsin_config::keys::keys;
use fsin_config::{topology_file, Config, ConfigBuilder};
use proptest::prelude::*;

/// A value of any kind a key meets: numbers small, huge, negative,
/// fractional and not finite, topology-like names, words, lists.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[0-9]{1,3}",
        1 => "[0-9]{7,25}",
        1 => "-[0-9]{1,3}",
        2 => "0\\.[0-9]{1,4}",
        1 => "[0-9]{1,3}e[0-9]{1,3}",
        1 => prop::sample::select(vec!["inf", "NaN", "-0", "", " ", "true", "off"]).prop_map(String::from),
        2 => (prop::sample::select(vec!["torus", "mesh", "ttorus", "midimew", "circulant", "fattree", "thintree", "slimtree", "hypercube", "spinnaker", "icube", "circ", "dragonfly"]),
              prop::collection::vec(0u32..12, 0..4))
            .prop_map(|(f, d)| d.iter().fold(f.to_string(), |s, n| format!("{s}_{n}"))),
        1 => "[0-9]{1,2}_[0-9]{1,2}",
        1 => "[a-z_,:]{1,12}",
    ]
}

/// A setting: a real key (or an unknown one) and a value.
fn setting() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        9 => prop::sample::select(keys().flat_map(|k| k.names.iter().copied()).collect::<Vec<_>>())
            .prop_map(String::from),
        1 => "[a-z_]{1,10}",
    ];
    prop_oneof![
        9 => (key, value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => "\\PC{0,20}",
    ]
}

/// What `c`'s settings build to, as settings again.
fn rebuilt(c: &Config) -> Vec<(&'static str, String)> {
    let text: Vec<String> = c
        .settings()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Config::from_settings(&text)
        .unwrap_or_else(|e| {
            panic!("a built configuration's own settings are refused: {e}\n{text:?}")
        })
        .settings()
}

proptest! {
    // A failing case is kept beside this file (fuzz.regressions), to be
    // committed: it then runs first, every time.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn settings_build_or_err_and_a_build_is_a_fixed_point(s in prop::collection::vec(setting(), 0..6)) {
        if let Ok(c) = Config::from_settings(&s) {
            prop_assert_eq!(rebuilt(&c), c.settings());
        }
    }

    /// The same on settings that mostly build ([`shaped_settings`]).
    #[test]
    fn shaped_settings_build_or_err_and_a_build_is_a_fixed_point(s in shaped_settings()) {
        if let Ok(c) = Config::from_settings(&s) {
            prop_assert_eq!(rebuilt(&c), c.settings());
        }
    }

    #[test]
    fn file_text_never_panics(lines in prop::collection::vec(setting(), 0..8), toml in any::<bool>(), junk in "\\PC{0,40}") {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("fsin-config-fuzz-{}.{}", std::process::id(), if toml { "toml" } else { "conf" }));
        let body = if toml {
            lines.iter().map(|l| l.replacen('=', " = ", 1)).collect::<Vec<_>>().join("\n")
        } else {
            lines.join("\n")
        };
        std::fs::write(&path, format!("{body}\n{junk}\n")).unwrap();
        let mut b = ConfigBuilder::new();
        if b.load_file(&path).is_ok() {
            let _ = b.build();
        }
        let _ = std::fs::remove_file(&path);
    }

    /// A topology file of any format and any lines gives a
    /// graph or an error, never a panic; a graph it gives is connected,
    /// has compute nodes on its routers and links between its routers.
    #[test]
    fn topology_files_never_panic(
        name in prop::sample::select(vec!["t.anynet", "t.graphml", "t.edges", "t"]),
        lines in prop::collection::vec(topology_line(), 0..12),
    ) {
        let text = lines.join("\n");
        if let Ok(g) = topology_file::parse(&text, name, 8) {
            prop_assert!(g.routers >= 1 && !g.node_router.is_empty());
            prop_assert!(g.node_router.iter().all(|&r| r < g.routers));
            prop_assert!(g.links.iter().all(|l| l.a < g.routers && l.b < g.routers && l.a != l.b));
            prop_assert_eq!(g.parts().len(), 1);
        }
    }

    /// Valid topology files of each format, damaged or not
    /// ([`shaped_topology_file`]): a graph or an error, never a panic; an
    /// undamaged file gives the graph it was written from.
    #[test]
    fn shaped_topology_files_parse_or_err((name, text, routers, damaged) in shaped_topology_file()) {
        match topology_file::parse(&text, name, 8) {
            Ok(g) => {
                prop_assert!(g.node_router.iter().all(|&r| r < g.routers));
                prop_assert_eq!(g.parts().len(), 1);
                if !damaged {
                    prop_assert_eq!(g.routers, routers);
                    prop_assert_eq!(g.node_router.len() as u32, routers);
                }
            }
            Err(e) => prop_assert!(damaged, "an undamaged {} file refused: {}\n{}", name, e, text),
        }
    }
}

/// A ring of 2 to 8 routers with up to 4 chords and a compute node on
/// each router, written in one of the three formats, then, one time in
/// two, damaged (a line dropped or repeated, the text cut, a digit
/// changed): (file name, text, routers, damaged).
fn shaped_topology_file() -> impl Strategy<Value = (&'static str, String, u32, bool)> {
    let graph = (2u32..9).prop_flat_map(|n| (Just(n), prop::collection::vec((0..n, 1..n), 0..5)));
    let damage = prop_oneof![
        1 => Just(None),
        1 => (0u8..4, any::<prop::sample::Index>(), 0u8..10).prop_map(Some),
    ];
    (graph, 0usize..3, damage).prop_map(|((n, chords), format, damage)| {
        // The ring, then chords from a to a + k (never a router to itself).
        let mut edges: Vec<(u32, u32)> = (0..n).map(|a| (a, (a + 1) % n)).collect();
        edges.extend(chords.iter().map(|&(a, k)| (a, (a + k) % n)));
        let (name, mut lines): (&str, Vec<String>) = match format {
            0 => (
                "t.edges",
                edges.iter().map(|(a, b)| format!("{a} {b}")).collect(),
            ),
            1 => (
                "t.anynet",
                (0..n)
                    .map(|r| {
                        let links: String = (edges.iter())
                            .filter(|e| e.0 == r)
                            .map(|e| format!(" router {}", e.1))
                            .collect();
                        format!("router {r} node {r}{links}")
                    })
                    .collect(),
            ),
            _ => {
                let mut l = vec![
                    "<graphml><key id=\"e\" for=\"node\" attr.name=\"endpoints\"/><graph>"
                        .to_string(),
                ];
                l.extend(
                    (0..n).map(|r| format!("<node id=\"{r}\"><data key=\"e\">1</data></node>")),
                );
                l.extend(
                    edges
                        .iter()
                        .map(|(a, b)| format!("<edge source=\"{a}\" target=\"{b}\"/>")),
                );
                l.push("</graph></graphml>".to_string());
                ("t.graphml", l)
            }
        };
        let Some((how, at, digit)) = damage else {
            return (name, lines.join("\n"), n, false);
        };
        let k = at.index(lines.len());
        let text = match how {
            0 => {
                lines.remove(k);
                lines.join("\n")
            }
            1 => {
                lines.insert(k, lines[k].clone());
                lines.join("\n")
            }
            2 => {
                let t = lines.join("\n");
                t[..at.index(t.len())].to_string()
            }
            _ => {
                let t = lines.join("\n");
                let digits: Vec<usize> = t
                    .char_indices()
                    .filter(|c| c.1.is_ascii_digit())
                    .map(|c| c.0)
                    .collect();
                let d = digits[at.index(digits.len())];
                format!("{}{digit}{}", &t[..d], &t[d + 1..])
            }
        };
        (name, text, n, true)
    })
}

/// The shaped topology files parse at least half the time (311 of 400
/// on 2026-12-06), not every time: the fuzzer reaches the parsers'
/// graphs, not only their first error, and its damage is refused.
#[test]
fn shaped_topology_files_mostly_parse() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = shaped_topology_file();
    let parsed = (0..400)
        .filter(|_| {
            let (name, text, _, _) = strategy.new_tree(&mut runner).unwrap().current();
            topology_file::parse(&text, name, 8).is_ok()
        })
        .count();
    assert!((200..400).contains(&parsed), "{parsed} of 400 parsed");
}

/// A line of any of the topology file formats, or junk.
fn topology_line() -> impl Strategy<Value = String> {
    let id = prop_oneof![4 => 0u64..6, 1 => Just(u64::from(u32::MAX) + 1)];
    prop_oneof![
        3 => (prop::sample::select(vec!["router", "node"]), id.clone(), prop::collection::vec((prop::sample::select(vec!["router", "node"]), id.clone(), prop::option::of(0u32..20)), 0..4))
            .prop_map(|(h, i, body)| body.iter().fold(format!("{h} {i}"), |s, (t, j, l)| match l {
                Some(l) => format!("{s} {t} {j} {l}"),
                None => format!("{s} {t} {j}"),
            })),
        2 => (id.clone(), id.clone(), prop::option::of(0u32..20)).prop_map(|(a, b, l)| match l {
            Some(l) => format!("{a} {b} {l}"),
            None => format!("{a} {b}"),
        }),
        1 => (id.clone(), id.clone()).prop_map(|(n, r)| format!("node {n} {r}")),
        1 => (id.clone(), 0u32..4).prop_map(|(i, e)| format!("<node id=\"{i}\"><data key=\"e\">{e}</data></node>")),
        1 => (id.clone(), id, prop::option::of(0u32..20)).prop_map(|(a, b, l)| match l {
            Some(l) => format!("<edge source=\"{a}\" target=\"{b}\"><data key=\"l\">{l}</data></edge>"),
            None => format!("<edge source=\"{a}\" target=\"{b}\"/>"),
        }),
        1 => Just("<graphml><key id=\"e\" for=\"node\" attr.name=\"endpoints\"/><key id=\"l\" for=\"edge\" attr.name=\"latency\"/><graph>".to_string()),
        1 => Just("</graph></graphml>".to_string()),
        1 => "\\PC{0,30}",
    ]
}

/// A working configuration of a few kinds (a torus, a mesh under load,
/// a fat tree, a kernel, a hypercube) and at most one setting more of any
/// kind ([`setting`]).
fn shaped_settings() -> impl Strategy<Value = Vec<String>> {
    let base = prop::sample::select(vec![
        &["topo=torus_8_8"][..],
        &["topo=mesh_4_4", "load=0.3"],
        &["topo=fattree_4_3", "routing=static"],
        &["topo=torus_4_4", "kernel=all2all", "kernel_bytes=2500"],
        &["topo=hypercube_4"],
    ]);
    (base, prop::collection::vec(setting(), 0..2))
        .prop_map(|(base, more)| base.iter().map(|s| s.to_string()).chain(more).collect())
}

/// How many of 400 cases of `strategy` build a configuration.
fn built_of_400(strategy: impl Strategy<Value = Vec<String>>) -> usize {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    (0..400)
        .filter(|_| {
            Config::from_settings(&strategy.new_tree(&mut runner).unwrap().current()).is_ok()
        })
        .count()
}

/// The shaped settings build at least half the time, and not always (233
/// of 400 on 2026-12-06: the fixed point is tested on configurations,
/// and refusals are reached); the settings of any kind build often
/// enough to reach it too (74 of 400).
#[test]
fn shaped_settings_often_build() {
    let shaped = built_of_400(shaped_settings());
    assert!((200..400).contains(&shaped), "{shaped} of 400 built");
    let any = built_of_400(prop::collection::vec(setting(), 0..6));
    assert!(any >= 40, "{any} of 400 built");
}

/// The cases the fuzzer found (CI, 2026-11-27): a network with faults, or
/// the SpiNNaker router, writes `vc`, `amode`, `extract` and `bsize` at the
/// values it implies, and reading those settings back must not call them a
/// choice the router cannot make.
#[test]
fn implied_router_settings_read_back() {
    for given in [
        &["faults=1"][..],
        &["topo=thintree_4_2_3"],
        &["topo=hypercube_4"],
        &["topo=spinnaker_4_4"],
        &["topo=icube_4_4_2"],
    ] {
        let c = Config::from_settings(given).unwrap_or_else(|e| panic!("{given:?}: {e}"));
        assert_eq!(rebuilt(&c), c.settings(), "{given:?}");
    }
    for refused in [
        &["faults=1", "vc=dally"][..],
        &["topo=spinnaker_4_4", "bsize=1"],
    ] {
        assert!(
            Config::from_settings(refused).is_err(),
            "{refused:?} is a choice the router cannot make"
        );
    }
}
