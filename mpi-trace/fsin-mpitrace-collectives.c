/*
 * fsin-mpitrace's collectives and communicators (the library's header
 * comment is fsin-mpitrace.c's): one record per collective call with
 * what this rank sends and receives per block, and for the v variants
 * one OP_VEC record per member (docs/contracts.md, "MPI trace records").
 */
#include "fsin-mpitrace.h"

/* --- Collectives ------------------------------------------------------- */

static struct rec *coll(int op, MPI_Comm c, int root, uint64_t t0, uint64_t bytes,
                        uint64_t bytes2) {
    struct rec *r = add(op, comm_id(c), t0, now_ns());
    if (r) {
        r->root = world(c, root);
        r->bytes = bytes;
        r->bytes2 = bytes2;
    }
    return r;
}

/* Per member `i` of `c`: bytes sent to it (scounts) and received from it
 * (rcounts); either may be NULL. */
static void vec(MPI_Comm c, uint64_t t0, const int *scounts, MPI_Datatype st,
                const int *rcounts, MPI_Datatype rt) {
    int n = 0;
    PMPI_Comm_size(c, &n);
    uint64_t t1 = T.n ? T.recs[T.n - 1].t_exit : t0;
    for (int i = 0; i < n; i++) {
        struct rec *r = add(OP_VEC, comm_id(c), t0, t1);
        if (!r)
            return;
        r->peer = world(c, i);
        r->bytes = scounts ? bytes_of(scounts[i], st) : 0;
        r->bytes2 = rcounts ? bytes_of(rcounts[i], rt) : 0;
    }
}

static int is_root(MPI_Comm c, int root) {
    int me = -1;
    PMPI_Comm_rank(c, &me);
    return me == root;
}

int MPI_Barrier(MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Barrier(c);
    coll(OP_BARRIER, c, -1, t0, 0, 0);
    return e;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Bcast(buf, count, t, root, c);
    coll(OP_BCAST, c, root, t0, bytes_of(count, t), bytes_of(count, t));
    return e;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op o, int root,
               MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Reduce(sbuf, rbuf, count, t, o, root, c);
    coll(OP_REDUCE, c, root, t0, bytes_of(count, t), bytes_of(count, t));
    return e;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op o,
                  MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Allreduce(sbuf, rbuf, count, t, o, c);
    coll(OP_ALLREDUCE, c, -1, t0, bytes_of(count, t), bytes_of(count, t));
    return e;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
                 MPI_Datatype rt, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, c);
    uint64_t r = bytes_of(rcount, rt);
    coll(OP_ALLTOALL, c, -1, t0, sbuf == MPI_IN_PLACE ? r : bytes_of(scount, st), r);
    return e;
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype st,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rt,
                  MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Alltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, c);
    int in_place = sbuf == MPI_IN_PLACE;
    coll(OP_ALLTOALLV, c, -1, t0, 0, 0);
    vec(c, t0, in_place ? rcounts : scounts, in_place ? rt : st, rcounts, rt);
    return e;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
                  MPI_Datatype rt, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Allgather(sbuf, scount, st, rbuf, rcount, rt, c);
    uint64_t r = bytes_of(rcount, rt);
    coll(OP_ALLGATHER, c, -1, t0, sbuf == MPI_IN_PLACE ? r : bytes_of(scount, st), r);
    return e;
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rt, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Allgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, c);
    int me = 0;
    PMPI_Comm_rank(c, &me);
    uint64_t own = sbuf == MPI_IN_PLACE ? bytes_of(rcounts[me], rt) : bytes_of(scount, st);
    coll(OP_ALLGATHERV, c, -1, t0, own, 0);
    vec(c, t0, NULL, rt, rcounts, rt);
    return e;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
               MPI_Datatype rt, int root, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, c);
    int at_root = is_root(c, root);
    uint64_t r = at_root ? bytes_of(rcount, rt) : 0;
    coll(OP_GATHER, c, root, t0, sbuf == MPI_IN_PLACE ? r : bytes_of(scount, st), r);
    return e;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rt, int root, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Gatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root, c);
    int at_root = is_root(c, root);
    int me = 0;
    PMPI_Comm_rank(c, &me);
    uint64_t own = sbuf == MPI_IN_PLACE && at_root ? bytes_of(rcounts[me], rt)
                                                    : bytes_of(scount, st);
    coll(OP_GATHERV, c, root, t0, own, 0);
    if (at_root)
        vec(c, t0, NULL, rt, rcounts, rt);
    return e;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
                MPI_Datatype rt, int root, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, c);
    int at_root = is_root(c, root);
    uint64_t s = at_root ? bytes_of(scount, st) : 0;
    coll(OP_SCATTER, c, root, t0, s, rbuf == MPI_IN_PLACE ? s : bytes_of(rcount, rt));
    return e;
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype st,
                 void *rbuf, int rcount, MPI_Datatype rt, int root, MPI_Comm c) {
    uint64_t t0 = now_ns();
    int e = PMPI_Scatterv(sbuf, scounts, displs, st, rbuf, rcount, rt, root, c);
    int at_root = is_root(c, root);
    int me = 0;
    PMPI_Comm_rank(c, &me);
    uint64_t own = rbuf == MPI_IN_PLACE && at_root ? bytes_of(scounts[me], st)
                                                    : bytes_of(rcount, rt);
    coll(OP_SCATTERV, c, root, t0, 0, own);
    if (at_root)
        vec(c, t0, scounts, st, NULL, st);
    return e;
}

/* --- Communicators ----------------------------------------------------- */

static void comm_new(MPI_Comm parent, MPI_Comm made, int split, uint64_t t0) {
    uint32_t id = comm_add(made);
    struct rec *r = add(OP_COMM_NEW, comm_id(parent), t0, now_ns());
    if (r) {
        r->req = id;
        r->flags = (uint8_t)split;
    }
}

int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out) {
    uint64_t t0 = now_ns();
    int e = PMPI_Comm_dup(c, out);
    if (e == MPI_SUCCESS)
        comm_new(c, *out, 0, t0);
    return e;
}

int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
    uint64_t t0 = now_ns();
    int e = PMPI_Comm_split(c, color, key, out);
    if (e == MPI_SUCCESS)
        comm_new(c, *out, 1, t0);
    return e;
}

int MPI_Comm_free(MPI_Comm *c) {
    /* Its handle may come back for another communicator. */
    struct comm *k = comm_of(*c);
    if (k)
        k->handle = MPI_COMM_NULL;
    return PMPI_Comm_free(c);
}
