//! The MPI layer's software costs fitted to what the guests measured
//! (`fsin qemu --calibrate`): for each message size, the
//! sender's and the receiver's cost per message (a
//! [`CostTable`] point) such that the MPI-level replay of `fsin-pingpong`'s
//! round trips and of its stream, on the network they ran on, takes the
//! time the live runs took.
//!
//! A round trip pays both sides' costs twice, one after the other; a
//! stream of messages goes at the pace of the busier side. So, per size
//! (the first size fitted first, as every message pays the table's cost
//! at its first size once; the others then at once, each on a thread of
//! its own, as no size's replays pay another's point): both sides
//! alike are searched for until the replayed round trip is the live one;
//! if the replayed stream is then faster than the live one, the busier
//! side's cost until the stream is the live one and the other's until the
//! round trip is, in turn, up to four times (until a turn finds the same
//! costs again). If the replayed stream is instead slower than the live
//! one, the receiver's cost moves into its tail (paid after the message
//! is whole, [`CostTable::recv_tail_ns`]): both sides alike until the
//! stream is the live one, and the tail until the round trip is, in
//! turn; should the whole receive cost in the tail leave the round trip
//! short, both sides alike until its error and the stream's are opposite
//! and alike. A round trip still long after all of that pays the
//! sender's tail (paid after its last segment has gone, which the reply
//! does not wait for, [`CostTable::send_tail_ns`]) from nothing until the
//! round trip is the live one, at most the whole send cost; kept only if
//! it brings the round trip nearer. Which side is
//! the busier one the live stream tells: when rank 0's sends return at
//! the stream's own pace the sender is, when they return sooner (or the
//! messages reach Open MPI's eager limit) the receiver is. A wake-up cost
//! is searched for against exchanges of several messages at once, and a
//! peer's set-up (`mpi_connect_ns`) against a first contact ([`fit`]).
//! Each search ([`reach`]) is ITP's, a bisection that tries the secant's
//! point first, from where a previous fit found the cost. Every replay is
//! the lowering and network of `fsin run tracefile=` ([`crate::workload`]),
//! with the calibration run's network, slice and node clock, and the live
//! run's round counts.

use fsin_trace::mpi::costs::{CostPoint, CostTable};
use fsin_trace::mpi::read::{MpiProgram, MpiStep};
use fsin_trace::mpi::{Done, MpiOp};

use crate::config::Config;
use crate::run::RunError;

mod search;
use search::reach;

/// What the guests measured at one message size (`fsin-pingpong`'s
/// lines, microseconds of guest time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// The message's size, bytes.
    pub bytes: u64,
    /// Round trips the live run made.
    pub rounds: u32,
    /// Their mean, us.
    pub rtt_us: f64,
    /// Messages of the live stream.
    pub stream_rounds: u32,
    /// The stream's time per message (to the receiver's answer), us.
    pub stream_us: f64,
    /// The stream's time per message until rank 0's last send returned,
    /// us.
    pub stream_send_us: f64,
}

/// One size's fit: the costs found and what the replay gives with them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fitted {
    /// The live figures.
    pub measured: Measured,
    /// The costs per message on each side, ns.
    pub point: CostPoint,
    /// The replayed round trip, us.
    pub replay_rtt_us: f64,
    /// The replayed stream's time per message, us.
    pub replay_stream_us: f64,
}

/// A calibration that cannot be fitted.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// A replay failed (its network or workload).
    #[error("a replay of the calibration failed: {0}")]
    Run(#[from] RunError),
    /// A replay never finished.
    #[error("the replay of {0} could not finish")]
    Stuck(String),
    /// No size was measured, or sizes repeat.
    #[error("no measurement to fit: {0}")]
    Nothing(String),
}

/// The precision of a cost's search, in halvings of its range (a round
/// trip): to within 2^-13 of the round trip, under 0.05% of the busier
/// side's cost, finer than the slice's steps in the replays' times. (It
/// was 18 halvings: the fit then replayed about four times as often, for
/// costs that differ by under 1% and replays of the applications within
/// 0.2 points of each other.)
const STEPS: u32 = 13;

