//! `fsin qemu --vary`: a study of an application over the values of one
//! key (network settings, `slice`, `mode`), each value run `--repeat`
//! times from one booted cluster, with the exact-mode reference of a slice
//! study and the trace-driven predictions of `--predict`; resumable from
//! `--out`.

use super::*;
use crate::cosim_cli::parse_slice;
use fsin::config::Setting;
use fsin::config::SliceRatio;
use point::{SavedPoint, StudyPoint};

#[cfg(test)]
mod fuzz;
pub(super) mod plots;
mod point;

/// One run of a study: its value, repeat and seed, and the settings and
/// command it runs with.
struct StudyRun {
    value: String,
    /// The synchronisation it runs with (`--modes`, `--mode`, exact for
    /// the reference).
    mode: SyncMode,
    repeat: u32,
    seed: u64,
    reference: bool,
    cosim: CosimArgs,
    command: String,
    /// Guest seconds the seed's start delay adds to the command's time.
    delay_s: f64,
}

impl StudyRun {
    /// Whether `p` (a point read back from `point.json`) says it is this
    /// run's, of the study of `key`: an edited file whose identity still
    /// matches is not taken for another run's point.
    fn made(&self, key: &str, p: &StudyPoint) -> bool {
        p.key == key
            && p.value == self.value
            && p.repeat == self.repeat
            && p.seed == self.seed
            && p.reference == self.reference
            && p.mode == self.mode.to_string()
    }

    /// This run's point of the study of `key`, from its report `r`.
    fn point(
        &self,
        key: &str,
        r: &fsin_cosim::session::SessionReport<super::guests::GuestsReport>,
    ) -> StudyPoint {
        StudyPoint {
            repeat: self.repeat,
            seed: self.seed,
            reference: self.reference,
            mode: self.mode.to_string(),
            ..StudyPoint::of(key, &self.value, r, self.delay_s)
        }
    }
}

/// The identity of `run` of the guests of `a`: its settings, the guests',
/// the image's stamp and this binary's size and time.
fn run_identity(a: &QemuArgs, key: &str, run: &StudyRun) -> String {
    let image = a.guest.image_dir(true);
    let stamp = std::fs::read_to_string(image.join("image.stamp")).unwrap_or_default();
    let exe = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| format!("{} {:?}", m.len(), m.modified().ok()))
        .unwrap_or_default();
    let c = &run.cosim;
    // The region the run measures, not whether --roi was given, so that a
    // change of the default cannot mix runs of two regions.
    let mut guest = a.guest.clone();
    guest.roi = Some(guest.roi_for(Some(&run.command)));
    format!(
        "{key}={} repeat={} seed={} reference={} settings={:?} changes={:?} slice={:?} mode={:?} command={:?} predict={:?} guests={:?} image={} stamp={} exe={exe}",
        run.value,
        run.repeat,
        run.seed,
        run.reference,
        c.settings,
        c.changes,
        c.slice,
        c.mode,
        run.command,
        a.predict,
        guest,
        image.display(),
        stamp.trim()
    )
}

/// Whether a saved run of identity `saved` stands for the run of
/// identity `now`: the same, or with `reuse_runs` the same but for the
/// `fsin` binary (the identity's last part).
fn same_run(saved: &str, now: &str, reuse_runs: bool) -> bool {
    fn settings(id: &str) -> &str {
        id.rsplit_once(" exe=").map_or(id, |(s, _)| s)
    }
    saved == now || (reuse_runs && settings(saved) == settings(now))
}

/// The trace-driven prediction of the application's time (guest seconds)
/// on the network of `cosim`: the replay of the frame or MPI-level trace
/// `trace`.
fn predict(a: &QemuArgs, cosim: &CosimArgs, trace: &std::path::Path) -> anyhow::Result<f64> {
    let mut cfg = guests_config(a, cosim)?;
    cfg.traffic.app.tracefiles = vec![trace.to_path_buf()];
    let r = fsin::sim::run(&cfg, fsin::run::RunOptions::default())
        .with_context(|| format!("cannot replay {}", trace.display()))?;
    let app = r.app.context("the replay ran no application")?;
    if app.deadlock {
        anyhow::bail!("the replay of {} cannot finish", trace.display());
    }
    app.predicted_s.context("the replay gave no prediction")
}

