//! Progress of long commands, on stderr: a live status line on a terminal
//! (indicatif), else one line every `--progress-s` seconds and one at
//! every phase change, so that a batch job's log tells stuck from slow.
//! `--quiet` silences both. Standard output is left alone: the JSON report
//! stays its last line.
//!
//! A [`Reporter`] runs on a thread of its own and polls the run's status
//! (the atomics a run publishes: `fsin::drive::RunStatus`,
//! `fsin_cosim::progress::CosimStatus`), so a run that is stuck still gets
//! its lines, with facts that stop moving.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fsin::config::ConfigError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// `--progress-s` and `--quiet`, shared by every long command.
#[derive(Debug, Clone, clap::Args)]
pub struct ProgressArgs {
    /// When stderr is not a terminal, write a progress line there every S
    /// seconds (0: only at phase changes); on a terminal a live status
    /// line shows the same facts.
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub progress_s: f64,
    /// No progress: neither the status line nor the progress lines
    /// (errors and the report still come).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl ProgressArgs {
    /// The period of progress lines off a terminal (`None`: only phase
    /// changes).
    ///
    /// # Errors
    /// `--progress-s` is negative or not a number.
    fn period(&self) -> Result<Option<Duration>, ConfigError> {
        let period = crate::bounds::seconds("--progress-s", self.progress_s, true)?;
        Ok((!period.is_zero()).then_some(period))
    }
}

/// What the progress line says at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The phase (`booting`, `measuring`, ...): a change is logged at once.
    pub phase: &'static str,
    /// The facts, e.g. `3/16 guests up, slice 120, ...`.
    pub facts: String,
    /// Fraction of the run done, 0 to 1, where it can be known: it gives
    /// an ETA, from the pace since the phase began.
    pub done: Option<f64>,
    /// A line to print once, above the status line (e.g. how long the
    /// run will take); printed even before the status line shows.
    pub note: Option<String>,
}

/// How often the reporter polls the run (and redraws the status line).
const TICK: Duration = Duration::from_millis(200);

/// Progress shows once a run has lasted this long (a quick run prints
/// nothing but its report).
const QUIET_START: Duration = Duration::from_secs(1);

/// The thread that shows a run's progress; stopped (and the status line
/// cleared) by [`Reporter::finish`] or when dropped.
pub struct Reporter {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    /// Starts reporting the progress of command `name` (e.g. `fsin qemu`),
    /// polling `status` every 200 ms; nothing with `--quiet`.
    ///
    /// # Errors
    /// A bad `--progress-s`.
    pub fn start(
        name: String,
        args: &ProgressArgs,
        status: impl FnMut() -> Status + Send + 'static,
    ) -> Result<Reporter, ConfigError> {
        let period = args.period()?;
        if args.quiet {
            return Ok(Reporter {
                stop: None,
                thread: None,
            });
        }
        let (stop, stopped) = mpsc::channel();
        let terminal = std::io::stderr().is_terminal();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || report(&name, terminal, period, &stopped, status))
            .ok();
        Ok(Reporter {
            stop: Some(stop),
            thread,
        })
    }

    /// Stops reporting: the last phase change is logged, the status line
    /// cleared.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The reporter's loop.
fn report(
    name: &str,
    terminal: bool,
    period: Option<Duration>,
    stopped: &mpsc::Receiver<()>,
    mut status: impl FnMut() -> Status,
) {
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    let mut phase = "";
    let mut last_line: Option<Instant> = None;
    let mut eta = Eta::default();
    loop {
        let stop = !matches!(stopped.recv_timeout(TICK), Err(RecvTimeoutError::Timeout));
        let s = status();
        if let Some(note) = &s.note {
            match &bar {
                Some(b) => b.println(format!("{name}: {note}")),
                None => eprintln!("{name}: {note}"),
            }
        }
        let changed = s.phase != phase;
        if changed {
            eta = Eta::default();
        }
        let mut text = format!("{}: {}", s.phase, s.facts);
        if let Some(left) = s.done.and_then(|f| eta.left(f)) {
            text.push_str(&format!(", ETA {}", duration(left)));
        }
        let shown = started.elapsed() >= QUIET_START;
        if terminal {
            if bar.is_none() && shown && !stop {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                b.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} [{elapsed}] {wide_msg}")
                        .expect("valid template"),
                );
                b.set_prefix(name.to_string());
                bar = Some(b);
            }
            if let Some(b) = &bar {
                b.set_message(text);
                b.tick();
            }
        } else if shown && !(stop && last_line.is_none()) {
            // The first line, a phase change, or the period's line; at the
            // end only the last phase change of a run that showed lines.
            let due = match last_line {
                None => true,
                Some(at) => changed || period.is_some_and(|p| at.elapsed() >= p),
            };
            if due {
                eprintln!("{name} [{}] {text}", duration(started.elapsed()));
                last_line = Some(Instant::now());
            }
        }
        phase = s.phase;
        if stop {
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// The pace of a phase, for its ETA: where it was first seen.
#[derive(Default)]
struct Eta {
    first: Option<(Instant, f64)>,
}

impl Eta {
    /// Time left at fraction `done`, at the pace since the first fraction
    /// this phase showed; `None` until it has moved.
    fn left(&mut self, done: f64) -> Option<Duration> {
        let done = done.clamp(0.0, 1.0);
        let (t0, f0) = *self.first.get_or_insert((Instant::now(), done));
        let moved = done - f0;
        if moved <= 0.0 {
            return None;
        }
        let secs = t0.elapsed().as_secs_f64() * (1.0 - done) / moved;
        Duration::try_from_secs_f64(secs).ok()
    }
}

/// `42 s`, `3 min 05 s`, `2 h 07 min`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s / 60 % 60),
    }
}

/// A time in seconds with a unit that keeps three digits or more: `12.35 s`,
/// `8.000 ms`, `85.0 us`.
pub fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// `1234567` as `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_counts_read_as_people_write_them() {
        assert_eq!(duration(Duration::from_secs(42)), "42 s");
        assert_eq!(duration(Duration::from_secs(185)), "3 min 05 s");
        assert_eq!(
            duration(Duration::from_secs(2 * 3600 + 7 * 60 + 9)),
            "2 h 07 min"
        );
        assert_eq!(seconds(12.345), "12.35 s");
        assert_eq!(seconds(0.008), "8.000 ms");
        assert_eq!(seconds(0.000_085), "85.0 us");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn the_eta_follows_the_pace_since_the_phase_began() {
        let mut eta = Eta {
            first: Some((Instant::now() - Duration::from_secs(10), 0.2)),
        };
        // 0.2 -> 0.4 in 10 s: 0.6 left takes 30 s.
        let left = eta.left(0.4).unwrap().as_secs_f64();
        assert!((29.0..31.0).contains(&left), "{left}");
        assert_eq!(Eta::default().left(0.5), None);
    }

    #[test]
    fn a_negative_period_is_refused_by_name() {
        let a = ProgressArgs {
            progress_s: -1.0,
            quiet: false,
        };
        let e = a.period().unwrap_err().to_string();
        assert!(e.contains("--progress-s"), "{e}");
        let a = ProgressArgs {
            progress_s: 0.0,
            quiet: false,
        };
        assert_eq!(a.period().unwrap(), None);
    }
}
