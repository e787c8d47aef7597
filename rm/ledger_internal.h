/* ledger_internal.h - the ledger's representation, shared by rm/ledger.c (commands and
 * queries) and rm/ledger_snap.c (snapshots). Private to the ledger module. */
#ifndef PADDOCK_RM_LEDGER_INTERNAL_H
#define PADDOCK_RM_LEDGER_INTERNAL_H

#include "rm/arbiter.h"
#include "rm/ledger.h"

#define LEDGER__BUCKETS (2 * LEDGER_IDEM_CAP)

struct ledger__idem {
    uint64_t key;
    struct ledger_result res;
    int32_t next; /* next slot in the same bucket, -1 ends */
};

struct ledger {
    int64_t now;
    uint64_t applied;

    struct ledger_node *nodes;
    size_t nnodes, capnodes;
    uint32_t *nidx; /* open addressing by name: node index + 1, 0 empty */
    size_t nidx_cap;

    struct ledger_vc *vcs;
    size_t nvcs, capvcs;

    struct ledger_job *jobs; /* ascending id */
    size_t njobs, capjobs;
    size_t nfinished;
    uint64_t next_job_id;

    struct arbiter_job *arb; /* scratch for the arbiter: capjobs entries each */
    size_t *arb_order;
    size_t *arb_pos; /* index into jobs of each arb entry */

    struct ledger__idem *idem; /* ring of LEDGER_IDEM_CAP, oldest at idem_head when full */
    size_t idem_n, idem_head;
    int32_t *idem_bucket; /* 2 * LEDGER_IDEM_CAP heads */
};

/* Helpers the snapshot decoder rebuilds state with (ledger.c). */
struct ledger_node *ledger__node_find(const ledger_t *l, const char *name);
void ledger__nidx_insert(uint32_t *tab, size_t cap, const char *name, uint32_t v);
/* Room for one more node (arrays and name index): 0, ERR_FULL or ERR_NOMEM. */
int ledger__node_reserve(ledger_t *l);
struct ledger_vc *ledger__vc_find(const ledger_t *l, const char *name, size_t *idx);
void ledger__idem_put(ledger_t *l, uint64_t key, const struct ledger_result *res);
/* Grows the jobs array and the arbiter's scratch to hold `cap` jobs: 0 or ERR_NOMEM. */
int ledger__jobs_reserve(ledger_t *l, size_t cap);
/* Recomputes every grant of virtual cluster `vc` (rm/arbiter.h); `cause` is the job whose
 * command triggered it (its own losses are not counted as reclaims), 0 for none. */
void ledger__arbitrate(ledger_t *l, size_t vc, uint64_t cause);

#endif
