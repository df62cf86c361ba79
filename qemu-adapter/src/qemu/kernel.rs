//! The guests' kernel time (`kernel=on`, with `--trace-level mpi`): the
//! QEMU plugin counts each guest's instructions at kernel addresses and
//! reports the count at every slice end on the board
//! ([`board::Reached::kernel_insns`]); under icount they are guest time,
//! 2^shift ns each. Per slice they go to the MPI trace's collector, which
//! gives each CPU burst its part, and, in the measured phase, to each
//! guest's `kernel_s`.

use fsin_qemu_wire::board;

use super::args::cycle_ns;
use super::mpi_in::Collector;
use crate::console::GuestReport;

/// Per guest, the plugin's count at its last slice end, and the
/// instructions of the measured phase.
pub(super) struct KernelTime {
    seen: Vec<u64>,
    measured: Vec<u64>,
}

impl KernelTime {
    pub(super) fn new(guests: usize) -> KernelTime {
        KernelTime {
            seen: vec![0; guests],
            measured: vec![0; guests],
        }
    }

    /// The guests' counts at the end of the slice of node cycles
    /// `[start, end)` (`reached`, by guest; a node cycle is 2^`shift` ns):
    /// when the slice is `measured` (where the ranks run), for the MPI
    /// trace's collector (`mpi`) and the guests' `reports`. Without the
    /// collector the plugins do not count (`kernel=on` comes with the
    /// MPI-level trace) and the reports keep no `kernel_s`.
    pub(super) fn slice_end(
        &mut self,
        reached: &[board::Reached],
        ((start, end), shift): ((u64, u64), u32),
        measured: bool,
        mpi: Option<&mut Collector>,
        reports: &mut [GuestReport],
    ) {
        let Some(m) = mpi else { return };
        let slice = (cycle_ns(start, shift), cycle_ns(end, shift));
        for (i, r) in reached.iter().enumerate() {
            let seen = std::mem::replace(&mut self.seen[i], r.kernel_insns);
            // A count below the last is a guest's QEMU started afresh
            // (restored): it counts from there.
            let ran = r.kernel_insns.checked_sub(seen).unwrap_or(r.kernel_insns);
            if !measured {
                continue;
            }
            m.kernel(i, slice, cycle_ns(ran, shift));
            self.measured[i] += ran;
            reports[i].kernel_s = Some(cycle_ns(self.measured[i], shift) as f64 * 1e-9);
        }
    }
}
