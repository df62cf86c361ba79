//! What the user asks of a run: the guests ([`GuestArgs`]) and the bridge
//! ([`Args`]), with the defaults, clocks, addresses and memory estimates
//! that follow from them.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use fsin_frames::Mac;
use serde::{Deserialize, Serialize};

use super::error::QemuError;
use super::trace_out::TraceOut;

/// The QEMU binary started for each guest by default (`--qemu`).
pub const QEMU_BINARY: &str = "qemu-system-x86_64";

/// How guest time relates to the simulated network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Guests run free; slices follow wall-clock ticks.
    Free,
    /// Guest time follows instructions (`-icount`) and skips idle time; the
    /// fsin QEMU plugin stops each guest at every slice end until the next
    /// Continue and carries its frames at exact guest times.
    Lockstep,
}

/// The guests' settings, shared by `nic-bridge` ([`Args`]) and `fsin qemu`
/// (each flattens them into its own arguments). Three defaults depend on
/// whether guest 0 runs a command (`--run`, `fsin qemu --app`): the image,
/// the guest RAM and the pings.
#[derive(Debug, Clone, clap::Args)]
pub struct GuestArgs {
    /// Linux guests (QEMU processes), one per node, at most 250.
    #[arg(long, default_value_t = 2)]
    pub guests: u32,
    /// How guest time follows the network. Lock-step boots in warm-up
    /// (long slices until guest 0's magic packet: `fsin serve --warmup`
    /// and `--magic` for a bridge of its own).
    #[arg(long, value_enum, default_value = "lockstep")]
    pub timing: Mode,
    /// Guest image directory with vmlinuz and initramfs.cpio.gz, as
    /// scripts/install-qemu.sh prints it (default: $FSIN_GUEST_DIR, else
    /// ~/.cache/fsin-guest: the busybox image, or its mpi/ image when guest
    /// 0 runs a command).
    #[arg(long, value_name = "DIR")]
    pub image: Option<PathBuf>,
    /// vCPUs per guest, 1 to 8 (QEMU's -smp; in lock-step they take turns
    /// on one host thread and share the guest's clock).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub cpus: u32,
    /// Guest RAM in MiB (default 128; 512 when guest 0 runs a command). A
    /// guest takes host memory only for the RAM it touches.
    #[arg(long, value_name = "MB")]
    pub memory_mb: Option<u32>,
    /// Pings each guest sends to every other guest (default 5; 0 when guest
    /// 0 runs a command).
    #[arg(long)]
    pub pings: Option<u32>,
    /// Ping payload in bytes (the frame is 42 bytes longer).
    #[arg(long, default_value_t = 56)]
    pub ping_bytes: u32,
    /// After the pings, run the guests' network benchmark with messages of
    /// this many bytes: UDP ping-pong between guests 0 and 1 (100 rounds)
    /// and a TCP all-to-all exchange (0: no benchmark).
    #[arg(long, default_value_t = 0, value_name = "B")]
    pub bench_bytes: u32,
    /// Lock-step: guest time per instruction is 2^N ns (`-icount
    /// shift=N`), and so is a node cycle: the node clock (node_clock) is
    /// 10^9 / 2^N Hz.
    #[arg(long, default_value_t = ICOUNT_SHIFT, value_name = "N")]
    pub icount_shift: u32,
    /// Wall-clock length of a slice with --timing free, milliseconds.
    #[arg(long, default_value_t = 1)]
    pub tick_ms: u64,
    /// Kill guest 0's command after this many seconds of guest time (exit
    /// code 124); a guest whose image never starts the command is given up
    /// this long plus the boot allowance after the start.
    #[arg(long, default_value_t = 3600.0, value_name = "S")]
    pub app_timeout: f64,
    /// Write each guest's console to DIR/guest-N.log.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
    /// Make host directory DIR readable in every guest at /mnt/host: a
    /// read-only snapshot taken when the run starts (an EROFS image that
    /// every guest maps, as the shared root), e.g. MPI programs built with
    /// mpicc on a Debian 12 host: `--share bin/ --run 'mpirun --hostfile
    /// /etc/fsin/hostfile -np 4 /mnt/host/prog'`. Needs an image with a
    /// shared root (the MPI image) and mkfs.erofs (erofs-utils).
    #[arg(long, value_name = "DIR")]
    pub share: Option<PathBuf>,
    /// Fault injection: guest I panics its kernel once its NIC is up
    /// instead of running its workload.
    #[arg(long, value_name = "I")]
    pub crash_guest: Option<u32>,
    /// Where the measured phase begins (the region of interest): command
    /// (when guest 0 starts the command: Open MPI's launch is measured),
    /// mpi (when every rank's MPI_Init has returned: the launch runs in
    /// warm-up, with long slices and frames beside the network, and the
    /// ranks start the region together) or marker (when every rank has
    /// called MPI_Pcontrol(1)). mpi and marker load the MPI image's library
    /// into the ranks (`mpirun` on the command's PATH), in lock-step; a
    /// command whose ranks never get there runs wholly in warm-up, and the
    /// report says the region never began. Default: in lock-step, mpi
    /// for a command that runs `mpirun` or `mpiexec` (every --app), else
    /// command.
    #[arg(long, value_enum)]
    pub roi: Option<super::roi::Roi>,
}