/// How much slower than the live stream the replay's may be, both sides'
/// costs alike, before the fit moves receive cost into the tail (0.5%:
/// the replays' times go in steps of a slice).
const TAIL_MARGIN: f64 = 0.005;

/// The replay of `program` on the network of `cfg` with the cost table
/// `table`: guest seconds to the last rank's end.
fn replay_s(cfg: &Config, table: &CostTable, program: &MpiProgram) -> Result<f64, CalibrateError> {
    let model = fsin_trace::mpi::lower::MpiModel {
        costs: table.clone(),
        ns_per_node_cycle: 1e9 / cfg.cosim.node_clock_hz.max(1) as f64,
        ..cfg.traffic.app.mpi.clone()
    };
    let trace = program
        .lower(&model)
        .map_err(|e| CalibrateError::Stuck(format!("{}: {e}", program.name)))?;
    let r = crate::workload::replay(cfg, trace)?;
    match r.app {
        Some(a) if !a.deadlock => a
            .predicted_s
            .ok_or_else(|| CalibrateError::Stuck(program.name.clone())),
        _ => Err(CalibrateError::Stuck(program.name.clone())),
    }
}

/// [`replay_s`] of a program of `rounds` rounds, us a round.
fn per_round_us(
    cfg: &Config,
    table: &CostTable,
    program: &MpiProgram,
    rounds: u32,
) -> Result<f64, CalibrateError> {
    Ok(replay_s(cfg, table, program)? * 1e6 / f64::from(rounds.max(1)))
}

fn send(dst: u32, bytes: u64, tag: u32) -> MpiStep {
    MpiStep::Call(MpiOp::Send {
        dst,
        tag,
        bytes,
        comm: 1,
        sync: false,
    })
}

fn recv(src: u32, bytes: u64, tag: u32) -> MpiStep {
    MpiStep::Call(MpiOp::Recv {
        src,
        tag,
        bytes,
        comm: 1,
    })
}

/// The completion of request `req` (a receive of `bytes` from `peer`
/// with `tag`, or a send), as an MPI-level trace gives it back.
fn wait(req: u32, recv: Option<(u32, u32, u64)>) -> MpiStep {
    let (peer, tag, bytes) = match recv {
        Some((peer, tag, bytes)) => (Some(peer), Some(tag), bytes),
        None => (None, None, 0),
    };
    MpiStep::Call(MpiOp::wait_of(Done {
        req,
        recv: recv.is_some(),
        peer,
        tag,
        bytes,
    }))
}

fn program(name: String, ranks: [Vec<MpiStep>; 2]) -> MpiProgram {
    MpiProgram {
        name,
        ranks: ranks.to_vec(),
        lines: vec![Vec::new(); 2],
        comms: vec![(1, vec![0, 1])],
        ..MpiProgram::default()
    }
}

/// `fsin-pingpong ROUNDS BYTES`: round trips between ranks 0 and 1.
pub fn ping_pong(bytes: u64, rounds: u32) -> MpiProgram {
    let mut r0 = Vec::new();
    let mut r1 = Vec::new();
    for _ in 0..rounds {
        r0.extend([send(1, bytes, 1), recv(1, bytes, 1)]);
        r1.extend([recv(0, bytes, 1), send(0, bytes, 1)]);
    }
    program(format!("ping-pong of {bytes} bytes"), [r0, r1])
}

/// `fsin-pingpong -s ROUNDS BYTES`: rank 0 sends ROUNDS messages back to
/// back, rank 1 answers the last with an empty one.
pub fn stream(bytes: u64, rounds: u32) -> MpiProgram {
    let mut r0 = vec![send(1, bytes, 1); rounds as usize];
    r0.push(recv(1, 0, 1));
    let mut r1 = vec![recv(0, bytes, 1); rounds as usize];
    r1.push(send(0, 0, 1));
    program(format!("stream of {bytes}-byte messages"), [r0, r1])
}

