//! One guest's speed alone: the instructions a second that one lock-step
//! guest runs when nothing else does, for the bound of a run's wall time
//! by the guests' own speed (docs/qemu.md, "Where the time went"). Measured once per icount shift with a guest of the small
//! image spinning a shell loop for one guest second at long slices
//! (2000:100000, so that the rounds cost next to nothing), run by this
//! program again (`fsin qemu --guests 1`), and cached in
//! `guest-speed.json`.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The guest's command: one guest second of a busy shell loop, as the
/// round-cost measurements of docs/studies spin.
const SPIN: &str = "timeout 1 sh -c 'while :; do :; done'";

/// The most the measurement may take, wall seconds (a boot of the small
/// image and one guest second take about 15 s on 2 cores).
const LIMIT: Duration = Duration::from_secs(300);

/// Instructions per wall second of one guest alone at `icount_shift` (a
/// node cycle of 2^shift ns, one instruction): from the cache, else
/// measured (and kept) on a quiet machine. `None`, with a line on stderr,
/// when it cannot be measured (no small image, QEMU failing, a signal
/// meanwhile) or the machine is busy with other work.
pub(crate) fn guest_speed(icount_shift: u32) -> Option<f64> {
    let key = format!("icount shift={icount_shift}");
    super::cached(
        "guest-speed.json",
        "one guest's speed",
        &key,
        super::WhenBusy::Skip,
        || {
            eprintln!("fsin: measuring one guest's speed alone (once on this machine)");
            measure(icount_shift)
                .inspect_err(|e| eprintln!("fsin: no bound of the guests' speed: {e}"))
                .ok()
        },
    )
}

/// Runs the spinning guest and reads its report: guest seconds of the
/// command x instructions per guest second / wall seconds. Its output is
/// read on threads of their own (a pipe left full would block it); a
/// signal or [`LIMIT`] stops it with SIGTERM to its process group (it
/// stops its QEMU and removes its files), then SIGKILL after 10 s.
fn measure(icount_shift: u32) -> Result<f64, String> {
    let exe = crate::args::own_exe().map_err(|e| e.to_string())?;
    let image = qemu_adapter::qemu::default_image_dir();
    let mut cmd = Command::new(exe);
    cmd.args(["qemu", "--guests", "1", "--image"])
        .arg(&image)
        .args(["--icount-shift", &icount_shift.to_string()])
        .args(["--roi", "command", "--slice", "2000:100000", "--run", SPIN])
        .args(["--speed-child", "--json", "--quiet", "topo=torus_2"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    sync_client::signals::die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start fsin qemu: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let mut stopping: Option<(String, Instant)> = None;
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        match &stopping {
            None => {
                let why = sync_client::signals::requested()
                    .map(|sig| format!("stopped by {sig}"))
                    .or_else(|| {
                        (started.elapsed() > LIMIT)
                            .then(|| format!("no answer in {} s", LIMIT.as_secs()))
                    });
                if let Some(why) = why {
                    // SAFETY: kill(2) on the child's own process group.
                    unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) };
                    stopping = Some((why, Instant::now()));
                }
            }
            Some((_, since)) if since.elapsed() > Duration::from_secs(10) => {
                let _ = child.kill();
            }
            Some(_) => {}
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (out, err) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    if let Some((why, _)) = stopping {
        return Err(why);
    }
    let report: Value = (out.lines().last())
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            let last = err.lines().last().unwrap_or("no report");
            format!(
                "the spinning guest (image {}) failed: {last}",
                image.display()
            )
        })?;
    let app = &report["app"];
    let (Some(guest_s), Some(wall_s)) = (app["guest_s"].as_f64(), app["wall_s"].as_f64()) else {
        return Err(format!("the spinning guest ran no command: {app}"));
    };
    if !(guest_s > 0.5 && wall_s > 0.0) {
        return Err(format!(
            "the spinning guest ran {guest_s} guest s in {wall_s} s"
        ));
    }
    let hz = qemu_adapter::qemu::args::lockstep_clock_hz(icount_shift) as f64;
    Ok(guest_s * hz / wall_s)
}

/// The bound of a measured phase's wall time by the guests' own speed,
/// wall seconds: `guests` guests running every instruction of `guest_s`
/// guest seconds (one a node cycle of 2^`icount_shift` ns) at `ips`
/// instructions a second each, shared by `cores` cores.
pub(crate) fn bound_s(guests: u32, guest_s: f64, icount_shift: u32, ips: f64, cores: u32) -> f64 {
    let hz = qemu_adapter::qemu::args::lockstep_clock_hz(icount_shift) as f64;
    f64::from(guests) * guest_s * hz / ips / f64::from(cores.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: 64 guests x 4.91 guest s x 125 M instructions a guest
    /// second (8 ns a cycle) = 39.28 G instructions; at 172 M a second on
    /// each of 2 cores, 114.19 s.
    #[test]
    fn the_bound_shares_every_guests_instructions_over_the_cores() {
        let b = bound_s(64, 4.91, 3, 172e6, 2);
        assert!((b - 39.28e9 / 344e6).abs() < 1e-9, "{b}");
        // Twice the guest time or half the cores: twice the bound.
        assert!((bound_s(64, 9.82, 3, 172e6, 2) - 2.0 * b).abs() < 1e-9);
        assert!((bound_s(64, 4.91, 3, 172e6, 1) - 2.0 * b).abs() < 1e-9);
        // A 4 ns cycle: twice the instructions per guest second.
        assert!((bound_s(64, 4.91, 2, 172e6, 2) - 2.0 * b).abs() < 1e-9);
    }
}
