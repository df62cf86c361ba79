/* Runs the fsin_eth_link module against the fake Simics: two machines
 * (threads, each with its own clock, fake NIC and link object) attach to
 * the fsin server given on the command line. Machine 0's NIC sends one
 * frame at cycle 1500; machine 1's NIC must receive it intact, later, with
 * a good CRC status; both run until the server ends the run.
 *
 *   test_module URL      exit 0 when every check passed */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fake_simics.h"

void init_local(void);

static const char *url;
static event_class_t *send_event;

#define FRAME_LEN 120

typedef struct {
    int id;
    fake_nic_t *nic;
    conf_object_t *link;
    cycles_t end;
} machine_t;

static void frame_to(uint8 *f, uint8 dst) {
    const uint8 d[6] = {0x02, 0, 0, 0, 0, dst}, s[6] = {0x02, 0, 0, 0, 0, (uint8)(1 - dst)};
    memcpy(f, d, 6);
    memcpy(f + 6, s, 6);
    f[12] = 0x88;
    f[13] = 0xb5;
    for (int i = 14; i < FRAME_LEN; i++) {
        f[i] = (uint8)(3 * i + 1);
    }
}

static void send_now(conf_object_t *obj, lang_void *data) {
    machine_t *m = data;
    (void)obj;
    uint8 f[FRAME_LEN];
    frame_to(f, 1);
    fake_nic_send(m->nic, m->link, f, sizeof f);
}

static void *machine(void *arg) {
    machine_t *m = arg;
    static const char *clocks[] = {"cpu0", "cpu1"}, *nics[] = {"nic0", "nic1"}, *links[] = {"link0", "link1"};
    fake_clock_t *clock = fake_clock_new(clocks[m->id]);
    m->nic = (fake_nic_t *)fake_object_new("fake_nic", nics[m->id], clock);
    m->link = fake_object_new("fsin_eth_link", links[m->id], clock);
    if (fake_set_attr(m->link, "server", SIM_make_attr_string(url)) != Sim_Set_Ok
        || fake_set_attr(m->link, "node", SIM_make_attr_int64(m->id)) != Sim_Set_Ok
        || fake_set_attr(m->link, "nic", SIM_make_attr_object(&m->nic->obj)) != Sim_Set_Ok) {
        fprintf(stderr, "machine %d: attributes refused\n", m->id);
        return NULL;
    }
    if (m->id == 0) {
        SIM_event_post_cycle((conf_object_t *)clock, send_event, m->link, 1500, m);
    }
    fake_finalize(m->link);
    m->end = fake_run(clock, (cycles_t)1 << 40);
    fake_delete(m->link);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s URL\n", argv[0]);
        return 2;
    }
    url = argv[1];
    init_local();
    fake_nic_register();
    send_event = SIM_register_event("test-send", NULL, Sim_EC_No_Flags, send_now, NULL, NULL, NULL, NULL);
    machine_t m[2] = {{.id = 0}, {.id = 1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, machine, &m[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
    uint8 want[FRAME_LEN];
    frame_to(want, 1);
    int ok = m[0].nic->sent == 1 && m[1].nic->received == 1 && m[0].nic->received == 0
             && m[1].nic->last_len == FRAME_LEN && memcmp(m[1].nic->last, want, FRAME_LEN) == 0
             && m[1].nic->last_crc == Eth_Frame_CRC_Match && m[1].nic->last_cycle > 1500;
    printf("machine 1 received %d frame(s), the last at cycle %lld; machines stopped at cycles %lld and %lld\n",
           m[1].nic->received, (long long)m[1].nic->last_cycle, (long long)m[0].end, (long long)m[1].end);
    printf("%s\n", ok ? "module checks passed" : "module checks FAILED");
    return ok ? 0 : 1;
}
