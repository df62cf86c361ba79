//! `--timeline` and its options, shared by the commands that
//! write a run's timeline.

use std::path::{Path, PathBuf};

use fsin::config::{ConfigError, Origin};
use fsin::run::TimelineSpec;
use fsin::timeline::{Target, TimelineFormat};

/// The options of a run's timeline.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct TimelineArgs {
    /// Write the run's timeline into FILE as it goes: `.prv` for Paraver
    /// (its .pcf and .row beside it), `.json` for Perfetto (open it in
    /// ui.perfetto.dev). Per task of a replay, or per guest of `fsin
    /// qemu` (lock-step, the measured phase): running, sending and
    /// waiting for a message; per node of a co-simulation (`fsin serve`,
    /// `fsin demo`): its slices running and waiting at the barrier, in
    /// wall-clock time; every message or frame from its send to its
    /// arrival; the network's accepted load and link utilization per
    /// window (--timeline-window for a replay, util_window slices for the
    /// others). With --out, timeline.svg draws it (up to
    /// 64 rows).
    #[arg(long, value_name = "FILE")]
    pub(crate) timeline: Option<PathBuf>,
    /// The timeline's format, when FILE's extension does not say it.
    #[arg(long, value_name = "FORMAT", value_parser = ["paraver", "perfetto"])]
    pub(crate) timeline_format: Option<String>,
    /// Network cycles per window of a replay's timeline counters.
    #[arg(long, value_name = "CYCLES", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) timeline_window: u64,
    /// The timeline's largest size, MiB of records: a workload whose
    /// estimate is larger is refused up front, and what a run makes past
    /// it is left out (the report says from which cycle).
    #[arg(long, value_name = "MIB", default_value_t = 1024,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub(crate) timeline_limit: u64,
    /// Keep only the ticks from this one on (network cycles of a replay,
    /// node cycles of the guests' measured phase, wall-clock nanoseconds
    /// of a co-simulation): states are cut there, messages and counters
    /// before it left out. A run's timeline too large for its limit is
    /// then not refused up front.
    #[arg(long, value_name = "TICK", requires = "timeline")]
    pub(crate) timeline_from: Option<u64>,
    /// Keep only the ticks before this one (as --timeline-from).
    #[arg(long, value_name = "TICK", requires = "timeline")]
    pub(crate) timeline_to: Option<u64>,
}

impl TimelineArgs {
    /// The timeline of a replay asked for, if one is (its chart into
    /// `out`).
    ///
    /// # Errors
    /// As [`TimelineArgs::target`].
    pub(crate) fn spec(&self, out: Option<&Path>) -> anyhow::Result<Option<TimelineSpec>> {
        Ok(self.target(out)?.map(|target| TimelineSpec {
            target,
            window: self.timeline_window,
        }))
    }

    /// The timeline asked for, if one is, with its Gantt chart drawn into
    /// `out` (`--out`) as `timeline.svg`.
    ///
    /// # Errors
    /// A FILE whose format neither its extension nor `--timeline-format`
    /// names; an empty span.
    pub(crate) fn target(&self, out: Option<&Path>) -> anyhow::Result<Option<Target>> {
        let Some(path) = &self.timeline else {
            return Ok(None);
        };
        let format = match &self.timeline_format {
            Some(name) => TimelineFormat::named(name),
            None => TimelineFormat::of_path(path),
        };
        let Some(format) = format else {
            return Err(ConfigError::BadValue {
                key: "--timeline".into(),
                value: path.display().to_string(),
                origin: Origin::CommandLine,
                reason: "name it .prv (Paraver) or .json (Perfetto), or give \
                         --timeline-format paraver|perfetto"
                    .into(),
            }
            .into());
        };
        let span = match (self.timeline_from, self.timeline_to) {
            (None, None) => None,
            (from, to) => Some((from.unwrap_or(0), to.unwrap_or(u64::MAX))),
        };
        if let Some((from, to)) = span.filter(|(from, to)| from >= to) {
            return Err(ConfigError::Combination {
                key: "--timeline-from".into(),
                reason: format!("{from} with --timeline-to {to} is an empty span; give FROM < TO"),
            }
            .into());
        }
        Ok(Some(Target {
            path: path.clone(),
            format,
            limit: self.timeline_limit << 20,
            chart: out.map(|d| d.join("timeline.svg")),
            span,
        }))
    }
}
