//! BSC's Paraver format: the trace (`.prv`: a header, then state (1),
//! event (2) and communication (3) records in time order), its names and
//! colours (`.pcf`) and its rows' names (`.row`), as Paraver's trace
//! format documents them and Extrae writes them.
//!
//! Each node of the network is one Paraver node with one CPU (CPU `n + 1`
//! for node `n`); each row is a task of application 1, on its node, whose
//! first thread is the row and whose further threads are its tracks (the
//! ranks on a guest; their MPI calls as Extrae writes them, [`crate::mpi`]);
//! the network's counters are events of one more task, `network`, on
//! node 1. A counter's value is an integer, the figure in
//! millionths (an accepted load of 0.25 phits/node/cycle is 250000); its
//! event type is 91000000 plus its index, named in the `.pcf`.
//!
//! Records come in the order the run makes them, not the time order
//! Paraver wants: they are kept in memory up to [`SPILL_BYTES`], sorted,
//! and written to a run file beside the trace; `finish` merges the runs.
//! Every record's time is its sixth field, which the merge reads back.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::mpi::{CALLS, TYPES};
use crate::{Layout, Message, MpiCall, State};

/// Bytes of records kept in memory before a sorted run is written out.
const SPILL_BYTES: usize = 64 << 20;

/// The first event type of the network's counters.
const COUNTER_TYPE: u64 = 91_000_000;

pub(crate) struct ParaverWriter {
    path: PathBuf,
    layout: Layout,
    /// Records not yet written: their text, and (time, start, length).
    text: String,
    index: Vec<(u64, usize, usize)>,
    /// Sorted runs written so far.
    runs: Vec<PathBuf>,
    /// The counters' names, in order of first use.
    counters: Vec<String>,
    /// The tracks: the row each belongs to, its name and its thread
    /// number in the row's task (from 2).
    tracks: Vec<(u32, String, u32)>,
    /// Whether any MPI call was written (the `.pcf` then names them).
    calls: bool,
    /// Bytes of records kept in memory before a run is written
    /// ([`SPILL_BYTES`]).
    spill_bytes: usize,
}

impl ParaverWriter {
    pub(crate) fn create(path: &Path, layout: Layout) -> std::io::Result<ParaverWriter> {
        // Made at once, so that a path that cannot be written fails first.
        File::create(path)?;
        Ok(ParaverWriter {
            path: path.to_path_buf(),
            layout,
            text: String::new(),
            index: Vec::new(),
            runs: Vec::new(),
            counters: Vec::new(),
            tracks: Vec::new(),
            calls: false,
            spill_bytes: SPILL_BYTES,
        })
    }

    /// Row `row`'s CPU, task and thread, as `cpu:1:task:thread`.
    fn who(&self, row: u32) -> String {
        let rows = self.layout.rows.len();
        let (task, thread) = match (row as usize).checked_sub(rows) {
            None => (row, 1),
            Some(k) => self.tracks.get(k).map_or((row, 1), |t| (t.0, t.2)),
        };
        let cpu = self
            .layout
            .rows
            .get(task as usize)
            .map_or(1, |r| r.node + 1);
        format!("{cpu}:1:{}:{thread}", task + 1)
    }

    /// A track of row `row` (a row of the layout): the row's task's next
    /// thread.
    pub(crate) fn track(&mut self, row: u32, name: &str) -> u32 {
        let thread = 2 + self.tracks.iter().filter(|t| t.0 == row).count() as u32;
        self.tracks.push((row, name.to_string(), thread));
        (self.layout.rows.len() + self.tracks.len() - 1) as u32
    }

    pub(crate) fn state(&mut self, row: u32, from: u64, to: u64, state: State) -> String {
        format!("1:{}:{from}:{to}:{}\n", self.who(row), state.paraver())
    }

