//! A run from start to end: check the arguments, find where the guests
//! come from, start them, attach them to the server, drive the slices,
//! save or report.

use std::time::Instant;

use fsin_proto::v1 as pb;
use fsin_qemu_wire::board;
use sync_client::drive::{drive, DriveEnd};
use sync_client::NodeLink;
use tokio::sync::mpsc;

use super::args::{guest_mac, lockstep_clock_hz, Args, Mode};
use super::error::{io, QemuError};
use super::guest_io::{start_guest, GuestEvent};
use super::guests::GuestsState;
use super::launch::{
    board_path, check_image, kernel_file, plugin_path, qmp_socket, run_file, shared_root,
    snapshot_share, RunFiles, WorkDir, SHARED_ROOT_FILE,
};
use super::mpi_in::Collector;
use super::outcome::{
    bench_values, field, AppOutcome, BridgeEvent, BridgeProgress, CheckpointUse, GuestFigures,
    GuestReport, GuestsOutcome, RegionOutcome, StudyFigures, WallSplit,
};
use super::roi::{Region, RegionCheckpoint, Roi};
use super::start::{identity, per_guest, ready_to_save, save_guests, start_of, Start};
use super::tcp::{self, TcpWatch};
use super::timeline_out::GuestTimeline;
use super::timing::{FreeGuests, GuestSet, LockstepGuests};
use super::trace_out;
use crate::checkpoint::{self, SavedRegion};
use fsin_timeline::TimelineError;

/// Runs the guests through the server until it ends the run, handing the
/// guests' milestones to `watch` whenever they change (a guest's NIC up,
/// the cluster up, the command ended; and once after a restore), as
/// `fsin qemu`'s progress line and `nic-bridge --progress-lines` show them.
///
/// # Errors
/// Arguments out of range, QEMU or the image missing, a guest that
/// crashes, stalls its NIC or is killed, or a broken server connection;
/// the guests are stopped first.
///
/// The QEMU processes belong to tasks of the caller's runtime and are
/// killed when it drops them (`kill_on_drop`), on success as on error.
pub async fn run(
    a: &Args,
    watch: &(dyn Fn(BridgeEvent) + Sync),
) -> Result<GuestsOutcome, QemuError> {
    a.check()?;
    check_image(&a.image())?;
    let start = start_of(a, watch)?;
    if let Some(RegionCheckpoint::Save(dir)) = &a.region_checkpoint {
        ready_to_save(a, dir)?;
    }
    let work = WorkDir::new()?;
    let files = run_files(a, &start, &work)?;
    let trace = trace_recorder(a)?;
    let timeline = guest_timeline(a)?;
    let board = slice_board(a, &files)?;
    let mut link = attach(a).await?;
    let mut guests = GuestsState::new(a)?;
    let base_ns = match &start {
        Start::Restore(_, m) => {
            guests.restored(&m.reports);
            watch(BridgeEvent::Progress(BridgeProgress::of(&guests.reports)));
            m.base_ns
        }
        _ => 0,
    };
    let (plugins, rx) = start_guests(a, &work, &files).await?;
    let set = GuestSet {
        a,
        watch,
        guests,
        rx,
        incoming: files.incoming.clone(),
        started: Instant::now(),
        cluster_at: None,
        milestones: BridgeProgress::default(),
        trace,
        timeline,
        mpi: a.mpi_trace.as_ref().map(|_| Collector::default()),
        region: Region::new(a.roi()),
        app_end: None,
        app_end_at: None,
        rounds: 0,
        command_round: None,
        region_round: None,
        measured_from: None,
        tcp: tcp::TcpWatch::default(),
    };
    let Some(board) = board else {
        let mut run = FreeGuests { set };
        let (ended, slices) = drive(&mut link, &mut run, std::future::pending()).await?;
        return ended_outcome(a, ended, run.set, slices, (0, 0, 0), None);
    };
    let mut run = LockstepGuests::new(set, board, plugins, start, base_ns);
    let (ended, slices) = drive(&mut link, &mut run, std::future::pending()).await?;
    let save = match (&ended, &run.start, run.region_save()) {
        (DriveEnd::Left(_), _, Some(dir)) => {
            let (world, waiting) = run.set.region.saved();
            let region = SavedRegion { world, waiting };
            Some((dir.to_path_buf(), Box::new(identity(a)?), Some(region)))
        }
        (DriveEnd::Left(_), Start::Save(dir, id), None) => Some((dir.clone(), id.clone(), None)),
        _ => None,
    };
    if let Some((dir, id, region)) = save {
        let what = match region {
            Some(_) => "the cluster at the region's start",
            None => "the booted cluster",
        };
        watch(BridgeEvent::Saving { dir: dir.clone() });
        let m = save_guests(
            &dir,
            &id,
            work.0.path(),
            run.guest_ns(run.last_end),
            &run.set.guests.reports,
            run.boot_wall_s,
            region,
        )
        .await?;
        let reason = format!(
            "saved {what} in {} ({} MiB in {:.1} s)",
            dir.display(),
            m.bytes >> 20,
            m.save_wall_s
        );
        let used = Some(CheckpointUse::of(&dir, &m, true, m.save_wall_s));
        return Ok(outcome(
            a,
            run.set,
            slices,
            run.overrun,
            used,
            reason,
            false,
        ));
    }
    ended_outcome(a, ended, run.set, slices, run.overrun, run.used)
}