/// `fsin-pingpong -x K ROUNDS BYTES`: each round both ranks post K
/// receives and K sends to the other at once, then wait for all.
pub fn exchange(k: u32, bytes: u64, rounds: u32) -> MpiProgram {
    let side = |me: u32| {
        let peer = 1 - me;
        let mut ev = Vec::new();
        let mut req = 0;
        for _ in 0..rounds {
            ev.extend((0..k).map(|j| {
                MpiStep::Call(MpiOp::Irecv {
                    src: Some(peer),
                    tag: Some(j),
                    bytes,
                    comm: 1,
                    req: req + j,
                })
            }));
            ev.extend((0..k).map(|j| {
                MpiStep::Call(MpiOp::Isend {
                    dst: peer,
                    tag: j,
                    bytes,
                    comm: 1,
                    sync: false,
                    req: req + k + j,
                })
            }));
            ev.extend((0..k).map(|j| wait(req + j, Some((peer, j, bytes)))));
            ev.extend((0..k).map(|j| wait(req + k + j, None)));
            req += 2 * k;
        }
        ev
    };
    program(
        format!("exchange of {k} x {bytes} bytes"),
        [side(0), side(1)],
    )
}

/// `fsin-pingpong -c ROUNDS`: both ranks compute 200 ms of guest time,
/// then exchange 8 bytes at once, their first messages, and `rounds`
/// times more.
pub fn first_contact(rounds: u32) -> MpiProgram {
    let mut p = exchange(1, 8, rounds + 1);
    for rank in &mut p.ranks {
        rank.insert(
            0,
            MpiStep::Cpu {
                ns: CONTACT_SPIN_NS,
                kernel_ns: 0,
                frames_in: 0,
            },
        );
    }
    p.name = format!("first contact, then {rounds} exchanges");
    p
}

/// The table's points so far and one more.
fn with(table: &CostTable, point: CostPoint) -> CostTable {
    let mut points = table.points().to_vec();
    points.push(point);
    // Sizes come in increasing order ([`fit`] checks): always a table.
    CostTable::new(points).unwrap_or_default()
}

/// The costs one size's fit found, ns: both sides alike, then the busier
/// side's and the other's; where a later fit of nearly the same replays
/// looks first ([`reach`]'s hint).
#[derive(Debug, Clone, Copy)]
struct Found {
    half: f64,
    busy: f64,
    other: f64,
}

/// Fits a cost table to `measured` (module doc) on the network, slice,
/// node clock and wake-up cost (`mpi_wake_ns`) of `cfg`, sizes in
/// increasing order, looking first where `before` (a fit of the same
/// sizes under another wake-up cost, or nothing) found its costs; with
/// what it found. A size's replays pay only its own point and the
/// first size's (every message's cost at the table's first size, and
/// its own size's, which the table gives exactly), so once the first
/// size is fitted the others are fitted at once, on as many threads as
/// rayon has: the same table as one after the other.
///
/// # Errors
/// [`CalibrateError`]: nothing measured, sizes out of order, a replay
/// that fails.
fn fit_table(
    cfg: &Config,
    measured: &[Measured],
    before: &[Found],
) -> Result<(CostTable, Vec<Fitted>, Vec<Found>), CalibrateError> {
    use rayon::prelude::*;
    if measured.is_empty() || measured.windows(2).any(|w| w[0].bytes >= w[1].bytes) {
        return Err(CalibrateError::Nothing(
            "the sizes must be given once each, in increasing order".into(),
        ));
    }
    let first = fit_size(cfg, &measured[0], &CostTable::default(), before.first())?;
    let base = with(&CostTable::default(), first.0.point);
    let rest: Vec<(Fitted, Found)> = (measured[1..].par_iter().enumerate())
        .map(|(k, m)| fit_size(cfg, m, &base, before.get(k + 1)))
        .collect::<Result<_, _>>()?;
    let mut table = CostTable::default();
    let (mut fitted, mut found) = (Vec::new(), Vec::new());
    for (f, h) in std::iter::once(first).chain(rest) {
        table = with(&table, f.point);
        fitted.push(f);
        found.push(h);
    }
    Ok((table, fitted, found))
}

