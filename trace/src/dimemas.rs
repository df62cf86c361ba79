//! Dimemas traces, as INSEE reads them (INSEE's trace.c, `read_dimemas`;
//! the record layout of its dimemas.h).
//!
//! The first line is the header `#DIMEMAS:<name>:<offsets>:<tasks>(...)...`,
//! of which only the task count is used. Every other line is a record of
//! `:`-separated fields, `<op>:<task>:<thread>:...`:
//! - `1:<task>:<thread>:<burst>`: a CPU burst of `burst` seconds, taking
//!   `ceil(burst * DIMEMAS_CPU_SPEED / DIMEMAS_OP_PER_CYCLE)` network cycles
//!   (INSEE's `cpuspeed` and `op_per_cycle`; bursts of no cycle are dropped);
//! - `2:<task>:<thread>:<dst>:<bytes>:<tag>:<comm>:<type>`: a send, of any
//!   type (0 buffered, 1 synchronous, 2 immediate, 3 both);
//! - `3:<task>:<thread>:<src>:<bytes>:<tag>:<comm>:<type>`: a receive of type
//!   0 (`MPI_Recv`) or 2 (`MPI_Wait`); type 1 (`MPI_Irecv`) only posts it and
//!   is dropped, as the matching wait blocks;
//! - `s:...` (offsets) and `d:<1|2|3>:...` (communicator, file and window
//!   definitions), collectives (10), user events (20), file I/O (101-107),
//!   I/O (301-307), one-sided (401-404) and LAPI (501) operations are read
//!   and dropped, as INSEE does.
//!
//! Messages a task sends to itself are dropped (INSEE's "valid event"
//! check); threads are ignored. Errors name the file, the line and the
//! field, where INSEE would read a garbled number as 0 or panic.

use std::fmt::Write as _;

use crate::{number, Event, Trace, TraceError, MAX_CPU_AMOUNT, MAX_MESSAGE_BYTES, MAX_TASK};

/// INSEE's CPU speed for Dimemas bursts (`cpuspeed` in trace.c, "in MHz").
pub const DIMEMAS_CPU_SPEED: f64 = 1e6;

/// INSEE's operations per network cycle for Dimemas bursts (`op_per_cycle`
/// in trace.c): a burst of `b` seconds takes `ceil(b * 1e6 / 50)` cycles,
/// 20,000 cycles per traced second.
pub const DIMEMAS_OP_PER_CYCLE: f64 = 50.0;

/// Network cycles of a CPU burst of `seconds` (INSEE's conversion, the
/// same floating-point operations in the same order).
pub fn burst_cycles(seconds: f64) -> f64 {
    (seconds * DIMEMAS_CPU_SPEED / DIMEMAS_OP_PER_CYCLE).ceil()
}

/// The task count of a Dimemas header, as INSEE finds it: the fourth
/// `:` field, up to its first `(`, `)` or `,`.
pub(crate) fn header_tasks(header: &str) -> Option<u64> {
    header
        .split(':')
        .nth(3)
        .and_then(|f| f.split(['(', ')', ',']).next())
        .and_then(|n| n.trim().parse::<u64>().ok())
}

