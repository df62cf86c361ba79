//! The collective operations and one rank's collective call: the one
//! type that the library's records ([`super::records`]), the Dimemas
//! writer ([`super::write`]) and reader ([`super::read`]), the expansion
//! into an algorithm's messages ([`super::expand`]) and the timeline
//! share, with its bytes per block said here once.

/// A collective operation, as the library records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    /// `MPI_Barrier`: no member leaves before every member has entered;
    /// no bytes move.
    Barrier,
    /// `MPI_Bcast`: the root's message, to every member.
    Bcast,
    /// `MPI_Reduce`: every member's vector, combined at the root.
    Reduce,
    /// `MPI_Allreduce`: every member's vector, combined at every member.
    Allreduce,
    /// `MPI_Alltoall`: a block from every member to every member, all of
    /// one size.
    Alltoall,
    /// `MPI_Alltoallv`: Alltoall with a count per pair of members.
    Alltoallv,
    /// `MPI_Allgather`: every member's block, to every member.
    Allgather,
    /// `MPI_Allgatherv`: Allgather with a block size per member.
    Allgatherv,
    /// `MPI_Gather`: every member's block, to the root.
    Gather,
    /// `MPI_Gatherv`: Gather with a block size per member.
    Gatherv,
    /// `MPI_Scatter`: a block from the root to each member.
    Scatter,
    /// `MPI_Scatterv`: Scatter with a block size per member.
    Scatterv,
}

impl Collective {
    /// Every collective, in the library's numbering order.
    pub const ALL: [Collective; 12] = [
        Collective::Barrier,
        Collective::Bcast,
        Collective::Reduce,
        Collective::Allreduce,
        Collective::Alltoall,
        Collective::Alltoallv,
        Collective::Allgather,
        Collective::Allgatherv,
        Collective::Gather,
        Collective::Gatherv,
        Collective::Scatter,
        Collective::Scatterv,
    ];

    /// The MPI function's name (`MPI_Allreduce`).
    pub fn mpi_name(self) -> &'static str {
        match self {
            Collective::Barrier => "MPI_Barrier",
            Collective::Bcast => "MPI_Bcast",
            Collective::Reduce => "MPI_Reduce",
            Collective::Allreduce => "MPI_Allreduce",
            Collective::Alltoall => "MPI_Alltoall",
            Collective::Alltoallv => "MPI_Alltoallv",
            Collective::Allgather => "MPI_Allgather",
            Collective::Allgatherv => "MPI_Allgatherv",
            Collective::Gather => "MPI_Gather",
            Collective::Gatherv => "MPI_Gatherv",
            Collective::Scatter => "MPI_Scatter",
            Collective::Scatterv => "MPI_Scatterv",
        }
    }

    /// Whether the call has a root.
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Collective::Bcast
                | Collective::Reduce
                | Collective::Gather
                | Collective::Gatherv
                | Collective::Scatter
                | Collective::Scatterv
        )
    }

    /// Whether the call gives per-peer counts (the `v` variants).
    pub fn per_peer(self) -> bool {
        matches!(
            self,
            Collective::Alltoallv
                | Collective::Allgatherv
                | Collective::Gatherv
                | Collective::Scatterv
        )
    }
}

/// One rank's collective call, as the library records it
/// (`mpi-trace/fsin-mpitrace-collectives.c`; docs/contracts.md).
///
/// `sent` and `received` are bytes per block, by operation:
/// - Barrier: 0 and 0.
/// - Bcast: both are the message.
/// - Reduce, Allreduce: both are the vector.
/// - Alltoall: `sent` the bytes to each member, `received` the bytes
///   from each member.
/// - Allgather: `sent` the rank's own block, `received` each member's
///   block.
/// - Gather: `sent` the rank's own block; `received` each member's block
///   at the root, 0 elsewhere.
/// - Scatter: `sent` each member's block at the root, 0 elsewhere;
///   `received` the rank's own block.
/// - Alltoallv: 0 and 0, the counts are in `per_peer` (a trace read from
///   a file without them: its totals spread evenly over the members).
/// - Allgatherv and Gatherv: `sent` the rank's own block, `received` 0;
///   the blocks received are in `per_peer` (at Gatherv's root only).
/// - Scatterv: `sent` 0, `received` the rank's own block; the blocks
///   sent are in `per_peer` (at the root only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveCall {
    /// Which collective.
    pub op: Collective,
    /// The communicator it ran on: an index of
    /// [`super::MpiTrace::comms`] in a trace the library recorded, the
    /// file's communicator id (its `d:1:ID` line) in a trace read from a
    /// Dimemas file ([`super::read::MpiProgram`]).
    pub comm: u32,
    /// The root, a world rank (`None`: the operation has none).
    pub root: Option<u32>,
    /// Bytes sent per block (the type's doc, by operation).
    pub sent: u64,
    /// Bytes received per block (the type's doc, by operation).
    pub received: u64,
    /// For the `v` variants, per member in the communicator's order:
    /// (bytes sent to it, bytes received from it); empty otherwise, and
    /// for Gatherv and Scatterv away from the root.
    pub per_peer: Vec<(u64, u64)>,
}