/// One size's fit (module doc) after the points of `table` (the first
/// size's, or none for the first size itself), looking first where
/// `hint` found its costs: its point, with what the replays give under
/// it, and what the searches found.
fn fit_size(
    cfg: &Config,
    m: &Measured,
    table: &CostTable,
    hint: Option<&Found>,
) -> Result<(Fitted, Found), CalibrateError> {
    let pp = ping_pong(m.bytes, m.rounds);
    let st = stream(m.bytes, m.stream_rounds);
    let rtt = |t: &CostTable| per_round_us(cfg, t, &pp, m.rounds);
    let per_msg = |t: &CostTable| per_round_us(cfg, t, &st, m.stream_rounds);
    // The side the stream waits for: the sender when its sends
    // returned at the stream's pace, unless the messages wait for the
    // receiver anyway (from Open MPI's eager limit on, by rendezvous
    // or as the socket's buffer fills): then the receiver.
    let sender_busier =
        m.bytes < cfg.traffic.app.mpi.eager_limit && m.stream_send_us >= 0.9 * m.stream_us;
    let first = table.points().first().copied();
    // The busier side's cost and the other's, ns; neither below its
    // cost at the table's first size, which every message pays once.
    // With a receive tail where given, from the first size's receive
    // cost (which every message pays after it is in) to the whole.
    let (least_send, least_recv) = first.map_or((0, 0), |p| (p.send_ns, p.recv_ns));
    let at_tail = |busy: f64, other: f64, tail: Option<f64>| {
        let (send, recv) = if sender_busier {
            (busy, other)
        } else {
            (other, busy)
        };
        let floor = |v: f64, least: u64| (v.round() as u64).max(least);
        let recv_ns = floor(recv, least_recv);
        let point = CostPoint {
            bytes: m.bytes,
            send_ns: floor(send, least_send),
            recv_ns,
            recv_tail_ns: tail.map(|t| floor(t, least_recv).min(recv_ns)),
            send_tail_ns: None,
        };
        with(table, point)
    };
    let at = |busy: f64, other: f64| at_tail(busy, other, None);
    // A round trip pays both sides twice: each is at most half of it.
    let top = 1e3 * m.rtt_us;
    // Both sides alike first. A stream faster than that is more than
    // the model can give (each message would cost its busier side
    // less than half the pair): they stay alike. Else the busier side
    // from the stream (which hardly depends on the other) and the
    // other from the round trip, in turn.
    let half = reach(0.0, top, hint.map(|h| h.half), m.rtt_us, STEPS, |c| {
        rtt(&at(c, c))
    })?;
    let (mut busy, mut other) = (half, half);
    // The stream both sides alike give, replayed once for both tests.
    let stream_alike = per_msg(&at(half, half))?;
    if stream_alike < m.stream_us {
        let (mut busy_hint, mut other_hint) = (hint.map(|h| h.busy), hint.map(|h| h.other));
        for _ in 0..4 {
            let was = at(busy, other);
            busy = reach(other, top, busy_hint, m.stream_us, STEPS, |c| {
                per_msg(&at(c, other))
            })?;
            other = reach(0.0, busy, other_hint, m.rtt_us, STEPS, |c| {
                rtt(&at(busy, c))
            })?;
            // The same costs again: so would every turn after.
            if at(busy, other) == was {
                break;
            }
            (busy_hint, other_hint) = (Some(busy), Some(other));
        }
    }
    // A stream slower than the live one with both sides alike: the
    // receiver pays more of its cost after the message is whole.
    let mut tail = None;
    let alike = first.is_some() && (busy, other) == (half, half);
    if alike && stream_alike > (1.0 + TAIL_MARGIN) * m.stream_us {
        let (c, t) = fit_tail(m, (least_recv as f64, half), &at_tail, &rtt, &per_msg)?;
        (busy, other, tail) = (c, c, Some(t));
    }
    let mut p = at_tail(busy, other, tail).points()[table.points().len()];
    p.send_tail_ns = fit_send_tail(m, table, p, &rtt)?;
    let table = with(table, p);
    let fitted = Fitted {
        measured: *m,
        point: p,
        replay_rtt_us: rtt(&table)?,
        replay_stream_us: per_msg(&table)?,
    };
    Ok((fitted, Found { half, busy, other }))
}

