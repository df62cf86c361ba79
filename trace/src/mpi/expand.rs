//! Collectives as point-to-point messages: for one collective call, the
//! messages each rank sends and receives under the algorithm Open MPI 4.1
//! ran in the traced run ([`Algorithms`]: pinned, or Open MPI's fixed
//! rules for Alltoall and Alltoallv). A trace replay can then simulate a
//! collective message by message.
//!
//! The schedules are those of Open MPI 4.1 (branch v4.1.x),
//! `ompi/mca/coll/base/coll_base_<file>.c`, or, for `MPI_Gatherv` and
//! `MPI_Scatterv`, `ompi/mca/coll/basic/coll_basic_<file>.c`. Each
//! algorithm below is one function named after Open MPI's. The model:
//!
//! - Peers are member indices in the communicator (`0..size`). Bytes are
//!   bytes.
//! - A rank's own block is copied locally, so no step stands for it.
//!   Size 1 gives no steps.
//! - There is one segment per message: the pinned `_algorithm_segmentsize`
//!   is 0, and `COLL_BASE_COMPUTED_SEGCOUNT` (`coll_base_functions.h`)
//!   then keeps the whole count.
//! - Before the component runs, Open MPI's MPI layer returns early on
//!   zero counts (`ompi/mpi/c/<op>.c`). That skips `MPI_Bcast`,
//!   `MPI_Reduce` and `MPI_Allreduce` with 0 bytes; `MPI_Alltoall` with 0
//!   received; `MPI_Allgather` with 0 sent or 0 received; `MPI_Allgatherv`
//!   when every block is 0; and `MPI_Gather` (`MPI_Scatter`) at a rank
//!   whose `sent` (`received`) is 0. For a correct call those are all the
//!   ranks at once, so zero-byte messages only appear in `MPI_Barrier`,
//!   `MPI_Alltoallv` and `MPI_Allgatherv`. coll/basic's `MPI_Gatherv` and
//!   `MPI_Scatterv` skip each zero-count message instead.
//!
//! What the model does not carry:
//! - The barrier's last send is synchronous in Open MPI
//!   (`MCA_PML_BASE_SEND_SYNCHRONOUS`); here it is a plain [`Step::Send`].
//! - Standard sends above the eager limit are rendezvous; whether a send
//!   waits for its receiver is left to the replay.
//! - With `MPI_IN_PLACE`, Alltoall and Alltoallv run
//!   `mca_coll_base_alltoall(v)_intra_basic_inplace`. The library's
//!   records do not show that, so those calls are expanded by the
//!   algorithm chosen for them.
//! - Open MPI's fixed rules pick two_proc (5) for some Alltoalls on 2
//!   ranks: one sendrecv with the other rank, which is pairwise on 2
//!   (and is expanded as pairwise on any size).
//! - Each rank picks the fixed rules' Alltoall algorithm from its own
//!   block, as Open MPI does: a trace whose ranks disagree on the block
//!   (not a correct MPI program) may expand to messages that never match,
//!   which the replay reports as a deadlock.

use super::algorithms::{
    alltoall_fixed, alltoallv_fixed, Algorithms, Choice, ALLTOALLV_BASIC_LINEAR, ALLTOALL_BRUCK,
    ALLTOALL_LINEAR, ALLTOALL_LINEAR_SYNC,
};
use super::Collective;