impl GuestArgs {
    /// Where the measured phase of `command` begins: `--roi`, else
    /// [`Roi::default_for`] the command and `--timing`.
    ///
    /// [`Roi::default_for`]: super::roi::Roi::default_for
    pub fn roi_for(&self, command: Option<&str>) -> super::roi::Roi {
        self.roi
            .unwrap_or_else(|| super::roi::Roi::default_for(command, self.timing))
    }

    /// The guest image: --image, else [`default_image_dir`] (its `mpi/`
    /// image when guest 0 runs a command).
    pub fn image_dir(&self, command: bool) -> PathBuf {
        self.image.clone().unwrap_or_else(|| {
            let d = default_image_dir();
            if command {
                d.join("mpi")
            } else {
                d
            }
        })
    }

    /// Guest RAM, MiB: --memory-mb, else 512 when guest 0 runs a command
    /// and 128 otherwise.
    pub fn memory_mib(&self, command: bool) -> u32 {
        self.memory_mb.unwrap_or(if command { 512 } else { 128 })
    }

    /// Pings per guest and peer: --pings, else 0 when guest 0 runs a
    /// command and 5 otherwise.
    pub fn ping_count(&self, command: bool) -> u32 {
        self.pings.unwrap_or(if command { 0 } else { 5 })
    }
}

/// Give up when a guest has not reached the end of a slice after this many
/// seconds (`--slice-timeout-s`'s default).
pub const SLICE_TIMEOUT_S: u64 = 60;

/// Seconds per guest that the first slice of a restored run has beyond
/// `--slice-timeout-s`: it holds every guest's restore (QEMU reading its
/// migration file), which takes about 0.15 s per guest on 2 cores alone
/// and was seen to take over 60 s for 64 guests on a busy machine.
pub const RESTORE_S_PER_GUEST: u64 = 2;

/// Wall seconds the first slice of a restored run of `guests` guests may
/// take (the bridge's wait, and the server's for that slice):
/// `slice_timeout_s` and [`RESTORE_S_PER_GUEST`] per guest.
pub fn restore_timeout_s(slice_timeout_s: u64, guests: u32) -> u64 {
    slice_timeout_s.saturating_add(RESTORE_S_PER_GUEST * u64::from(guests))
}

/// Guest seconds a guest may take to boot (`--boot-timeout-s`'s default).
pub const BOOT_TIMEOUT_S: f64 = 600.0;

/// Give up when a guest has not connected its NIC after this many seconds
/// (`--connect-timeout-s`'s default).
pub const CONNECT_TIMEOUT_S: u64 = 60;

