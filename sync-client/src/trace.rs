//! FSIN `.trc` traces (seed 001; `DESIGN.md`, "Trace format"): one event
//! per line, whitespace separated, `#` starts a comment.
//!
//! - `s <src> <dst> <tag> <bytes>`: `src` sends a message to `dst`;
//! - `r <src> <dst> <tag> <bytes>`: `dst` posts a receive for it;
//! - `c <node> <amount>`: `node` computes for `amount` CPU units.
//!
//! [`parse`] groups the events by the node that performs them, in file
//! order, which is the order in which that node replays them.

use std::path::Path;

/// One event, as the node that performs it sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Send `bytes` bytes with `tag` to node `dst`.
    Send { dst: u32, tag: u32, bytes: u64 },
    /// Wait until the message with `tag` from node `src` has fully arrived.
    Recv { src: u32, tag: u32, bytes: u64 },
    /// Compute for `amount` CPU units (`--cpu-units`).
    Cpu { amount: u64 },
}

/// A malformed trace: which file, line and field, and why.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read trace {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}: {what}")]
    Syntax {
        file: String,
        line: usize,
        what: String,
    },
}

/// Reads the trace at `path` for a network of `nodes` nodes; returns the
/// events of each node (index = node id).
///
/// # Errors
/// [`TraceError`] naming the file, the line and the field: unknown event
/// letter, wrong field count, a number that does not parse, a node id
/// beyond `nodes`, a node sending to itself.
pub fn parse(path: &Path, nodes: u32) -> Result<Vec<Vec<Event>>, TraceError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
        file: file.clone(),
        source,
    })?;
    parse_str(&text, &file, nodes)
}

/// [`parse`] on text already read; `file` names it in errors.
///
/// # Errors
/// As [`parse`].
pub fn parse_str(text: &str, file: &str, nodes: u32) -> Result<Vec<Vec<Event>>, TraceError> {
    let mut per_node = vec![Vec::new(); nodes as usize];
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| TraceError::Syntax {
            file: file.to_string(),
            line,
            what,
        };
        let body = raw.split('#').next().unwrap_or("");
        let f: Vec<&str> = body.split_whitespace().collect();
        let Some(&kind) = f.first() else { continue };
        let want = match kind {
            "s" | "r" => 5,
            "c" => 3,
            other => return Err(err(format!("unknown event `{other}` (expected s, r or c)"))),
        };
        if f.len() != want {
            return Err(err(format!(
                "`{kind}` takes {} fields after the letter, found {}",
                want - 1,
                f.len() - 1
            )));
        }
        let num = |k: usize, name: &str| -> Result<u64, TraceError> {
            f[k].parse::<u64>()
                .map_err(|_| err(format!("field {name} = `{}` is not a number", f[k])))
        };
        let node = |k: usize, name: &str| -> Result<u32, TraceError> {
            let v = num(k, name)?;
            if v >= u64::from(nodes) {
                return Err(err(format!(
                    "field {name} = {v} is beyond the network's {nodes} nodes"
                )));
            }
            Ok(v as u32)
        };
        match kind {
            "c" => {
                let n = node(1, "node")?;
                let amount = num(2, "amount")?;
                per_node[n as usize].push(Event::Cpu { amount });
            }
            _ => {
                let src = node(1, "src")?;
                let dst = node(2, "dst")?;
                let tag = u32::try_from(num(3, "tag")?)
                    .map_err(|_| err(format!("field tag = {} is over 2^32", f[3])))?;
                let bytes = num(4, "bytes")?;
                if src == dst {
                    return Err(err(format!("node {src} sends to itself")));
                }
                if kind == "s" {
                    per_node[src as usize].push(Event::Send { dst, tag, bytes });
                } else {
                    per_node[dst as usize].push(Event::Recv { src, tag, bytes });
                }
            }
        }
    }
    Ok(per_node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_go_to_the_node_that_performs_them() {
        let t = "# ping\ns 0 1 7 100\nr 0 1 7 100 # posted by 1\nc 1 50\n\n";
        let e = parse_str(t, "t.trc", 2).unwrap();
        assert_eq!(
            e[0],
            [Event::Send {
                dst: 1,
                tag: 7,
                bytes: 100
            }]
        );
        assert_eq!(
            e[1],
            [
                Event::Recv {
                    src: 0,
                    tag: 7,
                    bytes: 100
                },
                Event::Cpu { amount: 50 }
            ]
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            ("x 0 1\n", "t.trc:1: unknown event `x`"),
            ("c 0 1\ns 0 1 2\n", "t.trc:2: `s` takes 4 fields"),
            ("s 0 9 1 1\n", "t.trc:1: field dst = 9 is beyond"),
            ("c 0 abc\n", "t.trc:1: field amount = `abc` is not a number"),
            ("s 1 1 0 5\n", "t.trc:1: node 1 sends to itself"),
        ];
        for (text, want) in cases {
            let e = parse_str(text, "t.trc", 4).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e} (wanted {want})");
        }
    }
}
