//! Tests of `expand`.

use super::*;
use std::collections::VecDeque;

fn send(peer: u32, bytes: u64) -> Step {
    Step::Send { peer, bytes }
}

fn recv(peer: u32, bytes: u64) -> Step {
    Step::Recv { peer, bytes }
}

/// An exchange with one peer, the same bytes both ways.
fn sr(peer: u32, bytes: u64) -> Step {
    Step::SendRecv {
        to: peer,
        send_bytes: bytes,
        from: peer,
        recv_bytes: bytes,
    }
}

/// A sendrecv with distinct peers and bytes.
fn sr2(to: u32, send_bytes: u64, from: u32, recv_bytes: u64) -> Step {
    Step::SendRecv {
        to,
        send_bytes,
        from,
        recv_bytes,
    }
}

fn isend(peer: u32, bytes: u64) -> Step {
    Step::Isend { peer, bytes }
}

fn irecv(peer: u32, bytes: u64) -> Step {
    Step::Irecv { peer, bytes }
}

/// The choices with `words` (`alltoall=2`) pinned.
fn pinned(words: &str) -> Algorithms {
    Algorithms::parse(&format!("coll_tuned {words}")).unwrap()
}

fn shape(
    op: Collective,
    size: u32,
    me: u32,
    root: Option<u32>,
    sent: u64,
    received: u64,
) -> CallShape<'static> {
    CallShape {
        op,
        size,
        me,
        root,
        sent,
        received,
        per_peer: &[],
    }
}

/// Every rank's steps when all ranks record the same `sent` and
/// `received`.
fn uniform(
    op: Collective,
    size: u32,
    root: Option<u32>,
    sent: u64,
    received: u64,
) -> Vec<Vec<Step>> {
    uniform_by(&Algorithms::default(), op, size, root, sent, received)
}

/// [`uniform`] under `algorithms`.
fn uniform_by(
    algorithms: &Algorithms,
    op: Collective,
    size: u32,
    root: Option<u32>,
    sent: u64,
    received: u64,
) -> Vec<Vec<Step>> {
    all_steps(size, algorithms, |me| {
        shape(op, size, me, root, sent, received)
    })
}

#[test]
fn allreduce_recursive_doubling_on_four_ranks() {
    // adj = 4, extra = 0: no pre/post steps and new rank = rank.
    // Distance 1 pairs r with r^1, distance 2 pairs r with r^2.
    let want = vec![
        vec![sr(1, 8), sr(2, 8)],
        vec![sr(0, 8), sr(3, 8)],
        vec![sr(3, 8), sr(0, 8)],
        vec![sr(2, 8), sr(1, 8)],
    ];
    assert_eq!(uniform(Collective::Allreduce, 4, None, 8, 8), want);
}

#[test]
fn allreduce_recursive_doubling_on_five_ranks() {
    // adj = 4, extra = 1: ranks below 2 * extra = 2 pair up first.
    // Even rank 0 sends to 1 and drops out; odd rank 1 receives and
    // takes new rank 1/2 = 0. Ranks 2, 3 and 4 take new ranks 1, 2
    // and 3. A new rank q maps back to 2q + 1 if q < 1, else to q + 1.
    // - Distance 1: new 0<->1, i.e. ranks 1<->2; new 2<->3, i.e. 3<->4.
    // - Distance 2: new 0<->2, i.e. ranks 1<->3; new 1<->3, i.e. 2<->4.
    // Finally rank 1 sends the result back to 0.
    let want = vec![
        vec![send(1, 8), recv(1, 8)],
        vec![recv(0, 8), sr(2, 8), sr(3, 8), send(0, 8)],
        vec![sr(1, 8), sr(4, 8)],
        vec![sr(4, 8), sr(1, 8)],
        vec![sr(3, 8), sr(2, 8)],
    ];
    assert_eq!(uniform(Collective::Allreduce, 5, None, 8, 8), want);
}

