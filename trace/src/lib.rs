//! Traces of message-passing applications: FSIN `.trc` (traces paper;
//! docs/contracts.md, "Trace format"), and the Dimemas and alog traces
//! INSEE also reads ([`dimemas`], [`alog`]). [`parse`] tells them apart as
//! INSEE does, by how the file begins: `#DIMEMAS` is Dimemas, `-` is alog,
//! anything else `.trc`.
//!
//! `.trc` has one event per line, whitespace separated, `#` starts a
//! comment:
//! - `s <src> <dst> <tag> <bytes>`: task `src` sends a message to `dst`;
//! - `r <src> <dst> <tag> <bytes>`: task `dst` waits for that message;
//! - `c <task> <amount>`: `task` computes for `amount` CPU units.
//!
//! A `.trc` with the comment line `#fsin frames` (anywhere; `fsin qemu
//! --trace-out` writes it last) is a **frame trace** ([`Trace::frames`]):
//! taken from a co-simulation, one message per Ethernet frame, amounts in
//! node cycles (docs/model.md, "Traces out of live runs").
//!
//! [`parse`] groups the events by the task that performs them, in file
//! order, which is the order in which that task replays them (traces paper,
//! section 4.2: one event queue per node). [`Trace::write`] prints a trace
//! back in any of the formats (application kernels are written this way).
//! Task ids are not bounded by the parser: the task count is the largest id
//! plus one (a Dimemas header's count), and [`Trace::first_beyond`] finds
//! the first event that names a task beyond a network or a placement.
#![warn(missing_docs)]

pub mod alog;
pub mod dimemas;
mod groups;
pub mod mpi;

use std::fmt::Write as _;
use std::path::Path;

pub use groups::{RecvGroup, GROUP_DIRECTIVE};

/// One event, as the task that performs it sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Send `bytes` bytes with `tag` to task `dst`.
    Send {
        /// The receiving task.
        dst: u32,
        /// The message's tag, which its receive names.
        tag: u32,
        /// The message's size, bytes.
        bytes: u64,
    },
    /// Wait until the message with `tag` from task `src` has fully arrived.
    Recv {
        /// The sending task.
        src: u32,
        /// The tag of the message awaited.
        tag: u32,
        /// The message's size, bytes.
        bytes: u64,
    },
    /// Compute for `amount` CPU units (`trace_cpu_units`), or network
    /// cycles in a trace whose [`Trace::cpu_in_cycles`] is set.
    Cpu {
        /// CPU units, or network cycles (above).
        amount: u64,
    },
}

impl Event {
    /// The other task this event of `task` names (the destination of a
    /// send, the source of a receive), or `task` itself for computation.
    pub fn peer(self, task: u32) -> u32 {
        match self {
            Event::Send { dst, .. } => dst,
            Event::Recv { src, .. } => src,
            Event::Cpu { .. } => task,
        }
    }
}

