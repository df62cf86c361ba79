//! Receives that a task takes in the order their frames arrive: in a
//! frame trace lowered from an MPI-level trace, a completion call that
//! waits for several messages (`MPI_Waitall`, a collective's wait for
//! its posted receives). Open MPI's progress engine reads whichever of
//! its connections has data, so the live rank takes the segments of all
//! the messages it waits for as they come, not one message after
//! another (docs/model.md, "Replaying an MPI-level trace").
//!
//! In a `.trc`, a group is a line `#fsin group TASK END RUN...` after the
//! [`MPI_DIRECTIVE`](crate::MPI_DIRECTIVE) line: the task, the index one
//! past its last event, and the index of each run's first event (indices
//! count the task's events from 0, in the file's order).

use std::fmt::Write as _;

use crate::{Event, Trace};

/// The comment line that gives one [`RecvGroup`] of a lowered frame
/// trace: `#fsin group TASK END RUN...` (module doc).
pub const GROUP_DIRECTIVE: &str = "#fsin group";

/// One completion call's receives ([`Trace::recv_groups`]): a task's
/// events from `runs[0]` to `end` (exclusive), cut into runs, one per
/// message, each from its first frame's receive (an [`Event::Recv`]) to
/// the next run's start or `end`. A replay takes each run's events in
/// order and, at every receive, goes on with the run whose next frame
/// arrived first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvGroup {
    /// Index of each run's first event in the task's events, ascending.
    pub runs: Vec<u32>,
    /// Index one past the group's last event.
    pub end: u32,
}

impl RecvGroup {
    /// Each run as (first event, one past its last event).
    pub fn spans(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let ends = self.runs.iter().skip(1).copied();
        (self.runs.iter().copied()).zip(ends.chain(std::iter::once(self.end)))
    }
}

impl Trace {
    /// Whether `task`'s groups fit its events: each run starts with a
    /// receive, runs ascend, and groups follow one another without
    /// overlapping.
    ///
    /// # Errors
    /// The index of the first group that does not fit among the task's,
    /// and what is wrong with it.
    pub(crate) fn check_recv_groups(&self, task: u32) -> Result<(), (usize, String)> {
        let Some(groups) = self.recv_groups.get(task as usize) else {
            return Ok(());
        };
        let events = self.tasks.get(task as usize).map_or(&[][..], Vec::as_slice);
        let mut after = 0u32;
        for (k, g) in groups.iter().enumerate() {
            let first = g.runs.first().copied().unwrap_or(g.end);
            let wrong = |what: String| {
                Err((
                    k,
                    format!("the group of task {task} at event {first} {what}"),
                ))
            };
            if first < after {
                return wrong(format!("begins before the group before it ends ({after})"));
            }
            if g.end as usize > events.len() {
                return wrong(format!(
                    "ends at {}, past the task's {} events",
                    g.end,
                    events.len()
                ));
            }
            for (start, end) in g.spans() {
                if start >= end {
                    return wrong(format!("has its run at {start} empty or out of order"));
                }
                if !matches!(events[start as usize], Event::Recv { .. }) {
                    return wrong(format!("has its run at {start} begin with no receive"));
                }
            }
            after = g.end;
        }
        Ok(())
    }

    /// The `#fsin group` lines of every task's groups.
    pub(crate) fn write_recv_groups(&self, s: &mut String) {
        for (task, groups) in self.recv_groups.iter().enumerate() {
            for g in groups {
                let _ = write!(s, "{GROUP_DIRECTIVE} {task} {}", g.end);
                for r in &g.runs {
                    let _ = write!(s, " {r}");
                }
                s.push('\n');
            }
        }
    }

    /// Reads a `#fsin group` line's words after the directive into a
    /// group of its task (checked once every event is read).
    ///
    /// # Errors
    /// A word that is not a number, or too few of them.
    pub(crate) fn read_recv_group(&mut self, words: &str) -> Result<u32, String> {
        let numbers: Vec<u32> = words
            .split_whitespace()
            .map(|w| {
                w.parse::<u32>()
                    .map_err(|_| format!("`{w}` is not an event index"))
            })
            .collect::<Result<_, _>>()?;
        let [task, end, runs @ ..] = &numbers[..] else {
            return Err(format!("`{GROUP_DIRECTIVE}` takes TASK END RUN..."));
        };
        if runs.is_empty() {
            return Err(format!(
                "`{GROUP_DIRECTIVE}` takes TASK END RUN..., with one run at least"
            ));
        }
        if u64::from(*task) > crate::MAX_TASK {
            return Err(format!("task {task} is over {}", crate::MAX_TASK));
        }
        self.push_recv_group(
            *task as usize,
            RecvGroup {
                runs: runs.to_vec(),
                end: *end,
            },
        );
        Ok(*task)
    }

    /// Adds `group` after `task`'s groups.
    pub(crate) fn push_recv_group(&mut self, task: usize, group: RecvGroup) {
        if self.recv_groups.len() <= task {
            self.recv_groups.resize(task + 1, Vec::new());
        }
        self.recv_groups[task].push(group);
    }
}
