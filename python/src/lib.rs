//! `fsin._fsin`: the native part of the `fsin` Python module (PyO3, on
//! CPython's stable ABI from 3.9 on). The Python package (`python/fsin`)
//! wraps it: it turns keyword arguments into INSEE `key=value` settings,
//! JSON into `Report` objects and pandas tables, and documents every call.
//!
//! Everything here runs in-process on the library crates, as the `fsin`
//! command does:
//! - [`run`] builds the configuration with the command's sources and
//!   checks, runs the engine on a thread of its own with the GIL released,
//!   and watches for Ctrl-C: a `KeyboardInterrupt` stops the run as SIGINT
//!   stops `fsin run`, and the partial report comes back marked
//!   `interrupted`.
//! - Errors are raised as the Python classes of `fsin._errors`, with the
//!   command's meaning: bad input (exit 2) as `ConfigError`, a workload or
//!   network that can never finish (exit 3) as `Deadlock` with its report,
//!   other failures as `RunError`, and a panic of the library as
//!   `InternalError`: no panic crosses into Python.
//!
//! Results cross as the JSON the command prints (`--json`), so that a
//! report is the command's, key for key.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use fsin::config::{keys as key_table, Config, ConfigBuilder, ConfigError, Origin};
use fsin::drive::RunStatus;
use fsin::report;
use fsin::run::{Report, RunError, RunOptions, StopFlag, Verdict};
use fsin::traffic::kernels::{Kernel, KERNELS};
use fsin_trace::{Event, Trace, TraceFormat};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

/// How often a waiting call looks for Ctrl-C (and calls the progress
/// callback at most): 50 ms, so that an interrupted run returns well
/// within a second.
const POLL: Duration = Duration::from_millis(50);

/// Why a call failed, as the `fsin` command would classify it.
enum Failure {
    /// Bad input (the command's exit 2): the key and value at fault, where
    /// the error names them.
    Config {
        message: String,
        key: Option<String>,
        value: Option<String>,
    },
    /// The workload or the network can never finish (exit 3), with the
    /// report (JSON) when the run produced one.
    Deadlock {
        message: String,
        report: Option<String>,
    },
    /// Anything else that went wrong while running (exit 1).
    Run(String),
    /// A panic in the library: a bug of fsin-rs, not of the caller.
    Internal(String),
}

impl From<ConfigError> for Failure {
    /// The error as Python sees it: a setting from the command line came
    /// from a keyword argument here, so the message does not begin
    /// "command line:" (a file's `path:line` stays).
    fn from(e: ConfigError) -> Failure {
        let text = e.to_string();
        let message = text
            .strip_prefix(&format!("{}: ", Origin::CommandLine))
            .unwrap_or(&text)
            .to_string();
        let (key, value) = match e {
            ConfigError::UnknownKey { key, .. }
            | ConfigError::Unsupported { key, .. }
            | ConfigError::Combination { key, .. } => (Some(key), None),
            ConfigError::BadValue { key, value, .. } => (Some(key), Some(value)),
            ConfigError::Syntax { text, .. } => (None, Some(text)),
            ConfigError::File { .. } => (None, None),
        };
        Failure::Config {
            message,
            key,
            value,
        }
    }
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Failure {
        let message = e.to_string();
        match e.verdict() {
            Verdict::CannotFinish => Failure::Deadlock {
                message,
                report: None,
            },
            Verdict::BadInput => Failure::Config {
                message,
                key: None,
                value: None,
            },
            Verdict::Failed => Failure::Run(message),
        }
    }
}

