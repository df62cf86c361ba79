//! What the guests said while the run goes on ([`Guests`]), and the
//! conditions that end it early.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;

use super::args::{guest_ip, guest_mac, Args};
use super::error::{io, QemuError};
use super::guest_io::GuestEvent;
use super::outcome::{AppOutcome, GuestReport};

/// State of the guests while the run goes on.
pub(super) struct GuestsState {
    pub(super) reports: Vec<GuestReport>,
    pub(super) nics: Vec<Option<OwnedWriteHalf>>,
    /// Last console lines of each guest, for error messages.
    pub(super) tails: Vec<Vec<String>>,
    pub(super) logs: Vec<Option<std::fs::File>>,
}

impl GuestsState {
    /// The guests of `a`, before any has said anything, with their console
    /// logs created under `--logs`.
    ///
    /// # Errors
    /// A log that cannot be created.
    pub(super) fn new(a: &Args) -> Result<GuestsState, QemuError> {
        let n = a.guest.guests as usize;
        Ok(GuestsState {
            reports: (0..a.guest.guests)
                .map(|i| GuestReport {
                    guest: i,
                    node: a.first_node + i,
                    ip: guest_ip(i).to_string(),
                    mac: guest_mac(a.first_node + i)
                        .map(|b| format!("{b:02x}"))
                        .join(":"),
                    ..GuestReport::default()
                })
                .collect(),
            nics: (0..n).map(|_| None).collect(),
            tails: vec![Vec::new(); n],
            logs: io(
                (0..n)
                    .map(|i| {
                        a.guest.logs.as_ref().map(|d| {
                            std::fs::create_dir_all(d)?;
                            std::fs::File::create(d.join(format!("guest-{i}.log")))
                        })
                    })
                    .map(|r| r.transpose())
                    .collect::<std::io::Result<_>>(),
                || "cannot create the console logs".into(),
            )?,
        })
    }

    /// Takes the boot's reports of guests restored from a checkpoint
    /// (`saved`, guest 0 first): they are up, as they were saved, and have
    /// run no command yet.
    pub(super) fn restored(&mut self, saved: &[GuestReport]) {
        for (r, saved) in self.reports.iter_mut().zip(saved) {
            *r = GuestReport {
                app: AppOutcome::default(),
                kernel_s: None,
                ..saved.clone()
            };
        }
    }

    pub(super) fn console(&mut self, i: usize, line: String) {
        use std::io::Write;
        if let Some(f) = &mut self.logs[i] {
            let _ = writeln!(f, "{line}");
        }
        self.reports[i].console(&line);
        let tail = &mut self.tails[i];
        if tail.len() == 8 {
            tail.remove(0);
        }
        tail.push(line);
    }

    /// The error for guest `i`'s QEMU having exited with `status` before
    /// the run ended, with its last console lines.
    pub(super) fn ended(&self, i: usize, status: &std::io::Result<ExitStatus>) -> QemuError {
        let how = match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("wait failed: {e}"),
        };
        QemuError::Guest(format!(
            "{} ended before the run did (QEMU {how}); last console lines:\n  {}",
            self.describe(i),
            self.tails[i].join("\n  ")
        ))
    }

    pub(super) fn describe(&self, i: usize) -> String {
        let r = &self.reports[i];
        format!("guest {i} (node {}, {}, {})", r.node, r.ip, r.mac)
    }
}

/// What a guest's console line says of a condition that its run cannot
/// survive, which ends the run at once instead of at the boot or command
/// timeout: a full root file system (the init's writes fail, the cluster
/// never comes up), the kernel out of memory, an initramfs that did not
/// unpack, an `/init` that cannot go on (`FSIN-INIT-FAILED`, say when it
/// cannot mount the shared root). The `--run` command's own output
/// (`FSIN-OUT` lines) is the command's business: its exit code tells.
pub(super) fn fatal_condition(line: &str) -> Option<&'static str> {
    if line.contains("FSIN-OUT") {
        return None;
    }
    [
        (
            "No space left on device",
            "ran out of space in its root file system, which is in RAM (give more --memory-mb)",
        ),
        ("Out of memory", "ran out of memory (give more --memory-mb)"),
        (
            "Initramfs unpacking failed",
            "could not unpack its initramfs (give more --memory-mb)",
        ),
        ("FSIN-INIT-FAILED", "its /init could not go on"),
    ]
    .iter()
    .find(|(text, _)| line.contains(text))
    .map(|&(_, what)| what)
}

