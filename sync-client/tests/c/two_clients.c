/* Test program of the C ABI (include/fsin_sync.h): two clients, nodes 0 and
 * 1, run through a fsin server given on the command line. Node 0 sends one
 * frame to node 1 in slice 1; node 1 must receive it intact in a later
 * slice. Both run until the server shuts the run down. Along the way the
 * error codes are checked: NULL arguments, a buffer too short for a frame,
 * an unreachable server.
 *
 *   two_clients URL           exit 0 when every check passed
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fsin_sync.h"

#define FRAME_LEN 200

static const char *url;

static int check(int ok, const char *what, int node) {
    if (!ok) {
        fprintf(stderr, "node %d: FAILED: %s (last error: %s)\n", node, what, fsin_last_error());
    }
    return ok;
}

static void fill_frame(uint8_t *f, const uint8_t dst[6], const uint8_t src[6]) {
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x88; /* local experimental EtherType 0x88b5 */
    f[13] = 0xb5;
    for (int i = 14; i < FRAME_LEN; i++) {
        f[i] = (uint8_t)(i * 7);
    }
}

static void *client(void *arg) {
    int me = (int)(size_t)arg;
    FsinNodeSpec spec = {.node_id = me, .has_mac = false, .clock_hz = 0};
    FsinLink *link = NULL;
    char name[32];
    snprintf(name, sizeof name, "C client %d", me);
    if (!check(fsin_attach(url, name, &spec, 1, &link) == FSIN_OK, "attach", me)) {
        return (void *)1;
    }
    uint32_t id = 0;
    uint8_t mac[6], peer[6] = {0x02, 0, 0, 0, 0, (uint8_t)(1 - me)};
    int ok = check(fsin_node_count(link) == 1, "one node", me);
    ok &= check(fsin_node(link, 0, &id, mac) == FSIN_OK && id == (uint32_t)me, "node id", me);
    ok &= check(fsin_node(link, 5, &id, mac) == FSIN_ERR_ARGUMENT, "bad index refused", me);
    ok &= check(fsin_send_frame(link, id, 0, NULL, 10) == FSIN_ERR_ARGUMENT, "NULL data refused", me);
    ok &= check(strlen(fsin_last_error()) > 0, "error message", me);
    int received = 0;
    FsinContinue c;
    int s;
    while ((s = fsin_wait_continue(link, &c)) == FSIN_OK) {
        uint8_t buf[2048], small[16];
        uint32_t node;
        uint64_t cycle;
        size_t len;
        if (c.frames > 0) {
            ok &= check(fsin_poll_frame(link, &node, &cycle, small, sizeof small, &len) == FSIN_ERR_BUFFER
                            && len == FRAME_LEN,
                        "short buffer refused with the size needed", me);
        }
        while (fsin_poll_frame(link, &node, &cycle, buf, sizeof buf, &len) == FSIN_OK) {
            uint8_t want[FRAME_LEN];
            fill_frame(want, mac, peer);
            ok &= check(me == 1 && node == 1 && len == FRAME_LEN && memcmp(buf, want, len) == 0,
                        "the frame arrives intact at node 1", me);
            ok &= check(cycle >= c.start_cycle && cycle < c.start_cycle + c.node_cycles,
                        "delivery stamp inside the slice", me);
            received++;
        }
        if (me == 0 && c.slice == 1) {
            uint8_t f[FRAME_LEN];
            fill_frame(f, peer, mac);
            ok &= check(fsin_send_frame(link, id, c.start_cycle + 10, f, sizeof f) == FSIN_OK, "send", me);
        }
        if (!check(fsin_slice_done(link, c.slice) == FSIN_OK, "slice done", me)) {
            break;
        }
    }
    ok &= check(s == FSIN_SHUTDOWN, "the run ends with FSIN_SHUTDOWN", me);
    ok &= check(strlen(fsin_shutdown_reason(link)) > 0, "a shutdown reason", me);
    ok &= check(fsin_wait_continue(link, &c) == FSIN_SHUTDOWN, "still shut down", me);
    if (me == 1) {
        ok &= check(received == 1, "node 1 received exactly one frame", me);
    }
    fsin_close(link);
    printf("node %d: %s, %d frame(s) received\n", me, ok ? "ok" : "FAILED", received);
    return (void *)(size_t)!ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s URL\n", argv[0]);
        return 2;
    }
    url = argv[1];
    int ok = 1;
    FsinLink *none = NULL;
    FsinNodeSpec spec = {.node_id = -1};
    ok &= check(fsin_attach("http://127.0.0.1:1", "nobody", &spec, 1, &none) == FSIN_ERR_CONNECT
                    && none == NULL,
                "an unreachable server gives FSIN_ERR_CONNECT", -1);
    ok &= check(fsin_attach(NULL, "x", &spec, 1, &none) == FSIN_ERR_ARGUMENT, "NULL url refused", -1);
    ok &= check(fsin_slice_done(NULL, 0) == FSIN_ERR_ARGUMENT, "NULL link refused", -1);
    fsin_close(NULL);
    pthread_t t[2];
    for (size_t i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, client, (void *)i);
    }
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= r == NULL;
    }
    printf("%s\n", ok ? "all checks passed" : "some checks FAILED");
    return ok ? 0 : 1;
}
