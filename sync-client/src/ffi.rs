//! C ABI of the client, for node simulators written in C (Simics modules,
//! Simics paper section 5; the example in `examples/simics/`). The header
//! `include/fsin_sync.h` is generated from this file by cbindgen when the
//! crate builds; the crate builds as a `cdylib` and a `staticlib` to link.
//!
//! A client attaches its nodes with [`fsin_attach`] (which blocks until the
//! server has every node of the run), then per slice: [`fsin_wait_continue`]
//! (slice, first node cycle, length in node cycles, number of frames
//! delivered), [`fsin_poll_frame`] until `FSIN_NO_FRAME`, runs its nodes to
//! the end of the slice calling [`fsin_send_frame`] for each frame leaving a
//! NIC (stamped with its node cycle), and [`fsin_slice_done`]. A run ends
//! when `fsin_wait_continue` returns `FSIN_SHUTDOWN` ([`fsin_shutdown_reason`]
//! says why); [`fsin_close`] frees the handle.
//!
//! Every call returns an [`FsinStatus`] code (or a plain value for the
//! getters), never unwinds into C (a panic becomes `FSIN_ERR_PANIC`), and
//! leaves a message for [`fsin_last_error`] when it fails. Handles are
//! opaque; a handle must not be used from two threads at once.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use fsin_proto::v1 as pb;

use crate::{blocking, ClientError, ServerEvent};

/// Result of every call: 0 is success, positive values are outcomes that
/// are not errors, negative values are errors (message in
/// [`fsin_last_error`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsinStatus {
    /// Done.
    FsinOk = 0,
    /// The run is over for this client (`fsin_wait_continue`).
    FsinShutdown = 1,
    /// No delivered frame is left to read (`fsin_poll_frame`).
    FsinNoFrame = 2,
    /// A null pointer, an invalid string or an out-of-range index.
    FsinErrArgument = -1,
    /// The server cannot be reached.
    FsinErrConnect = -2,
    /// The server refused to attach the nodes (reason in the message).
    FsinErrRefused = -3,
    /// The connection to the server is gone.
    FsinErrClosed = -4,
    /// The server sent something this client does not understand.
    FsinErrProtocol = -5,
    /// The caller's buffer is shorter than the frame (`fsin_poll_frame`;
    /// the frame stays to be read with a larger one).
    FsinErrBuffer = -6,
    /// A bug in the library (reported, not unwound).
    FsinErrPanic = -7,
}

/// One node a client stands for, as given to [`fsin_attach`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FsinNodeSpec {
    /// Node id in the simulated network, or negative: the server picks the
    /// lowest free id (or the one owning `mac`).
    pub node_id: i64,
    /// Ethernet MAC of the node's NIC, used when `has_mac` is true;
    /// otherwise the server assigns 02:00:00:00:HH:LL.
    pub mac: [u8; 6],
    /// Whether `mac` holds the node's MAC (else the server assigns one).
    pub has_mac: bool,
    /// Node clock in Hz, or 0 for the server's.
    pub clock_hz: u64,
}

/// A slice to run, from [`fsin_wait_continue`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FsinContinue {
    /// Index of the slice (pass it to `fsin_slice_done`).
    pub slice: u64,
    /// First node cycle of the slice.
    pub start_cycle: u64,
    /// Length of the slice in node cycles.
    pub node_cycles: u64,
    /// Frames delivered with it, to read with `fsin_poll_frame`.
    pub frames: usize,
}

/// An attached client (opaque to C).
pub struct FsinLink {
    link: blocking::NodeLink,
    frames: VecDeque<pb::Delivery>,
    shutdown: Option<CString>,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: impl Into<String>) {
    let msg = msg.into().replace('\0', " ");
    LAST_ERROR.with(|e| *e.borrow_mut() = CString::new(msg).unwrap_or_default());
}

fn fail(status: FsinStatus, msg: impl Into<String>) -> FsinStatus {
    set_error(msg);
    status
}

fn client_error(e: ClientError) -> FsinStatus {
    let status = match &e {
        ClientError::Connect { .. } => FsinStatus::FsinErrConnect,
        ClientError::Refused(_) => FsinStatus::FsinErrRefused,
        ClientError::Closed | ClientError::Rpc(_) => FsinStatus::FsinErrClosed,
        ClientError::Protocol(_) => FsinStatus::FsinErrProtocol,
    };
    fail(status, e.to_string())
}

/// Runs `f`, turning a panic into `FSIN_ERR_PANIC`.
fn guard(f: impl FnOnce() -> FsinStatus) -> FsinStatus {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        fail(FsinStatus::FsinErrPanic, format!("internal error: {what}"))
    })
}