/// A trace: the event queue of every task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// Where the trace comes from (a file path, or a kernel's name), for
    /// messages.
    pub name: String,
    /// Events of each task (index = task id), in the order it performs them.
    pub tasks: Vec<Vec<Event>>,
    /// Line of each event in the file (same shape as `tasks`); empty for
    /// traces built in memory.
    pub lines: Vec<Vec<u32>>,
    /// Whether the amounts of [`Event::Cpu`] are network cycles already
    /// (Dimemas bursts, converted as INSEE does), to which
    /// `trace_cpu_units` does not apply.
    pub cpu_in_cycles: bool,
    /// A frame trace (the `#fsin frames` line; `fsin qemu --trace-out`):
    /// every message is one Ethernet frame that a NIC queues whole (its
    /// sender does not wait for it), and computation amounts are node
    /// cycles, which a replay converts with the co-simulation's slice ratio.
    pub frames: bool,
    /// A frame trace lowered from an MPI-level trace ([`mpi::lower`]):
    /// its frames stand for those the guests would send, so a replay
    /// hands them over as the co-simulation mode would (in lock-step at
    /// the start of the slice after the one they arrive in).
    pub mpi: bool,
    /// Node cycles a task of a lowered MPI-level trace ([`Trace::mpi`])
    /// pays on top when it waited for a frame (its wake-up; the MPI
    /// model's `wake_ns`, [`mpi::lower::MpiModel`]); 0 otherwise. Written
    /// on the [`MPI_DIRECTIVE`] line as `wake=N`.
    pub wake: u64,
    /// Node cycles a run of a lowered MPI-level trace's task's event loop
    /// costs per connection it holds beyond the first (the MPI model's
    /// `poll_ns`): the loop polls every connection each time it runs, and
    /// the task finds a frame by a run, when the frame comes if it waited
    /// for it, else when it asks, unless a run since the frame came found
    /// it. A task holds a connection from its
    /// first frame to or from the peer, or to every other task from the
    /// start with [`Trace::connected`]. Written on the [`MPI_DIRECTIVE`]
    /// line as `poll=N`.
    pub poll: u64,
    /// Every pair of tasks holds its connection from the start (a run
    /// traced with `--mpi-preconnect`), for [`Trace::poll`]. Written on
    /// the [`MPI_DIRECTIVE`] line as `connected=1`.
    pub connected: bool,
    /// Node cycles of a task's CPU that the kernel's receive of one frame
    /// takes in a lowered MPI-level trace (the MPI model's `rx_ns`): a
    /// task busy when the frame arrives is held up that long then, one
    /// that waits for it takes it that much later; the lowering leaves it
    /// out of the receive's own cost. 0: none. Written on the
    /// [`MPI_DIRECTIVE`] line as `rx=N`.
    pub rx: u64,
    /// Node cycles a node's NIC holds its interrupts back after each one
    /// in a lowered MPI-level trace (the MPI model's `irq_window_ns`;
    /// QEMU's e1000, docs/model.md, "The NIC's interrupt window"): a
    /// frame that a node sends or takes in raises an interrupt at once
    /// when the window is over, else when it ends, one interrupt for all
    /// that came inside it; a frame in reaches its task's kernel at its
    /// interrupt. 0: no window. Written on the [`MPI_DIRECTIVE`] line as
    /// `irq=N`.
    pub irq: u64,
    /// Node cycles of a task's CPU that the kernel's receive of an ARP
    /// request takes ([`ARP_TAG`]; the MPI model's `arp_rx_ns`), in
    /// place of [`Trace::rx`]: a broadcast that every node's kernel takes
    /// in, whose interrupt and input cost more than a data frame's
    /// share; a task busy when it arrives is held up that long. 0: as
    /// [`Trace::rx`]. Written on the [`MPI_DIRECTIVE`] line as
    /// `arp_rx=N`.
    pub arp_rx: u64,
    /// Node cycles a task of a lowered MPI-level trace takes to set up a
    /// new peer (the MPI model's `connect_ns`): its first send to the
    /// peer blocks that long, and the peer accepting its connection sets
    /// it up as long unless it has already; the pair's frames are not
    /// handed over before both have; 0 with [`Trace::tick`] 0: no
    /// connection model. Written on the [`MPI_DIRECTIVE`] line as
    /// `contact=N`.
    pub contact: u64,
    /// Node cycles between the event loop's runs in a task of a lowered
    /// MPI-level trace that has no connection yet (the MPI model's
    /// `event_tick_ns`, Open MPI's `mpi_event_tick_rate`; Open MPI 4.1's
    /// `opal_progress`), with [`Trace::contact`]; 0: every MPI call runs
    /// it. Written on the [`MPI_DIRECTIVE`] line as `tick=N`.
    pub tick: u64,
    /// Node cycles from a connect's start to its TCP handshake's end (a
    /// SYN and its SYN-ACK), with [`Trace::contact`]: the connecting
    /// task's event loop finds the connect done at its first run after
    /// that, so a task that waits right after its connect finds it only a
    /// tick later. Written on the [`MPI_DIRECTIVE`] line as
    /// `handshake=N`.
    pub handshake: u64,
    /// Bytes of the ARP request a task of a lowered MPI-level trace
    /// broadcasts when it opens the first connection of a pair of nodes
    /// that do not know each other's address (the MPI model's `arp`,
    /// [`mpi::lower::ARP_REQUEST_BYTES`]): a copy to every other task of
    /// its job, which each one's kernel takes in ([`ARP_TAG`]). Task 0's
    /// node knows every address (`mpirun` ran there and reached every
    /// node). 0: no ARP. Written on the [`MPI_DIRECTIVE`] line as
    /// `arp=N`.
    pub arp: u64,
    /// The guests' TCP timers that a replay of a lowered MPI-level trace
    /// runs ([`TcpTimers`]); all 0: none.
    pub tcp: TcpTimers,
    /// What the traced run's guests sent while its ranks ran, for a
    /// lowered MPI-level trace whose header records it
    /// ([`mpi::LiveFrames`]); not written to a `.trc`.
    pub live: Option<mpi::LiveFrames>,
    /// Per task, the completion calls of a lowered MPI-level trace whose
    /// receives its task takes as their frames arrive ([`RecvGroup`]),
    /// in order; empty where none. Written as [`GROUP_DIRECTIVE`] lines.
    pub recv_groups: Vec<Vec<RecvGroup>>,
    /// Per task of a lowered MPI-level trace, its MPI calls: the events
    /// each lowered to, in order ([`mpi::lower::LoweredCall`]), for a
    /// replay's timeline to draw as the live run's draws its calls; not
    /// written to a `.trc`.
    pub calls: Vec<Vec<mpi::lower::LoweredCall>>,
}

