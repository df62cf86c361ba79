/* fsin_eth_link: a Simics Ethernet link that couples one simulated node to
 * the fsin-rs co-simulation server (Simics paper, sections 3.2 and 5).
 *
 * The node's NIC (e.g. the DEC21143 of the paper) is connected to this
 * object instead of an ethernet-link: every frame the NIC sends through
 * the ethernet_common interface goes to the fsin server, stamped with the
 * node's cycle count, and frames the network delivers are handed to the
 * NIC's own ethernet_common interface at their node cycle. A cycle event
 * posted at every slice boundary reports the slice done and blocks the
 * processor until the server's Continue (lock-step, Simics paper section 4).
 *
 * Attributes: server (string, "http://HOST:50051"), node (integer, node id
 * or -1 for the server's choice), nic (object implementing
 * ethernet_common). Simics interfaces used: ethernet_common (implemented
 * and called), cycle events (SIM_register_event, SIM_event_post_cycle,
 * SIM_object_clock, SIM_cycle_count), frags_t, SIM_break_simulation.
 * The fsin side is the C ABI of sync-client (fsin_sync.h).
 */
#include <stdlib.h>
#include <string.h>

#include <simics/device-api.h>
#include <simics/devs/ethernet.h>

#include "fsin_sync.h"

#define MAX_FRAME 9018

typedef struct {
    conf_object_t obj;
    /* Attributes. */
    char *server;
    int64 node;
    conf_object_t *nic;
    const ethernet_common_interface_t *nic_iface;
    /* Run state. */
    FsinLink *link;
    uint32 node_id;
    uint64 slice;
    /* Clock cycle count at node cycle 0. */
    cycles_t base;
} fsin_eth_link_t;

/* A frame waiting for its delivery cycle. */
typedef struct {
    size_t len;
    uint8 data[];
} pending_frame_t;

static event_class_t *slice_end_event;
static event_class_t *start_event;
static event_class_t *deliver_event;

static fsin_eth_link_t *from_obj(conf_object_t *obj) { return (fsin_eth_link_t *)obj; }

static uint64 node_cycle(fsin_eth_link_t *l) {
    return (uint64)(SIM_cycle_count(SIM_object_clock(&l->obj)) - l->base);
}

static void stop(fsin_eth_link_t *l, const char *why) {
    SIM_LOG_ERROR(&l->obj, 0, "%s: %s", why, fsin_last_error());
    SIM_break_simulation("fsin co-simulation stopped");
}

/* Waits for the next Continue, schedules its frames and the slice end. */
static void start_slice(fsin_eth_link_t *l) {
    FsinContinue c;
    int s = fsin_wait_continue(l->link, &c);
    if (s == FSIN_SHUTDOWN) {
        SIM_LOG_INFO(1, &l->obj, 0, "run over: %s", fsin_shutdown_reason(l->link));
        SIM_break_simulation("fsin run over");
        return;
    }
    if (s != FSIN_OK) {
        stop(l, "waiting for Continue");
        return;
    }
    l->slice = c.slice;
    uint64 now = node_cycle(l);
    if (now != c.start_cycle) {
        SIM_LOG_ERROR(&l->obj, 0, "slice %llu starts at node cycle %llu, clock at %llu",
                      (unsigned long long)c.slice, (unsigned long long)c.start_cycle,
                      (unsigned long long)now);
    }
    conf_object_t *clock = SIM_object_clock(&l->obj);
    for (;;) {
        uint8 buf[MAX_FRAME];
        uint32 node;
        uint64 at;
        size_t len;
        s = fsin_poll_frame(l->link, &node, &at, buf, sizeof buf, &len);
        if (s == FSIN_NO_FRAME) {
            break;
        }
        if (s != FSIN_OK) {
            stop(l, "reading a delivered frame");
            return;
        }
        pending_frame_t *p = malloc(sizeof *p + len);
        p->len = len;
        memcpy(p->data, buf, len);
        SIM_event_post_cycle(clock, deliver_event, &l->obj, (cycles_t)(at > now ? at - now : 0), p);
    }
    SIM_event_post_cycle(clock, slice_end_event, &l->obj, (cycles_t)c.node_cycles, NULL);
}

/* Event at the slice boundary: the processor stops here until Continue. */
static void slice_end(conf_object_t *obj, lang_void *data) {
    (void)data;
    fsin_eth_link_t *l = from_obj(obj);
    if (fsin_slice_done(l->link, l->slice) != FSIN_OK) {
        stop(l, "reporting the end of the slice");
        return;
    }
    start_slice(l);
}

static void start(conf_object_t *obj, lang_void *data) {
    (void)data;
    start_slice(from_obj(obj));
}

static void deliver(conf_object_t *obj, lang_void *data) {
    fsin_eth_link_t *l = from_obj(obj);
    pending_frame_t *p = data;
    frags_t f;
    frags_init_add(&f, p->data, p->len);
    l->nic_iface->frame(l->nic, &f, Eth_Frame_CRC_Match);
    free(p);
}

static void drop_pending(conf_object_t *obj, lang_void *data) {
    (void)obj;
    free(data);
}