/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn text<'a>(s: *const c_char, what: &str) -> Result<&'a str, FsinStatus> {
    if s.is_null() {
        return Err(fail(FsinStatus::FsinErrArgument, format!("{what} is NULL")));
    }
    CStr::from_ptr(s)
        .to_str()
        .map_err(|_| fail(FsinStatus::FsinErrArgument, format!("{what} is not UTF-8")))
}

/// Runs `f` on the handle (guarded as [`guard`]); a null handle is an
/// argument error.
///
/// # Safety
/// `link` is null or a handle from `fsin_attach` not yet closed.
unsafe fn with_link(
    link: *mut FsinLink,
    f: impl FnOnce(&mut FsinLink) -> FsinStatus,
) -> FsinStatus {
    guard(|| match link.as_mut() {
        Some(l) => f(l),
        None => fail(FsinStatus::FsinErrArgument, "link is NULL"),
    })
}

/// The status of a client call.
fn status(r: Result<(), ClientError>) -> FsinStatus {
    r.map_or_else(client_error, |()| FsinStatus::FsinOk)
}

/// The message of the last failed call on this thread (empty if none);
/// valid until the next call on this thread.
#[no_mangle]
pub extern "C" fn fsin_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Connects to `url` (e.g. "http://127.0.0.1:50051"), attaches the
/// `n_nodes` nodes of `nodes` under `client_name`, waits until the server
/// has every node of the run, and stores the handle in `*out`.
///
/// # Safety
/// `url` and `client_name` are NUL-terminated strings, `nodes` points to
/// `n_nodes` specs, `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn fsin_attach(
    url: *const c_char,
    client_name: *const c_char,
    nodes: *const FsinNodeSpec,
    n_nodes: usize,
    out: *mut *mut FsinLink,
) -> FsinStatus {
    guard(|| {
        let run = || -> Result<FsinLink, FsinStatus> {
            let url = text(url, "url")?;
            let name = text(client_name, "client_name")?;
            if nodes.is_null() || n_nodes == 0 || out.is_null() {
                return Err(fail(
                    FsinStatus::FsinErrArgument,
                    "nodes, n_nodes and out must be given",
                ));
            }
            let specs = std::slice::from_raw_parts(nodes, n_nodes)
                .iter()
                .map(|n| pb::NodeSpec {
                    node_id: u32::try_from(n.node_id).ok(),
                    mac: if n.has_mac {
                        n.mac.to_vec()
                    } else {
                        Vec::new()
                    },
                    clock_hz: n.clock_hz,
                })
                .collect();
            let link = blocking::NodeLink::attach(url, name, specs).map_err(client_error)?;
            Ok(FsinLink {
                link,
                frames: VecDeque::new(),
                shutdown: None,
            })
        };
        match run() {
            Ok(l) => {
                *out = Box::into_raw(Box::new(l));
                FsinStatus::FsinOk
            }
            Err(s) => s,
        }
    })
}

/// Number of nodes of this client (in the order given to `fsin_attach`).
///
/// # Safety
/// `link` is null (answer 0) or a live handle.
#[no_mangle]
pub unsafe extern "C" fn fsin_node_count(link: *const FsinLink) -> usize {
    link.as_ref().map_or(0, |l| l.link.welcome().nodes.len())
}

/// Node id and MAC the server gave this client's node number `i`.
///
/// # Safety
/// `link` is a live handle; `node_id` and `mac` (6 bytes) are writable.
#[no_mangle]
pub unsafe extern "C" fn fsin_node(
    link: *const FsinLink,
    i: usize,
    node_id: *mut u32,
    mac: *mut u8,
) -> FsinStatus {
    guard(|| {
        let Some(l) = link.as_ref() else {
            return fail(FsinStatus::FsinErrArgument, "link is NULL");
        };
        let Some(n) = l.link.welcome().nodes.get(i) else {
            return fail(FsinStatus::FsinErrArgument, format!("no node number {i}"));
        };
        if node_id.is_null() || mac.is_null() || n.mac.len() != 6 {
            return fail(FsinStatus::FsinErrArgument, "node_id and mac must be given");
        }
        *node_id = n.node_id;
        std::ptr::copy_nonoverlapping(n.mac.as_ptr(), mac, 6);
        FsinStatus::FsinOk
    })
}

/// Node clock of the run in Hz (0 for a null handle).
///
/// # Safety
/// `link` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn fsin_clock_hz(link: *const FsinLink) -> u64 {
    link.as_ref().map_or(0, |l| l.link.welcome().clock_hz)
}

