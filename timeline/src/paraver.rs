//! BSC's Paraver format: the trace (`.prv`: a header, then state (1),
//! event (2) and communication (3) records in time order), its names and
//! colours (`.pcf`) and its rows' names (`.row`), as Paraver's trace
//! format documents them and Extrae writes them.
//!
//! Each node of the network is one Paraver node with one CPU (CPU `n + 1`
//! for node `n`); each row is a task of application 1 with one thread, on
//! its node; the network's counters are events of one more task,
//! `network`, on node 1. A counter's value is an integer, the figure in
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

use crate::{Layout, Message, State};

/// Bytes of records kept in memory before a sorted run is written out.
const SPILL_BYTES: usize = 64 << 20;

/// The first event type of the network's counters.
const COUNTER_TYPE: u64 = 91_000_000;

pub(crate) struct Writer {
    path: PathBuf,
    layout: Layout,
    /// Records not yet written: their text, and (time, start, length).
    text: String,
    index: Vec<(u64, usize, usize)>,
    /// Sorted runs written so far.
    runs: Vec<PathBuf>,
    /// The counters' names, in order of first use.
    counters: Vec<String>,
    /// Bytes of records kept in memory before a run is written
    /// ([`SPILL_BYTES`]).
    spill_bytes: usize,
}

impl Writer {
    pub(crate) fn create(path: &Path, layout: Layout) -> std::io::Result<Writer> {
        // Made at once, so that a path that cannot be written fails first.
        File::create(path)?;
        Ok(Writer {
            path: path.to_path_buf(),
            layout,
            text: String::new(),
            index: Vec::new(),
            runs: Vec::new(),
            counters: Vec::new(),
            spill_bytes: SPILL_BYTES,
        })
    }

    fn cpu(&self, row: u32) -> u32 {
        self.layout.rows.get(row as usize).map_or(1, |r| r.node + 1)
    }

    pub(crate) fn state(&mut self, row: u32, from: u64, to: u64, state: State) -> String {
        format!(
            "1:{}:1:{}:1:{from}:{to}:{}\n",
            self.cpu(row),
            row + 1,
            state.paraver()
        )
    }

    pub(crate) fn message(&mut self, m: &Message) -> String {
        format!(
            "3:{}:1:{}:1:{}:{}:{}:1:{}:1:{}:{}:{}:{}\n",
            self.cpu(m.src),
            m.src + 1,
            m.sent,
            m.sent,
            self.cpu(m.dst),
            m.dst + 1,
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
        let mut tasks: Vec<String> = (self.layout.rows.iter())
            .map(|r| format!("1:{}", r.node + 1))
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
        for (st, rgb) in State::ALL.iter().zip([
            "{117,195,255}",
            "{0,0,255}",
            "{255,0,0}",
            "{255,0,174}",
            "{179,0,0}",
        ]) {
            s.push_str(&format!("{:<5}{rgb}\n", st.paraver()));
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
        let mut rows: Vec<String> = self.layout.rows.iter().map(|r| r.name.clone()).collect();
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
            let mut w = Writer::create(&path, layout()).unwrap();
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
}
