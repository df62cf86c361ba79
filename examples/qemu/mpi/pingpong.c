/*
 * fsin-pingpong: MPI_Send/MPI_Recv round trips between ranks 0 and 1, for
 * the MPI layer's costs of `fsin run`'s MPI-level replay (docs/model.md,
 * "Replaying an MPI-level trace": the mpi_message_ns and mpi_byte_ps
 * defaults were measured with it) and its tests.
 *
 *   fsin-pingpong [-w] [-s | -x K] ROUNDS BYTES...
 *   fsin-pingpong -c ROUNDS
 *   fsin-pingpong -k FRAMES
 *
 * For each size in turn, ROUNDS round trips of BYTES bytes each way.
 * Rank 0 prints one line per size:
 *   FSIN-PP bytes=B rounds=R rtt_us=T
 * (T: the mean round trip, microseconds of guest time, MPI_Wtime).
 *
 * With -s (a stream), rank 0 sends ROUNDS messages of BYTES back to back
 * and rank 1 receives them, then answers with one empty message; rank 0
 * prints
 *   FSIN-PP stream bytes=B rounds=R us_per_msg=T send_us_per_msg=S
 * (T: the time to the answer over ROUNDS, microseconds): a message's
 * software cost on the busier side, where a round trip also waits for
 * each message's delivery; S: the time until rank 0's last MPI_Send
 * returned over ROUNDS, which is T's when the sender is the busier side
 * and less when the receiver is (`fsin qemu --calibrate` tells the two
 * sides' costs apart with it).
 *
 * With -x K (an exchange), each round both ranks post K MPI_Irecvs and K
 * MPI_Isends of BYTES to the other at once and wait for all of them, as
 * NPB CG's ranks do with their partners; rank 0 prints
 *   FSIN-PP exchange=K bytes=B rounds=R us_per_round=T
 * (T: microseconds per round): what several messages in flight at once
 * cost against the same messages one after another.
 *
 * With -c (a first contact), both ranks compute 200 ms of guest time
 * after MPI_Init (more than Open MPI's 10 ms event tick), then exchange
 * 8 bytes at once (MPI_Irecv, MPI_Isend, MPI_Waitall), their first
 * messages, and ROUNDS times more; rank 0 prints
 *   FSIN-PP contact first_us=F us=T
 * (F: the first exchange, T: the mean of the others, microseconds): what
 * opening the pair's connection costs (F - T; `fsin qemu --calibrate`
 * fits a rank's set-up of a new peer, mpi_connect_ns, to it).
 *
 * With -k (the kernel's receive), after 5 exchanges that open the
 * connection, rank 1 spins, reading the clock, for a window in which
 * nothing comes, then for as long while rank 0 sends it FRAMES messages
 * of 8 bytes, 400 us apart (each one frame, which rank 1's MPI library
 * takes only after the window); rank 1 prints
 *   FSIN-PP kernel frames=N window_us=W base_us=B stolen_us=S rx_us=R
 * (B, S: the time taken from the spin in each window, the gaps of more
 * than 3 us between two clock reads less the loop's own step; R: (S -
 * B) / N): what the kernel's receive of a frame (the NIC's interrupt, IP
 * and TCP input) takes from a rank busy in user space (`mpi_rx_ns`).
 * Then it spins as long again while rank 0 sends a UDP datagram to
 * each of N = min(FRAMES, 200) addresses no guest of 2 has (10.0.0.254
 * down), 400 us apart: each one makes rank 0's kernel broadcast an
 * ARP request, which rank 1's takes in and drops; rank 1 prints
 *   FSIN-PP arp requests=N window_us=W base_us=B stolen_us=S rx_us=R
 * (the same figures of that window): what an ARP request for another
 * guest takes from every guest while ranks open their connections
 * (`mpi_arp_rx_ns`).
 *
 * With -w (warm), each size's pattern (round trips, stream or exchanges)
 * runs twice and only the second pass is timed, as OSU's and IMB's
 * warm-up iterations do: the first grows what the size needs and keeps.
 * A stream's receiver holds the messages that come before their
 * MPI_Recv in heap memory, whose first touch costs page faults (glibc's
 * brk), so without -w a stream's figure holds the heap's growth to the
 * size and depends on the sizes before it (18,000-byte messages: 590 us
 * a message on a heap that never held them, 416 on one that has;
 * docs/studies/calibrating-the-mpi-layer.md, "The heap's first touch").
 *
 * The first size also pays the ranks' start (rank 1 may leave MPI_Init
 * later) and the first contact's TCP connection: give a small size twice
 * and read the second.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* Guest seconds, CLOCK_MONOTONIC. */
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Spins `seconds`. */
static void spin(double seconds) {
    double t = now();
    while (now() - t < seconds)
        ;
}