#[test]
fn alltoall_pairwise_on_three_ranks() {
    // Step 1: send to r+1, receive from r-1. Step 2: send to r+2,
    // receive from r-2 (mod 3). Step 3 would be the local copy.
    let want = vec![
        vec![sr2(1, 5, 2, 5), sr2(2, 5, 1, 5)],
        vec![sr2(2, 5, 0, 5), sr2(0, 5, 2, 5)],
        vec![sr2(0, 5, 1, 5), sr2(1, 5, 0, 5)],
    ];
    let pairwise = pinned("alltoall=2");
    assert_eq!(
        uniform_by(&pairwise, Collective::Alltoall, 3, None, 5, 5),
        want
    );
}

#[test]
fn alltoall_linear_on_three_ranks() {
    // Receives posted from r+1, r+2; sends started to r-1, r-2 (mod
    // 3); one wait. Open MPI's fixed rules pick linear_sync (4) for 5
    // bytes on 3 ranks: the same messages.
    let want = vec![
        vec![
            irecv(1, 5),
            irecv(2, 5),
            isend(2, 5),
            isend(1, 5),
            Step::WaitAll,
        ],
        vec![
            irecv(2, 5),
            irecv(0, 5),
            isend(0, 5),
            isend(2, 5),
            Step::WaitAll,
        ],
        vec![
            irecv(0, 5),
            irecv(1, 5),
            isend(1, 5),
            isend(0, 5),
            Step::WaitAll,
        ],
    ];
    for algorithms in [
        pinned("alltoall=1"),
        pinned("alltoall=4"),
        Algorithms::default(),
    ] {
        assert_eq!(
            uniform_by(&algorithms, Collective::Alltoall, 3, None, 5, 5),
            want,
            "{algorithms:?}"
        );
    }
}

#[test]
fn alltoall_modified_bruck_on_five_ranks() {
    // Distance 1 carries rotated blocks j in 1..5 with bit 1 set: 1
    // and 3; distance 2: 2 and 3; distance 4: 4. Blocks of 7 bytes:
    // 14, 14 and 7 bytes, to r+d from r-d (mod 5).
    let bruck = pinned("alltoall=3");
    let got = uniform_by(&bruck, Collective::Alltoall, 5, None, 7, 7);
    assert_eq!(
        got[0],
        vec![sr2(1, 14, 4, 14), sr2(2, 14, 3, 14), sr2(4, 7, 1, 7)]
    );
    assert_eq!(
        got[3],
        vec![sr2(4, 14, 2, 14), sr2(0, 14, 1, 14), sr2(2, 7, 4, 7)]
    );
    // IS's 4-byte blocks on 16 ranks, by Open MPI's fixed rules: 4
    // rounds of 8 blocks, 32 bytes (what pml monitoring counted).
    let got = uniform(Collective::Alltoall, 16, None, 4, 4);
    assert_eq!(
        got[0],
        vec![
            sr2(1, 32, 15, 32),
            sr2(2, 32, 14, 32),
            sr2(4, 32, 12, 32),
            sr2(8, 32, 8, 32)
        ]
    );
}

/// Every rank's steps of an Alltoallv on `size` ranks under Open MPI's
/// fixed rules, where rank `i` sends `c(i, j)` bytes to rank `j`.
fn alltoallv_steps(size: u32, c: impl Fn(u32, u32) -> u64) -> Vec<Vec<Step>> {
    let per_peer: Vec<Vec<(u64, u64)>> = (0..size)
        .map(|r| (0..size).map(|i| (c(r, i), c(i, r))).collect())
        .collect();
    all_steps(size, &Algorithms::default(), |me| CallShape {
        op: Collective::Alltoallv,
        size,
        me,
        root: None,
        sent: 0,
        received: 0,
        per_peer: &per_peer[me as usize],
    })
}