impl Failure {
    /// The Python exception of `fsin._errors` that carries this failure.
    fn into_py(self, py: Python<'_>) -> PyErr {
        let raise = || -> PyResult<PyErr> {
            let errors = py.import("fsin._errors")?;
            let instance = match self {
                Failure::Config {
                    message,
                    key,
                    value,
                } => errors
                    .getattr("ConfigError")?
                    .call1((message, key, value))?,
                Failure::Deadlock { message, report } => {
                    errors.getattr("Deadlock")?.call1((message, report))?
                }
                Failure::Run(message) => errors.getattr("RunError")?.call1((message,))?,
                Failure::Internal(message) => errors.getattr("InternalError")?.call1((message,))?,
            };
            Ok(PyErr::from_value(instance))
        };
        raise().unwrap_or_else(|e| e)
    }
}

/// A panic's message.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

/// The configuration of `settings` (`key=value`, later ones win) over the
/// file `config`, checked as `fsin run` checks it (memory included).
fn configure(settings: &[String], config: Option<&Path>) -> Result<Config, Failure> {
    let cfg = ConfigBuilder::from_sources(&[], config, settings)?.build()?;
    fsin::limits::check_memory(&cfg)?;
    Ok(cfg)
}

/// Runs `work` on a thread of its own while the caller waits with the GIL
/// released, every [`POLL`] looking for Python's signals and calling
/// `progress(done, end)` with what `now` says (`end` `None` while not
/// known) when it has changed. A `KeyboardInterrupt` sets `stop` to SIGINT
/// and the wait goes on until `work` returns: its result is the partial
/// one. Any other exception (from a signal handler or from `progress`)
/// also stops the work, and is raised once it has returned.
fn watched<T: Send + 'static>(
    py: Python<'_>,
    stop: &StopFlag,
    now: &dyn Fn() -> (u64, Option<u64>),
    progress: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<Result<T, Failure>> {
    let (tx, mut rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name("fsin-run".into())
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(work))
                .map_err(|p| Failure::Internal(panic_message(p.as_ref())));
            // The caller may have stopped waiting only if Python itself
            // is going away; nothing is left to tell then.
            let _ = tx.send(outcome);
        })
        .map_err(|e| Failure::Run(format!("cannot start the run's thread: {e}")).into_py(py))?;
    let mut pending: Option<PyErr> = None;
    let mut last = None;
    let outcome = loop {
        // The receiver travels into the GIL-free closure and back (it can
        // be sent to a thread, not shared with one).
        let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
        rx = back;
        match got {
            Ok(outcome) => break outcome,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(Failure::Internal(
                    "the run's thread ended without a result".into(),
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if pending.is_some() {
            continue;
        }
        if let Err(e) = py.check_signals() {
            stop.store(signal_hook::consts::SIGINT as usize, Ordering::Relaxed);
            if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
                pending = Some(e);
            }
            continue;
        }
        if let Some(callback) = progress {
            let at = now();
            if last != Some(at) {
                last = Some(at);
                if let Err(e) = callback.call1(at) {
                    stop.store(signal_hook::consts::SIGINT as usize, Ordering::Relaxed);
                    pending = Some(e);
                }
            }
        }
    };
    // The thread has sent its result: it ends at once.
    let _ = worker.join();
    match pending {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}

/// The JSON of a finished run, or the failure its end means (a deadlock
/// raises with the report attached).
fn finish(rep: Report, out: Option<&Path>) -> Result<String, Failure> {
    if let Some(dir) = out {
        report::write_files(&rep, dir)
            .map_err(|e| Failure::Run(format!("cannot write to {}: {e}", dir.display())))?;
    }
    let json = serde_json::to_string(&rep).map_err(|e| Failure::Internal(e.to_string()))?;
    match rep.cannot_finish() {
        // An interrupted run reports what it simulated, deadlock or not.
        Some(message) if rep.interrupted.is_none() => Err(Failure::Deadlock {
            message,
            report: Some(json),
        }),
        _ => Ok(json),
    }
}

/// One run of the network, as `fsin run SETTINGS... --json` (`--config
/// CONFIG`, `--out OUT`): the report's JSON.
///
/// `progress(cycle, end)` is called from the calling thread at most every
/// 50 ms while the engine runs: `cycle` network cycles simulated so far,
/// `end` the cycle the run ends at when its last phase has a known length
/// (else `None`). A `KeyboardInterrupt` stops the run: the report of the
/// cycles simulated so far comes back with `interrupted` set to "SIGINT".
#[pyfunction]
#[pyo3(signature = (settings, config=None, out=None, progress=None))]
fn run(
    py: Python<'_>,
    settings: Vec<String>,
    config: Option<PathBuf>,
    out: Option<PathBuf>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let cfg = configure(&settings, config.as_deref()).map_err(|f| f.into_py(py))?;
    if cfg.method.plevel != 0 && out.is_none() {
        return Err(Failure::Config {
            message: "key `plevel`: the plevel outputs are files: give out=DIR".into(),
            key: Some("plevel".into()),
            value: Some(cfg.method.plevel.to_string()),
        }
        .into_py(py));
    }
    if let Some(dir) = &out {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::Run(format!("cannot create {}: {e}", dir.display())).into_py(py)
        })?;
    }
    let stop = StopFlag::default();
    let status = Arc::new(RunStatus::default());
    let opts = (Arc::clone(&stop), Arc::clone(&status), out.clone());
    let now = || {
        let s = status.snapshot();
        (s.cycle, s.end)
    };
    let outcome = watched(py, &stop, &now, progress.as_ref(), move || {
        let (stop, status, detail_dir) = opts;
        let opts = RunOptions {
            stop: Some(stop),
            progress: Some(status),
            on_partial: None,
            detail_dir,
            timeline: None,
        };
        fsin::sim::run(&cfg, opts)
    })?;
    outcome
        .and_then(|r| r.map_err(Failure::from))
        .and_then(|rep| finish(rep, out.as_deref()))
        .map_err(|f| f.into_py(py))
}