    /// A call's records: at `from` its state (when it lasts) and its
    /// event, at `to` its end.
    pub(crate) fn call(
        &mut self,
        row: u32,
        from: u64,
        to: u64,
        call: &MpiCall,
    ) -> Vec<(u64, String)> {
        self.calls = true;
        let who = self.who(row);
        let mut enter = String::new();
        if to > from {
            enter = format!("1:{who}:{from}:{to}:{}\n", call.state.paraver());
        }
        enter.push_str(&format!("2:{who}:{from}:{}:{}\n", call.event, call.value));
        vec![
            (from, enter),
            (to, format!("2:{who}:{to}:{}:0\n", call.event)),
        ]
    }

    pub(crate) fn message(&mut self, m: &Message) -> String {
        format!(
            "3:{}:{}:{}:{}:{}:{}:{}:{}\n",
            self.who(m.src),
            m.sent,
            m.sent,
            self.who(m.dst),
            m.received,
            m.received,
            m.bytes,
            m.tag
        )
    }

    pub(crate) fn counter(&mut self, t: u64, name: &str, value: f64) -> String {
        let k = match self.counters.iter().position(|n| n == name) {
            Some(k) => k,
            None => {
                self.counters.push(name.to_string());
                self.counters.len() - 1
            }
        };
        let task = self.layout.rows.len() + 1;
        // Millionths, saturating at i64's range (a NaN is 0).
        let v = (value * 1e6).round() as i64;
        format!("2:1:1:{task}:1:{t}:{}:{v}\n", COUNTER_TYPE + k as u64)
    }

    pub(crate) fn put(&mut self, t: u64, line: String) -> std::io::Result<()> {
        self.index.push((t, self.text.len(), line.len()));
        self.text.push_str(&line);
        if self.text.len() >= self.spill_bytes {
            self.spill()?;
        }
        Ok(())
    }

    /// The records in memory, sorted by time (stable: in the order made
    /// within a tick), into `out`.
    fn write_sorted(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        self.index.sort_by_key(|&(t, start, _)| (t, start));
        for &(_, start, len) in &self.index {
            out.write_all(&self.text.as_bytes()[start..start + len])?;
        }
        self.index.clear();
        self.text.clear();
        Ok(())
    }

    fn spill(&mut self) -> std::io::Result<()> {
        let run = self
            .path
            .with_extension(format!("prv.run{}", self.runs.len()));
        let mut out = BufWriter::new(File::create(&run)?);
        self.write_sorted(&mut out)?;
        out.flush()?;
        self.runs.push(run);
        Ok(())
    }

    /// Writes the trace (ending at tick `end`), its `.pcf` and `.row`;
    /// removes the runs.
    pub(crate) fn finish(mut self, end: u64) -> std::io::Result<Vec<PathBuf>> {
        let mut out = BufWriter::new(File::create(&self.path)?);
        out.write_all(self.header(end).as_bytes())?;
        if self.runs.is_empty() {
            self.write_sorted(&mut out)?;
        } else {
            self.spill()?;
            merge(&self.runs, &mut out)?;
            for r in &self.runs {
                std::fs::remove_file(r)?;
            }
        }
        out.flush()?;
        let pcf = self.path.with_extension("pcf");
        std::fs::write(&pcf, self.pcf())?;
        let row = self.path.with_extension("row");
        std::fs::write(&row, self.row())?;
        Ok(vec![self.path.clone(), pcf, row])
    }

    /// `#Paraver (date):end_ns:nodes(cpus,...):1:tasks(threads:node,...)`,
    /// with one more task for the counters when there are any.
    fn header(&self, end: u64) -> String {
        let nodes = self.layout.nodes.max(1);
        let cpus = vec!["1"; nodes as usize].join(",");
        let mut tasks: Vec<String> = (self.layout.rows.iter().enumerate())
            .map(|(k, r)| {
                let tracks = self.tracks.iter().filter(|t| t.0 as usize == k).count();
                format!("{}:{}", 1 + tracks, r.node + 1)
            })
            .collect();
        if !self.counters.is_empty() {
            tasks.push("1:1".into());
        }
        format!(
            "#Paraver (01/01/70 at 00:00):{end}_ns:{nodes}({cpus}):1:{}({})\n",
            tasks.len(),
            tasks.join(",")
        )
    }

