/* jm_fixture.h - helpers for the JM policy tests: a view of named nodes with one-cell matrices. */
#ifndef PADDOCK_TESTS_JM_FIXTURE_H
#define PADDOCK_TESTS_JM_FIXTURE_H

#include <stdint.h>

#include "jm/view.h"

/* Adds (or refreshes) a node with a 1x1 matrix holding `wait_s` (16 cores, 64 GiB), fresh at
 * now_ms. Returns its index. */
static inline uint32_t fx_node(view_t *v, const char *name, const char *rack, double wait_s,
                               uint64_t seq, int64_t now_ms)
{
    double cpu_bins[1] = {16}, mem_bins[1] = {65536}, cells[1] = {wait_s};
    struct view_entry e = {
        .name = name,
        .rack = rack,
        .cpu = 16,
        .mem_mb = 65536,
        .up = 1,
        .boot_id = 1,
        .seq = seq,
        .ncpu = 1,
        .nmem = 1,
        .cpu_bins = cpu_bins,
        .mem_bins_mb = mem_bins,
        .wait_s = cells,
    };
    view_update(v, &e, now_ms);
    return (uint32_t)view_find(v, name);
}

#endif