/// A size's costs, both sides alike, and the receiver's tail, ns, for a
/// stream that both sides alike at `half` (the round trip's fit) give
/// slower than the live one: the live receivers copy the message out
/// once it is whole, which a stream overlaps with the next message and a
/// round trip waits for. Both sides alike until the stream is the live
/// one, and the tail (from `least`, the first size's receive cost) until
/// the round trip is, in turn; should the whole receive cost in the tail
/// leave the round trip short, both alike until its error and the
/// stream's are opposite and alike. `at_tail(busy, other, tail)` is the
/// table with this size's point; `rtt` and `per_msg` replay it.
fn fit_tail(
    m: &Measured,
    (least, half): (f64, f64),
    at_tail: &dyn Fn(f64, f64, Option<f64>) -> CostTable,
    rtt: &dyn Fn(&CostTable) -> Result<f64, CalibrateError>,
    per_msg: &dyn Fn(&CostTable) -> Result<f64, CalibrateError>,
) -> Result<(f64, f64), CalibrateError> {
    let (mut c, mut t) = (half, least);
    for _ in 0..4 {
        let was = at_tail(c, c, Some(t));
        c = reach(least, half, Some(c), m.stream_us, STEPS, |x| {
            per_msg(&at_tail(x, x, Some(t.min(x))))
        })?;
        t = reach(least, c, Some(t.min(c)), m.rtt_us, STEPS, |x| {
            rtt(&at_tail(c, c, Some(x)))
        })?;
        if at_tail(c, c, Some(t)) == was {
            break;
        }
    }
    if rtt(&at_tail(c, c, Some(t)))? < (1.0 - TAIL_MARGIN) * m.rtt_us {
        let error = |x: f64| -> Result<f64, CalibrateError> {
            let p = at_tail(x, x, Some(x));
            Ok((rtt(&p)? - m.rtt_us) / m.rtt_us + (per_msg(&p)? - m.stream_us) / m.stream_us)
        };
        c = reach(c, half, None, 0.0, STEPS, error)?;
        t = c;
    }
    Ok((c, t))
}

/// The sender's tail of `point` (a size's costs fitted otherwise, after
/// `table`'s smaller sizes) that brings its round trip to the live one,
/// if its round trip is long by more than [`TAIL_MARGIN`] and a tail
/// brings it nearer: from nothing to the whole send cost. None for the
/// first size (its cost is what the others' tails are measured from).
fn fit_send_tail(
    m: &Measured,
    table: &CostTable,
    point: CostPoint,
    rtt: &dyn Fn(&CostTable) -> Result<f64, CalibrateError>,
) -> Result<Option<u64>, CalibrateError> {
    let at = |x: f64| {
        let p = CostPoint {
            send_tail_ns: Some((x.round() as u64).min(point.send_ns)),
            ..point
        };
        with(table, p)
    };
    if table.is_empty() {
        return Ok(None);
    }
    let plain = rtt(&with(table, point))?;
    if plain <= (1.0 + TAIL_MARGIN) * m.rtt_us {
        return Ok(None);
    }
    // The round trip grows with the part paid before the segments go.
    let cost = point.send_ns as f64;
    let before = reach(0.0, cost, None, m.rtt_us, STEPS, |y| rtt(&at(cost - y)))?;
    let x = cost - before;
    let t = (x.round() as u64).min(point.send_ns);
    let tailed = rtt(&at(x))?;
    Ok(((tailed - m.rtt_us).abs() < (plain - m.rtt_us).abs()).then_some(t))
}