/// One step of a rank's part in a collective, in the order the rank
/// performs them (Open MPI 4.1 `coll_base_<file>.c`, see the module
/// docs). Peers are member indices in the communicator (`0..size`); bytes
/// are bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send `bytes` bytes to member `peer`. This is Open MPI's blocking
    /// standard-mode `send`, or one of the `isend`s a binomial bcast posts
    /// to its children before waiting for them all. In the replay model a
    /// send does not block the rank.
    Send {
        /// The member sent to.
        peer: u32,
        /// The message's size, bytes.
        bytes: u64,
    },
    /// Receive `bytes` bytes from member `peer`. The rank waits until the
    /// message has arrived.
    Recv {
        /// The member received from.
        peer: u32,
        /// The message's size, bytes.
        bytes: u64,
    },
    /// Send `send_bytes` bytes to member `to` and receive `recv_bytes`
    /// bytes from member `from` at once. This is Open MPI's sendrecv
    /// (`ompi_coll_base_sendrecv_actual` in Open MPI 4.1
    /// `coll_base_util.c`: irecv, send, wait). The rank continues when
    /// both are done.
    SendRecv {
        /// The member sent to.
        to: u32,
        /// The message sent, bytes.
        send_bytes: u64,
        /// The member received from.
        from: u32,
        /// The message received, bytes.
        recv_bytes: u64,
    },
    /// Start sending `bytes` bytes to member `peer` and go on (a started
    /// persistent send or an `isend`); the next [`Step::WaitAll`]
    /// completes it.
    Isend {
        /// The member sent to.
        peer: u32,
        /// The message's size, bytes.
        bytes: u64,
    },
    /// Post a receive of `bytes` bytes from member `peer` and go on; the
    /// next [`Step::WaitAll`] waits for it.
    Irecv {
        /// The member received from.
        peer: u32,
        /// The message's size, bytes.
        bytes: u64,
    },
    /// Wait for every [`Step::Isend`] and [`Step::Irecv`] since the last
    /// `WaitAll` (`ompi_request_wait_all`).
    WaitAll,
}

/// What one rank knows of a collective call: a
/// [`CollectiveCall`](super::CollectiveCall) with its communicator's size
/// and its ranks as member indices in the communicator, not world ranks.
/// `sent`, `received` and `per_peer` are the call's, bytes per block as
/// [`CollectiveCall`](super::CollectiveCall) defines them per operation.
///
/// A `per_peer` entry that is missing (the slice is shorter than the
/// member's index) is replaced as follows:
/// - Alltoallv: `(sent, received)`.
/// - Allgatherv and Gatherv: the block is taken to be `sent`, as if every
///   block were the same size as this rank's own.
/// - Scatterv: the block is taken to be `received`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallShape<'a> {
    /// The collective operation.
    pub op: Collective,
    /// The number of members in the communicator.
    pub size: u32,
    /// This rank's index in the communicator (`0..size`).
    pub me: u32,
    /// The root's index in the communicator, for Bcast, Reduce, Gather,
    /// Gatherv, Scatter and Scatterv. Ignored by the other operations.
    pub root: Option<u32>,
    /// Bytes sent per block ([`CollectiveCall::sent`](super::CollectiveCall::sent)).
    pub sent: u64,
    /// Bytes received per block ([`CollectiveCall::received`](super::CollectiveCall::received)).
    pub received: u64,
    /// For the `v` collectives: per member, in member order, (bytes sent
    /// to member `i`, bytes received from member `i`). Empty otherwise.
    pub per_peer: &'a [(u64, u64)],
}

/// The steps of rank `call.me` in the collective `call`, in order, under
/// the algorithms of `algorithms` (Open MPI 4.1):
/// - barrier: recursive doubling (`coll_base_barrier.c`);
/// - bcast: binomial tree (`coll_base_bcast.c`);
/// - reduce: in-order binomial tree (`coll_base_reduce.c`);
/// - allreduce: recursive doubling (`coll_base_allreduce.c`);
/// - alltoall: linear or linear_sync, pairwise or modified Bruck
///   (`coll_base_alltoall.c`), as pinned or by the fixed rules;
/// - alltoallv: basic linear or pairwise (`coll_base_alltoallv.c`), as
///   pinned or by the fixed rules;
/// - allgather and allgatherv: ring (`coll_base_allgather.c`,
///   `coll_base_allgatherv.c`);
/// - gather and scatter: linear (`coll_base_gather.c`,
///   `coll_base_scatter.c`);
/// - gatherv and scatterv: coll/basic's linear ones
///   (`coll_basic_gatherv.c`, `coll_basic_scatterv.c`).
///
/// The result is empty when:
/// - `me` or `root` is not below `size`;
/// - a rooted operation has no root;
/// - the communicator has one member;
/// - Open MPI's MPI layer returns before the algorithm runs (zero counts,
///   see the module docs).
pub fn steps(call: &CallShape, algorithms: &Algorithms) -> Vec<Step> {
    let (size, me) = (call.size, call.me);
    if me >= size || call.root.is_some_and(|r| r >= size) || size < 2 {
        return Vec::new();
    }
    if (call.op.rooted() && call.root.is_none()) || mpi_layer_returns_early(call) {
        return Vec::new();
    }
    let root = call.root.unwrap_or(0);
    match call.op {
        Collective::Barrier => barrier_intra_recursivedoubling(size, me),
        Collective::Bcast => bcast_intra_binomial(size, me, root, call.sent),
        Collective::Reduce => reduce_intra_binomial(size, me, root, call.sent),
        Collective::Allreduce => allreduce_intra_recursivedoubling(size, me, call.sent),
        Collective::Alltoall => {
            let alg = match algorithms.choice(Collective::Alltoall) {
                Choice::Pinned(n) => n,
                Choice::Fixed => alltoall_fixed(size, call.sent),
            };
            match alg {
                ALLTOALL_LINEAR | ALLTOALL_LINEAR_SYNC => {
                    alltoall_intra_linear(size, me, call.sent, call.received)
                }
                ALLTOALL_BRUCK => alltoall_intra_bruck(size, me, call.sent),
                _ => alltoall_intra_pairwise(size, me, call.sent, call.received),
            }
        }
        Collective::Alltoallv => {
            let alg = match algorithms.choice(Collective::Alltoallv) {
                Choice::Pinned(n) => n,
                Choice::Fixed => alltoallv_fixed(size),
            };
            if alg == ALLTOALLV_BASIC_LINEAR {
                alltoallv_intra_basic_linear(call)
            } else {
                alltoallv_intra_pairwise(call)
            }
        }
        Collective::Allgather => allgather_intra_ring(size, me, call.received),
        Collective::Allgatherv => allgatherv_intra_ring(call),
        Collective::Gather => gather_intra_basic_linear(size, me, root, call.sent, call.received),
        Collective::Scatter => scatter_intra_basic_linear(size, me, root, call.sent, call.received),
        Collective::Gatherv => basic_gatherv_intra(call, root),
        Collective::Scatterv => basic_scatterv_intra(call, root),
    }
}