/* Spins `window` seconds; returns the time taken from the spin: every
 * gap of more than 3 us between two clock reads, less the loop's own
 * step (its shortest gap). */
static double stolen(double window) {
    double start = now(), last = start, step = 1.0, lost = 0;
    while (last - start < window) {
        double t = now(), d = t - last;
        if (d < step)
            step = d;
        if (d > 3e-6)
            lost += d - step;
        last = t;
    }
    return lost;
}

/* The most ARP requests of -k: addresses 10.0.0.254 down to 10.0.0.55,
 * none a guest's in a calibration's 2. */
#define ARP_REQUESTS 200

/* Sends one 8-byte UDP datagram to 10.0.0.(254 - i) for each i below
 * `n`, `gap` seconds apart: the kernel broadcasts an ARP request for
 * each address, which no guest answers. */
static void arp_requests(int n, double gap) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    char out[8] = {0};
    for (int i = 0; i < n && s >= 0; i++) {
        struct sockaddr_in to;
        memset(&to, 0, sizeof to);
        to.sin_family = AF_INET;
        to.sin_port = htons(9);
        to.sin_addr.s_addr = htonl((10u << 24) | (254u - (unsigned)i));
        spin(gap);
        sendto(s, out, sizeof out, 0, (struct sockaddr *)&to, sizeof to);
    }
    if (s >= 0)
        close(s);
}