#[test]
fn alltoallv_pairwise_on_three_ranks() {
    // c(i, j) = bytes i sends j = 10 * (i + 1) + (j + 1): 12, 13, 21,
    // 23, 31, 32 (11, 22, 33 are local copies). Rank r's per_peer[i]
    // is (c(r, i), c(i, r)). The steps are as in the Alltoall: step 1
    // sends c(r, r+1) and receives c(r-1, r); step 2 sends c(r, r+2)
    // and receives c(r-2, r).
    let got = alltoallv_steps(3, |i, j| u64::from(10 * (i + 1) + j + 1));
    let want = vec![
        vec![sr2(1, 12, 2, 31), sr2(2, 13, 1, 21)],
        vec![sr2(2, 23, 0, 12), sr2(0, 21, 2, 32)],
        vec![sr2(0, 31, 1, 23), sr2(1, 32, 0, 13)],
    ];
    assert_eq!(got, want);
}

#[test]
fn alltoallv_basic_linear_on_four_ranks() {
    // Open MPI's fixed rules pick basic linear on 4 to 63 ranks:
    // receives posted from every other rank ascending, sends started
    // to every other rank ascending (zero counts too), one wait.
    // c(i, j) = bytes i sends j = 10 * i + j.
    let got = alltoallv_steps(4, |i, j| u64::from(10 * i + j));
    assert_eq!(
        got[0],
        vec![
            irecv(1, 10),
            irecv(2, 20),
            irecv(3, 30),
            isend(1, 1),
            isend(2, 2),
            isend(3, 3),
            Step::WaitAll
        ]
    );
    assert_eq!(
        got[2],
        vec![
            irecv(0, 2),
            irecv(1, 12),
            irecv(3, 32),
            isend(0, 20),
            isend(1, 21),
            isend(3, 23),
            Step::WaitAll
        ]
    );
}

#[test]
fn bcast_binomial_on_eight_ranks_from_root_zero() {
    // The children of v are v + 2^k for 2^k > v: 0 -> {1, 2, 4},
    // 1 -> {3, 5}, 2 -> {6}, 3 -> {7}. The parent is v without its
    // highest bit.
    let want = vec![
        vec![send(1, 100), send(2, 100), send(4, 100)],
        vec![recv(0, 100), send(3, 100), send(5, 100)],
        vec![recv(0, 100), send(6, 100)],
        vec![recv(1, 100), send(7, 100)],
        vec![recv(0, 100)],
        vec![recv(1, 100)],
        vec![recv(2, 100)],
        vec![recv(3, 100)],
    ];
    assert_eq!(uniform(Collective::Bcast, 8, Some(0), 100, 100), want);
}

#[test]
fn bcast_binomial_on_eight_ranks_from_root_three() {
    // The same tree on virtual ranks v = (r - 3) mod 8, so the real
    // rank is (v + 3) mod 8: v0..v7 = 3, 4, 5, 6, 7, 0, 1, 2.
    // 3 -> {4, 5, 7}, 4 -> {6, 0}, 5 -> {1}, 6 -> {2}.
    let want = vec![
        vec![recv(4, 100)],
        vec![recv(5, 100)],
        vec![recv(6, 100)],
        vec![send(4, 100), send(5, 100), send(7, 100)],
        vec![recv(3, 100), send(6, 100), send(0, 100)],
        vec![recv(3, 100), send(1, 100)],
        vec![recv(4, 100), send(2, 100)],
        vec![recv(3, 100)],
    ];
    assert_eq!(uniform(Collective::Bcast, 8, Some(3), 100, 100), want);
}

#[test]
fn reduce_in_order_binomial_on_eight_ranks_from_root_zero() {
    // The children of v are v + 1, v + 2, v + 4, ... below v's lowest
    // set bit: 0 <- {1, 2, 4}, 2 <- {3}, 4 <- {5, 6}, 6 <- {7}. The
    // parent is v minus its lowest bit.
    let want = vec![
        vec![recv(1, 16), recv(2, 16), recv(4, 16)],
        vec![send(0, 16)],
        vec![recv(3, 16), send(0, 16)],
        vec![send(2, 16)],
        vec![recv(5, 16), recv(6, 16), send(0, 16)],
        vec![send(4, 16)],
        vec![recv(7, 16), send(4, 16)],
        vec![send(6, 16)],
    ];
    assert_eq!(uniform(Collective::Reduce, 8, Some(0), 16, 16), want);
}

