/*
 * fsin-pingpong: MPI_Send/MPI_Recv round trips between ranks 0 and 1, for
 * the MPI layer's costs of `fsin run`'s MPI-level replay (docs/model.md,
 * "Replaying an MPI-level trace": the mpi_message_ns and mpi_byte_ps
 * defaults were measured with it) and its tests.
 *
 *   fsin-pingpong [-s] ROUNDS BYTES...
 *
 * For each size in turn, ROUNDS round trips of BYTES bytes each way.
 * Rank 0 prints one line per size:
 *   FSIN-PP bytes=B rounds=R rtt_us=T
 * (T: the mean round trip, microseconds of guest time, MPI_Wtime).
 *
 * With -s (a stream), rank 0 sends ROUNDS messages of BYTES back to back
 * and rank 1 receives them, then answers with one empty message; rank 0
 * prints
 *   FSIN-PP stream bytes=B rounds=R us_per_msg=T
 * (T: the time to the answer over ROUNDS, microseconds): a message's
 * software cost on the busier side, where a round trip also waits for
 * each message's delivery.
 *
 * The first size also pays the ranks' start (rank 1 may leave MPI_Init
 * later) and the first contact's TCP connection: give a small size twice
 * and read the second.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int stream = argc > 1 && strcmp(argv[1], "-s") == 0;
    if (argc < 3 + stream || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 fsin-pingpong [-s] ROUNDS BYTES...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rounds = atoi(argv[1 + stream]);
    for (int k = 2 + stream; k < argc; k++) {
        long bytes = atol(argv[k]);
        char *buf = calloc(bytes > 0 ? (size_t)bytes : 1, 1);
        double t0 = MPI_Wtime();
        if (stream) {
            for (int r = 0; r < rounds && rank < 2; r++) {
                if (rank == 0)
                    MPI_Send(buf, (int)bytes, MPI_CHAR, 1, k, MPI_COMM_WORLD);
                else
                    MPI_Recv(buf, (int)bytes, MPI_CHAR, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (rank == 0)
                MPI_Recv(buf, 0, MPI_CHAR, 1, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else if (rank == 1)
                MPI_Send(buf, 0, MPI_CHAR, 0, k, MPI_COMM_WORLD);
            if (rank == 0)
                printf("FSIN-PP stream bytes=%ld rounds=%d us_per_msg=%.3f\n", bytes, rounds,
                       (MPI_Wtime() - t0) / rounds * 1e6);
            free(buf);
            continue;
        }
        for (int r = 0; r < rounds && rank < 2; r++) {
            if (rank == 0) {
                MPI_Send(buf, (int)bytes, MPI_CHAR, 1, k, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)bytes, MPI_CHAR, 1, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, (int)bytes, MPI_CHAR, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)bytes, MPI_CHAR, 0, k, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0)
            printf("FSIN-PP bytes=%ld rounds=%d rtt_us=%.3f\n", bytes, rounds, t / rounds * 1e6);
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
