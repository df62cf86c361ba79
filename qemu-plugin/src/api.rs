//! The QEMU functions and layouts this plugin uses. They are QEMU's own
//! internals, not its plugin API: QEMU 10's binary exports every symbol
//! (it is linked with `--export-dynamic` for its modules), and the layouts
//! below are those of QEMU 10.0 (`include/qemu/timer.h`,
//! `util/qemu-timer.c`, `include/net/net.h`), the version
//! `scripts/install-qemu.sh` pins.
//! The plugin API's own time control (`qemu_plugin_update_ns`) cannot be
//! used: QEMU 10's TCG has no `set_virtual_clock`, so it does not move the
//! virtual clock. The count of the guest's kernel instructions uses the
//! plugin API (`include/qemu/qemu-plugin.h`, version 3: translation
//! callbacks and per-vCPU inline counters on a scoreboard).

use std::ffi::{c_char, c_int, c_void};

/// `QEMU_CLOCK_VIRTUAL` (`QEMUClockType`): guest time; with `-icount` it
/// follows executed instructions and jumps over idle time.
pub const CLOCK_VIRTUAL: c_int = 1;

/// `SCALE_NS`.
pub const SCALE_NS: c_int = 1;

/// `QEMU_TIMER_ATTR_ALL`: every timer counts for a deadline.
pub const TIMER_ATTR_ALL: c_int = -1;

/// `struct QEMUTimer` (QEMU 10.0: 48 bytes), filled by [`timer_init_full`].
#[repr(C)]
pub struct Timer {
    expire_time: i64,
    timer_list: *mut c_void,
    cb: *mut c_void,
    opaque: *mut c_void,
    next: *mut c_void,
    attributes: c_int,
    scale: c_int,
}

impl Timer {
    /// An uninitialised timer for [`timer_init_full`].
    pub const fn zeroed() -> Self {
        Self {
            expire_time: 0,
            timer_list: std::ptr::null_mut(),
            cb: std::ptr::null_mut(),
            opaque: std::ptr::null_mut(),
            next: std::ptr::null_mut(),
            attributes: 0,
            scale: 0,
        }
    }
}

/// `QEMU_CLOCK_MAX`: the clocks of a timer list group.
pub const CLOCK_MAX: usize = 4;

/// `QEMUTimerListNotifyCB`: tells a timer list's waiter that its deadline
/// may have changed (`opaque`, clock type).
pub type NotifyCb = unsafe extern "C" fn(*mut c_void, c_int);

/// `struct QEMUTimerList` (`util/qemu-timer.c`, QEMU 10.0): the timers of
/// one clock in one timer list group (the main loop's, or an AioContext's),
/// linked into its clock's list of timer lists.
#[repr(C)]
pub struct TimerList {
    /// Its `QEMUClock`, whose first field is the head of the clock's list
    /// of timer lists.
    pub clock: *mut *mut TimerList,
    /// `QemuMutex` (a `pthread_mutex_t` and a bool).
    active_timers_lock: [u64; 6],
    /// Earliest timer first; null when the list has none.
    pub active_timers: *mut Timer,
    /// The clock's next timer list (`QLIST_ENTRY`).
    pub next: *mut TimerList,
    prev: *mut *mut TimerList,
    pub notify_cb: Option<NotifyCb>,
    pub notify_opaque: *mut c_void,
}

/// `struct NetClientState` (opaque but for its first two fields).
#[repr(C)]
pub struct NetClient {
    pub info: *mut NetClientInfo,
    pub link_down: c_int,
}

/// `NetReceive`: a frame handed to this net client (from its peer).
pub type NetReceive = unsafe extern "C" fn(*mut NetClient, *const u8, usize) -> isize;
/// `NetCanReceive`.
pub type NetCanReceive = unsafe extern "C" fn(*mut NetClient) -> bool;

/// `NetClientInfo` (QEMU 10.0): a net client's type and methods.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct NetClientInfo {
    pub kind: c_int,
    pub size: usize,
    pub receive: Option<NetReceive>,
    pub receive_iov: *const c_void,
    pub can_receive: Option<NetCanReceive>,
    /// `start` .. `check_peer_type`: 18 methods this plugin keeps as they are.
    pub rest: [*const c_void; 18],
}

/// `VersionTriple` (QAPI).
#[repr(C)]
pub struct VersionTriple {
    pub major: i64,
    pub minor: i64,
    pub micro: i64,
}

