/* A fake Simics for testing the fsin_eth_link module outside Simics: a
 * class registry with interfaces and attributes, clocks that run posted
 * cycle events in order, and a fake NIC that implements ethernet_common.
 * Each simulated machine (clock) runs in its own thread. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_simics.h"

#define MAX_CLASSES 8
#define MAX_ITEMS 8

struct conf_class {
    const char *name;
    class_info_t info;
    const char *iface_names[MAX_ITEMS];
    const void *ifaces[MAX_ITEMS];
    int n_ifaces;
    const char *attr_names[MAX_ITEMS];
    set_error_t (*setters[MAX_ITEMS])(conf_object_t *, attr_value_t *);
    int n_attrs;
};

struct event_class {
    const char *name;
    void (*callback)(conf_object_t *, lang_void *);
};

typedef struct event {
    cycles_t at;
    uint64 seq;
    event_class_t *ev;
    conf_object_t *obj;
    lang_void *data;
    struct event *next;
} event_t;

struct fake_clock {
    conf_object_t obj;
    cycles_t now;
    uint64 seq;
    event_t *events;
    int stopped;
};

static struct conf_class classes[MAX_CLASSES];
static int n_classes;
static __thread fake_clock_t *running;

void frags_init_add(frags_t *buf, const void *data, size_t len) {
    buf->data = data;
    buf->len = len;
}

size_t frags_len(const frags_t *buf) { return buf->len; }

void frags_extract(const frags_t *buf, void *vdst) { memcpy(vdst, buf->data, buf->len); }

conf_class_t *SIM_create_class(const char *name, const class_info_t *info) {
    struct conf_class *c = &classes[n_classes++];
    c->name = name;
    c->info = *info;
    return c;
}

int SIM_register_interface(conf_class_t *cls, const char *name, const void *iface) {
    cls->iface_names[cls->n_ifaces] = name;
    cls->ifaces[cls->n_ifaces++] = iface;
    return 0;
}

const void *SIM_c_get_interface(const conf_object_t *obj, const char *name) {
    for (int i = 0; obj != NULL && i < obj->cls->n_ifaces; i++) {
        if (strcmp(obj->cls->iface_names[i], name) == 0) {
            return obj->cls->ifaces[i];
        }
    }
    return NULL;
}

int SIM_register_attribute(conf_class_t *cls, const char *name,
                           attr_value_t (*get_attr)(conf_object_t *obj),
                           set_error_t (*set_attr)(conf_object_t *obj, attr_value_t *val),
                           attr_attr_t attr, const char *type, const char *desc) {
    (void)get_attr, (void)attr, (void)type, (void)desc;
    cls->attr_names[cls->n_attrs] = name;
    cls->setters[cls->n_attrs++] = set_attr;
    return 0;
}

const char *SIM_attr_string(attr_value_t a) { return a.string; }
int64 SIM_attr_integer(attr_value_t a) { return a.integer; }
conf_object_t *SIM_attr_object(attr_value_t a) { return a.object; }

attr_value_t SIM_make_attr_string(const char *s) {
    return (attr_value_t){.kind = s ? Sim_Val_String : Sim_Val_Nil, .string = s};
}

attr_value_t SIM_make_attr_int64(int64 i) { return (attr_value_t){.kind = Sim_Val_Integer, .integer = i}; }

attr_value_t SIM_make_attr_object(conf_object_t *o) {
    return (attr_value_t){.kind = o ? Sim_Val_Object : Sim_Val_Nil, .object = o};
}

event_class_t *SIM_register_event(const char *name, conf_class_t *cl, event_class_flag_t flags,
                                  void (*callback)(conf_object_t *obj, lang_void *data),
                                  void (*destroy)(conf_object_t *obj, lang_void *data),
                                  attr_value_t (*get_value)(conf_object_t *obj, lang_void *data),
                                  lang_void *(*set_value)(conf_object_t *obj, attr_value_t value),
                                  char *(*describe)(conf_object_t *obj, lang_void *data)) {
    (void)cl, (void)flags, (void)destroy, (void)get_value, (void)set_value, (void)describe;
    event_class_t *e = calloc(1, sizeof *e);
    e->name = name;
    e->callback = callback;
    return e;
}

void SIM_event_post_cycle(conf_object_t *clock, event_class_t *evclass, conf_object_t *poster,
                          cycles_t cycles, lang_void *user_data) {
    fake_clock_t *c = (fake_clock_t *)clock;
    event_t *e = calloc(1, sizeof *e);
    *e = (event_t){.at = c->now + cycles, .seq = c->seq++, .ev = evclass, .obj = poster, .data = user_data};
    event_t **p = &c->events;
    while (*p != NULL && ((*p)->at < e->at || ((*p)->at == e->at && (*p)->seq < e->seq))) {
        p = &(*p)->next;
    }
    e->next = *p;
    *p = e;
}

conf_object_t *SIM_object_clock(const conf_object_t *obj) { return obj->clock; }
cycles_t SIM_cycle_count(conf_object_t *obj) { return ((fake_clock_t *)obj)->now; }
const char *SIM_object_name(const conf_object_t *obj) { return obj->name; }

void SIM_break_simulation(const char *msg) {
    if (running != NULL) {
        running->stopped = 1;
        printf("%s: break at cycle %lld: %s\n", running->obj.name, (long long)running->now, msg);
    }
}

void fake_log(int error, int level, conf_object_t *obj, const char *fmt, ...) {
    (void)level;
    va_list ap;
    va_start(ap, fmt);
    fprintf(error ? stderr : stdout, "[%s %s] ", obj->name, error ? "error" : "info");
    vfprintf(error ? stderr : stdout, fmt, ap);
    fprintf(error ? stderr : stdout, "\n");
    va_end(ap);
}

fake_clock_t *fake_clock_new(const char *name) {
    fake_clock_t *c = calloc(1, sizeof *c);
    c->obj.name = name;
    c->obj.clock = &c->obj;
    return c;
}

conf_object_t *fake_object_new(const char *cls, const char *name, fake_clock_t *clock) {
    for (int i = 0; i < n_classes; i++) {
        if (strcmp(classes[i].name, cls) == 0) {
            conf_object_t *o = classes[i].info.alloc(NULL);
            o->name = name;
            o->cls = &classes[i];
            o->clock = &clock->obj;
            return o;
        }
    }
    return NULL;
}

set_error_t fake_set_attr(conf_object_t *obj, const char *name, attr_value_t v) {
    for (int i = 0; i < obj->cls->n_attrs; i++) {
        if (strcmp(obj->cls->attr_names[i], name) == 0) {
            return obj->cls->setters[i](obj, &v);
        }
    }
    return Sim_Set_Illegal_Value;
}

void fake_finalize(conf_object_t *obj) {
    if (obj->cls->info.objects_finalized != NULL) {
        obj->cls->info.objects_finalized(obj);
    }
}

void fake_delete(conf_object_t *obj) { obj->cls->info.dealloc(obj); }

cycles_t fake_run(fake_clock_t *c, cycles_t limit) {
    running = c;
    while (!c->stopped && c->events != NULL && c->events->at <= limit) {
        event_t *e = c->events;
        c->events = e->next;
        c->now = e->at;
        e->ev->callback(e->obj, e->data);
        free(e);
    }
    running = NULL;
    return c->now;
}

/* The fake NIC: records what its link delivers. */
static conf_object_t *nic_alloc(void *data) {
    (void)data;
    return calloc(1, sizeof(fake_nic_t));
}

