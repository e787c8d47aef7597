/* ledger_recur_plan.h - a recurring job's model and plan as the leader computes them (Morpheus
 * §5-6), pure: the runs R* is fitted over, read from the ledger's history, and the reservation
 * LowCost places for R* among the other reservations of its virtual cluster, as the RECUR_MODEL
 * command the leader proposes. rm/rmserver_recur.c runs the fit (rm/skyline.h) on a worker thread
 * between the two; `paddock-sim recurring` calls the same functions on its simulated ledger. No
 * clock, no I/O: the ledger is only read. */
#ifndef PADDOCK_RM_LEDGER_RECUR_PLAN_H
#define PADDOCK_RM_LEDGER_RECUR_PLAN_H

#include "rm/ledger.h"
#include "rm/skyline.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The runs R* is fitted over: public value, ledger_recur_fit_close frees it. */
struct ledger_recur_fit {
    double *runs[SKYLINE_MAX_RUNS]; /* owned: skylines at the plan's step, SKYLINE_MAX_STEPS
                                       values each (zero past a run's end) */
    size_t nruns;
    size_t k; /* steps of the longest */
};

/* Collects the skylines of recurring job r's latest successful runs (at most max_runs and
 * SKYLINE_MAX_RUNS, newest first) from the history, resampled to step_ms. 0 (nruns 0: no such
 * run yet) or ERR_NOMEM (what was collected stays in f, to be closed). */
int ledger_recur_fit_runs(const ledger_t *l, const struct ledger_recurring *r, uint32_t step_ms,
                          size_t max_runs, struct ledger_recur_fit *f);
void ledger_recur_fit_close(struct ledger_recur_fit *f);

/* How R* is placed: LowCost (the RM's) or at its earliest fit (a simulation's baseline). */
enum ledger_recur_placer { LEDGER_RECUR_LOWCOST = 0, LEDGER_RECUR_GREEDY = 1 };

/* A RECUR_MODEL proposal: public value, ledger_recur_model_close frees it. */
struct ledger_recur_model {
    uint32_t generation;
    uint32_t step_ms;
    uint32_t *sky; /* owned: R*, tokens x 1000 per step */
    uint32_t nsky;
    uint32_t *resv; /* owned: the reservation from `first`, tokens x 1000 per step */
    uint32_t nresv;
    uint32_t first;
    bool failed; /* why is an error, not a note */
    char why[LEDGER_REASON_MAX];
};

/* The model of r for `generation` with R* (k steps at step_ms; k 0: none, `error` says why, ""
 * when there was simply no run): R* placed by `placer` before r's deadline among the other
 * reservations of its virtual cluster, over the LCM of their periods capped at horizon_ms. No
 * deadline, or a placement that fails, leaves the reservation empty and says why. 0 or ERR_NOMEM
 * (m is then closed). */
int ledger_recur_model(const ledger_t *l, const struct ledger_recurring *r, uint32_t generation,
                       uint32_t step_ms, int64_t horizon_ms, int placer, const double *rstar,
                       size_t k, const char *error, struct ledger_recur_model *m);
/* Fills c as the RECUR_MODEL command of m for r (c borrows m's arrays and text). */
void ledger_recur_model_cmd(const struct ledger_recur_model *m, const struct ledger_recurring *r,
                            struct ledger_cmd *c);
void ledger_recur_model_close(struct ledger_recur_model *m);

#endif