/// Sends an Ethernet frame of `len` bytes that left `node`'s NIC at node
/// cycle `node_cycle` (within the current slice).
///
/// # Safety
/// `link` is a live handle; `data` points to `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn fsin_send_frame(
    link: *mut FsinLink,
    node: u32,
    node_cycle: u64,
    data: *const u8,
    len: usize,
) -> FsinStatus {
    with_link(link, |l| {
        if data.is_null() {
            return fail(FsinStatus::FsinErrArgument, "data is NULL");
        }
        let frame = std::slice::from_raw_parts(data, len).to_vec();
        status(l.link.send_frame(node, node_cycle, frame))
    })
}

/// Reports the end of slice `slice` (every frame of it sent).
///
/// # Safety
/// `link` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn fsin_slice_done(link: *mut FsinLink, slice: u64) -> FsinStatus {
    with_link(link, |l| status(l.link.slice_done(slice, Vec::new())))
}

/// Blocks until the server's next Continue and describes it in `*out`
/// (frames not read with `fsin_poll_frame` by then are dropped); returns
/// `FSIN_SHUTDOWN` when the run is over instead.
///
/// # Safety
/// `link` is a live handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn fsin_wait_continue(
    link: *mut FsinLink,
    out: *mut FsinContinue,
) -> FsinStatus {
    with_link(link, |l| {
        if out.is_null() {
            return fail(FsinStatus::FsinErrArgument, "out is NULL");
        }
        if l.shutdown.is_some() {
            return FsinStatus::FsinShutdown;
        }
        loop {
            match l.link.next_event() {
                Ok(ServerEvent::Continue(c)) => {
                    *out = FsinContinue {
                        slice: c.slice,
                        start_cycle: c.start_cycle,
                        node_cycles: c.node_cycles,
                        frames: c.frames.len(),
                    };
                    l.frames = c.frames.into();
                    return FsinStatus::FsinOk;
                }
                Ok(ServerEvent::Shutdown(s)) => {
                    let why = format!("{}{}", s.reason, if s.error { " (error)" } else { "" });
                    l.shutdown = Some(CString::new(why.replace('\0', " ")).unwrap_or_default());
                    return FsinStatus::FsinShutdown;
                }
                Ok(ServerEvent::Control(_)) => continue,
                Err(e) => return client_error(e),
            }
        }
    })
}

/// Why the run ended, once `fsin_wait_continue` returned `FSIN_SHUTDOWN`
/// (empty before); owned by the handle.
///
/// # Safety
/// `link` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn fsin_shutdown_reason(link: *const FsinLink) -> *const c_char {
    match link.as_ref().and_then(|l| l.shutdown.as_ref()) {
        Some(s) => s.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Takes the next frame delivered with the last Continue: its node, the
/// node cycle at which it reaches the NIC, and its bytes (copied into
/// `buf` of `cap` bytes, length in `*len`). `FSIN_NO_FRAME` when none is
/// left; `FSIN_ERR_BUFFER` (with `*len` set to the size needed) when `buf`
/// is too short.
///
/// # Safety
/// `link` is a live handle; `node`, `node_cycle` and `len` are writable,
/// `buf` has `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn fsin_poll_frame(
    link: *mut FsinLink,
    node: *mut u32,
    node_cycle: *mut u64,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> FsinStatus {
    with_link(link, |l| {
        if node.is_null() || node_cycle.is_null() || buf.is_null() || len.is_null() {
            return fail(
                FsinStatus::FsinErrArgument,
                "node, node_cycle, buf and len must be given",
            );
        }
        let Some(f) = l.frames.front() else {
            return FsinStatus::FsinNoFrame;
        };
        *len = f.data.len();
        if f.data.len() > cap {
            return fail(
                FsinStatus::FsinErrBuffer,
                format!("a {}-byte frame does not fit in {cap} bytes", f.data.len()),
            );
        }
        *node = f.node;
        *node_cycle = f.node_cycle;
        std::ptr::copy_nonoverlapping(f.data.as_ptr(), buf, f.data.len());
        l.frames.pop_front();
        FsinStatus::FsinOk
    })
}

/// Leaves the run cleanly (the server stops counting on this client).
///
/// # Safety
/// `link` is a live handle; `reason` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fsin_detach(link: *mut FsinLink, reason: *const c_char) -> FsinStatus {
    with_link(link, |l| {
        let reason = if reason.is_null() {
            "detached"
        } else {
            match text(reason, "reason") {
                Ok(r) => r,
                Err(s) => return s,
            }
        };
        status(l.link.detach(reason))
    })
}

/// Closes the connection and frees the handle (null is allowed).
///
/// # Safety
/// `link` is null or a handle from `fsin_attach`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn fsin_close(link: *mut FsinLink) {
    if !link.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(link))));
    }
}