/// The files the guests of `a` boot and read, in the run's directory
/// `work`; guest 0's command file is blank for a boot that saves.
///
/// # Errors
/// `--share` without a shared root in the image, a command too long, a
/// snapshot that fails, a file that cannot be written.
fn run_files(a: &Args, start: &Start, work: &WorkDir) -> Result<RunFiles, QemuError> {
    let mut files = RunFiles {
        kernel: kernel_file(&a.image()),
        root: shared_root(&a.image())?,
        run: None,
        share: None,
        board: board_path(work),
        qmp: (!matches!(start, Start::Boot)).then(|| work.0.path().to_owned()),
        incoming: match start {
            Start::Restore(dir, _) => Some(dir.clone()),
            _ => None,
        },
    };
    if a.guest.share.is_some() && files.root.is_none() {
        return Err(QemuError::Needs {
            option: "--share",
            needs: format!(
                "an image with a shared root ({SHARED_ROOT_FILE}, as in the MPI image); {} has none",
                a.image().display()
            ),
        });
    }
    if let Some(cmd) = a.guest_command() {
        let f = work.0.path().join("run.sh");
        let text = run_file(match start {
            Start::Save(..) => None,
            _ => Some(&cmd),
        })?;
        io(std::fs::write(&f, text), || {
            format!("cannot write {}", f.display())
        })?;
        files.run = Some(f);
    }
    if let Some(dir) = &a.guest.share {
        files.share = Some(snapshot_share(dir, &work.0.path().join("share.erofs"))?);
    }
    Ok(files)
}

/// `--trace-out`'s recorder, if asked.
///
/// # Errors
/// `--trace-out` without lock-step, or a file that cannot be written.
fn trace_recorder(a: &Args) -> Result<Option<trace_out::Recorder>, QemuError> {
    match (&a.trace_out, a.guest.timing) {
        (None, _) => Ok(None),
        (Some(_), Mode::Free) => Err(QemuError::Needs {
            option: "--trace-out",
            needs: "--timing lockstep: free guests have no guest time to trace".into(),
        }),
        (Some(o), Mode::Lockstep) => Ok(Some(io(
            trace_out::Recorder::new(o.clone(), a.guest.guests as usize),
            || format!("cannot write the trace {}", o.path.display()),
        )?)),
    }
}

/// `--timeline`'s recorder, if asked.
///
/// # Errors
/// `--timeline` without lock-step, or a file that cannot be written.
fn guest_timeline(a: &Args) -> Result<Option<GuestTimeline>, QemuError> {
    match (&a.timeline, a.guest.timing) {
        (None, _) => Ok(None),
        (Some(_), Mode::Free) => Err(QemuError::Needs {
            option: "--timeline",
            needs: "--timing lockstep: free guests have no guest time to draw".into(),
        }),
        (Some(o), Mode::Lockstep) => Ok(Some(io(
            GuestTimeline::new(o, a.guest.guests as usize, a.first_node, a.counters.clone())
                .map_err(|e| match e {
                    TimelineError::Io { source, .. } => source,
                    other => std::io::Error::other(other.to_string()),
                }),
            || format!("cannot write the timeline {}", o.path.display()),
        )?)),
    }
}