    fn pcf(&self) -> String {
        let mut s = String::from(
            "DEFAULT_OPTIONS\n\nLEVEL               THREAD\nUNITS               NANOSEC\n\
             LOOK_BACK           100\nSPEED               1\nFLAG_ICONS          ENABLED\n\
             NUM_OF_STATE_COLORS 1000\nYMAX_SCALE          37\n\n\n\
             DEFAULT_SEMANTIC\n\nTHREAD_FUNC          State As Is\n\n\n",
        );
        s.push_str(&format!("# One tick: one {}.\n\n", self.layout.tick));
        s.push_str("STATES\n");
        for st in State::ALL {
            s.push_str(&format!("{:<5}{}\n", st.paraver(), st.name()));
        }
        s.push_str("\n\nSTATES_COLOR\n");
        for st in State::ALL {
            let (r, g, b) = st.rgb();
            s.push_str(&format!("{:<5}{{{r},{g},{b}}}\n", st.paraver()));
        }
        if self.calls {
            for (event, label) in TYPES {
                s.push_str(&format!(
                    "\n\nEVENT_TYPE\n0    {event}    {label}\nVALUES\n0   End\n"
                ));
                for c in CALLS.iter().filter(|c| c.event == event) {
                    s.push_str(&format!("{}   {}\n", c.value, c.name));
                }
            }
        }
        for (k, name) in self.counters.iter().enumerate() {
            s.push_str(&format!(
                "\n\nEVENT_TYPE\n0    {}    {name} (millionths)\n",
                COUNTER_TYPE + k as u64
            ));
        }
        s
    }

    fn row(&self) -> String {
        let nodes = self.layout.nodes.max(1);
        let names: Vec<String> = (0..nodes).map(|n| format!("node {n}")).collect();
        let mut rows = Vec::new();
        for (k, r) in self.layout.rows.iter().enumerate() {
            rows.push(r.name.clone());
            let tracks = self.tracks.iter().filter(|t| t.0 as usize == k);
            rows.extend(tracks.map(|t| t.1.clone()));
        }
        if !self.counters.is_empty() {
            rows.push("network".into());
        }
        format!(
            "LEVEL CPU SIZE {nodes}\n{}\n\nLEVEL NODE SIZE {nodes}\n{}\n\nLEVEL THREAD SIZE {}\n{}\n",
            names.join("\n"),
            names.join("\n"),
            rows.len(),
            rows.join("\n")
        )
    }
}

