//! The first contacts of a lowered MPI-level trace's tasks
//! ([`fsin_trace::Trace::contact`], [`fsin_trace::Trace::tick`], [`fsin_trace::Trace::handshake`]): each
//! task's event loop and each pair's connection, as Open MPI 4.1's TCP BTL
//! opens it (docs/model.md, "Replaying an MPI-level trace").

use fsin_trace::Event;

use super::Replay;

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
    connected_from: u64,
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
    fn first_run(&self, wait: u64, after: u64, tick: u64) -> u64 {
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
/// MPI 4.1's TCP BTL opens it (node cycles; [`Replay::connect`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Connection {
    /// The agent that connected.
    from: u32,
    /// When its event loop found the connect done and sent the
    /// connection's first message.
    sent: u64,
    /// When the other agent's event loop accepted it.
    accepted: u64,
    /// When the pair's frames go: the acceptor has set its peer up.
    open: u64,
}

/// What an agent's send to a peer does first in a lowered MPI-level
/// trace with a connection model ([`Replay::connect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Contact {
    /// The agent is blocked until this node cycle, setting the peer up.
    SetUp(u64),
    /// It goes on; `arp`: it has just opened the pair's connection, and
    /// its kernel first broadcasts an ARP request for the peer's address
    /// ([`fsin_trace::Trace::arp`]).
    Go { arp: bool },
}

impl Replay {
    /// Whether the agents of trace `t` open connections: a lowered
    /// MPI-level trace with a connection model.
    pub(super) fn connects(&self, t: u32) -> bool {
        let trace = &self.traces[t as usize];
        trace.frames && trace.mpi && (trace.contact > 0 || trace.tick > 0)
    }

    /// Agent `a` at an MPI call that sends to agent `b`, as Open MPI 4.1's
    /// TCP BTL opens connections: the node cycle until which `a` is
    /// blocked setting `b` up as a peer (its first send to `b`:
    /// [`fsin_trace::Trace::contact`] node cycles, the modex lookup of `b`'s addresses
    /// through the local daemon), or that it goes on. The first of
    /// the pair to send connects (its kernel first broadcasts an ARP
    /// request, unless [`fsin_trace::Trace::arp`] is 0 or either is task 0,
    /// whose node ran `mpirun` and knows every address): its connect completes at its event
    /// loop's first run once the TCP handshake is done
    /// ([`fsin_trace::Trace::handshake`] after the set-up; the loop runs only while
    /// the rank waits, [`Replay::first_run`]), which sends the
    /// connection's first message; the other accepts at its loop's first
    /// run after that, sets the sender up as a peer unless it already
    /// has, and answers: the pair's frames go from then. A rank that sends
    /// to its peer before it accepted sets the peer up itself, and accepts
    /// at its loop's next run.
    pub(super) fn connect(&mut self, a: u32, b: u32) -> Contact {
        let trace = &self.traces[self.agents[a as usize].trace as usize];
        let (setup, handshake, trace_arp) = (trace.contact, trace.handshake, trace.arp);
        let t = self.agents[a as usize].node_time;
        let key = (a.min(b), a.max(b));
        let known = self.knows(a, b, t);
        let existing = self.connections.get(&key).copied();
        let accepting = existing.filter(|c| c.from == b && t < c.accepted);
        if !known && (accepting.is_some() || existing.is_none()) {
            // The set-up comes before the call's first progress.
            self.peers.insert((a, b), t + setup);
            return Contact::SetUp(t + setup);
        }
        // The events after this send.
        let after_send = self.agents[a as usize].next as usize + 1;
        if let Some(c) = accepting {
            // Its own set-up is done: it accepts at its loop's next run
            // after it, holding meanwhile only its other connections.
            let held = self
                .connections
                .iter()
                .filter(|(k, _)| **k != key && (k.0 == a || k.1 == a))
                .map(|(_, o)| if o.from == a { o.sent } else { o.accepted })
                .min()
                .unwrap_or(u64::MAX);
            self.agents[a as usize].event_loop.connected_from = held;
            let accepted = self.first_run(a, t, after_send, c.sent);
            self.agents[a as usize].event_loop.connected_at(accepted);
            self.connections.insert(
                key,
                Connection {
                    accepted,
                    open: accepted.max(t),
                    ..c
                },
            );
            return Contact::Go { arp: false };
        }
        if existing.is_some() {
            return Contact::Go { arp: false };
        }
        let sent = self.first_run(a, t, after_send, t + handshake);
        self.agents[a as usize].event_loop.connected_at(sent);
        let peer = &self.agents[b as usize];
        let accepted = self.first_run(b, peer.node_time, peer.next as usize, sent);
        self.agents[b as usize].event_loop.connected_at(accepted);
        let open = match self.peers.get(&(b, a)) {
            Some(&p) if p <= accepted + setup => accepted.max(p),
            _ => accepted + setup,
        };
        self.peers.entry((b, a)).or_insert(open);
        self.connections.insert(
            key,
            Connection {
                from: a,
                sent,
                accepted,
                open,
            },
        );
        let (ta, tb) = (self.agents[a as usize].task, self.agents[b as usize].task);
        Contact::Go {
            arp: trace_arp > 0 && ta != 0 && tb != 0,
        }
    }

