//! `fake-node`: the stub node emulator (see the `fake_node` library).

use std::process::ExitCode;

use clap::Parser;

/// Emulated node(s) that attach to an fsin co-simulation server and run a
/// workload of real Ethernet/IPv4/UDP frames in lock-step with the network.
#[derive(Parser)]
#[command(name = "fake-node", version)]
struct Cli {
    #[command(flatten)]
    args: fake_node::Args,
}

fn main() -> ExitCode {
    fake_node::main_with(&Cli::parse().args)
}
