//! Timelines of runs: what each row (a task of a trace replay,
//! a node of a co-simulation, a guest) did over time, every message or
//! frame from its send to its arrival, and the network's counters over
//! windows, so that a user can see where a run lost its time.
//!
//! Two formats, both streamed while the run goes:
//! - **Paraver** (BSC's `.prv`, with its `.pcf` of names and colours and
//!   its `.row` of row names), the format of INSEE's family of tools
//!   (Extrae writes it, Dimemas replays into it): state records (type 1),
//!   event records (type 2, the counters) and communication records
//!   (type 3), sorted by time as Paraver reads them;
//! - **Perfetto** (Chrome's trace-event JSON, opened by ui.perfetto.dev):
//!   an `X` slice per state, a flow (`s`, `f`) per message, a `C` counter
//!   per network figure, `M` names; one process per node, one track per
//!   row.
//!
//! Times are ticks (network cycles for a stand-alone run), written as
//! nanoseconds: Paraver's `_ns` and Perfetto's microseconds with three
//! decimals, both exact. The trace's date is fixed (1 January 1970), so
//! that the same run writes the same bytes.

#![warn(missing_docs)]

mod gantt;
mod mpi;
mod paraver;
mod perfetto;

pub use gantt::MAX_ROWS;
pub use mpi::{MpiCall, MpiFunction};

use std::path::{Path, PathBuf};

/// What a row does over an interval. The numbers are Paraver's standard
/// states (those of Extrae's `.pcf`), so that its names and colours are
/// the ones Paraver's users know; the states inside MPI calls are the ones
/// Extrae gives each call ([`MpiCall::state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Nothing to do: finished, or not started.
    Idle,
    /// Computing: a CPU burst of a trace, a node running its slice.
    Running,
    /// Waiting for a message that has not arrived (a blocking receive).
    Waiting,
    /// Sending: generating a message's packets while the network takes
    /// them (Paraver's "Blocking Send").
    Sending,
    /// Waiting for the others at a barrier (a node at its slice's end).
    Synchronizing,
    /// Inside `MPI_Probe` or `MPI_Iprobe`.
    TestProbe,
    /// Inside a completion call (`MPI_Wait`, `MPI_Test` and their kin).
    WaitAll,
    /// Inside `MPI_Isend`.
    ImmediateSend,
    /// Inside `MPI_Irecv`.
    ImmediateReceive,
    /// Inside a collective other than `MPI_Barrier`.
    GroupCommunication,
    /// Inside another MPI call (`MPI_Init`, `MPI_Comm_split`, ...).
    Others,
    /// Inside `MPI_Sendrecv`.
    SendReceive,
}

impl State {
    /// Every state, in Paraver's order.
    pub const ALL: [State; 12] = [
        State::Idle,
        State::Running,
        State::Waiting,
        State::Sending,
        State::Synchronizing,
        State::TestProbe,
        State::WaitAll,
        State::ImmediateSend,
        State::ImmediateReceive,
        State::GroupCommunication,
        State::Others,
        State::SendReceive,
    ];

    /// Its name, as Paraver's standard `.pcf` has it.
    pub fn name(self) -> &'static str {
        match self {
            State::Idle => "Idle",
            State::Running => "Running",
            State::Waiting => "Waiting a message",
            State::Sending => "Blocking Send",
            State::Synchronizing => "Synchronization",
            State::TestProbe => "Test/Probe",
            State::WaitAll => "Wait/WaitAll",
            State::ImmediateSend => "Immediate Send",
            State::ImmediateReceive => "Immediate Receive",
            State::GroupCommunication => "Group Communication",
            State::Others => "Others",
            State::SendReceive => "Send Receive",
        }
    }

    /// Its value in Paraver's state records.
    pub fn paraver(self) -> u32 {
        match self {
            State::Idle => 0,
            State::Running => 1,
            State::Waiting => 3,
            State::Sending => 4,
            State::Synchronizing => 5,
            State::TestProbe => 6,
            State::WaitAll => 8,
            State::ImmediateSend => 10,
            State::ImmediateReceive => 11,
            State::GroupCommunication => 13,
            State::Others => 15,
            State::SendReceive => 16,
        }
    }

    /// Its colour (red, green, blue), as Paraver's standard `.pcf` has it.
    pub fn rgb(self) -> (u8, u8, u8) {
        match self {
            State::Idle => (117, 195, 255),
            State::Running => (0, 0, 255),
            State::Waiting => (255, 0, 0),
            State::Sending => (255, 0, 174),
            State::Synchronizing => (179, 0, 0),
            State::TestProbe => (0, 255, 0),
            State::WaitAll => (235, 0, 0),
            State::ImmediateSend => (255, 0, 255),
            State::ImmediateReceive => (100, 100, 177),
            State::GroupCommunication => (255, 144, 26),
            State::Others => (192, 224, 0),
            State::SendReceive => (66, 66, 66),
        }
    }
}

