/* ledger.c - the RM's replicated state: nodes, virtual clusters, idempotency keys, the
 * command dispatch (ledger_apply) and the queries. Jobs are in ledger_job.c, grants and
 * admission in ledger_arbitrate.c, recurring jobs in ledger_recur*.c, tenants in ledger_tenant.c,
 * snapshots in ledger_snap.c. */
#include "rm/ledger.h"
#include "rm/ledger_internal.h"

#include "common/err.h"
#include "common/mem.h"

#include <string.h>

static uint64_t ledger__hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s != '\0'; s++) {
        h ^= (uint8_t)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static size_t ledger__idem_bucket(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)(key & (LEDGER__BUCKETS - 1));
}

ledger_t *ledger_new(void)
{
    ledger_t *l = mem_calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->idem = mem_calloc(LEDGER_IDEM_CAP, sizeof *l->idem);
    l->idem_bucket = mem_alloc(LEDGER__BUCKETS * sizeof *l->idem_bucket);
    if (l->idem == NULL || l->idem_bucket == NULL) {
        ledger_destroy(&l);
        return NULL;
    }
    for (size_t i = 0; i < LEDGER__BUCKETS; i++)
        l->idem_bucket[i] = -1;
    l->next_job_id = 1;
    return l;
}

void ledger_destroy(ledger_t **lp)
{
    if (lp == NULL || *lp == NULL)
        return;
    ledger_t *l = *lp;
    mem_free(l->nodes);
    mem_free(l->nidx);
    mem_free(l->vcs);
    mem_free(l->jobs);
    mem_free(l->arb);
    mem_free(l->arb_order);
    mem_free(l->arb_pos);
    mem_free(l->idem);
    mem_free(l->idem_bucket);
    ledger__recur_free(l);
    ledger__tenant_free(l);
    mem_free(l);
    *lp = NULL;
}

void ledger_cmd_init(struct ledger_cmd *c, enum ledger_cmd_type type)
{
    memset(c, 0, sizeof *c);
    c->type = (uint8_t)type;
}

/* ---- idempotency keys ---- */

bool ledger_idem_lookup(const ledger_t *l, uint64_t key, struct ledger_result *res)
{
    if (key == 0)
        return false;
    for (int32_t i = l->idem_bucket[ledger__idem_bucket(key)]; i >= 0; i = l->idem[i].next) {
        if (l->idem[i].key == key) {
            if (res != NULL)
                *res = l->idem[i].res;
            return true;
        }
    }
    return false;
}

static void ledger__idem_unlink(ledger_t *l, size_t slot)
{
    int32_t *pp = &l->idem_bucket[ledger__idem_bucket(l->idem[slot].key)];
    while (*pp >= 0) {
        if ((size_t)*pp == slot) {
            *pp = l->idem[slot].next;
            return;
        }
        pp = &l->idem[*pp].next;
    }
}

void ledger__idem_put(ledger_t *l, uint64_t key, const struct ledger_result *res)
{
    size_t slot;
    if (l->idem_n < LEDGER_IDEM_CAP) {
        slot = (l->idem_head + l->idem_n) % LEDGER_IDEM_CAP;
        l->idem_n++;
    } else {
        slot = l->idem_head;
        ledger__idem_unlink(l, slot);
        l->idem_head = (l->idem_head + 1) % LEDGER_IDEM_CAP;
    }
    size_t b = ledger__idem_bucket(key);
    l->idem[slot].key = key;
    l->idem[slot].res = *res;
    l->idem[slot].next = l->idem_bucket[b];
    l->idem_bucket[b] = (int32_t)slot;
}

/* ---- nodes ---- */

struct ledger_node *ledger__node_find(const ledger_t *l, const char *name)
{
    if (l->nidx_cap == 0)
        return NULL;
    size_t mask = l->nidx_cap - 1;
    for (size_t i = (size_t)ledger__hash(name) & mask;; i = (i + 1) & mask) {
        uint32_t v = l->nidx[i];
        if (v == 0)
            return NULL;
        if (strcmp(l->nodes[v - 1].name, name) == 0)
            return &l->nodes[v - 1];
    }
}

