/* The fake Simics of fake_simics.c: what a test drives it with. */
#ifndef FSIN_FAKE_SIMICS_H
#define FSIN_FAKE_SIMICS_H

#include <simics/device-api.h>
#include <simics/devs/ethernet.h>

typedef struct fake_clock fake_clock_t;

typedef struct {
    conf_object_t obj;
    int sent, received;
    uint8 last[2048];
    size_t last_len;
    cycles_t last_cycle;
    eth_frame_crc_status_t last_crc;
} fake_nic_t;

fake_clock_t *fake_clock_new(const char *name);
conf_object_t *fake_object_new(const char *cls, const char *name, fake_clock_t *clock);
set_error_t fake_set_attr(conf_object_t *obj, const char *name, attr_value_t v);
void fake_finalize(conf_object_t *obj);
void fake_delete(conf_object_t *obj);
/* Runs posted events up to cycle `limit` or until SIM_break_simulation;
 * returns the cycle reached. */
cycles_t fake_run(fake_clock_t *c, cycles_t limit);
void fake_nic_register(void);
void fake_nic_send(fake_nic_t *nic, conf_object_t *link, const uint8 *data, size_t len);

#endif
