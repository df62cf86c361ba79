/*
 * fsin-mpitrace: the MPI-level trace of `fsin qemu --trace-level mpi`, a
 * PMPI interposition library loaded into every rank of the application
 * (LD_PRELOAD, passed to the ranks by Open MPI's mca_base_env_list).
 *
 * Per rank, in guest time (CLOCK_MONOTONIC, nanoseconds), it keeps one
 * record per MPI call it wraps: the time the call was entered and left
 * (what lies between leaving one call and entering the next is a CPU
 * burst; time inside MPI, polling included, is not), the peer as a rank of
 * MPI_COMM_WORLD, the tag, the bytes, the communicator, and the requests
 * that non-blocking calls start and Wait/Test calls complete. The records
 * stay in the rank's memory until MPI_Finalize has returned; then they go
 * to the host as UDP datagrams to INSEE's magic address (1.2.3.4, MAC
 * 11:22:33:44:55:66; command byte 'M'), which nic-bridge keeps out of the
 * simulated network, as it keeps the checkpoint request 'C'. Sent after
 * MPI_Finalize, they cost the ranks' last moments, not their run. Each
 * datagram carries the clock at which it was sent, so that the host can
 * tie the guest's CLOCK_MONOTONIC to the node cycles of its NIC.
 *
 * The stream's layout is docs/contracts.md's "MPI trace records", read by
 * qemu-adapter/src/qemu/mpi_in.rs: all integers little-endian (x86-64).
 *
 * The same library marks the region of interest (`fsin qemu --roi`,
 * fsin_roi.h): with FSIN_MPI holding the word roi=mpi, each rank, once its
 * MPI_Init has returned, tells the host (command byte 'R', what 1) and
 * waits for the host's go, a UDP broadcast to port 5042 that nic-bridge
 * hands every guest once every rank of the world has told it; with
 * roi=marker the same happens at the ranks' MPI_Pcontrol(1) (what 2), and
 * MPI_Pcontrol(0) tells the host that the rank's region ended (what 0, no
 * wait). Under roi=mpi each rank tells the end as it enters MPI_Finalize. The records
 * are kept and sent only with the word trace in FSIN_MPI (the image's
 * mpirun wrappers pass it to the ranks; unset: trace).
 *
 * Built by scripts/install-qemu.sh with the MPI image's Open MPI (mpicc
 * -shared), with fsin-mpitrace-collectives.c (the collectives and
 * communicators) and the two's header fsin-mpitrace.h (the records'
 * layout and codes), into /usr/local/lib/libfsin-mpitrace.so.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fsin_roi.h"
#include "fsin-mpitrace.h"

/* The rank's state (fsin-mpitrace.h). */
struct state T;

/* A new record, or NULL when recording is off or the records are full. */
struct rec *add(int op, uint32_t comm, uint64_t t0, uint64_t t1) {
    if (!T.on)
        return NULL;
    if (T.n == T.cap) {
        size_t cap = T.cap ? 2 * T.cap : 4096;
        struct rec *r;
        if (cap * sizeof *r > MAX_RECORD_BYTES || !(r = realloc(T.recs, cap * sizeof *r))) {
            T.truncated = 1;
            T.on = 0;
            return NULL;
        }
        T.recs = r;
        T.cap = cap;
    }
    struct rec *r = &T.recs[T.n++];
    memset(r, 0, sizeof *r);
    r->op = (uint8_t)op;
    r->comm = comm;
    r->t_enter = t0;
    r->t_exit = t1;
    r->peer = -1;
    r->tag = -1;
    r->root = -1;
    return r;
}

struct comm *comm_of(MPI_Comm c) {
    for (size_t i = 0; i < T.ncomms; i++)
        if (T.comms[i].handle == c)
            return &T.comms[i];
    return NULL;
}

uint32_t comm_id(MPI_Comm c) {
    struct comm *k = comm_of(c);
    return k ? k->id : NO_COMM;
}

/* The world rank of rank `r` of communicator `c` (-1: none, or `r` is
 * MPI_ANY_SOURCE / MPI_PROC_NULL). */
