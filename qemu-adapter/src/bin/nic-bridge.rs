//! `nic-bridge`: runs QEMU Linux guests as nodes of an fsin co-simulation
//! (see `qemu_adapter::qemu`; its command line is `qemu_adapter::cli`).

use std::process::ExitCode;

use clap::Parser;

/// Starts QEMU guests whose e1000 NICs are linked only to this bridge, and
/// couples them to an fsin co-simulation server: every frame they send
/// crosses the simulated network. Build the guest image with
/// scripts/install-qemu.sh; `fsin qemu` starts a server and this bridge in
/// one command.
#[derive(Parser)]
#[command(name = "nic-bridge", version)]
struct Cli {
    #[command(flatten)]
    args: qemu_adapter::qemu::Args,
}

fn main() -> ExitCode {
    qemu_adapter::cli::main_with(&Cli::parse().args)
}