/// Arguments of `nic-bridge` (also `fsin nic-bridge`).
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// URL of the fsin co-simulation server.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    pub server: String,
    /// The guests' settings, the same as `fsin qemu`'s.
    #[command(flatten)]
    pub guest: GuestArgs,
    /// Node id of the first guest; guest i is node first + i.
    #[arg(long, default_value_t = 0)]
    pub first_node: u32,
    /// Lock-step: the fsin QEMU plugin (default: libfsin_qemu_plugin.so
    /// next to this executable, as `cargo build --release` puts it, else
    /// in the default guest image directory, where scripts/install-qemu.sh
    /// copies it for an installed `fsin`).
    #[arg(long, value_name = "FILE")]
    pub plugin: Option<PathBuf>,
    /// Lock-step: give up when a guest has not reached the end of a slice
    /// after this many seconds (the first slice of a restored run, which
    /// holds the restore, has 2 more seconds per guest).
    #[arg(long, default_value_t = SLICE_TIMEOUT_S)]
    pub slice_timeout_s: u64,
    /// Once every guest is up and reaches every other, run this shell
    /// command on guest 0 (`/bin/sh`, in /root; the MPI image's hostfile is
    /// /etc/fsin/hostfile) and report its exit code, guest time and output
    /// (`AppOutcome`). Needs an image whose /init runs it (both images of
    /// scripts/install-qemu.sh do).
    #[arg(long, value_name = "CMD")]
    pub run: Option<String>,
    /// Guest seconds a guest may take to boot before it runs the command
    /// (lock-step: guest time; free: wall time).
    #[arg(long, default_value_t = BOOT_TIMEOUT_S, value_name = "S")]
    pub boot_timeout_s: f64,
    /// The first guest sends the CLEAR_STATS magic packet before its pings
    /// (starts the measured phase of a server run with warm-up).
    #[arg(long)]
    pub magic: bool,
    /// Give up when a guest has not connected its NIC after this many
    /// seconds.
    #[arg(long, default_value_t = CONNECT_TIMEOUT_S)]
    pub connect_timeout_s: u64,
    /// Lock-step with --run: start the guests from the booted cluster saved
    /// in DIR when DIR holds one booted with this run's image, plugin,
    /// QEMU, guests, memory, vCPUs and guest settings; else boot them,
    /// save them in DIR once guest 0 sees every guest up, and end the run
    /// there without running the command (the outcome's
    /// `checkpoint.saved`).
    #[arg(long, value_name = "DIR")]
    pub checkpoint: Option<PathBuf>,
    /// The QEMU binary.
    #[arg(long, default_value = QEMU_BINARY)]
    pub qemu: String,
    /// Print one JSON object (last line of stdout) instead of text.
    #[arg(long)]
    pub json: bool,
    /// With --json, also print a `{"progress": ...}` line
    /// (`BridgeProgress`) before the last one whenever a guest's NIC
    /// comes up, the cluster is up or the command ends.
    #[arg(long, requires = "json")]
    pub progress_lines: bool,
    /// The shared secret to attach with (`fsin serve --token`), for a
    /// bridge inside the server's own process (`fsin qemu`); `None`: that
    /// of FSIN_TOKEN, as nic-bridge reads it.
    #[arg(skip)]
    pub token: Option<String>,
    /// Lock-step: write the measured phase's frames as a trace
    /// (`fsin qemu --trace-out`; [`trace_out`](super::trace_out)).
    #[arg(skip)]
    pub trace_out: Option<TraceOut>,
    /// Lock-step: write the guests' timeline of the measured phase
    /// (`fsin qemu --timeline`; [`super::timeline_out`]).
    #[arg(skip)]
    pub timeline: Option<fsin_timeline::Target>,
    /// The network's counters per window, which the server in the same
    /// process hands over for the timeline (node cycles).
    #[arg(skip)]
    pub counters: Option<fsin_timeline::CounterBoard>,
    /// Write the ranks' MPI calls as an MPI-level trace (Dimemas) to this
    /// file (`fsin qemu --trace-level mpi`; [`super::mpi_in`]): the
    /// command runs with the MPI image's tracing library loaded into its
    /// ranks.
    #[arg(skip)]
    pub mpi_trace: Option<super::mpi_in::MpiTraceOut>,
    /// Run the command with Open MPI's collective algorithms pinned as an
    /// MPI-level trace pins them, without tracing (the other runs of a
    /// study that predicts from one).
    #[arg(skip)]
    pub pin_collectives: bool,
    /// With `--roi mpi|marker`: save the cluster at the region's start, or
    /// start from such a checkpoint (`--checkpoint` then names it).
    #[arg(skip)]
    pub region_checkpoint: Option<super::roi::RegionCheckpoint>,
    /// Spread the ranks' go over a few microseconds of guest time, a
    /// different spread per seed (the network's `rseed`): repeats restored
    /// from one checkpoint at the region's start differ by it. None: every
    /// guest at once.
    #[arg(skip)]
    pub go_seed: Option<u64>,
}

impl Args {
    /// The bridge of `guest` for the server at `server`, guest 0 running
    /// `run`: every other setting at its command-line default.
    pub fn new(server: String, guest: GuestArgs, run: Option<String>) -> Args {
        Args {
            server,
            guest,
            first_node: 0,
            plugin: None,
            slice_timeout_s: SLICE_TIMEOUT_S,
            run,
            boot_timeout_s: BOOT_TIMEOUT_S,
            magic: false,
            connect_timeout_s: CONNECT_TIMEOUT_S,
            checkpoint: None,
            qemu: QEMU_BINARY.to_string(),
            json: false,
            progress_lines: false,
            token: None,
            trace_out: None,
            timeline: None,
            counters: None,
            mpi_trace: None,
            pin_collectives: false,
            region_checkpoint: None,
            go_seed: None,
        }
    }

