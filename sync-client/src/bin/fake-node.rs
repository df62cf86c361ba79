//! `fake-node`: the stub node emulator (see `sync_client::fake_node`).

use std::process::ExitCode;

use clap::Parser;

/// Emulated node(s) that attach to an fsin co-simulation server and run a
/// workload of real Ethernet/IPv4/UDP frames in lock-step with the network.
#[derive(Parser)]
#[command(name = "fake-node", version)]
struct Cli {
    #[command(flatten)]
    args: sync_client::fake_node::Args,
}

fn main() -> ExitCode {
    sync_client::fake_node::main_with(&Cli::parse().args)
}
