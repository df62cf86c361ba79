//! A QEMU TCG plugin (QEMU 10, `-icount shift=3,sleep=off`) that runs a
//! guest in slice-based lock-step with the fsin co-simulation (Simics
//! paper, with QEMU in the role of Simics) and carries its NIC's frames.
//!
//! **Guest time.** Under `-icount ..,sleep=off` QEMU's virtual clock
//! advances 2^shift ns per executed instruction and, when every vCPU is
//! halted, jumps straight to the next virtual timer: idle time is skipped,
//! not executed. The plugin keeps one virtual timer of its own at the next
//! thing it must do (a frame to deliver, or the slice end), so QEMU bounds
//! every run of instructions, and every idle jump, by it: the vCPU stops at
//! the exact instruction where guest time reaches the timer, and an idle
//! guest reaches it at once. The timer's callback runs with the vCPU
//! stopped and QEMU's big lock held; there the plugin hands due frames to
//! the NIC and, at a slice end, reports on the slice board
//! (`fsin_qemu_wire::board`) and waits there for nic-bridge's next slice.
//!
//! **Checkpoints.** When nic-bridge pauses the board instead of starting a
//! slice, the plugin stops the idle VM where it stands ([`pause_vm`]), so
//! that no further instruction runs, and nic-bridge saves the guest with QEMU's
//! migration (docs/qemu.md, "Boot once, run many"). A guest restored from
//! that file loads this plugin afresh: its timer, armed at guest time 0,
//! fires at once at the restored time and waits there for the first slice
//! of a new board.
//!
//! **Idle time.** Each idle jump moves guest time by adding to icount's
//! bias (guest time = bias + executed instructions x 2^shift) and notifies
//! the virtual clock's timer lists, which this plugin watches
//! ([`notify_if_timers`]). At every such notification with every vCPU
//! halted it reads the instruction count and the bias ([`observe_idle`]),
//! so it knows the guest time of the last instruction before the halt.
//! When frames it delivers find the guest idle, it tells nic-bridge since
//! when (`FromPlugin::Woke`): that idle time ended at the frames' arrival,
//! and `--trace-out` counts it as a wait for the network (docs/model.md,
//! "Traces out of live runs").
//!
//! **Frames.** The plugin takes over the `-netdev` named by `netdev=ID`:
//! frames the guest's NIC transmits come to the plugin (in the vCPU thread,
//! during the register write that sends them) and go to nic-bridge with the
//! guest time of that instruction; frames from nic-bridge enter the NIC at
//! the guest time they are due. Nothing depends on host timing, so a run is
//! repeatable: same inputs, same instructions, same frames at the same
//! times.
//!
//! **Kernel time.** With `kernel=on` the plugin counts the instructions
//! the guest executes at kernel addresses (an inline add in every kernel
//! block QEMU translates, which executes no guest instruction, so guest
//! time is unchanged) and reports the count at every slice end on the
//! board: under icount that is the guest kernel's time (interrupts,
//! system calls, page faults, the scheduler).
//!
//! Load it with `-plugin
//! PATH/libfsin_qemu_plugin.so,sock=SOCKET,board=FILE,slot=I,netdev=ID[,kernel=on]`
//! next to `-icount shift=N,sleep=off`; nic-bridge listens on the Unix
//! socket `SOCKET`, made the slice board `FILE` in which this guest is
//! `I`, and speaks `fsin_qemu_wire`.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, Once, OnceLock};
use std::time::Duration;

use fsin_qemu_wire::board::{self, Wait};
use fsin_qemu_wire::{FromPlugin, ToPlugin};

mod api;

/// Plugin API version this plugin declares: 3, the one that brought the
/// scoreboards its kernel count uses (see `api`).
#[no_mangle]
pub static qemu_plugin_version: c_int = 3;

/// The socket to nic-bridge, written from the vCPU thread (frames sent)
/// and from the timer callback (slice ends).
static OUT: Mutex<Option<UnixStream>> = Mutex::new(None);

/// Bytes written on the socket so far (what the board's `sent_bytes`
/// reports at each slice end).
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// What the timer callback keeps between slices.
struct Slices {
    /// The socket's read side.
    input: UnixStream,
    /// Bytes read but not yet decoded.
    buf: Vec<u8>,
    /// Bytes of messages decoded so far.
    decoded: u64,
    /// The slice board.
    board: board::Plugin,
    /// The board round of the current slice (of the first before it
    /// starts).
    round: u64,
    /// End of the current slice, guest ns; `None` before the first.
    until_ns: Option<u64>,
    /// Frames to deliver, in time order.
    due: VecDeque<(u64, Vec<u8>)>,
}

