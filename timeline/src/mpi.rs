//! MPI calls as Extrae encodes them in Paraver traces (its
//! `MPI_EventEncoding.h` and its merger's states per call), so that a
//! rank's calls in a timeline read in Paraver as they would from an
//! Extrae trace: an event of type "MPI Point-to-point" (50000001), "MPI
//! Collective Comm" (50000002) or "MPI Other" (50000003) whose value names
//! the function at the call's entry, and the same type with value 0 ("End")
//! at its exit; the rank's state inside the call is the one Extrae gives
//! it.

use fsin_trace::mpi::Collective;

use crate::State;

/// Extrae's MPI event types and their names in the `.pcf`.
pub(crate) const TYPES: [(u64, &str); 3] = [
    (50_000_001, "MPI Point-to-point"),
    (50_000_002, "MPI Collective Comm"),
    (50_000_003, "MPI Other"),
];

/// The MPI functions a timeline draws: those fsin-mpitrace records, with
/// `MPI_Init` and `MPI_Finalize` ([`MpiCall::of`] gives how each is
/// drawn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiFunction {
    /// `MPI_Send`.
    Send,
    /// `MPI_Recv`.
    Recv,
    /// `MPI_Isend`.
    Isend,
    /// `MPI_Irecv`.
    Irecv,
    /// `MPI_Wait`.
    Wait,
    /// `MPI_Waitall`.
    Waitall,
    /// `MPI_Bcast`.
    Bcast,
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Reduce`.
    Reduce,
    /// `MPI_Allreduce`.
    Allreduce,
    /// `MPI_Alltoall`.
    Alltoall,
    /// `MPI_Alltoallv`.
    Alltoallv,
    /// `MPI_Gather`.
    Gather,
    /// `MPI_Gatherv`.
    Gatherv,
    /// `MPI_Scatter`.
    Scatter,
    /// `MPI_Scatterv`.
    Scatterv,
    /// `MPI_Allgather`.
    Allgather,
    /// `MPI_Allgatherv`.
    Allgatherv,
    /// `MPI_Comm_dup`.
    CommDup,
    /// `MPI_Comm_split`.
    CommSplit,
    /// `MPI_Init`.
    Init,
    /// `MPI_Finalize`.
    Finalize,
    /// `MPI_Ssend`.
    Ssend,
    /// `MPI_Issend`.
    Issend,
    /// `MPI_Test`.
    Test,
    /// `MPI_Sendrecv`.
    Sendrecv,
    /// `MPI_Waitany`.
    Waitany,
    /// `MPI_Waitsome`.
    Waitsome,
    /// `MPI_Probe`.
    Probe,
    /// `MPI_Testall`.
    Testall,
    /// `MPI_Testany`.
    Testany,
}

/// One MPI function as a timeline draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpiCall {
    /// Its name (`MPI_Send`).
    pub name: &'static str,
    /// Its Paraver event type (one of 50000001, 50000002, 50000003).
    pub event: u64,
    /// Its value in that type (Extrae's: `MPI_Send` 1).
    pub value: u64,
    /// The state of a rank inside it.
    pub state: State,
}

const P2P: u64 = TYPES[0].0;
const COLLECTIVE: u64 = TYPES[1].0;
const OTHER: u64 = TYPES[2].0;

/// The functions fsin-mpitrace records, with `MPI_Init` and
/// `MPI_Finalize`, in [`MpiFunction`]'s order.
pub(crate) const CALLS: [MpiCall; 31] = {
    const fn c(name: &'static str, event: u64, value: u64, state: State) -> MpiCall {
        MpiCall {
            name,
            event,
            value,
            state,
        }
    }
    [
        c("MPI_Send", P2P, 1, State::Sending),
        c("MPI_Recv", P2P, 2, State::Waiting),
        c("MPI_Isend", P2P, 3, State::ImmediateSend),
        c("MPI_Irecv", P2P, 4, State::ImmediateReceive),
        c("MPI_Wait", P2P, 5, State::WaitAll),
        c("MPI_Waitall", P2P, 6, State::WaitAll),
        c("MPI_Bcast", COLLECTIVE, 7, State::GroupCommunication),
        c("MPI_Barrier", COLLECTIVE, 8, State::Synchronizing),
        c("MPI_Reduce", COLLECTIVE, 9, State::GroupCommunication),
        c("MPI_Allreduce", COLLECTIVE, 10, State::GroupCommunication),
        c("MPI_Alltoall", COLLECTIVE, 11, State::GroupCommunication),
        c("MPI_Alltoallv", COLLECTIVE, 12, State::GroupCommunication),
        c("MPI_Gather", COLLECTIVE, 13, State::GroupCommunication),
        c("MPI_Gatherv", COLLECTIVE, 14, State::GroupCommunication),
        c("MPI_Scatter", COLLECTIVE, 15, State::GroupCommunication),
        c("MPI_Scatterv", COLLECTIVE, 16, State::GroupCommunication),
        c("MPI_Allgather", COLLECTIVE, 17, State::GroupCommunication),
        c("MPI_Allgatherv", COLLECTIVE, 18, State::GroupCommunication),
        c("MPI_Comm_dup", OTHER, 22, State::Others),
        c("MPI_Comm_split", OTHER, 23, State::Others),
        c("MPI_Init", OTHER, 31, State::Others),
        c("MPI_Finalize", OTHER, 32, State::Others),
        c("MPI_Ssend", P2P, 34, State::Sending),
        c("MPI_Issend", P2P, 37, State::ImmediateSend),
        c("MPI_Test", P2P, 39, State::WaitAll),
        c("MPI_Sendrecv", P2P, 41, State::SendReceive),
        c("MPI_Waitany", P2P, 59, State::WaitAll),
        c("MPI_Waitsome", P2P, 60, State::WaitAll),
        c("MPI_Probe", P2P, 61, State::TestProbe),
        c("MPI_Testall", P2P, 125, State::WaitAll),
        c("MPI_Testany", P2P, 126, State::WaitAll),
    ]
};

impl From<Collective> for MpiFunction {
    /// The MPI function of collective `c`.
    fn from(c: Collective) -> MpiFunction {
        match c {
            Collective::Barrier => MpiFunction::Barrier,
            Collective::Bcast => MpiFunction::Bcast,
            Collective::Reduce => MpiFunction::Reduce,
            Collective::Allreduce => MpiFunction::Allreduce,
            Collective::Alltoall => MpiFunction::Alltoall,
            Collective::Alltoallv => MpiFunction::Alltoallv,
            Collective::Allgather => MpiFunction::Allgather,
            Collective::Allgatherv => MpiFunction::Allgatherv,
            Collective::Gather => MpiFunction::Gather,
            Collective::Gatherv => MpiFunction::Gatherv,
            Collective::Scatter => MpiFunction::Scatter,
            Collective::Scatterv => MpiFunction::Scatterv,
        }
    }
}

impl MpiCall {
    /// How the timeline draws `function`.
    pub fn of(function: MpiFunction) -> MpiCall {
        // CALLS lists the functions in MpiFunction's order (a test checks).
        CALLS[function as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Extrae's values (`MPI_EventEncoding.h`'s `MPIVal`, counted by
    /// hand) for a few, and no value twice within a type.
    #[test]
    fn calls_have_extraes_values() {
        let v = |f| (MpiCall::of(f).event, MpiCall::of(f).value);
        assert_eq!(v(MpiFunction::Send), (50_000_001, 1));
        assert_eq!(v(MpiFunction::Allgatherv), (50_000_002, 18));
        assert_eq!(v(MpiFunction::Finalize), (50_000_003, 32));
        assert_eq!(v(MpiFunction::Testany), (50_000_001, 126));
        for (i, a) in CALLS.iter().enumerate() {
            assert!(a.value > 0, "0 is the end of a call");
            for b in &CALLS[i + 1..] {
                assert!((a.event, a.value) != (b.event, b.value), "{a:?} {b:?}");
                assert_ne!(a.name, b.name);
            }
        }
    }

    /// Each function's call is the one of its name: `MPI_` and the
    /// variant's name, the communicator calls' with an underscore.
    #[test]
    fn each_function_draws_as_its_own_call() {
        use MpiFunction::*;
        let all = [
            Send, Recv, Isend, Irecv, Wait, Waitall, Bcast, Barrier, Reduce, Allreduce, Alltoall,
            Alltoallv, Gather, Gatherv, Scatter, Scatterv, Allgather, Allgatherv, CommDup,
            CommSplit, Init, Finalize, Ssend, Issend, Test, Sendrecv, Waitany, Waitsome, Probe,
            Testall, Testany,
        ];
        assert_eq!(all.len(), CALLS.len());
        for f in all {
            let name = match f {
                CommDup => "MPI_Comm_dup".to_string(),
                CommSplit => "MPI_Comm_split".to_string(),
                _ => format!("MPI_{f:?}"),
            };
            assert_eq!(MpiCall::of(f).name, name);
        }
    }
}