/// Every rank's steps ([`steps`]) for one collective on a communicator of
/// `size` members, where `shape(i)` is the call as member `i` records it.
/// Index `i` of the result holds member `i`'s steps. The replay can use
/// this to check that the steps match; the tests use it too. Models Open
/// MPI 4.1 `coll_base_<file>.c`, as [`steps`] does.
pub fn all_steps<'a>(
    size: u32,
    algorithms: &Algorithms,
    shape: impl Fn(u32) -> CallShape<'a>,
) -> Vec<Vec<Step>> {
    (0..size).map(|me| steps(&shape(me), algorithms)).collect()
}

/// Whether Open MPI's MPI layer returns before the collective component
/// runs (`ompi/mpi/c/<op>.c` of Open MPI 4.1: the "do we need to do
/// anything?" checks on counts). With `MPI_IN_PLACE` the library records
/// the counts the check then uses, so bytes stand in for counts here.
fn mpi_layer_returns_early(call: &CallShape) -> bool {
    match call.op {
        Collective::Bcast | Collective::Reduce | Collective::Allreduce => call.sent == 0,
        Collective::Alltoall => call.received == 0,
        Collective::Allgather => call.sent == 0 || call.received == 0,
        // Returns only when every rank's block is 0. Missing entries stand
        // for `sent` (see `allgatherv_block`).
        Collective::Allgatherv => {
            let known = call.per_peer.len().min(call.size as usize);
            call.per_peer[..known].iter().all(|&(_, block)| block == 0)
                && (known == call.size as usize || call.sent == 0)
        }
        Collective::Gather => call.sent == 0,
        Collective::Scatter => call.received == 0,
        Collective::Barrier
        | Collective::Alltoallv
        | Collective::Gatherv
        | Collective::Scatterv => false,
    }
}

/// Member `i`'s entry of `per_peer`, or `missing` if there is none.
fn per_peer(call: &CallShape, i: u32, missing: (u64, u64)) -> (u64, u64) {
    call.per_peer.get(i as usize).copied().unwrap_or(missing)
}

/// `(a + b) mod n`, without overflow, for any `a` and `b` and `n >= 1`.
fn add_mod(a: u64, b: u64, n: u32) -> u32 {
    let n = u64::from(n);
    // Below n, so it fits in a u32.
    ((a % n + b % n) % n) as u32
}

/// `(a - b) mod n`, without overflow, for any `a` and `b` and `n >= 1`.
fn sub_mod(a: u64, b: u64, n: u32) -> u32 {
    let n = u64::from(n);
    ((a % n + n - b % n) % n) as u32
}