static SLICES: Mutex<Option<Slices>> = Mutex::new(None);

/// nic-bridge paused the board: the VM is being stopped for a checkpoint.
static PAUSED: AtomicBool = AtomicBool::new(false);

/// The scoreboard entry that counts the guest's instructions at kernel
/// addresses ([`count_kernel`]): set at install with `kernel=on`.
struct KernelCount(api::PluginU64);

// SAFETY: QEMU's scoreboard handle, written once at install and only read
// after (its counts are QEMU's to update).
unsafe impl Send for KernelCount {}
unsafe impl Sync for KernelCount {}

static KERNEL: OnceLock<KernelCount> = OnceLock::new();

/// The lowest kernel address of x86-64 (the upper half of a 48-bit or
/// 57-bit address space): a block that starts there runs in the kernel.
const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

/// Translation callback: a block of the kernel adds its instructions to
/// [`KERNEL`] each time it runs. Under icount these are guest time
/// (2^shift ns each) and the inline add changes none of them.
unsafe extern "C" fn count_kernel(_id: u64, tb: *mut c_void) {
    let Some(k) = KERNEL.get() else { return };
    // SAFETY: `tb` is the block QEMU is translating, valid in this
    // callback.
    unsafe {
        if api::qemu_plugin_tb_vaddr(tb) >= KERNEL_BASE {
            let n = api::qemu_plugin_tb_n_insns(tb) as u64;
            api::qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, api::INLINE_ADD_U64, k.0, n);
        }
    }
}

/// Instructions the guest has executed at kernel addresses since the
/// plugin was installed (0 without the count).
fn kernel_insns() -> u64 {
    // SAFETY: the scoreboard lives for the run; read at a slice end,
    // with the vCPU stopped.
    KERNEL
        .get()
        .map_or(0, |k| unsafe { api::qemu_plugin_u64_sum(k.0) })
}

/// The taken-over netdev.
static NETDEV: AtomicPtr<api::NetClient> = AtomicPtr::new(std::ptr::null_mut());

/// The plugin's virtual timer (lives for the whole run).
static TIMER: AtomicPtr<api::Timer> = AtomicPtr::new(std::ptr::null_mut());

/// Guest virtual time, ns.
fn now_ns() -> u64 {
    // SAFETY: QEMU's clock read; valid from any thread once QEMU runs.
    unsafe { api::qemu_clock_get_ns(api::CLOCK_VIRTUAL) }.max(0) as u64
}

/// Ends the run: nic-bridge is gone or broke the protocol.
fn fatal(what: &str) -> ! {
    eprintln!("fsin-qemu-plugin: {what}; stopping the guest");
    std::process::exit(1);
}

fn send(msg: &FromPlugin) {
    let mut bytes = Vec::new();
    msg.encode(&mut bytes);
    let mut out = OUT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = out.as_mut() {
        if let Err(e) = s.write_all(&bytes) {
            fatal(&format!("lost nic-bridge ({e})"));
        }
        WRITTEN.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }
}

impl Slices {
    /// Waits on the board for the next slice, then reads its deliveries
    /// from the socket (up to the board's byte count) into the queue;
    /// false when nic-bridge paused the board instead.
    fn next_slice(&mut self) -> bool {
        let (until_ns, delivered) = loop {
            match self.board.wait(self.round, Duration::from_secs(1)) {
                Wait::Run {
                    until_ns,
                    delivered_bytes,
                } => break (until_ns, delivered_bytes),
                Wait::Stop => fatal("nic-bridge ended the run"),
                Wait::Pause => return false,
                Wait::Timeout => {
                    // Waiting is normal (other guests run); a closed socket
                    // is a nic-bridge that died without ending the run.
                    if let Ok((0, _)) = rustix::net::recv(
                        &self.input,
                        &mut [0u8; 1],
                        rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT,
                    ) {
                        fatal("nic-bridge closed the socket");
                    }
                }
            }
        };
        while self.decoded < delivered {
            match ToPlugin::decode(&self.buf) {
                Err(e) => fatal(&format!("bad message from nic-bridge: {e}")),
                Ok(Some((ToPlugin::Deliver { at_ns, frame }, n))) => {
                    self.buf.drain(..n);
                    self.decoded += n as u64;
                    self.due.push_back((at_ns, frame));
                }
                Ok(None) => {
                    let mut chunk = [0u8; 16 * 1024];
                    match self.input.read(&mut chunk) {
                        Ok(0) => fatal("nic-bridge closed the socket"),
                        Ok(k) => self.buf.extend_from_slice(&chunk[..k]),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => fatal(&format!("lost nic-bridge ({e})")),
                    }
                }
            }
        }
        self.until_ns = Some(until_ns);
        true
    }