    /// Checks that the counts and durations are in range, and that a
    /// region of interest has a command and lock-step.
    ///
    /// # Errors
    /// [`QemuError::Range`] naming the first option out of range, and its
    /// range; [`QemuError::Needs`] for `--roi mpi|marker` without them.
    pub fn check(&self) -> Result<(), QemuError> {
        if self.roi() != super::roi::Roi::Command
            && (self.run.is_none() || self.guest.timing != Mode::Lockstep)
        {
            return Err(QemuError::Needs {
                option: "--roi mpi|marker",
                needs: "a command (--run or --app) in lock-step: the region is the command's ranks' part, in guest time".into(),
            });
        }
        if self.guest.guests == 0 || self.guest.guests > 250 {
            return Err(QemuError::Range {
                option: "--guests",
                value: self.guest.guests.to_string(),
                range: "between 1 and 250 guests".into(),
            });
        }
        if !(1..=8).contains(&self.guest.cpus) {
            return Err(QemuError::Range {
                option: "--cpus",
                value: self.guest.cpus.to_string(),
                range: "between 1 and 8 vCPUs per guest".into(),
            });
        }
        for (key, v) in [
            ("--app-timeout", self.guest.app_timeout),
            ("--boot-timeout-s", self.boot_timeout_s),
        ] {
            if !(v.is_finite() && (0.0..=sync_client::MAX_WAIT_S).contains(&v)) {
                return Err(QemuError::Range {
                    option: key,
                    value: sync_client::seconds_shown(v),
                    range: format!(
                        "expected seconds of guest time, 0 to {} (a week)",
                        sync_client::MAX_WAIT_S
                    ),
                });
            }
        }
        for (key, v) in [
            ("--slice-timeout-s", self.slice_timeout_s),
            ("--connect-timeout-s", self.connect_timeout_s),
        ] {
            if !(1.0..=sync_client::MAX_WAIT_S).contains(&(v as f64)) {
                return Err(QemuError::Range {
                    option: key,
                    value: v.to_string(),
                    range: format!(
                        "expected wall seconds, 1 to {} (a week)",
                        sync_client::MAX_WAIT_S
                    ),
                });
            }
        }
        Ok(())
    }

    /// Where the measured phase of the run begins
    /// ([`GuestArgs::roi_for`] guest 0's command).
    pub fn roi(&self) -> super::roi::Roi {
        self.guest.roi_for(self.run.as_deref())
    }

    /// The guest image ([`GuestArgs::image_dir`]).
    pub fn image(&self) -> PathBuf {
        self.guest.image_dir(self.run.is_some())
    }

    /// Guest RAM, MiB ([`GuestArgs::memory_mib`]).
    pub fn memory_mb(&self) -> u32 {
        self.guest.memory_mib(self.run.is_some())
    }

    /// Pings per guest and peer ([`GuestArgs::ping_count`]).
    pub fn pings(&self) -> u32 {
        self.guest.ping_count(self.run.is_some())
    }

    /// The command as guest 0 runs it: `--run` with the MPI library loaded
    /// into its ranks for `--trace-level mpi` and `--roi mpi|marker`
    /// ([`super::mpi_in::library_command`]), or with Open MPI's collective
    /// algorithms pinned alone; `None` without a command.
    pub fn guest_command(&self) -> Option<String> {
        let cmd = self.run.as_deref()?;
        let words: Vec<&str> = (self.mpi_trace.iter().map(|_| "trace"))
            .chain(self.roi().library_word())
            .collect();
        let pin = self.mpi_trace.is_some() || self.pin_collectives;
        Some(match (words.is_empty(), pin) {
            (false, _) => super::mpi_in::library_command(cmd, &words, pin),
            (true, true) => super::mpi_in::pinned_command(cmd),
            (true, false) => cmd.to_string(),
        })
    }
}

/// Guest time (ns) of node cycle `cycle` at 2^`shift` ns per cycle;
/// `u64::MAX` (never) past the clock's range.
pub(super) fn cycle_ns(cycle: u64, shift: u32) -> u64 {
    cycle.saturating_mul(1 << shift.min(29))
}

/// Where `scripts/install-qemu.sh` puts the guest image: `$FSIN_GUEST_DIR`,
/// else `$XDG_CACHE_HOME/fsin-guest`, else `$HOME/.cache/fsin-guest`.
pub fn default_image_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FSIN_GUEST_DIR") {
        return d.into();
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    cache.join("fsin-guest")
}

/// QEMU's own memory in each guest's process, MiB: everything but the
/// guest's RAM and TCG's translated code (about 20 MiB measured).
pub const QEMU_BASE_MIB: u64 = 24;

