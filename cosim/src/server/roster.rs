//! The roster: which clients are attached with which nodes and MACs, what
//! each node reported (its workload's figures, what it waits for), and who
//! has failed. Attach is checked here; so are the node ids, slice numbers
//! and stamps of every message a client sends.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fsin_frames::{mac_for_node, mac_from_bytes, Mac, MacTable, MacText};
use fsin_proto::v1::server_message::Body as ServerBody;
use fsin_proto::v1::{self as pb};

use super::edge::{bounded, shutdown_msg, token_matches, Outbox};
use super::end::{Cause, End, Malformed};
use crate::coupler::Slice;
use crate::report::{Fault, NodeReport};
use crate::{FaultPolicy, ServeOptions};

/// How many waiting nodes the deadlock reason names before "and N more".
const NAMED_WAITING: usize = 4;

/// One attached client (a node simulator process with one or more nodes).
pub(super) struct Attached {
    pub(super) name: String,
    pub(super) nodes: Vec<u32>,
    pub(super) out: Outbox,
    pub(super) live: bool,
    detached: bool,
    /// Last slice it finished.
    pub(super) done: Option<u64>,
    /// Its standing promise (`SliceDone.idle_until`; 0: none).
    pub(super) idle_until: u64,
    /// When it finished its last slice.
    pub(super) done_at: Instant,
    /// Time it spent waiting at barriers.
    pub(super) wait: Duration,
    /// Frames it has sent (their arrival order).
    seq: u64,
}

#[derive(Default)]
struct NodeSlot {
    client: Option<u64>,
    mac: Option<Mac>,
    app: Option<pb::AppReport>,
    lost: bool,
    /// What it waits for, from its client's report until a frame is
    /// delivered to it (`SliceDone.waiting`).
    waiting: Option<String>,
}

/// Clients and nodes of one run.
pub(super) struct Roster {
    pub(super) clients: BTreeMap<u64, Attached>,
    nodes: Vec<NodeSlot>,
    pub(super) faults: Vec<Fault>,
    /// Nodes lost since the last barrier (applied to the coupler there).
    newly_lost: Vec<u32>,
    /// Clients whose stream held `OUTBOX` unread messages when a Continue
    /// was due (faulted at the next barrier).
    pub(super) unread: Vec<u64>,
    on_fault: FaultPolicy,
}

impl Roster {
    /// An empty roster for `nodes` nodes (ids `0..nodes`).
    pub(super) fn new(nodes: usize, on_fault: FaultPolicy) -> Roster {
        Roster {
            clients: BTreeMap::new(),
            nodes: (0..nodes).map(|_| NodeSlot::default()).collect(),
            faults: Vec::new(),
            newly_lost: Vec::new(),
            unread: Vec::new(),
            on_fault,
        }
    }

    /// Nodes of the run.
    pub(super) fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Ids of the nodes no client has taken yet, ascending.
    pub(super) fn missing(&self) -> Vec<usize> {
        (self.nodes.iter().enumerate())
            .filter(|(_, n)| n.client.is_none())
            .map(|(i, _)| i)
            .collect()
    }