    /// Frames due at or before `now`, removed from the queue.
    fn take_due(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while self.due.front().is_some_and(|(at, _)| *at <= now) {
            out.extend(self.due.pop_front().map(|(_, f)| f));
        }
        out
    }
}

/// Hands `frames` to the guest's NIC (QEMU's big lock is held).
fn deliver(frames: Vec<Vec<u8>>) {
    let nc = NETDEV.load(Ordering::Acquire);
    for f in frames {
        // SAFETY: `nc` is the netdev found at install, alive for the run;
        // QEMU queues the frame while the NIC cannot take it.
        unsafe { api::qemu_send_packet(nc, f.as_ptr(), f.len() as c_int) };
    }
}

/// The guest's idle time as the plugin last saw it ([`observe_idle`]).
#[derive(Clone, Copy)]
struct IdleTrack {
    /// icount's bias (guest ns not spent executing) at the last look.
    bias: i64,
    /// The instruction count of the current halt and the guest time of its
    /// last instruction.
    halt_insns: i64,
    halt_ns: u64,
}

static IDLE: Mutex<Option<IdleTrack>> = Mutex::new(None);

/// Looks at the guest while every vCPU is halted, at guest time `now`: a
/// changed instruction count is a new halt, whose last instruction ran
/// before any idle jump since the previous look (every jump notifies the
/// clock's timer lists, and every notification with the vCPUs halted
/// comes here), so at the previous look's bias. Returns the guest time
/// of the current halt's last instruction.
fn observe_idle(now: u64) -> u64 {
    // SAFETY: QEMU's icount reads, made while no vCPU runs.
    let (insns, executed) = unsafe {
        let insns = api::icount_get_raw();
        (insns, api::icount_to_ns(insns))
    };
    let bias = now as i64 - executed;
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    let t = idle.get_or_insert(IdleTrack {
        bias,
        halt_insns: insns,
        halt_ns: now,
    });
    if insns != t.halt_insns {
        t.halt_insns = insns;
        t.halt_ns = (t.bias + executed).max(0) as u64;
    }
    t.bias = bias;
    t.halt_ns
}

/// What the guest promises at a slice end: the guest time of its next timer
/// when every vCPU is halted (`u64::MAX`: none), else 0.
fn idle_until(now: u64) -> u64 {
    // SAFETY: QEMU's own queries, made with its big lock held.
    unsafe {
        if !api::all_cpu_threads_idle() {
            return 0;
        }
        match api::qemu_clock_deadline_ns_all(api::CLOCK_VIRTUAL, api::TIMER_ATTR_ALL) {
            d if d < 0 => u64::MAX,
            d => now.saturating_add(d as u64),
        }
    }
}

/// A virtual-clock timer list other than the main loop's (an AioContext's)
/// and the notifier it had.
struct Notifier {
    opaque: usize,
    list: usize,
    cb: api::NotifyCb,
}

/// The timer lists whose notifier [`notify_if_timers`] now filters.
static FILTERED: OnceLock<Vec<Notifier>> = OnceLock::new();

/// Forwards a timer list's notification only when the list holds a timer:
/// an empty list has no deadline to recompute.
unsafe extern "C" fn notify_if_timers(opaque: *mut c_void, clock: c_int) {
    let Some(n) = FILTERED
        .get()
        .and_then(|v| v.iter().find(|n| n.opaque == opaque as usize))
    else {
        return;
    };
    // SAFETY: QEMU's own query; an idle jump notifies with the vCPUs halted.
    if clock == api::CLOCK_VIRTUAL && unsafe { api::all_cpu_threads_idle() } {
        observe_idle(now_ns());
    }
    let list = n.list as *mut api::TimerList;
    // SAFETY: a live timer list (QEMU never frees the main AioContext's);
    // QEMU itself reads its head atomically without the lock
    // (`timerlist_has_timers`).
    let head =
        unsafe { &*(std::ptr::addr_of!((*list).active_timers) as *const AtomicPtr<api::Timer>) };
    if !head.load(Ordering::Acquire).is_null() {
        // SAFETY: the list's own notifier with its own argument.
        unsafe { (n.cb)(opaque, clock) };
    }
}