int32_t world(MPI_Comm c, int r) {
    struct comm *k = comm_of(c);
    if (!k || r < 0 || r >= k->size)
        return -1;
    return k->world[r];
}

/* Registers communicator `c` (a member's view) and returns its id. */
uint32_t comm_add(MPI_Comm c) {
    if (c == MPI_COMM_NULL)
        return NO_COMM;
    if (T.ncomms == T.comms_cap) {
        size_t cap = T.comms_cap ? 2 * T.comms_cap : 8;
        struct comm *k = realloc(T.comms, cap * sizeof *k);
        if (!k) {
            T.truncated = 1;
            return NO_COMM;
        }
        T.comms = k;
        T.comms_cap = cap;
    }
    struct comm *k = &T.comms[T.ncomms];
    k->handle = c;
    k->id = (uint32_t)T.ncomms;
    PMPI_Comm_size(c, &k->size);
    k->world = malloc((size_t)k->size * sizeof *k->world);
    int *mine = malloc((size_t)k->size * sizeof *mine);
    if (!k->world || !mine) {
        free(k->world);
        free(mine);
        T.truncated = 1;
        return NO_COMM;
    }
    MPI_Group g, w;
    PMPI_Comm_group(c, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &w);
    for (int i = 0; i < k->size; i++)
        mine[i] = i;
    PMPI_Group_translate_ranks(g, k->size, mine, w, k->world);
    PMPI_Group_free(&g);
    PMPI_Group_free(&w);
    free(mine);
    T.ncomms++;
    return k->id;
}

uint64_t bytes_of(int count, MPI_Datatype t) {
    int size = 0;
    if (count <= 0 || t == MPI_DATATYPE_NULL)
        return 0;
    PMPI_Type_size(t, &size);
    return (uint64_t)count * (uint64_t)(size > 0 ? size : 0);
}

static void start(MPI_Request *h, int recv, uint32_t comm, int32_t peer, int32_t tag,
                  uint64_t bytes, struct rec *r) {
    if (!T.on || !r)
        return;
    if (T.nreqs == T.reqs_cap) {
        size_t cap = T.reqs_cap ? 2 * T.reqs_cap : 64;
        struct request *q = realloc(T.reqs, cap * sizeof *q);
        if (!q) {
            T.truncated = 1;
            T.on = 0;
            return;
        }
        T.reqs = q;
        T.reqs_cap = cap;
    }
    uint32_t id = T.next_req++;
    T.reqs[T.nreqs++] = (struct request){*h, h, id, comm, peer, tag, bytes, recv};
    r->req = id;
}

static int taken(long k, const long *ix, int n) {
    for (int i = 0; i < n; i++)
        if (ix[i] == k)
            return 1;
    return 0;
}

/* The table index of the request in the caller's variable `*h`, or -1;
 * not one of the `n` in `ix` already. Open MPI hands out one shared handle
 * for sends it completed at once (ob1's immediate sends), so a request is
 * found by its variable and handle first, then as the oldest with that
 * handle. */
static long find(const MPI_Request *h, const long *ix, int n) {
    if (*h == MPI_REQUEST_NULL)
        return -1;
    for (size_t k = 0; k < T.nreqs; k++)
        if (T.reqs[k].handle == *h && T.reqs[k].where == h && !taken((long)k, ix, n))
            return (long)k;
    for (size_t k = 0; k < T.nreqs; k++)
        if (T.reqs[k].handle == *h && !taken((long)k, ix, n))
            return (long)k;
    return -1;
}

/* Request number `i` of the table completed with `st`: an OP_DONE record. */
static void done(long i, const MPI_Status *st, uint64_t t0, uint64_t t1) {
    struct request q = T.reqs[i];
    /* The table stays in the order the requests started. */
    memmove(&T.reqs[i], &T.reqs[i + 1], (T.nreqs - (size_t)i - 1) * sizeof q);
    T.nreqs--;
    struct rec *r = add(OP_DONE, q.comm, t0, t1);
    if (!r)
        return;
    r->req = q.id;
    r->peer = q.peer;
    r->tag = q.tag;
    r->bytes = q.bytes;
    if (q.recv) {
        int n = 0;
        MPI_Comm c = MPI_COMM_NULL;
        r->flags = FLAG_RECV;
        for (size_t k = 0; k < T.ncomms; k++)
            if (T.comms[k].id == q.comm)
                c = T.comms[k].handle;
        r->peer = world(c, st->MPI_SOURCE);
        r->tag = st->MPI_TAG;
        PMPI_Get_count(st, MPI_BYTE, &n);
        r->bytes = n > 0 ? (uint64_t)n : 0;
    }
}

