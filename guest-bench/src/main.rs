//! `fsin-bench`: the guest side of `fsin qemu`, a static binary in the
//! guest images of `scripts/install-qemu.sh`, run by the guest's `/init`.
//!
//! ```text
//! fsin-bench pingpong ME PEER ROUNDS BYTES   UDP ping-pong between two guests
//! fsin-bench a2a ME PEERS BYTES              TCP all-to-all exchange
//! fsin-bench rshd [PORT]                     remote-shell server (port 5040)
//! fsin-bench rsh HOST CMD...                 run CMD on HOST (also as fsin-rsh)
//! fsin-bench run TIMEOUT_S FILE              run an application, report it
//! fsin-bench magic BYTE                      send the magic packet BYTE
//! fsin-bench hostile IFACE COUNT [FLOOD]     misbehave on the link (tests)
//! ```
//!
//! The benchmark is in [`bench`], the remote shell MPI launches its ranks
//! with in [`rsh`], the application runner of `--run` in [`app`]. Results
//! are console lines starting with `FSIN-`; a failure prints
//! `FSIN-BENCH-ERROR message` (`FSIN-APP-ERROR message` for `run`) and
//! exits 1.

mod app;
mod bench;
mod hostile;
mod rsh;

use std::process::ExitCode;

fn run(args: &[String]) -> Result<String, String> {
    match args {
        [kind, me, peer, rounds, bytes] if kind == "pingpong" => bench::pingpong(
            me,
            peer,
            bench::number(rounds, "ROUNDS")?,
            bench::number(bytes, "BYTES")?,
        ),
        [kind, me, peers, bytes] if kind == "a2a" => {
            let peers: Vec<String> = peers
                .split(',')
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect();
            bench::a2a(me, &peers, bench::number(bytes, "BYTES")?)
        }
        [kind] if kind == "rshd" => rsh::server(rsh::PORT),
        [kind, port] if kind == "rshd" => rsh::server(
            port.parse()
                .map_err(|e| format!("bad PORT {port:?}: {e}"))?,
        ),
        [kind, timeout, file] if kind == "run" => app::run(
            timeout
                .parse()
                .ok()
                .filter(|t: &f64| (0.0..=app::MAX_TIMEOUT_S).contains(t))
                .ok_or_else(|| {
                    format!(
                        "bad TIMEOUT_S {timeout:?}: seconds, 0 to {} (a week)",
                        app::MAX_TIMEOUT_S
                    )
                })?,
            file,
        ),
        [kind, iface, count] if kind == "hostile" => {
            hostile::send(iface, bench::number(count, "COUNT")?, 0)
        }
        [kind, iface, count, flood] if kind == "hostile" => {
            hostile::send(
                iface,
                bench::number(count, "COUNT")?,
                bench::number(flood, "FLOOD")?,
            )
        }
        [kind, byte] if kind == "magic" => magic(
            byte.parse()
                .map_err(|e| format!("bad BYTE {byte:?}: {e}"))?,
        ),
        _ => Err("usage: fsin-bench pingpong ME PEER ROUNDS BYTES | a2a ME PEERS BYTES | rshd [PORT] | rsh HOST CMD... | run TIMEOUT_S FILE | magic BYTE | hostile IFACE COUNT [FLOOD]".into()),
    }
}

/// Sends the magic packet with command `byte` (1: INSEE's CLEAR_STATS; 67,
/// `C`: fsin-rs's checkpoint request): one UDP datagram to 1.2.3.4, which
/// the guest's `/init` routes to MAC 11:22:33:44:55:66 (docs/contracts.md).
fn magic(byte: u8) -> Result<String, String> {
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("bind: {e}"))?;
    sock.send_to(&[byte], "1.2.3.4:33434")
        .map_err(|e| format!("magic packet to 1.2.3.4: {e}"))?;
    Ok(format!("FSIN-MAGIC {byte}"))
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let called = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .unwrap_or_default();
    // `fsin-rsh HOST CMD...` and `fsin-bench rsh HOST CMD...` are one client.
    let rsh_from = if called == "fsin-rsh" {
        Some(1)
    } else {
        argv.get(1).is_some_and(|k| k == "rsh").then_some(2)
    };
    if let Some(from) = rsh_from {
        return ExitCode::from(rsh::client(&argv[from..]) as u8);
    }
    match run(&argv[1..]) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            // The runner's failures are the application's (nic-bridge
            // reports them as app.error).
            let kind = if argv.get(1).is_some_and(|k| k == "run") {
                "FSIN-APP-ERROR"
            } else {
                "FSIN-BENCH-ERROR"
            };
            println!("{kind} {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timeout no duration holds, or beyond a week, is refused before
    /// anything starts (it panicked in `Duration::from_secs_f64`).
    #[test]
    fn timeouts_beyond_a_week_are_refused() {
        for bad in ["1e300", "604801", "-1", "nan", "inf"] {
            let args: Vec<String> = ["run", bad, "/nonexistent"].map(String::from).to_vec();
            assert_eq!(
                run(&args),
                Err(format!(
                    "bad TIMEOUT_S {bad:?}: seconds, 0 to 604800 (a week)"
                ))
            );
        }
    }
}
