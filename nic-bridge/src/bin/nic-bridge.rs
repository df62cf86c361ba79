//! `nic-bridge`: runs QEMU Linux guests as nodes of an fsin co-simulation
//! (see `nic_bridge::qemu`).

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
    args: nic_bridge::qemu::Args,
}

fn main() -> ExitCode {
    nic_bridge::qemu::main_with(&Cli::parse().args)
}