/// Reads Dimemas `text` (whose first line starts with `#DIMEMAS`); `file`
/// names it in errors. CPU amounts of the result are network cycles
/// ([`Trace::cpu_in_cycles`]).
///
/// # Errors
/// [`TraceError::Syntax`]: a header without a task count or with more
/// tasks than the text has bytes, a record with
/// too few fields, a field that is not a number, a task id outside the
/// header's task count, an unknown operation, definition, send or receive
/// type, a negative or oversized burst or message.
pub(crate) fn parse(text: &str, file: &str) -> Result<Trace, TraceError> {
    let mut t = Trace {
        name: file.to_string(),
        cpu_in_cycles: true,
        ..Trace::default()
    };
    let mut lines = text.lines().enumerate();
    let header = lines.next().map_or("", |(_, l)| l);
    let tasks = task_count(header, text.len(), file)?;
    t.tasks.resize(tasks as usize, Vec::new());
    for (i, raw) in lines {
        let r = Fields {
            f: raw.trim_end().split(':').collect(),
            file,
            line: i + 1,
            tasks,
        };
        match r.f[0] {
            "" => continue,
            // Offsets: where each task's records start, of no use when the
            // whole file is read.
            "s" => continue,
            "d" => match r.f.get(1).map(|d| d.trim()) {
                Some("1" | "2" | "3") => continue,
                other => {
                    return Err(r.err(format!(
                        "definition type `{}` is not 1 (communicator), 2 (file) or 3 (window)",
                        other.unwrap_or("")
                    )))
                }
            },
            _ => {}
        }
        let op = r.num(0, "operation")?;
        let task = r.task_in(1, "task")?;
        let line = r.line as u32;
        match op {
            1 => {
                if let Some(burst) = r.burst()? {
                    t.push(task, burst, line);
                }
            }
            2 | 3 => {
                if let Some((peer, event)) = r.message(op == 2)? {
                    if peer != task {
                        t.push(task, event, line);
                    }
                }
            }
            10 | 20 | 101..=107 | 301..=307 | 401..=404 | 501 => {}
            other => {
                return Err(r.err(format!(
                    "operation {other} is none of Dimemas' (1 CPU, 2 send, 3 receive, \
                     10 collective, 20 event, 101-107 file, 301-307 I/O, 401-404 one-sided, 501 LAPI)"
                )))
            }
        }
    }
    Ok(t)
}

/// The task count of the Dimemas `header` of a text of `bytes` bytes in
/// `file`, checked against the content before the per-task tables are
/// made: a header lists one thread count per task, so a file of B bytes
/// describes fewer than B tasks (a 40-byte header claiming 2^24 tasks
/// would otherwise allocate 400 MB before its body shows that it lies).
pub(crate) fn task_count(header: &str, bytes: usize, file: &str) -> Result<u64, TraceError> {
    let err = |what: String| TraceError::Syntax {
        file: file.to_string(),
        line: 1,
        what,
    };
    let tasks = header_tasks(header)
        .filter(|&n| n <= MAX_TASK)
        .ok_or_else(|| {
            err("the header `#DIMEMAS:<name>:<offsets>:<tasks>(...)` gives no task count".into())
        })?;
    if tasks > bytes as u64 {
        return Err(err(format!(
            "the header declares {tasks} tasks, more than a file of {bytes} bytes can describe"
        )));
    }
    Ok(tasks)
}

/// The `:` fields of one record line of `file` (line numbers from 1),
/// in a trace of `tasks` tasks: both readers' (this one's and the MPI
/// level's, [`crate::mpi::read`]).
pub(crate) struct Fields<'a> {
    /// The line's fields, split at `:`.
    pub(crate) f: Vec<&'a str>,
    /// The file, for errors.
    pub(crate) file: &'a str,
    /// The line's number, from 1.
    pub(crate) line: usize,
    /// The header's task count.
    pub(crate) tasks: u64,
}