/// Under icount the vCPU thread notifies every virtual-clock timer list
/// each time guest time reaches a timer (`icount_notify_aio_contexts`), so
/// at every slice end. The main AioContext's notifier writes its eventfd:
/// QEMU's main loop wakes, waits for the big lock that this plugin holds
/// until the next slice, and wakes again to take it, though that list has
/// no timer. Filtering the notifications of lists other than the main
/// loop's own ([`notify_if_timers`]) saves those two wake-ups per guest and
/// slice and changes nothing the guest sees. An error when QEMU's lists do
/// not look as `api` says (then nothing is changed).
fn filter_timer_notifications() -> Result<(), PluginError> {
    // SAFETY: QEMU's timer lists, walked and changed with its big lock
    // held (on_timer), as QEMU itself does (`qemu_clock_notify`); every
    // pointer is checked against the layout before it is followed further.
    unsafe {
        let main = api::main_loop_tlg[api::CLOCK_VIRTUAL as usize];
        let main_cb = api::qemu_timer_notify_cb as *const () as usize;
        if main.is_null() || (*main).notify_cb.map(|f| f as usize) != Some(main_cb) {
            return Err(PluginError::TimerLayout(
                "the main loop's virtual timer list",
            ));
        }
        let clock = (*main).clock;
        let mut found = Vec::new();
        let mut list = *clock;
        while !list.is_null() {
            if (*list).clock != clock || found.len() > 64 {
                return Err(PluginError::TimerLayout("a virtual timer list"));
            }
            if let (false, Some(cb)) = (list == main, (*list).notify_cb) {
                found.push(Notifier {
                    opaque: (*list).notify_opaque as usize,
                    list: list as usize,
                    cb,
                });
            }
            list = (*list).next;
        }
        // Recorded before any list points at the filter, which looks here.
        let _ = FILTERED.set(found);
        for n in FILTERED.get().into_iter().flatten() {
            (*(n.list as *mut api::TimerList)).notify_cb = Some(notify_if_timers);
        }
        Ok(())
    }
}

/// The plugin's timer: guest time has reached a delivery or the slice end.
/// Runs with the vCPU stopped and QEMU's big lock held.
extern "C" fn on_timer(_opaque: *mut c_void) {
    static FILTER: Once = Once::new();
    FILTER.call_once(|| {
        if let Err(e) = filter_timer_notifications() {
            eprintln!("fsin-qemu-plugin: {e}; QEMU's main loop will wake at every slice end");
        }
    });
    let now = now_ns();
    if PAUSED.load(Ordering::Relaxed) {
        // SAFETY: QEMU's own query, with its big lock held.
        if unsafe { api::runstate_is_running() } {
            // SAFETY: as in `pause_vm`.
            unsafe { api::timer_mod_ns(TIMER.load(Ordering::Acquire), now as i64 + 1) };
        }
        return;
    }
    let mut guard = SLICES.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = guard.as_mut() else { return };
    let mut frames = s.take_due(now);
    if s.until_ns.is_none_or(|u| now >= u) {
        if s.until_ns.is_some() {
            let idle = if frames.is_empty() && s.due.is_empty() {
                idle_until(now)
            } else {
                0
            };
            let reached = board::Reached {
                at_ns: now,
                idle_until_ns: idle,
                sent_bytes: WRITTEN.load(Ordering::Relaxed),
                kernel_insns: kernel_insns(),
            };
            if s.board.reach(s.round, reached) {
                send(&FromPlugin::AllReached { round: s.round });
            }
            s.round += 1;
        }
        if !s.next_slice() {
            PAUSED.store(true, Ordering::Relaxed);
            drop(guard);
            pause_vm(now);
            return;
        }
        frames.extend(s.take_due(now));
    }
    let next = s
        .due
        .front()
        .map_or(u64::MAX, |(at, _)| *at)
        .min(s.until_ns.unwrap_or(now));
    drop(guard);
    // SAFETY: QEMU's own query, with its big lock held.
    if !frames.is_empty() && unsafe { api::all_cpu_threads_idle() } {
        send(&FromPlugin::Woke {
            at_ns: now,
            idle_from_ns: observe_idle(now),
        });
    }
    deliver(frames);
    // QEMU's clock is an i64: a later time means never.
    let next = next.min(i64::MAX as u64) as i64;
    // SAFETY: the timer was initialised at install and lives for the run.
    unsafe { api::timer_mod_ns(TIMER.load(Ordering::Acquire), next) };
}

