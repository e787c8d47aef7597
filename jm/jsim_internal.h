/* jsim_internal.h - private to jm/jsim*.c: the job's representation and shared helpers. */
#ifndef PADDOCK_JM_JSIM_INTERNAL_H
#define PADDOCK_JM_JSIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "jm/jsim.h"

struct jsim_job {
    int nstages, ntasks, finalized;
    int *task_stage; /* [ntasks] */
    double *est;     /* [ntasks] estimated run time */
    uint32_t *tok;   /* [ntasks] token units per task (sized tokens); NULL: all 1 */
    /* while building: edge and barrier pairs */
    int *ef, *et;
    size_t ne, ecap;
    int *bf, *bt;
    size_t nb, bcap;
    /* after finalize */
    int *succ_off, *succ;         /* explicit successors (CSR over tasks) */
    int *npred;                   /* explicit predecessor count per task */
    int *bsucc_off, *bsucc;       /* stages barrier-waiting on a stage (CSR over stages) */
    int *nbpred;                  /* barrier predecessor count per stage */
    int *stage_off, *stage_tasks; /* tasks of each stage (CSR) */
    double *prio;                 /* est + longest estimated path after the task */
    int *topo;                    /* tasks (id < ntasks) and stage completions (ntasks + s) */
};

/* Dependency release shared by the topological sort and the simulator. */
struct jsim__release {
    int *pending;    /* per task: unsatisfied dependencies */
    int *stage_left; /* per stage: unfinished tasks + incomplete barrier predecessors */
    int *stack;
    void (*on_stage)(void *ctx, int stage); /* optional: a stage completed */
};

int jsim__release_init(const jsim_job_t *j, struct jsim__release *r);
void jsim__release_close(struct jsim__release *r);
int jsim__release_start(const jsim_job_t *j, struct jsim__release *r, int (*ready)(void *, int),
                        void *ctx);
int jsim__release_task(const jsim_job_t *j, struct jsim__release *r, int task,
                       int (*ready)(void *, int), void *ctx);

#endif
