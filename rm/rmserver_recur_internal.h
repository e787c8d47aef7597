/* rmserver_recur_internal.h - what the recurring-job files of the RM replica share (not part of
 * any public API): rmserver_recur.c (the leader's loop: fire, model, plan) launches a run's JM
 * through rmserver_recur_launch.c; rmserver_recur_admin.c answers the admin queries. */
#ifndef PADDOCK_RM_RMSERVER_RECUR_INTERNAL_H
#define PADDOCK_RM_RMSERVER_RECUR_INTERNAL_H

#include "rm/rmserver_internal.h"

#include <stddef.h>
#include <stdint.h>

/* The run of recurring job r for `period`: its name ("NAME-pPERIOD") into run (rcap bytes) and
 * its job directory under the replica's jobs_dir into dir (cap bytes). */
void rmserver_recur__run_dir(struct rmserver *s, const struct ledger_recurring *r, int64_t period,
                             char *dir, size_t cap, char *run, size_t rcap);
/* The last non-empty line of the jm.log in run directory `dir` (why its JM stopped) into out (cap
 * bytes); empty when there is none. */
void rmserver_recur__log_tail(const char *dir, char *out, size_t cap);
/* Writes the run's job directory and starts its JM. 0, or an ERR_* with the reason in why. */
int rmserver_recur__launch(struct rmserver *s, const struct ledger_recurring *r, int64_t period,
                           char *why, size_t cap);

#endif
