/* ledger_recur_internal.h - what the ledger's recurring-job files share (not part of the
 * ledger's interface, rm/ledger.h): ledger_recur.c (recurring jobs, their commands and queries),
 * ledger_recur_history.c (the bounded history of runs, SLO inference) and ledger_recur_snap.c
 * (their part of a snapshot). The same discipline as the ledger: no clock, no I/O. */
#ifndef PADDOCK_RM_LEDGER_RECUR_INTERNAL_H
#define PADDOCK_RM_LEDGER_RECUR_INTERNAL_H

#include "rm/ledger.h"
#include "rm/ledger_internal.h"

#include <stdint.h>

#define LEDGER__SLO_RUNS 32 /* runs SLO inference looks at */

/* Frees what a run's record holds (not the record). */
void ledger__run_close(struct ledger_run *h);
/* Copies len bytes of src into dst (cap bytes, truncated, NUL-terminated), control characters
 * replaced by spaces so records stay printable. */
void ledger__copy_text(char *dst, size_t cap, const char *src, uint32_t len);
/* A NUL-terminated copy of len bytes of src (caller owns: mem_free); NULL on ERR_NOMEM. */
char *ledger__dup_text(const char *src, uint32_t len);

/* A new record at the end of the history's ring (the oldest is forgotten when full); NULL on
 * ERR_NOMEM. */
struct ledger_run *ledger__history_push(ledger_t *l);
/* Records a run of recurring job r for `period` that never became a job (outcome and reason). */
void ledger__history_recur(ledger_t *l, const struct ledger_recurring *r, int64_t period,
                           uint8_t outcome, const char *reason);
/* SLO inference (rm/slo.h) over the recurring job's last LEDGER__SLO_RUNS runs, into r. */
void ledger__infer(ledger_t *l, struct ledger_recurring *r);

#endif
