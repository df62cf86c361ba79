//! The `fsin` command as a user runs it: exit codes and messages.

use std::process::{Command, Output};

fn fsin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fsin"))
        .args(args)
        .output()
        .expect("fsin runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_input_exits_2_naming_the_key() {
    let dir = std::env::temp_dir().join(format!("fsin-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("bad.conf");
    std::fs::write(&conf, "# comment\ntopo=torus_4_4\nrmode=sideways\n").unwrap();
    let conf = conf.to_str().unwrap().to_string();
    // The three messages of issue 71: an unknown word in an anynet line,
    // a TOML section, a generated family named as a built-in one.
    std::fs::write(
        dir.join("bad.anynet"),
        "router 0 node 0 routr 1\nrouter 1 node 1\n",
    )
    .unwrap();
    let anynet = format!("topo=file:{}", dir.join("bad.anynet").display());
    std::fs::write(
        dir.join("bad.toml"),
        "# sections\n[network]\ntopo = \"torus_4_4\"\n",
    )
    .unwrap();
    let toml = dir.join("bad.toml").to_str().unwrap().to_string();
    for (args, needles) in [
        (
            vec!["run", anynet.as_str()],
            vec!["topo", "bad.anynet:1", "unknown word `routr`"],
        ),
        (
            vec!["run", "--config", toml.as_str()],
            vec![
                "bad.toml",
                "line 2",
                "TOML sections are not read",
                "topo = ...",
            ],
        ),
        (
            vec!["run", "topo=dragonfly_4_2_2"],
            vec![
                "topo",
                "fsin topology --write dragonfly_4_2_2",
                "topo=file:",
            ],
        ),
        (
            vec!["run", "topo=tors_4"],
            vec!["topo", "torus", "file:PATH"],
        ),
        (vec!["run", "lod=0.3"], vec!["lod", "load"]),
        (vec!["run", "load=abc"], vec!["load", "abc"]),
        (vec!["run", "load=1.5"], vec!["load", "[0, 1]"]),
        (vec!["run", "vc=fancy"], vec!["vc", "bubble, dally, double"]),
        (vec!["run", "topo=torus"], vec!["topo", "1 to 3 sizes"]),
        (vec!["run", "vc=dally", "rmode=smart"], vec!["rmode", "trc"]),
        (vec!["run", "vc=bubble", "bsize=5"], vec!["bsize", "tql=4"]),
        (vec!["run", "plevel=64"], vec!["plevel", "supported bits"]),
        (vec!["run", "pheaders=1"], vec!["pheaders", "not support"]),
        (vec!["run", "plevel=1"], vec!["plevel", "--out DIR"]),
        (vec!["run", "load"], vec!["load", "key=value"]),
        (
            vec!["run", "shotmode=1", "load=0", "compat=insee"],
            vec!["load", "never ends"],
        ),
        (
            vec!["run", "--config", &conf],
            vec!["rmode", "bad.conf:3", "oblivious"],
        ),
        (
            vec!["run", "--config", "/nonexistent.conf"],
            vec!["/nonexistent.conf"],
        ),
    ] {
        let o = fsin(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let msg = stderr(&o);
        for n in needles {
            assert!(msg.contains(n), "{args:?}: message {msg:?} lacks {n:?}");
        }
    }
}

/// Durations and ranges from the command line are bounded before they
/// become clocks: 1e300 seconds used to pass `is_finite() && >
/// 0` and then panic in `Duration::from_secs_f64`; `0:inf:1` overflowed a
/// point count. Each bounded option (durations, counts, ranges, sizes,
/// `--out`) now exits 2 naming the option and its range, before any node,
/// guest or point starts (`fsin qemu --cpus 9` used to start the server
/// and exit 1 when the bridge refused it; `nic-bridge` exited 1).
#[test]
fn out_of_range_durations_and_ranges_exit_2_naming_the_option() {
    for (args, needles) in [
        (
            vec!["demo", "--attach-timeout", "1e300"],
            vec!["--attach-timeout", "604800"],
        ),
        (
            vec!["demo", "--node-timeout", "1e300"],
            vec!["--node-timeout", "604800"],
        ),
        (vec!["demo", "--node-timeout", "0"], vec!["--node-timeout"]),
        (
            vec!["run", "--progress-s", "1e300", "topo=torus_4"],
            vec!["--progress-s", "604800"],
        ),
        (
            vec!["qemu", "--guests", "2", "--app-timeout", "1e300"],
            vec!["--app-timeout", "604800"],
        ),
        (
            vec!["sweep", "--vary", "load=0:inf:1", "topo=torus_4"],
            vec!["0:inf:1"],
        ),
        (
            vec!["sweep", "--vary", "load=nan:1:0.1", "topo=torus_4"],
            vec!["nan:1:0.1"],
        ),
        (
            vec!["sweep", "--vary", "load=0:1:0.00001", "topo=torus_4"],
            vec!["100001 points", "at most 10000"],
        ),
        (
            vec!["qemu", "--guests", "2", "--cpus", "9", "--run", "true"],
            vec!["--cpus", "between 1 and 8"],
        ),
        (
            vec!["qemu", "--guests", "0", "--run", "true"],
            vec!["--guests", "between 1 and 250"],
        ),
        (
            vec![
                "nic-bridge",
                "--server",
                "http://127.0.0.1:9",
                "--guests",
                "2",
                "--boot-timeout-s",
                "1e300",
            ],
            vec!["--boot-timeout-s 1e300", "604800"],
        ),
        (
            vec![
                "nic-bridge",
                "--server",
                "http://127.0.0.1:9",
                "--guests",
                "2",
                "--slice-timeout-s",
                "0",
            ],
            vec!["--slice-timeout-s 0", "1 to 604800"],
        ),
        (
            vec![
                "nic-bridge",
                "--server",
                "http://127.0.0.1:9",
                "--guests",
                "2",
                "--connect-timeout-s",
                "999999999",
            ],
            vec!["--connect-timeout-s", "1 to 604800"],
        ),
        (
            vec![
                "nic-bridge",
                "--server",
                "http://127.0.0.1:9",
                "--guests",
                "251",
            ],
            vec!["--guests 251", "between 1 and 250"],
        ),
        (
            vec![
                "qemu",
                "--guests",
                "2",
                "--run",
                "true",
                "--vary",
                "rseed=1,2",
                "--repeat",
                "101",
            ],
            vec!["--repeat", "1..=100"],
        ),
        (
            vec!["demo", "--warmup-factor", "0"],
            vec!["--warmup-factor", "1..=1048576"],
        ),
        (
            vec!["demo", "--warmup-factor", "1048577"],
            vec!["--warmup-factor", "1..=1048576"],
        ),
        (vec!["demo", "--nodes", "17"], vec!["--nodes", "1..=16"]),
        (vec!["demo", "--bytes", "10"], vec!["--bytes", "75", "9018"]),
        (
            vec!["bench", "--repeat", "101"],
            vec!["--repeat", "1..=100"],
        ),
        (
            vec!["bench", "--threads", "257"],
            vec!["--threads", "1..=256"],
        ),
        (
            vec![
                "fake-node",
                "--server",
                "http://127.0.0.1:9",
                "--node",
                "0-100000",
            ],
            vec!["--node"],
        ),
        (
            vec!["run", "--out", "/proc/version", "topo=torus_4"],
            vec!["--out", "not a directory"],
        ),
    ] {
        let o = fsin(&args);
        let msg = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {msg}");
        assert!(!msg.contains("panicked"), "{args:?}: {msg}");
        for n in needles {
            assert!(msg.contains(n), "{args:?}: message {msg:?} lacks {n:?}");
        }
    }
}

#[test]
fn json_output_has_the_contract_fields() {
    let o = fsin(&["run", "topo=torus_4_4", "load=0.1", "cycles=2000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let last = stdout.lines().last().expect("output");
    let v: serde_json::Value = serde_json::from_str(last).expect("JSON on the last line");
    for k in [
        "cycles",
        "wall_s",
        "nodes",
        "injected_load",
        "accepted_load",
        "latency_avg",
        "latency_std",
        "latency_max",
        "inj_latency_avg",
        "packets_injected",
        "packets_delivered",
        "packets_dropped",
        "converged",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["nodes"], 16);
    assert_eq!(v["cycles"], 2000);
}

/// The keys of the outermost object of a JSON text, in order, repeats
/// included (a JSON parser keeps only the last of repeated keys).
fn top_level_keys(json: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let (mut depth, mut in_str, mut escaped, mut is_key) = (0, false, false, false);
    let mut last = ' ';
    let mut text = String::new();
    for c in json.chars() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    in_str = false;
                    if is_key {
                        keys.push(std::mem::take(&mut text));
                    }
                    continue;
                }
                _ => {}
            }
            text.push(c);
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                is_key = depth == 1 && matches!(last, '{' | ',');
                text.clear();
            }
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            _ => {}
        }
        if !c.is_whitespace() {
            last = c;
        }
    }
    keys
}

