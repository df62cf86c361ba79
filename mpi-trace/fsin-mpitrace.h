/*
 * fsin-mpitrace's own header: the records' layout and codes (read by
 * trace/src/mpi/codes.rs's test, which checks them against the Rust
 * reader's table), the rank's state and the helpers that
 * fsin-mpitrace.c (point to point, completion, the stream to the host)
 * and fsin-mpitrace-collectives.c (collectives, communicators) share.
 * Not installed: its names are hidden inside the library, so that they
 * cannot clash with the application's.
 */
#ifndef FSIN_MPITRACE_H
#define FSIN_MPITRACE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* Record kinds (the `op` byte; docs/contracts.md). */
enum {
    OP_SEND = 1,     /* blocking send; flags bit 0: synchronous (Ssend) */
    OP_ISEND = 2,    /* non-blocking send, starts request `req` */
    OP_RECV = 3,     /* blocking receive: peer, tag, bytes as received */
    OP_IRECV = 4,    /* non-blocking receive as posted (peer/tag -1: any) */
    OP_SENDRECV = 5, /* send to peer; received from root, bytes2, tag req */
    OP_WAIT = 6,     /* the completion calls: bytes = requests passed, */
    OP_WAITALL = 7,  /* bytes2 = requests completed; one OP_DONE record */
    OP_WAITANY = 8,  /* follows per completed request */
    OP_TEST = 9,
    OP_TESTALL = 10,
    OP_TESTANY = 11,
    OP_WAITSOME = 12,
    OP_PROBE = 13,   /* Probe, Iprobe: time inside MPI, nothing moved */
    OP_DONE = 16,    /* request `req` completed: peer, tag, bytes; flags
                        bit 1: a receive */
    OP_BARRIER = 32, /* collectives: root (a world rank, -1: none), bytes */
    OP_BCAST = 33,   /* this rank sends and bytes2 it receives per block */
    OP_REDUCE = 34,  /* (docs/contracts.md gives each one's meaning) */
    OP_ALLREDUCE = 35,
    OP_ALLTOALL = 36,
    OP_ALLTOALLV = 37,
    OP_ALLGATHER = 38,
    OP_ALLGATHERV = 39,
    OP_GATHER = 40,
    OP_GATHERV = 41,
    OP_SCATTER = 42,
    OP_SCATTERV = 43,
    OP_VEC = 48,      /* after a v-collective: per peer, bytes sent to it
                         and bytes2 received from it */
    OP_COMM_NEW = 64, /* comm = parent, req = the new communicator's id
                         (0xffffffff: MPI_COMM_NULL); flags bit 0: split */
};

#define FLAG_SYNC 1
#define FLAG_RECV 2
#define NO_COMM 0xffffffffu

struct rec {
    uint8_t op, flags;
    uint16_t pad;
    uint32_t comm;
    uint64_t t_enter, t_exit;
    int32_t peer, tag;
    uint64_t bytes, bytes2;
    int32_t root;
    uint32_t req;
};
_Static_assert(sizeof(struct rec) == 56, "records are 56 bytes");

/* At most this many bytes of records per rank (64 MiB: 1.2 million
 * calls); beyond, the rank stops recording and says it was cut. */
#define MAX_RECORD_BYTES (64u << 20)

struct comm {
    MPI_Comm handle;
    uint32_t id;
    int size;
    int32_t *world; /* world rank of each member */
};

struct request {
    MPI_Request handle;
    MPI_Request *where; /* the caller's variable that received it */
    uint32_t id, comm;
    int32_t peer, tag;
    uint64_t bytes;
    int recv;
};

/* The rank's state: what it records, its records, communicators and
 * open requests. */
struct state {
    int on, rank, size, truncated;
    /* FSIN_MPI's words: record, and where the region begins (FSIN_ROI_*). */
    int record, roi;
    uint64_t t_init_enter, t_init_exit, t_finalize_enter;
    struct rec *recs;
    size_t n, cap;
    struct comm *comms;
    size_t ncomms, comms_cap;
    struct request *reqs;
    size_t nreqs, reqs_cap;
    uint32_t next_req;
};
extern HIDDEN struct state T;

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

HIDDEN struct rec *add(int op, uint32_t comm, uint64_t t0, uint64_t t1);
HIDDEN struct comm *comm_of(MPI_Comm c);
HIDDEN uint32_t comm_id(MPI_Comm c);
HIDDEN int32_t world(MPI_Comm c, int r);
HIDDEN uint32_t comm_add(MPI_Comm c);
HIDDEN uint64_t bytes_of(int count, MPI_Datatype t);

#endif
