//! A QEMU TCG plugin (plugin API version 1, QEMU 7.2) that runs a guest in
//! slice-based lock-step with the fsin co-simulation (Simics paper, with QEMU in
//! the role of Simics): it counts the guest's executed instructions (an
//! inline add after each instruction, so blocks left early count only what
//! ran, as `-icount` does) and, at the first translation block that starts
//! at or after the end of the current slice, stops the vCPU until
//! nic-bridge lets it run the next slice.
//!
//! Load it with `-plugin PATH/libfsin_qemu_plugin.so,sock=SOCKET` next to
//! `-icount shift=N,sleep=off` (guest time = instructions x 2^N ns) and a
//! guest kernel booted with `idle=poll` (an idle vCPU keeps executing, so
//! guest time never jumps ahead of the instruction count).
//!
//! Protocol on the Unix stream socket `SOCKET` (nic-bridge listens), all
//! integers u64 little-endian:
//! - bridge -> plugin: `until`, the instruction count at which the slice
//!   ends (absolute, from guest start);
//! - plugin -> bridge: `reached`, the instruction count at which the vCPU
//!   stopped (`reached >= until`; the excess, less than one translation
//!   block, is the plugin's timing error), then it waits for the next
//!   `until`.
//!
//! The vCPU runs without the big QEMU lock while it executes guest code, so
//! while it waits here QEMU's main loop still takes frames from the NIC
//! socket into the guest's e1000: the frames nic-bridge writes before it
//! sends `until` reach the guest before its next instruction. Frames the
//! guest sends go out synchronously from the vCPU thread (e1000 transmits
//! from its register write), so they are in nic-bridge's socket before the
//! `reached` that follows them.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

mod api;

/// Plugin API version this plugin is written against (QEMU 7.2 has 1).
#[no_mangle]
pub static qemu_plugin_version: c_int = 1;

/// Instructions executed so far; generated code adds 1 after each.
static EXECUTED: AtomicU64 = AtomicU64::new(0);

/// The slice state of the (single) vCPU.
struct Sync {
    sock: UnixStream,
    /// End of the current slice; 0 before the first `until`.
    until: u64,
}

static STATE: Mutex<Option<Sync>> = Mutex::new(None);

/// Blocks until the bridge sends the next slice end; reports `reached`
/// first unless this is the first slice.
fn next_slice(s: &mut Sync, executed: u64, report: bool) -> std::io::Result<()> {
    if report {
        s.sock.write_all(&executed.to_le_bytes())?;
    }
    let mut buf = [0u8; 8];
    s.sock.read_exact(&mut buf)?;
    s.until = u64::from_le_bytes(buf);
    Ok(())
}

/// Called before each translation block executes.
extern "C" fn tb_exec(_vcpu: u32, _udata: *mut c_void) {
    let executed = EXECUTED.load(Ordering::Relaxed);
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = guard.as_mut() else { return };
    if executed >= s.until {
        let first = s.until == 0;
        if let Err(e) = next_slice(s, executed, !first) {
            // The bridge is gone: the run is over; stop the guest.
            eprintln!("fsin-qemu-plugin: lost nic-bridge ({e}); exiting");
            std::process::exit(1);
        }
    }
}

/// Called when a translation block is translated: registers [`tb_exec`]
/// and the per-instruction count.
extern "C" fn tb_trans(_id: api::PluginId, tb: *mut api::Tb) {
    // SAFETY: `tb` is the block QEMU is translating and its instructions
    // are valid during this call; EXECUTED lives for the whole run.
    unsafe {
        api::qemu_plugin_register_vcpu_tb_exec_cb(
            tb,
            tb_exec,
            api::CB_NO_REGS,
            std::ptr::null_mut(),
        );
        for i in 0..api::qemu_plugin_tb_n_insns(tb) {
            api::qemu_plugin_register_vcpu_insn_exec_inline(
                api::qemu_plugin_tb_get_insn(tb, i),
                api::INLINE_ADD_U64,
                EXECUTED.as_ptr().cast(),
                1,
            );
        }
    }
}

/// The `sock=PATH` argument.
fn socket_arg(argc: c_int, argv: *const *const c_char) -> Option<String> {
    (0..argc.max(0) as usize).find_map(|i| {
        // SAFETY: QEMU passes `argc` valid C strings.
        let arg = unsafe { CStr::from_ptr(*argv.add(i)) }.to_str().ok()?;
        arg.strip_prefix("sock=").map(str::to_string)
    })
}

/// Plugin entry point: connects to nic-bridge and registers the callbacks.
///
/// # Safety
/// Called by QEMU with its plugin id and `argc` valid argument strings.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: api::PluginId,
    _info: *const c_void,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    let Some(path) = socket_arg(argc, argv) else {
        eprintln!("fsin-qemu-plugin: missing the sock=PATH argument");
        return -1;
    };
    let sock = match UnixStream::connect(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fsin-qemu-plugin: cannot connect to nic-bridge at {path}: {e}");
            return -1;
        }
    };
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Sync { sock, until: 0 });
    api::qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    0
}
