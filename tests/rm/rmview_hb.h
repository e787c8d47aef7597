/* rmview_hb.h - the heartbeat the view tests (test_rmview.c, test_rmview_pub.c) feed rm/rmview:
 * node `name` of boot `boot`, its heartbeat number `seq`, a 2 x 2 matrix whose last cell grows
 * by a second per seq (a wait a JM would notice). */
#ifndef PADDOCK_TESTS_RM_RMVIEW_HB_H
#define PADDOCK_TESTS_RM_RMVIEW_HB_H

#include "proto/proto.h"

#include <stdint.h>
#include <string.h>

static inline void heartbeat(proto_heartbeat_t *hb, const char *name, uint64_t boot, uint64_t seq)
{
    memset(hb, 0, sizeof *hb);
    hb->name = (char *)name;
    hb->rack = "r1";
    hb->endpoint = "tcp://127.0.0.1:7000";
    hb->boot_id = boot;
    hb->seq = seq;
    hb->cpu = 8;
    hb->mem_mb = 16384;
    hb->running_regular = (uint32_t)seq;
    hb->matrix.ncpu = 2;
    hb->matrix.nmem = 2;
    hb->matrix.cpu_bounds[0] = 1;
    hb->matrix.cpu_bounds[1] = 2;
    hb->matrix.mem_bounds_mb[0] = 1024;
    hb->matrix.mem_bounds_mb[1] = 2048;
    hb->matrix.cells_ms[3] = (uint32_t)seq * 1000; /* each seq a wait a JM would notice */
}

#endif