    /// The first run at or after node cycle `after` of agent `a`'s event
    /// loop, `a` being at node cycle `t` before its event `from`: Open
    /// MPI 4.1 runs the loop only inside `opal_progress`, which its sends
    /// (`MPI_Isend`, an eager `MPI_Send`) do not call, so `a` runs it
    /// next when it waits ([`Replay::next_wait`]): there if a tick has
    /// passed since its last run or it holds a connection, then once a
    /// tick ([`EventLoop`]).
    fn first_run(&self, a: u32, t: u64, from: usize, after: u64) -> u64 {
        let ag = &self.agents[a as usize];
        let tick = self.traces[ag.trace as usize].tick;
        ag.event_loop
            .first_run(self.next_wait(a, t, from), after, tick)
    }

    /// Whether agent `a` has set `b` up as its peer by node cycle `t`.
    fn knows(&self, a: u32, b: u32, t: u64) -> bool {
        self.peers.get(&(a, b)).is_some_and(|&p| p <= t)
    }

    /// The node cycle agent `a`, at node cycle `t` before its event
    /// `from`, next waits inside MPI: its next receive, or its end
    /// (`MPI_Finalize` progresses), after the computations and the
    /// set-ups of new peers ([`fsin_trace::Trace::contact`]) before it.
    fn next_wait(&self, a: u32, t: u64, from: usize) -> u64 {
        let ag = &self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        let base = self.job_base[ag.job as usize];
        let mut t = t;
        let mut new_peers: Vec<u32> = Vec::new();
        for e in trace.tasks[ag.task as usize].iter().skip(from) {
            match *e {
                Event::Cpu { amount } => {
                    t = t.saturating_add(self.params.cpu_cycles(trace, amount).round() as u64);
                }
                Event::Send { dst, .. } => {
                    let b = base + dst;
                    if !self.knows(a, b, t) && !new_peers.contains(&b) {
                        new_peers.push(b);
                        t = t.saturating_add(trace.contact);
                    }
                }
                Event::Recv { .. } => return t,
            }
        }
        t
    }

    /// A frame from agent `from` to agent `to` that reached its NIC in
    /// network cycle `ready`: the network cycle it can be handed over
    /// from, once the pair's connection is open.
    pub(super) fn opened(&self, from: u32, to: u32, ready: u64) -> u64 {
        match self.connections.get(&(from.min(to), from.max(to))) {
            Some(c) => ready.max(self.params.net_of(c.open)),
            None => ready,
        }
    }
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