/* ethernet_common.frame, called by the NIC for every frame it sends. */
static void link_frame(conf_object_t *obj, const frags_t *frame, eth_frame_crc_status_t crc) {
    (void)crc;
    fsin_eth_link_t *l = from_obj(obj);
    size_t len = frags_len(frame);
    if (l->link == NULL || len > MAX_FRAME) {
        SIM_LOG_ERROR(obj, 0, "frame of %zu bytes dropped (not attached, or over %d bytes)", len,
                      MAX_FRAME);
        return;
    }
    uint8 buf[MAX_FRAME];
    frags_extract(frame, buf);
    if (fsin_send_frame(l->link, l->node_id, node_cycle(l), buf, len) != FSIN_OK) {
        stop(l, "sending a frame");
    }
}

static conf_object_t *alloc_object(void *data) {
    (void)data;
    fsin_eth_link_t *l = calloc(1, sizeof *l);
    l->node = -1;
    return &l->obj;
}

/* Attaches once every object is configured, and starts slice 0 at the
 * current cycle. */
static void objects_finalized(conf_object_t *obj) {
    fsin_eth_link_t *l = from_obj(obj);
    if (l->server == NULL || l->nic_iface == NULL) {
        SIM_LOG_ERROR(obj, 0, "the server and nic attributes must be set");
        return;
    }
    FsinNodeSpec spec = {.node_id = l->node, .has_mac = false, .clock_hz = 0};
    if (fsin_attach(l->server, SIM_object_name(obj), &spec, 1, &l->link) != FSIN_OK) {
        stop(l, "attaching to the fsin server");
        return;
    }
    uint8 mac[6];
    fsin_node(l->link, 0, &l->node_id, mac);
    SIM_LOG_INFO(1, obj, 0, "node %u, MAC %02x:%02x:%02x:%02x:%02x:%02x", l->node_id, mac[0], mac[1],
                 mac[2], mac[3], mac[4], mac[5]);
    l->base = SIM_cycle_count(SIM_object_clock(obj));
    SIM_event_post_cycle(SIM_object_clock(obj), start_event, obj, 0, NULL);
}

static void dealloc_object(conf_object_t *obj) {
    fsin_eth_link_t *l = from_obj(obj);
    fsin_close(l->link);
    free(l->server);
    free(l);
}

static set_error_t set_server(conf_object_t *obj, attr_value_t *val) {
    fsin_eth_link_t *l = from_obj(obj);
    free(l->server);
    l->server = strdup(SIM_attr_string(*val));
    return Sim_Set_Ok;
}

static attr_value_t get_server(conf_object_t *obj) {
    return SIM_make_attr_string(from_obj(obj)->server);
}

static set_error_t set_node(conf_object_t *obj, attr_value_t *val) {
    from_obj(obj)->node = SIM_attr_integer(*val);
    return Sim_Set_Ok;
}

static attr_value_t get_node(conf_object_t *obj) { return SIM_make_attr_int64(from_obj(obj)->node); }

static set_error_t set_nic(conf_object_t *obj, attr_value_t *val) {
    fsin_eth_link_t *l = from_obj(obj);
    conf_object_t *nic = SIM_attr_object(*val);
    const ethernet_common_interface_t *iface = SIM_c_get_interface(nic, ETHERNET_COMMON_INTERFACE);
    if (iface == NULL) {
        return Sim_Set_Interface_Not_Found;
    }
    l->nic = nic;
    l->nic_iface = iface;
    return Sim_Set_Ok;
}

static attr_value_t get_nic(conf_object_t *obj) { return SIM_make_attr_object(from_obj(obj)->nic); }

void init_local(void) {
    const class_info_t info = {
        .alloc = alloc_object,
        .objects_finalized = objects_finalized,
        .dealloc = dealloc_object,
        .description = "Ethernet link to the fsin-rs co-simulation server: frames cross a "
                       "simulated interconnection network, slices run in lock-step.",
        .short_desc = "link to the fsin network simulator",
    };
    conf_class_t *cls = SIM_create_class("fsin_eth_link", &info);
    static const ethernet_common_interface_t link_iface = {.frame = link_frame};
    SIM_register_interface(cls, ETHERNET_COMMON_INTERFACE, &link_iface);
    SIM_register_attribute(cls, "server", get_server, set_server, Sim_Attr_Required, "s",
                           "URL of the fsin server, e.g. http://127.0.0.1:50051.");
    SIM_register_attribute(cls, "node", get_node, set_node, Sim_Attr_Optional, "i",
                           "Node id in the simulated network (-1: the server picks).");
    SIM_register_attribute(cls, "nic", get_nic, set_nic, Sim_Attr_Required, "o",
                           "The NIC: receives delivered frames through ethernet_common.");
    start_event = SIM_register_event("fsin-start", cls, Sim_EC_No_Flags, start, NULL, NULL, NULL, NULL);
    slice_end_event =
        SIM_register_event("fsin-slice-end", cls, Sim_EC_No_Flags, slice_end, NULL, NULL, NULL, NULL);
    deliver_event =
        SIM_register_event("fsin-deliver", cls, Sim_EC_No_Flags, deliver, drop_pending, NULL, NULL, NULL);
}
