//! How a replay's agents open their connections ([`super::contact`]'s
//! event loops and connections): a pair's first contact, its set-up and
//! handshake, and what a frame waits for until the pair's connection is
//! open (docs/model.md, "Replaying an MPI-level trace").

use fsin_trace::Event;

use super::contact::{Connection, Contact};
use super::Replay;

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