/// The slice board of a lock-step run (after checking that the plugin is
/// there); `None` for free guests.
///
/// # Errors
/// The plugin missing, or a board that cannot be made.
fn slice_board(a: &Args, files: &RunFiles) -> Result<Option<board::Bridge>, QemuError> {
    if a.guest.timing == Mode::Free {
        return Ok(None);
    }
    plugin_path(a)?;
    let n = a.guest.guests as usize;
    Ok(Some(io(board::Bridge::create(&files.board, n), || {
        format!("cannot make the slice board {}", files.board.display())
    })?))
}

/// Attaches every guest to the server as a node of one client.
///
/// # Errors
/// The server cannot be reached or refuses the nodes.
async fn attach(a: &Args) -> Result<NodeLink, QemuError> {
    let specs = (0..a.guest.guests)
        .map(|i| pb::NodeSpec {
            node_id: Some(a.first_node + i),
            mac: guest_mac(a.first_node + i).to_vec(),
            clock_hz: match a.guest.timing {
                Mode::Lockstep => lockstep_clock_hz(a.guest.icount_shift),
                Mode::Free => 0,
            },
        })
        .collect();
    Ok(match &a.token {
        Some(token) => NodeLink::attach_with_token(&a.server, "nic-bridge", specs, token).await?,
        None => NodeLink::attach(&a.server, "nic-bridge", specs).await?,
    })
}

/// Starts every guest's QEMU and, for a restore, loads each one's
/// migration file; returns where to send each guest's plugin messages and
/// the guests' events.
///
/// # Errors
/// A socket that cannot be had or a QEMU that cannot be started.
async fn start_guests(
    a: &Args,
    work: &WorkDir,
    files: &RunFiles,
) -> Result<
    (
        Vec<mpsc::UnboundedSender<Vec<u8>>>,
        mpsc::UnboundedReceiver<GuestEvent>,
    ),
    QemuError,
> {
    let n = a.guest.guests as usize;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut plugins = Vec::with_capacity(n);
    for i in 0..n {
        let sync = (a.guest.timing == Mode::Lockstep).then_some(work.0.path());
        plugins.push(start_guest(a, i, sync, files, &tx).await?);
    }
    if let Some(dir) = &files.incoming {
        let (work, dir) = (work.0.path().to_owned(), dir.clone());
        let mut loads = per_guest(n, move |i| {
            checkpoint::restore_guest(&qmp_socket(&work, i), &checkpoint::guest_file(&dir, i))
        });
        tokio::spawn(async move {
            while let Some((i, r)) = loads.recv().await {
                if let Err(e) = r {
                    let _ = tx.send(GuestEvent::RestoreFailed(i, e));
                }
            }
        });
    }
    Ok((plugins, rx))
}

/// The report of a run that the server (or a signal) `ended`.
///
/// # Errors
/// A broken server connection.
fn ended_outcome(
    a: &Args,
    ended: DriveEnd,
    set: GuestSet,
    slices: u64,
    overrun: (u64, u64, u64),
    used: Option<CheckpointUse>,
) -> Result<GuestsOutcome, QemuError> {
    let (reason, error) = match ended {
        DriveEnd::Shutdown(s) => (s.reason, s.error),
        DriveEnd::Broken(e) => return Err(e.into()),
        DriveEnd::Interrupted(sig) => (format!("interrupted by {sig}"), true),
        DriveEnd::Left(_) => unreachable!("only a run that saves leaves"),
    };
    Ok(outcome(a, set, slices, overrun, used, reason, error))
}

