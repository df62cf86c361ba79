//! The command line of `nic-bridge` (also `fsin nic-bridge`): runs the
//! guests and prints what they did. The one place of this crate that
//! prints; both binaries call [`main_with`].

use std::process::ExitCode;

use crate::qemu::{run, Args, BridgeEvent, BridgeLine, QemuError};

/// Entry point of `nic-bridge` and `fsin nic-bridge`: runs [`run`] on a
/// single-threaded runtime, prints `--progress-lines` as they come and
/// the outcome at the end.
pub fn main_with(a: &Args) -> ExitCode {
    // On SIGINT, SIGTERM or SIGHUP the run is dropped: its QEMU processes
    // are killed (`kill_on_drop`) and its work directory removed.
    let events = |event| match event {
        BridgeEvent::Progress(progress) if a.progress_lines => {
            let line = BridgeLine::Progress { progress };
            println!("{}", serde_json::to_string(&line).unwrap_or_default());
        }
        BridgeEvent::Progress(_) => {}
        // The boot that saves a checkpoint takes minutes: say why it boots.
        BridgeEvent::Booting { why, need_mib } => eprintln!(
            "nic-bridge: {why}; booting the guests and saving them there (up to {need_mib} MiB)"
        ),
        BridgeEvent::Saving { dir } => {
            eprintln!("nic-bridge: saving the booted guests in {}", dir.display());
        }
    };
    let interruptible = async {
        let stop = sync_client::signals::stop_requested();
        tokio::select! {
            r = run(a, &events) => r,
            sig = stop => Err(QemuError::Interrupted(sig)),
        }
    };
    let result = match sync_client::block_on("nic-bridge", interruptible) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match result {
        Ok(o) => sync_client::print_outcome(&o, a.json, o.error, |o| {
            for g in &o.guests {
                for p in &g.pings {
                    eprintln!(
                        "guest {} -> {}: {}/{} replies, rtt avg {}",
                        g.guest,
                        p.peer,
                        p.received,
                        p.sent,
                        p.rtt_avg_ms.map_or("-".into(), |r| format!("{r:.3} ms"))
                    );
                }
            }
            eprintln!(
                "nic-bridge: {} slices in {:.1} s; {}",
                o.slices, o.wall_s, o.reason
            );
        }),
        Err(e) => {
            eprintln!("nic-bridge: error: {e}");
            if a.json {
                let reason = e.to_string().lines().next().unwrap_or_default().to_string();
                let line = BridgeLine::Failed {
                    error: true,
                    reason,
                };
                println!("{}", serde_json::to_string(&line).unwrap_or_default());
            }
            if e.is_bad_input() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
