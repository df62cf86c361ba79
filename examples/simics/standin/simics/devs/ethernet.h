/* Stand-in for Simics's <simics/devs/ethernet.h>: the ethernet_common
 * interface between a NIC and its link. */
#ifndef FSIN_STANDIN_SIMICS_DEVS_ETHERNET_H
#define FSIN_STANDIN_SIMICS_DEVS_ETHERNET_H

#include <simics/device-api.h>

typedef enum {
    Eth_Frame_CRC_Match,
    Eth_Frame_CRC_Mismatch,
    Eth_Frame_CRC_Unknown,
} eth_frame_crc_status_t;

typedef struct ethernet_common_interface {
    void (*frame)(conf_object_t *obj, const frags_t *frame, eth_frame_crc_status_t crc_status);
} ethernet_common_interface_t;

#define ETHERNET_COMMON_INTERFACE "ethernet_common"

#endif