/// The TCP timers of a lowered MPI-level trace's guests (Linux's, at the
/// MPI model's `loss_probe_ns` and `delayed_ack_ns`;
/// [`mpi::lower::MpiModel`]), which a replay runs per connection: a
/// connection's frames acknowledge what its sender has received (every
/// frame, [`TCP_ACK_TAG`]'s and data alike, as TCP's cumulative
/// acknowledgement does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpTimers {
    /// The tail-loss probe's least timeout, node cycles (Linux's
    /// `TCP_TIMEOUT_MIN`, 2 jiffies): a sender with 2 or more frames
    /// unacknowledged and no acknowledgement for twice its smoothed round
    /// trip time (RFC 6298's estimator over its acknowledgements' round
    /// trips) plus this long sends its last frame again ([`PROBE_TAG`]);
    /// the receiver's kernel takes it in and answers with a D-SACK, an
    /// acknowledgement of `ack` + 12 bytes. 0: no probes. Written on the
    /// [`MPI_DIRECTIVE`] line as `probe=N`.
    pub probe: u64,
    /// Node cycles a receiver's kernel holds an acknowledgement that no
    /// frame to the sender has carried (Linux's delayed acknowledgement,
    /// `TCP_DELACK_MIN`): then it sends one of `ack` bytes. 0: never.
    /// Written on the [`MPI_DIRECTIVE`] line as `delack=N`.
    pub delack: u64,
    /// Bytes of a TCP acknowledgement's frame (the MPI model's
    /// `segment_header`). Written on the [`MPI_DIRECTIVE`] line as
    /// `ack=N`.
    pub ack: u64,
}

/// Bytes a D-SACK adds to an acknowledgement's frame: TCP's SACK option
/// with one block (10 bytes) and its two no-operation bytes.
pub const DSACK_OPTION_BYTES: u64 = 12;

/// The comment line that makes a `.trc` a frame trace ([`Trace::frames`]).
pub const FRAMES_DIRECTIVE: &str = "#fsin frames";