/// TCG's translation buffer per guest, MiB (`-accel tcg,tb-size=`). QEMU's
/// default lets it grow to 1 GiB, and a booted MPI guest fills about
/// 90 MiB; at 32 MiB it boots as fast (docs/qemu.md, "Lean guests").
pub const TCG_CODE_MIB: u64 = 32;

/// Guest RAM that a guest touches to boot, MiB: the kernel's image and its
/// early allocations (108 MiB measured with Debian's 6.1 kernel and a
/// shared root, whatever the RAM size).
pub const GUEST_BOOT_MIB: u64 = 112;

/// Guest RAM that the memory estimate allows an application beyond the
/// boot, MiB: a modest MPI rank with its daemon and shared-memory files.
pub const GUEST_WORK_MIB: u64 = 64;

/// Host memory that one guest of `memory_mb` MiB of RAM is expected to
/// take, MiB: [`QEMU_BASE_MIB`] + [`TCG_CODE_MIB`] + the RAM it touches,
/// [`GUEST_BOOT_MIB`] + [`GUEST_WORK_MIB`] but at most `memory_mb`. QEMU
/// gives a guest its RAM as it touches it, so untouched RAM costs nothing;
/// a guest that uses more of its RAM takes more, up to `memory_mb`.
pub fn guest_memory_mib(memory_mb: u32) -> u64 {
    QEMU_BASE_MIB + TCG_CODE_MIB + u64::from(memory_mb).min(GUEST_BOOT_MIB + GUEST_WORK_MIB)
}

/// Host memory that `guests` guests of `memory_mb` MiB of RAM each are
/// expected to take, MiB: `guests` x [`guest_memory_mib`].
pub fn guests_memory_mib(guests: u32, memory_mb: u32) -> u64 {
    u64::from(guests) * guest_memory_mib(memory_mb)
}

/// `--icount-shift`'s default: 8 ns an instruction, a 125 MHz node clock.
pub const ICOUNT_SHIFT: u32 = 3;

/// Node clock of a lock-step guest, in Hz: one node cycle is 2^N ns of
/// guest time, the time of one instruction under `-icount shift=N`.
pub fn lockstep_clock_hz(icount_shift: u32) -> u64 {
    1_000_000_000 >> icount_shift.min(29)
}

/// MAC address of the NIC of node `node`: 52:54:00:00:HH:LL (QEMU's
/// locally administered prefix).
pub fn guest_mac(node: u32) -> Mac {
    let [_, _, hi, lo] = node.to_be_bytes();
    [0x52, 0x54, 0x00, 0x00, hi, lo]
}

/// IPv4 address of guest `index` (0-based): 10.0.0.(index + 1), in
/// 10.0.0.0/24.
pub fn guest_ip(index: u32) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, (index + 1) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// Each option out of range is named with its value and range; the
    /// first one wins.
    #[test]
    fn options_out_of_range_are_named_with_their_range() {
        let parse = |argv: &[&str]| {
            let mut all = vec!["nic-bridge"];
            all.extend_from_slice(argv);
            Cli::try_parse_from(all)
                .unwrap()
                .args
                .check()
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse(&[]), Ok(()));
        assert_eq!(
            parse(&["--guests", "251", "--cpus", "9"]),
            Err("--guests 251: between 1 and 250 guests".into())
        );
        assert_eq!(
            parse(&["--cpus", "0"]),
            Err("--cpus 0: between 1 and 8 vCPUs per guest".into())
        );
        assert_eq!(
            parse(&["--boot-timeout-s=-1"]),
            Err("--boot-timeout-s -1: expected seconds of guest time, 0 to 604800 (a week)".into())
        );
        assert_eq!(
            parse(&["--connect-timeout-s", "0"]),
            Err("--connect-timeout-s 0: expected wall seconds, 1 to 604800 (a week)".into())
        );
    }

    #[test]
    fn node_cycles_become_guest_nanoseconds_or_never() {
        assert_eq!(cycle_ns(10_000, 3), 80_000);
        assert_eq!(cycle_ns(u64::MAX / 8, 3), u64::MAX / 8 * 8);
        assert_eq!(cycle_ns(u64::MAX / 8 + 1, 3), u64::MAX);
    }

    #[test]
    fn addresses_follow_the_node_and_guest_numbers() {
        assert_eq!(guest_mac(0x0102), [0x52, 0x54, 0, 0, 1, 2]);
        assert_eq!(guest_ip(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(guest_ip(249), Ipv4Addr::new(10, 0, 0, 250));
    }
}