void ledger__nidx_insert(uint32_t *tab, size_t cap, const char *name, uint32_t v)
{
    size_t mask = cap - 1;
    size_t i = (size_t)ledger__hash(name) & mask;
    while (tab[i] != 0)
        i = (i + 1) & mask;
    tab[i] = v;
}

/* Makes room for one more node (arrays and index) before anything changes. */
int ledger__node_reserve(ledger_t *l)
{
    if (l->nnodes >= LEDGER_MAX_NODES)
        return ERR_FULL;
    if (l->nnodes == l->capnodes) {
        size_t cap = l->capnodes < 16 ? 16 : l->capnodes * 2;
        void *p = mem_reallocarray(l->nodes, cap, sizeof *l->nodes);
        if (p == NULL)
            return ERR_NOMEM;
        l->nodes = p;
        l->capnodes = cap;
    }
    if ((l->nnodes + 1) * 2 > l->nidx_cap) {
        size_t cap = l->nidx_cap < 32 ? 32 : l->nidx_cap * 2;
        uint32_t *tab = mem_calloc(cap, sizeof *tab);
        if (tab == NULL)
            return ERR_NOMEM;
        for (size_t i = 0; i < l->nnodes; i++)
            ledger__nidx_insert(tab, cap, l->nodes[i].name, (uint32_t)i + 1);
        mem_free(l->nidx);
        l->nidx = tab;
        l->nidx_cap = cap;
    }
    return 0;
}

static int ledger__node_register(ledger_t *l, const struct ledger_cmd *c)
{
    if (c->name[0] == '\0' || c->cpus_milli == 0 || c->mem_mb == 0)
        return ERR_INVAL;
    struct ledger_node *n = ledger__node_find(l, c->name);
    if (n == NULL) {
        int rc = ledger__node_reserve(l);
        if (rc != 0)
            return rc;
        n = &l->nodes[l->nnodes];
        memset(n, 0, sizeof *n);
        memcpy(n->name, c->name, sizeof n->name);
        n->registered_ms = l->now;
        ledger__nidx_insert(l->nidx, l->nidx_cap, n->name, (uint32_t)++l->nnodes);
    }
    memcpy(n->rack, c->rack, sizeof n->rack);
    memcpy(n->address, c->address, sizeof n->address);
    n->cpus_milli = c->cpus_milli;
    n->mem_mb = c->mem_mb;
    n->boot_id = c->boot_id;
    if (n->liveness != LEDGER_NODE_UP) {
        n->liveness = LEDGER_NODE_UP;
        n->since_ms = l->now;
    }
    return 0;
}

static int ledger__node_liveness(ledger_t *l, const struct ledger_cmd *c)
{
    struct ledger_node *n = ledger__node_find(l, c->name);
    if (n == NULL)
        return ERR_NOTFOUND;
    if (c->state < LEDGER_NODE_UP || c->state > LEDGER_NODE_DOWN)
        return ERR_INVAL;
    if (n->liveness == c->state)
        return 0;
    if (c->state == LEDGER_NODE_DOWN)
        n->down_count++;
    n->liveness = c->state;
    n->since_ms = l->now;
    return 0;
}

/* ---- virtual clusters ---- */

struct ledger_vc *ledger__vc_find(const ledger_t *l, const char *name, size_t *idx)
{
    for (size_t i = 0; i < l->nvcs; i++) {
        if (strcmp(l->vcs[i].name, name) == 0) {
            if (idx != NULL)
                *idx = i;
            return &l->vcs[i];
        }
    }
    return NULL;
}