impl CollectiveCall {
    /// The bytes rank `me` (a world rank) sends and receives in all on
    /// a communicator of `members` ranks (MPI's buffers, its own block
    /// included): Dimemas' fields.
    pub fn totals(&self, me: u32, members: usize) -> (u64, u64) {
        let n = members as u64;
        let at_root = self.root == Some(me);
        let (sent, received) = (self.sent, self.received);
        let to: u64 = self.per_peer.iter().map(|p| p.0).sum();
        let from: u64 = self.per_peer.iter().map(|p| p.1).sum();
        match self.op {
            Collective::Barrier => (0, 0),
            Collective::Bcast | Collective::Reduce | Collective::Allreduce => (sent, received),
            Collective::Alltoall => (sent * n, received * n),
            Collective::Allgather => (sent, received * n),
            Collective::Gather => (sent, if at_root { received * n } else { 0 }),
            Collective::Scatter => (if at_root { sent * n } else { 0 }, received),
            Collective::Alltoallv => (to, from),
            Collective::Allgatherv | Collective::Gatherv => (sent, from),
            Collective::Scatterv => (to, received),
        }
    }

    /// The call whose [`CollectiveCall::totals`] are Dimemas' `(sent,
    /// received)` on a communicator of `members` ranks: the bytes per
    /// block back (an Alltoallv without `per_peer` spreads its totals
    /// evenly).
    pub fn from_totals(
        op: Collective,
        comm: u32,
        root: Option<u32>,
        members: usize,
        (sent, received): (u64, u64),
        per_peer: Vec<(u64, u64)>,
    ) -> CollectiveCall {
        let n = (members as u64).max(1);
        let (sent, received) = match op {
            Collective::Barrier => (0, 0),
            Collective::Bcast | Collective::Reduce | Collective::Allreduce => (sent, received),
            Collective::Alltoall => (sent / n, received / n),
            Collective::Allgather | Collective::Gather => (sent, received / n),
            Collective::Scatter => (sent / n, received),
            Collective::Alltoallv if per_peer.is_empty() => (sent / n, received / n),
            Collective::Alltoallv => (0, 0),
            Collective::Allgatherv | Collective::Gatherv => (sent, 0),
            Collective::Scatterv => (0, received),
        };
        CollectiveCall {
            op,
            comm,
            root,
            sent,
            received,
            per_peer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: Collective, root: Option<u32>, sent: u64, received: u64) -> CollectiveCall {
        CollectiveCall {
            op,
            comm: 1,
            root,
            sent,
            received,
            per_peer: Vec::new(),
        }
    }

    /// Rank 2 of 4 members: each call's totals worked out by hand, and
    /// the call they give back is the library's record.
    #[test]
    fn totals_and_blocks_are_each_others_inverse() {
        use Collective::*;
        let vec4 = |v: [(u64, u64); 4]| v.to_vec();
        let cases = [
            (call(Barrier, None, 0, 0), (0, 0)),
            (call(Bcast, Some(0), 100, 100), (100, 100)),
            (call(Reduce, Some(2), 8, 8), (8, 8)),
            (call(Allreduce, None, 8, 8), (8, 8)),
            (call(Alltoall, None, 10, 10), (40, 40)),
            (call(Allgather, None, 6, 6), (6, 24)),
            // At the root, and away from it.
            (call(Gather, Some(2), 5, 5), (5, 20)),
            (call(Gather, Some(0), 5, 0), (5, 0)),
            (call(Scatter, Some(2), 5, 5), (20, 5)),
            (call(Scatter, Some(0), 0, 5), (0, 5)),
            (
                CollectiveCall {
                    per_peer: vec4([(1, 2), (3, 4), (5, 6), (7, 8)]),
                    ..call(Alltoallv, None, 0, 0)
                },
                (16, 20),
            ),
            (
                CollectiveCall {
                    per_peer: vec4([(0, 3), (0, 4), (0, 5), (0, 6)]),
                    ..call(Allgatherv, None, 5, 0)
                },
                (5, 18),
            ),
            (
                CollectiveCall {
                    per_peer: vec4([(0, 3), (0, 4), (0, 5), (0, 6)]),
                    ..call(Gatherv, Some(2), 5, 0)
                },
                (5, 18),
            ),
            (call(Gatherv, Some(0), 5, 0), (5, 0)),
            (
                CollectiveCall {
                    per_peer: vec4([(2, 0), (4, 0), (6, 0), (8, 0)]),
                    ..call(Scatterv, Some(2), 0, 6)
                },
                (20, 6),
            ),
        ];
        for (c, totals) in cases {
            assert_eq!(c.totals(2, 4), totals, "{c:?}");
            let back = CollectiveCall::from_totals(c.op, 1, c.root, 4, totals, c.per_peer.clone());
            assert_eq!(back, c);
        }
        // A file's Alltoallv without per-member counts: its totals spread
        // over the members.
        let spread = CollectiveCall::from_totals(Alltoallv, 1, None, 4, (40, 80), Vec::new());
        assert_eq!((spread.sent, spread.received), (10, 20));
    }
}
