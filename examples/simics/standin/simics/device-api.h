/* Stand-in for the part of Simics's <simics/device-api.h> that the
 * fsin_eth_link example uses, with Simics's names and signatures, so that
 * the module builds and runs here against a fake clock (fake_simics.c).
 * Inside a Simics installation the real header is used instead. */
#ifndef FSIN_STANDIN_SIMICS_DEVICE_API_H
#define FSIN_STANDIN_SIMICS_DEVICE_API_H

#include <stddef.h>
#include <stdint.h>

typedef uint8_t uint8;
typedef uint32_t uint32;
typedef uint64_t uint64;
typedef int64_t int64;
typedef int64_t cycles_t;
typedef void lang_void;

typedef struct conf_class conf_class_t;
typedef struct event_class event_class_t;

/* Simics keeps its own data here; devices embed it as their first member. */
typedef struct conf_object {
    const char *name;
    conf_class_t *cls;
    struct conf_object *clock;
} conf_object_t;

typedef struct {
    conf_object_t *(*alloc)(void *data);
    void *(*init)(conf_object_t *obj);
    void (*finalize)(conf_object_t *obj);
    void (*objects_finalized)(conf_object_t *obj);
    void (*deinit)(conf_object_t *obj);
    void (*dealloc)(conf_object_t *obj);
    const char *description;
    const char *short_desc;
    int kind;
} class_info_t;

typedef enum { Sim_Val_Invalid, Sim_Val_String, Sim_Val_Integer, Sim_Val_Object, Sim_Val_Nil } attr_kind_t;

typedef struct {
    attr_kind_t kind;
    const char *string;
    int64 integer;
    conf_object_t *object;
} attr_value_t;

typedef enum {
    Sim_Set_Ok,
    Sim_Set_Object_Not_Found,
    Sim_Set_Interface_Not_Found,
    Sim_Set_Illegal_Value,
    Sim_Set_Illegal_Type,
} set_error_t;

typedef enum { Sim_Attr_Required = 0, Sim_Attr_Optional = 1 } attr_attr_t;
typedef enum { Sim_EC_No_Flags = 0 } event_class_flag_t;

/* frags_t: a frame in fragments (Simics's <simics/util/frags.h>); one
 * fragment is enough here. */
typedef struct {
    const uint8 *data;
    size_t len;
} frags_t;

void frags_init_add(frags_t *buf, const void *data, size_t len);
size_t frags_len(const frags_t *buf);
void frags_extract(const frags_t *buf, void *vdst);

conf_class_t *SIM_create_class(const char *name, const class_info_t *class_info);
int SIM_register_interface(conf_class_t *cls, const char *name, const void *iface);
const void *SIM_c_get_interface(const conf_object_t *obj, const char *name);
int SIM_register_attribute(conf_class_t *cls, const char *name,
                           attr_value_t (*get_attr)(conf_object_t *obj),
                           set_error_t (*set_attr)(conf_object_t *obj, attr_value_t *val),
                           attr_attr_t attr, const char *type, const char *desc);

const char *SIM_attr_string(attr_value_t attr);
int64 SIM_attr_integer(attr_value_t attr);
conf_object_t *SIM_attr_object(attr_value_t attr);
attr_value_t SIM_make_attr_string(const char *str);
attr_value_t SIM_make_attr_int64(int64 i);
attr_value_t SIM_make_attr_object(conf_object_t *obj);

event_class_t *SIM_register_event(const char *name, conf_class_t *cl, event_class_flag_t flags,
                                  void (*callback)(conf_object_t *obj, lang_void *data),
                                  void (*destroy)(conf_object_t *obj, lang_void *data),
                                  attr_value_t (*get_value)(conf_object_t *obj, lang_void *data),
                                  lang_void *(*set_value)(conf_object_t *obj, attr_value_t value),
                                  char *(*describe)(conf_object_t *obj, lang_void *data));
void SIM_event_post_cycle(conf_object_t *clock, event_class_t *evclass, conf_object_t *poster,
                          cycles_t cycles, lang_void *user_data);
conf_object_t *SIM_object_clock(const conf_object_t *obj);
cycles_t SIM_cycle_count(conf_object_t *obj);
const char *SIM_object_name(const conf_object_t *obj);
void SIM_break_simulation(const char *msg);

void fake_log(int error, int level, conf_object_t *obj, const char *fmt, ...);
#define SIM_LOG_INFO(level, obj, group, ...) fake_log(0, (level), (obj), __VA_ARGS__)
#define SIM_LOG_ERROR(obj, group, ...) fake_log(1, 1, (obj), __VA_ARGS__)

#endif
