//! The part of QEMU's plugin API (`qemu-plugin.h`, version 1) this plugin
//! uses. QEMU exports these symbols to the plugins it loads.

use std::ffi::c_void;

/// `qemu_plugin_id_t`.
pub type PluginId = u64;

/// `struct qemu_plugin_tb` (opaque).
#[repr(C)]
pub struct Tb {
    _opaque: [u8; 0],
}

/// `struct qemu_plugin_insn` (opaque).
#[repr(C)]
pub struct Insn {
    _opaque: [u8; 0],
}

/// `QEMU_PLUGIN_CB_NO_REGS` (`enum qemu_plugin_cb_flags`): the callback
/// reads no guest registers.
pub const CB_NO_REGS: u32 = 0;

/// `QEMU_PLUGIN_INLINE_ADD_U64` (`enum qemu_plugin_op`).
pub const INLINE_ADD_U64: u32 = 0;

extern "C" {
    pub fn qemu_plugin_register_vcpu_tb_trans_cb(
        id: PluginId,
        cb: extern "C" fn(id: PluginId, tb: *mut Tb),
    );
    pub fn qemu_plugin_tb_n_insns(tb: *const Tb) -> usize;
    pub fn qemu_plugin_register_vcpu_tb_exec_cb(
        tb: *mut Tb,
        cb: extern "C" fn(vcpu_index: u32, udata: *mut c_void),
        flags: u32,
        udata: *mut c_void,
    );
    pub fn qemu_plugin_tb_get_insn(tb: *const Tb, idx: usize) -> *mut Insn;
    pub fn qemu_plugin_register_vcpu_insn_exec_inline(
        insn: *mut Insn,
        op: u32,
        ptr: *mut c_void,
        imm: u64,
    );
}
