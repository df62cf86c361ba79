//! The first contacts of a lowered MPI-level trace's tasks
//! ([`fsin_trace::Trace::contact`], [`fsin_trace::Trace::tick`], [`fsin_trace::Trace::handshake`]): each
//! task's event loop and each pair's connection, as Open MPI 4.1's TCP BTL
//! opens it (docs/model.md, "Replaying an MPI-level trace").

/// A task's event loop in a lowered MPI-level trace with a connection
/// model ([`fsin_trace::Trace::contact`], [`fsin_trace::Trace::tick`]), as Open MPI 4.1's
/// `opal_progress` runs libevent's: only while the task waits inside MPI,
/// at most once a tick while it holds no connection (on starting to wait
/// if a tick has passed since the last run, then once a tick while it
/// waits), and at every call once it holds one. Its first wait after
/// `MPI_Init` runs it (`MPI_Init`'s runs counted Open MPI's daemon as an
/// event user, so its tick has passed; `--mca mpi_event_tick_rate` set
/// by hand would restart the tick at `MPI_Init`'s end instead). Times
/// are node cycles.
#[derive(Debug, Clone, Copy)]
pub(super) struct EventLoop {
    /// The last run while the task held no connection (`None`: none yet).
    last: Option<u64>,
    /// From when the task holds a connection (`u64::MAX`: not yet).
    pub(super) connected_from: u64,
}

impl EventLoop {
    pub(super) const NEW: EventLoop = EventLoop {
        last: None,
        connected_from: u64::MAX,
    };

    /// The task waits inside MPI from `from` to `to` (equal: it starts
    /// to): the runs it makes there.
    pub(super) fn inside(&mut self, from: u64, to: u64, tick: u64) {
        if tick == 0 || from >= self.connected_from {
            return;
        }
        let last = match self.last {
            Some(l) if from < l.saturating_add(tick) => l,
            _ => from,
        };
        let last = if to >= last.saturating_add(tick) {
            last + (to - last) / tick * tick
        } else {
            last
        };
        self.last = Some(last);
    }

    /// The task holds a connection from `t` (or earlier, if it already
    /// did).
    pub(super) fn connected_at(&mut self, t: u64) {
        self.connected_from = self.connected_from.min(t);
    }

    /// The first run at or after `t` of a task waiting inside MPI (since
    /// its last run at least).
    fn next_run(&self, t: u64, tick: u64) -> u64 {
        let Some(last) = self.last else {
            return t;
        };
        if tick == 0 || t >= self.connected_from {
            return t;
        }
        let first = last.saturating_add(tick);
        if t <= first {
            first
        } else {
            last + (t - last).div_ceil(tick) * tick
        }
    }

    /// The first run at or after `after` of a task that next starts to
    /// wait inside MPI at `wait` and keeps waiting: there if a tick has
    /// passed since its last run or it holds a connection, then once a
    /// tick.
    pub(super) fn first_run(&self, wait: u64, after: u64, tick: u64) -> u64 {
        let mut l = *self;
        l.inside(wait, wait, tick);
        let runs_at_wait = tick == 0 || wait >= l.connected_from || l.last == Some(wait);
        if wait >= after && runs_at_wait {
            return wait;
        }
        l.next_run(after.max(wait), tick)
    }
}

/// A connection between two agents of a lowered MPI-level trace, as Open
/// MPI 4.1's TCP BTL opens it (node cycles; [`super::Replay::connect`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Connection {
    /// The agent that connected.
    pub(super) from: u32,
    /// When its event loop found the connect done and sent the
    /// connection's first message.
    pub(super) sent: u64,
    /// When the other agent's event loop accepted it.
    pub(super) accepted: u64,
    /// When the pair's frames go: the acceptor has set its peer up.
    pub(super) open: u64,
}

/// What an agent's send to a peer does first in a lowered MPI-level
/// trace with a connection model ([`super::Replay::connect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Contact {
    /// The agent is blocked until this node cycle, setting the peer up.
    SetUp(u64),
    /// It goes on; `arp`: it has just opened the pair's connection, and
    /// its kernel first broadcasts an ARP request for the peer's address
    /// ([`fsin_trace::Trace::arp`]).
    Go { arp: bool },
}

#[cfg(test)]
mod tests {
    use super::EventLoop;

    /// Open MPI 4.1's event loop with a tick of 30 cycles, by hand.
    #[test]
    fn an_event_loop_runs_once_a_tick_until_it_holds_a_connection() {
        let mut l = EventLoop::NEW;
        // Its first wait, at 100, runs it, and next at 130.
        assert_eq!(l.next_run(100, 30), 100);
        l.inside(100, 100, 30);
        assert_eq!(l.last, Some(100));
        assert_eq!(l.next_run(100, 30), 130);
        // Waiting again at 110: no run (the tick has not passed).
        l.inside(110, 110, 30);
        assert_eq!(l.last, Some(100));
        // Waiting from 110 to 200: runs at 130, 160 and 190.
        l.inside(110, 200, 30);
        assert_eq!(l.last, Some(190));
        // Waiting from its last run at 0: runs at 30, 60, ..., so the
        // first at or after 130 is 150, at or after 20 is 30.
        let w = EventLoop {
            last: Some(0),
            connected_from: u64::MAX,
        };
        assert_eq!(w.next_run(130, 30), 150);
        assert_eq!(w.next_run(20, 30), 30);
        // Busy outside MPI until 70 (its first run at or after 40): it
        // runs on starting to wait, a tick having passed; busy until 20
        // only (at or after 10): at its tick, 30.
        assert_eq!(w.first_run(70, 40, 30), 70);
        assert_eq!(w.first_run(20, 10, 30), 30);
        // Holding a connection from 50: at every call from then on.
        let c = EventLoop {
            last: Some(0),
            connected_from: 50,
        };
        assert_eq!(c.next_run(60, 30), 60);
        assert_eq!(c.first_run(80, 40, 30), 80);
        assert_eq!(c.next_run(40, 30), 60);
        // A tick of 0: every call.
        assert_eq!(w.next_run(7, 0), 7);
    }
}