#[test]
fn reduce_in_order_binomial_on_six_ranks_from_root_two() {
    // Virtual ranks v = (r - 2) mod 6; the real rank is (v + 2) mod 6:
    // v0..v5 = 2, 3, 4, 5, 0, 1. On six the tree is 0 <- {1, 2, 4},
    // 2 <- {3}, 4 <- {5} (v4's child v6 does not exist). In real ranks:
    // 2 <- {3, 4, 0}, 4 <- {5}, 0 <- {1}.
    let want = vec![
        vec![recv(1, 16), send(2, 16)],
        vec![send(0, 16)],
        vec![recv(3, 16), recv(4, 16), recv(0, 16)],
        vec![send(2, 16)],
        vec![recv(5, 16), send(2, 16)],
        vec![send(4, 16)],
    ];
    assert_eq!(uniform(Collective::Reduce, 6, Some(2), 16, 16), want);
}

#[test]
fn barrier_recursive_doubling_on_four_ranks() {
    // A power of two: each rank exchanges 0 bytes with r^1, then r^2.
    let want = vec![
        vec![sr(1, 0), sr(2, 0)],
        vec![sr(0, 0), sr(3, 0)],
        vec![sr(3, 0), sr(0, 0)],
        vec![sr(2, 0), sr(1, 0)],
    ];
    assert_eq!(uniform(Collective::Barrier, 4, None, 0, 0), want);
}

#[test]
fn barrier_recursive_doubling_on_six_ranks() {
    // adj = 4, extra = 2. Ranks 4 and 5 exchange with 0 and 1, which
    // receive from them first. Ranks 0-3 do the power-of-two rounds
    // (r^1, r^2). Then 0 and 1 release 4 and 5 with a send.
    let want = vec![
        vec![recv(4, 0), sr(1, 0), sr(2, 0), send(4, 0)],
        vec![recv(5, 0), sr(0, 0), sr(3, 0), send(5, 0)],
        vec![sr(3, 0), sr(0, 0)],
        vec![sr(2, 0), sr(1, 0)],
        vec![sr(0, 0)],
        vec![sr(1, 0)],
    ];
    assert_eq!(uniform(Collective::Barrier, 6, None, 0, 0), want);
}

#[test]
fn allgather_ring_on_four_ranks() {
    // Three steps: send a block to r+1, receive a block from r-1.
    let ring = |to, from| vec![sr2(to, 3, from, 3); 3];
    let want = vec![ring(1, 3), ring(2, 0), ring(3, 1), ring(0, 2)];
    assert_eq!(uniform(Collective::Allgather, 4, None, 3, 3), want);
}

#[test]
fn allgatherv_ring_on_four_ranks() {
    // Blocks b = [10, 20, 30, 40]. In step i, rank r sends b[r - i] to
    // r+1 and receives b[r - i - 1] from r-1 (mod 4). Rank 0 sends
    // b0, b3, b2 and receives b3, b2, b1.
    let blocks: Vec<(u64, u64)> = vec![(0, 10), (0, 20), (0, 30), (0, 40)];
    let got = all_steps(4, &Algorithms::default(), |me| CallShape {
        op: Collective::Allgatherv,
        size: 4,
        me,
        root: None,
        sent: blocks[me as usize].1,
        received: 0,
        per_peer: &blocks,
    });
    let want = vec![
        vec![sr2(1, 10, 3, 40), sr2(1, 40, 3, 30), sr2(1, 30, 3, 20)],
        vec![sr2(2, 20, 0, 10), sr2(2, 10, 0, 40), sr2(2, 40, 0, 30)],
        vec![sr2(3, 30, 1, 20), sr2(3, 20, 1, 10), sr2(3, 10, 1, 40)],
        vec![sr2(0, 40, 2, 30), sr2(0, 30, 2, 20), sr2(0, 20, 2, 10)],
    ];
    assert_eq!(got, want);
}

