//! `fsin qemu --calibrate [PROFILE]`: the MPI layer's
//! software costs measured on the user's own guests. Two guests run
//! `fsin-pingpong`'s round trips and streams over sizes from 8 bytes to
//! beyond Open MPI's rendezvous limit, and exchanges of several messages
//! at once, and frames and ARP requests that come in while a rank
//! computes (the kernel's receive, `mpi_rx_ns` and `mpi_arp_rx_ns`,
//! taken as measured); [`fsin::calibrate::fit`]
//! finds the cost table that gives the
//! round trips and streams back in the MPI-level replay, and the profile
//! (`mpi_profile=PROFILE`) keeps it with the command and guests that made
//! it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use fsin::calibrate::{Calibration, Contact, Exchange, Measured};
use fsin_trace::mpi::costs::MAX_COST_POINTS;
use serde_json::json;

use super::{guests_config, run_from, QemuArgs, Traces};

/// The sizes measured, bytes: from 8 to four times Open MPI's eager
/// limit (65,536), on both sides of the one-segment limit (1,426 bytes
/// and Open MPI's 22-byte header fill a segment's 1,448; 1,448 bytes
/// take two: a message's cost steps there, as a line from 512 bytes to
/// 1,448 does not).
const SIZES: [u64; 11] = [
    8, 64, 512, 1426, 1448, 4096, 16_384, 32_768, 65_536, 131_072, 262_144,
];

/// Round trips per size, and messages per stream.
const ROUNDS: u32 = 20;
const STREAM_ROUNDS: u32 = 100;

/// The exchanges measured: messages in flight each way, and sizes.
const EXCHANGE: u32 = 4;
const EXCHANGE_SIZES: [u64; 3] = [8, 1448, 16_384];

/// The most messages each way of an exchange an earlier calibration's
/// figures may give (`--calibrate-from`: outside data).
const MAX_EXCHANGE: u32 = 64;

/// Whether `us` is a time the guests can have measured: positive and
/// under an hour (their figures are outside data).
fn plausible_us(us: f64) -> bool {
    us > 0.0 && us < 3.6e9
}

/// The calibration command's guest and wall seconds, where known.
type Seconds = (Option<f64>, Option<f64>);

/// Frames of `fsin-pingpong -k`: 40 (24 ms of guest time, 400 us apart,
/// spread over its window of spin), and as many ARP requests after them.
const KERNEL_FRAMES: u32 = 40;