/// One message (or frame) from row `src` to row `dst`: sent at tick
/// `sent` (its send began), arrived at tick `received` (its last packet
/// consumed, plus the NIC's latency for a frame), `bytes` long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The sender's row.
    pub src: u32,
    /// The receiver's row.
    pub dst: u32,
    /// Tick its send began.
    pub sent: u64,
    /// Tick it arrived.
    pub received: u64,
    /// Its length, bytes.
    pub bytes: u64,
    /// The tag it carries (a trace's tag; a guest's frame's number among
    /// its sender's frames, from 1).
    pub tag: u64,
}

/// One row of a timeline: a task (a rank) or a guest, on `node` (0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// What the row is called (`guest 0`, a task's name).
    pub name: String,
    /// The network node it runs on, from 0.
    pub node: u32,
}

/// What a timeline is about: its rows, the network's node count and what
/// a tick is.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The rows, in order: row `k` of [`Timeline::state`] is `rows[k]`.
    pub rows: Vec<Row>,
    /// Nodes of the network (Paraver's resources: one CPU each).
    pub nodes: u32,
    /// What one tick of the timeline is (e.g. "network cycle"): the
    /// Perfetto file says so, and `.pcf`'s units are nanoseconds per tick.
    pub tick: String,
}

/// A timeline's file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineFormat {
    /// BSC's Paraver: `.prv`, `.pcf` and `.row`.
    Paraver,
    /// Chrome's trace-event JSON, as ui.perfetto.dev opens it.
    Perfetto,
}

impl TimelineFormat {
    /// The format a path's extension names: `.prv` Paraver, `.json`
    /// Perfetto.
    pub fn of_path(path: &Path) -> Option<TimelineFormat> {
        match path.extension()?.to_str()? {
            "prv" => Some(TimelineFormat::Paraver),
            "json" => Some(TimelineFormat::Perfetto),
            _ => None,
        }
    }

    /// The format named `name` (`paraver` or `perfetto`).
    pub fn named(name: &str) -> Option<TimelineFormat> {
        match name {
            "paraver" => Some(TimelineFormat::Paraver),
            "perfetto" => Some(TimelineFormat::Perfetto),
            _ => None,
        }
    }
}

/// Where and how to write a timeline: what `--timeline`,
/// `--timeline-format`, `--timeline-limit` and `--out` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The file (`.prv`: its `.pcf` and `.row` beside it).
    pub path: PathBuf,
    /// Paraver or Perfetto (`--timeline-format`).
    pub format: TimelineFormat,
    /// Bytes of records at most ([`Timeline::create`]).
    pub limit: u64,
    /// Where to draw the Gantt chart (`timeline.svg` in `--out`), for at
    /// most [`MAX_ROWS`] rows.
    pub chart: Option<PathBuf>,
    /// The ticks kept, `[from, to)` (`--timeline-from`, `--timeline-to`):
    /// states are cut to them, messages and counters outside left out.
    /// `None`: every tick.
    pub span: Option<(u64, u64)>,
}

/// A timeline's counters over one window: what one side of a run
/// measures and another writes (the co-simulation server's network
/// counters, written into `fsin qemu`'s guests' timeline).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterWindow {
    /// The window's first tick.
    pub from: u64,
    /// Its length, ticks.
    pub length: u64,
    /// Its values, in the order of their names ([`Counted::names`]).
    pub values: Vec<f64>,
}

/// Where one side hands counters, window after window, to the timeline
/// another side writes: the measuring side appends, the writing side
/// takes.
pub type CounterBoard = std::sync::Arc<std::sync::Mutex<Counted>>;