#[test]
fn gather_and_scatter_linear() {
    // Gather to 2: the root receives from 0, 1, 3 in order, and the
    // others send to it. Only the root records the received block.
    let got = all_steps(4, &Algorithms::default(), |me| {
        shape(
            Collective::Gather,
            4,
            me,
            Some(2),
            6,
            if me == 2 { 6 } else { 0 },
        )
    });
    let want = vec![
        vec![send(2, 6)],
        vec![send(2, 6)],
        vec![recv(0, 6), recv(1, 6), recv(3, 6)],
        vec![send(2, 6)],
    ];
    assert_eq!(got, want);
    // Scatter from 1: the root sends to 0, 2, 3 in order.
    let got = all_steps(4, &Algorithms::default(), |me| {
        shape(
            Collective::Scatter,
            4,
            me,
            Some(1),
            if me == 1 { 6 } else { 0 },
            6,
        )
    });
    let want = vec![
        vec![recv(1, 6)],
        vec![send(0, 6), send(2, 6), send(3, 6)],
        vec![recv(1, 6)],
        vec![recv(1, 6)],
    ];
    assert_eq!(got, want);
}

#[test]
fn gatherv_and_scatterv_skip_empty_blocks() {
    // Gatherv to 0 of blocks [5, 0, 7, 0]: the root's own block is a
    // copy, ranks 1 and 3 have nothing, so there is one message: 2 -> 0.
    let blocks = [5, 0, 7, 0];
    let at_root: Vec<(u64, u64)> = blocks.iter().map(|&b| (0, b)).collect();
    let got = all_steps(4, &Algorithms::default(), |me| CallShape {
        op: Collective::Gatherv,
        size: 4,
        me,
        root: Some(0),
        sent: blocks[me as usize],
        received: 0,
        per_peer: if me == 0 { &at_root } else { &[] },
    });
    assert_eq!(
        got,
        vec![vec![recv(2, 7)], vec![], vec![send(0, 7)], vec![]]
    );
    // Scatterv from 3 of blocks [0, 4, 0, 9]: one message, 3 -> 1.
    let blocks = [0, 4, 0, 9];
    let at_root: Vec<(u64, u64)> = blocks.iter().map(|&b| (b, 0)).collect();
    let got = all_steps(4, &Algorithms::default(), |me| CallShape {
        op: Collective::Scatterv,
        size: 4,
        me,
        root: Some(3),
        sent: 0,
        received: blocks[me as usize],
        per_peer: if me == 3 { &at_root } else { &[] },
    });
    assert_eq!(
        got,
        vec![vec![], vec![recv(3, 4)], vec![], vec![send(1, 4)]]
    );
}

#[test]
fn zero_counts_follow_the_mpi_layer() {
    // Open MPI's MPI layer returns before the algorithm on zero counts.
    for op in [
        Collective::Bcast,
        Collective::Reduce,
        Collective::Allreduce,
        Collective::Alltoall,
        Collective::Allgather,
        Collective::Gather,
        Collective::Scatter,
    ] {
        let all = uniform(op, 5, Some(1), 0, 0);
        assert!(all.iter().all(Vec::is_empty), "{op:?}: {all:?}");
    }
    let zeros = [(0, 0); 3];
    let zero_v = |op| {
        all_steps(3, &Algorithms::default(), |me| CallShape {
            per_peer: &zeros,
            ..shape(op, 3, me, None, 0, 0)
        })
    };
    // Allgatherv skips only when every block is 0.
    assert!(zero_v(Collective::Allgatherv).iter().all(Vec::is_empty));
    // Alltoallv has no such check: pairwise sends 0-byte messages.
    assert_eq!(
        zero_v(Collective::Alltoallv),
        vec![
            vec![sr2(1, 0, 2, 0), sr2(2, 0, 1, 0)],
            vec![sr2(2, 0, 0, 0), sr2(0, 0, 2, 0)],
            vec![sr2(0, 0, 1, 0), sr2(1, 0, 0, 0)],
        ]
    );
    // Allgatherv with one nonzero block sends the zero ones too.
    let one = [(0, 0), (0, 4), (0, 0)];
    let got = all_steps(3, &Algorithms::default(), |me| CallShape {
        per_peer: &one,
        ..shape(Collective::Allgatherv, 3, me, None, one[me as usize].1, 0)
    });
    assert_eq!(got[0], vec![sr2(1, 0, 2, 0), sr2(1, 0, 2, 4)]);
}