static int ledger__vc_set(ledger_t *l, const struct ledger_cmd *c, uint64_t *value)
{
    if (c->vc[0] == '\0' || c->count > LEDGER_MAX_TOKENS)
        return ERR_INVAL;
    size_t idx = 0;
    struct ledger_vc *vc = ledger__vc_find(l, c->vc, &idx);
    if (vc == NULL) {
        if (l->nvcs >= LEDGER_MAX_VCS)
            return ERR_FULL;
        if (l->nvcs == l->capvcs) {
            size_t cap = l->capvcs < 4 ? 4 : l->capvcs * 2;
            void *p = mem_reallocarray(l->vcs, cap, sizeof *l->vcs);
            if (p == NULL)
                return ERR_NOMEM;
            l->vcs = p;
            l->capvcs = cap;
        }
        idx = l->nvcs++;
        vc = &l->vcs[idx];
        memset(vc, 0, sizeof *vc);
        memcpy(vc->name, c->vc, sizeof vc->name);
    }
    vc->capacity = c->count;
    vc->token_cpu_milli = c->cpus_milli != 0 ? c->cpus_milli : 1000;
    vc->token_mem_mb = c->mem_mb != 0 ? c->mem_mb : ARBITER_TOKEN_MEM_MB_DEFAULT;
    /* a shrinking capacity is arbitrated like any change: minimums in EDF order first, so the
     * invariant granted <= capacity holds at every index of the log */
    ledger__arbitrate(l, idx, 0);
    *value = vc->capacity;
    return 0;
}

/* ---- jobs ---- */

int ledger_apply(ledger_t *l, const struct ledger_cmd *c, int64_t now, struct ledger_result *res)
{
    struct ledger_result r = {0, 0, 0};
    if (c->key != 0 && ledger_idem_lookup(l, c->key, &r)) {
        if (res != NULL)
            *res = r;
        return r.code;
    }
    if (now > l->now)
        l->now = now;
    switch (c->type) {
    case LEDGER_CMD_NODE_REGISTER:
        r.code = ledger__node_register(l, c);
        break;
    case LEDGER_CMD_NODE_LIVENESS:
        r.code = ledger__node_liveness(l, c);
        break;
    case LEDGER_CMD_NODE_DRAIN: {
        struct ledger_node *n = ledger__node_find(l, c->name);
        if (n == NULL)
            r.code = ERR_NOTFOUND;
        else
            n->draining = c->count != 0;
        break;
    }
    case LEDGER_CMD_NODE_OUTCOME: {
        struct ledger_node *n = ledger__node_find(l, c->name);
        if (n == NULL) {
            r.code = ERR_NOTFOUND;
        } else if (c->ok > UINT32_MAX || c->failed > UINT32_MAX) {
            r.code = ERR_RANGE;
        } else {
            n->tasks_ok += c->ok;
            n->tasks_failed += c->failed;
        }
        break;
    }
    case LEDGER_CMD_VC_SET:
        r.code = ledger__vc_set(l, c, &r.value);
        break;
    case LEDGER_CMD_JOB_REGISTER:
        r.code = ledger__job_register(l, c, &r);
        break;
    case LEDGER_CMD_TICK:
        r.code = ledger__tick(l, &r.value);
        break;
    case LEDGER_CMD_RECUR_ADD:
    case LEDGER_CMD_RECUR_PAUSE:
    case LEDGER_CMD_RECUR_REMOVE:
    case LEDGER_CMD_RECUR_ACCEPT:
    case LEDGER_CMD_RECUR_FIRE:
    case LEDGER_CMD_RECUR_NOTE:
    case LEDGER_CMD_RECUR_MODEL:
        r.code = ledger__recur_cmd(l, c, &r);
        break;
    case LEDGER_CMD_ROLE_SET:
    case LEDGER_CMD_GRANT_SET:
    case LEDGER_CMD_QUOTA_SET:
    case LEDGER_CMD_AUDIT:
        r.code = ledger__tenant_cmd(l, c, &r);
        break;
    default:
        r.code = ledger__job_cmd(l, c, &r.value);
        break;
    }
    if (r.code != 0 && r.code != ERR_ADMISSION && r.code != ERR_QUOTA)
        r.value = r.aux = 0;
    ledger__audit_cmd(l, c, &r); /* issue 27 */
    if (c->type == LEDGER_CMD_JOB_END && r.code == ERR_STATE && c->token_ms > 0)
        ledger__usage_amend(l, c); /* issue 25: a cancelled job's usage, from its JM */
    if (c->key != 0 && r.code != ERR_NOMEM)
        ledger__idem_put(l, c->key, &r);
    if (res != NULL)
        *res = r;
    return r.code;
}

/* ---- queries ---- */