/// The time of a record: its sixth field.
fn time_of(line: &str) -> u64 {
    line.split(':')
        .nth(5)
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

/// Merges the sorted `runs` into `out`, in time order (runs in order
/// within a tick).
fn merge(runs: &[PathBuf], out: &mut impl Write) -> std::io::Result<()> {
    let mut readers = runs
        .iter()
        .map(|r| File::open(r).map(|f| BufReader::new(f).lines()))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut heads: Vec<Option<String>> = Vec::with_capacity(readers.len());
    let mut heap = BinaryHeap::new();
    for (k, r) in readers.iter_mut().enumerate() {
        let line = r.next().transpose()?;
        if let Some(l) = &line {
            heap.push(Reverse((time_of(l), k)));
        }
        heads.push(line);
    }
    while let Some(Reverse((_, k))) = heap.pop() {
        if let Some(line) = heads[k].take() {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
        heads[k] = readers[k].next().transpose()?;
        if let Some(l) = &heads[k] {
            heap.push(Reverse((time_of(l), k)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Row;

    fn layout() -> Layout {
        Layout {
            rows: vec![
                Row {
                    name: "task 0".into(),
                    node: 2,
                },
                Row {
                    name: "task 1".into(),
                    node: 0,
                },
            ],
            nodes: 4,
            tick: "network cycle".into(),
        }
    }

    /// Records made out of order come out sorted by time, from memory and
    /// through runs on disk alike (a run every record here).
    #[test]
    fn records_come_out_in_time_order_through_runs() {
        let dir = std::env::temp_dir().join(format!("fsin-prv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for spill in [SPILL_BYTES, 1] {
            let path = dir.join(format!("t{spill}.prv"));
            let mut w = ParaverWriter::create(&path, layout()).unwrap();
            w.spill_bytes = spill;
            for (row, from, to) in [(0, 50, 90), (1, 0, 10), (0, 0, 50), (1, 10, 95)] {
                let line = w.state(row, from, to, State::Running);
                w.put(from, line).unwrap();
            }
            let m = Message {
                src: 0,
                dst: 1,
                sent: 20,
                received: 30,
                bytes: 64,
                tag: 7,
            };
            let line = w.message(&m);
            w.put(20, line).unwrap();
            let line = w.counter(40, "accepted load", 0.25);
            w.put(40, line).unwrap();
            let files = w.finish(95).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(
                lines,
                [
                    "#Paraver (01/01/70 at 00:00):95_ns:4(1,1,1,1):1:3(1:3,1:1,1:1)",
                    "1:1:1:2:1:0:10:1",
                    "1:3:1:1:1:0:50:1",
                    "1:1:1:2:1:10:95:1",
                    "3:3:1:1:1:20:20:1:1:2:1:30:30:64:7",
                    "2:1:1:3:1:40:91000000:250000",
                    "1:3:1:1:1:50:90:1",
                ],
                "spill {spill}"
            );
            let pcf = std::fs::read_to_string(&files[1]).unwrap();
            assert!(pcf.contains("STATES\n0    Idle\n1    Running\n3    Waiting a message\n"));
            assert!(pcf.contains("0    91000000    accepted load (millionths)"));
            let row = std::fs::read_to_string(&files[2]).unwrap();
            assert!(row.ends_with("LEVEL THREAD SIZE 3\ntask 0\ntask 1\nnetwork\n"));
            let left: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().contains(".run"))
                .collect();
            assert!(left.is_empty(), "the runs are removed");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A track is the next thread of its row's task: the header counts
    /// it, the `.row` names it after its row, and a call writes its state
    /// and Extrae's event at its entry and the end (value 0) at its exit,
    /// each in time order; a call shorter than a tick has no state.
    #[test]
    fn tracks_are_threads_of_their_rows_task_with_extraes_calls() {
        let dir = std::env::temp_dir().join(format!("fsin-prv-tracks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.prv");
        let mut w = ParaverWriter::create(&path, layout()).unwrap();
        assert_eq!(w.track(1, "rank 0"), 2);
        assert_eq!(w.track(1, "rank 1"), 3);
        let send = MpiCall::of(crate::MpiFunction::Send);
        let barrier = MpiCall::of(crate::MpiFunction::Barrier);
        for (t, line) in w.call(3, 40, 60, &barrier) {
            w.put(t, line).unwrap();
        }
        for (t, line) in w.call(2, 10, 50, &send) {
            w.put(t, line).unwrap();
        }
        for (t, line) in w.call(2, 70, 70, &send) {
            w.put(t, line).unwrap();
        }
        let line = w.state(2, 50, 70, State::Running);
        w.put(50, line).unwrap();
        let files = w.finish(100).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "#Paraver (01/01/70 at 00:00):100_ns:4(1,1,1,1):1:2(1:3,3:1)",
                "1:1:1:2:2:10:50:4",
                "2:1:1:2:2:10:50000001:1",
                "1:1:1:2:3:40:60:5",
                "2:1:1:2:3:40:50000002:8",
                "2:1:1:2:2:50:50000001:0",
                "1:1:1:2:2:50:70:1",
                "2:1:1:2:3:60:50000002:0",
                "2:1:1:2:2:70:50000001:1",
                "2:1:1:2:2:70:50000001:0",
            ]
        );
        let pcf = std::fs::read_to_string(&files[1]).unwrap();
        assert!(
            pcf.contains("0    50000001    MPI Point-to-point\nVALUES\n0   End\n1   MPI_Send\n")
        );
        assert!(pcf.contains("8   MPI_Barrier\n"));
        assert!(pcf.contains("13   {255,144,26}\n"), "{pcf}");
        let row = std::fs::read_to_string(&files[2]).unwrap();
        assert!(row.ends_with("LEVEL THREAD SIZE 4\ntask 0\ntask 1\nrank 0\nrank 1\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
