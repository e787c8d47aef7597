/* matcher_internal.h - the matcher's scratch state, shared by matcher.c and matcher_optimal.c. */
#ifndef PADDOCK_JM_MATCHER_INTERNAL_H
#define PADDOCK_JM_MATCHER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "jm/matcher.h"

/* One proposal of a task to a node (room batches). */
struct matcher__prop {
    uint32_t node;
    size_t task;
    double saving;
};

struct matcher {
    size_t nnodes;       /* capacity of the per-node arrays */
    uint32_t epoch;      /* stamps: a per-node value equal to an epoch is "set" */
    uint32_t *taken;     /* per node: batch epoch when matched in that batch */
    uint32_t *prop;      /* per node: iteration epoch of the current proposal */
    size_t *prop_task;   /* per node: proposing task kept */
    double *prop_saving; /* per node: its saving */
    uint32_t *mark;      /* per node: candidate-set dedup / optimal's column stamp */
    uint32_t *col;       /* per node: optimal's column index */
    uint32_t *touched;   /* nodes proposed to in an iteration */
    double *used_cpu;    /* per node: request accepted in the batch (room batches) */
    double *used_mem;
    uint32_t *used; /* per node: batch epoch when it accepted a task */
    size_t ntasks_cap;
    struct matcher__prop *props; /* proposals of an iteration (room batches), ntasks_cap */
    size_t *best;                /* per task: index of its best candidate this iteration */
    size_t *left;                /* unmatched tasks */
};

/* Next stamp value (wraps by clearing the stamp arrays). */
uint32_t matcher__epoch(matcher_t *m);

/* ERR_INVAL when the batch is malformed or names a node >= m->nnodes. */
int matcher__check(const matcher_t *m, const struct matcher_batch *b);

#endif
