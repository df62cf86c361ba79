//! What clients send while a slice runs: each message checked by the
//! roster, each frame admitted by the coupler's NIC queue rule
//! ([`Admission`]), each control request queued for the barrier.

use fsin_proto::v1::node_message::Body as NodeBody;

use super::control::{control_error, Control, Reply};
use super::edge::{shutdown_msg, token_matches, Command, Event};
use super::end::{Cause, End, Malformed};
use super::roster::{Live, Roster};
use crate::coupler::{Admission, Admitted, InFrame, Slice};

/// The frames of the running slice, as admitted.
#[derive(Default)]
pub(super) struct Intake {
    /// Frames for the network, in arrival order.
    pub(super) frames: Vec<InFrame>,
    /// The NIC queues' room, from the coupler at the last barrier.
    pub(super) admission: Admission,
}

/// One slice's inbox: where each event of the slice goes.
pub(super) struct Inbox<'a> {
    /// The run's token (`None`: none needed), for Control RPCs.
    pub(super) token: Option<&'a str>,
    pub(super) control: &'a mut Control,
    pub(super) intake: &'a mut Intake,
    /// The slice running, and its index.
    pub(super) slice: Slice,
    pub(super) k: u64,
}

impl Inbox<'_> {
    /// Takes `ev`; the end of the run if it must end.
    pub(super) fn handle(&mut self, ev: Event, roster: &mut Roster) -> Option<End> {
        match ev {
            Event::Attach { out, .. } => {
                let _ = out.try_send(Ok(shutdown_msg(
                    "the run has started; no more nodes can attach",
                    true,
                )));
                None
            }
            Event::Interrupt(why) => Some(End::Interrupted {
                why,
                attaching: false,
            }),
            Event::Control { req, reply } => {
                if token_matches(self.token, &req.token) {
                    self.control.push(Command::decode(req), Reply::Rpc(reply));
                } else {
                    let _ = reply.send(control_error("wrong or missing token"));
                }
                None
            }
            Event::Closed { client, error } => roster.closed(client, error, self.k),
            Event::Msg { client, body } => {
                let live = roster.live(client)?;
                match self.message(body, live) {
                    Ok(()) => None,
                    Err(why) => {
                        let cause = Cause::Malformed { why, slice: self.k };
                        roster.fault(client, cause, self.k)
                    }
                }
            }
        }
    }

    /// One message of a live client.
    fn message(&mut self, body: NodeBody, mut client: Live<'_>) -> Result<(), Malformed> {
        match body {
            NodeBody::Attach(_) => Err(Malformed::SecondAttach),
            NodeBody::Frame(f) => {
                let seq = client.frame(&f, self.slice, self.k)?;
                match self
                    .intake
                    .admission
                    .admit(f.node, f.node_cycle, seq, f.data)
                {
                    Admitted::Frame(frame) => self.intake.frames.push(frame),
                    Admitted::Dropped => {}
                    Admitted::ClearStats => {
                        tracing::info!("node {}: CLEAR_STATS magic packet", f.node);
                    }
                    Admitted::Magic(other) => tracing::info!(
                        "node {}: magic packet with command {other:?} ignored",
                        f.node
                    ),
                }
                Ok(())
            }
            NodeBody::SliceDone(d) => client.slice_done(d, self.k),
            NodeBody::Control(req) => {
                self.control
                    .push(Command::decode(req), Reply::Stream(client.id()));
                Ok(())
            }
            NodeBody::Detach(d) => {
                client.detach(d.reason);
                Ok(())
            }
        }
    }
}