/// The comment line, after [`FRAMES_DIRECTIVE`], that makes a frame
/// trace one lowered from an MPI-level trace ([`Trace::mpi`]), so that
/// `fsin kernel X.dim -o X.trc` replays as `X.dim` does; `#fsin mpi
/// wake=N poll=Q contact=M tick=T handshake=H rx=R irq=I arp_rx=X arp=A
/// probe=P delack=D ack=K connected=1` also gives [`Trace::wake`],
/// [`Trace::poll`], [`Trace::contact`], [`Trace::tick`],
/// [`Trace::handshake`], [`Trace::rx`], [`Trace::irq`],
/// [`Trace::arp_rx`], [`Trace::arp`], [`Trace::tcp`] and
/// [`Trace::connected`].
pub const MPI_DIRECTIVE: &str = "#fsin mpi";

/// The tag of the TCP acknowledgements in a frame trace lowered from an
/// MPI-level trace ([`Trace::mpi`]; [`mpi::lower::MpiModel::tcp_acks`]):
/// frames that the receiving node's kernel takes in (a task busy then is
/// held up [`Trace::rx`]) and that no task receives. The lowering's own
/// tags count its kinds of messages from 0 and never reach it.
pub const TCP_ACK_TAG: u32 = u32::MAX;

/// The tag of the ARP requests in a replay of a frame trace lowered from
/// an MPI-level trace ([`Trace::arp`]): like [`TCP_ACK_TAG`]'s frames,
/// each copy is taken in by its node's kernel and received by no task.
pub const ARP_TAG: u32 = u32::MAX - 1;

/// The tag of the tail-loss probes in a replay of a frame trace lowered
/// from an MPI-level trace ([`TcpTimers::probe`]): a frame sent again,
/// which its receiver's kernel takes in and answers; no task receives it.
pub const PROBE_TAG: u32 = u32::MAX - 2;

/// Whether frames of `tag` in a lowered MPI-level trace are its nodes'
/// kernels' own ([`TCP_ACK_TAG`], [`ARP_TAG`], [`PROBE_TAG`]): no task
/// receives them.
pub fn is_kernel_frame(tag: u32) -> bool {
    tag == TCP_ACK_TAG || tag == ARP_TAG || tag == PROBE_TAG
}

/// The largest [`Trace::wake`], [`Trace::contact`], [`Trace::tick`],
/// [`Trace::handshake`], [`Trace::rx`], [`TcpTimers::probe`] and
/// [`TcpTimers::delack`], node cycles (2^40: hours of guest time).
pub const MAX_DELAY_CYCLES: u64 = 1 << 40;

/// The largest [`Trace::arp`] and [`TcpTimers::ack`], bytes: one
/// Ethernet frame (1,514 bytes without its check sequence).
pub const MAX_FRAME_BYTES: u64 = 1514;

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// FSIN `.trc`.
    Trc,
    /// Dimemas (`#DIMEMAS` header), see [`dimemas`].
    Dimemas,
    /// alog (MPE's ASCII log), see [`alog`].
    Alog,
}

impl TraceFormat {
    /// Every format, with its name (`fsin kernel --format`).
    pub const ALL: [(&'static str, TraceFormat); 3] = [
        ("trc", TraceFormat::Trc),
        ("dimemas", TraceFormat::Dimemas),
        ("alog", TraceFormat::Alog),
    ];

    /// The format called `name` in [`TraceFormat::ALL`] (`trc`, `dimemas`,
    /// `alog`).
    pub fn named(name: &str) -> Option<TraceFormat> {
        TraceFormat::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, f)| f)
    }

    /// The format of trace `text`, told as INSEE tells it (trace.c,
    /// `read_trace`): by its first characters.
    pub fn of(text: &str) -> TraceFormat {
        if text.starts_with("#DIMEMAS") {
            TraceFormat::Dimemas
        } else if text.starts_with('-') {
            TraceFormat::Alog
        } else {
            TraceFormat::Trc
        }
    }
}