/// An exchange the guests measured (`fsin-pingpong -x`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exchange {
    /// Messages each way at once.
    pub messages: u32,
    /// Their size, bytes.
    pub bytes: u64,
    /// Rounds the live run made.
    pub rounds: u32,
    /// The live time per round, us.
    pub us_per_round: f64,
}

/// A first contact the guests measured (`fsin-pingpong -c`): both ranks
/// exchange 8 bytes at once, their first messages, then `rounds` times
/// more.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contact {
    /// The first exchange, us.
    pub first_us: f64,
    /// The exchanges after it.
    pub rounds: u32,
    /// Their mean, us.
    pub us: f64,
}

/// A calibration: the costs per size, the wake-up cost and the
/// peer's set-up, with what the replay gives back under them.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The costs per message size and side (`mpi_costs`).
    pub table: CostTable,
    /// The wake-up cost of a rank that waited, ns (`mpi_wake_ns`).
    pub wake_ns: u64,
    /// Each size's fit.
    pub sizes: Vec<Fitted>,
    /// Each exchange, and its replay's us per round.
    pub exchanges: Vec<(Exchange, f64)>,
    /// A rank's set-up of a new peer, ns (`mpi_connect_ns`).
    pub connect_ns: u64,
    /// The event tick the set-up was fitted with, ns
    /// (`mpi_event_tick_ns` of the calibration's configuration).
    pub event_tick_ns: u64,
    /// The kernel's receive of a frame the fit was made with, ns
    /// (`mpi_rx_ns` of the calibration's configuration).
    pub rx_ns: u64,
    /// The kernel's receive of an ARP request the fit was made with, ns
    /// (`mpi_arp_rx_ns` of the calibration's configuration; 0: as
    /// `rx_ns`).
    pub arp_rx_ns: u64,
    /// The NIC's interrupt window the fit was made with, ns
    /// (`mpi_irq_window_ns` of the calibration's configuration).
    pub irq_window_ns: u64,
    /// Whether the fit's replays sent TCP's acknowledgements
    /// (`mpi_tcp_acks` of the calibration's configuration).
    pub tcp_acks: bool,
    /// The first contact, and what its first exchange takes in the replay
    /// beyond the others, us (the live one: `first_us - us`).
    pub contact: Option<(Contact, f64)>,
}

/// What `fsin-pingpong -c`'s ranks compute before their first exchange,
/// ns: 200 ms of guest time, so that each enters it more than an event
/// tick after `MPI_Init`'s last run of its event loop.
const CONTACT_SPIN_NS: u64 = 200_000_000;

/// Halvings of the wake-up cost's range.
const WAKE_STEPS: u32 = 10;

/// `cfg` with the wake-up cost `wake_ns`.
fn waking(cfg: &Config, wake_ns: f64) -> Config {
    let mut c = cfg.clone();
    c.traffic.app.mpi.wake_ns = wake_ns.round() as u64;
    c
}

/// The replay of every exchange of `exchanges` under `table` on `cfg`:
/// us per round each.
fn exchanges_us(
    cfg: &Config,
    table: &CostTable,
    exchanges: &[Exchange],
) -> Result<Vec<f64>, CalibrateError> {
    exchanges
        .iter()
        .map(|x| {
            per_round_us(
                cfg,
                table,
                &exchange(x.messages, x.bytes, x.rounds),
                x.rounds,
            )
        })
        .collect()
}

