/* jmd_spec_internal.h - the state the daemon keeps for extra attempts (speculative copies,
 * duplicates, re-runs of lost outputs) and the helpers shared by jmd_spec.c (their lifecycle:
 * statuses, take-overs, ends) and jmd_spec_start.c (deciding and starting them each tick). Not
 * part of the JM's interface (jm/daemon/jmd.h declares that). */
#ifndef PADDOCK_JM_JMD_SPEC_INTERNAL_H
#define PADDOCK_JM_JMD_SPEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "jm/daemon/jmd.h"
#include "jm/speculate.h"

#define JMD_SPEC__EXTRA   (SPECULATE_MAX_ATTEMPTS - 1) /* extra attempts per task */
#define JMD_SPEC__CHECK   64                           /* running tasks judged per tick at most */
#define JMD_SPEC__CORRECT 64 /* queued tasks re-evaluated per tick at most */
#define JMD_SPEC__N(jt)   ((jt)->x ? (jt)->x->n : 0) /* extra attempts in flight */

struct jmd_spec_att {
    uint32_t attempt;
    int node;
    int cls;
    int running;
    int dup; /* 1: a duplicate of a queued task; 0: a speculative copy of a running one */
    int64_t disp_mono, run_mono, disp_wall, queued_wall, start_wall;
    uint32_t used_units; /* counted in the usage skyline */
    uint32_t cost;       /* token units it holds */
    struct estimate est;
};

/* A task's extra attempts, allocated when its first one starts and freed when its last one
 * ends: only stragglers and queued tasks worth a duplicate ever have one, so the per-task record
 * below stays small (issue 24: the JM at most 1 KiB per task at rest). */
struct jmd_spec_extra {
    struct jmd_spec_att a[JMD_SPEC__EXTRA];
    size_t n;                 /* >= 1 while allocated */
    struct speculate_task st; /* winner and cancel (jm/speculate.h) */
};

struct jmd_spec_task {
    struct jmd_spec_extra *x; /* NULL: no extra attempt in flight */
    uint64_t cpu_ms;          /* CPU time the PN last reported for the running primary */
    uint64_t bytes_read;      /* ... and the input bytes it has read (0: unknown) */
    uint32_t copies, dups;    /* started so far */
    int32_t done_node;        /* node of the attempt that succeeded (-1) */
};

struct jmd_spec {
    struct speculate_config scfg;
    struct correct_config ccfg;
    enum correct_mode mode;
    struct jmd_spec_task *t;
    struct speculate_dist *dist; /* per stage: finished durations / R */
    double *wait_sum;            /* per stage: realised waits (queued -> running) */
    uint32_t *wait_n;
    uint32_t *stage_inflight; /* copies in flight per stage */
    size_t *local;            /* tasks with node-local outputs */
    size_t *flight;           /* the tick's copy of the DAG's running tasks (jmd_spec__flight) */
    size_t capflight;
    size_t nlocal;
    size_t inflight; /* copies in flight */
    uint64_t reg_units, opp_units;
    size_t next, cnext;
};

/* Adds (add != 0) or gives back `cost` units of class cls (DISPATCH_REGULAR or opportunistic);
 * regular units change the tokens dispatch sees (jmd_spec_tokens). */
void jmd_spec__units(jmd_t *j, int cls, uint32_t cost, int add);
/* Whether node n is down as the scheduler judges it (jmd_sched_node_check). */
int jmd_spec__node_down(const jmd_t *j, uint32_t n);
/* The node's name in the view, "?" when unknown (borrowed from the view). */
const char *jmd_spec__name(const jmd_t *j, int node);
/* Ends extra attempt k of `task` (cancelled at its node first when `cancel`), writes its record
 * and gives back what it held. */
void jmd_spec__end(jmd_t *j, size_t task, size_t k, int state, const proto_task_status_t *st,
                   const char *reason, int cancel);
/* Swaps extra attempt k with the task's primary (struct jmd_task): the extra takes over. */
void jmd_spec__swap(jmd_t *j, size_t task, size_t k);
/* Ends every extra attempt of `task`, cancelled at its node, with reason `why`. */
void jmd_spec__cancel_rest(jmd_t *j, size_t task, const char *why);

#endif