/// A malformed trace: which file, line and field, and why.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("cannot read trace {file}: {source}")]
    Read {
        /// The trace's path.
        file: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A line that is not an event, directive or header of its format.
    #[error("{file}:{line}: {what}")]
    Syntax {
        /// The trace's path.
        file: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it: the field at fault and why.
        what: String,
    },
    /// An event names a task that has no node (see [`Trace::check_within`]).
    #[error("{origin}: task {task} is beyond the {limit} nodes the trace runs on")]
    Beyond {
        /// Where the trace came from (its path or name).
        origin: String,
        /// The task named.
        task: u32,
        /// The nodes the trace runs on.
        limit: u32,
    },
}

/// Largest task id accepted (ids index per-task tables).
pub const MAX_TASK: u64 = 1 << 24;

/// Largest message accepted, bytes (4 GiB: beyond any MPI count of a
/// 32-bit `int`; larger ones would take longer to simulate than anyone
/// waits, and their packet counts would overflow).
pub const MAX_MESSAGE_BYTES: u64 = 1 << 32;

/// Largest computation accepted, CPU units (2^40: in nanoseconds 18
/// minutes, in milliseconds 35 years; any unit converts to cycles without
/// passing 2^64).
pub const MAX_CPU_AMOUNT: u64 = 1 << 40;

/// Reads the trace at `path`.
///
/// # Errors
/// [`TraceError`] naming the file, the line and the field: unknown event
/// letter, wrong field count, a number that does not parse, a task id over
/// [`MAX_TASK`], a message over [`MAX_MESSAGE_BYTES`], a computation over
/// [`MAX_CPU_AMOUNT`], a task sending to itself.
pub fn parse(path: &Path) -> Result<Trace, TraceError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
        file: file.clone(),
        source,
    })?;
    parse_str(&text, &file)
}

/// [`parse`] on text already read, in the format [`TraceFormat::of`] finds;
/// `file` names it in errors.
///
/// # Errors
/// As [`parse`], and as [`dimemas`] and [`alog`] say for theirs.
pub fn parse_str(text: &str, file: &str) -> Result<Trace, TraceError> {
    match TraceFormat::of(text) {
        TraceFormat::Trc => parse_trc(text, file),
        TraceFormat::Dimemas => dimemas::parse(text, file),
        TraceFormat::Alog => alog::parse(text, file),
    }
}

/// The name that [`Trace::write`] put in `text`: a `.trc`'s last `# `
/// comment line (the frame directive aside), a Dimemas header's quoted
/// name; `None` where there is none (alog keeps no name). [`parse`] names
/// a trace after its file instead, for error messages.
pub fn title(text: &str) -> Option<String> {
    match TraceFormat::of(text) {
        TraceFormat::Dimemas => {
            let header = text.lines().next()?;
            let quoted = header.strip_prefix("#DIMEMAS:\"")?;
            quoted.split_once("\":").map(|(name, _)| name.to_string())
        }
        TraceFormat::Trc => text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("# "))
            .map(str::to_string),
        TraceFormat::Alog => None,
    }
}

/// A numeric field of a trace record that is wrong (the `what` of
/// [`TraceError::Syntax`], in every format).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FieldError {
    #[error("field {name} = `{text}` is not a number")]
    NotANumber { name: String, text: String },
    #[error("field {name} = {value} is over {max}")]
    TooLarge { name: String, value: u64, max: u64 },
}

/// Field `name` of a record, whose text is `text`, as a number of at most
/// `max`.
pub(crate) fn number(text: &str, name: &str, max: u64) -> Result<u64, FieldError> {
    let value = text.parse::<u64>().map_err(|_| FieldError::NotANumber {
        name: name.to_string(),
        text: text.to_string(),
    })?;
    if value > max {
        return Err(FieldError::TooLarge {
            name: name.to_string(),
            value,
            max,
        });
    }
    Ok(value)
}