/// The counters on a [`CounterBoard`]: their names (once known) and the
/// windows not yet taken.
#[derive(Debug, Default)]
pub struct Counted {
    /// The counters' names, in the order of every window's values.
    pub names: Vec<String>,
    /// The windows measured and not yet written, oldest first.
    pub windows: Vec<CounterWindow>,
}

/// A timeline could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// Its file could not be written.
    #[error("cannot write the timeline {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `timeline.svg` cannot be drawn.
    #[error("cannot draw timeline.svg: {0}")]
    Draw(String),
}

/// What a finished timeline holds (`timeline` in the reports of `fsin
/// run`, `fsin qemu` and co-simulations).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Written {
    /// The files written (the `.prv`, `.pcf` and `.row`, or the `.json`).
    pub files: Vec<PathBuf>,
    /// State records written.
    pub states: u64,
    /// Message records written.
    pub messages: u64,
    /// Counter records written.
    pub counters: u64,
    /// MPI calls drawn on the ranks' tracks ([`Timeline::call`]).
    #[serde(default)]
    pub calls: u64,
    /// Bytes of records written (the body, without headers and names).
    pub bytes: u64,
    /// The tick of the first record left out because the timeline
    /// reached its size limit (`None`: nothing was left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_at: Option<u64>,
    /// The ticks kept, `[from, to)`, when not all were ([`Target::span`],
    /// `to` no later than the timeline's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<(u64, u64)>,
}

/// The writer of the timeline's format ([`TimelineFormat`]).
enum FormatWriter {
    Paraver(paraver::ParaverWriter),
    Perfetto(perfetto::PerfettoWriter),
}

/// A timeline being written: record into it as the run goes, then
/// [`Timeline::finish`] it. The body streams to disk (Paraver's sorted in
/// runs of at most 64 MiB, merged at the end); at most `limit` bytes of
/// records are kept, the rest left out and counted from
/// [`Written::cut_at`]. A write error is kept and returned by `finish`.
pub struct Timeline {
    writer: FormatWriter,
    path: PathBuf,
    limit: u64,
    /// The ticks kept ([`Target::span`]): every one by default.
    span: (u64, u64),
    chart: Option<PathBuf>,
    written: Written,
    error: Option<std::io::Error>,
    /// The Gantt chart's counts, for a timeline of at most [`MAX_ROWS`]
    /// rows.
    gantt: Option<gantt::Gantt>,
    tick: String,
    /// The layout's rows.
    rows: u32,
}

impl Timeline {
    /// A timeline of `layout` as `target` asks: into its path (and their
    /// companions) in its format, of at most its limit of bytes of
    /// records, of the ticks of its span.
    ///
    /// # Errors
    /// [`TimelineError::Io`]: the file cannot be created.
    pub fn create(target: &Target, layout: Layout) -> Result<Timeline, TimelineError> {
        let path = &target.path;
        let io = |source| TimelineError::Io {
            path: path.to_path_buf(),
            source,
        };
        let names: Vec<String> = layout.rows.iter().map(|r| r.name.clone()).collect();
        let gantt = (names.len() <= MAX_ROWS).then(|| gantt::Gantt::new(names));
        let tick = layout.tick.clone();
        let rows = layout.rows.len() as u32;
        let writer = match target.format {
            TimelineFormat::Paraver => {
                FormatWriter::Paraver(paraver::ParaverWriter::create(path, layout).map_err(io)?)
            }
            TimelineFormat::Perfetto => {
                FormatWriter::Perfetto(perfetto::PerfettoWriter::create(path, layout).map_err(io)?)
            }
        };
        Ok(Timeline {
            writer,
            path: path.to_path_buf(),
            limit: target.limit,
            span: target.span.unwrap_or((0, u64::MAX)),
            chart: target.chart.clone(),
            written: Written {
                span: target.span,
                ..Written::default()
            },
            error: None,
            gantt,
            tick,
            rows,
        })
    }

    /// Whether a record of about `bytes` bytes at tick `t` still fits.
    fn fits(&mut self, t: u64, bytes: u64) -> bool {
        if self.full() {
            return false;
        }
        if self.written.bytes.saturating_add(bytes) > self.limit {
            self.written.cut_at = Some(t);
            return false;
        }
        self.written.bytes += bytes;
        true
    }