/// How long a broken NIC stream waits for its QEMU's exit to be reported.
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Guest `i`'s exit status if its QEMU exits within [`EXIT_GRACE`]; the
/// console lines that arrive meanwhile are kept, other events dropped (the
/// run is ending).
pub(super) async fn exit_of(
    rx: &mut mpsc::UnboundedReceiver<GuestEvent>,
    guests: &mut GuestsState,
    i: usize,
) -> Option<std::io::Result<ExitStatus>> {
    let end = tokio::time::Instant::now() + EXIT_GRACE;
    loop {
        match tokio::time::timeout_at(end, rx.recv()).await.ok()?? {
            GuestEvent::Exited(j, status) if j == i => return Some(status),
            GuestEvent::Console(j, line) => guests.console(j, line),
            _ => {}
        }
    }
}

/// Fails when guest 0 has not brought the cluster up within
/// `--boot-timeout-s`, or not ended the `--run` command within
/// `--app-timeout` more, at `guest_s` seconds of guest time since the start:
/// an image whose /init never runs the command (or reports it) cannot hang
/// the run.
pub(super) fn app_deadline(a: &Args, guests: &GuestsState, guest_s: f64) -> Result<(), QemuError> {
    let g = &guests.reports[0];
    let (limit, what) = if g.cluster_s.is_none() {
        (a.boot_timeout_s, "bring every guest up (FSIN-CLUSTER)")
    } else {
        (
            a.boot_timeout_s + a.guest.app_timeout + 60.0,
            "report the end of the command (FSIN-APP)",
        )
    };
    if guest_s > limit {
        return Err(QemuError::Guest(format!(
            "{} did not {what} within {limit:.0} s of guest time; last console lines:\n  {}",
            guests.describe(0),
            guests.tails[0].join("\n  ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn fatal_console_lines_are_told_from_the_commands_output() {
        let full = "sh: write error: No space left on device";
        assert!(fatal_condition(full).unwrap().contains("out of space"));
        let oom = "[   12.5] Out of memory: Killed process 97 (hpcc) total-vm:1000kB";
        assert!(fatal_condition(oom).unwrap().contains("out of memory"));
        let unpack = "[    0.9] Initramfs unpacking failed: write error";
        assert!(fatal_condition(unpack).unwrap().contains("initramfs"));
        assert_eq!(fatal_condition(&format!("FSIN-OUT {full}")), None);
        assert_eq!(fatal_condition("FSIN-UP 10.0.0.1 uptime=5.79"), None);
    }

    /// A broken NIC stream of a QEMU that is exiting is reported as the
    /// exit, with the console lines that came meanwhile; without an exit
    /// within the grace period it stays a NIC error.
    #[tokio::test]
    async fn a_reset_nic_of_a_dying_guest_reports_its_exit() {
        use std::os::unix::process::ExitStatusExt;
        let mut guests = GuestsState {
            reports: (0..2)
                .map(|i| GuestReport {
                    guest: i,
                    node: i,
                    ..GuestReport::default()
                })
                .collect(),
            nics: vec![None, None],
            tails: vec![Vec::new(); 2],
            logs: vec![None, None],
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(GuestEvent::Frame(1, None, vec![0; 60])).unwrap();
        tx.send(GuestEvent::Console(1, "Kernel panic".into()))
            .unwrap();
        tx.send(GuestEvent::Exited(0, Ok(ExitStatus::from_raw(0))))
            .unwrap();
        tx.send(GuestEvent::Exited(1, Ok(ExitStatus::from_raw(9))))
            .unwrap();
        let status = exit_of(&mut rx, &mut guests, 1).await.expect("exit");
        let e = guests.ended(1, &status).to_string();
        assert!(e.contains("guest 1 (node 1"), "{e}");
        assert!(
            e.contains("ended before the run did (QEMU signal: 9"),
            "{e}"
        );
        assert!(e.ends_with("Kernel panic"), "{e}");
        let start = std::time::Instant::now();
        assert!(exit_of(&mut rx, &mut guests, 1).await.is_none());
        assert!(start.elapsed() >= EXIT_GRACE);
    }
}
