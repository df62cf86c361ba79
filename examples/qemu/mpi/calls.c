/*
 * fsin-calls: makes a known number of each MPI call that fsin-mpitrace
 * records, with known peers, tags and sizes, for the tests of `fsin qemu
 * --trace-level mpi` (sim-server/tests/qemu.rs) and of the library on the
 * host (tests/mpitrace.rs). Any number of ranks from 2; rank r of P:
 *
 *   1. ring: 3 MPI_Send to r+1 (tags 1, 2, 3; 8, 1000 and 5000 bytes) and
 *      3 MPI_Recv from r-1, in that order (rank 0 sends first, the others
 *      receive first);
 *   2. 2 rounds of MPI_Irecv from r-1 and from r+1 (tag 10, 64 bytes),
 *      MPI_Isend to r+1 and to r-1 (tag 10, 64 bytes), MPI_Waitall of the 4;
 *   3. MPI_Isend to r+1 (tag 20, 16 bytes) + MPI_Wait, MPI_Irecv from
 *      MPI_ANY_SOURCE (tag 20) + MPI_Waitany of 1;
 *   4. MPI_Sendrecv: 24 bytes to r+1 with tag 30, from r-1 with tag 30;
 *   5. MPI_Irecv from r-1 (tag 40, 4 bytes), MPI_Send to r+1 (tag 40,
 *      4 bytes), then MPI_Test until it completes (T calls, printed);
 *   6. one each of MPI_Barrier, MPI_Bcast (root 0, 100 bytes), MPI_Reduce
 *      (root 1 % P, 16 bytes), MPI_Allreduce (8 bytes), MPI_Alltoall (4
 *      bytes per peer), MPI_Alltoallv (4 (r + 1) bytes to each peer q,
 *      4 (q + 1) from it), MPI_Allgather (8 bytes), MPI_Allgatherv (4 (q +
 *      1) bytes from rank q), MPI_Gather (root 0, 12 bytes), MPI_Gatherv
 *      (root 0, 4 (r + 1) bytes), MPI_Scatter (root 0, 20 bytes),
 *      MPI_Scatterv (root 0, 4 (r + 1) bytes to rank r);
 *   7. MPI_Comm_dup of the world and MPI_Allreduce (8 bytes) on it;
 *      MPI_Comm_split by r mod 2 (key r) and, on it, MPI_Allreduce (8
 *      bytes) and, between its first two members, one MPI_Send / MPI_Recv
 *      (tag 50, 32 bytes).
 *
 * Prints on every rank: FSIN-CALLS rank=R tests=T
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int r, p;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (p < 2) {
        fprintf(stderr, "fsin-calls needs 2 ranks or more\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int next = (r + 1) % p, prev = (r + p - 1) % p;
    static char buf[8][8192];
    const int sizes[3] = {8, 1000, 5000};

    /* 1. ring */
    for (int k = 0; k < 3; k++) {
        if (r == 0) {
            MPI_Send(buf[0], sizes[k], MPI_CHAR, next, k + 1, MPI_COMM_WORLD);
            MPI_Recv(buf[1], sizes[k], MPI_CHAR, prev, k + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf[1], sizes[k], MPI_CHAR, prev, k + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf[0], sizes[k], MPI_CHAR, next, k + 1, MPI_COMM_WORLD);
        }
    }
    /* 2. neighbour exchange */
    for (int k = 0; k < 2; k++) {
        MPI_Request q[4];
        MPI_Irecv(buf[2], 64, MPI_CHAR, prev, 10, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(buf[3], 64, MPI_CHAR, next, 10, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(buf[0], 64, MPI_CHAR, next, 10, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(buf[0], 64, MPI_CHAR, prev, 10, MPI_COMM_WORLD, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    }
    /* 3. Wait and Waitany */
    {
        MPI_Request s, q;
        int index;
        MPI_Status st;
        MPI_Isend(buf[0], 16, MPI_CHAR, next, 20, MPI_COMM_WORLD, &s);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        MPI_Irecv(buf[4], 16, MPI_CHAR, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &q);
        MPI_Waitany(1, &q, &index, &st);
    }
    /* 4. Sendrecv */
    MPI_Sendrecv(buf[0], 24, MPI_CHAR, next, 30, buf[5], 24, MPI_CHAR, prev, 30, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    /* 5. Test */
    int tests = 0;
    {
        MPI_Request q;
        int flag = 0;
        MPI_Irecv(buf[6], 4, MPI_CHAR, prev, 40, MPI_COMM_WORLD, &q);
        MPI_Send(buf[0], 4, MPI_CHAR, next, 40, MPI_COMM_WORLD);
        while (!flag) {
            MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
            tests++;
        }
    }
    /* 6. collectives */
    {
        int *sc = malloc(p * sizeof *sc), *sd = malloc(p * sizeof *sd);
        int *rc = malloc(p * sizeof *rc), *rd = malloc(p * sizeof *rd);
        char *big = calloc((size_t)p * (p + 1) * 4 + 4096, 1);
        char *big2 = calloc((size_t)p * (p + 1) * 4 + 4096, 1);
        for (int q = 0, at = 0, bt = 0; q < p; q++) {
            sc[q] = 4 * (r + 1);
            sd[q] = at;
            at += sc[q];
            rc[q] = 4 * (q + 1);
            rd[q] = bt;
            bt += rc[q];
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Bcast(buf[7], 100, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Reduce(buf[0], buf[7], 4, MPI_INT, MPI_SUM, 1 % p, MPI_COMM_WORLD);
        MPI_Allreduce(buf[0], buf[7], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(big, 4, MPI_CHAR, big2, 4, MPI_CHAR, MPI_COMM_WORLD);
        MPI_Alltoallv(big, sc, sd, MPI_CHAR, big2, rc, rd, MPI_CHAR, MPI_COMM_WORLD);
        MPI_Allgather(buf[0], 8, MPI_CHAR, big2, 8, MPI_CHAR, MPI_COMM_WORLD);
        MPI_Allgatherv(big, 4 * (r + 1), MPI_CHAR, big2, rc, rd, MPI_CHAR, MPI_COMM_WORLD);
        MPI_Gather(buf[0], 12, MPI_CHAR, big2, 12, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Gatherv(big, 4 * (r + 1), MPI_CHAR, big2, rc, rd, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Scatter(big, 20, MPI_CHAR, buf[7], 20, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Scatterv(big, rc, rd, MPI_CHAR, big2, 4 * (r + 1), MPI_CHAR, 0, MPI_COMM_WORLD);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
        free(big);
        free(big2);
    }
    /* 7. communicators */
    {
        MPI_Comm dup, half;
        int hr, hp;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Allreduce(buf[0], buf[7], 1, MPI_DOUBLE, MPI_SUM, dup);
        MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
        MPI_Allreduce(buf[0], buf[7], 1, MPI_DOUBLE, MPI_SUM, half);
        MPI_Comm_rank(half, &hr);
        MPI_Comm_size(half, &hp);
        if (hp >= 2 && hr == 0)
            MPI_Send(buf[0], 32, MPI_CHAR, 1, 50, half);
        else if (hp >= 2 && hr == 1)
            MPI_Recv(buf[1], 32, MPI_CHAR, 0, 50, half, MPI_STATUS_IGNORE);
        MPI_Comm_free(&half);
        MPI_Comm_free(&dup);
    }
    printf("FSIN-CALLS rank=%d tests=%d\n", r, tests);
    MPI_Finalize();
    return 0;
}