static void nic_dealloc(conf_object_t *obj) { free(obj); }

static void nic_frame(conf_object_t *obj, const frags_t *frame, eth_frame_crc_status_t crc) {
    fake_nic_t *n = (fake_nic_t *)obj;
    n->received++;
    n->last_crc = crc;
    n->last_len = frags_len(frame) < sizeof n->last ? frags_len(frame) : sizeof n->last;
    memcpy(n->last, frame->data, n->last_len);
    n->last_cycle = SIM_cycle_count(SIM_object_clock(obj));
}

void fake_nic_register(void) {
    const class_info_t info = {.alloc = nic_alloc, .dealloc = nic_dealloc, .short_desc = "fake NIC"};
    conf_class_t *cls = SIM_create_class("fake_nic", &info);
    static const ethernet_common_interface_t iface = {.frame = nic_frame};
    SIM_register_interface(cls, ETHERNET_COMMON_INTERFACE, &iface);
}

void fake_nic_send(fake_nic_t *nic, conf_object_t *link, const uint8 *data, size_t len) {
    const ethernet_common_interface_t *iface = SIM_c_get_interface(link, ETHERNET_COMMON_INTERFACE);
    frags_t f;
    frags_init_add(&f, data, len);
    iface->frame(link, &f, Eth_Frame_CRC_Match);
    nic->sent++;
}