/* --- The region of interest (fsin_roi.h) ------------------------------ */

/* This rank's region begins (`what` FSIN_ROI_MPI or FSIN_ROI_MARKER,
 * waiting for the host's go) or ends (FSIN_ROI_END). */
static void roi(int what) {
    fsin_roi_mark(what, (uint32_t)T.rank, (uint32_t)T.size);
}

/* FSIN_MPI's words (unset: trace). */
static void settings(void) {
    const char *env = getenv("FSIN_MPI");
    char w[128];
    if (!env)
        env = "trace";
    snprintf(w, sizeof w, "%s", env);
    for (char *save = NULL, *t = strtok_r(w, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "trace"))
            T.record = 1;
        else if (!strcmp(t, "roi=mpi"))
            T.roi = FSIN_ROI_MPI;
        else if (!strcmp(t, "roi=marker"))
            T.roi = FSIN_ROI_MARKER;
    }
}

static void init_done(uint64_t t0) {
    settings();
    T.t_init_enter = t0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &T.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &T.size);
    if (T.roi == FSIN_ROI_MPI)
        roi(FSIN_ROI_MPI);
    T.t_init_exit = now_ns();
    T.on = T.record;
    if (T.on)
        comm_add(MPI_COMM_WORLD);
}

int MPI_Init(int *argc, char ***argv) {
    uint64_t t0 = now_ns();
    int e = PMPI_Init(argc, argv);
    if (e == MPI_SUCCESS)
        init_done(t0);
    return e;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    uint64_t t0 = now_ns();
    int e = PMPI_Init_thread(argc, argv, required, provided);
    if (e == MPI_SUCCESS)
        init_done(t0);
    return e;
}

/* The application's own marks: MPI_Pcontrol(1) begins the region under
 * roi=marker, MPI_Pcontrol(0) ends it (the MPI standard leaves Pcontrol's
 * meaning to the profiling library). */
int MPI_Pcontrol(const int level, ...) {
    if (T.roi == FSIN_ROI_MARKER)
        roi(level ? FSIN_ROI_MARKER : FSIN_ROI_END);
    return PMPI_Pcontrol(level);
}

/* --- Point to point ---------------------------------------------------- */

