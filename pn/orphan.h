/* orphan.h - which jobs' tasks the process node reaps (pure: no I/O; time comes from the caller).
 *
 * A job's JM may die and leave its tasks running with nobody watching. The RM leader answers
 * each heartbeat, which names the jobs with live tasks on the node, with those jobs' states
 * (HEARTBEAT_ACK). From those answers and the time this module decides which jobs' tasks to
 * kill (issue 14, "no orphans"):
 *   - a job that ended (done, failed, cancelled) is reaped ended_grace after the first answer
 *     that said so (its JM should have cancelled its tasks itself);
 *   - a job expired (its lease lapsed; a restarted JM may still resume it) or unknown to the RM
 *     is reaped orphan_grace after the first answer that said it was not active: long enough
 *     for a restarted JM to resume the job and re-attach to its tasks;
 *   - an answer saying the job is active again forgets both clocks.
 * A job that was expired and then ends is reaped at whichever grace runs out first. Both
 * boundaries are inclusive: a job is due when now - since >= grace.
 */
#ifndef PADDOCK_PN_ORPHAN_H
#define PADDOCK_PN_ORPHAN_H

#include <stddef.h>
#include <stdint.h>

/* HEARTBEAT_ACK's job states (proto/proto.h proto_job_info_t). */
enum {
    ORPHAN_UNKNOWN = 0,
    ORPHAN_ACTIVE = 1,
    ORPHAN_DONE = 2,
    ORPHAN_FAILED = 3,
    ORPHAN_CANCELLED = 4,
    ORPHAN_EXPIRED = 5,
};

typedef struct orphan_config {
    uint64_t ended_grace_ms;  /* done, failed, cancelled */
    uint64_t orphan_grace_ms; /* expired, unknown */
} orphan_config_t;

typedef struct orphan_verdict {
    const char *job_id; /* borrowed: valid during the callback only */
    uint32_t state;     /* the last state the RM answered */
    int ended;          /* 1: reaped because it ended (ended_grace ran out); 0: expired/unknown */
    uint64_t waited_ms; /* since the first answer that started the grace that ran out */
} orphan_verdict_t;

typedef void orphan_reap_fn(void *arg, const orphan_verdict_t *v);

typedef struct orphan orphan_t;

/* A tracker with `cfg` (copied). NULL when out of memory. Caller owns; orphan_destroy
 * nullifies the caller's reference. */
orphan_t *orphan_new(const orphan_config_t *cfg);
void orphan_destroy(orphan_t **op);

/* One job's state from an answer at `now_ms` (any monotonic clock, the same for every call).
 * 0; ERR_INVAL for a state above ORPHAN_EXPIRED (ignored: nothing changes); ERR_NOMEM (nothing
 * changes). An active job is forgotten: the module holds only jobs that are not active. */
int orphan_note(orphan_t *o, const char *job_id, uint32_t state, uint64_t now_ms);
/* Forgets every job due at `now_ms` and calls fn once for each (a later answer starts its
 * clocks again). fn may call orphan_forget, not orphan_note. Returns the number of jobs due. */
size_t orphan_due(orphan_t *o, uint64_t now_ms, orphan_reap_fn *fn, void *arg);
/* Forgets a job (the node has no live task of it any more). */
void orphan_forget(orphan_t *o, const char *job_id);
/* Jobs held (not active, not yet due). */
size_t orphan_len(const orphan_t *o);

#endif