#[test]
fn json_report_has_no_repeated_keys_and_counts_cycles_by_phase() {
    let o = fsin(&[
        "run",
        "topo=torus_4_4",
        "load=0.1",
        "warm_up_period=700",
        "max_conv_time=0",
        "nsamples=2",
        "sample_size=500",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let last = stdout.lines().last().expect("output");
    let keys = top_level_keys(last);
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(keys.len(), unique.len(), "repeated keys in {keys:?}");
    let v: serde_json::Value = serde_json::from_str(last).expect("JSON on the last line");
    assert_eq!(v["cycles"], 1000, "measured phase: 2 batches of 500");
    let total = v["total_cycles"].as_u64().expect("total_cycles");
    let unmeasured = v["unmeasured_cycles"].as_u64().expect("unmeasured_cycles");
    assert!(unmeasured >= 700, "warm-up of 700 cycles, got {unmeasured}");
    assert_eq!(total, unmeasured + 1000);
}

#[test]
fn help_config_documents_every_key_with_default() {
    let o = fsin(&["help", "config"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for k in fsin::config::keys::keys() {
        assert!(text.contains(k.names[0]), "{} undocumented", k.names[0]);
    }
    assert!(text.contains("default: torus_8_8"));
}

/// `fsin help` teaches: it lists its topics and exits 0;
/// `fsin help COMMAND` is that command's help, with examples; `fsin help
/// config KEY` explains one key (load's default is 0.05 phits/node/cycle,
/// README); every line of the key list fits 80 columns but single words;
/// an unknown topic or key exits 2 naming what there is.
#[test]
fn help_lists_its_topics_and_explains_commands_and_keys() {
    let o = fsin(&["help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let topics = String::from_utf8_lossy(&o.stdout).to_string();
    for t in [
        "fsin help config KEY",
        "fsin help run",
        "fsin help sweep",
        "fsin help qemu",
    ] {
        assert!(topics.contains(t), "{t} missing:\n{topics}");
    }
    let o = fsin(&["help", "run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run = String::from_utf8_lossy(&o.stdout);
    assert!(run.contains("Usage: fsin run"), "{run}");
    assert!(
        run.contains("Examples:") && run.contains("kernel=bu"),
        "{run}"
    );
    let o = fsin(&["help", "config", "load"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let load = String::from_utf8_lossy(&o.stdout);
    assert!(load.starts_with("load"), "{load}");
    assert!(load.contains("default: 0.05\n"), "{load}");
    let o = fsin(&["help", "config"]);
    let all = String::from_utf8_lossy(&o.stdout);
    for line in all.lines().filter(|l| l.trim().contains(' ')) {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    // The keys in their groups, each group once.
    for group in [
        "== Network ==",
        "== Routing and flow control ==",
        "== Traffic ==",
        "== Measurement ==",
        "== Traces, kernels and the MPI model ==",
        "== Co-simulation ==",
        "== INSEE compatibility ==",
    ] {
        assert_eq!(all.matches(group).count(), 1, "{group}");
    }
    // Every command's help ends with examples of its main uses.
    for command in [
        "run",
        "sweep",
        "topology",
        "bench",
        "serve",
        "demo",
        "cosim-sweep",
        "qemu",
        "kernel",
        "doctor",
        "help",
    ] {
        let o = fsin(&[command, "--help"]);
        let text = String::from_utf8_lossy(&o.stdout);
        let examples = text.rsplit_once("Examples:\n").map(|(_, e)| e);
        assert!(
            examples.is_some_and(|e| e.lines().any(|l| l.trim_start().starts_with("fsin "))),
            "fsin {command} --help has no examples:\n{text}"
        );
    }
    let o = fsin(&["help", "config", "lod"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such key"), "{}", stderr(&o));
    let o = fsin(&["help", "runn"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("topics: config, run, sweep"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn topology_prints_its_contract_keys() {
    let o = fsin(&["topology", "topo=torus_4_4", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap();
    // 4x4 torus: 32 router links + 16 node links, diameter 4; a ring of 4
    // is 0, 1, 2, 1 hops away, so 2 hops on average over all 16 nodes,
    // 32 / 15 over the others.
    assert_eq!(j["nodes"], 16);
    assert_eq!(j["switches"], 16);
    assert_eq!(j["links"], 48);
    assert_eq!(j["diameter"], 4);
    assert!((j["avg_distance"].as_f64().unwrap() - 32.0 / 15.0).abs() < 1e-12);
    assert_eq!(j["bisection_links"], 8);
    assert!(j["theta"].is_null());
    let o = fsin(&["topology", "topo=torus_4_x"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_network_deadlock_ends_the_run_with_exit_3_and_its_report() {
    let o = fsin(&[
        "run",
        "topo=spinnaker_8_8",
        "nchan=1",
        "rmode=oblivious",
        "hol_timeout=0",
        "load=1.0",
        "cycles=50000",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("network deadlock at cycle"),
        "{}",
        stderr(&o)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("output")).expect("JSON");
    let dl = &v["network_deadlock"];
    assert!(
        dl["cycle_of_channels"]
            .as_array()
            .is_some_and(|c| c.len() >= 2),
        "{dl}"
    );
    assert!(v["total_cycles"].as_u64().unwrap() < 50000);
}

/// The futex floor `fsin qemu` reports beside its rounds: 4 processes of
/// `fsin floor-child` answer 500 rounds, the shared file is removed and
/// every child has left; children that never answer (`true` exits at
/// once) are reported as stalled, not waited for forever.
#[test]
fn the_futex_floor_is_measured_with_children_that_leave() {
    let dir = std::env::temp_dir().join(format!("fsin-floor-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fsin = env!("CARGO_BIN_EXE_fsin");
    let rate = fsin_sync::floor::measure(&dir, 4, 500, |path, n| {
        Command::new(fsin)
            .arg("floor-child")
            .arg(path)
            .arg(n.to_string())
            .spawn()
    })
    .unwrap();
    assert!(rate.is_finite() && rate > 0.0, "{rate}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "the shared file is left"
    );
    let started = std::time::Instant::now();
    let e =
        fsin_sync::floor::measure(&dir, 2, 10, |_, _| Command::new("true").spawn()).unwrap_err();
    assert!(e.to_string().contains("did not answer round 1"), "{e}");
    assert!(started.elapsed() < fsin_sync::floor::CHILD_PATIENCE * 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The built-in MPI profile is what its calibration's figures give with
/// this binary's model: `fsin qemu --calibrate --calibrate-from` fits the
/// live round trips, streams, exchanges and first contact of
/// `config/profiles/default-guests.json` (the `--json` line of the run
/// that made the profile) again, with no guests, and writes the same
/// keys as the profile checked in. A change of the replay's model fails
/// here until the profile is fitted again this way (docs/qemu.md,
/// "Calibrating the MPI layer").
#[test]
fn the_built_in_profile_is_its_calibrations_fit_with_this_model() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::env::temp_dir().join(format!("fsin-refit-{}.conf", std::process::id()));
    let refit = |from: &std::path::Path| {
        fsin(&[
            "qemu",
            "--calibrate",
            out.to_str().unwrap(),
            "--calibrate-from",
            from.to_str().unwrap(),
        ])
    };
    let o = refit(&root.join("config/profiles/default-guests.json"));
    assert!(o.status.success(), "{}", stderr(&o));
    let keys = |text: &str| -> Vec<String> {
        (text.lines())
            .filter(|l| l.starts_with("mpi_"))
            .map(str::to_string)
            .collect()
    };
    let fitted = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let built_in =
        std::fs::read_to_string(root.join("config/profiles/default-guests.conf")).unwrap();
    assert_eq!(keys(&fitted).len(), 8, "{fitted}");
    assert_eq!(keys(&fitted), keys(&built_in));
    // Figures that are not a calibration's are refused, naming the file.
    let bad = std::env::temp_dir().join(format!("fsin-refit-{}.json", std::process::id()));
    std::fs::write(&bad, "{\"points\": []}\n").unwrap();
    let o = refit(&bad);
    let _ = std::fs::remove_file(&bad);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("fsin-refit-"), "{}", stderr(&o));
    assert!(!out.exists());
}