#[test]
fn bad_shapes_give_no_steps() {
    let bad = [
        shape(Collective::Barrier, 4, 4, None, 0, 0),
        shape(Collective::Barrier, 0, 0, None, 0, 0),
        shape(Collective::Allreduce, 1, 0, None, 8, 8),
        shape(Collective::Bcast, 4, 0, Some(4), 8, 8),
        shape(Collective::Allreduce, 4, 0, Some(9), 8, 8),
        shape(Collective::Bcast, 4, 0, None, 8, 8),
        shape(Collective::Gatherv, 4, 1, None, 8, 0),
        shape(Collective::Scatter, u32::MAX, u32::MAX, Some(0), 8, 8),
    ];
    for call in bad {
        assert_eq!(steps(&call, &Algorithms::default()), vec![], "{call:?}");
    }
}

#[test]
fn huge_communicators_do_not_overflow() {
    // The logarithmic algorithms on the largest sizes, at ranks near
    // the powers of two and the ends.
    for size in [1 << 20, (1 << 20) + 3, u32::MAX] {
        for me in [
            0,
            1,
            size / 2,
            size - 2,
            size - 1,
            1 << 19,
            (1 << 31).min(size - 1),
        ] {
            for root in [0, size - 1] {
                for op in [
                    Collective::Barrier,
                    Collective::Bcast,
                    Collective::Reduce,
                    Collective::Allreduce,
                ] {
                    let got = steps(
                        &shape(op, size, me, Some(root), 8, 8),
                        &Algorithms::default(),
                    );
                    assert!(
                        !got.is_empty() && got.len() <= 34,
                        "{op:?} {size} {me}: {got:?}"
                    );
                    for step in got {
                        let peers = match step {
                            Step::Send { peer, .. }
                            | Step::Recv { peer, .. }
                            | Step::Isend { peer, .. }
                            | Step::Irecv { peer, .. } => [peer, peer],
                            Step::SendRecv { to, from, .. } => [to, from],
                            Step::WaitAll => continue,
                        };
                        assert!(
                            peers.iter().all(|&p| p < size && p != me),
                            "{op:?} {size} {me}: {step:?}"
                        );
                    }
                }
            }
        }
    }
    // The modified Bruck algorithm: a round per bit, half the blocks
    // each on a power of two.
    for size in [1 << 20, u32::MAX] {
        let got = steps(
            &shape(Collective::Alltoall, size, size - 1, None, 1, 1),
            &Algorithms::default(),
        );
        assert_eq!(got.len(), 32 - (size - 1).leading_zeros() as usize);
        if size == 1 << 20 {
            assert_eq!(got[0], sr2(0, 1 << 19, size - 2, 1 << 19));
        }
    }
    // The linear ones at 2^20: one message per other member.
    let size = 1 << 20;
    assert_eq!(
        steps(
            &shape(Collective::Alltoall, size, 7, None, 1, 1),
            &pinned("alltoall=2")
        )
        .len(),
        size as usize - 1
    );
    assert_eq!(
        steps(
            &shape(Collective::Gather, size, 7, Some(7), 1, 1),
            &Algorithms::default()
        )
        .len(),
        size as usize - 1
    );
}

/// Bytes member `i` sends member `j` in an Alltoallv (some are 0).
fn pair_bytes(seed: u64, i: u32, j: u32) -> u64 {
    (seed + 7 * u64::from(i) + 3 * u64::from(j)) % 5 * 10
}

/// Member `i`'s block in the other `v` collectives (some are 0).
fn block_bytes(seed: u64, i: u32) -> u64 {
    (seed + u64::from(i)) % 3 * 4
}