/// Whether every one of `slices` keeps one ratio of network to node
/// cycles, as Table 1's slices do: then the finest one in exact mode is
/// every value's reference. Slices of other ratios change the network's
/// speed against the nodes' (links 10 times faster:
/// `200:10000,2000:10000`), and no one run is their common reference.
fn one_ratio(slices: &[SliceRatio]) -> bool {
    slices.windows(2).all(|w| {
        u128::from(w[0].net) * u128::from(w[1].node) == u128::from(w[1].net) * u128::from(w[0].node)
    })
}

/// Says why a study stops after `done` of its `total` runs, and how to
/// resume it.
fn say_stopped(why: &str, done: usize, total: usize) {
    eprintln!(
        "fsin qemu --vary: {why}; the study stops after {done} of {total} runs (run it again with the same --out to resume)"
    );
}

/// The runs of a study of `key` over `values` running `command`: each
/// value in each of `--modes` (or the one mode), `--repeat` times, and a
/// slice study's exact reference. Every run is checked here, before
/// anything boots: a bad value names itself instead of failing after the
/// runs before it.
fn plan(
    a: &QemuArgs,
    key: &str,
    values: &[String],
    command: &str,
) -> anyhow::Result<Vec<StudyRun>> {
    let base_seed = guests_config(a, &a.cosim)?.net.rseed;
    // A slice study's values, parsed once (a bad one named before
    // anything boots).
    let slices: Option<Vec<SliceRatio>> = (key == "slice")
        .then(|| {
            (values.iter())
                .map(|v| parse_slice("--vary", v))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let with = |k: usize,
                mode: Option<SyncMode>,
                repeat: u32,
                reference: bool|
     -> anyhow::Result<StudyRun> {
        let v = values[k].as_str();
        let slice = slices.as_ref().map(|s| s[k]);
        let mut cosim = a.cosim.clone();
        cosim.out = None;
        cosim.json = false;
        if mode.is_some() {
            cosim.mode = mode;
        }
        if let Some(slice) = slice {
            cosim.slice = Some(slice);
        } else {
            cosim.changes.push(Setting::Key {
                key: key.to_string(),
                value: v.to_string(),
            });
        }
        let seed = base_seed + u64::from(repeat);
        let (mut command, mut delay_s) = (command.to_string(), 0.0);
        if a.repeat > 1 {
            cosim.changes.push(Setting::Rseed(seed));
            // The guests' start, shifted within a 4 ms timer period; with
            // --roi mpi|marker every run restores one checkpoint at the
            // region's start, and the seed spreads the ranks' go instead.
            if a.guest.roi_for(Some(&command)) == Roi::Command {
                let us = seed.wrapping_mul(2_654_435_761) % 4_000;
                delay_s = us as f64 * 1e-6;
                command = format!("sleep {delay_s:.6}\n{command}");
            }
        }
        if let (true, Some(slice)) = (reference, slice) {
            let latency = guests_config(a, &cosim)?.cosim.nic_latency.max(slice.net);
            cosim.mode = Some(SyncMode::Exact);
            cosim.changes.push(Setting::NicLatency(latency));
        }
        config(&cosim, &[])?;
        Ok(StudyRun {
            value: v.to_string(),
            mode: guests_config(a, &cosim)?.cosim.sync_mode,
            repeat,
            seed,
            reference,
            cosim,
            command,
            delay_s,
        })
    };
    let modes: Vec<Option<SyncMode>> = if a.modes.is_empty() {
        vec![None]
    } else {
        a.modes.iter().copied().map(Some).collect()
    };
    let mut runs = Vec::new();
    for k in 0..values.len() {
        for &m in &modes {
            for r in 0..a.repeat {
                runs.push(with(k, m, r, false)?);
            }
        }
    }
    if let Some(slices) = &slices {
        if a.guest.timing == qemu_adapter::qemu::Mode::Lockstep && one_ratio(slices) {
            // The reference: exact mode at the finest slice of the study.
            let finest = (0..slices.len())
                .min_by_key(|&k| slices[k].net)
                .unwrap_or(0);
            runs.push(with(finest, None, 0, true)?);
        }
    }
    Ok(runs)
}

/// The study's summary of `points` (every run of `key`, the reference
/// marked): study.csv, study.json, study.svg, runs.csv and tradeoff.svg in
/// --out, and the table (or with --json the object) on stdout.
fn write_summary(a: &QemuArgs, key: &str, points: &[StudyPoint]) -> anyhow::Result<()> {
    let rows = point::summarise(points);
    let summary_csv = point::summary_csv(&rows);
    // study.csv's columns in its order, for readers of the JSON (a
    // table's columns; the rows' keys come sorted).
    let columns: Vec<&str> = summary_csv
        .lines()
        .next()
        .unwrap_or("")
        .split(',')
        .collect();
    // study.json and --json: one object, the runs under `points`.
    let study = json!({ "vary": key, "columns": columns, "summary": rows, "points": points });
    if let Some(dir) = &a.cosim.out {
        write_study(dir, "study", &summary_csv, &study, plots::fig4_svg(&rows))?;
        std::fs::write(dir.join("runs.csv"), point::csv(points))
            .with_context(|| format!("cannot write runs.csv in {}", dir.display()))?;
        crate::cosim_cli::write_tradeoff(dir, &point::tradeoff(&rows))?;
    }
    if a.cosim.json {
        println!("{study}");
    } else {
        print!("{}", point::summary_table(&rows));
    }
    Ok(())
}

/// The checkpoint every run of a study starts from: `--checkpoint`, or
/// in lock-step (the guests boot once) DIR/checkpoint with `--out`, so
/// that a resumed study restores it, else a temporary one, removed when
/// the second value is dropped. None for studies that boot every run.
fn study_checkpoint(a: &QemuArgs) -> anyhow::Result<(Option<PathBuf>, Option<tempfile::TempDir>)> {
    let lockstep = a.guest.timing == qemu_adapter::qemu::Mode::Lockstep;
    if let Some(c) = &a.checkpoint {
        return Ok((Some(c.clone()), None));
    }
    if !lockstep {
        return Ok((None, None));
    }
    if let Some(d) = &a.cosim.out {
        return Ok((Some(d.join("checkpoint")), None));
    }
    // A directory of its own (a random name, created exclusively): one
    // that a study killed outright left under a reused PID holds another
    // study's guests.
    let prefix = format!("fsin-checkpoint-{}-", std::process::id());
    let t = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir()
        .with_context(|| {
            format!(
                "cannot create {}*",
                std::env::temp_dir().join(&prefix).display()
            )
        })?;
    Ok((Some(t.path().to_owned()), Some(t)))
}

/// A run as the study's progress lines name it: `key=value`, its mode
/// with `--modes`, its repeat and seed with `--repeat`, or the exact
/// reference.
fn describe(a: &QemuArgs, key: &str, run: &StudyRun) -> String {
    let in_mode = if a.modes.is_empty() {
        String::new()
    } else {
        format!(" in {} mode", run.mode)
    };
    if run.reference {
        format!("{key}={} in exact mode (the reference)", run.value)
    } else if a.repeat > 1 {
        format!(
            "{key}={}{in_mode} run {} (seed {})",
            run.value,
            run.repeat + 1,
            run.seed
        )
    } else {
        format!("{key}={}{in_mode}", run.value)
    }
}

/// Writes a run's report into its directory `d` (`run-K/report.json`)
/// and, for a run that finished, its point (`point.json`): written last,
/// and whole, so that a run cut off or failed leaves none and a resumed
/// study runs it again.
fn save_run(
    d: &std::path::Path,
    r: &SessionReport<GuestsReport>,
    done: Option<&SavedPoint>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    std::fs::write(
        d.join("report.json"),
        serde_json::to_string_pretty(&r.json()?)?,
    )?;
    let path = d.join("point.json");
    match done {
        Some(saved) => {
            let tmp = d.join("point.json.tmp");
            std::fs::write(&tmp, serde_json::to_string_pretty(saved)?)?;
            std::fs::rename(&tmp, &path)?;
        }
        // An earlier run's point (other settings) does not stay beside
        // this run's report.
        None => match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", path.display()));
            }
            _ => {}
        },
    }
    Ok(())
}