    /// Checks `a` from `client` (protocol version, token, node ids, clocks,
    /// MACs) and takes its nodes, or refuses it with a Shutdown naming why.
    pub(super) fn attach(&mut self, client: u64, a: pb::Attach, out: Outbox, opts: &ServeOptions) {
        let name = if a.client_name.is_empty() {
            format!("client {client}")
        } else {
            bounded(a.client_name.clone())
        };
        let refuse = |why: String| {
            tracing::warn!("{name}: attach refused: {why}");
            let _ = out.try_send(Ok(shutdown_msg(&format!("attach refused: {why}"), true)));
        };
        if a.protocol_version != fsin_proto::PROTOCOL_VERSION {
            return refuse(format!(
                "protocol version {} (this server speaks {})",
                a.protocol_version,
                fsin_proto::PROTOCOL_VERSION
            ));
        }
        if !token_matches(opts.token.as_deref(), &a.token) {
            return refuse(
                "wrong or missing token (fsin serve --token; clients read FSIN_TOKEN)".into(),
            );
        }
        if a.nodes.is_empty() {
            return refuse("no nodes in Attach".into());
        }
        let mut taken: Vec<u32> = Vec::new();
        let mut macs: Vec<Mac> = Vec::new();
        for spec in &a.nodes {
            if spec.clock_hz != 0 && spec.clock_hz != opts.config.cosim.node_clock_hz {
                return refuse(format!(
                    "node clock {} Hz differs from the server's node_clock={} Hz",
                    spec.clock_hz, opts.config.cosim.node_clock_hz
                ));
            }
            let free = |id: u32, taken: &[u32]| {
                (id as usize) < self.nodes.len()
                    && self.nodes[id as usize].client.is_none()
                    && !taken.contains(&id)
            };
            let id = match spec.node_id {
                Some(id) if free(id, &taken) => id,
                Some(id) if id as usize >= self.nodes.len() => {
                    return refuse(format!(
                        "node id {id} is beyond the run's {} nodes",
                        self.nodes.len()
                    ))
                }
                Some(id) => return refuse(format!("node id {id} is already attached")),
                None => match (0..self.nodes.len() as u32).find(|&i| free(i, &taken)) {
                    Some(id) => id,
                    None => return refuse("every node id is already attached".into()),
                },
            };
            let mac = if spec.mac.is_empty() {
                mac_for_node(id)
            } else {
                match mac_from_bytes(&spec.mac) {
                    Ok(m) if !fsin_frames::is_group(&m) => m,
                    Ok(m) => return refuse(format!("MAC {} is a group address", MacText(m))),
                    Err(e) => return refuse(e.to_string()),
                }
            };
            let dup = self.nodes.iter().any(|n| n.mac == Some(mac)) || macs.contains(&mac);
            if dup {
                return refuse(format!("MAC {} is already in use", MacText(mac)));
            }
            taken.push(id);
            macs.push(mac);
        }
        for (&id, &mac) in taken.iter().zip(&macs) {
            self.nodes[id as usize] = NodeSlot {
                client: Some(client),
                mac: Some(mac),
                ..NodeSlot::default()
            };
        }
        tracing::info!("{name} attached with nodes {taken:?}");
        self.clients.insert(
            client,
            Attached {
                name,
                nodes: taken,
                out,
                live: true,
                detached: false,
                done: None,
                done_at: Instant::now(),
                wait: Duration::ZERO,
                seq: 0,
                idle_until: 0,
            },
        );
    }

    /// `client` left before the run started: its nodes are free again.
    pub(super) fn left_early(&mut self, client: u64, error: Option<String>) {
        if let Some(c) = self.clients.remove(&client) {
            tracing::warn!(
                "{} left before the run started ({}); its nodes are free again",
                c.name,
                error.unwrap_or_else(|| "stream closed".into())
            );
            for n in c.nodes {
                self.nodes[n as usize] = NodeSlot::default();
            }
        }
    }

    /// Sends `client` a Shutdown naming `why` and frees its nodes (before
    /// the run started).
    pub(super) fn reject(&mut self, client: u64, why: &str) {
        if let Some(c) = self.clients.remove(&client) {
            let _ = c.out.try_send(Ok(shutdown_msg(why, true)));
            for n in c.nodes {
                self.nodes[n as usize] = NodeSlot::default();
            }
        }
    }

    /// The node id / MAC map of a fully attached run.
    pub(super) fn mac_table(&self) -> MacTable {
        let mut table = MacTable::new(self.nodes.len());
        for (id, n) in self.nodes.iter().enumerate() {
            let mac = n.mac.expect("every node attached");
            table
                .insert(id as u32, mac)
                .expect("MACs checked at attach");
        }
        table
    }

    /// Logs the node id / MAC map and sends every client its Welcome,
    /// filled in by `offer` (the fast paths).
    pub(super) fn welcome(
        &self,
        mut welcome: pb::Welcome,
        mut offer: impl FnMut(u64, &mut pb::Welcome),
    ) {
        let all: Vec<pb::NodeAssignment> = (self.nodes.iter().enumerate())
            .map(|(i, n)| pb::NodeAssignment {
                node_id: i as u32,
                mac: n.mac.expect("attached").to_vec(),
            })
            .collect();
        tracing::info!("node id / MAC map:");
        for (i, n) in self.nodes.iter().enumerate() {
            let c = &self.clients[&n.client.expect("attached")];
            tracing::info!(
                "  node {i:>4}  {}  {}",
                MacText(n.mac.expect("attached")),
                c.name
            );
        }
        welcome.all_nodes.clone_from(&all);
        for (&id, c) in &self.clients {
            welcome.nodes = c.nodes.iter().map(|&i| all[i as usize].clone()).collect();
            let mut mine = welcome.clone();
            offer(id, &mut mine);
            let _ = c.out.try_send(Ok(pb::ServerMessage {
                body: Some(ServerBody::Welcome(mine)),
            }));
        }
    }

