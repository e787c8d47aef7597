/* fsm.h - the Raft state machine (struct raft_fsm) over the ledger.
 *
 * apply decodes one log entry (rm/ledger_cmd.h: a batch stamped with the leader's `now`) and
 * applies its commands to the ledger in order; snapshot encodes the ledger (ledger_snapshot);
 * restore replaces the ledger with a decoded snapshot. The results of commands are not passed
 * through raft's apply callback (a follower drops them, and only the first buffer of an apply
 * reports one): they are remembered under the commands' idempotency keys, so whoever submitted
 * a command reads its result with ledger_idem_lookup once the entry is applied, also after a
 * retry on another leader.
 *
 * A malformed entry is skipped whole and counted (every replica skips the same bytes, so they
 * stay equal); only ERR_NOMEM is reported to raft as a failure.
 */
#ifndef PADDOCK_RM_FSM_H
#define PADDOCK_RM_FSM_H

#include "rm/ledger.h"

#include <raft.h>

typedef struct fsm fsm_t;

/* Called after every applied command with its result (the daemon uses it to follow node
 * registrations and for statistics). Borrowed pointers, valid during the call. */
typedef void fsm_applied_fn(void *arg, const struct ledger_cmd *cmd,
                            const struct ledger_result *res);

/* A state machine over a new empty ledger. Caller owns; NULL on ERR_NOMEM. */
fsm_t *fsm_new(void);
/* Frees it (and its ledger); nullifies the caller's reference. Raft must be closed first. */
void fsm_destroy(fsm_t **fp);

/* The struct to hand to raft_init; borrowed, lives as long as the fsm. */
struct raft_fsm *fsm_raft(fsm_t *f);
/* The current ledger; borrowed, and replaced by a restore: do not keep it across loop turns. */
ledger_t *fsm_ledger(fsm_t *f);
void fsm_set_hook(fsm_t *f, fsm_applied_fn *fn, void *arg);

struct fsm_stats {
    uint64_t entries;   /* applied log entries of type command */
    uint64_t commands;  /* commands inside them */
    uint64_t refused;   /* commands the ledger refused (non-zero result code) */
    uint64_t malformed; /* entries skipped as malformed */
    uint64_t snapshots; /* taken */
    uint64_t restores;
    uint64_t since_entries; /* entries applied since the last snapshot (or restore) */
    uint64_t since_bytes;   /* their bytes */
};
void fsm_stats(const fsm_t *f, struct fsm_stats *out);

#endif