static int send_(int op, int flags, const void *buf, int count, MPI_Datatype t, int dest,
                 int tag, MPI_Comm c, MPI_Request *req) {
    uint64_t t0 = now_ns();
    int e;
    switch (op) {
    case OP_SEND:
        e = flags ? PMPI_Ssend(buf, count, t, dest, tag, c) : PMPI_Send(buf, count, t, dest, tag, c);
        break;
    default:
        e = flags ? PMPI_Issend(buf, count, t, dest, tag, c, req)
                  : PMPI_Isend(buf, count, t, dest, tag, c, req);
    }
    struct rec *r = add(op, comm_id(c), t0, now_ns());
    if (r) {
        r->flags = (uint8_t)flags;
        r->peer = world(c, dest);
        r->tag = tag;
        r->bytes = bytes_of(count, t);
        if (op == OP_ISEND && e == MPI_SUCCESS)
            start(req, 0, r->comm, r->peer, tag, r->bytes, r);
    }
    return e;
}

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
    return send_(OP_SEND, 0, buf, count, t, dest, tag, c, NULL);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
    return send_(OP_SEND, FLAG_SYNC, buf, count, t, dest, tag, c, NULL);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c,
              MPI_Request *req) {
    return send_(OP_ISEND, 0, buf, count, t, dest, tag, c, req);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c,
               MPI_Request *req) {
    return send_(OP_ISEND, FLAG_SYNC, buf, count, t, dest, tag, c, req);
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm c,
             MPI_Status *status) {
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = now_ns();
    int e = PMPI_Recv(buf, count, t, source, tag, c, st);
    struct rec *r = add(OP_RECV, comm_id(c), t0, now_ns());
    if (r && e == MPI_SUCCESS) {
        int n = 0;
        r->peer = world(c, st->MPI_SOURCE);
        r->tag = st->MPI_TAG;
        PMPI_Get_count(st, MPI_BYTE, &n);
        r->bytes = n > 0 ? (uint64_t)n : 0;
    }
    return e;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm c,
              MPI_Request *req) {
    uint64_t t0 = now_ns();
    int e = PMPI_Irecv(buf, count, t, source, tag, c, req);
    struct rec *r = add(OP_IRECV, comm_id(c), t0, now_ns());
    if (r) {
        r->peer = world(c, source);
        r->tag = tag == MPI_ANY_TAG ? -1 : tag;
        r->bytes = bytes_of(count, t);
        if (e == MPI_SUCCESS)
            start(req, 1, r->comm, r->peer, r->tag, r->bytes, r);
    }
    return e;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype st_, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rt, int source, int rtag, MPI_Comm c,
                 MPI_Status *status) {
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = now_ns();
    int e = PMPI_Sendrecv(sbuf, scount, st_, dest, stag, rbuf, rcount, rt, source, rtag, c, st);
    struct rec *r = add(OP_SENDRECV, comm_id(c), t0, now_ns());
    if (r && e == MPI_SUCCESS) {
        int n = 0;
        r->peer = world(c, dest);
        r->tag = stag;
        r->bytes = bytes_of(scount, st_);
        r->root = world(c, st->MPI_SOURCE);
        PMPI_Get_count(st, MPI_BYTE, &n);
        r->bytes2 = n > 0 ? (uint64_t)n : 0;
        r->req = (uint32_t)st->MPI_TAG;
    }
    return e;
}

/* --- Completion -------------------------------------------------------- */

/* Requests of a completion call whose statuses, indices and ids stay on
 * the stack. */
#define SMALL 64

/* The table indices of `n` request handles, taken before the call that
 * may complete (and null) them; in `small` when it has room. */
static long *indices(int n, const MPI_Request *h, long *small, int room) {
    long *ix = n <= room ? small : malloc((size_t)n * sizeof *ix);
    if (!ix)
        return NULL;
    for (int i = 0; i < n; i++)
        ix[i] = find(&h[i], ix, i);
    return ix;
}

/* The completion call's record and one OP_DONE per request in `ix` whose
 * `completed[i]` is set (NULL: all of them). */
static void completed(int op, int n, long *ix, const int *completed_, const MPI_Status *st,
                      uint64_t t0) {
    uint64_t t1 = now_ns();
    struct rec *r = add(op, NO_COMM, t0, t1);
    if (!r || !ix)
        return;
    /* Records may move as OP_DONE ones are added: this one by its index. */
    size_t at = (size_t)(r - T.recs);
    r->bytes = (uint64_t)n;
    /* Completing a request moves the later ones down: find each again by
     * id (on the stack for up to SMALL requests). */
    uint32_t small[SMALL];
    uint32_t *ids = n <= SMALL ? small : malloc((size_t)n * sizeof *ids);
    if (!ids) {
        T.truncated = 1;
        return;
    }
    for (int i = 0; i < n; i++)
        ids[i] = ix[i] >= 0 ? T.reqs[ix[i]].id : NO_COMM;
    for (int i = 0; i < n; i++) {
        if (ids[i] == NO_COMM || (completed_ && !completed_[i]))
            continue;
        for (size_t k = 0; k < T.nreqs; k++)
            if (T.reqs[k].id == ids[i]) {
                done((long)k, &st[i], t0, t1);
                T.recs[at].bytes2++;
                break;
            }
    }
    if (ids != small)
        free(ids);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    long small[1];
    long *ix = indices(1, req, small, 1);
    uint64_t t0 = now_ns();
    int e = PMPI_Wait(req, st);
    if (e == MPI_SUCCESS)
        completed(OP_WAIT, 1, ix, NULL, st, t0);
    return e;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    long small[1];
    long *ix = indices(1, req, small, 1);
    uint64_t t0 = now_ns();
    int e = PMPI_Test(req, flag, st);
    if (e == MPI_SUCCESS)
        completed(OP_TEST, 1, ix, flag, st, t0);
    return e;
}

