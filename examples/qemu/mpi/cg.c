/*
 * fsin-cg: conjugate gradient on a random sparse symmetric matrix, with
 * the communication of NPB CG (irregular point-to-point exchanges of the
 * vector for every sparse matrix-vector product, and reductions for the
 * dot products), for `fsin qemu --app cg`.
 *
 *   fsin-cg [ROWS_PER_RANK [ITERATIONS]]
 *
 * The matrix has N = ROWS_PER_RANK x ranks rows. Row i picks 4 other rows
 * j = hash(i, t) mod N (splitmix64, so the matrix does not depend on the
 * rank count); each pick is a pair of entries (i, j) = (j, i) = -1, and
 * the diagonal is 2 + the row's off-diagonal count, so the matrix is
 * symmetric and diagonally dominant (positive definite, eigenvalues in
 * [2, 2 + 2 x the largest count]: CG gains about a bit per iteration). Ranks own blocks
 * of consecutive rows. Each product y = A p needs the entries of p that
 * the rank's rows touch: once, the ranks tell each other which ones
 * (MPI_Alltoall, MPI_Alltoallv); then each product sends each partner
 * exactly those (MPI_Isend/MPI_Irecv, to the partners only: an irregular
 * pattern, as NPB CG's). Each iteration takes two MPI_Allreduce dot
 * products, as NPB CG's does. After ITERATIONS iterations from x = 0 for
 * b_i = 1 + (7 i mod 11) / 10, the relative residual |b - A x| / |b| is checked
 * against 1e-6.
 *
 * Prints one line on rank 0:
 *   FSIN-CG ranks=P rows=N nonzeros=Z iterations=I residual=R verified=1 time_s=T
 * and exits 1 when the check fails.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PICKS 4

static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Row `i`'s pick `t`: another row, or i itself (no entry). */
static long pick(long i, int t, long n) {
    return (long)(splitmix((uint64_t)i * PICKS + t) % (uint64_t)n);
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The matrix rows of this rank (CSR, global column indices) and the
 * exchange that gathers the entries of a vector they touch. */
struct part {
    long first, m, n;
    int size;
    long *start, *col; /* CSR: row r's entries are start[r]..start[r+1] */
    double *val;
    /* Columns this rank needs from each rank q (sorted), where they land
     * in `halo`, and which of its own entries each rank q needs. */
    int *need_count, *need_at, *give_count, *give_at;
    long *need, *give;
    double *halo, *give_buf;
    long *halo_of; /* for each entry: index into halo, or -1 if local */
};

static void product(struct part *a, const double *p, double *y) {
    int size = a->size, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Request *req = malloc(2 * size * sizeof *req);
    int nreq = 0;
    for (int q = 0; q < size; q++) {
        if (q == rank) continue;
        if (a->need_count[q])
            MPI_Irecv(a->halo + a->need_at[q], a->need_count[q], MPI_DOUBLE, q, 1,
                      MPI_COMM_WORLD, &req[nreq++]);
    }
    for (int q = 0; q < size; q++) {
        if (q == rank || !a->give_count[q]) continue;
        for (int k = 0; k < a->give_count[q]; k++)
            a->give_buf[a->give_at[q] + k] = p[a->give[a->give_at[q] + k] - a->first];
        MPI_Isend(a->give_buf + a->give_at[q], a->give_count[q], MPI_DOUBLE, q, 1,
                  MPI_COMM_WORLD, &req[nreq++]);
    }
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    free(req);
    for (long r = 0; r < a->m; r++) {
        double s = 0;
        for (long e = a->start[r]; e < a->start[r + 1]; e++) {
            long h = a->halo_of[e];
            s += a->val[e] * (h < 0 ? p[a->col[e] - a->first] : a->halo[h]);
        }
        y[r] = s;
    }
}

static double dot(const double *x, const double *y, long m) {
    double s = 0, all;
    for (long i = 0; i < m; i++) s += x[i] * y[i];
    MPI_Allreduce(&s, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

static long owner(long col, long m) { return col / m; }

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long m = argc > 1 ? atol(argv[1]) : 512;
    int iterations = argc > 2 ? atoi(argv[2]) : 25;
    if (m < 1 || m > (1L << 20) || iterations < 1 || iterations > 1000) {
        if (rank == 0)
            fprintf(stderr, "fsin-cg: ROWS_PER_RANK 1..2^20, ITERATIONS 1..1000\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    struct part a = {.first = m * rank, .m = m, .n = m * size, .size = size};
    long n = a.n;
    /* Every pick (i, j), both ways, for this rank's rows: its own picks,
     * and every other row's picks that land here. */
    long cap = m * PICKS * 3 + 16, used = 0;
    long (*pairs)[2] = malloc(cap * sizeof *pairs);
    for (long i = 0; i < n; i++)
        for (int t = 0; t < PICKS; t++) {
            long j = pick(i, t, n);
            if (j == i) continue;
            for (int way = 0; way < 2; way++) {
                long row = way ? j : i, colj = way ? i : j;
                if (row < a.first || row >= a.first + m) continue;
                if (used == cap) pairs = realloc(pairs, (cap *= 2) * sizeof *pairs);
                pairs[used][0] = row;
                pairs[used][1] = colj;
                used++;
            }
        }
    qsort(pairs, used, sizeof *pairs, cmp_long); /* by row (first field) */
    a.start = calloc(m + 1, sizeof *a.start);
    for (long e = 0; e < used; e++) a.start[pairs[e][0] - a.first + 1]++;
    for (long r = 0; r < m; r++) a.start[r + 1] += a.start[r] + 1; /* + diagonal */
    long nnz = a.start[m];
    a.col = malloc(nnz * sizeof *a.col);
    a.val = malloc(nnz * sizeof *a.val);
    long *fill = calloc(m, sizeof *fill);
    for (long r = 0; r < m; r++) {
        a.col[a.start[r]] = a.first + r;
        fill[r] = 1;
    }
    for (long e = 0; e < used; e++) {
        long r = pairs[e][0] - a.first;
        a.col[a.start[r] + fill[r]] = pairs[e][1];
        a.val[a.start[r] + fill[r]++] = -1.0;
    }
    for (long r = 0; r < m; r++) a.val[a.start[r]] = 2.0 + (a.start[r + 1] - a.start[r] - 1);
    free(pairs);
    free(fill);
    /* What this rank needs from each other rank: sorted, without repeats. */
    long *cols = malloc(nnz * sizeof *cols), ncols = 0;
    for (long e = 0; e < nnz; e++)
        if (owner(a.col[e], m) != rank) cols[ncols++] = a.col[e];
    qsort(cols, ncols, sizeof *cols, cmp_long);
    long uniq = 0;
    for (long k = 0; k < ncols; k++)
        if (!uniq || cols[uniq - 1] != cols[k]) cols[uniq++] = cols[k];
    a.need = cols;
    a.need_count = calloc(size, sizeof(int));
    a.need_at = calloc(size, sizeof(int));
    for (long k = 0; k < uniq; k++) a.need_count[owner(cols[k], m)]++;
    for (int q = 1; q < size; q++) a.need_at[q] = a.need_at[q - 1] + a.need_count[q - 1];
    a.halo = malloc((uniq ? uniq : 1) * sizeof *a.halo);
    a.halo_of = malloc(nnz * sizeof *a.halo_of);
    for (long e = 0; e < nnz; e++) {
        a.halo_of[e] = -1;
        if (owner(a.col[e], m) != rank) {
            long *at = bsearch(&a.col[e], cols, uniq, sizeof *cols, cmp_long);
            a.halo_of[e] = at - cols;
        }
    }
    a.give_count = calloc(size, sizeof(int));
    a.give_at = calloc(size, sizeof(int));
    MPI_Alltoall(a.need_count, 1, MPI_INT, a.give_count, 1, MPI_INT, MPI_COMM_WORLD);
    long gives = 0;
    for (int q = 0; q < size; q++) {
        a.give_at[q] = gives;
        gives += a.give_count[q];
    }
    a.give = malloc((gives ? gives : 1) * sizeof *a.give);
    a.give_buf = malloc((gives ? gives : 1) * sizeof *a.give_buf);
    MPI_Alltoallv(a.need, a.need_count, a.need_at, MPI_LONG, a.give, a.give_count, a.give_at,
                  MPI_LONG, MPI_COMM_WORLD);
    /* CG from x = 0. */
    double *x = calloc(m, sizeof *x), *r = malloc(m * sizeof *r), *p = malloc(m * sizeof *p),
           *q = malloc(m * sizeof *q);
    double *b = malloc(m * sizeof *b);
    for (long i = 0; i < m; i++) r[i] = p[i] = b[i] = 1.0 + (7 * (a.first + i) % 11) / 10.0;
    double rho = dot(r, r, m), b_norm = sqrt(rho);
    double started = MPI_Wtime();
    for (int it = 0; it < iterations && rho > 0; it++) {
        product(&a, p, q);
        double alpha = rho / dot(p, q, m);
        for (long i = 0; i < m; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        double next = dot(r, r, m);
        for (long i = 0; i < m; i++) p[i] = r[i] + next / rho * p[i];
        rho = next;
    }
    double elapsed = MPI_Wtime() - started;
    /* The check: the true residual b - A x. */
    product(&a, x, q);
    for (long i = 0; i < m; i++) r[i] = b[i] - q[i];
    double residual = sqrt(dot(r, r, m)) / b_norm;
    long all_nnz;
    MPI_Allreduce(&nnz, &all_nnz, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ok = residual < 1e-6;
    if (rank == 0)
        printf("FSIN-CG ranks=%d rows=%ld nonzeros=%ld iterations=%d residual=%.3e verified=%d "
               "time_s=%.6f\n",
               size, n, all_nnz, iterations, residual, ok, elapsed);
    MPI_Finalize();
    return ok ? 0 : 1;
}
