//! The QEMU adapter: [`qemu`] starts one QEMU per guest (the TCG plugin
//! `fsin-qemu-plugin` holds them in lock-step), links every guest's NIC
//! to the co-simulation server through a loopback stream socket, and
//! attaches all guests as one client (the Simics paper's two-level
//! synchronisation); [`apps`] holds the named applications (HPC Challenge,
//! NetPIPE) and parses their results; [`checkpoint`] saves a booted
//! cluster and restores it for later runs; [`console`] reads the guests'
//! console records. The binary is `nic-bridge` (also
//! `fsin nic-bridge`).

#![warn(missing_docs)]

pub mod apps;
pub mod checkpoint;
pub mod cli;
pub mod console;
pub mod qemu;