/* Waitall and Testall: every request, or (Testall) none. */
static int all(int op, int n, MPI_Request *reqs, int *flag, MPI_Status *statuses) {
    MPI_Status small_st[SMALL];
    long small[SMALL];
    MPI_Status *st = statuses;
    if (statuses == MPI_STATUSES_IGNORE)
        st = n <= SMALL ? small_st : malloc((size_t)(n > 0 ? n : 1) * sizeof *st);
    if (!st)
        return op == OP_WAITALL ? PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE)
                                : PMPI_Testall(n, reqs, flag, MPI_STATUSES_IGNORE);
    long *ix = indices(n, reqs, small, SMALL);
    uint64_t t0 = now_ns();
    int e = op == OP_WAITALL ? PMPI_Waitall(n, reqs, st) : PMPI_Testall(n, reqs, flag, st);
    if (e == MPI_SUCCESS) {
        if (op == OP_WAITALL || *flag)
            completed(op, n, ix, NULL, st, t0);
        else
            completed(op, 0, ix, NULL, st, t0);
    }
    if (ix != small)
        free(ix);
    if (st != statuses && st != small_st)
        free(st);
    return e;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    return all(OP_WAITALL, n, reqs, NULL, statuses);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    return all(OP_TESTALL, n, reqs, flag, statuses);
}

/* Waitany and Testany: the one request at `*index`, if any. */
static int any(int op, int n, MPI_Request *reqs, int *index, int *flag, MPI_Status *status) {
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    long small[SMALL];
    long *ix = indices(n, reqs, small, SMALL);
    uint64_t t0 = now_ns();
    int e = op == OP_WAITANY ? PMPI_Waitany(n, reqs, index, st)
                             : PMPI_Testany(n, reqs, index, flag, st);
    if (e == MPI_SUCCESS) {
        long one = *index >= 0 && *index < n && ix ? ix[*index] : -1;
        completed(op, 1, &one, NULL, st, t0);
    }
    if (ix != small)
        free(ix);
    return e;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    return any(OP_WAITANY, n, reqs, index, NULL, status);
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    return any(OP_TESTANY, n, reqs, index, flag, status);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices_[],
                 MPI_Status statuses[]) {
    MPI_Status small_st[SMALL];
    long small[SMALL];
    MPI_Status *st = statuses;
    if (statuses == MPI_STATUSES_IGNORE)
        st = n <= SMALL ? small_st : malloc((size_t)(n > 0 ? n : 1) * sizeof *st);
    if (!st)
        return PMPI_Waitsome(n, reqs, outcount, indices_, MPI_STATUSES_IGNORE);
    long *ix = indices(n, reqs, small, SMALL);
    uint64_t t0 = now_ns();
    int e = PMPI_Waitsome(n, reqs, outcount, indices_, st);
    if (e == MPI_SUCCESS && ix) {
        /* The completed ones, in the order Waitsome lists them. */
        int k = *outcount > 0 ? *outcount : 0;
        long *got = malloc((size_t)(k > 0 ? k : 1) * sizeof *got);
        if (got) {
            for (int i = 0; i < k; i++)
                got[i] = indices_[i] >= 0 && indices_[i] < n ? ix[indices_[i]] : -1;
            completed(OP_WAITSOME, k, got, NULL, st, t0);
            free(got);
        }
    }
    if (ix != small)
        free(ix);
    if (st != statuses && st != small_st)
        free(st);
    return e;
}

int MPI_Probe(int source, int tag, MPI_Comm c, MPI_Status *status) {
    uint64_t t0 = now_ns();
    int e = PMPI_Probe(source, tag, c, status);
    add(OP_PROBE, comm_id(c), t0, now_ns());
    return e;
}