impl Trace {
    /// Node cycles that the kernel's receive of a frame with `tag` takes
    /// (of a busy task's CPU, and of the NIC's poll with a window):
    /// [`Trace::arp_rx`] for an ARP request ([`ARP_TAG`]) where it is
    /// given, else [`Trace::rx`].
    pub fn rx_of(&self, tag: u32) -> u64 {
        if tag == ARP_TAG && self.arp_rx > 0 {
            self.arp_rx
        } else {
            self.rx
        }
    }

    /// Reads the words after [`MPI_DIRECTIVE`] into the trace's MPI
    /// model fields.
    ///
    /// # Errors
    /// A word the directive does not take, or a value out of its range.
    fn read_mpi_directive(&mut self, rest: &str) -> Result<(), String> {
        for word in rest.split_whitespace() {
            let bounded = |key: &str, max: u64| {
                word.strip_prefix(key)
                    .and_then(|n| n.parse().ok())
                    .filter(|&n: &u64| n <= max)
            };
            let value = |key: &str| bounded(key, MAX_DELAY_CYCLES);
            let fields = [
                (value("wake="), &mut self.wake),
                (value("poll="), &mut self.poll),
                (value("contact="), &mut self.contact),
                (value("tick="), &mut self.tick),
                (value("handshake="), &mut self.handshake),
                (value("rx="), &mut self.rx),
                (value("irq="), &mut self.irq),
                (value("arp_rx="), &mut self.arp_rx),
                (bounded("arp=", MAX_FRAME_BYTES), &mut self.arp),
                (value("probe="), &mut self.tcp.probe),
                (value("delack="), &mut self.tcp.delack),
                (bounded("ack=", MAX_FRAME_BYTES), &mut self.tcp.ack),
            ];
            if word == "connected=1" {
                self.connected = true;
                continue;
            }
            let Some((Some(v), field)) = fields.into_iter().find(|(v, _)| v.is_some()) else {
                return Err(format!(
                "`{MPI_DIRECTIVE}` takes wake=N, poll=N, contact=N, tick=N, handshake=N, rx=N, irq=N, arp_rx=N, probe=N and delack=N (node cycles, at most {MAX_DELAY_CYCLES}), arp=N and ack=N (bytes, at most {MAX_FRAME_BYTES}) and connected=1, not `{word}`"
            ));
            };
            *field = v;
        }
        Ok(())
    }
}

