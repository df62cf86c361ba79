//! The receiving side of a replay: a task's receive, and the network's
//! deliveries (a message's last packet in, TCP's timers fed, kernel
//! frames taken in, a waiting task woken).

use std::cmp::Reverse;

use fsin_model::engine::Delivered;
use fsin_timeline::{Message, State};
use fsin_trace::{
    is_kernel_frame, Event, Trace, ARP_TAG, DSACK_OPTION_BYTES, PROBE_TAG, TCP_ACK_TAG,
};

use super::{enter, Agent, Replay, ReplayParams, Then, TraceMode, BACKGROUND};

/// A message that arrived before its receive: its source task and tag,
/// the network cycle it arrived in, whether its agent paid the kernel's
/// receive of it on arrival ([`Trace::rx`]), and the node cycles its
/// NIC's window held it back ([`Trace::irq`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Early {
    pub(super) src: u32,
    pub(super) tag: u32,
    arrived: u64,
    paid: bool,
    held: u64,
}

/// Hands a frame of `trace` that reached its NIC in network cycle
/// `ready`, and that its NIC's window held back `held` node cycles, to
/// agent `ag` ([`ReplayParams::hand_over`]): its node cycle
/// once it has the frame and the network cycle it goes on at. A lowered
/// MPI-level trace's rank finds a frame by a run of its MPI library's
/// event loop, which polls every connection (`poll` node cycles,
/// [`fsin_trace::Trace::poll`]): one that waited for the frame runs it
/// after its wake-up; one whose frame was already in runs it now, unless
/// a run since the frame came found it (one run finds every frame in
/// by then).
fn hand_over(
    params: &ReplayParams,
    trace: &Trace,
    ag: &mut Agent,
    poll: u64,
    (ready, held): (u64, u64),
) -> (u64, u64) {
    let arrival = params.kernel_node(trace, ready, held);
    if trace.mpi && arrival > ag.node_time {
        ag.polled_at = arrival.saturating_add(trace.wake).saturating_add(trace.rx);
    } else if trace.mpi && poll > 0 && arrival > ag.polled_at {
        ag.polled_at = ag.node_time;
        ag.node_time = ag.node_time.saturating_add(poll);
    }
    params.hand_over(trace, (ag.node_time, poll), (ready, arrival))
}

impl Replay {
    /// Agent `a`'s receive of the message `tag` from task `src` in cycle
    /// `now`.
    pub(super) fn recv(&mut self, a: u32, now: u64, src: u32, tag: u32) -> Then {
        let ai = a as usize;
        let ag = &mut self.agents[ai];
        if self.params.mode == TraceMode::AtWill {
            ag.next += 1;
            return Then::Next;
        }
        let tick = self.traces[ag.trace as usize].tick;
        ag.event_loop.inside(ag.node_time, ag.node_time, tick);
        let pending = &mut self.pending[ai];
        let Some(i) = pending.iter().position(|p| (p.src, p.tag) == (src, tag)) else {
            ag.waiting = true;
            enter(&mut self.timeline, ag, a, State::Waiting, now);
            return Then::Wait;
        };
        let Early {
            arrived,
            paid,
            held,
            ..
        } = pending.remove(i);
        let from = self.job_base[ag.job as usize] + src;
        let ready = self.opened(from, a, arrived);
        self.hold(a, from);
        let poll = self.poll_cycles(a);
        let ag = &mut self.agents[ai];
        ag.next += 1;
        let trace = &self.traces[ag.trace as usize];
        if trace.mpi && !paid {
            // It came while the agent waited for another: the kernel
            // took it in meanwhile.
            let done = self.params.kernel_node(trace, arrived, held) + trace.rx;
            ag.node_time = ag.node_time.max(done);
        }
        // An MPI-level trace's frame is handed over at a slice start,
        // maybe later than it arrived.
        let (node_time, at) = hand_over(&self.params, trace, ag, poll, (ready, held));
        if trace.mpi || (trace.frames && at > now) {
            ag.event_loop.inside(ag.node_time, node_time, tick);
            ag.node_time = node_time;
        }
        if at > now {
            enter(&mut self.timeline, ag, a, State::Waiting, now);
            self.due.push(Reverse((at, ag.node_time, a)));
            return Then::Wait;
        }
        Then::Next
    }