/* -k FRAMES (the header comment). */
static void kernel_receive(int rank, int frames) {
    const double gap = 400e-6;
    double window = frames * (gap + 200e-6) + 5e-3;
    int requests = frames < ARP_REQUESTS ? frames : ARP_REQUESTS;
    char out[8] = {0}, in[8];
    for (int r = 0; r < 5 && rank < 2; r++) {
        MPI_Request req[2];
        MPI_Irecv(in, 8, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out, 8, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    if (rank == 1) {
        double base = stolen(window);
        MPI_Send(out, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        double lost = stolen(window);
        for (int i = 0; i < frames; i++)
            MPI_Recv(in, 8, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("FSIN-PP kernel frames=%d window_us=%.3f base_us=%.3f stolen_us=%.3f rx_us=%.3f\n",
               frames, window * 1e6, base * 1e6, lost * 1e6, (lost - base) / frames * 1e6);
        MPI_Send(out, 8, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        double arp = stolen(window);
        printf("FSIN-PP arp requests=%d window_us=%.3f base_us=%.3f stolen_us=%.3f rx_us=%.3f\n",
               requests, window * 1e6, base * 1e6, arp * 1e6, (arp - base) / requests * 1e6);
        fflush(stdout);
    } else if (rank == 0) {
        MPI_Recv(in, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < frames; i++) {
            spin(gap);
            MPI_Send(out, 8, MPI_CHAR, 1, 2, MPI_COMM_WORLD);
        }
        MPI_Recv(in, 8, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        arp_requests(requests, gap);
    }
}

/* One pass of a size's pattern between ranks 0 and 1 (round trips, a
 * stream with -s, exchanges of `fan` with -x), tag `tag`: its time on
 * this rank, seconds of guest time, and in *sent a stream's time until
 * rank 0's last MPI_Send returned. */
static double one_size(int rank, int stream, int fan, int rounds, long bytes, int tag,
                       double *sent) {
    size_t len = bytes > 0 ? (size_t)bytes : 1;
    char *buf = calloc(len * (fan > 0 ? 2 * (size_t)fan : 1), 1);
    double t0 = MPI_Wtime();
    *sent = 0;
    for (int r = 0; r < rounds && rank < 2; r++) {
        if (fan > 0) {
            MPI_Request req[128];
            for (int j = 0; j < fan; j++)
                MPI_Irecv(buf + (size_t)j * len, (int)bytes, MPI_CHAR, 1 - rank, j, MPI_COMM_WORLD,
                          &req[j]);
            for (int j = 0; j < fan; j++)
                MPI_Isend(buf + (size_t)(fan + j) * len, (int)bytes, MPI_CHAR, 1 - rank, j,
                          MPI_COMM_WORLD, &req[fan + j]);
            MPI_Waitall(2 * fan, req, MPI_STATUSES_IGNORE);
        } else if (rank == 0) {
            MPI_Send(buf, (int)bytes, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
            if (!stream)
                MPI_Recv(buf, (int)bytes, MPI_CHAR, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)bytes, MPI_CHAR, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!stream)
                MPI_Send(buf, (int)bytes, MPI_CHAR, 0, tag, MPI_COMM_WORLD);
        }
    }
    if (stream && rank == 0) {
        *sent = MPI_Wtime() - t0;
        MPI_Recv(buf, 0, MPI_CHAR, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (stream && rank == 1)
        MPI_Send(buf, 0, MPI_CHAR, 0, tag, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    free(buf);
    return t;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 3 && strcmp(argv[1], "-c") == 0) {
        int rounds = atoi(argv[2]);
        char out[8] = {0}, in[8];
        double first = 0, rest = 0;
        double start = MPI_Wtime();
        while (MPI_Wtime() - start < 0.2)
            ;
        for (int r = 0; r <= rounds && rank < 2; r++) {
            MPI_Request req[2];
            double t0 = MPI_Wtime();
            MPI_Irecv(in, 8, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(out, 8, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            if (r == 0)
                first = MPI_Wtime() - t0;
            else
                rest += MPI_Wtime() - t0;
        }
        if (rank == 0 && rounds > 0)
            printf("FSIN-PP contact first_us=%.3f us=%.3f\n", first * 1e6, rest / rounds * 1e6);
        MPI_Finalize();
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "-k") == 0) {
        int frames = atoi(argv[2]);
        if (frames < 1 || frames > 10000 || size < 2) {
            if (rank == 0)
                fprintf(stderr, "usage: mpirun -np 2 fsin-pingpong -k FRAMES (FRAMES in 1..10000)\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        kernel_receive(rank, frames);
        MPI_Finalize();
        return 0;
    }
    int warm = argc > 1 && strcmp(argv[1], "-w") == 0;
    int a = 1 + warm; /* the first argument after -w */
    int stream = argc > a && strcmp(argv[a], "-s") == 0;
    int exchange = argc > a && strcmp(argv[a], "-x") == 0;
    int fan = exchange && argc > a + 1 ? atoi(argv[a + 1]) : 0;
    int first = a + stream + 2 * exchange;
    if (argc < first + 2 || size < 2 || fan > 64 || (exchange && fan < 1) ||
        atoi(argv[first]) < 1) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: mpirun -np 2 fsin-pingpong [-w] [-s | -x K] ROUNDS BYTES... "
                    "(K in 1..64, ROUNDS at least 1)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rounds = atoi(argv[first]);
    for (int k = first + 1; k < argc; k++) {
        long bytes = atol(argv[k]);
        double sent;
        if (warm)
            one_size(rank, stream, fan, rounds, bytes, k, &sent);
        double t = one_size(rank, stream, fan, rounds, bytes, k, &sent);
        if (rank != 0)
            continue;
        if (fan > 0)
            printf("FSIN-PP exchange=%d bytes=%ld rounds=%d us_per_round=%.3f\n", fan, bytes, rounds,
                   t / rounds * 1e6);
        else if (stream)
            printf("FSIN-PP stream bytes=%ld rounds=%d us_per_msg=%.3f send_us_per_msg=%.3f\n", bytes,
                   rounds, t / rounds * 1e6, sent / rounds * 1e6);
        else
            printf("FSIN-PP bytes=%ld rounds=%d rtt_us=%.3f\n", bytes, rounds, t / rounds * 1e6);
    }
    MPI_Finalize();
    return 0;
}
