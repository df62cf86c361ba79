//! The QEMU adapter: runs Linux guests under QEMU as nodes of an fsin
//! co-simulation (Simics paper, with QEMU in the role of Simics).
//!
//! For each guest the adapter listens on a loopback port, starts
//! `qemu-system-x86_64` with an e1000 NIC on a `-netdev stream` connection
//! to that port (each frame a 4-byte big-endian length and the Ethernet
//! frame), and attaches the guest to the server as one node of this client:
//! guest `i` is node `first + i`, with MAC [`guest_mac`] and IPv4 address
//! [`guest_ip`]. Frames a guest sends go to the server as that node's
//! frames; frames the server delivers go back to the guest.
//!
//! The guest image is the busybox initramfs of `scripts/install-qemu.sh`:
//! its `/init` pings every other guest and prints `FSIN-` lines on the
//! serial console, which the adapter reads (see [`GuestReport`]), then
//! idles, still answering the others. A guest has finished when it prints
//! `FSIN-DONE`; once the server ends the run (every guest finished), the
//! adapter stops every QEMU. A QEMU that exits before that (kernel panic,
//! crash, kill) ends the run: the adapter names the guest, stops the other
//! guests and exits non-zero.
//!
//! Mode `lockstep` (the Simics paper's slice-based lock-step, and the
//! server's exact mode; `docs/qemu.md`): QEMU 10.0 runs with `-icount
//! shift=N,sleep=off` and the `fsin-qemu-plugin` TCG plugin, which connects
//! to a Unix socket of the adapter and takes over the guest's netdev. A
//! node cycle is 2^N ns of guest time. For each slice the adapter sends
//! every plugin the frames to deliver, each at its node cycle, and the
//! slice end ([`fsin_qemu_wire::ToPlugin`]); the plugin stops the guest
//! there and reports, after the frames the guest sent, each with the guest
//! time of the instruction that sent it, and its idle promise
//! ([`fsin_qemu_wire::FromPlugin`]). Frames are stamped with their node
//! cycle; the guests' promises become the client's `idle_until`.
//!
//! Mode `free`: the guests run free (no instruction counting); a slice ends
//! every `--tick-ms` of wall time, and a frame is stamped with the first
//! node cycle of the slice in which it reached the adapter. Good for quick
//! functional runs; guest-measured times are wall-clock times of TCG.

//!
//! The module by job: [`args`] (what the user asks: the guests and the
//! bridge), [`launch`] (a guest's QEMU command line and the image files it
//! boots), `guest_io` (a guest's NIC and plugin sockets), `guests` (what
//! the guests said while they run), [`start`] (where the guests come from:
//! boot, restore, save), `timing` (the slices, free or lock-step),
//! [`outcome`] (the report), [`roi`] (the region of interest), and `life` (a run from start to end: [`run`]).

pub mod args;
mod error;
mod guest_io;
mod guests;
mod kernel;
pub mod launch;
mod life;
pub mod mpi_in;
pub mod outcome;
pub mod roi;
mod start;
mod tcp;
pub mod timeline_out;
mod timing;
pub mod trace_out;

pub use args::*;
pub use error::{QemuError, RegionError};
pub use launch::{
    check_image, default_plugin_path, missing_image_file, IMAGE_FILES, PLUGIN_FILE, RUN_FILE_BYTES,
    SHARED_ROOT_FILE, UNCOMPRESSED_KERNEL_FILE,
};
pub use life::run;
pub use outcome::*;
pub use start::identity;