    /// A packet delivered by the network (background packets are ignored).
    pub fn delivered(&mut self, d: &Delivered) {
        if d.tag == BACKGROUND {
            return;
        }
        self.in_flight -= 1;
        self.last_delivery = Some(d.t_done);
        let id = d.tag as u32;
        let m = &mut self.msgs[id as usize];
        m.arrived += 1;
        if m.arrived < m.packets {
            return;
        }
        let m = *m;
        self.free_msgs.push(id);
        self.messages_delivered += 1;
        if let Some(tl) = self.timeline.as_mut() {
            tl.message(&Message {
                src: m.src_agent,
                dst: m.dst_agent,
                sent: m.sent,
                received: d.t_done + m.after,
                bytes: m.bytes,
                tag: u64::from(m.tag),
            });
        }
        if self.params.mode == TraceMode::AtWill {
            return;
        }
        let a = m.dst_agent;
        let ready = d.t_done + m.after;
        let trace_id = self.agents[a as usize].trace;
        let held = self.interrupt(a, ready, m.tag);
        if let Some(timers) = self.tcp_cycles(trace_id).filter(|_| m.tag != ARP_TAG) {
            let data = !is_kernel_frame(m.tag);
            self.tcp
                .delivered((m.src_agent, a), data, m.acks, ready, timers);
            if m.tag == PROBE_TAG {
                // A frame it had: the kernel answers with a D-SACK once
                // its node has the probe.
                let trace = &self.traces[trace_id as usize];
                let node = self.params.kernel_node(trace, ready, held);
                let at = self.params.net_of(node).max(ready);
                let bytes = trace.tcp.ack + DSACK_OPTION_BYTES;
                self.kernel_frame((a, m.src_agent), TCP_ACK_TAG, bytes, at);
            }
        }
        let ag = &mut self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        let wanted = trace.tasks[ag.task as usize].get(ag.next as usize);
        // A TCP acknowledgement or an ARP request: its kernel takes it
        // in, no call waits.
        let ack = trace.mpi && is_kernel_frame(m.tag);
        let waits = !ack && ag.waiting;
        let key = (m.src_task, m.tag);
        if waits
            && (matches!(wanted, Some(&Event::Recv { src, tag, .. }) if (src, tag) == key)
                || self.progress_takes(a, key.0, key.1))
        {
            let ready = self.opened(m.src_agent, a, ready);
            self.hold(a, m.src_agent);
            let poll = self.poll_cycles(a);
            let ag = &mut self.agents[a as usize];
            ag.waiting = false;
            ag.next += 1;
            let trace = &self.traces[ag.trace as usize];
            let (node_time, at) = hand_over(&self.params, trace, ag, poll, (ready, held));
            if trace.frames {
                ag.event_loop.inside(ag.node_time, node_time, trace.tick);
                ag.node_time = node_time;
            }
            self.due.push(Reverse((at, ag.node_time, a)));
        } else {
            // An MPI-level trace's agent busy when the frame arrives pays
            // the kernel's receive of it now.
            let ag = &mut self.agents[a as usize];
            let trace = &self.traces[ag.trace as usize];
            let rx = trace.rx_of(m.tag);
            let busy = trace.mpi
                && rx > 0
                && !ag.waiting
                && ag.done_at.is_none()
                && self.params.kernel_node(trace, ready, held) < ag.node_time;
            if busy {
                ag.node_time += rx;
                let at = self.params.net_of(ag.node_time);
                self.due.push(Reverse((at, ag.node_time, a)));
            }
            if !ack {
                self.pending[a as usize].push(Early {
                    src: m.src_task,
                    tag: m.tag,
                    arrived: ready,
                    paid: busy,
                    held,
                });
            }
        }
    }
}