int MPI_Iprobe(int source, int tag, MPI_Comm c, int *flag, MPI_Status *status) {
    uint64_t t0 = now_ns();
    int e = PMPI_Iprobe(source, tag, c, flag, status);
    add(OP_PROBE, comm_id(c), t0, now_ns());
    return e;
}

/* --- The end: the records to the host ---------------------------------- */

/* A datagram's payload: 24 bytes of header and a piece of the stream,
 * 1400 bytes in all (one frame, never an IP fragment). */
#define DATAGRAM_HEADER 24
#define PIECE (1400 - DATAGRAM_HEADER)
#define HEADER_BYTES 72

/* The rank's stream: header, communicators, records. */
static uint8_t *stream(size_t *len) {
    size_t n = HEADER_BYTES;
    for (size_t i = 0; i < T.ncomms; i++)
        n += 8 + 4 * (size_t)T.comms[i].size;
    n += T.n * sizeof(struct rec);
    uint8_t *s = calloc(1, n), *p = s;
    if (!s)
        return NULL;
    memcpy(p, "FSINMPI1", 8);
    fsin_roi_put32(p + 8, (uint32_t)T.rank);
    fsin_roi_put32(p + 12, (uint32_t)T.size);
    fsin_roi_put32(p + 16, (uint32_t)T.ncomms);
    fsin_roi_put32(p + 20, (uint32_t)T.n);
    fsin_roi_put32(p + 24, (uint32_t)T.truncated);
    fsin_roi_put32(p + 28, (uint32_t)getpid());
    fsin_roi_put64(p + 32, T.t_init_enter);
    fsin_roi_put64(p + 40, T.t_init_exit);
    fsin_roi_put64(p + 48, T.t_finalize_enter);
    gethostname((char *)p + 56, 15);
    p += HEADER_BYTES;
    for (size_t i = 0; i < T.ncomms; i++) {
        fsin_roi_put32(p, T.comms[i].id);
        fsin_roi_put32(p + 4, (uint32_t)T.comms[i].size);
        p += 8;
        for (int k = 0; k < T.comms[i].size; k++, p += 4)
            fsin_roi_put32(p, (uint32_t)T.comms[i].world[k]);
    }
    /* x86-64 is little-endian: the records as they are. */
    memcpy(p, T.recs, T.n * sizeof(struct rec));
    *len = n;
    return s;
}

static void ship(void) {
    size_t len = 0;
    uint8_t *s = stream(&len);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (!s || fd < 0 || len > 0xffffffffu) {
        fprintf(stderr, "fsin-mpitrace: rank %d: cannot send its records\n", T.rank);
        free(s);
        if (fd >= 0)
            close(fd);
        return;
    }
    struct sockaddr_in to;
    if (!fsin_roi_magic_to(&to)) {
        free(s);
        close(fd);
        return;
    }
    uint8_t d[DATAGRAM_HEADER + PIECE];
    uint32_t seq = 0;
    for (size_t at = 0; at < len; at += PIECE, seq++) {
        size_t k = len - at < PIECE ? len - at : PIECE;
        memset(d, 0, DATAGRAM_HEADER);
        d[0] = 'M';
        d[1] = 2; /* version */
        d[2] = at + k == len;
        fsin_roi_put32(d + 4, (uint32_t)T.rank);
        fsin_roi_put32(d + 8, seq);
        fsin_roi_put32(d + 12, (uint32_t)len);
        memcpy(d + DATAGRAM_HEADER, s + at, k);
        /* The clock as the datagram leaves: the host pairs it with the
         * node cycle the guest's NIC sent the frame in, which places the
         * records' times on the network's clock (a timeline's). */
        fsin_roi_put64(d + 16, now_ns());
        if (sendto(fd, d, DATAGRAM_HEADER + k, 0, (struct sockaddr *)&to, sizeof to) < 0) {
            perror("fsin-mpitrace: sendto");
            break;
        }
    }
    close(fd);
    free(s);
}

int MPI_Finalize(void) {
    T.t_finalize_enter = now_ns();
    if (T.roi == FSIN_ROI_MPI)
        roi(FSIN_ROI_END);
    int was_on = T.on || T.truncated;
    T.on = 0;
    int e = PMPI_Finalize();
    if (was_on)
        ship();
    return e;
}
