//! Control: what control requests (`fsin.v1.CoSim.Control`, or `Control`
//! on a client's stream) and the CLEAR_STATS magic packet ask of the run,
//! applied at the barrier that follows them, in the order they came.

use fsin_proto::v1::server_message::Body as ServerBody;
use fsin_proto::v1::{self as pb};
use tokio::sync::oneshot;

use super::edge::{Command, Refused};
use super::end::End;
use super::roster::Roster;
use crate::coupler::Coupler;
use crate::report::CosimReport;
use crate::ServeOptions;
use fsin::config::SliceRatio;

/// Where a control reply goes.
pub(super) enum Reply {
    /// The Control RPC's caller.
    Rpc(oneshot::Sender<pb::ControlReply>),
    /// The stream of this client.
    Stream(u64),
}

/// The run's settings that control requests change, and the requests
/// waiting for the next barrier.
pub(super) struct Control {
    /// Requests received during the slice, as decoded (an error: one refused
    /// whatever the run's state).
    requests: Vec<(Result<Command, Refused>, Reply)>,
    /// The measured phase was asked for (a control request, CLEAR_STATS, or
    /// no warm-up) and has not started yet.
    pub(super) start_measure: bool,
    /// The slice grid's index of the first measured slice.
    pub(super) measured_from: u64,
    /// The slice's length (a `SetSlice` request changes it).
    pub(super) slice: SliceRatio,
    /// A request ended the run (stop or shutdown).
    pub(super) end_request: Option<End>,
}

impl Control {
    pub(super) fn new(opts: &ServeOptions) -> Control {
        Control {
            requests: Vec::new(),
            start_measure: !opts.warmup,
            measured_from: 0,
            slice: opts.config.cosim.slice,
            end_request: None,
        }
    }

    /// Queues a request for the next barrier.
    pub(super) fn push(&mut self, command: Result<Command, Refused>, to: Reply) {
        self.requests.push((command, to));
    }

    /// Length of the next slice: warm-up slices are `warmup_factor`
    /// slices long.
    pub(super) fn next_lengths(&self, measuring: bool, warmup_factor: u64) -> SliceRatio {
        self.slice.times(if measuring { 1 } else { warmup_factor })
    }

    /// Applies what was asked during the slice, at its barrier; `grid` is
    /// the slice grid's index of the slice that ended, and `stats` the
    /// report so far (for `GetStats`).
    pub(super) fn apply(
        &mut self,
        coupler: &mut Coupler,
        grid: u64,
        opts: &ServeOptions,
        roster: &Roster,
        stats: impl Fn(&Coupler, &Control) -> CosimReport,
    ) {
        if self.start_measure && !coupler.measuring() {
            coupler.start_measure();
            self.measured_from = grid + 1;
        }
        self.start_measure = false;
        for (command, to) in std::mem::take(&mut self.requests) {
            let reply = match command {
                Ok(Command::StartMeasure) => {
                    if !coupler.measuring() {
                        coupler.start_measure();
                        self.measured_from = grid + 1;
                    }
                    control_ok()
                }
                Ok(Command::StopMeasure) => {
                    self.end_request = Some(End::MeasureStopped);
                    control_ok()
                }
                Ok(Command::SetSlice(slice)) => self.set_slice(slice, opts),
                Ok(Command::GetStats) => pb::ControlReply {
                    stats_json: serde_json::to_string(&stats(coupler, self)).unwrap_or_default(),
                    ..control_ok()
                },
                Ok(Command::Shutdown(why)) => {
                    self.end_request = Some(End::Shutdown(why));
                    control_ok()
                }
                Err(refused) => control_error(&refused.to_string()),
            };
            match to {
                Reply::Rpc(tx) => {
                    let _ = tx.send(reply);
                }
                Reply::Stream(client) => roster.send(
                    client,
                    pb::ServerMessage {
                        body: Some(ServerBody::Control(reply)),
                    },
                ),
            }
        }
    }

    /// `SetSlice` (its range checked when decoded): refused where the
    /// configuration refuses such a slice (exact mode beyond `nic_latency`).
    fn set_slice(&mut self, slice: SliceRatio, opts: &ServeOptions) -> pb::ControlReply {
        if let Some(why) = opts.config.cosim.slice_refused(slice.net) {
            return control_error(&why);
        }
        tracing::info!("slice ratio now {slice} (network:node cycles)");
        self.slice = slice;
        control_ok()
    }
}

pub(super) fn control_ok() -> pb::ControlReply {
    pb::ControlReply {
        ok: true,
        error: String::new(),
        stats_json: String::new(),
    }
}

pub(super) fn control_error(why: &str) -> pb::ControlReply {
    pb::ControlReply {
        ok: false,
        error: why.to_string(),
        stats_json: String::new(),
    }
}