impl Fields<'_> {
    /// The error of this line: `what` is wrong.
    pub(crate) fn err(&self, what: String) -> TraceError {
        TraceError::Syntax {
            file: self.file.to_string(),
            line: self.line,
            what,
        }
    }

    /// Field `k` (`name` in errors) as a number of at most `max`.
    pub(crate) fn at_most(&self, k: usize, name: &str, max: u64) -> Result<u64, TraceError> {
        let v = self.f.get(k).ok_or_else(|| {
            self.err(format!(
                "operation {} has no field {k} ({name})",
                self.f[0].trim()
            ))
        })?;
        number(v.trim(), name, max).map_err(|e| self.err(e.to_string()))
    }

    /// Field `k` as a number.
    pub(crate) fn num(&self, k: usize, name: &str) -> Result<u64, TraceError> {
        self.at_most(k, name, u64::MAX)
    }

    /// Field `k` as a task id, below the header's task count.
    pub(crate) fn task_in(&self, k: usize, name: &str) -> Result<u32, TraceError> {
        let v = self.num(k, name)?;
        if v >= self.tasks {
            return Err(self.err(format!(
                "field {name} = {v} is not below the header's {} tasks",
                self.tasks
            )));
        }
        Ok(v as u32)
    }

    /// A CPU burst record's length (field 3), seconds: a finite number, 0
    /// or more and under `below`; `range` says which in the error
    /// ("a number of seconds in ...").
    pub(crate) fn burst_seconds(&self, below: f64, range: &str) -> Result<f64, TraceError> {
        let v = self.f.get(3).map_or("", |v| v.trim());
        v.parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s < below)
            .ok_or_else(|| self.err(format!("field burst = `{v}` is not {range}")))
    }

    /// A CPU burst record's event (none for a burst of 0 cycles).
    fn burst(&self) -> Result<Option<Event>, TraceError> {
        let seconds = self.burst_seconds(f64::INFINITY, "a non-negative number of seconds")?;
        let cycles = burst_cycles(seconds);
        if cycles > MAX_CPU_AMOUNT as f64 {
            return Err(self.err(format!(
                "field burst = {seconds} s is over {MAX_CPU_AMOUNT} cycles"
            )));
        }
        Ok((cycles > 0.0).then_some(Event::Cpu {
            amount: cycles as u64,
        }))
    }

    /// A send (`send`) or receive record's peer and event (none for an
    /// `irecv`, whose wait is the receive).
    fn message(&self, send: bool) -> Result<Option<(u32, Event)>, TraceError> {
        let peer = self.task_in(3, if send { "dst" } else { "src" })?;
        let bytes = self.at_most(4, "bytes", MAX_MESSAGE_BYTES)?;
        let tag = u32::try_from(self.num(5, "tag")?)
            .map_err(|_| self.err(format!("field tag = {} is over 2^32", self.f[5])))?;
        self.num(6, "communicator")?;
        let kind = self.num(7, "type")?;
        let event = match (send, kind) {
            (true, 0..=3) => Event::Send {
                dst: peer,
                tag,
                bytes,
            },
            (false, 0 | 2) => Event::Recv {
                src: peer,
                tag,
                bytes,
            },
            (false, 1) => return Ok(None),
            _ => {
                return Err(self.err(format!(
                    "{} type {kind} is not {}",
                    if send { "send" } else { "receive" },
                    if send {
                        "0, 1, 2 or 3"
                    } else {
                        "0 (recv), 1 (irecv) or 2 (wait)"
                    }
                )))
            }
        };
        Ok(Some((peer, event)))
    }
}