    /// Whether the timeline takes no more records: it reached its size
    /// limit, or a write failed.
    pub fn full(&self) -> bool {
        self.written.cut_at.is_some() || self.error.is_some()
    }

    fn keep(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Row `row` was in `state` from tick `from` to `to` (exclusive), cut
    /// to the span; an empty interval is left out.
    pub fn state(&mut self, row: u32, from: u64, to: u64, state: State) {
        let (from, to) = (from.max(self.span.0), to.min(self.span.1));
        if to <= from {
            return;
        }
        if let Some(g) = self.gantt.as_mut() {
            g.state(row, from, to, state);
        }
        let line = match &mut self.writer {
            FormatWriter::Paraver(w) => w.state(row, from, to, state),
            FormatWriter::Perfetto(w) => w.state(row, from, to, state),
        };
        if self.fits(from, line.len() as u64) {
            self.written.states += 1;
            let r = self.put(from, line);
            self.keep(r);
        }
    }

    /// Message `m` arrived (left out unless both its ends are in the
    /// span).
    pub fn message(&mut self, m: &Message) {
        if m.sent < self.span.0 || m.received >= self.span.1 {
            return;
        }
        let line = match &mut self.writer {
            FormatWriter::Paraver(w) => w.message(m),
            FormatWriter::Perfetto(w) => w.message(m, self.written.messages),
        };
        if self.fits(m.sent, line.len() as u64) {
            self.written.messages += 1;
            let r = self.put(m.sent, line);
            self.keep(r);
        }
    }

    /// A track of row `row`: one more line of what ran there (a rank on
    /// a guest), named `name`, under the row in both formats (a thread of
    /// the row's Paraver task, a thread of its Perfetto process). Returns
    /// the track's row number, for [`Timeline::state`] and
    /// [`Timeline::call`]: the rows of the layout come first, then the
    /// tracks in the order made; `None` when `row` is not a row of the
    /// layout.
    pub fn track(&mut self, row: u32, name: &str) -> Option<u32> {
        if row >= self.rows {
            return None;
        }
        match &mut self.writer {
            FormatWriter::Paraver(w) => Some(w.track(row, name)),
            FormatWriter::Perfetto(w) => {
                let (track, line) = w.track(row, name);
                let r = w.put(&line);
                self.keep(r);
                Some(track)
            }
        }
    }

    /// Row `row` (a rank's track) was inside MPI function `call` from
    /// tick `from` to `to` (exclusive; a call shorter than a tick is kept,
    /// at its tick), cut to the span. Paraver: its state ([`MpiCall::state`])
    /// and Extrae's events, the function at `from` and its end at `to`;
    /// Perfetto: an `X` slice named by the function, category `mpi`, with
    /// the state in its arguments.
    pub fn call(&mut self, row: u32, from: u64, to: u64, call: &MpiCall) {
        let (from, to) = (from.max(self.span.0), to.min(self.span.1));
        if to < from || from >= self.span.1 {
            return;
        }
        let pieces = match &mut self.writer {
            FormatWriter::Paraver(w) => w.call(row, from, to, call),
            FormatWriter::Perfetto(w) => vec![(from, w.call(row, from, to, call))],
        };
        let bytes = pieces.iter().map(|(_, l)| l.len() as u64).sum();
        if self.fits(from, bytes) {
            self.written.calls += 1;
            for (t, line) in pieces {
                let r = self.put(t, line);
                self.keep(r);
            }
        }
    }

    /// Counter `name` (a network figure) had `value` from tick `t` on
    /// (left out outside the span).
    pub fn counter(&mut self, t: u64, name: &str, value: f64) {
        if t < self.span.0 || t >= self.span.1 {
            return;
        }
        if let (Some(g), "accepted load") = (self.gantt.as_mut(), name) {
            g.load(t, value);
        }
        let line = match &mut self.writer {
            FormatWriter::Paraver(w) => w.counter(t, name, value),
            FormatWriter::Perfetto(w) => w.counter(t, name, value),
        };
        if self.fits(t, line.len() as u64) {
            self.written.counters += 1;
            let r = self.put(t, line);
            self.keep(r);
        }
    }

    /// Counters `names` had `values` (in the same order) from tick `t`
    /// on: one window of them.
    pub fn counters(&mut self, t: u64, names: &[String], values: &[f64]) {
        for (name, &v) in names.iter().zip(values) {
            self.counter(t, name, v);
        }
    }

    fn put(&mut self, t: u64, line: String) -> std::io::Result<()> {
        match &mut self.writer {
            FormatWriter::Paraver(w) => w.put(t, line),
            FormatWriter::Perfetto(w) => w.put(&line),
        }
    }

    /// Ends the timeline at tick `end` (the run's end, or the span's if
    /// sooner): the records sorted and the names written; with a chart
    /// asked for ([`Target::chart`]), the Gantt chart of the rows from
    /// tick 0 to the end with the accepted load under it drawn there
    /// (`timeline.svg`; not for a timeline of more than [`MAX_ROWS`]
    /// rows), and listed among the files.
    ///
    /// # Errors
    /// [`TimelineError::Io`]: a write failed (the first one);
    /// [`TimelineError::Draw`]: the chart could not be drawn.
    pub fn finish(mut self, end: u64) -> Result<Written, TimelineError> {
        let end = end.min(self.span.1);
        if let Some(span) = self.written.span.as_mut() {
            span.1 = span.1.min(end);
        }
        let chart = self.chart.take();
        let chart = chart.as_deref();
        let io = |path: &Path, source| TimelineError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(e) = self.error.take() {
            return Err(io(&self.path, e));
        }
        let drawn = match (chart, &self.gantt) {
            (Some(path), Some(g)) => {
                let svg = g.svg(end, &self.tick).map_err(TimelineError::Draw)?;
                std::fs::write(path, svg).map_err(|e| io(path, e))?;
                Some(path.to_path_buf())
            }
            _ => None,
        };
        let mut files = match self.writer {
            FormatWriter::Paraver(w) => w.finish(end),
            FormatWriter::Perfetto(w) => w.finish(),
        }
        .map_err(|e| io(&self.path, e))?;
        files.extend(drawn);
        Ok(Written {
            files,
            ..self.written
        })
    }
}

/// Ticks as Perfetto's microseconds with three decimals (a tick is shown
/// as a nanosecond): exact for every `u64`.
fn micros(t: u64) -> String {
    format!("{}.{:03}", t / 1000, t % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_extension_and_name() {
        assert_eq!(
            TimelineFormat::of_path(Path::new("a/t.prv")),
            Some(TimelineFormat::Paraver)
        );
        assert_eq!(
            TimelineFormat::of_path(Path::new("t.json")),
            Some(TimelineFormat::Perfetto)
        );
        assert_eq!(TimelineFormat::of_path(Path::new("t.txt")), None);
        assert_eq!(
            TimelineFormat::named("perfetto"),
            Some(TimelineFormat::Perfetto)
        );
        assert_eq!(TimelineFormat::named("otf2"), None);
    }

    /// Tracks are made of the layout's rows only: not of a track, not of
    /// a row beyond the layout.
    #[test]
    fn tracks_belong_to_rows() {
        let path = std::env::temp_dir().join(format!("fsin-tracks-{}.json", std::process::id()));
        let target = Target {
            path: path.clone(),
            format: TimelineFormat::Perfetto,
            limit: u64::MAX,
            chart: None,
            span: None,
        };
        let layout = Layout {
            rows: vec![Row {
                name: "guest 0".into(),
                node: 0,
            }],
            nodes: 1,
            tick: "node cycle".into(),
        };
        let mut t = Timeline::create(&target, layout).unwrap();
        assert_eq!(t.track(0, "rank 0"), Some(1));
        assert_eq!(t.track(1, "rank 1"), None);
        assert_eq!(t.track(u32::MAX, "rank 2"), None);
        assert_eq!(t.track(0, "rank 3"), Some(2));
        t.finish(10).unwrap();
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn ticks_as_exact_microseconds() {
        assert_eq!(micros(0), "0.000");
        assert_eq!(micros(1), "0.001");
        assert_eq!(micros(123_456), "123.456");
        assert_eq!(micros(u64::MAX), "18446744073709551.615");
    }
}