/// The report of a run of `set` that ended after `slices` slices for
/// `reason` (an error when `error`), with its lock-step overruns (sum,
/// most, count, in node cycles) and the checkpoint it `used`.
pub(super) fn outcome(
    a: &Args,
    set: GuestSet,
    slices: u64,
    overrun: (u64, u64, u64),
    used: Option<CheckpointUse>,
    reason: String,
    error: bool,
) -> GuestsOutcome {
    let GuestSet {
        guests,
        started,
        cluster_at,
        trace,
        mut timeline,
        mpi,
        region,
        app_end,
        app_end_at,
        rounds,
        command_round,
        region_round,
        tcp,
        ..
    } = set;
    // Under --roi command the region is the command; one that never
    // began leaves the whole command to the launch.
    let (began, from_round) = match region.roi {
        Roi::Command => (None, command_round),
        _ => (
            region.began_wall.or(app_end_at.map(|(t, _)| t)),
            region_round,
        ),
    };
    let mut wall = wall_split(
        (started, Instant::now()),
        cluster_at,
        began,
        app_end_at,
        (rounds, from_round),
    );
    // Guest seconds from the region's start to the command's end.
    let tail_s = (region.began_at.zip(app_end)).map(|(f, e)| guest_seconds(a, e.saturating_sub(f)));
    let app = &guests.reports[0].app;
    wall.region_guest_s = match region.roi {
        Roi::Command => app.guest_s,
        _ => tail_s,
    };
    let region = region_outcome(a, region, app, (cluster_at, app_end), tail_s);
    let (trace, reason, error) = match trace.map(|r| (r.path().to_path_buf(), r.finish())) {
        None => (None, reason, error),
        Some((_, Ok(t))) => (Some(t), reason, error),
        Some((path, Err(e))) => (
            None,
            format!("{reason}; cannot write the trace {}: {e}", path.display()),
            true,
        ),
    };
    // The MPI trace: only of a command that ended well (a failed one's
    // ranks never reached MPI_Finalize). Its ranks go into the timeline.
    let ran_well = guests.reports[0].app.exit_code == Some(0);
    let (mpi_trace, reason, error) = match (mpi, &a.mpi_trace) {
        (Some(c), Some(out)) if ran_well => match c.finish(out) {
            Ok(got) => {
                if let Some(t) = timeline.as_mut() {
                    t.ranks(&got.trace, &got.clocks, a.guest.icount_shift);
                }
                (Some(got.outcome), reason, error)
            }
            Err(e) => (None, format!("{reason}; {e}"), true),
        },
        _ => (None, reason, error),
    };
    let (timeline, reason, error) = match timeline.map(GuestTimeline::finish) {
        None => (None, reason, error),
        Some(Ok(w)) => (Some(w), reason, error),
        Some(Err(e)) => (None, format!("{reason}; {e}"), true),
    };
    let app = a.run.as_ref().map(|cmd| AppOutcome {
        command: cmd.clone(),
        ..guests.reports[0].app.clone()
    });
    let figures = guest_figures(a, &guests.reports, overrun, &tcp);
    GuestsOutcome {
        mode: a.guest.timing,
        figures,
        guests: guests.reports,
        slices,
        wall_s: started.elapsed().as_secs_f64(),
        app,
        checkpoint: used,
        trace,
        timeline,
        mpi_trace,
        region,
        wall,
        reason,
        error,
    }
}

/// What the guests measured ([`GuestFigures`]): pings, the benchmark's
/// round trip and all-to-all time from their `FSIN-BENCH` lines, the
/// slices' overruns (`overrun`: sum, largest, count, node cycles) and the
/// TCP segments counted from the frames.
fn guest_figures(
    a: &Args,
    reports: &[GuestReport],
    overrun: (u64, u64, u64),
    tcp: &TcpWatch,
) -> GuestFigures {
    let lockstep = a.guest.timing == Mode::Lockstep;
    let pingpong_rtt_us = bench_values(reports, "pingpong", |f| {
        Some(field(f, "elapsed_us")? / field(f, "rounds")?)
    })
    .reduce(f64::min);
    let a2a_us = bench_values(reports, "a2a", |f| field(f, "elapsed_us")).reduce(f64::max);
    let a2a_cycles = a2a_us
        .filter(|_| lockstep)
        .map(|us| (us * 1000.0) as u64 >> a.guest.icount_shift);
    let pings = reports.iter().flat_map(|g| &g.pings);
    let rtts: Vec<f64> = pings.clone().filter_map(|p| p.rtt_avg_ms).collect();
    GuestFigures {
        ping_sent: pings.clone().map(|p| p.sent).sum(),
        ping_received: pings.map(|p| p.received).sum(),
        rtt_avg_us: (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64 * 1e3),
        pingpong_rtt_us,
        a2a_us,
        a2a_cycles,
        overrun_avg: overrun.0 as f64 / overrun.2.max(1) as f64,
        overrun_max: overrun.1,
        study: StudyFigures {
            tcp_segments: tcp.segments,
            tcp_retransmissions: tcp.retransmissions,
        },
    }
}