/// A sweep, as `fsin sweep SETTINGS... --vary KEY=VALUES --json` (`--config
/// CONFIG`, `--out OUT`, a `--series S` for each of `series`): `key` takes
/// each of `values` in turn in every series, the points run in parallel
/// on `processes` threads (default: one per core). Returns
/// `(sweep.csv, sweep JSON)`. `progress(points done, points)` as in
/// [`run`]; a `KeyboardInterrupt` stops every point where it is, and each
/// reports what it simulated (`interrupted`).
#[pyfunction]
#[pyo3(signature = (settings, key, values, series=Vec::new(), config=None, out=None, processes=None, progress=None))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each.
fn sweep(
    py: Python<'_>,
    settings: Vec<String>,
    key: String,
    values: Vec<String>,
    series: Vec<String>,
    config: Option<PathBuf>,
    out: Option<PathBuf>,
    processes: Option<usize>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<(String, String)> {
    if values.is_empty() {
        return Err(Failure::Config {
            message: format!("vary: key `{key}` needs at least one value"),
            key: Some(key),
            value: None,
        }
        .into_py(py));
    }
    let pool = match processes {
        Some(0) => {
            return Err(Failure::Config {
                message: "processes: bad value `0`: give 1 or more threads (None: one per core)"
                    .into(),
                key: Some("processes".into()),
                value: Some("0".into()),
            }
            .into_py(py))
        }
        n => rayon::ThreadPoolBuilder::new()
            .num_threads(n.unwrap_or(0))
            .thread_name(|i| format!("fsin-sweep-{i}"))
            .build()
            .map_err(|e| {
                Failure::Run(format!("cannot start the sweep's threads: {e}")).into_py(py)
            })?,
    };
    let vary = fsin::sweep::Vary { key, values };
    let series = fsin::sweep::parse_series(&series, &vary).map_err(|e| {
        Failure::Config {
            message: format!("series: {e}"),
            key: Some("series".into()),
            value: None,
        }
        .into_py(py)
    })?;
    let total = (vary.values.len() * series.len()) as u64;
    let stop = StopFlag::default();
    let done = Arc::new(AtomicU64::new(0));
    let work = (Arc::clone(&stop), Arc::clone(&done));
    let now = || (done.load(Ordering::Relaxed), Some(total));
    let outcome = watched(py, &stop, &now, progress.as_ref(), move || {
        let (stop, done) = work;
        let tick = move || {
            done.fetch_add(1, Ordering::Relaxed);
        };
        pool.install(|| {
            fsin::sweep::run(
                config.as_deref(),
                &settings,
                &vary,
                &series,
                &tick,
                Some(&stop),
            )
        })
    })?;
    let finished = |s: fsin::sweep::Sweep| -> Result<(String, String), Failure> {
        if let Some(dir) = &out {
            let plots = s.plots().unwrap_or_default();
            fsin::study::write(dir, "sweep", &s.csv(), &s, &plots)
                .map_err(|e| Failure::Run(e.to_string()))?;
        }
        let json = serde_json::to_string(&s).map_err(|e| Failure::Internal(e.to_string()))?;
        Ok((s.csv(), json))
    };
    outcome
        .and_then(|r| {
            r.map_err(|e| match e {
                fsin::sweep::SweepError::Config(c) => Failure::from(c),
                fsin::sweep::SweepError::Run(r) => Failure::from(r),
            })
        })
        .and_then(finished)
        .map_err(|f| f.into_py(py))
}

/// The key and values of a `--vary` text (`KEY=V1,V2,...`,
/// `KEY=START:END:STEP` or `KEY=VALUE`), as `fsin sweep` reads it.
#[pyfunction]
fn parse_vary(py: Python<'_>, spec: &str) -> PyResult<(String, Vec<String>)> {
    fsin::sweep::parse_vary(spec)
        .map(|v| (v.key, v.values))
        .map_err(|e| {
            Failure::Config {
                message: format!("vary: {e}"),
                key: Some("vary".into()),
                value: Some(spec.into()),
            }
            .into_py(py)
        })
}

/// A trace's events as columns: task, kind (`s`, `r` or `c`), peer (the
/// destination of a send, the source of a receive, the task itself for a
/// computation), tag, bytes, amount (computation units; 0 for messages).
type Columns = (
    Vec<u32>,
    Vec<&'static str>,
    Vec<u32>,
    Vec<u32>,
    Vec<u64>,
    Vec<u64>,
);

/// The columns of [`Columns`] as Python gives them back to
/// [`write_trace`] (numbers range-checked there).
type InColumns = (
    Vec<u64>,
    Vec<String>,
    Vec<u64>,
    Vec<u64>,
    Vec<u64>,
    Vec<u64>,
);

/// A trace as returned to Python: its name, whether it is a frame trace
/// and whether its computations are network cycles, and its columns.
type TraceParts = (String, bool, bool, Columns);

fn parts(t: &Trace) -> TraceParts {
    let n: usize = t.tasks.iter().map(Vec::len).sum();
    let mut c: Columns = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for (task, events) in t.tasks.iter().enumerate() {
        let task = task as u32;
        for e in events {
            let (kind, peer, tag, bytes, amount) = match *e {
                Event::Send { dst, tag, bytes } => ("s", dst, tag, bytes, 0),
                Event::Recv { src, tag, bytes } => ("r", src, tag, bytes, 0),
                Event::Cpu { amount } => ("c", task, 0, 0, amount),
            };
            c.0.push(task);
            c.1.push(kind);
            c.2.push(peer);
            c.3.push(tag);
            c.4.push(bytes);
            c.5.push(amount);
        }
    }
    (t.name.clone(), t.frames, t.cpu_in_cycles, c)
}

/// The trace format called `name` (`trc`, `dimemas`, `alog`).
fn format_named(name: &str) -> Result<TraceFormat, Failure> {
    TraceFormat::named(name).ok_or_else(|| Failure::Config {
        message: format!("format: bad value `{name}`: valid values are trc, dimemas, alog"),
        key: Some("format".into()),
        value: Some(name.into()),
    })
}

fn bad_trace(path: &Path, e: impl std::fmt::Display) -> Failure {
    Failure::Config {
        message: e.to_string(),
        key: Some("tracefile".into()),
        value: Some(path.display().to_string()),
    }
}

/// The trace in file `path` ([`fsin_trace::parse`], format told by its
/// first characters; `format`, if given, must be the one found), named as
/// its writer named it ([`fsin_trace::title`]) or after the file.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
fn read_trace(py: Python<'_>, path: PathBuf, format: Option<&str>) -> PyResult<TraceParts> {
    let read = || -> Result<TraceParts, Failure> {
        let text = std::fs::read_to_string(&path).map_err(|e| bad_trace(&path, e))?;
        if let Some(want) = format {
            let want = format_named(want)?;
            let found = TraceFormat::of(&text);
            if found != want {
                return Err(bad_trace(
                    &path,
                    format!("{}: the file is {found:?}, not {want:?}", path.display()),
                ));
            }
        }
        let mut t = fsin_trace::parse_str(&text, &path.display().to_string())
            .map_err(|e| bad_trace(&path, e))?;
        if let Some(name) = fsin_trace::title(&text) {
            t.name = name;
        }
        Ok(parts(&t))
    };
    py.detach(read).map_err(|f| f.into_py(py))
}

/// Writes the events `columns` (as [`parts`] gives them) to `path` as
/// `format`, under `name`; `frames` marks a frame trace (`.trc` only).
/// Every row is range-checked as a trace file's line would be.
#[pyfunction]
fn write_trace(
    py: Python<'_>,
    columns: InColumns,
    path: PathBuf,
    format: &str,
    name: &str,
    frames: bool,
) -> PyResult<()> {
    let write = || -> Result<(), Failure> {
        let format = format_named(format)?;
        let (tasks, kinds, peers, tags, bytes, amounts) = columns;
        let n = tasks.len();
        if [
            kinds.len(),
            peers.len(),
            tags.len(),
            bytes.len(),
            amounts.len(),
        ] != [n; 5]
        {
            return Err(Failure::Config {
                message: "the columns task, kind, peer, tag, bytes and amount differ in length"
                    .into(),
                key: None,
                value: None,
            });
        }
        let mut t = Trace::new(name, 0);
        t.frames = frames;
        for i in 0..n {
            let bad = |what: String| Failure::Config {
                message: format!("row {i}: {what}"),
                key: None,
                value: None,
            };
            let id = |v: u64, field: &str| {
                u32::try_from(v)
                    .ok()
                    .filter(|&v| u64::from(v) <= fsin_trace::MAX_TASK)
                    .ok_or_else(|| bad(format!("{field} = {v} is over {}", fsin_trace::MAX_TASK)))
            };
            let (task, peer) = (id(tasks[i], "task")?, id(peers[i], "peer")?);
            let tag = u32::try_from(tags[i])
                .map_err(|_| bad(format!("tag = {} is over 2^32", tags[i])))?;
            let size = bytes[i];
            if size > fsin_trace::MAX_MESSAGE_BYTES {
                return Err(bad(format!(
                    "bytes = {size} is over {}",
                    fsin_trace::MAX_MESSAGE_BYTES
                )));
            }
            let event = match kinds[i].as_str() {
                "s" | "r" if peer == task => {
                    return Err(bad(format!("task {task} sends to itself")))
                }
                "s" => Event::Send {
                    dst: peer,
                    tag,
                    bytes: size,
                },
                "r" => Event::Recv {
                    src: peer,
                    tag,
                    bytes: size,
                },
                "c" if amounts[i] > fsin_trace::MAX_CPU_AMOUNT => {
                    return Err(bad(format!(
                        "amount = {} is over {}",
                        amounts[i],
                        fsin_trace::MAX_CPU_AMOUNT
                    )))
                }
                "c" => Event::Cpu { amount: amounts[i] },
                other => return Err(bad(format!("kind `{other}`: expected s, r or c"))),
            };
            t.push(task, event, 0);
        }
        std::fs::write(&path, t.write(format))
            .map_err(|e| Failure::Run(format!("cannot write {}: {e}", path.display())))
    };
    py.detach(write).map_err(|f| f.into_py(py))
}

/// The trace of application kernel `name` (`fsin kernel NAME --tasks
/// TASKS --bytes BYTES`).
#[pyfunction]
fn kernel(py: Python<'_>, name: &str, tasks: u32, bytes: u64) -> PyResult<TraceParts> {
    let make = || -> Result<TraceParts, Failure> {
        let k = Kernel::named(name).ok_or_else(|| {
            let names: Vec<&str> = KERNELS.iter().map(|(n, _)| *n).collect();
            Failure::Config {
                message: format!(
                    "kernel: bad value `{name}`: valid values are {}",
                    names.join(", ")
                ),
                key: Some("kernel".into()),
                value: Some(name.into()),
            }
        })?;
        k.check(tasks).map_err(|e| Failure::Config {
            message: format!("tasks: bad value `{tasks}`: {e}"),
            key: Some("tasks".into()),
            value: Some(tasks.to_string()),
        })?;
        if bytes > fsin_trace::MAX_MESSAGE_BYTES {
            return Err(Failure::Config {
                message: format!(
                    "bytes: bad value `{bytes}`: at most {}",
                    fsin_trace::MAX_MESSAGE_BYTES
                ),
                key: Some("bytes".into()),
                value: Some(bytes.to_string()),
            });
        }
        Ok(parts(&k.trace(tasks, bytes)))
    };
    py.detach(make).map_err(|f| f.into_py(py))
}

/// The summary of `fsin topology SETTINGS... --json` (`--config CONFIG`):
/// its JSON.
#[pyfunction]
#[pyo3(signature = (settings, config=None))]
fn topology(py: Python<'_>, settings: Vec<String>, config: Option<PathBuf>) -> PyResult<String> {
    let summarize = || -> Result<String, Failure> {
        let cfg = ConfigBuilder::from_sources(&[], config.as_deref(), &settings)?.build()?;
        let t = fsin::network_facts::facts(&cfg).map_err(|e| {
            Failure::from(ConfigError::Combination {
                key: "faults".into(),
                reason: e.to_string(),
            })
        })?;
        serde_json::to_string(&t.summary).map_err(|e| Failure::Internal(e.to_string()))
    };
    summarize().map_err(|f| f.into_py(py))
}

/// Every configuration key, as `fsin help config` lists them: a JSON list
/// of objects with `name`, `aliases`, `group`, `help`, `values` and
/// `default`.
#[pyfunction]
fn keys() -> String {
    let defaults = Config::default();
    let table: Vec<serde_json::Value> = key_table::keys()
        .map(|k| {
            serde_json::json!({
                "name": k.names[0],
                "aliases": &k.names[1..],
                "group": key_table::GROUPS
                    .iter()
                    .find(|(_, names)| names.contains(&k.names[0]))
                    .map(|(g, _)| *g),
                "help": k.help,
                "values": k.values,
                "default": (k.show)(&defaults),
            })
        })
        .collect();
    serde_json::Value::Array(table).to_string()
}

/// The module `fsin._fsin`.
#[pymodule]
fn _fsin(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(parse_vary, m)?)?;
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(write_trace, m)?)?;
    m.add_function(wrap_pyfunction!(kernel, m)?)?;
    m.add_function(wrap_pyfunction!(topology, m)?)?;
    m.add_function(wrap_pyfunction!(keys, m)?)?;
    // The crate's directory at build time: `fsin.binary()` looks for the
    // checkout's `target/release/fsin` beside it.
    m.add("SOURCE", env!("CARGO_MANIFEST_DIR"))?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