/// The largest power of two at most `n` (`n >= 1`). This is Open MPI's
/// `adjsize`, `opal_next_poweroftwo(size) >> 1`.
fn largest_power_of_two_at_most(n: u32) -> u32 {
    1 << (31 - n.leading_zeros())
}

/// Barrier by recursive doubling, with 0-byte messages
/// (`ompi_coll_base_barrier_intra_recursivedoubling`, Open MPI 4.1
/// `coll_base_barrier.c`). `adj` is the largest power of two at most
/// `size`, and `extra = size - adj`.
/// 1. A rank `r >= adj` exchanges with `r - adj`. Rank `r < extra`
///    receives from `r + adj`.
/// 2. Every rank `r < adj` exchanges with `r ^ mask`, for mask = 1, 2,
///    4, ... below `adj`.
/// 3. A rank `r < extra` releases `r + adj` with a (synchronous) send.
fn barrier_intra_recursivedoubling(size: u32, me: u32) -> Vec<Step> {
    let adjsize = largest_power_of_two_at_most(size);
    let extra = size - adjsize;
    let mut out = Vec::new();
    if me >= adjsize {
        out.push(Step::SendRecv {
            to: me - adjsize,
            send_bytes: 0,
            from: me - adjsize,
            recv_bytes: 0,
        });
    } else if me < extra {
        out.push(Step::Recv {
            peer: me + adjsize,
            bytes: 0,
        });
    }
    if me < adjsize {
        let mut mask = 1;
        while mask < adjsize {
            let remote = me ^ mask;
            out.push(Step::SendRecv {
                to: remote,
                send_bytes: 0,
                from: remote,
                recv_bytes: 0,
            });
            mask <<= 1;
        }
    }
    if me < extra {
        out.push(Step::Send {
            peer: me + adjsize,
            bytes: 0,
        });
    }
    out
}

/// Bcast over a binomial tree in one segment
/// (`ompi_coll_base_bcast_intra_binomial` and `_generic`, Open MPI 4.1
/// `coll_base_bcast.c`; the tree is `ompi_coll_base_topo_build_bmtree`,
/// `coll_base_topo.c`).
/// - Virtual ranks are `v = (r - root) mod size`.
/// - The parent of `v` is `v` with its highest set bit cleared.
/// - The children of `v` are `v + 2^k` for every `2^k > v`, up to `size`,
///   in increasing `k`.
///
/// A non-root rank receives from its parent. Then every rank sends to its
/// children in order (isends, then one wait for them all).
fn bcast_intra_binomial(size: u32, me: u32, root: u32, bytes: u64) -> Vec<Step> {
    let vrank = u64::from(sub_mod(u64::from(me), u64::from(root), size));
    let member = |v: u64| add_mod(v, u64::from(root), size);
    let mut out = Vec::new();
    // The smallest power of two above vrank (opal_next_poweroftwo).
    let mut mask: u64 = 1 << (64 - vrank.leading_zeros());
    if vrank != 0 {
        let parent = vrank ^ (mask >> 1);
        out.push(Step::Recv {
            peer: member(parent),
            bytes,
        });
    }
    while mask < u64::from(size) {
        let child = vrank + mask;
        if child >= u64::from(size) {
            break;
        }
        out.push(Step::Send {
            peer: member(child),
            bytes,
        });
        mask <<= 1;
    }
    out
}

/// Reduce over the in-order binomial tree in one segment
/// (`ompi_coll_base_reduce_intra_binomial` and `_generic`, Open MPI 4.1
/// `coll_base_reduce.c`; the tree is
/// `ompi_coll_base_topo_build_in_order_bmtree`, `coll_base_topo.c`).
/// - Virtual ranks are `v = (r - root) mod size`.
/// - The children of `v` are `v + 1, v + 2, v + 4, ...`, below the lowest
///   set bit of `v` and below `size`.
/// - The parent of `v` is `v` minus its lowest set bit.
///
/// A rank receives from its children in that order (the irecv of each
/// child is posted before the wait for the previous one), then sends to
/// its parent, unless it is the root.
fn reduce_intra_binomial(size: u32, me: u32, root: u32, bytes: u64) -> Vec<Step> {
    let vrank = u64::from(sub_mod(u64::from(me), u64::from(root), size));
    let member = |v: u64| add_mod(v, u64::from(root), size);
    let mut out = Vec::new();
    let mut parent = None;
    let mut mask: u64 = 1;
    while mask < u64::from(size) {
        let remote = vrank ^ mask;
        if remote < vrank {
            parent = Some(remote);
            break;
        }
        if remote < u64::from(size) {
            out.push(Step::Recv {
                peer: member(remote),
                bytes,
            });
        }
        mask <<= 1;
    }
    if let Some(parent) = parent {
        out.push(Step::Send {
            peer: member(parent),
            bytes,
        });
    }
    out
}