    /// Whether `client` is attached and has not left or failed.
    pub(super) fn is_live(&self, client: u64) -> bool {
        self.clients.get(&client).is_some_and(|c| c.live)
    }

    /// The roster as seen by `client`'s messages; `None` unless the client
    /// is live (a late message of a client that left is ignored).
    pub(super) fn live(&mut self, client: u64) -> Option<Live<'_>> {
        self.is_live(client).then_some(Live {
            roster: self,
            client,
        })
    }

    /// Ids of the live clients, ascending.
    pub(super) fn live_ids(&self) -> Vec<u64> {
        (self.clients.iter())
            .filter(|(_, c)| c.live)
            .map(|(&id, _)| id)
            .collect()
    }

    /// Records a fault of `client` during slice `slice`; the end of the
    /// run if the policy is to stop.
    pub(super) fn fault(&mut self, client: u64, cause: Cause, slice: u64) -> Option<End> {
        let c = self.clients.get_mut(&client)?;
        let reason = cause.to_string();
        tracing::error!("{} (nodes {:?}): {reason}", c.name, c.nodes);
        c.live = false;
        let _ = c.out.try_send(Ok(shutdown_msg(&reason, true)));
        self.faults.push(Fault {
            client: c.name.clone(),
            nodes: c.nodes.clone(),
            slice,
            reason: reason.clone(),
        });
        for &n in &c.nodes {
            self.nodes[n as usize].lost = true;
        }
        self.newly_lost.extend(c.nodes.iter().copied());
        match self.on_fault {
            FaultPolicy::Stop => Some(End::Fault {
                client: c.name.clone(),
                cause: reason,
            }),
            FaultPolicy::Continue => None,
        }
    }

    /// The closed stream of `client`, a fault unless it detached first.
    pub(super) fn closed(&mut self, client: u64, error: Option<String>, slice: u64) -> Option<End> {
        let c = self.clients.get(&client)?;
        if c.detached || !c.live {
            return None;
        }
        let cause = error.map_or(Cause::Disconnected, Cause::Broken);
        self.fault(client, cause, slice)
    }

    /// A client finished slice `k` on a fast path, at `at`.
    pub(super) fn done_quietly(&mut self, client: u64, k: u64, at: Instant) {
        if let Some(c) = self.clients.get_mut(&client).filter(|c| c.live) {
            c.done = Some(k);
            c.done_at = at;
        }
    }

    /// Nodes lost since the last call.
    pub(super) fn take_lost(&mut self) -> std::vec::Drain<'_, u32> {
        self.newly_lost.drain(..)
    }

    /// Whether every node has finished its workload or is lost.
    pub(super) fn all_finished(&self) -> bool {
        self.nodes.iter().all(|n| n.lost || n.app.is_some())
    }

    /// A frame reaches `node`: it no longer waits, and its client's idle
    /// promise is void. Its client, if it has one.
    pub(super) fn delivered(&mut self, node: u32) -> Option<u64> {
        let slot = &mut self.nodes[node as usize];
        slot.waiting = None;
        let c = slot.client?;
        if let Some(client) = self.clients.get_mut(&c) {
            client.idle_until = 0;
        }
        Some(c)
    }

    /// The deadlock, when every node that has not finished reported what
    /// it waits for (the caller checks that no frame is in flight).
    pub(super) fn deadlock(&self) -> Option<End> {
        let mut waiting = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !n.lost && n.app.is_none() {
                waiting.push(format!("node {i} waits for {}", n.waiting.as_deref()?));
            }
        }
        if waiting.is_empty() {
            return None;
        }
        let more = waiting.len().saturating_sub(NAMED_WAITING);
        waiting.truncate(waiting.len() - more);
        Some(End::Deadlock { waiting, more })
    }

    /// Sends `msg` to `client`'s stream, if it is still attached.
    pub(super) fn send(&self, client: u64, msg: pb::ServerMessage) {
        if let Some(c) = self.clients.get(&client) {
            let _ = c.out.try_send(Ok(msg));
        }
    }

    /// Tells every live client that the run ends.
    pub(super) fn broadcast_shutdown(&self, reason: &str, error: bool) {
        for c in self.clients.values().filter(|c| c.live) {
            let _ = c.out.try_send(Ok(shutdown_msg(reason, error)));
        }
    }

    /// Every node's part of the report that the roster knows (MAC, client,
    /// barrier wait, workload figures, lost, what it waits for).
    pub(super) fn node_reports(&self) -> Vec<NodeReport> {
        (self.nodes.iter().enumerate())
            .map(|(i, n)| {
                let c = n.client.and_then(|c| self.clients.get(&c));
                let app = n.app.unwrap_or_default();
                NodeReport {
                    node: i as u32,
                    mac: n.mac.map(|m| MacText(m).to_string()).unwrap_or_default(),
                    client: c.map(|c| c.name.clone()).unwrap_or_default(),
                    barrier_wait_s: c.map_or(0.0, |c| c.wait.as_secs_f64()),
                    app_done_cycle: n.app.as_ref().map(|a| a.done_cycle),
                    app_messages: app.messages,
                    app_latency_avg: app.latency_avg,
                    app_latency_max: app.latency_max,
                    app_corrupt: app.corrupt,
                    lost: n.lost,
                    waiting_for: n.waiting.clone().filter(|_| n.app.is_none()),
                    ..NodeReport::default()
                }
            })
            .collect()
    }

    /// The workload reports of the nodes that finished.
    pub(super) fn apps(&self) -> impl Iterator<Item = &pb::AppReport> {
        self.nodes.iter().filter_map(|n| n.app.as_ref())
    }
}

