//! The run's report ([`CosimReport`]) from what the coordinator's parts
//! hold: the roster's nodes and faults, the barrier's rounds, the control's
//! slice ratio and the coupler's statistics.

use std::time::Instant;

use super::barrier::Barrier;
use super::control::Control;
use super::end::End;
use super::roster::Roster;
use crate::coupler::{Coupler, Slice};
use crate::report::CosimReport;
use crate::ServeOptions;

/// What a report is made of, borrowed from the coordinator.
pub(super) struct ReportParts<'a> {
    pub(super) opts: &'a ServeOptions,
    pub(super) roster: &'a Roster,
    pub(super) barrier: &'a Barrier,
    pub(super) control: &'a Control,
    /// When the first slice started.
    pub(super) started: Instant,
}

impl ReportParts<'_> {
    /// The report of a run that has run up to the end of `slice`.
    pub(super) fn report_now(&self, coupler: &Coupler, end: &End, slice: Slice) -> CosimReport {
        let mut r = self.report_base(end);
        r.slices = self.barrier.grid_index() + 1;
        r.slices_skipped = self.barrier.skipped;
        r.node_cycles = slice.node_start + slice.node_cycles;
        r.net_cycles = coupler.net_now();
        r.simulated_s = r.node_cycles as f64 / self.opts.config.cosim.node_clock_hz as f64;
        let s = coupler.stats();
        for (p, t) in r.per_node.iter_mut().zip(&s.per_node) {
            p.traffic = t.clone();
        }
        r.frames_sent = s.per_node.iter().map(|t| t.frames_sent).sum();
        r.bytes_sent = s.per_node.iter().map(|t| t.bytes_sent).sum();
        r.frames_delivered = s.per_node.iter().map(|t| t.frames_received).sum();
        r.bytes_delivered = s.per_node.iter().map(|t| t.bytes_received).sum();
        r.frames_rejected = s.rejected;
        r.frames_unknown_mac = s.unknown_mac;
        r.frames_to_lost_nodes = s.to_lost_nodes;
        r.frames_bypassed = s.bypassed;
        r.frames_dropped = s.dropped;
        r.frames_lost = s.lost;
        r.frames_reordered = s.reordered;
        r.frame_latency_avg = s.latency_node.mean();
        r.frame_latency_std = s.latency_node.std();
        r.frame_latency_min = s.latency_node.min;
        r.frame_latency_max = s.latency_node.max;
        r.frame_net_latency_avg = s.latency_net.mean();
        r.frame_net_latency_std = s.latency_net.std();
        r.frame_net_latency_min = s.latency_net.min;
        r.frame_net_latency_max = s.latency_net.max;
        r.network = coupler.network_summary();
        r.links = coupler.link_load();
        r
    }

    /// The report of what the roster and control know (a run that ended
    /// before its network was built, or the base of [`Self::report_now`]).
    pub(super) fn report_base(&self, end: &End) -> CosimReport {
        let apps: Vec<_> = self.roster.apps().collect();
        let msgs: u64 = apps.iter().map(|a| a.messages).sum();
        let app_latency_avg = if msgs == 0 {
            0.0
        } else {
            apps.iter()
                .map(|a| a.latency_avg * a.messages as f64)
                .sum::<f64>()
                / msgs as f64
        };
        let cfg = &self.opts.config;
        CosimReport {
            mode: cfg.cosim.sync_mode,
            slice_node_cycles: self.control.slice.node,
            slice_net_cycles: self.control.slice.net,
            nodes: self.roster.nodes(),
            topology: cfg.topology_name(),
            slices: 0,
            slices_skipped: 0,
            measured_from_slice: self.control.measured_from,
            node_cycles: 0,
            net_cycles: 0,
            simulated_s: 0.0,
            wall_s: self.started.elapsed().as_secs_f64(),
            slices_per_s: 0.0,
            frames_sent: 0,
            frames_delivered: 0,
            bytes_sent: 0,
            bytes_delivered: 0,
            frames_rejected: 0,
            frames_unknown_mac: 0,
            frames_to_lost_nodes: 0,
            frames_bypassed: 0,
            frames_dropped: 0,
            frames_lost: 0,
            frames_reordered: 0,
            frame_latency_avg: 0.0,
            frame_latency_std: 0.0,
            frame_latency_min: 0,
            frame_latency_max: 0,
            frame_net_latency_avg: 0.0,
            frame_net_latency_std: 0.0,
            frame_net_latency_min: 0,
            frame_net_latency_max: 0,
            app_cycles: apps.iter().map(|a| a.done_cycle).max(),
            app_latency_avg,
            end_reason: end.to_string(),
            ok: end.ok() && self.roster.faults.is_empty(),
            deadlock: matches!(end, End::Deadlock { .. }),
            faults: self.roster.faults.clone(),
            per_node: self.roster.node_reports(),
            network: fsin::stats::Counters::default().summary(self.roster.nodes()),
            util_window_slices: cfg.cosim.util_window,
            links: crate::coupler::LinkLoad::default(),
            engine_alone_s: None,
            overhead: None,
            timeline: None,
        }
    }

    /// The final report: [`Self::report_now`] if slices ran, with the
    /// capture's first error and the engine-alone overhead
    /// ([`ServeOptions::measure_overhead`]).
    pub(super) fn report(
        &self,
        mut coupler: Option<Box<Coupler>>,
        end: &End,
        last: Option<Slice>,
    ) -> CosimReport {
        let mut r = match (&coupler, last) {
            (Some(c), Some(s)) => self.report_now(c, end, s),
            _ => self.report_base(end),
        };
        if let Some(c) = coupler.as_deref_mut() {
            if let Err(e) = c.finish_capture() {
                tracing::error!("{e}");
                r.ok = false;
                r.end_reason = format!("{}; {e}", r.end_reason);
            }
        }
        r.wall_s = self.started.elapsed().as_secs_f64();
        if let Some(c) = coupler.as_deref() {
            match c.engine_alone() {
                Ok(Some((alone, _))) => {
                    r.engine_alone_s = Some(alone.as_secs_f64());
                    r.overhead = Some(r.wall_s / alone.as_secs_f64().max(1e-9));
                }
                Ok(None) => {}
                Err(e) => tracing::error!("cannot measure the overhead: {e}"),
            }
        }
        r.slices_per_s = if r.wall_s > 0.0 {
            r.slices as f64 / r.wall_s
        } else {
            0.0
        };
        r
    }
}