/// Allreduce by recursive doubling; every message carries the whole
/// vector (`ompi_coll_base_allreduce_intra_recursivedoubling`, Open MPI
/// 4.1 `coll_base_allreduce.c`). `adj` is the largest power of two at most
/// `size`, and `extra = size - adj`.
/// 1. Of the ranks `r < 2 * extra`, an even one sends to `r + 1` and drops
///    out. An odd one receives from `r - 1` and takes the new rank
///    `r / 2`. Every other rank takes the new rank `r - extra`.
/// 2. For distance = 1, 2, 4, ... below `adj`, a rank with new rank `n`
///    exchanges with the rank whose new rank is `q = n ^ distance`. That
///    rank is `2q + 1` if `q < extra`, else `q + extra`.
/// 3. Of the ranks `r < 2 * extra`, an odd one sends the result to
///    `r - 1`, and an even one receives it from `r + 1`.
fn allreduce_intra_recursivedoubling(size: u32, me: u32, bytes: u64) -> Vec<Step> {
    let adjsize = u64::from(largest_power_of_two_at_most(size));
    let extra = u64::from(size) - adjsize;
    let rank = u64::from(me);
    // Every rank computed below is a member (below size), so it fits in a
    // u32.
    let mut out = Vec::new();
    let newrank = if rank < 2 * extra {
        if rank % 2 == 0 {
            out.push(Step::Send {
                peer: (rank + 1) as u32,
                bytes,
            });
            None
        } else {
            out.push(Step::Recv {
                peer: (rank - 1) as u32,
                bytes,
            });
            Some(rank / 2)
        }
    } else {
        Some(rank - extra)
    };
    if let Some(newrank) = newrank {
        let mut distance = 1;
        while distance < adjsize {
            let newremote = newrank ^ distance;
            let remote = if newremote < extra {
                newremote * 2 + 1
            } else {
                newremote + extra
            } as u32;
            out.push(Step::SendRecv {
                to: remote,
                send_bytes: bytes,
                from: remote,
                recv_bytes: bytes,
            });
            distance <<= 1;
        }
    }
    if rank < 2 * extra {
        if rank % 2 == 0 {
            out.push(Step::Recv {
                peer: (rank + 1) as u32,
                bytes,
            });
        } else {
            out.push(Step::Send {
                peer: (rank - 1) as u32,
                bytes,
            });
        }
    }
    out
}

/// Alltoall by pairwise exchange (`ompi_coll_base_alltoall_intra_pairwise`,
/// Open MPI 4.1 `coll_base_alltoall.c`). For step = 1 .. size - 1, a rank
/// sends `sent` bytes to `(r + step) mod size` and receives `received`
/// bytes from `(r - step) mod size` in one sendrecv. Step `size` is the
/// local copy.
fn alltoall_intra_pairwise(size: u32, me: u32, sent: u64, received: u64) -> Vec<Step> {
    (1..size)
        .map(|step| Step::SendRecv {
            to: add_mod(u64::from(me), u64::from(step), size),
            send_bytes: sent,
            from: sub_mod(u64::from(me), u64::from(step), size),
            recv_bytes: received,
        })
        .collect()
}

/// Alltoall by the linear algorithms (`ompi_coll_base_alltoall_intra_basic_linear`
/// and, without a request limit, `_linear_sync`, Open MPI 4.1
/// `coll_base_alltoall.c`): receives posted from `r + 1, r + 2, ...`,
/// sends started to `r - 1, r - 2, ...` (mod `size`), then one wait for
/// them all. Zero-byte blocks still go.
fn alltoall_intra_linear(size: u32, me: u32, sent: u64, received: u64) -> Vec<Step> {
    let mut out: Vec<Step> = (1..size)
        .map(|i| Step::Irecv {
            peer: add_mod(u64::from(me), u64::from(i), size),
            bytes: received,
        })
        .collect();
    out.extend((1..size).map(|i| Step::Isend {
        peer: sub_mod(u64::from(me), u64::from(i), size),
        bytes: sent,
    }));
    out.push(Step::WaitAll);
    out
}

