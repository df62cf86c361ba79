//! alog traces (MPE's ASCII log), as INSEE reads them (INSEE's trace.c,
//! `read_alog`).
//!
//! One record per line, whitespace separated; blank lines and lines
//! starting with `#` are skipped. Only point-to-point records are used:
//!
//! `<op> <process0> <task0> <process1> <task1> <timestamp> <tag> <bytes>`
//!
//! with `op` `-101` (process0 sends to process1) or `-102` (process0
//! receives from process1). Task fields and timestamps are ignored, as is
//! every other record (headers, states, collectives: use traces that show
//! the point-to-point messages inside collectives). Messages a process
//! sends to itself are dropped (INSEE's "valid event" check). An alog trace
//! has no computation: time between events is not replayed.

use std::fmt::Write as _;

use crate::{number, Event, Trace, TraceError, MAX_MESSAGE_BYTES, MAX_TASK};

/// Reads alog `text`; `file` names it in errors.
///
/// # Errors
/// [`TraceError::Syntax`]: a send or receive record with fewer than 8
/// fields, a field that is not a number, a process id over
/// [`MAX_TASK`], a message over [`MAX_MESSAGE_BYTES`], a tag over 2^32.
pub(crate) fn parse(text: &str, file: &str) -> Result<Trace, TraceError> {
    let mut t = Trace {
        name: file.to_string(),
        ..Trace::default()
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| TraceError::Syntax {
            file: file.to_string(),
            line,
            what,
        };
        if raw.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = raw.split_whitespace().collect();
        let send = match f.first() {
            Some(&"-101") => true,
            Some(&"-102") => false,
            _ => continue,
        };
        if f.len() < 8 {
            return Err(err(format!(
                "`{}` takes 7 fields after the operation, found {}",
                f[0],
                f.len() - 1
            )));
        }
        let num = |k: usize, name: &str, max: u64| {
            number(f[k], name, max).map_err(|e| err(e.to_string()))
        };
        let local = num(1, "process0", MAX_TASK)? as u32;
        let peer = num(3, "process1", MAX_TASK)? as u32;
        let tag = num(6, "tag", u64::from(u32::MAX))? as u32;
        let bytes = num(7, "bytes", MAX_MESSAGE_BYTES)?;
        if local == peer {
            continue;
        }
        let event = if send {
            Event::Send {
                dst: peer,
                tag,
                bytes,
            }
        } else {
            Event::Recv {
                src: peer,
                tag,
                bytes,
            }
        };
        t.push(local, event, line as u32);
    }
    Ok(t)
}

/// `trace`'s messages as alog records that INSEE and [`crate::parse_str`]
/// read back to the same event queues (task fields and timestamps 0).
/// alog has no computation records: CPU events are left out.
pub(crate) fn write(trace: &Trace) -> String {
    let mut s = String::new();
    for (task, events) in trace.tasks.iter().enumerate() {
        for e in events {
            let _ = match *e {
                Event::Send { dst, tag, bytes } => {
                    writeln!(s, "-101 {task} 0 {dst} 0 0 {tag} {bytes}")
                }
                Event::Recv { src, tag, bytes } => {
                    writeln!(s, "-102 {task} 0 {src} 0 0 {tag} {bytes}")
                }
                Event::Cpu { .. } => Ok(()),
            };
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::{parse_str, Event, Trace, TraceFormat};

    #[test]
    fn point_to_point_records_become_events() {
        let text = "-1 0 0 0 0 0 0 0\n\
                    -101 0 0 1 0 17 5 300\n\
                    # a comment\n\
                    -102 1 0 0 0 18 5 300\n\
                    -101 1 0 1 0 19 5 300\n\
                    -13 1 0 0 0 0\n";
        let t = parse_str(text, "a.log").unwrap();
        assert!(!t.cpu_in_cycles);
        let (tag, bytes) = (5, 300);
        assert_eq!(t.tasks[0], [Event::Send { dst: 1, tag, bytes }]);
        // The message to itself is dropped.
        assert_eq!(t.tasks[1], [Event::Recv { src: 0, tag, bytes }]);
        assert_eq!(t.origin(1, 0), "a.log:4");
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            (
                "-101 0 0 1 0 0 5\n",
                "a.log:1: `-101` takes 7 fields after the operation, found 6",
            ),
            (
                "-1 0\n-102 0 0 x 0 0 5 1\n",
                "a.log:2: field process1 = `x` is not a number",
            ),
            (
                "-101 0 0 1 0 0 5 99999999999\n",
                "a.log:1: field bytes = 99999999999 is over",
            ),
        ];
        crate::expect_errors("a.log", &cases);
    }

    #[test]
    fn written_traces_read_back_without_computation() {
        let mut t = Trace::new("k", 3);
        t.message(0, 2, 4, 100);
        t.push(1, Event::Cpu { amount: 9 }, 0);
        t.message(2, 1, 0, 1);
        let back = parse_str(&t.write(TraceFormat::Alog), "k").unwrap();
        assert_eq!(back.tasks[0], t.tasks[0]);
        assert!(back.tasks[1]
            .iter()
            .all(|e| !matches!(e, Event::Cpu { .. })));
        assert_eq!(back.tasks[1].len(), 1);
        assert_eq!(back.tasks[2], t.tasks[2]);
    }
}