/// The roster as one live client's messages see it (made by
/// [`Roster::live`]).
pub(super) struct Live<'r> {
    roster: &'r mut Roster,
    client: u64,
}

impl Live<'_> {
    /// The client's id.
    pub(super) fn id(&self) -> u64 {
        self.client
    }

    /// The client itself: [`Roster::live`] made this view for a client
    /// in the roster and live, and nothing removes clients while it lasts.
    fn client(&mut self) -> &mut Attached {
        (self.roster.clients.get_mut(&self.client)).expect("Roster::live checked the client")
    }

    /// Checks a frame from the client during `slice` (index `k`): its
    /// node is the client's, its stamp inside the slice, and the client
    /// has not ended the slice. Gives its arrival order among the
    /// client's frames.
    pub(super) fn frame(&mut self, f: &pb::Frame, slice: Slice, k: u64) -> Result<u64, Malformed> {
        let c = self.client();
        if c.done == Some(k) {
            return Err(Malformed::FrameAfterDone(k));
        }
        if !c.nodes.contains(&f.node) {
            return Err(Malformed::ForeignFrame {
                node: f.node,
                owns: c.nodes.clone(),
            });
        }
        let end = slice.node_start + slice.node_cycles;
        if !(slice.node_start..end).contains(&f.node_cycle) {
            return Err(Malformed::OutsideSlice {
                stamp: f.node_cycle,
                slice: k,
                start: slice.node_start,
                end,
            });
        }
        c.seq += 1;
        Ok(c.seq)
    }

    /// `SliceDone(d.slice)` from the client while slice `k` runs: the
    /// client is done with it, and its nodes' reports are kept.
    pub(super) fn slice_done(&mut self, d: pb::SliceDone, k: u64) -> Result<(), Malformed> {
        let c = self.client();
        if d.slice != k || c.done == Some(k) {
            return Err(Malformed::WrongSliceDone {
                got: d.slice,
                slice: k,
                again: c.done == Some(k),
            });
        }
        let reports = d.finished.iter().map(|r| (r.node, "a workload report"));
        let waits = d.waiting.iter().map(|w| (w.node, "a waiting report"));
        if let Some((node, what)) = reports.chain(waits).find(|(n, _)| !c.nodes.contains(n)) {
            return Err(Malformed::ForeignReport { what, node });
        }
        c.done = Some(k);
        c.done_at = Instant::now();
        c.idle_until = d.idle_until;
        for r in d.finished {
            self.roster.nodes[r.node as usize].app = Some(r);
        }
        for w in d.waiting {
            self.roster.nodes[w.node as usize].waiting = Some(bounded(w.reason));
        }
        Ok(())
    }

    /// The client detached: its nodes leave the run (not a fault).
    pub(super) fn detach(&mut self, reason: String) {
        let c = self.client();
        tracing::info!("{} detached: {}", c.name, bounded(reason));
        c.detached = true;
        c.live = false;
        let nodes = c.nodes.clone();
        self.roster.newly_lost.extend(nodes);
    }
}