/// Alltoall by the modified Bruck algorithm
/// (`ompi_coll_base_alltoall_intra_bruck`, Open MPI 4.1
/// `coll_base_alltoall.c`): for distance = 1, 2, 4, ... below `size`, one
/// sendrecv to `r + distance` from `r - distance` (mod `size`) of every
/// rotated block `j` in `1..size` with `j & distance` set, `block` bytes
/// each (the send type describes both sides).
fn alltoall_intra_bruck(size: u32, me: u32, block: u64) -> Vec<Step> {
    let mut out = Vec::new();
    let mut distance: u64 = 1;
    while distance < u64::from(size) {
        // The j in 1..size with bit `distance` set: full periods of
        // 2 * distance hold `distance` each, then the partial one.
        let n = u64::from(size);
        let period = 2 * distance;
        let k = n / period * distance + (n % period).saturating_sub(distance);
        let bytes = k.saturating_mul(block);
        out.push(Step::SendRecv {
            to: add_mod(u64::from(me), distance, size),
            send_bytes: bytes,
            from: sub_mod(u64::from(me), distance, size),
            recv_bytes: bytes,
        });
        distance *= 2;
    }
    out
}

/// Alltoallv by the basic linear algorithm
/// (`ompi_coll_base_alltoallv_intra_basic_linear`, Open MPI 4.1.4
/// `coll_base_alltoallv.c`): receives posted from every other member in
/// ascending order, sends started to every other member in ascending
/// order, then one wait for them all. Zero counts still go as 0-byte
/// messages in 4.1.4 (4.1.6 skips them). A missing `per_peer` entry
/// stands for `(sent, received)`.
fn alltoallv_intra_basic_linear(call: &CallShape) -> Vec<Step> {
    let (size, me) = (call.size, call.me);
    let missing = (call.sent, call.received);
    let others = || (0..size).filter(move |&i| i != me);
    let mut out: Vec<Step> = others()
        .map(|i| Step::Irecv {
            peer: i,
            bytes: per_peer(call, i, missing).1,
        })
        .collect();
    out.extend(others().map(|i| Step::Isend {
        peer: i,
        bytes: per_peer(call, i, missing).0,
    }));
    out.push(Step::WaitAll);
    out
}

/// Alltoallv by pairwise exchange
/// (`ompi_coll_base_alltoallv_intra_pairwise`, Open MPI 4.1
/// `coll_base_alltoallv.c`). As [`alltoall_intra_pairwise`], but the bytes
/// are `per_peer[to].0` and `per_peer[from].1`, and step 0 is the local
/// copy. Zero counts still go as 0-byte messages. A missing `per_peer`
/// entry stands for `(sent, received)`.
fn alltoallv_intra_pairwise(call: &CallShape) -> Vec<Step> {
    let (size, me) = (call.size, call.me);
    let missing = (call.sent, call.received);
    (1..size)
        .map(|step| {
            let to = add_mod(u64::from(me), u64::from(step), size);
            let from = sub_mod(u64::from(me), u64::from(step), size);
            Step::SendRecv {
                to,
                send_bytes: per_peer(call, to, missing).0,
                from,
                recv_bytes: per_peer(call, from, missing).1,
            }
        })
        .collect()
}

/// Allgather around a ring (`ompi_coll_base_allgather_intra_ring`, Open
/// MPI 4.1 `coll_base_allgather.c`). In each of `size - 1` steps a rank
/// sends one block to `r + 1` and receives one block from `r - 1` (mod
/// `size`). Both blocks are the receive count (`block`, the recorded
/// `received`).
fn allgather_intra_ring(size: u32, me: u32, block: u64) -> Vec<Step> {
    let to = add_mod(u64::from(me), 1, size);
    let from = sub_mod(u64::from(me), 1, size);
    (1..size)
        .map(|_| Step::SendRecv {
            to,
            send_bytes: block,
            from,
            recv_bytes: block,
        })
        .collect()
}

/// The bytes of member `i`'s block in an Allgatherv: `per_peer[i].1`, or
/// `sent` if that entry is missing.
fn allgatherv_block(call: &CallShape, i: u32) -> u64 {
    per_peer(call, i, (0, call.sent)).1
}