fn parse_trc(text: &str, file: &str) -> Result<Trace, TraceError> {
    let mut t = Trace {
        name: file.to_string(),
        ..Trace::default()
    };
    // Each group line's line, task, and groups of the task so far.
    let mut group_lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| TraceError::Syntax {
            file: file.to_string(),
            line,
            what,
        };
        if raw.trim_end() == FRAMES_DIRECTIVE {
            t.frames = true;
            continue;
        }
        if let Some(rest) = raw.trim_end().strip_prefix(MPI_DIRECTIVE) {
            if !t.frames {
                return Err(err(format!(
                    "`{MPI_DIRECTIVE}` marks a lowered frame trace; it follows the `{FRAMES_DIRECTIVE}` line"
                )));
            }
            t.read_mpi_directive(rest).map_err(err)?;
            t.mpi = true;
            continue;
        }
        if let Some(rest) = raw.trim_end().strip_prefix(GROUP_DIRECTIVE) {
            if !t.mpi {
                return Err(err(format!(
                    "`{GROUP_DIRECTIVE}` belongs to a lowered frame trace; it follows the `{MPI_DIRECTIVE}` line"
                )));
            }
            let task = t.read_recv_group(rest).map_err(err)?;
            group_lines.push((line, task, t.recv_groups[task as usize].len()));
            continue;
        }
        let body = raw.split('#').next().unwrap_or("");
        let f: Vec<&str> = body.split_whitespace().collect();
        let Some(&kind) = f.first() else { continue };
        let want = match kind {
            "s" | "r" => 5,
            "c" => 3,
            other => return Err(err(format!("unknown event `{other}` (expected s, r or c)"))),
        };
        if f.len() != want {
            return Err(err(format!(
                "`{kind}` takes {} fields after the letter, found {}",
                want - 1,
                f.len() - 1
            )));
        }
        let at_most = |k: usize, name: &str, max: u64| {
            number(f[k], name, max).map_err(|e| err(e.to_string()))
        };
        let task = |k: usize, name: &str| at_most(k, name, MAX_TASK).map(|v| v as u32);
        let line = line as u32;
        match kind {
            "c" => {
                let n = task(1, "task")?;
                let amount = at_most(2, "amount", MAX_CPU_AMOUNT)?;
                t.push(n, Event::Cpu { amount }, line);
            }
            _ => {
                let src = task(1, "src")?;
                let dst = task(2, "dst")?;
                let tag = u32::try_from(at_most(3, "tag", u64::MAX)?)
                    .map_err(|_| err(format!("field tag = {} is over 2^32", f[3])))?;
                let bytes = at_most(4, "bytes", MAX_MESSAGE_BYTES)?;
                if src == dst {
                    return Err(err(format!("task {src} sends to itself")));
                }
                if kind == "s" {
                    t.push(src, Event::Send { dst, tag, bytes }, line);
                } else {
                    t.push(dst, Event::Recv { src, tag, bytes }, line);
                }
            }
        }
    }
    for (task, _) in t.recv_groups.iter().enumerate() {
        t.check_recv_groups(task as u32).map_err(|(k, what)| {
            let line = group_lines
                .iter()
                .find(|&&(_, g, n)| g as usize == task && n == k + 1)
                .map_or(0, |&(line, _, _)| line);
            TraceError::Syntax {
                file: file.to_string(),
                line,
                what,
            }
        })?;
    }
    Ok(t)
}

impl Trace {
    /// An empty trace of `tasks` tasks built in memory.
    pub fn new(name: &str, tasks: usize) -> Trace {
        Trace {
            name: name.to_string(),
            tasks: vec![Vec::new(); tasks],
            ..Trace::default()
        }
    }

    /// Appends `call` to `task`'s MPI calls ([`Trace::calls`]).
    pub fn push_call(&mut self, task: usize, call: mpi::lower::LoweredCall) {
        if self.calls.len() <= task {
            self.calls.resize(task + 1, Vec::new());
        }
        self.calls[task].push(call);
    }

    /// Appends `event` to `task`'s queue (growing the task count to cover
    /// every task the event names), with the
    /// file line it comes from (ignored by traces built in memory: pass 0).
    pub fn push(&mut self, task: u32, event: Event, line: u32) {
        let i = task as usize;
        let count = i.max(event.peer(task) as usize) + 1;
        if self.tasks.len() < count {
            self.tasks.resize(count, Vec::new());
        }
        self.tasks[i].push(event);
        if line > 0 {
            if self.lines.len() <= i {
                self.lines.resize(i + 1, Vec::new());
            }
            self.lines[i].push(line);
        }
    }

    /// Appends a message: `src` sends it, `dst` waits for it.
    pub fn message(&mut self, src: u32, dst: u32, tag: u32, bytes: u64) {
        self.push(src, Event::Send { dst, tag, bytes }, 0);
        self.push(dst, Event::Recv { src, tag, bytes }, 0);
    }

    /// Number of tasks (largest id named by any event plus one).
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Number of messages sent.
    pub fn sends(&self) -> usize {
        self.tasks
            .iter()
            .flatten()
            .filter(|e| matches!(e, Event::Send { .. }))
            .count()
    }

    /// Where event `k` of `task` comes from: `file:line`, or the kernel's
    /// name and the event's position.
    pub fn origin(&self, task: u32, k: usize) -> String {
        match self.lines.get(task as usize).and_then(|l| l.get(k)) {
            Some(line) => format!("{}:{line}", self.name),
            None => format!("{} task {task} event {}", self.name, k + 1),
        }
    }

