//! `--timeline` and its options (issue 59), shared by the commands that
//! write a run's timeline.

use std::path::{Path, PathBuf};

use fsin::run::TimelineSpec;
use fsin::timeline::{Format, Target};

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
    /// arrival; for a replay, the network's accepted load and link
    /// utilization per window. With --out, timeline.svg draws it (up to
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
}

impl TimelineArgs {
    /// The timeline asked for, if one is.
    ///
    /// # Errors
    /// A FILE whose format neither its extension nor `--timeline-format`
    /// names.
    pub(crate) fn spec(&self) -> anyhow::Result<Option<TimelineSpec>> {
        Ok(self.target(None)?.map(|t| TimelineSpec {
            path: t.path,
            format: t.format,
            window: self.timeline_window,
            limit: t.limit,
        }))
    }

    /// The timeline asked for, if one is, with its Gantt chart drawn into
    /// `out` (`--out`) as `timeline.svg`.
    ///
    /// # Errors
    /// As [`TimelineArgs::spec`].
    pub(crate) fn target(&self, out: Option<&Path>) -> anyhow::Result<Option<Target>> {
        let Some(path) = &self.timeline else {
            return Ok(None);
        };
        let format = match &self.timeline_format {
            Some(name) => Format::named(name),
            None => Format::of_path(path),
        };
        let Some(format) = format else {
            anyhow::bail!(
                "--timeline {}: name it .prv (Paraver) or .json (Perfetto), or give \
                 --timeline-format paraver|perfetto",
                path.display()
            );
        };
        Ok(Some(Target {
            path: path.clone(),
            format,
            limit: self.timeline_limit << 20,
            chart: out.map(|d| d.join("timeline.svg")),
        }))
    }
}