/// Fits the costs per size (module doc) and the wake-up cost: a rank
/// that waits for a frame pays it, one with messages already in does not,
/// so the round trips (every message waited for) leave the wake-up and
/// the costs per message in a sum, and the exchanges of several messages
/// at once tell them apart: the wake-up is searched for (from 0 to half the
/// smallest round trip) until the exchanges' replays are, on the mean,
/// the live ones, each step fitting the sizes up to the exchanges'
/// largest again; then every size is fitted with it. Without exchanges
/// the wake-up cost is 0. The costs, wake-up and set-up of `cfg` (a
/// profile's, the built-in one's) are not used: the fit finds them.
///
/// # Errors
/// [`CalibrateError`]: nothing measured, sizes out of order, a replay
/// that fails.
pub fn fit(
    cfg: &Config,
    measured: &[Measured],
    exchanges: &[Exchange],
    contact: Option<Contact>,
) -> Result<Calibration, CalibrateError> {
    // From the model without a set-up: the contact's fit measures it.
    let mut cfg = cfg.clone();
    cfg.traffic.app.mpi.connect_ns = 0;
    let cfg = &cfg;
    let largest = exchanges.iter().map(|x| x.bytes).max();
    // What the last fit found: where the next one looks first.
    let mut found = Vec::new();
    let wake_ns = match largest {
        None => 0.0,
        Some(largest) => {
            let small: Vec<Measured> = measured
                .iter()
                .copied()
                .filter(|m| m.bytes <= largest)
                .collect();
            // The replays' mean error, which falls as the wake-up grows.
            let mut error = |w: f64| -> Result<f64, CalibrateError> {
                let c = waking(cfg, w);
                let (table, _, now) = fit_table(&c, &small, &found)?;
                found = now;
                let us = exchanges_us(&c, &table, exchanges)?;
                let sum: f64 = (exchanges.iter().zip(&us))
                    .map(|(x, r)| (r - x.us_per_round) / x.us_per_round)
                    .sum();
                Ok(sum / exchanges.len() as f64)
            };
            let top = measured.iter().map(|m| m.rtt_us).fold(f64::MAX, f64::min) * 500.0;
            // Where the error, falling, reaches 0.
            reach(0.0, top, None, 0.0, WAKE_STEPS, |w| {
                Ok::<_, CalibrateError>(-error(w)?)
            })?
        }
    };
    let mut c = waking(cfg, wake_ns);
    let (table, sizes, _) = fit_table(&c, measured, &found)?;
    let us = exchanges_us(&c, &table, exchanges)?;
    // The set-up: what it adds to the replayed contact program
    // (its first exchange) against what the live first exchange took
    // beyond the others.
    let mut first = None;
    if let Some(k) = contact {
        let p = first_contact(k.rounds);
        let total =
            |c: &Config| -> Result<f64, CalibrateError> { Ok(replay_s(c, &table, &p)? * 1e6) };
        let base = c.clone();
        let connecting = |ns: f64| {
            let mut c = base.clone();
            c.traffic.app.mpi.connect_ns = ns.round() as u64;
            c
        };
        let warm = total(&base)?;
        let extra = k.first_us - k.us;
        let ns = reach(0.0, 1e3 * extra.max(0.0), None, extra, STEPS, |ns| {
            Ok::<_, CalibrateError>(total(&connecting(ns))? - warm)
        })?;
        c = connecting(ns);
        first = Some((k, total(&c)? - warm));
    }
    Ok(Calibration {
        wake_ns: c.traffic.app.mpi.wake_ns,
        connect_ns: c.traffic.app.mpi.connect_ns,
        event_tick_ns: c.traffic.app.mpi.event_tick_ns,
        rx_ns: c.traffic.app.mpi.rx_ns,
        arp_rx_ns: c.traffic.app.mpi.arp_rx_ns,
        irq_window_ns: c.traffic.app.mpi.irq_window_ns,
        tcp_acks: c.traffic.app.mpi.tcp_acks,
        exchanges: exchanges.iter().copied().zip(us).collect(),
        contact: first,
        table,
        sizes,
    })
}

#[cfg(test)]
mod tests;