/// `trace` as Dimemas text that INSEE and [`crate::parse_str`] read back to
/// the same event queues: CPU amounts taken as network cycles and written
/// as the bursts that convert back to them, sends as buffered (type 0),
/// receives as blocking (type 0), every task on thread 0 of communicator 0.
pub(crate) fn write(trace: &Trace) -> String {
    let name: String = trace
        .name
        .chars()
        .map(|c| {
            if matches!(c, ':' | '"' | '\n') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let n = trace.tasks.len();
    let mut s = format!("#DIMEMAS:\"{name}\":1,0:{n}(");
    s.push_str(&vec!["1"; n].join(","));
    s.push_str("),0\n");
    for (task, events) in trace.tasks.iter().enumerate() {
        for e in events {
            let _ = match *e {
                Event::Send { dst, tag, bytes } => {
                    writeln!(s, "2:{task}:0:{dst}:{bytes}:{tag}:0:0")
                }
                Event::Recv { src, tag, bytes } => {
                    writeln!(s, "3:{task}:0:{src}:{bytes}:{tag}:0:0")
                }
                // INSEE drops bursts of no cycle.
                Event::Cpu { amount: 0 } => Ok(()),
                // Half a cycle short of the amount, so that the ceiling of
                // the converted burst lands on it despite rounding.
                Event::Cpu { amount } => writeln!(
                    s,
                    "1:{task}:0:{}",
                    (amount as f64 - 0.5) * DIMEMAS_OP_PER_CYCLE / DIMEMAS_CPU_SPEED
                ),
            };
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::{parse_str, Event, Trace, TraceFormat};

    const HEADER: &str = "#DIMEMAS:\"ping\":1,000000000000000000:3(1,1,1),0\n";

    #[test]
    fn records_become_events_as_insee_reads_them() {
        let text = format!(
            "{HEADER}s:0:0:0\nd:1:comm:1:0\n\
             1:0:0:0.001\n\
             2:0:0:1:1000:7:0:2\n\
             3:1:0:0:1000:7:0:1\n\
             3:1:0:0:1000:7:0:2\n\
             2:1:0:1:5:0:0:0\n\
             10:2:0:0:0:0:0:0:0\n\
             1:2:0:0\n\
             1:1:0:0.0000001\n"
        );
        let t = parse_str(&text, "p.dim").unwrap();
        assert!(t.cpu_in_cycles);
        // The header's 3 tasks, task 2 without any event.
        assert_eq!(t.task_count(), 3);
        // 1 ms at 1e6 / 50: 20 cycles; 0.1 us: ceil(0.002) = 1 cycle.
        let send = Event::Send {
            dst: 1,
            tag: 7,
            bytes: 1000,
        };
        assert_eq!(t.tasks[0], [Event::Cpu { amount: 20 }, send]);
        let recv = Event::Recv {
            src: 0,
            tag: 7,
            bytes: 1000,
        };
        // The irecv (type 1) and the send to itself are dropped.
        assert_eq!(t.tasks[1], [recv, Event::Cpu { amount: 1 }]);
        assert!(t.tasks[2].is_empty());
        assert_eq!(t.origin(1, 1), "p.dim:11");
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            ("#DIMEMAS:x\n", "p.dim:1: the header"),
            (
                "#DIMEMAS:\"x\":1,0:16777216(1),0\n",
                "p.dim:1: the header declares 16777216 tasks, more than a file of 31 bytes",
            ),
            (
                "{H}2:0:0:1:5\n",
                "p.dim:2: operation 2 has no field 5 (tag)",
            ),
            (
                "{H}2:0:0:3:5:0:0:0\n",
                "p.dim:2: field dst = 3 is not below the header's 3 tasks",
            ),
            ("{H}1:0:0:-1\n", "p.dim:2: field burst = `-1` is not"),
            (
                "{H}1:0:0:1e12\n",
                "p.dim:2: field burst = 1000000000000 s is over",
            ),
            (
                "{H}\n2:0:0:1:x:0:0:0\n",
                "p.dim:3: field bytes = `x` is not a number",
            ),
            ("{H}2:0:0:1:5:0:0:9\n", "p.dim:2: send type 9 is not"),
            ("{H}3:0:0:1:5:0:0:3\n", "p.dim:2: receive type 3 is not"),
            ("{H}d:7\n", "p.dim:2: definition type `7`"),
            ("{H}42:0:0\n", "p.dim:2: operation 42 is none of"),
        ];
        let texts: Vec<String> = cases
            .iter()
            .map(|(t, _)| t.replace("{H}", HEADER))
            .collect();
        let cases: Vec<(&str, &str)> = texts
            .iter()
            .map(String::as_str)
            .zip(cases.map(|c| c.1))
            .collect();
        crate::expect_errors("p.dim", &cases);
    }

    #[test]
    fn written_traces_read_back() {
        let mut t = Trace::new("k:1", 3);
        t.message(0, 2, 4, 100);
        for amount in [1, 3, 7, 20, 999_999, 1 << 39] {
            t.push(1, Event::Cpu { amount }, 0);
        }
        t.message(2, 1, 0, 0);
        let text = t.write(TraceFormat::Dimemas);
        assert!(text.starts_with("#DIMEMAS:\"k_1\":"), "{text}");
        let back = parse_str(&text, "k").unwrap();
        assert_eq!(back.tasks, t.tasks);
    }
}