/// The predictions, from the first run's traces (`points[k]` is
/// `runs[k]`); a replay takes seconds, so a resumed study replays again.
/// An MPI trace holds the ranks from `MPI_Init` to `MPI_Finalize`: the
/// traced run's launch and end come on top, as measured.
fn add_predictions(
    a: &QemuArgs,
    runs: &[StudyRun],
    points: &mut [StudyPoint],
    frames_file: Option<&std::path::Path>,
    mpi_file: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let untraced_s = points
        .first()
        .and_then(|p| Some(p.guest_s? - p.traced_mpi_s?))
        .unwrap_or(0.0);
    for (run, p) in runs.iter().zip(points.iter_mut()) {
        if run.reference || p.fault.is_some() {
            continue;
        }
        if let Some(t) = frames_file.filter(|t| t.is_file()) {
            p.predicted_s = Some(predict(a, &run.cosim, t)?);
        }
        if let Some(t) = mpi_file.filter(|t| t.is_file()) {
            p.predicted_mpi_s = Some(predict(a, &run.cosim, t)? + untraced_s);
        }
    }
    Ok(())
}

/// `fsin qemu --vary`: the application once per value (times `--repeat`),
/// and in a slice study once more in exact mode as the reference.
pub(super) fn study(a: &QemuArgs, vary: &str, command: &str) -> anyhow::Result<()> {
    let fsin::sweep::Vary { key, values } =
        fsin::sweep::parse_vary(vary).map_err(|e| crate::args::option_error("--vary", vary, &e))?;
    let runs = plan(a, &key, &values, command)?;
    let (checkpoint, _temporary) = study_checkpoint(a)?;
    let checkpoint = checkpoint.as_deref();
    for d in checkpoint.into_iter().chain(a.cosim.out.as_deref()) {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let (frames_file, mpi_file) = prediction_traces(a);
    let trace_files: Vec<&std::path::PathBuf> = frames_file.iter().chain(&mpi_file).collect();
    let mut points = Vec::new();
    let total = runs.len();
    let mut stopped = false;
    let mut failures = 0;
    for (k, run) in runs.iter().enumerate() {
        let what = describe(a, &key, run);
        let point_dir = a.cosim.out.as_ref().map(|d| d.join(format!("run-{k}")));
        let identity = run_identity(a, &key, run);
        let saved = point_dir
            .as_deref()
            .and_then(|d| saved_point(a, d, &identity, &key, run));
        let tracing_this = k == 0
            && !trace_files.is_empty()
            && (saved.is_none() || trace_files.iter().any(|t| !t.is_file()));
        if let (Some(s), false) = (saved, tracing_this) {
            eprintln!(
                "fsin qemu --vary: {what} ({}/{total}): done before, in run-{k}",
                k + 1
            );
            points.push(s.point);
            continue;
        }
        if let Some(name) = sync_client::signals::requested() {
            say_stopped(&format!("interrupted by {name}"), k, total);
            stopped = true;
            break;
        }
        eprintln!("fsin qemu --vary: {what} ({}/{total})", k + 1);
        let label = format!("fsin qemu ({what}, {}/{total})", k + 1);
        let traces = Traces {
            frames: frames_file.clone().filter(|_| k == 0),
            mpi: mpi_file.clone().filter(|_| k == 0),
            pin: a.predict.is_some_and(Predict::mpi),
        };
        let r = run_from(
            a,
            &run.cosim,
            Some(&run.command),
            label,
            checkpoint,
            &traces,
        )?;
        let point = run.point(&key, &r);
        let interrupted = r.run.end_reason.starts_with("interrupted by");
        let failed = !interrupted && (point.fault.is_some() || !r.run.ok);
        if interrupted || failed {
            // Not the whole run's traces: none to predict from.
            for t in traces.frames.iter().chain(&traces.mpi) {
                let _ = std::fs::remove_file(t);
            }
        }
        if let Some(d) = &point_dir {
            let done = (!interrupted && !failed).then(|| SavedPoint {
                identity,
                point: point.clone(),
            });
            save_run(d, &r, done.as_ref())?;
        }
        if interrupted {
            say_stopped(&r.run.end_reason, k, total);
            stopped = true;
            break;
        }
        if failed {
            eprintln!(
                "fsin qemu --vary: {what} failed: {}; the study goes on, and runs it again when resumed with the same --out",
                point.fault.as_deref().unwrap_or(&r.run.end_reason)
            );
            failures += 1;
        }
        points.push(point);
    }
    add_predictions(
        a,
        &runs,
        &mut points,
        frames_file.as_deref(),
        mpi_file.as_deref(),
    )?;
    write_summary(a, &key, &points)?;
    if a.cosim.out.is_none() {
        for t in &trace_files {
            let _ = std::fs::remove_file(t);
        }
    }
    outcome(&points, (failures, total), stopped)
}

/// The first run's traces for `--predict`: in `--out`, or for the
/// study's time only; (frame trace, MPI-level trace) as asked.
fn prediction_traces(a: &QemuArgs) -> (Option<PathBuf>, Option<PathBuf>) {
    let trace_path = |name: &str| match &a.cosim.out {
        Some(d) => d.join(name),
        None => std::env::temp_dir().join(format!("fsin-study-{}-{name}", std::process::id())),
    };
    let frames = (a.predict)
        .filter(|p| p.frames())
        .map(|_| trace_path("trace.trc"));
    let mpi = (a.predict)
        .filter(|p| p.mpi())
        .map(|_| trace_path("trace.mpi.dim"));
    (frames, mpi)
}

/// The point an earlier run of the same study saved in `dir` for `run`
/// (the same settings, `identity`), if any.
fn saved_point(
    a: &QemuArgs,
    dir: &std::path::Path,
    identity: &str,
    key: &str,
    run: &StudyRun,
) -> Option<SavedPoint> {
    let text = std::fs::read_to_string(dir.join("point.json")).ok()?;
    SavedPoint::read(&text)
        .filter(|s| same_run(&s.identity, identity, a.reuse_runs) && run.made(key, &s.point))
}

/// How a study ends: exit 1 (its reasons said) when it stopped early,
/// `failures` of its `total` runs failed, or the command failed at some
/// value.
fn outcome(
    points: &[StudyPoint],
    (failures, total): (usize, usize),
    stopped: bool,
) -> anyhow::Result<()> {
    if failures > 0 {
        eprintln!(
            "fsin qemu --vary: {failures} of {total} runs failed (their reasons above and in runs.csv)"
        );
    }
    if stopped || failures > 0 {
        return Err(RunFailed { code: 1 }.into());
    }
    if points.iter().any(|p| p.exit_code != Some(0)) {
        eprintln!("fsin qemu --vary: the command failed at some values (exit code 1)");
        return Err(RunFailed { code: 1 }.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 1's slices keep 1:50; a network 10 times faster is another
    /// ratio, and a value that is no slice is refused.
    #[test]
    fn slices_of_one_ratio_by_hand() {
        let v = |s: &[&str]| {
            s.iter()
                .map(|x| parse_slice("--vary", x))
                .collect::<Result<Vec<_>, _>>()
        };
        assert!(one_ratio(
            &v(&["200:10000", "2000:100000", "60:3000", "20:1000"]).unwrap()
        ));
        assert!(!one_ratio(&v(&["200:10000", "2000:10000"]).unwrap()));
        assert!(one_ratio(&v(&["200:10000"]).unwrap()));
        assert!(v(&["200:10000", "fast"]).is_err());
    }

    /// Another binary's run counts only with --reuse-runs, and never with
    /// other settings.
    #[test]
    fn a_run_of_another_binary_counts_only_when_asked() {
        let old = "intransit_pr=0 repeat=0 seed=17 settings=[] exe=76062408 Some(1)";
        let new = "intransit_pr=0 repeat=0 seed=17 settings=[] exe=76100000 Some(2)";
        let other = "intransit_pr=1 repeat=0 seed=17 settings=[] exe=76062408 Some(1)";
        assert!(same_run(old, old, false));
        assert!(!same_run(old, new, false));
        assert!(same_run(old, new, true));
        assert!(!same_run(other, new, true));
    }
}