int64_t ledger_now(const ledger_t *l)
{
    return l->now;
}

uint64_t ledger_applied_index(const ledger_t *l)
{
    return l->applied;
}

void ledger_set_applied_index(ledger_t *l, uint64_t index)
{
    l->applied = index;
}

size_t ledger_node_count(const ledger_t *l)
{
    return l->nnodes;
}

const struct ledger_node *ledger_node_at(const ledger_t *l, size_t i)
{
    return i < l->nnodes ? &l->nodes[i] : NULL;
}

const struct ledger_node *ledger_node_find(const ledger_t *l, const char *name)
{
    return ledger__node_find(l, name);
}

double ledger_node_psucc(const struct ledger_node *n)
{
    double ok = (double)n->tasks_ok;
    return (ok + 1.0) / (ok + (double)n->tasks_failed + (double)n->down_count + 2.0);
}

const char *ledger_node_state_name(const struct ledger_node *n)
{
    if (n->liveness == LEDGER_NODE_DOWN)
        return "down";
    if (n->draining)
        return "draining";
    return n->liveness == LEDGER_NODE_SUSPECT ? "suspect" : "up";
}

size_t ledger_vc_count(const ledger_t *l)
{
    return l->nvcs;
}

const struct ledger_vc *ledger_vc_at(const ledger_t *l, size_t i)
{
    return i < l->nvcs ? &l->vcs[i] : NULL;
}

const struct ledger_vc *ledger_vc_find(const ledger_t *l, const char *name)
{
    return ledger__vc_find(l, name, NULL);
}

size_t ledger_job_count(const ledger_t *l)
{
    return l->njobs;
}

const struct ledger_job *ledger_job_at(const ledger_t *l, size_t i)
{
    return i < l->njobs ? &l->jobs[i] : NULL;
}

const struct ledger_job *ledger_job_find(const ledger_t *l, uint64_t id)
{
    return ledger__job_find(l, id, NULL);
}

const char *ledger_job_state_name(uint8_t state)
{
    static const char *const names[] = {"?", "active", "done", "failed", "cancelled", "expired"};
    return state <= LEDGER_JOB_EXPIRED ? names[state] : "?";
}

int64_t ledger_next_expiry(const ledger_t *l)
{
    int64_t t = INT64_MAX;
    for (size_t i = 0; i < l->njobs; i++) {
        if (l->jobs[i].state == LEDGER_JOB_ACTIVE && l->jobs[i].lease_expiry_ms < t)
            t = l->jobs[i].lease_expiry_ms;
    }
    return t;
}

int ledger_check(const ledger_t *l, char *msg, size_t cap)
{
    uint64_t sum[LEDGER_MAX_VCS] = {0};
    size_t finished = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        if (j->vc >= l->nvcs)
            return err_fmt(msg, cap, ERR_STATE, "job %llu: bad virtual cluster",
                           (unsigned long long)j->id);
        if (i > 0 && l->jobs[i - 1].id >= j->id)
            return err_fmt(msg, cap, ERR_STATE, "jobs out of order at %zu", i);
        if (j->state != LEDGER_JOB_ACTIVE) {
            finished++;
            if (j->tokens != 0)
                return err_fmt(msg, cap, ERR_STATE, "job %llu: finished but holds %u tokens",
                               (unsigned long long)j->id, j->tokens);
        }
        sum[j->vc] += j->tokens;
    }
    if (finished != l->nfinished)
        return err_fmt(msg, cap, ERR_STATE, "finished count %zu != %zu", finished, l->nfinished);
    for (size_t v = 0; v < l->nvcs; v++) {
        if (sum[v] != l->vcs[v].granted)
            return err_fmt(msg, cap, ERR_STATE, "vc %s: granted %u != sum of grants %llu",
                           l->vcs[v].name, l->vcs[v].granted, (unsigned long long)sum[v]);
        if (l->vcs[v].granted > l->vcs[v].capacity)
            return err_fmt(msg, cap, ERR_STATE, "vc %s: granted %u > capacity %u", l->vcs[v].name,
                           l->vcs[v].granted, l->vcs[v].capacity);
    }
    return 0;
}