/// Stops the VM where it stands, from [`on_timer`] at a slice end where
/// the guest idles (nic-bridge pauses only there). QEMU's stop cannot run
/// inside a virtual-clock timer (it waits for the running timers, with
/// the big lock held), so the plugin asks the main loop for it and keeps
/// its timer 1 ns ahead until the VM has stopped ([`PAUSED`]): QEMU
/// cannot jump an idle guest's clock past it to the guest's own next
/// timer, so no interrupt wakes the guest and no instruction runs; guest
/// time creeps by a few ns, which an idle guest cannot see (its timers are
/// at fixed guest times).
fn pause_vm(now: u64) {
    // SAFETY: QEMU's stop request, valid from any thread; the timer was
    // initialised at install and lives for the run.
    unsafe {
        api::qemu_system_vmstop_request_prepare();
        api::qemu_system_vmstop_request(api::RUN_STATE_PAUSED);
        api::timer_mod_ns(TIMER.load(Ordering::Acquire), now as i64 + 1);
    }
}

/// The taken-over netdev's receive method: the guest's NIC transmitted a
/// frame (in the vCPU thread, during the instruction that sent it).
unsafe extern "C" fn nic_sent(_nc: *mut api::NetClient, buf: *const u8, size: usize) -> isize {
    let frame = if buf.is_null() {
        Vec::new()
    } else {
        // SAFETY: QEMU passes `size` readable bytes.
        unsafe { std::slice::from_raw_parts(buf, size) }.to_vec()
    };
    send(&FromPlugin::Sent {
        at_ns: now_ns(),
        frame,
    });
    size as isize
}

/// The taken-over netdev always takes frames: none waits in QEMU's queue.
unsafe extern "C" fn nic_ready(_nc: *mut api::NetClient) -> bool {
    true
}

/// The `KEY=VALUE` argument.
fn arg(argc: c_int, argv: *const *const c_char, key: &str) -> Option<String> {
    (0..argc.max(0) as usize).find_map(|i| {
        // SAFETY: QEMU passes `argc` valid C strings.
        let a = unsafe { CStr::from_ptr(*argv.add(i)) }.to_str().ok()?;
        a.strip_prefix(key)?.strip_prefix('=').map(str::to_string)
    })
}

