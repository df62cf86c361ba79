//! What a new user meets first: progress lines on a long run whose stderr
//! is not a terminal (a batch job's log), `--quiet`, an `--out` that
//! cannot be written, and `fsin doctor` naming what the machine lacks. (The progress of a QEMU boot is in
//! tests/qemu.rs.)

use std::process::Output;
use std::time::{Duration, Instant};

mod process;
use process::{fsin, fsin_env, last_json};

/// `fsin serve` on loopback for 2 nodes that never come, until its attach
/// timeout of `timeout_s`, with `extra` options.
fn waiting_server(timeout_s: &str, extra: &[&str]) -> Output {
    let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--nodes", "2"];
    args.extend_from_slice(&["--attach-timeout", timeout_s, "--json", "topo=torus_2"]);
    args.extend_from_slice(extra);
    fsin(&args, Duration::from_secs(60))
}

/// A server that waits 3 s for 2 nodes that never come: its log gets a
/// line about once every 0.5 s (--progress-s), each naming the phase and
/// how many nodes attached (none), and then the attach timeout ends the
/// run (exit 1) with the report on stdout's last line.
#[test]
fn a_waiting_server_says_so_every_period() {
    let started = Instant::now();
    let o = waiting_server("3", &["--progress-s", "0.5"]);
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(o.status.code(), Some(1));
    let r = last_json(&o);
    assert!(
        r["end_reason"].as_str().unwrap().contains("attach timeout"),
        "{r}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("fsin serve ["))
        .collect();
    // Lines start after 1 s; the 2 s left at 0.5 s give 4 (3 to 5 with
    // the reporter's 200 ms polling).
    assert!(
        (3..=6).contains(&lines.len()),
        "{} lines in {wall:.1} s:\n{err}",
        lines.len()
    );
    for l in &lines[..lines.len() - 1] {
        assert!(l.contains("attaching: 0/2 nodes attached"), "{l}");
    }
}

/// `--quiet`: the same long run writes no progress line at all.
#[test]
fn quiet_runs_write_no_progress() {
    let o = waiting_server("2", &["--quiet"]);
    assert_eq!(o.status.code(), Some(1));
    last_json(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("fsin serve ["), "{err}");
}

/// `--progress-s` must be a number of seconds, 0 or more.
#[test]
fn a_negative_progress_period_is_bad_input() {
    let o = fsin(&["run", "--progress-s=-1"], Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--progress-s"), "{err}");
}

/// README: an `--out` that is not a writable directory is bad input,
/// found before anything runs: exit 2, naming `--out`, the path and why,
/// with nothing on stdout (no report of a run that never started).
#[test]
fn an_out_that_cannot_be_written_is_refused_first() {
    let file = std::env::temp_dir().join(format!("fsin-out-file-{}", std::process::id()));
    std::fs::write(&file, b"not a directory").unwrap();
    let under_file = file.join("run");
    let cases = [
        (under_file.to_str().unwrap().to_string(), "Not a directory"),
        ("/proc/fsin-out".to_string(), "No such file or directory"),
    ];
    let minute = Duration::from_secs(60);
    for (out, why) in &cases {
        for command in [
            &["run", "topo=torus_4_4", "cycles=1000000000", "--out", out][..],
            &[
                "sweep",
                "topo=torus_4_4",
                "--vary",
                "load=0.1,0.2",
                "--out",
                out,
            ],
            &["demo", "--nodes", "4", "--out", out, "topo=torus_2_2"],
        ] {
            let o = fsin(command, minute);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{command:?}: {err}");
            let named = format!("bad value `{out}` for key `--out`");
            assert!(
                err.contains(&named) && err.contains(why),
                "{command:?}: {err}"
            );
            assert!(o.stdout.is_empty(), "{command:?}");
        }
    }
    std::fs::remove_file(&file).unwrap();
}

/// `fsin doctor` with FSIN_GUEST_DIR pointing at an empty directory names
/// both missing images (their kernel, in that directory), says what to
/// run, and exits 1; its JSON says the machine is not ready. `fsin qemu`
/// then names the missing kernel too.
#[test]
fn doctor_names_a_missing_image() {
    let dir = std::env::temp_dir().join(format!("fsin-doctor-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env = [("FSIN_GUEST_DIR", dir.as_path())];
    let minute = Duration::from_secs(60);
    let o = fsin_env(&["doctor"], &env, minute);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    let missing = format!("{} is missing", dir.join("vmlinuz").display());
    let line = text
        .lines()
        .find(|l| l.starts_with("problem") && l.contains(&missing))
        .unwrap_or_else(|| panic!("no line names {missing}:\n{text}"));
    assert!(line.contains("image"), "{line}");
    assert!(text.contains("fix: scripts/install-qemu.sh"), "{text}");
    assert!(
        text.lines().last().unwrap().starts_with("not ready"),
        "{text}"
    );

    let o = fsin_env(&["doctor", "--json"], &env, minute);
    assert_eq!(o.status.code(), Some(1));
    let r = last_json(&o);
    assert_eq!(r["ready"], false, "{r}");
    let checks = r["checks"].as_array().unwrap();
    for (name, file) in [("image", "vmlinuz"), ("mpi-image", "mpi/vmlinuz")] {
        let c = checks
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {r}"));
        assert_eq!(c["ok"], false, "{c}");
        let want = format!("{} is missing", dir.join(file).display());
        assert_eq!(c["detail"], want.as_str(), "{c}");
    }

    // `fsin qemu` refuses at once, naming the file and pointing at
    // `fsin doctor`, instead of starting a server for guests that cannot
    // boot.
    let o = fsin_env(&["qemu", "--guests", "2", "topo=torus_2"], &env, minute);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&missing), "{err}");
    assert!(err.contains("`fsin doctor`"), "{err}");
    assert!(
        o.stdout.is_empty(),
        "no report for a run that never started"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Guests that may not fit are refused before any QEMU starts: 8 guests
/// of 512 MiB are expected to take 8 x (24 + 32 + min(512, 112 + 64)) =
/// 8 x 232 = 1,856 MiB, more than a 1,000 MiB `--max-memory`, so `fsin
/// qemu` exits 2 naming the estimate, the limit and how many guests fit
/// (1000 / 232 = 4). (The guest directory is empty: a run that got as far
/// as looking for the image would exit 1.)
#[test]
fn guests_beyond_the_memory_limit_are_refused_before_any_qemu_starts() {
    let dir = std::env::temp_dir().join(format!("fsin-admission-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = fsin_env(
        &[
            "--max-memory",
            "1000",
            "qemu",
            "--guests",
            "8",
            "--memory-mb",
            "512",
            "topo=torus_8",
        ],
        &[("FSIN_GUEST_DIR", dir.as_path())],
        Duration::from_secs(60),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--guests"), "{err}");
    assert!(err.contains("may need 1856 MiB (232 MiB each"), "{err}");
    assert!(err.contains("the --max-memory cap, 1000 MiB"), "{err}");
    assert!(err.contains("fewer guests (4 fit)"), "{err}");
    assert!(o.stdout.is_empty());
}
