//! A node's NIC holds its interrupts back: after each interrupt it raises
//! the next no sooner than a window later, and every cause that comes
//! inside the window (a frame sent, a frame in) waits for the window's
//! end, where one interrupt serves them all (QEMU's e1000,
//! `hw/net/e1000.c` `set_interrupt_cause`: the window is the largest of
//! the ITR, RADV and TADV timers and never less than 500 x 256 ns =
//! 128 us; [`fsin_trace::Trace::irq`]).

use fsin_trace::is_kernel_frame;

use super::Replay;

impl Replay {
    /// Agent `a`'s NIC sends a frame with `tag` in network cycle `now`
    /// (a frame of its task, at its clock; one of its kernel, at `now`):
    /// a cause of an interrupt, its transmit's, in a lowered MPI-level
    /// trace.
    pub(super) fn transmit(&mut self, a: u32, tag: u32, now: u64) {
        let ag = &mut self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        if !trace.mpi || trace.irq == 0 {
            return;
        }
        let t = if is_kernel_frame(tag) {
            self.params.node_of(now)
        } else {
            ag.node_time
        };
        ag.nic.frame_out(t, trace.irq);
    }

    /// The node cycles agent `a`'s NIC holds back a frame with `tag` that
    /// reaches it in network cycle `ready`, from its arrival until its
    /// kernel takes it ([`fsin_trace::Trace::irq`]; 0 but in lowered
    /// MPI-level traces with a window): a frame that comes while the
    /// kernel's poll of the frames before runs (each takes its kernel
    /// receive, [`fsin_trace::Trace::rx_of`]) joins that poll, as NAPI
    /// goes on over the frames it finds; one after it waits for an
    /// interrupt of its own.
    pub(super) fn interrupt(&mut self, a: u32, ready: u64, tag: u32) -> u64 {
        let ag = &mut self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        if !trace.mpi || trace.irq == 0 {
            return 0;
        }
        let arrival = self.params.arrival_node(trace, ready);
        ag.nic.frame_in(arrival, trace.irq, trace.rx_of(tag)) - arrival
    }
}

/// A node's latest two interrupts, and the node cycle its kernel's poll
/// of the frames in runs to (none before its first).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Interrupts {
    before: Option<u64>,
    latest: Option<u64>,
    polled_until: u64,
}

impl Interrupts {
    /// A frame the node sends at node cycle `t`: its transmit's cause,
    /// raised when a poll that runs then ends (the poll masks the NIC's
    /// interrupts), within the window rule ([`Interrupts::cause`]).
    pub(super) fn frame_out(&mut self, t: u64, window: u64) {
        self.cause(t.max(self.polled_until), window);
    }

    /// A frame in at node cycle `t`: the node cycle its kernel takes it
    /// from, which then takes `rx` node cycles. One that comes while the
    /// poll of the frames before runs joins it, when the poll is done
    /// with those (NAPI goes on over the frames it finds); one after it
    /// waits for an interrupt ([`Interrupts::cause`]), whose poll it
    /// begins.
    pub(super) fn frame_in(&mut self, t: u64, window: u64, rx: u64) -> u64 {
        let at = if t <= self.polled_until {
            self.polled_until
        } else {
            self.cause(t, window)
        };
        self.polled_until = at.saturating_add(rx);
        at
    }

    /// The node cycle of the interrupt that serves a cause at node cycle
    /// `t`, with a window of `window` node cycles after each interrupt
    /// (0: at once, always). Causes come in time order but for a task's
    /// own frames, stamped at its clock, which may run ahead of the
    /// frames it takes in: a cause before the latest interrupt is served
    /// by it if the window before it holds the cause that long, else by
    /// an interrupt of its own, which holds the latest back a window
    /// after it.
    pub(super) fn cause(&mut self, t: u64, window: u64) -> u64 {
        if window == 0 {
            return t;
        }
        match self.latest {
            Some(latest) if t <= latest => {
                let at = self.before.map_or(t, |b| t.max(b.saturating_add(window)));
                if at >= latest {
                    return latest;
                }
                self.before = Some(at);
                self.latest = Some(latest.max(at.saturating_add(window)));
                at
            }
            latest => {
                let at = latest.map_or(t, |l| t.max(l.saturating_add(window)));
                self.before = latest;
                self.latest = Some(at);
                at
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Interrupts;

    /// Hand-worked with a window of 128: a cause after the window is
    /// served at once; those inside it at its end, by one interrupt;
    /// the next window runs from that interrupt.
    #[test]
    fn causes_inside_a_window_wait_for_its_end_together() {
        let mut n = Interrupts::default();
        assert_eq!(n.cause(1000, 128), 1000);
        assert_eq!(n.cause(1050, 128), 1128);
        assert_eq!(n.cause(1100, 128), 1128);
        assert_eq!(n.cause(1128, 128), 1128);
        assert_eq!(n.cause(1200, 128), 1256);
        assert_eq!(n.cause(1500, 128), 1500);
        // No window: every cause at once.
        assert_eq!(Interrupts::default().cause(7, 0), 7);
    }

    /// Frames in back to back, each taking 30 to poll, with a window of
    /// 128: the first's interrupt at 1000 begins a poll, which the next
    /// two join (in at 1010 and 1040, before it is done: taken at 1030
    /// and 1060); one in at 1100, after the poll (done at 1090), waits for
    /// the window's end, 1128. A frame sent while a poll runs raises its
    /// interrupt when the poll is done, within the window.
    #[test]
    fn frames_in_during_a_poll_join_it() {
        let mut n = Interrupts::default();
        assert_eq!(n.frame_in(1000, 128, 30), 1000);
        assert_eq!(n.frame_in(1010, 128, 30), 1030);
        assert_eq!(n.frame_in(1040, 128, 30), 1060);
        assert_eq!(n.frame_in(1100, 128, 30), 1128);
        // The poll of 1128 runs to 1158; a frame sent at 1140 raises its
        // interrupt at 1158, inside 1128's window: at its end, 1256, which
        // a frame in at 1200 then waits for.
        n.frame_out(1140, 128);
        assert_eq!(n.frame_in(1200, 128, 30), 1256);
    }

    /// A task's own frame stamped ahead (its interrupt at 2000), then
    /// frames in before it, hand-worked with a window of 128.
    #[test]
    fn a_cause_before_the_latest_interrupt_gets_one_of_its_own() {
        let mut n = Interrupts::default();
        assert_eq!(n.cause(1000, 128), 1000);
        assert_eq!(n.cause(2000, 128), 2000);
        // After 1000's window: at once; 2000 is more than a window later.
        assert_eq!(n.cause(1400, 128), 1400);
        // Inside 1400's window: at its end.
        assert_eq!(n.cause(1450, 128), 1528);
        // After 1528's window, at once: and 2000, inside this one's
        // window, is held back to its end, 2118, which serves a cause
        // at 2050.
        assert_eq!(n.cause(1990, 128), 1990);
        assert_eq!(n.cause(2050, 128), 2118);
        assert_eq!(n.cause(2300, 128), 2300);
    }
}