/// What member `me` records of a correct call of `op` (sent, received,
/// per_peer). Non-`v` operations move `m` bytes per block. The `v` ones
/// use the patterns above when `seed` is given; without a seed they
/// record no per-member counts, so the expansion falls back to `m`.
fn record(
    op: Collective,
    size: u32,
    me: u32,
    root: u32,
    m: u64,
    seed: Option<u64>,
) -> (u64, u64, Vec<(u64, u64)>) {
    let at_root = me == root;
    let block = |i| seed.map_or(m, |s| block_bytes(s, i));
    let blocks = |to: bool| -> Vec<(u64, u64)> {
        match seed {
            None => Vec::new(),
            Some(_) => (0..size)
                .map(|i| if to { (block(i), 0) } else { (0, block(i)) })
                .collect(),
        }
    };
    match op {
        Collective::Barrier => (0, 0, Vec::new()),
        Collective::Bcast
        | Collective::Reduce
        | Collective::Allreduce
        | Collective::Alltoall
        | Collective::Allgather => (m, m, Vec::new()),
        Collective::Gather => (m, if at_root { m } else { 0 }, Vec::new()),
        Collective::Scatter => (if at_root { m } else { 0 }, m, Vec::new()),
        Collective::Alltoallv => match seed {
            None => (m, m, Vec::new()),
            Some(s) => (
                0,
                0,
                (0..size)
                    .map(|i| (pair_bytes(s, me, i), pair_bytes(s, i, me)))
                    .collect(),
            ),
        },
        Collective::Allgatherv => (block(me), 0, blocks(false)),
        Collective::Gatherv => (
            block(me),
            0,
            if at_root { blocks(false) } else { Vec::new() },
        ),
        Collective::Scatterv => (
            0,
            block(me),
            if at_root { blocks(true) } else { Vec::new() },
        ),
    }
}

/// Checks that every message is matched. For every ordered pair
/// (a, b), the bytes of the messages a sends b, in a's order, must
/// equal the bytes of the receives b posts from a, in b's order. No
/// rank may name itself or a non-member.
fn check_matched(size: u32, all: &[Vec<Step>]) -> Result<(), String> {
    let n = size as usize;
    // sends[a * n + b]: a -> b as a sends; recvs[a * n + b]: a -> b as
    // b receives.
    let mut sends = vec![Vec::new(); n * n];
    let mut recvs = vec![Vec::new(); n * n];
    for (me, steps) in all.iter().enumerate() {
        for &step in steps {
            let (to, from) = match step {
                Step::Send { peer, bytes } | Step::Isend { peer, bytes } => {
                    (Some((peer, bytes)), None)
                }
                Step::Recv { peer, bytes } | Step::Irecv { peer, bytes } => {
                    (None, Some((peer, bytes)))
                }
                Step::SendRecv {
                    to,
                    send_bytes,
                    from,
                    recv_bytes,
                } => (Some((to, send_bytes)), Some((from, recv_bytes))),
                Step::WaitAll => (None, None),
            };
            for (peer, _) in to.iter().chain(from.iter()) {
                if *peer >= size || *peer as usize == me {
                    return Err(format!("rank {me}: {step:?}"));
                }
            }
            if let Some((peer, bytes)) = to {
                sends[me * n + peer as usize].push(bytes);
            }
            if let Some((peer, bytes)) = from {
                recvs[peer as usize * n + me].push(bytes);
            }
        }
    }
    for a in 0..n {
        for b in 0..n {
            if sends[a * n + b] != recvs[a * n + b] {
                return Err(format!(
                    "{a} -> {b}: sent {:?}, received {:?}",
                    sends[a * n + b],
                    recvs[a * n + b]
                ));
            }
        }
    }
    Ok(())
}

