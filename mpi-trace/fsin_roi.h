/*
 * fsin_roi.h: mark the region of interest of a program that runs on the
 * guests of `fsin qemu --roi marker` (docs/qemu.md, "The region of
 * interest"; the wire: docs/contracts.md, "Region of interest").
 *
 *   #include <fsin_roi.h>
 *   ...setting up...
 *   fsin_roi_begin();   // waits until the host starts the region
 *   ...the part to measure...
 *   fsin_roi_end();
 *
 * fsin_roi_begin() tells the host (a UDP datagram to INSEE's magic
 * address, 1.2.3.4:5041, command byte 'R') that this process's region
 * begins, as rank 0 of a world of 1, and waits for the host's go (a UDP
 * broadcast to port 5042) before it returns: the measured phase starts
 * there. fsin_roi_mark() does the same for rank RANK of a world of SIZE
 * processes (the region begins when all of them have told the host).
 * fsin_roi_end() tells the host that the region ended, without waiting.
 * On a host that never answers, fsin_roi_begin() returns after
 * FSIN_ROI_GO_WAIT_S seconds, saying so on stderr. FSIN_MPITRACE_TO=
 * ADDR:PORT sends the datagrams elsewhere (tests on a host).
 *
 * The MPI image carries this header in /usr/local/include, the program
 * `fsin-roi-mark begin|end` (for shell commands), and the MPI library of
 * `--roi mpi|marker` (mpi-trace/fsin-mpitrace.c), whose MPI_Pcontrol(1)
 * and MPI_Pcontrol(0) call fsin_roi_mark() with the rank's place in
 * MPI_COMM_WORLD. Header only: static functions, C99, Linux.
 */
#ifndef FSIN_ROI_H
#define FSIN_ROI_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The magic address's port, and the port of the host's go. */
#define FSIN_ROI_MAGIC_PORT 5041
#define FSIN_ROI_GO_PORT 5042
/* Give up waiting for the go after this many guest seconds (a run whose
 * host never answers goes on, late, rather than hanging). */
#define FSIN_ROI_GO_WAIT_S 3600
/* What a region datagram says (byte 2). */
enum { FSIN_ROI_END = 0, FSIN_ROI_MPI = 1, FSIN_ROI_MARKER = 2 };
#define FSIN_ROI_DATAGRAM 24

static inline void fsin_roi_put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void fsin_roi_put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The host's address for magic datagrams: 1.2.3.4:5041, or
 * FSIN_MPITRACE_TO=ADDR:PORT; 0 when that is malformed. */
static inline int fsin_roi_magic_to(struct sockaddr_in *to) {
    *to = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(FSIN_ROI_MAGIC_PORT)};
    const char *env = getenv("FSIN_MPITRACE_TO");
    char addr[64] = "1.2.3.4";
    if (env) {
        const char *colon = strrchr(env, ':');
        size_t k = colon ? (size_t)(colon - env) : strlen(env);
        if (k < sizeof addr) {
            memcpy(addr, env, k);
            addr[k] = 0;
        }
        if (colon)
            to->sin_port = htons((uint16_t)atoi(colon + 1));
    }
    if (inet_pton(AF_INET, addr, &to->sin_addr) != 1) {
        fprintf(stderr, "fsin_roi: FSIN_MPITRACE_TO=%s is not ADDR:PORT\n", env);
        return 0;
    }
    return 1;
}

/* Tells the host that the region of rank `rank` of a world of `size`
 * begins (`what` FSIN_ROI_MPI or FSIN_ROI_MARKER) or ends (FSIN_ROI_END).
 * Beginning, it waits for the host's go: the socket that hears the go is
 * bound before the host is told, so the go cannot come too early. */
static inline void fsin_roi_mark(int what, uint32_t rank, uint32_t size) {
    struct sockaddr_in to;
    int fd = socket(AF_INET, SOCK_DGRAM, 0), go = -1;
    if (fd < 0 || !fsin_roi_magic_to(&to)) {
        perror("fsin_roi: region of interest");
        if (fd >= 0)
            close(fd);
        return;
    }
    if (what != FSIN_ROI_END) {
        go = socket(AF_INET, SOCK_DGRAM, 0);
        int one = 1;
        struct sockaddr_in at = {.sin_family = AF_INET,
                                 .sin_port = htons(FSIN_ROI_GO_PORT),
                                 .sin_addr.s_addr = htonl(INADDR_ANY)};
        struct timeval limit = {.tv_sec = FSIN_ROI_GO_WAIT_S};
        if (go < 0 || setsockopt(go, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            setsockopt(go, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit) < 0 ||
            bind(go, (struct sockaddr *)&at, sizeof at) < 0) {
            perror("fsin_roi: the host's go");
            if (go >= 0)
                close(go);
            go = -1;
        }
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint8_t d[FSIN_ROI_DATAGRAM] = {'R', 1, (uint8_t)what};
    fsin_roi_put32(d + 4, rank);
    fsin_roi_put32(d + 8, size);
    fsin_roi_put64(d + 16, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    if (sendto(fd, d, sizeof d, 0, (struct sockaddr *)&to, sizeof to) < 0)
        perror("fsin_roi: sendto");
    close(fd);
    if (go < 0)
        return;
    uint8_t g[16];
    for (;;) {
        ssize_t k = recv(go, g, sizeof g, 0);
        if (k > 0 && g[0] == 'G')
            break;
        if (k < 0) {
            fprintf(stderr, "fsin_roi: rank %u: no go from the host within %d s; going on\n",
                    (unsigned)rank, FSIN_ROI_GO_WAIT_S);
            break;
        }
    }
    close(go);
}

/* This process's region begins: returns once the host says go. */
static inline void fsin_roi_begin(void) {
    fsin_roi_mark(FSIN_ROI_MARKER, 0, 1);
}

/* This process's region ends. */
static inline void fsin_roi_end(void) {
    fsin_roi_mark(FSIN_ROI_END, 0, 1);
}

#endif
