/*
 * fsin-is: an integer sort with the communication of NPB IS (bucket sort
 * across ranks), for `fsin qemu --app is`.
 *
 *   fsin-is [KEYS_PER_RANK [ITERATIONS]]
 *
 * Every rank makes KEYS_PER_RANK keys in [0, 2^19) with NPB's linear
 * congruential generator (a = 5^13, modulus 2^46; each rank starts at its
 * own place of one sequence, so the keys do not depend on the rank
 * count). Per iteration, as NPB IS does: two keys are changed, every rank
 * counts its keys per destination rank (key ranges of equal width),
 * MPI_Allreduce sums the counts (the bucket sizes), MPI_Alltoall tells
 * each rank how many keys it gets from every other, MPI_Alltoallv moves
 * the keys, and each rank ranks its keys by counting. After the last
 * iteration the ranks check the global order: each rank's keys are
 * sorted, its largest is at most the next rank's smallest, and no key was
 * lost (MPI_Allreduce of the count and of the sum of the keys).
 *
 * Prints one line on rank 0:
 *   FSIN-IS ranks=P keys=N iterations=I verified=1 time_s=T
 * and exits 1 when the check fails.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEY (1 << 19)

/* NPB's randlc: x = a * x mod 2^46, returned as x / 2^46. */
static double randlc(double *x, double a) {
    const double r23 = 1.0 / 8388608.0, t23 = 8388608.0;
    const double r46 = r23 * r23, t46 = t23 * t23;
    double t1 = r23 * a, a1 = (int)t1, a2 = a - t23 * a1;
    t1 = r23 * *x;
    double x1 = (int)t1, x2 = *x - t23 * x1;
    t1 = a1 * x2 + a2 * x1;
    double t2 = (int)(r23 * t1), z = t1 - t23 * t2;
    double t3 = t23 * z + a2 * x2, t4 = (int)(r46 * t3);
    *x = t3 - t46 * t4;
    return r46 * *x;
}

/* The seed `k` steps into the sequence from `seed` (a^k by squaring). */
static double skip(double seed, double a, long k) {
    double x = seed, an = a, t;
    while (k > 0) {
        if (k & 1) randlc(&x, an);
        t = an;
        randlc(&t, an);
        an = t;
        k >>= 1;
    }
    return x;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 1 ? atol(argv[1]) : 4096;
    int iterations = argc > 2 ? atoi(argv[2]) : 10;
    if (n < 1 || n > (1L << 24) || iterations < 1 || iterations > 1000) {
        if (rank == 0)
            fprintf(stderr, "fsin-is: KEYS_PER_RANK 1..2^24, ITERATIONS 1..1000\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const double a = 1220703125.0; /* 5^13 */
    int *keys = malloc(n * sizeof *keys);
    /* Four draws per key, as NPB IS averages four uniforms. */
    double x = skip(314159265.0, a, 4L * n * rank);
    for (long i = 0; i < n; i++) {
        double s = randlc(&x, a) + randlc(&x, a) + randlc(&x, a) + randlc(&x, a);
        keys[i] = (int)(MAX_KEY / 4 * s);
    }
    int *send_counts = calloc(size, sizeof *send_counts);
    int *recv_counts = calloc(size, sizeof *recv_counts);
    int *send_at = calloc(size, sizeof *send_at);
    int *recv_at = calloc(size, sizeof *recv_at);
    long *bucket = calloc(size, sizeof *bucket);
    long *total = calloc(size, sizeof *total);
    int *out = malloc(n * sizeof *out);
    int *got = NULL;
    int received = 0;
    long width = (MAX_KEY + size - 1) / size;
    double started = MPI_Wtime();
    for (int it = 1; it <= iterations; it++) {
        /* NPB IS changes two keys per iteration. */
        if (rank == 0) {
            keys[it % n] = it;
            keys[(it + iterations) % n] = MAX_KEY - it;
        }
        memset(send_counts, 0, size * sizeof *send_counts);
        for (long i = 0; i < n; i++) send_counts[keys[i] / width]++;
        for (int r = 0; r < size; r++) bucket[r] = send_counts[r];
        MPI_Allreduce(bucket, total, size, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, MPI_COMM_WORLD);
        received = 0;
        for (int r = 0; r < size; r++) {
            send_at[r] = r ? send_at[r - 1] + send_counts[r - 1] : 0;
            recv_at[r] = received;
            received += recv_counts[r];
        }
        int *fill = calloc(size, sizeof *fill);
        for (long i = 0; i < n; i++) {
            int d = keys[i] / width;
            out[send_at[d] + fill[d]++] = keys[i];
        }
        free(fill);
        free(got);
        got = malloc((received ? received : 1) * sizeof *got);
        MPI_Alltoallv(out, send_counts, send_at, MPI_INT, got, recv_counts, recv_at, MPI_INT,
                      MPI_COMM_WORLD);
        if (received != total[rank]) {
            fprintf(stderr, "fsin-is: rank %d got %d keys, the bucket holds %ld\n", rank,
                    received, total[rank]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        qsort(got, received, sizeof *got, cmp_int);
    }
    double elapsed = MPI_Wtime() - started;
    /* The check: sorted within, ordered across, nothing lost. */
    int ok = 1;
    for (int i = 1; i < received; i++) ok &= got[i - 1] <= got[i];
    int lo = received ? got[0] : MAX_KEY, hi = received ? got[received - 1] : -1;
    int next_lo = MAX_KEY;
    MPI_Sendrecv(&lo, 1, MPI_INT, (rank + size - 1) % size, 0, &next_lo, 1, MPI_INT,
                 (rank + 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank + 1 < size) ok &= hi <= next_lo;
    long mine[2] = {received, 0}, all[2], made[2] = {n, 0}, sent[2];
    for (int i = 0; i < received; i++) mine[1] += got[i];
    for (long i = 0; i < n; i++) made[1] += keys[i];
    MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(made, sent, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    all_ok &= all[0] == sent[0] && all[1] == sent[1];
    if (rank == 0)
        printf("FSIN-IS ranks=%d keys=%ld iterations=%d verified=%d time_s=%.6f\n", size,
               n * size, iterations, all_ok, elapsed);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
