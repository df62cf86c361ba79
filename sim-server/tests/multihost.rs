//! Several hosts, with network namespaces as hosts (`scripts/multihost.sh`):
//! the server in one, an aggregator client per node host in the others,
//! each with its own /dev/shm, so rounds go over TCP and UDP on veth links
//! as between machines. Skipped with a message where namespaces cannot be
//! made (no CAP_SYS_ADMIN). The script removes what it made on exit; the
//! test bounds it with `timeout`.

mod process;
mod skip;

use skip::skip;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use process::{deterministic, fsin, last_json, FSIN};

/// `scripts/multihost.sh ARGS --json` with the binaries of this build;
/// `None` when the script says namespaces cannot be made here (exit 77).
fn multihost(args: &[&str]) -> Option<Output> {
    let bin = Path::new(FSIN).parent().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/multihost.sh");
    let o = Command::new("timeout")
        .args(["-s", "TERM", "120"])
        .arg(script)
        .args(["--bin", bin.to_str().unwrap(), "--json"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("timeout (coreutils) and bash run");
    if o.status.code() == Some(77) {
        skip(String::from_utf8_lossy(&o.stderr).trim());
        return None;
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(o)
}

/// An all-to-all of 2 hosts x 4 nodes gives the same report as the same 8
/// nodes in two aggregator processes on the server's host, over a direct
/// link and through fsin-link with 200 us each way: where the node
/// simulators run, and how far away, changes the wall time only.
#[test]
fn two_hosts_simulate_what_one_host_does() {
    let one_host = fsin(
        &[
            "demo",
            "--nodes-per-client",
            "4",
            "--workload",
            "all2all",
            "--json",
            "topo=torus_2_4",
        ],
        Duration::from_secs(60),
    );
    assert!(
        one_host.status.success(),
        "{}",
        String::from_utf8_lossy(&one_host.stderr)
    );
    let expected = deterministic(last_json(&one_host));
    // Every node sends one frame to each of the 7 others.
    assert_eq!(expected["frames_delivered"], 56);
    let slices = expected["slices"].as_u64().unwrap().to_string();
    for delay in [None, Some("200")] {
        let mut args = vec!["--hosts", "2", "--per-host", "4", "--workload", "all2all"];
        args.extend(["--slices", &slices]);
        if let Some(d) = delay {
            args.extend(["--delay-us", d]);
        }
        let Some(o) = multihost(&args) else { return };
        let mut got = deterministic(last_json(&o));
        // --slices ends the run at the slice where the demo ended by
        // itself: only the stated reason differs.
        assert_eq!(
            got["end_reason"],
            format!("ran the requested {slices} slices")
        );
        got["end_reason"] = expected["end_reason"].clone();
        assert_eq!(got, expected, "delay {delay:?}");
    }
}

/// The Slurm job script of `examples/slurm/` parses, and its dry run puts
/// the server on the first allocated host and one aggregator client per
/// other host, with consecutive node ranges that add up to the server's
/// `--nodes`.
#[test]
fn slurm_job_script_plans_one_server_and_a_client_per_host() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/slurm/fsin-cosim.sbatch");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    let o = Command::new("bash")
        .arg(&script)
        .env("SLURM_JOB_NODELIST", "n1,n2,n3,n4")
        .env("DRY_RUN", "1")
        .env("PER_HOST", "16")
        .env("PATH", "/usr/bin:/bin") // no scontrol: the plain list
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with(
            "on n1: fsin serve --listen 0.0.0.0:50051 --datagram-port 50052 --nodes 48 "
        ),
        "{out}"
    );
    assert!(lines[0].ends_with("topo=torus_3_16"), "{out}");
    for (i, (host, range)) in [("n2", "0-15"), ("n3", "16-31"), ("n4", "32-47")]
        .iter()
        .enumerate()
    {
        assert_eq!(
            lines[i + 1],
            format!("on {host}: fsin fake-node --server http://n1:50051 --node {range} --workload all2all")
        );
    }
}