/// Allgatherv around a ring (`ompi_coll_base_allgatherv_intra_ring`, Open
/// MPI 4.1 `coll_base_allgatherv.c`). In step i = 0 .. size - 2, rank `r`
/// sends the block of member `(r - i) mod size` to `r + 1`, and receives
/// the block of member `(r - i - 1) mod size` from `r - 1`. Zero-byte
/// blocks still go.
fn allgatherv_intra_ring(call: &CallShape) -> Vec<Step> {
    let (size, me) = (call.size, call.me);
    let to = add_mod(u64::from(me), 1, size);
    let from = sub_mod(u64::from(me), 1, size);
    (0..size - 1)
        .map(|i| Step::SendRecv {
            to,
            send_bytes: allgatherv_block(call, sub_mod(u64::from(me), u64::from(i), size)),
            from,
            recv_bytes: allgatherv_block(call, sub_mod(u64::from(me), u64::from(i) + 1, size)),
        })
        .collect()
}

/// Gather, linear (`ompi_coll_base_gather_intra_basic_linear`, Open MPI
/// 4.1 `coll_base_gather.c`). A non-root rank sends its block (`sent`) to
/// the root. The root receives `received` bytes from each member in
/// member order, skipping itself.
fn gather_intra_basic_linear(size: u32, me: u32, root: u32, sent: u64, received: u64) -> Vec<Step> {
    if me != root {
        return vec![Step::Send {
            peer: root,
            bytes: sent,
        }];
    }
    (0..size)
        .filter(|&i| i != me)
        .map(|i| Step::Recv {
            peer: i,
            bytes: received,
        })
        .collect()
}

/// Scatter, linear (`ompi_coll_base_scatter_intra_basic_linear`, Open MPI
/// 4.1 `coll_base_scatter.c`). The root sends `sent` bytes to each member
/// in member order, skipping itself. A non-root rank receives its block
/// (`received`) from the root.
fn scatter_intra_basic_linear(
    size: u32,
    me: u32,
    root: u32,
    sent: u64,
    received: u64,
) -> Vec<Step> {
    if me != root {
        return vec![Step::Recv {
            peer: root,
            bytes: received,
        }];
    }
    (0..size)
        .filter(|&i| i != me)
        .map(|i| Step::Send {
            peer: i,
            bytes: sent,
        })
        .collect()
}

/// Gatherv, coll/basic's linear one (`mca_coll_basic_gatherv_intra`,
/// Open MPI 4.1 `coll_basic_gatherv.c`; coll/tuned has no gatherv).
/// - A non-root rank sends its block to the root, unless the block is
///   empty.
/// - The root receives `per_peer[i].1` bytes from each member `i` in
///   member order, skipping itself and empty blocks. A missing entry
///   stands for `sent`.
fn basic_gatherv_intra(call: &CallShape, root: u32) -> Vec<Step> {
    let (size, me) = (call.size, call.me);
    if me != root {
        if call.sent == 0 {
            return Vec::new();
        }
        return vec![Step::Send {
            peer: root,
            bytes: call.sent,
        }];
    }
    (0..size)
        .filter(|&i| i != me)
        .map(|i| (i, per_peer(call, i, (0, call.sent)).1))
        .filter(|&(_, bytes)| bytes > 0)
        .map(|(peer, bytes)| Step::Recv { peer, bytes })
        .collect()
}

/// Scatterv, coll/basic's linear one (`mca_coll_basic_scatterv_intra`,
/// Open MPI 4.1 `coll_basic_scatterv.c`; coll/tuned has no scatterv).
/// - The root sends `per_peer[i].0` bytes to each member `i` in member
///   order, skipping itself and empty blocks. A missing entry stands for
///   `received`.
/// - A non-root rank receives its block from the root, unless the block
///   is empty.
fn basic_scatterv_intra(call: &CallShape, root: u32) -> Vec<Step> {
    let (size, me) = (call.size, call.me);
    if me != root {
        if call.received == 0 {
            return Vec::new();
        }
        return vec![Step::Recv {
            peer: root,
            bytes: call.received,
        }];
    }
    (0..size)
        .filter(|&i| i != me)
        .map(|i| (i, per_peer(call, i, (call.received, 0)).0))
        .filter(|&(_, bytes)| bytes > 0)
        .map(|(peer, bytes)| Step::Send { peer, bytes })
        .collect()
}

#[cfg(test)]
mod tests;