/// Why the plugin cannot couple its guest (QEMU then refuses to start).
#[derive(Debug, thiserror::Error)]
enum PluginError {
    #[error("needs QEMU 10.0 (its internal layouts are this plugin's), this is {0}.{1} (scripts/install-qemu.sh installs 10.0)")]
    QemuVersion(i64, i64),
    #[error("needs -icount shift=N,sleep=off")]
    NoIcount,
    #[error("missing the {0} argument")]
    MissingArgument(&'static str),
    #[error("cannot use the slice board {path}: {source}")]
    Board {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot connect to nic-bridge at {path}: {source}")]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot use {path}: {source}")]
    Socket {
        path: String,
        source: std::io::Error,
    },
    #[error("bad netdev id {0:?}")]
    BadNetdevId(String),
    #[error("no -netdev with id={0}")]
    NoNetdev(String),
    /// QEMU's timer lists differ from the layout `api` describes.
    #[error("{0} is not laid out as in QEMU 10.0")]
    TimerLayout(&'static str),
}

/// Takes over netdev `id`: its receive method becomes [`nic_sent`].
fn take_netdev(id: &str) -> Result<(), PluginError> {
    let cid = CString::new(id).map_err(|_| PluginError::BadNetdevId(id.to_string()))?;
    // SAFETY: QEMU's lookup; the netdevs exist when plugins are installed.
    let nc = unsafe { api::qemu_find_netdev(cid.as_ptr()) };
    if nc.is_null() {
        return Err(PluginError::NoNetdev(id.to_string()));
    }
    // SAFETY: `nc` is a live NetClientState whose first field points to its
    // NetClientInfo (QEMU 10.0 layout, `api`); the copy is leaked so that
    // it lives as long as the netdev. The link is forced up: frames come
    // from the plugin, not from the netdev's own socket.
    unsafe {
        let mut info = *(*nc).info;
        info.receive = Some(nic_sent);
        info.receive_iov = std::ptr::null();
        info.can_receive = Some(nic_ready);
        (*nc).info = Box::into_raw(Box::new(info));
        (*nc).link_down = 0;
    }
    NETDEV.store(nc, Ordering::Release);
    Ok(())
}

/// QEMU's major and minor version.
fn qemu_version() -> (i64, i64) {
    // SAFETY: QEMU's `query-version`, which cannot fail; the result is
    // freed with QAPI's own function.
    unsafe {
        let v = api::qmp_query_version(std::ptr::null_mut());
        if v.is_null() || (*v).qemu.is_null() {
            return (0, 0);
        }
        let t = &*(*v).qemu;
        let out = (t.major, t.minor);
        api::qapi_free_VersionInfo(v);
        out
    }
}

/// Plugin entry point: connects to nic-bridge, takes over the netdev and
/// arms the timer at guest time 0 (the first slice is read there).
///
/// # Safety
/// Called by QEMU with its plugin id and `argc` valid argument strings.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: u64,
    _info: *const c_void,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    let setup = || -> Result<(), PluginError> {
        let version = qemu_version();
        if version != (10, 0) {
            return Err(PluginError::QemuVersion(version.0, version.1));
        }
        // SAFETY: set by QEMU before plugins are loaded.
        if unsafe { api::use_icount } != 1 {
            return Err(PluginError::NoIcount);
        }
        let missing = PluginError::MissingArgument;
        let path = arg(argc, argv, "sock").ok_or(missing("sock=PATH"))?;
        let netdev = arg(argc, argv, "netdev").ok_or(missing("netdev=ID"))?;
        let board_path = arg(argc, argv, "board").ok_or(missing("board=FILE"))?;
        let slot = arg(argc, argv, "slot")
            .and_then(|v| v.parse::<usize>().ok())
            .ok_or(missing("slot=I"))?;
        let board = board::Plugin::open(Path::new(&board_path), slot).map_err(|source| {
            PluginError::Board {
                path: board_path.clone(),
                source,
            }
        })?;
        let sock = UnixStream::connect(&path).map_err(|source| PluginError::Connect {
            path: path.clone(),
            source,
        })?;
        let input = sock.try_clone().map_err(|source| PluginError::Socket {
            path: path.clone(),
            source,
        })?;
        take_netdev(&netdev)?;
        if arg(argc, argv, "kernel").as_deref() == Some("on") {
            // SAFETY: a scoreboard of one u64 per vCPU, and the plugin's
            // own id at install.
            unsafe {
                let score = api::qemu_plugin_scoreboard_new(std::mem::size_of::<u64>());
                if !score.is_null() {
                    let _ = KERNEL.set(KernelCount(api::PluginU64 { score, offset: 0 }));
                    api::qemu_plugin_register_vcpu_tb_trans_cb(id, count_kernel);
                }
            }
        }
        *OUT.lock().unwrap_or_else(|e| e.into_inner()) = Some(sock);
        *SLICES.lock().unwrap_or_else(|e| e.into_inner()) = Some(Slices {
            input,
            buf: Vec::new(),
            decoded: 0,
            board,
            round: 0,
            until_ns: None,
            due: VecDeque::new(),
        });
        let timer = Box::into_raw(Box::new(api::Timer::zeroed()));
        // SAFETY: a zeroed QEMUTimer for QEMU to fill; leaked for the run.
        unsafe {
            api::timer_init_full(
                timer,
                std::ptr::null_mut(),
                api::CLOCK_VIRTUAL,
                api::SCALE_NS,
                0,
                on_timer,
                std::ptr::null_mut(),
            );
            api::timer_mod_ns(timer, 0);
        }
        TIMER.store(timer, Ordering::Release);
        Ok(())
    };
    match setup() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("fsin-qemu-plugin: {e}");
            -1
        }
    }
}