/// The command guest 0 runs: each kind of measurement with an 8-byte
/// size first, whose line is dropped (it pays the ranks' start and the
/// first contact), then a first contact of its own, then the kernel's
/// receive of [`KERNEL_FRAMES`] frames.
fn command() -> String {
    let sizes = |s: &[u64]| {
        std::iter::once(8)
            .chain(s.iter().copied())
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mpirun = "mpirun --hostfile /etc/fsin/hostfile -np 2 fsin-pingpong";
    format!(
        "{mpirun} {ROUNDS} {all} && {mpirun} -s {STREAM_ROUNDS} {all} && {mpirun} -x {EXCHANGE} {ROUNDS} {ex} && {mpirun} -c {ROUNDS} && {mpirun} -k {KERNEL_FRAMES}",
        all = sizes(&SIZES),
        ex = sizes(&EXCHANGE_SIZES)
    )
}

/// The value of `key=` among a line's words.
fn field(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

/// What `fsin-pingpong` printed (the first line of each kind dropped).
#[derive(Debug)]
struct Live {
    /// Each size's round trip and stream.
    sizes: Vec<Measured>,
    /// The exchanges of [`EXCHANGE`] messages.
    exchanges: Vec<Exchange>,
    /// The first contact.
    contact: Contact,
    /// What a frame takes from a rank that computes, ns (`-k`'s
    /// `rx_us`; 0 where it measured less).
    rx_ns: u64,
    /// What an ARP request for another guest takes from it, ns (`-k`'s
    /// `arp` line; 0 where it measured less, or an earlier calibration's
    /// figures without it: as `rx_ns`).
    arp_rx_ns: u64,
}

/// The `rx_us=` of one of `fsin-pingpong -k`'s lines, ns: a difference
/// of two windows' stolen time, which may come out a little below 0 on
/// a quiet guest (read as 0), never beyond a second.
fn stolen_ns(line: &str) -> anyhow::Result<u64> {
    field(line, "rx_us")
        .filter(|v| v.abs() < 1e6)
        .map(|us| (us.max(0.0) * 1e3).round() as u64)
        .with_context(|| format!("no rx_us= of a number of us in fsin-pingpong's line `{line}`"))
}

/// Reads `fsin-pingpong`'s lines in the command's `output`.
fn measurements(output: &str) -> anyhow::Result<Live> {
    let lines: Vec<&str> = output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("FSIN-PP "))
        .collect();
    // Each kind's lines, the first dropped.
    let kind = |k: &str| -> Vec<&str> {
        lines
            .iter()
            .copied()
            .filter(|l| l.starts_with(k))
            .skip(1)
            .collect()
    };
    let (rtts, streams, exchanges) = (kind("bytes="), kind("stream "), kind("exchange="));
    let Some(contact) = lines.iter().find(|l| l.starts_with("contact ")) else {
        anyhow::bail!("fsin-pingpong printed no first contact; its output:\n{output}");
    };
    let Some(kernel) = lines.iter().find(|l| l.starts_with("kernel ")) else {
        anyhow::bail!("fsin-pingpong printed no kernel receive (-k); its output:\n{output}");
    };
    let Some(arp) = lines.iter().find(|l| l.starts_with("arp ")) else {
        anyhow::bail!("fsin-pingpong printed no ARP request's receive (-k); its output:\n{output}");
    };
    if rtts.len() != SIZES.len() || streams.len() != SIZES.len() {
        anyhow::bail!(
            "fsin-pingpong printed {} round trips and {} streams, not {} of each; its output:\n{output}",
            rtts.len(),
            streams.len(),
            SIZES.len()
        );
    }
    // The guest's words are outside data: every time a positive number
    // under an hour, every count the one the command asked for.
    let num = |l: &str, k: &str| {
        field(l, k).filter(|v| plausible_us(*v)).with_context(|| {
            format!("no {k}= of a positive number of us in fsin-pingpong's line `{l}`")
        })
    };
    let count = |l: &str, k: &str, want: u64| {
        if field(l, k) == Some(want as f64) {
            Ok(want)
        } else {
            Err(anyhow::anyhow!(
                "fsin-pingpong's line `{l}` does not say {k}={want}"
            ))
        }
    };
    let mut measured = Vec::new();
    for ((&bytes, rt), st) in SIZES.iter().zip(&rtts).zip(&streams) {
        count(rt, "bytes", bytes)?;
        count(st, "bytes", bytes)?;
        measured.push(Measured {
            bytes,
            rounds: count(rt, "rounds", ROUNDS.into())? as u32,
            rtt_us: num(rt, "rtt_us")?,
            stream_rounds: count(st, "rounds", STREAM_ROUNDS.into())? as u32,
            stream_us: num(st, "us_per_msg")?,
            stream_send_us: num(st, "send_us_per_msg")?,
        });
    }
    if exchanges.len() != EXCHANGE_SIZES.len() {
        anyhow::bail!(
            "fsin-pingpong printed {} exchanges, not {}; its output:\n{output}",
            exchanges.len(),
            EXCHANGE_SIZES.len()
        );
    }
    let exchanges = (exchanges.iter().zip(EXCHANGE_SIZES))
        .map(|(l, bytes)| {
            Ok(Exchange {
                messages: count(l, "exchange", EXCHANGE.into())? as u32,
                bytes: count(l, "bytes", bytes)?,
                rounds: count(l, "rounds", ROUNDS.into())? as u32,
                us_per_round: num(l, "us_per_round")?,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    count(kernel, "frames", KERNEL_FRAMES.into())?;
    count(arp, "requests", KERNEL_FRAMES.into())?;
    Ok(Live {
        rx_ns: stolen_ns(kernel)?,
        arp_rx_ns: stolen_ns(arp)?,
        sizes: measured,
        exchanges,
        contact: Contact {
            first_us: num(contact, "first_us")?,
            rounds: ROUNDS,
            us: num(contact, "us")?,
        },
    })
}

/// The profile's text: what made it, the fit, and the key.
fn profile_text(a: &QemuArgs, cfg: &fsin::config::Config, cal: &Calibration, cmd: &str) -> String {
    let mut t = String::new();
    let g = &a.guest;
    let _ = writeln!(
        t,
        "# fsin-rs MPI profile: the MPI layer's software costs on these guests, for\n\
         # MPI-level replays (fsin run mpi_profile=THIS tracefile=...; docs/model.md).\n\
         # Made by: fsin {}\n\
         # Guests: 2, icount_shift {} ({} instructions per guest second), {} vCPU(s), {} MiB, {}\n\
         # Their command: {cmd}\n\
         # Replayed with: {}\n\
         # bytes | live round trip, stream (us) | fitted send, receive (ns) | replay round trip, stream (us)",
        std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        g.icount_shift,
        1_000_000_000u64 >> g.icount_shift,
        g.cpus,
        g.memory_mib(true),
        g.image_dir(true).display(),
        super::replay_keys(&a.cosim, cfg),
    );
    if let Some(from) = &a.calibrate_from {
        let _ = writeln!(
            t,
            "# Its live figures: {} (an earlier calibration's --json line, fitted again)",
            from.display()
        );
    }
    for f in &cal.sizes {
        let m = &f.measured;
        let _ = writeln!(
            t,
            "# {} | {:.1} {:.1} | {} {} | {:.1} {:.1}",
            m.bytes,
            m.rtt_us,
            m.stream_us,
            f.point.send_ns,
            f.point.recv_ns,
            f.replay_rtt_us,
            f.replay_stream_us
        );
    }
    for (x, replay) in &cal.exchanges {
        let _ = writeln!(
            t,
            "# exchange of {} x {} bytes | live {:.1} us a round | replay {replay:.1}",
            x.messages, x.bytes, x.us_per_round
        );
    }
    if let Some((k, replay)) = cal.contact {
        let _ = writeln!(
            t,
            "# first contact | live {:.1} us, then {:.1} us an exchange | {:.1} us more than those live, {replay:.1} in the replay",
            k.first_us,
            k.us,
            k.first_us - k.us
        );
    }
    let _ = writeln!(
        t,
        "mpi_costs={}\nmpi_wake_ns={}\nmpi_connect_ns={}\nmpi_event_tick_ns={}\nmpi_rx_ns={}\nmpi_arp_rx_ns={}\nmpi_irq_window_ns={}\nmpi_tcp_acks={}",
        cal.table,
        cal.wake_ns,
        cal.connect_ns,
        cal.event_tick_ns,
        cal.rx_ns,
        cal.arp_rx_ns,
        cal.irq_window_ns,
        u8::from(cal.tcp_acks)
    );
    t
}

fn pct(replay: f64, live: f64) -> f64 {
    (replay - live) / live * 100.0
}

/// The calibration as `fsin qemu --calibrate` prints it: each size's
/// figures, the exchanges, the wake-up, the kernel's receive (`rx_ns`)
/// and the first contact, and the profile written.
fn print_text(cal: &Calibration, profile: &Path) {
    println!("bytes    round trip us (replay)     stream us (replay)    send ns  receive ns");
    for f in &cal.sizes {
        let m = &f.measured;
        println!(
            "{:<8} {:>9.1} ({:>+6.2}%)  {:>9.1} ({:>+6.2}%)  {:>9} {:>10}",
            m.bytes,
            m.rtt_us,
            pct(f.replay_rtt_us, m.rtt_us),
            m.stream_us,
            pct(f.replay_stream_us, m.stream_us),
            f.point.send_ns,
            f.point.recv_ns
        );
    }
    for (x, replay) in &cal.exchanges {
        println!(
            "exchange of {} x {} bytes each way: {:.1} us a round live, replay {:+.2}%",
            x.messages,
            x.bytes,
            x.us_per_round,
            pct(*replay, x.us_per_round)
        );
    }
    println!("wake-up of a rank that waited: {} ns", cal.wake_ns);
    println!("kernel's receive of a frame that comes in while its rank computes: {} ns, of an ARP request for another guest: {} ns (fsin-pingpong -k)", cal.rx_ns, cal.arp_rx_ns);
    if let Some((k, replay)) = cal.contact {
        println!(
            "first contact: {:.1} us live, {:.1} us more than the exchanges after it (replay {:+.2}%): a rank sets a new peer up in {} ns (with an event tick of {} ns)",
            k.first_us,
            k.first_us - k.us,
            pct(replay, k.first_us - k.us),
            cal.connect_ns,
            cal.event_tick_ns
        );
    }
    println!(
        "profile: {} (fsin run mpi_profile={} tracefile=...; fsin qemu ... mpi_profile={} for --predict mpi)",
        profile.display(),
        profile.display(),
        profile.display()
    );
}

/// The calibration as the last line of `--json`: each size's and
/// exchange's live and replayed figures, the keys fitted, and the
/// command's guest and wall seconds (with `--calibrate-from`, those of
/// the calibration that measured the figures).
fn report_json(cal: &Calibration, profile: &Path, (guest_s, wall_s): Seconds) -> serde_json::Value {
    let points: Vec<_> = (cal.sizes.iter())
        .map(|f| {
            json!({
                "bytes": f.measured.bytes,
                "rtt_us": f.measured.rtt_us,
                "replay_rtt_us": f.replay_rtt_us,
                "stream_us": f.measured.stream_us,
                "stream_send_us": f.measured.stream_send_us,
                "replay_stream_us": f.replay_stream_us,
                "send_ns": f.point.send_ns,
                "recv_ns": f.point.recv_ns,
            })
        })
        .collect();
    let exchanges: Vec<_> = (cal.exchanges.iter())
        .map(|(x, replay)| {
            json!({"messages": x.messages, "bytes": x.bytes, "us_per_round": x.us_per_round, "replay_us_per_round": replay})
        })
        .collect();
    json!({
        "profile": profile.display().to_string(),
        "mpi_costs": cal.table.to_string(),
        "mpi_wake_ns": cal.wake_ns,
        "mpi_connect_ns": cal.connect_ns,
        "mpi_event_tick_ns": cal.event_tick_ns,
        "mpi_rx_ns": cal.rx_ns,
        "mpi_arp_rx_ns": cal.arp_rx_ns,
        "mpi_irq_window_ns": cal.irq_window_ns,
        "mpi_tcp_acks": cal.tcp_acks,
        "contact": cal.contact.map(|(k, replay)| json!({"first_us": k.first_us, "us": k.us, "replay_extra_us": replay})),
        "points": points,
        "exchanges": exchanges,
        "guest_s": guest_s,
        "wall_s": wall_s,
    })
}

/// The figures of an earlier calibration's `--json` line (`json`, from
/// `source` for messages), as [`measurements`] reads them from the
/// guests, with its guest and wall seconds: every size and exchange of
/// this binary's command in its order, every time a positive number
/// under an hour.
fn measurements_from_json(json: &str, source: &Path) -> anyhow::Result<(Live, Seconds)> {
    let line = json
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(line).with_context(|| {
        format!(
            "{}: its last line is not a calibration's --json line",
            source.display()
        )
    })?;
    let bad = |what: &str| anyhow::anyhow!("{}: {what}", source.display());
    let num = |o: &serde_json::Value, k: &str| {
        o.get(k)
            .and_then(serde_json::Value::as_f64)
            .filter(|x| plausible_us(*x))
            .ok_or_else(|| {
                bad(&format!(
                    "no {k} of a positive number of us under an hour in {o}"
                ))
            })
    };
    let int = |o: &serde_json::Value, k: &str| {
        o.get(k)
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| bad(&format!("no whole {k} in {o}")))
    };
    let list = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| bad(&format!("no {k} list")))
    };
    let (points, xs) = (list("points")?, list("exchanges")?);
    let sizes: Vec<u64> = points
        .iter()
        .map(|p| int(p, "bytes"))
        .collect::<Result<_, _>>()?;
    let xsizes: Vec<u64> = xs
        .iter()
        .map(|x| int(x, "bytes"))
        .collect::<Result<_, _>>()?;
    // Another calibration's sizes (an earlier command's, or one made
    // with more): a cost table's, in increasing order, each a message.
    let message = |b: &u64| (1..=fsin_trace::MAX_MESSAGE_BYTES).contains(b);
    if sizes.len() > MAX_COST_POINTS
        || sizes.windows(2).any(|w| w[0] >= w[1])
        || !sizes.iter().chain(&xsizes).all(message)
        || xsizes.len() > MAX_COST_POINTS
    {
        return Err(bad(&format!(
            "its sizes {sizes:?} are not at most {MAX_COST_POINTS} in increasing order, or its exchanges' {xsizes:?} not at most {MAX_COST_POINTS}, each from 1 byte to 4 GiB"
        )));
    }
    let sizes = (points.iter().zip(sizes))
        .map(|(p, bytes)| {
            Ok(Measured {
                bytes,
                rounds: ROUNDS,
                rtt_us: num(p, "rtt_us")?,
                stream_rounds: STREAM_ROUNDS,
                stream_us: num(p, "stream_us")?,
                stream_send_us: num(p, "stream_send_us")?,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let exchanges = (xs.iter().zip(xsizes))
        .map(|(x, bytes)| {
            let messages = int(x, "messages")?;
            if !(1..=u64::from(MAX_EXCHANGE)).contains(&messages) {
                return Err(bad(&format!(
                    "an exchange of other than 1 to {MAX_EXCHANGE} messages: {x}"
                )));
            }
            Ok(Exchange {
                messages: messages as u32,
                bytes,
                rounds: ROUNDS,
                us_per_round: num(x, "us_per_round")?,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let k = v.get("contact").ok_or_else(|| bad("no first contact"))?;
    let (rx_ns, arp_rx_ns) = kernel_receives(&v).map_err(|e| bad(&e))?;
    let live = Live {
        sizes,
        exchanges,
        contact: Contact {
            first_us: num(k, "first_us")?,
            rounds: ROUNDS,
            us: num(k, "us")?,
        },
        rx_ns,
        arp_rx_ns,
    };
    let secs = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    Ok((live, (secs("guest_s"), secs("wall_s"))))
}

/// The kernel's receives of an earlier calibration's `--json` line
/// `v`, ns: a frame's (`mpi_rx_ns`) and an ARP request's
/// (`mpi_arp_rx_ns`; 0, as the frame's, where the line has none: an
/// earlier calibration's), each whole and at most a second.
fn kernel_receives(v: &serde_json::Value) -> Result<(u64, u64), String> {
    let ns = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_u64)
            .filter(|&ns| ns <= 1_000_000_000)
            .ok_or_else(|| format!("no whole {k} of at most a second in ns"))
    };
    let arp = match v.get("mpi_arp_rx_ns") {
        None => 0,
        Some(_) => ns("mpi_arp_rx_ns")?,
    };
    Ok((ns("mpi_rx_ns")?, arp))
}

/// `fsin qemu --calibrate PROFILE`.
pub(super) fn calibrate(a: &QemuArgs, profile: &Path) -> anyhow::Result<()> {
    if a.guest.guests != 2 {
        anyhow::bail!(
            "--calibrate measures between 2 guests: leave out --guests (or give --guests 2), not {}",
            a.guest.guests
        );
    }
    let cmd = command();
    let (live, seconds) = match &a.calibrate_from {
        Some(from) => {
            // The file is the user's input: a refusal exits 2.
            let refused = |e: anyhow::Error| fsin::config::ConfigError::BadValue {
                key: "--calibrate-from".into(),
                value: from.display().to_string(),
                origin: fsin::config::Origin::CommandLine,
                reason: format!("{e:#}"),
            };
            let text = std::fs::read_to_string(from)
                .map_err(|e| refused(anyhow::anyhow!("cannot read it: {e}")))?;
            eprintln!(
                "fsin qemu --calibrate: the figures of {}, fitted again",
                from.display()
            );
            measurements_from_json(&text, from).map_err(refused)?
        }
        None => measure(a, &cmd)?,
    };
    let Live {
        sizes: measured,
        exchanges,
        contact,
        rx_ns,
        arp_rx_ns,
    } = live;
    let mut cfg = guests_config(a, &a.cosim)?;
    cfg.traffic.app.mpi.rx_ns = rx_ns;
    cfg.traffic.app.mpi.arp_rx_ns = arp_rx_ns;
    eprintln!(
        "fsin qemu --calibrate: fitting the costs of {} sizes",
        measured.len()
    );
    let cal = fsin::calibrate::fit(&cfg, &measured, &exchanges, Some(contact))?;
    if let Some(dir) = profile.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(profile, profile_text(a, &cfg, &cal, &cmd))
        .with_context(|| format!("cannot write {}", profile.display()))?;
    print_text(&cal, profile);
    if a.cosim.json {
        println!("{}", report_json(&cal, profile, seconds));
    }
    Ok(())
}

/// The guests' run of the calibration's command `cmd`: what
/// `fsin-pingpong` measured, and the command's guest and wall seconds.
fn measure(a: &QemuArgs, cmd: &str) -> anyhow::Result<(Live, Seconds)> {
    eprintln!(
        "fsin qemu --calibrate: round trips, streams and exchanges of {} to {} bytes between 2 guests",
        SIZES[0],
        SIZES[SIZES.len() - 1]
    );
    let r = run_from(
        a,
        &a.cosim,
        Some(cmd),
        "fsin qemu --calibrate".into(),
        a.checkpoint.as_deref(),
        &Traces::default(),
    )?;
    let app = r
        .nodes
        .app()
        .map(|app| &app.outcome)
        .filter(|app| app.exit_code == Some(0))
        .with_context(|| {
            format!(
                "the calibration's command did not finish: {}",
                r.nodes.text().trim()
            )
        })?;
    Ok((measurements(&app.output)?, (app.guest_s, app.wall_s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fsin-pingpong's lines as it prints them (2026-12-02, 2 guests at
    /// 200:1000), the first of each kind dropped.
    #[test]
    fn fsin_pingpongs_lines_are_read() {
        let mut out = String::from("noise\nFSIN-PP bytes=8 rounds=20 rtt_us=1433.569\n");
        for b in SIZES {
            let _ = writeln!(
                out,
                "FSIN-PP bytes={b} rounds=20 rtt_us={}.5",
                b / 100 + 300
            );
        }
        out.push_str("FSIN-PP stream bytes=8 rounds=100 us_per_msg=219.4 send_us_per_msg=213.8\n");
        for b in SIZES {
            let _ = writeln!(
                out,
                "FSIN-PP stream bytes={b} rounds=100 us_per_msg=90.5 send_us_per_msg=86.3"
            );
        }
        out.push_str("FSIN-PP exchange=4 bytes=8 rounds=20 us_per_round=1285.9\n");
        out.push_str("FSIN-PP exchange=4 bytes=8 rounds=20 us_per_round=663.0\n");
        out.push_str("FSIN-PP exchange=4 bytes=1448 rounds=20 us_per_round=878.2\n");
        out.push_str("FSIN-PP exchange=4 bytes=16384 rounds=20 us_per_round=3418.4\n");
        out.push_str("FSIN-PP contact first_us=12764.000 us=274.118\n");
        out.push_str("FSIN-PP kernel frames=40 window_us=29000.000 base_us=12.500 stolen_us=312.900 rx_us=7.510\n");
        out.push_str("FSIN-PP arp requests=40 window_us=29000.000 base_us=12.500 stolen_us=1848.700 rx_us=45.905\n");
        let Live {
            sizes: m,
            exchanges: ex,
            contact,
            rx_ns,
            arp_rx_ns,
        } = measurements(&out).unwrap();
        assert_eq!((contact.first_us, contact.us), (12764.0, 274.118));
        assert_eq!((rx_ns, arp_rx_ns), (7_510, 45_905));
        // A kernel's receive measured below 0 (noise) is 0; one without
        // a number is refused, naming the line.
        let quiet = out.replace("rx_us=7.510", "rx_us=-0.200");
        assert_eq!(measurements(&quiet).unwrap().rx_ns, 0);
        // Each line changed so, refused: the error's text.
        let refused = |from: &str, to: &str| {
            assert!(out.contains(from), "{from}");
            measurements(&out.replace(from, to))
                .unwrap_err()
                .to_string()
        };
        let e = refused("rx_us=7.510", "rx_us=inf");
        assert!(
            e.contains("rx_us=") && e.contains("`kernel frames=40"),
            "{e}"
        );
        assert!(refused("FSIN-PP kernel", "FSIN-PP kernal").contains("no kernel receive"));
        // The ARP requests' line: its count the command's, its figure
        // read as the frames' is.
        assert!(refused("FSIN-PP arp", "FSIN-PP ARP").contains("no ARP request's receive"));
        assert!(refused("requests=40", "requests=39").contains("requests=40"));
        let e = refused("rx_us=45.905", "rx_us=1e9");
        assert!(e.contains("`arp requests=40"), "{e}");
        assert_eq!(m.len(), SIZES.len());
        assert_eq!(m[0].bytes, 8);
        assert_eq!(m[0].rtt_us, 300.5);
        assert_eq!(m[10].rtt_us, 2921.5);
        assert_eq!(
            (m[3].stream_rounds, m[3].stream_us, m[3].stream_send_us),
            (100, 90.5, 86.3)
        );
        let got: Vec<(u32, u64, u32, f64)> = (ex.iter())
            .map(|x| (x.messages, x.bytes, x.rounds, x.us_per_round))
            .collect();
        assert_eq!(
            got,
            vec![
                (4, 8, 20, 663.0),
                (4, 1448, 20, 878.2),
                (4, 16384, 20, 3418.4)
            ]
        );
        // Counts other than the command's, and times that are no
        // positive number, are refused naming the line.
        let e = refused(
            "FSIN-PP bytes=64 rounds=20 rtt_us=300.5",
            "FSIN-PP bytes=64 rounds=4000000000 rtt_us=300.5",
        );
        assert!(e.contains("rounds=20"), "{e}");
        assert!(refused("rtt_us=300.5", "rtt_us=NaN").contains("rtt_us="));
        // A size missing: named.
        let e = refused("FSIN-PP bytes=4096 rounds=20 rtt_us=340.5\n", "");
        assert!(e.contains("10 round trips"), "{e}");
    }

    /// The built-in profile's calibration line reads back as the live
    /// figures its comments give (the 8-byte round trip, 338.1 us, the
    /// 262,144-byte stream, 4,974.8 us, the first contact, 12,609.3 and
    /// 265.4 us, the kernel's receive, 10,676 ns, and an ARP request's,
    /// 49,732 ns); a line with another
    /// size, a negative time or no first contact is refused naming what.
    #[test]
    fn an_earlier_calibrations_figures_are_read() {
        let text = include_str!("../../../config/profiles/default-guests.json");
        let src = Path::new("cal.json");
        let (live, (guest_s, _)) = measurements_from_json(text, src).unwrap();
        assert_eq!(live.sizes.len(), 11);
        assert_eq!(
            (live.sizes[0].rounds, live.sizes[0].stream_rounds),
            (20, 100)
        );
        assert!((live.sizes[0].rtt_us - 338.1).abs() < 0.05);
        assert!((live.sizes[10].stream_us - 4974.8).abs() < 0.05);
        assert_eq!(live.sizes[3].bytes, 1426);
        assert!((live.contact.first_us - 12609.3).abs() < 0.05);
        assert!((live.contact.us - 265.4).abs() < 0.05);
        assert_eq!(
            (live.rx_ns, live.arp_rx_ns, live.exchanges.len()),
            (10676, 49732, 3)
        );
        assert!(guest_s.is_some());
        // A line without the ARP request's figure (an earlier
        // calibration's) takes it as the frame's (0).
        let older = text.replace("\"mpi_arp_rx_ns\":49732,", "");
        assert_eq!(measurements_from_json(&older, src).unwrap().0.arp_rx_ns, 0);
        for (from, to, what) in [
            ("\"bytes\":4096", "\"bytes\":512", "increasing order"),
            (
                "\"messages\":4",
                "\"messages\":0",
                "other than 1 to 64 messages",
            ),
            ("\"rtt_us\":338.131", "\"rtt_us\":-338.131", "no rtt_us"),
            ("\"contact\"", "\"kontakt\"", "no first contact"),
            (
                "\"mpi_arp_rx_ns\":49732",
                "\"mpi_arp_rx_ns\":-1",
                "no whole mpi_arp_rx_ns",
            ),
            (
                "\"mpi_rx_ns\":10676",
                "\"mpi_rx_ns\":2000000000",
                "no whole mpi_rx_ns of at most a second",
            ),
            ("{", "[", "not a calibration's --json line"),
        ] {
            assert!(text.contains(from), "{from}");
            let e = measurements_from_json(&text.replacen(from, to, 1), src).unwrap_err();
            let e = format!("{e:#}");
            assert!(
                e.starts_with("cal.json: ") && e.contains(what),
                "{from}: {e}"
            );
        }
    }

    /// The command measures every size after a dropped first one.
    #[test]
    fn the_command_gives_every_size_after_a_warm_up() {
        let c = command();
        assert!(
            c.contains(
                "fsin-pingpong 20 8 8 64 512 1426 1448 4096 16384 32768 65536 131072 262144 &&"
            ),
            "{c}"
        );
        assert!(c.contains("fsin-pingpong -s 100 8 8 64"), "{c}");
        assert!(c.contains("fsin-pingpong -x 4 20 8 8 1448 16384 &&"), "{c}");
        assert!(c.contains("fsin-pingpong -c 20 &&"), "{c}");
        assert!(c.ends_with("fsin-pingpong -k 40"), "{c}");
    }
}