/// Where the wall time of a run from `started` to `end` went: the
/// command started at `cluster_at`, the region began at `began`, the
/// command ended at `app_end` (with the round then); `rounds` in all, the
/// region's from its first round.
fn wall_split(
    (started, end): (Instant, Instant),
    cluster_at: Option<Instant>,
    began: Option<Instant>,
    app_end: Option<(Instant, u64)>,
    (rounds, region_round): (u64, Option<u64>),
) -> WallSplit {
    let since = |t: Instant| t.saturating_duration_since(started).as_secs_f64();
    let total = since(end);
    let start_s = cluster_at.map_or(total, since);
    // The region begins with the command under --roi command.
    let region_from = began.map_or(start_s, since).max(start_s);
    let command_end = app_end.map_or(total, |(t, _)| since(t)).max(region_from);
    let region_rounds = match (cluster_at, region_round) {
        (Some(_), Some(from)) => app_end.map_or(rounds, |(_, r)| r).saturating_sub(from),
        _ => 0,
    };
    let region_s = command_end - region_from;
    WallSplit {
        start_s,
        launch_s: region_from - start_s,
        region_s,
        end_s: total - command_end,
        region_rounds,
        region_rounds_per_s: if region_s > 0.0 {
            region_rounds as f64 / region_s
        } else {
            0.0
        },
        ..WallSplit::default()
    }
}

/// Guest seconds of `cycles` node cycles of the guests of `a`.
fn guest_seconds(a: &Args, cycles: u64) -> f64 {
    cycles as f64 / lockstep_clock_hz(a.guest.icount_shift) as f64
}

/// The report of `region` (none under `--roi command`), for a command
/// that ran as `app` from wall time `cluster_at`, ending in the slice that
/// ends at node cycle `app_end`, `tail_s` guest seconds after the region
/// began.
fn region_outcome(
    a: &Args,
    region: Region,
    app: &AppOutcome,
    (cluster_at, app_end): (Option<Instant>, Option<u64>),
    tail_s: Option<f64>,
) -> Option<RegionOutcome> {
    if region.roi == Roi::Command {
        return None;
    }
    let seconds = |cycles: u64| guest_seconds(a, cycles);
    let from = region.began_at;
    let launch_wall_s = cluster_at
        .zip(region.began_wall)
        .map(|(c, b)| b.saturating_duration_since(c).as_secs_f64());
    let (ranks, world) = region.ranks();
    Some(RegionOutcome {
        roi: region.roi,
        began: from.is_some(),
        ranks,
        world,
        from_cycle: from,
        guest_s: from
            .zip(region.ended_at.or(app_end))
            .map(|(f, e)| seconds(e.saturating_sub(f))),
        launch_guest_s: app.guest_s.zip(tail_s).map(|(g, t)| (g - t).max(0.0)),
        launch_wall_s,
        region_wall_s: app.wall_s.zip(launch_wall_s).map(|(w, l)| (w - l).max(0.0)),
        refused: region.refused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_wall_time_splits_at_the_commands_and_regions_marks() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        // Started at 0, the command at 2, the region at 5, the command's
        // end at 9 (round 120), the run's at 10; the region from round 20.
        let w = wall_split(
            (t0, at(10)),
            Some(at(2)),
            Some(at(5)),
            Some((at(9), 120)),
            (130, Some(20)),
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(w.start_s, 2.0) && close(w.launch_s, 3.0), "{w:?}");
        assert!(close(w.region_s, 4.0) && close(w.end_s, 1.0), "{w:?}");
        assert_eq!(w.region_rounds, 100);
        assert!(close(w.region_rounds_per_s, 25.0), "{w:?}");
        // --roi command: the region is the command; a run that never got
        // to a command spends it all starting.
        let c = wall_split(
            (t0, at(10)),
            Some(at(2)),
            None,
            Some((at(9), 120)),
            (130, Some(20)),
        );
        assert!(close(c.launch_s, 0.0) && close(c.region_s, 7.0), "{c:?}");
        let n = wall_split((t0, at(10)), None, None, None, (130, None));
        assert!(close(n.start_s, 10.0) && close(n.region_s, 0.0), "{n:?}");
        assert_eq!((n.region_rounds, n.region_rounds_per_s), (0, 0.0));
    }
}