    /// The first event (in file order) that names a task id `>= limit`,
    /// as `(task performing it, index in its queue, id named)`.
    pub fn first_beyond(&self, limit: u32) -> Option<(u32, usize, u32)> {
        let mut found: Option<(u32, u32, usize, u32)> = None;
        for (task, events) in self.tasks.iter().enumerate() {
            let task = task as u32;
            for (k, e) in events.iter().enumerate() {
                let named = task.max(e.peer(task));
                if named < limit {
                    continue;
                }
                let line = self
                    .lines
                    .get(task as usize)
                    .and_then(|l| l.get(k))
                    .copied()
                    .unwrap_or(0);
                if found.is_none_or(|f| line < f.0) {
                    found = Some((line, task, k, named));
                }
                break;
            }
        }
        found.map(|(_, task, k, named)| (task, k, named))
    }

    /// Checks that every event names tasks below `limit`.
    ///
    /// # Errors
    /// [`TraceError::Beyond`] for the first event (in file order) that
    /// names a task `>= limit`.
    pub fn check_within(&self, limit: u32) -> Result<(), TraceError> {
        match self.first_beyond(limit) {
            None => Ok(()),
            Some((task, k, named)) => Err(TraceError::Beyond {
                origin: self.origin(task, k),
                task: named,
                limit,
            }),
        }
    }

    /// The trace as text of `format`: every task's events in its order
    /// (tasks one after another), which [`parse_str`] reads back to
    /// `self`'s event queues (alog has no computation: CPU events are left
    /// out; Dimemas takes CPU amounts as network cycles).
    pub fn write(&self, format: TraceFormat) -> String {
        match format {
            TraceFormat::Trc => self.write_trc(),
            TraceFormat::Dimemas => dimemas::write(self),
            TraceFormat::Alog => alog::write(self),
        }
    }

    /// `.trc` text; the name comes last, as INSEE takes a file that begins
    /// with `#` for Dimemas.
    fn write_trc(&self) -> String {
        let mut s = String::new();
        for (task, events) in self.tasks.iter().enumerate() {
            for e in events {
                let _ = match *e {
                    Event::Send { dst, tag, bytes } => writeln!(s, "s {task} {dst} {tag} {bytes}"),
                    Event::Recv { src, tag, bytes } => writeln!(s, "r {src} {task} {tag} {bytes}"),
                    Event::Cpu { amount } => writeln!(s, "c {task} {amount}"),
                };
            }
        }
        let _ = writeln!(s, "# {}", self.name);
        if self.frames {
            let _ = writeln!(s, "{FRAMES_DIRECTIVE}");
            if self.mpi {
                let _ = write!(s, "{MPI_DIRECTIVE}");
                let words = [
                    ("wake", self.wake),
                    ("poll", self.poll),
                    ("contact", self.contact),
                    ("tick", self.tick),
                    ("handshake", self.handshake),
                    ("rx", self.rx),
                    ("irq", self.irq),
                    ("arp_rx", self.arp_rx),
                    ("arp", self.arp),
                    ("probe", self.tcp.probe),
                    ("delack", self.tcp.delack),
                    ("ack", self.tcp.ack),
                ];
                for (key, v) in words.into_iter().filter(|&(_, v)| v > 0) {
                    let _ = write!(s, " {key}={v}");
                }
                if self.connected {
                    s.push_str(" connected=1");
                }
                s.push('\n');
                self.write_recv_groups(&mut s);
            }
        }
        s
    }
}

/// Asserts that each `(text, start)` of `cases`, read as file `file`,
/// fails with a message that starts with `start`.
#[cfg(test)]
fn expect_errors(file: &str, cases: &[(&str, &str)]) {
    for &(text, want) in cases {
        let e = parse_str(text, file).unwrap_err().to_string();
        assert!(e.starts_with(want), "{e} (wanted {want})");
    }
}

#[cfg(test)]
mod tests;