/// `VersionInfo` (QAPI): QEMU's version.
#[repr(C)]
pub struct VersionInfo {
    pub qemu: *const VersionTriple,
    pub package: *const c_char,
}

extern "C" {
    /// QEMU's version (`query-version`); `errp` may be null.
    pub fn qmp_query_version(errp: *mut c_void) -> *mut VersionInfo;
    pub fn qapi_free_VersionInfo(v: *mut VersionInfo);
    /// Current time of `clock`, ns.
    pub fn qemu_clock_get_ns(clock: c_int) -> i64;
    /// Ns until the earliest timer of `clock` among those with `attr_mask`,
    /// -1 when none.
    pub fn qemu_clock_deadline_ns_all(clock: c_int, attr_mask: c_int) -> i64;
    pub fn timer_init_full(
        ts: *mut Timer,
        group: *mut c_void,
        clock: c_int,
        scale: c_int,
        attributes: c_int,
        cb: extern "C" fn(*mut c_void),
        opaque: *mut c_void,
    );
    pub fn timer_mod_ns(ts: *mut Timer, expire_ns: i64);
    /// Every vCPU is halted with nothing to do.
    pub fn all_cpu_threads_idle() -> bool;
    /// Instructions executed so far (icount's raw count; read only while
    /// no vCPU runs).
    pub fn icount_get_raw() -> i64;
    /// Guest ns of `icount` instructions (`icount << shift`).
    pub fn icount_to_ns(icount: i64) -> i64;
    /// The `-netdev` with this id.
    pub fn qemu_find_netdev(id: *const c_char) -> *mut NetClient;
    /// Sends a frame from `nc` to its peer (the guest's NIC); queues it
    /// while the NIC cannot take it.
    pub fn qemu_send_packet(nc: *mut NetClient, buf: *const u8, size: c_int) -> isize;
    /// 0: no `-icount`; 1: `-icount shift=N`; 2: `shift=auto`.
    pub static use_icount: c_int;
    /// The main loop's timer lists, one per clock (`QEMUTimerListGroup`).
    pub static main_loop_tlg: [*mut TimerList; CLOCK_MAX];
    /// The main loop's notifier (kicks the vCPU under icount).
    pub fn qemu_timer_notify_cb(opaque: *mut c_void, clock: c_int);
    /// Asks the main loop to stop the VM in run state `state` (from any
    /// thread; `qemu_system_vmstop_request_prepare` first).
    pub fn qemu_system_vmstop_request_prepare();
    pub fn qemu_system_vmstop_request(state: c_int);
    /// The VM runs (its run state is `running`).
    pub fn runstate_is_running() -> bool;
}

/// `RUN_STATE_PAUSED` of QAPI's `RunState` (QEMU 10.0: `paused` is its
/// fifth value), what QMP's `stop` leaves.
pub const RUN_STATE_PAUSED: c_int = 4;

/// `qemu_plugin_u64` (plugin API): a u64 at `offset` in every vCPU's
/// entry of a scoreboard.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PluginU64 {
    pub score: *mut c_void,
    pub offset: usize,
}

/// `QEMU_PLUGIN_INLINE_ADD_U64` (`enum qemu_plugin_op`).
pub const INLINE_ADD_U64: c_int = 0;

/// A translation callback: the plugin's id, the block being translated
/// (`struct qemu_plugin_tb`).
pub type TbTrans = unsafe extern "C" fn(u64, *mut c_void);

extern "C" {
    /// Calls `cb` for every block QEMU translates.
    pub fn qemu_plugin_register_vcpu_tb_trans_cb(id: u64, cb: TbTrans);
    /// The block's first guest virtual address.
    pub fn qemu_plugin_tb_vaddr(tb: *const c_void) -> u64;
    /// The block's instructions.
    pub fn qemu_plugin_tb_n_insns(tb: *const c_void) -> usize;
    /// A scoreboard of `element_size` bytes per vCPU, zeroed.
    pub fn qemu_plugin_scoreboard_new(element_size: usize) -> *mut c_void;
    /// Adds `imm` to the executing vCPU's `entry` (`op`
    /// [`INLINE_ADD_U64`]) each time the block runs, in the translated
    /// code itself.
    pub fn qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
        tb: *mut c_void,
        op: c_int,
        entry: PluginU64,
        imm: u64,
    );
    /// `entry` summed over the vCPUs.
    pub fn qemu_plugin_u64_sum(entry: PluginU64) -> u64;
}