/// Replays the steps as the replay model does: a send never blocks
/// (messages queue per pair, in order); a receive waits for its message;
/// a sendrecv sends, then waits; an isend sends, an irecv is noted, and
/// a wait-all waits for every noted receive. Returns whether every
/// rank gets to its end, i.e. the schedule does not deadlock.
fn replay_completes(all: &[Vec<Step>]) -> bool {
    let n = all.len();
    let mut queues: Vec<VecDeque<u64>> = vec![VecDeque::new(); n * n];
    let mut next = vec![0; n];
    let mut sent_part = vec![false; n];
    let mut posted: Vec<Vec<u32>> = vec![Vec::new(); n];
    loop {
        let mut progress = false;
        for me in 0..n {
            while let Some(&step) = all[me].get(next[me]) {
                let (to, from) = match step {
                    Step::Send { peer, bytes } | Step::Isend { peer, bytes } => {
                        (Some((peer, bytes)), None)
                    }
                    Step::Recv { peer, .. } => (None, Some(peer)),
                    Step::SendRecv {
                        to,
                        send_bytes,
                        from,
                        ..
                    } => (Some((to, send_bytes)), Some(from)),
                    Step::Irecv { peer, .. } => {
                        posted[me].push(peer);
                        (None, None)
                    }
                    Step::WaitAll => {
                        let ready = posted[me].iter().all(|&p| {
                            let need = posted[me].iter().filter(|&&q| q == p).count();
                            queues[p as usize * n + me].len() >= need
                        });
                        if !ready {
                            break;
                        }
                        for p in posted[me].drain(..) {
                            queues[p as usize * n + me].pop_front();
                        }
                        (None, None)
                    }
                };
                if let (Some((peer, bytes)), false) = (to, sent_part[me]) {
                    queues[me * n + peer as usize].push_back(bytes);
                    sent_part[me] = true;
                    progress = true;
                }
                if let Some(peer) = from {
                    if queues[peer as usize * n + me].pop_front().is_none() {
                        break;
                    }
                }
                sent_part[me] = false;
                next[me] += 1;
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    (0..n).all(|me| next[me] == all[me].len()) && queues.iter().all(VecDeque::is_empty)
}

#[test]
fn every_expansion_is_matched_and_completes() {
    let mut cases = 0;
    for size in 1..=17u32 {
        for op in Collective::ALL {
            let roots: Vec<Option<u32>> = if op.rooted() {
                (0..size).map(Some).collect()
            } else {
                vec![None]
            };
            // Every algorithm the replay expands, where there is a choice.
            let choices: Vec<Algorithms> = match op {
                Collective::Alltoall => ["alltoall=1", "alltoall=2", "alltoall=3", ""]
                    .map(pinned)
                    .to_vec(),
                Collective::Alltoallv => ["alltoallv=1", "alltoallv=2", ""].map(pinned).to_vec(),
                _ => vec![Algorithms::default()],
            };
            for (root, algorithms) in roots
                .into_iter()
                .flat_map(|r| choices.iter().map(move |a| (r, a)))
            {
                for (m, seed) in [
                    (0, None),
                    (8, None),
                    (100_000, None),
                    (0, Some(0)),
                    (1, Some(1)),
                    (1, Some(2)),
                ] {
                    let records: Vec<_> = (0..size)
                        .map(|me| record(op, size, me, root.unwrap_or(0), m, seed))
                        .collect();
                    let all = all_steps(size, algorithms, |me| {
                        let (sent, received, ref per_peer) = records[me as usize];
                        CallShape {
                            op,
                            size,
                            me,
                            root,
                            sent,
                            received,
                            per_peer,
                        }
                    });
                    let case = format!(
                        "{op:?} size {size} root {root:?} m {m} seed {seed:?} {}",
                        algorithms.header()
                    );
                    if size == 1 {
                        assert_eq!(all, vec![Vec::<Step>::new()], "{case}");
                    }
                    if let Err(e) = check_matched(size, &all) {
                        panic!("{case}: {e}\n{all:?}");
                    }
                    assert!(replay_completes(&all), "{case}: deadlock\n{all:?}");
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 5000, "{cases}");
}

#[test]
fn the_checks_catch_a_mismatch_and_a_deadlock() {
    // The checks themselves must be able to fail.
    let mut all = uniform(Collective::Allreduce, 4, None, 8, 8);
    assert!(check_matched(4, &all).is_ok() && replay_completes(&all));
    all[3][1] = sr(1, 9);
    assert!(check_matched(4, &all).is_err());
    let deadlock = vec![vec![recv(1, 0), send(1, 0)], vec![recv(0, 0), send(0, 0)]];
    assert!(check_matched(2, &deadlock).is_ok());
    assert!(!replay_completes(&deadlock));
}
