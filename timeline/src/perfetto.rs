//! Chrome's trace-event JSON, as ui.perfetto.dev and chrome://tracing open
//! it: `{"displayTimeUnit": "ns", "otherData": {...}, "traceEvents": [...]}`
//! with one process per node (pid `n + 1` for node `n`), one thread per
//! row (tid `k + 1` for row `k`; a track of a row, a further thread of
//! its process, numbered after the rows), an `X` (complete) event per
//! state and per MPI call (category `mpi`, the state in its args), a
//! flow (`s` at the send, `f` at the arrival, binding to the enclosing
//! slice) per message with its bytes and tag, and the network's counters
//! as `C` events of one more process, `network` (pid 0). Written as the
//! run goes: every event is one line.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::{micros, Layout, Message, MpiCall, State};

pub(crate) struct PerfettoWriter {
    path: PathBuf,
    layout: Layout,
    out: BufWriter<File>,
    /// The row each track belongs to, in the order made.
    tracks: Vec<u32>,
}

impl PerfettoWriter {
    pub(crate) fn create(path: &Path, layout: Layout) -> std::io::Result<PerfettoWriter> {
        let mut out = BufWriter::new(File::create(path)?);
        let about = json!({ "tick": layout.tick, "tick_shown_as": "1 ns" });
        writeln!(
            out,
            "{{\"displayTimeUnit\":\"ns\",\"otherData\":{about},\"traceEvents\":["
        )?;
        let mut names = vec![json!({
            "ph": "M", "name": "process_name", "pid": 0, "args": { "name": "network" }
        })];
        let mut nodes: Vec<u32> = layout.rows.iter().map(|r| r.node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        for n in nodes {
            names.push(json!({
                "ph": "M", "name": "process_name", "pid": n + 1,
                "args": { "name": format!("node {n}") }
            }));
        }
        for (k, r) in layout.rows.iter().enumerate() {
            names.push(json!({
                "ph": "M", "name": "thread_name", "pid": r.node + 1, "tid": k + 1,
                "args": { "name": r.name }
            }));
        }
        let lines: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        out.write_all(lines.join(",\n").as_bytes())?;
        Ok(PerfettoWriter {
            path: path.to_path_buf(),
            layout,
            out,
            tracks: Vec::new(),
        })
    }

    fn pid(&self, row: u32) -> u32 {
        let rows = self.layout.rows.len();
        let of = match (row as usize).checked_sub(rows) {
            None => row,
            Some(k) => self.tracks.get(k).copied().unwrap_or(u32::MAX),
        };
        self.layout.rows.get(of as usize).map_or(0, |r| r.node + 1)
    }

    /// A track of row `row` (a row of the layout): a thread of its
    /// process; with the line that names it.
    pub(crate) fn track(&mut self, row: u32, name: &str) -> (u32, String) {
        self.tracks.push(row);
        let track = (self.layout.rows.len() + self.tracks.len() - 1) as u32;
        let named = json!({
            "ph": "M", "name": "thread_name", "pid": self.pid(track), "tid": track + 1,
            "args": { "name": name }
        });
        (track, format!(",\n{named}"))
    }

    pub(crate) fn call(&mut self, row: u32, from: u64, to: u64, call: &MpiCall) -> String {
        format!(
            ",\n{{\"ph\":\"X\",\"name\":\"{}\",\"cat\":\"mpi\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"state\":\"{}\"}}}}",
            call.name,
            self.pid(row),
            row + 1,
            micros(from),
            micros(to - from),
            call.state.name()
        )
    }

    pub(crate) fn state(&mut self, row: u32, from: u64, to: u64, state: State) -> String {
        format!(
            ",\n{{\"ph\":\"X\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{}}}",
            state.name(),
            self.pid(row),
            row + 1,
            micros(from),
            micros(to - from)
        )
    }

    /// Message `m`, the `id`-th: its flow's start and end.
    pub(crate) fn message(&mut self, m: &Message, id: u64) -> String {
        format!(
            ",\n{{\"ph\":\"s\",\"name\":\"message\",\"cat\":\"message\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{},\"args\":{{\"bytes\":{},\"tag\":{},\"to\":{}}}}}\
             ,\n{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"message\",\"cat\":\"message\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{}}}",
            self.pid(m.src),
            m.src + 1,
            micros(m.sent),
            m.bytes,
            m.tag,
            m.dst + 1,
            self.pid(m.dst),
            m.dst + 1,
            micros(m.received),
        )
    }

    pub(crate) fn counter(&mut self, t: u64, name: &str, value: f64) -> String {
        let value = if value.is_finite() { value } else { 0.0 };
        format!(
            ",\n{{\"ph\":\"C\",\"name\":{},\"pid\":0,\"ts\":{},\"args\":{{\"value\":{}}}}}",
            json!(name),
            micros(t),
            json!(value)
        )
    }

    pub(crate) fn put(&mut self, line: &str) -> std::io::Result<()> {
        self.out.write_all(line.as_bytes())
    }

    pub(crate) fn finish(mut self) -> std::io::Result<Vec<PathBuf>> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(vec![self.path])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Row;

    /// The events of the timeline `w` writes into `path`, finished, read
    /// back as JSON (the file removed).
    fn finished(w: PerfettoWriter, path: &Path) -> Vec<serde_json::Value> {
        w.finish().unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        std::fs::remove_file(path).unwrap();
        v["traceEvents"].as_array().unwrap().clone()
    }

    /// The file is one JSON document: names first, then each record.
    #[test]
    fn a_timeline_is_valid_json_with_every_record() {
        let path = std::env::temp_dir().join(format!("fsin-perfetto-{}.json", std::process::id()));
        let layout = Layout {
            rows: vec![Row {
                name: "task \"0\"".into(),
                node: 3,
            }],
            nodes: 4,
            tick: "network cycle".into(),
        };
        let mut w = PerfettoWriter::create(&path, layout).unwrap();
        let line = w.state(0, 1500, 2000, State::Waiting);
        w.put(&line).unwrap();
        let m = Message {
            src: 0,
            dst: 0,
            sent: 7,
            received: 9,
            bytes: 3,
            tag: 1,
        };
        let line = w.message(&m, 0);
        w.put(&line).unwrap();
        let line = w.counter(1000, "load", f64::NAN);
        w.put(&line).unwrap();
        let events = finished(w, &path);
        assert_eq!(
            events.len(),
            3 + 4,
            "3 names, a state, a flow's 2 ends, a counter"
        );
        assert_eq!(events[2]["args"]["name"], "task \"0\"");
        let x = &events[3];
        assert_eq!((x["ph"].as_str(), x["pid"].as_u64()), (Some("X"), Some(4)));
        assert_eq!(
            (x["ts"].as_f64(), x["dur"].as_f64()),
            (Some(1.5), Some(0.5))
        );
        assert_eq!(x["name"], "Waiting a message");
        assert_eq!(events[5]["ts"].as_f64(), Some(0.009));
        assert_eq!(events[6]["args"]["value"].as_f64(), Some(0.0));
    }

    /// A track is a thread of its row's process, named where it is made;
    /// a call is an `X` slice of category `mpi` with its state.
    #[test]
    fn a_track_holds_calls_as_slices() {
        let path =
            std::env::temp_dir().join(format!("fsin-perfetto-track-{}.json", std::process::id()));
        let layout = Layout {
            rows: vec![Row {
                name: "guest 0".into(),
                node: 5,
            }],
            nodes: 6,
            tick: "node cycle".into(),
        };
        let mut w = PerfettoWriter::create(&path, layout).unwrap();
        let (track, line) = w.track(0, "rank 3");
        assert_eq!(track, 1);
        w.put(&line).unwrap();
        let line = w.call(1, 8, 24, &MpiCall::of(crate::MpiFunction::Allreduce));
        w.put(&line).unwrap();
        let events = finished(w, &path);
        let named = &events[3];
        assert_eq!(named["args"]["name"], "rank 3");
        assert_eq!(
            (named["pid"].as_u64(), named["tid"].as_u64()),
            (Some(6), Some(2))
        );
        let x = &events[4];
        assert_eq!(
            (x["name"].as_str(), x["cat"].as_str()),
            (Some("MPI_Allreduce"), Some("mpi"))
        );
        assert_eq!((x["pid"].as_u64(), x["tid"].as_u64()), (Some(6), Some(2)));
        assert_eq!(
            (x["ts"].as_f64(), x["dur"].as_f64()),
            (Some(0.008), Some(0.016))
        );
        assert_eq!(x["args"]["state"], "Group Communication");
    }
}
