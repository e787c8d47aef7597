/* ledger.c - the RM's replicated state: nodes, virtual clusters, jobs, tokens, leases. */
#include "rm/ledger.h"
#include "rm/ledger_internal.h"

#include "common/err.h"
#include "common/mem.h"

#include <math.h>
#include <stdio.h>
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

static void ledger__job_set_tokens(ledger_t *l, struct ledger_job *j, uint32_t tokens)
{
    struct ledger_vc *vc = &l->vcs[j->vc];
    if (j->held_since_ms > 0 && l->now > j->held_since_ms) /* issue 27: tokens x time held */
        j->held_ms += (uint64_t)j->tokens * (uint64_t)(l->now - j->held_since_ms);
    j->held_since_ms = l->now;
    vc->granted = vc->granted - j->tokens + tokens;
    j->tokens = tokens;
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

static struct ledger_job *ledger__job_find(const ledger_t *l, uint64_t id, size_t *pos)
{
    size_t lo = 0, hi = l->njobs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->jobs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pos != NULL)
        *pos = lo;
    return lo < l->njobs && l->jobs[lo].id == id ? &l->jobs[lo] : NULL;
}

static void ledger__job_where(struct ledger_job *j, const struct ledger_cmd *c);

/* end: the JOB_END that ended it, NULL when its lease ran out */
static void ledger__job_finish(ledger_t *l, struct ledger_job *j, uint8_t state,
                               const struct ledger_cmd *end)
{
    ledger__job_set_tokens(l, j, 0);
    j->wanted = 0;
    j->minimum = 0;
    j->state = state;
    j->finished_ms = l->now;
    if (end != NULL && end->started_ms > 0 && end->started_ms <= l->now)
        j->started_ms = end->started_ms;
    /* The error model learns where the fluid model describes the run: an admitted deadline
     * job (ahead of everything the model leaves out), or a job that had its virtual cluster to
     * itself. A job without a deadline, or best effort, behind admitted ones and beside its
     * peers measures the sharing, not the model. */
    bool modelled = j->deadline_ms != 0 && !j->best_effort ? true : !j->shared;
    if (state == LEDGER_JOB_DONE && j->pred_p50_ms > 0 && modelled && !j->reserved_run)
        calib_add(&l->calib, (double)(j->finished_ms - j->submitted_ms), (double)j->pred_p50_ms);
    l->nfinished++;
    ledger__history_job(l, j, end);
    ledger__usage_job(l, j, end); /* issue 25: accounting */
}

/* Forgets the oldest finished jobs beyond LEDGER_JOBS_KEEP. */
static void ledger__job_gc(ledger_t *l)
{
    size_t w = 0, drop = l->nfinished > LEDGER_JOBS_KEEP ? l->nfinished - LEDGER_JOBS_KEEP : 0;
    if (drop == 0)
        return;
    for (size_t r = 0; r < l->njobs; r++) {
        if (drop > 0 && l->jobs[r].state != LEDGER_JOB_ACTIVE) {
            drop--;
            l->nfinished--;
            continue;
        }
        l->jobs[w++] = l->jobs[r];
    }
    l->njobs = w;
}

int ledger__jobs_reserve(ledger_t *l, size_t cap)
{
    if (cap <= l->capjobs)
        return 0;
    void *p = mem_reallocarray(l->jobs, cap, sizeof *l->jobs);
    if (p == NULL)
        return ERR_NOMEM;
    l->jobs = p;
    void *a = mem_reallocarray(l->arb, cap, sizeof *l->arb);
    if (a != NULL)
        l->arb = a;
    void *o = mem_reallocarray(l->arb_order, cap, sizeof *l->arb_order);
    if (o != NULL)
        l->arb_order = o;
    void *q = mem_reallocarray(l->arb_pos, cap, sizeof *l->arb_pos);
    if (q != NULL)
        l->arb_pos = q;
    if (a == NULL || o == NULL || q == NULL)
        return ERR_NOMEM; /* the jobs array grew: harmless, capjobs stays */
    l->capjobs = cap;
    return 0;
}

static double ledger__done(const struct ledger_job *j)
{
    return 1.0 - (double)(j->done_permille > 1000 ? 1000 : j->done_permille) / 1000.0;
}

/* What is left of a job's registered shape, in seconds and token-seconds. */
static struct arbiter_shape ledger__remain(const struct ledger_job *j)
{
    double left = ledger__done(j);
    struct arbiter_shape s = {.work = (double)j->work_ms / 1000.0 * left,
                              .work_sd = (double)j->work_sd_ms / 1000.0 * left,
                              .path = (double)j->path_ms / 1000.0 * left,
                              .path_sd = (double)j->path_sd_ms / 1000.0 * left,
                              .width = j->width,
                              .has_alpha = j->has_alpha,
                              .alpha = (double)j->alpha_milli / 1000.0};
    return s;
}

/* The conservative scale every shape gets now: the error model's quantile factor. */
static double ledger__scale(const ledger_t *l)
{
    struct calib_factors f;
    calib_factors(&l->calib, &f);
    return f.hi;
}

void ledger_calibration(const ledger_t *l, struct calib_factors *out)
{
    calib_factors(&l->calib, out);
}

int ledger_set_policy(ledger_t *l, int policy)
{
    if (policy < ARBITER_FCFS || policy > ARBITER_MINEDF_WC)
        return ERR_INVAL;
    l->policy_set = 1;
    l->policy = policy;
    return 0;
}

/* A deadline job's minimum: what its Jockey controller needs when it has a profile (or no
 * registered shape): its raw allocation when its JM said one (issue 25: the request adds the
 * controller's hysteresis, which a job granted less kept claiming), else its request; without
 * a profile MinEDF's from ARIA's bounds over what is left and the time left. */
static uint32_t ledger__minimum(const ledger_t *l, const struct ledger_job *j)
{
    if (j->deadline_ms == 0)
        return 0;
    bool asks = j->work_ms == 0 || j->width == 0 || (j->has_profile && j->asked);
    struct arbiter_shape s = asks ? (struct arbiter_shape){0} : ledger__remain(j);
    return arbiter_deadline_minimum(asks, j->raw, j->wanted, asks ? NULL : &s,
                                    (double)(j->deadline_ms - l->now) / 1000.0);
}

void ledger__arbitrate(ledger_t *l, size_t vci, uint64_t cause)
{
    struct ledger_vc *vc = &l->vcs[vci];
    size_t n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        if (j->vc != vci || j->state != LEDGER_JOB_ACTIVE)
            continue;
        struct arbiter_job *a = &l->arb[n];
        memset(a, 0, sizeof *a);
        a->id = j->id;
        a->deadline = j->deadline_ms;
        a->best_effort = j->best_effort;
        a->wanted = j->wanted;
        a->minimum = ledger__minimum(l, j);
        /* spare only up to what it can use now, when its JM says (a narrow phase leaves the
         * rest to others), never below its minimum; a job that registered no shape (width 0)
         * has no spare beyond what it asks for */
        a->width = j->width;
        if (j->demand != 0 && j->deadline_ms != 0 && a->width != 0) {
            uint32_t now_use = j->demand - 1;
            now_use = now_use > a->minimum ? now_use : a->minimum;
            a->width = a->width < now_use ? a->width : now_use;
        }
        a->held = j->tokens;
        a->weight = j->weight_milli != 0 ? (double)j->weight_milli / 1000.0 : 1.0;
        if (j->recur != 0)
            ledger__recur_arb(l, j, a); /* Morpheus §6-7: its reservation, reprovisioning */
        l->arb_pos[n++] = i;
    }
    vc->arbitrated_ms = l->now;
    enum arbiter_policy pol = l->policy_set ? (enum arbiter_policy)l->policy : ARBITER_MINEDF_WC;
    arbiter_allocate_plan(pol, vc->capacity, ledger__held_back(l, vci), l->arb, n, l->arb_order);
    if (ledger__quota_trim(l, vci, l->arb, l->arb_pos, n)) /* issue 27: tokens held at once */
        arbiter_allocate_plan(pol, vc->capacity, ledger__held_back(l, vci), l->arb, n,
                              l->arb_order);
    vc->spare = 0;
    for (size_t k = 0; k < n; k++) {
        struct ledger_job *j = &l->jobs[l->arb_pos[k]];
        const struct arbiter_job *a = &l->arb[k];
        uint32_t was = j->tokens - (j->minimum < j->tokens ? j->minimum : j->tokens);
        uint32_t now = a->grant - a->min_part;
        if (now > was)
            vc->spare_grants += now - was;
        else if (now < was && j->id != cause)
            vc->spare_reclaims += was - now;
        ledger__job_set_tokens(l, j, a->grant);
        j->minimum = a->min_part;
        if (a->extra > 0 && a->min_part > a->reserved &&
            a->min_part - a->reserved > j->reprovisioned)
            j->reprovisioned = a->min_part - a->reserved;
        vc->spare += now;
    }
}

/* The admitted deadline jobs of virtual cluster `vci` as admission sees them at `now`: a new
 * array the caller frees (NULL when none), or ERR_NOMEM. */
static int ledger__load(const ledger_t *l, size_t vci, int64_t now, struct arbiter_load **out,
                        size_t *nout)
{
    struct arbiter_load *load = NULL;
    size_t n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        n += j->vc == vci && j->state == LEDGER_JOB_ACTIVE && j->deadline_ms != 0 &&
             !j->best_effort && j->work_ms != 0 && !j->reserved_run;
    }
    if (n > 0 && (load = mem_alloc(n * sizeof *load)) == NULL)
        return ERR_NOMEM;
    n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        /* a run with a reservation is covered by the plan */
        if (j->vc != vci || j->state != LEDGER_JOB_ACTIVE || j->deadline_ms == 0 ||
            j->best_effort || j->work_ms == 0 || j->reserved_run)
            continue;
        load[n].id = j->id;
        load[n].deadline = (double)(j->deadline_ms - now) / 1000.0;
        load[n].remain = ledger__remain(j);
        load[n].remain.scale = ledger__scale(l);
        n++;
    }
    *out = load;
    *nout = n;
    return 0;
}

static struct arbiter_shape ledger__shape(const ledger_t *l, const struct ledger_cmd *c)
{
    struct arbiter_shape s = {.work = (double)c->work_ms / 1000.0,
                              .work_sd = (double)c->work_sd_ms / 1000.0,
                              .path = (double)c->path_ms / 1000.0,
                              .path_sd = (double)c->path_sd_ms / 1000.0,
                              .width = c->width};
    s.has_alpha = (c->flags & LEDGER_JOB_HAS_ALPHA) != 0;
    s.alpha = (double)(c->alpha_milli > 1000 ? 1000 : c->alpha_milli) / 1000.0;
    s.scale = ledger__scale(l);
    return s;
}

/* MRM's admission check of a new job against the admitted ones of its cluster: with a
 * deadline (c->deadline_ms != 0) the verdict (ERR_ADMISSION with the earliest feasible finish
 * in r), else only the prediction. *q receives the quote (zeroed when there is nothing to judge
 * by). */
static int ledger__admit(ledger_t *l, const struct ledger_cmd *c, size_t vci,
                         struct ledger_result *r, struct arbiter_quote *q_out)
{
    struct arbiter_load *load = NULL;
    size_t n = 0;
    if (ledger__load(l, vci, l->now, &load, &n) != 0)
        return ERR_NOMEM;
    double *pt = NULL, *ptok = NULL;
    size_t pn = 0;
    if (ledger__plan_reserve(l, vci, l->now, &pt, &ptok, &pn) != 0) {
        mem_free(load);
        return ERR_NOMEM;
    }
    struct arbiter_reserve plan = {pt, ptok, pn};
    struct arbiter_shape s = ledger__shape(l, c);
    struct arbiter_quote q;
    double d = c->deadline_ms != 0 ? (double)(c->deadline_ms - l->now) / 1000.0 : 0;
    int rc = arbiter_admit_plan((double)c->k_milli / 1000.0, l->vcs[vci].capacity,
                                pn > 0 ? &plan : NULL, load, n, &s, d, &q);
    mem_free(load);
    mem_free(pt);
    mem_free(ptok);
    memset(q_out, 0, sizeof *q_out);
    if (rc != 0)
        return rc == ERR_NOMEM ? rc : 0; /* nothing to judge by: admitted unchecked */
    *q_out = q;
    if (c->deadline_ms == 0 || q.admit)
        return 0;
    if (!isfinite(q.eff) || !isfinite(q.eff_p50)) {
        r->value = r->aux = 0; /* the plan leaves it nothing: no finish to offer */
        return ERR_ADMISSION;
    }
    struct calib_factors f;
    calib_factors(&l->calib, &f);
    r->value = (uint64_t)ceil(q.eff * 1000.0);
    r->aux = (uint64_t)ceil(q.eff_p50 * f.p50 * 1000.0);
    return ERR_ADMISSION;
}

int ledger_quote(const ledger_t *l, const struct ledger_cmd *c, int64_t now,
                 struct arbiter_quote *q, struct arbiter_price *curve, size_t *ncurve)
{
    size_t vci = 0;
    if (ledger__vc_find(l, c->vc, &vci) == NULL)
        return ERR_NOTFOUND;
    struct arbiter_load *load = NULL;
    size_t n = 0;
    if (ledger__load(l, vci, now, &load, &n) != 0)
        return ERR_NOMEM;
    double *pt = NULL, *ptok = NULL;
    size_t pn = 0;
    if (ledger__plan_reserve(l, vci, now, &pt, &ptok, &pn) != 0) {
        mem_free(load);
        return ERR_NOMEM;
    }
    struct arbiter_reserve plan = {pt, ptok, pn};
    struct arbiter_shape s = ledger__shape(l, c);
    double k = (double)c->k_milli / 1000.0;
    uint32_t cap = l->vcs[vci].capacity;
    double d = c->deadline_ms != 0 ? (double)(c->deadline_ms - now) / 1000.0 : 0;
    int rc = arbiter_admit_plan(k, cap, pn > 0 ? &plan : NULL, load, n, &s, d, q);
    mem_free(pt);
    mem_free(ptok);
    int np = rc == 0 ? arbiter_price_curve(k, cap, load, n, &s, curve, *ncurve) : rc;
    mem_free(load);
    *ncurve = np > 0 ? (size_t)np : 0;
    return rc != 0 ? rc : np < 0 ? np : 0;
}

static int ledger__job_register(ledger_t *l, const struct ledger_cmd *c, struct ledger_result *r)
{
    size_t vci = 0;
    if (c->name[0] == '\0' || c->deadline_ms < 0 || c->flags > 7 || c->alpha_milli > 1000)
        return ERR_INVAL;
    if (ledger__vc_find(l, c->vc, &vci) == NULL)
        return ERR_NOTFOUND;
    int64_t lease = c->lease_ms != 0 ? c->lease_ms : LEDGER_LEASE_DEFAULT;
    if (lease < LEDGER_LEASE_MIN_MS || lease > LEDGER_LEASE_MAX_MS)
        return ERR_RANGE;
    if (c->width > LEDGER_MAX_TOKENS || c->work_ms > (1ull << 52) || c->work_sd_ms > (1ull << 52) ||
        c->path_ms > (1ull << 52) || c->path_sd_ms > (1ull << 52) || c->weight_milli > 1000000000)
        return ERR_RANGE;
    if (c->text_len > LEDGER_FILES_MAX)
        return ERR_RANGE;
    bool reserved = false, best_effort = (c->flags & LEDGER_JOB_BEST_EFFORT) != 0;
    int64_t deadline = c->deadline_ms;
    int rc = ledger__recur_check(l, c, &reserved, &deadline);
    if (rc != 0)
        return rc;
    /* issue 27: the user's quotas in this cluster, before admission; a job needs its MinEDF
       minimum at once when it has a deadline and a shape, else one token */
    uint32_t need = 1;
    if (deadline != 0 && !best_effort && c->work_ms != 0 && c->width != 0 && deadline > l->now) {
        struct arbiter_shape sh = ledger__shape(l, c);
        uint32_t m = arbiter_min_tokens(&sh, (double)(deadline - l->now) / 1000.0);
        need = m > need ? m : need;
    }
    rc = ledger__quota_check(l, c, vci, need, r);
    if (rc != 0)
        return rc;
    struct arbiter_quote q;
    memset(&q, 0, sizeof q);
    if (c->work_ms != 0 && c->width != 0 && !reserved) {
        /* every job with a shape is predicted, so that its outcome calibrates the model; only
         * an admitted deadline is judged */
        struct ledger_cmd a = *c;
        a.deadline_ms = deadline != 0 && !best_effort ? deadline : 0;
        rc = ledger__admit(l, &a, vci, r, &q);
        if (rc == ERR_ADMISSION && c->recurring[0] != '\0') {
            /* a run of a recurring job without a reservation yet (no model, or no room in
             * the plan) still runs, without admission, rather than miss its period */
            best_effort = true;
            r->value = r->aux = 0;
            rc = 0;
        }
        if (rc != 0)
            return rc;
    }
    ledger__job_gc(l);
    if (l->njobs >= LEDGER_MAX_JOBS)
        return ERR_FULL;
    if (l->njobs == l->capjobs && ledger__jobs_reserve(l, l->capjobs < 16 ? 16 : l->capjobs * 2))
        return ERR_NOMEM;
    bool shared = false;
    for (size_t i = 0; i < l->njobs; i++) {
        struct ledger_job *o = &l->jobs[i];
        if (o->vc == vci && o->state == LEDGER_JOB_ACTIVE) {
            o->shared = true;
            shared = true;
        }
    }
    struct ledger_job *j = &l->jobs[l->njobs++];
    memset(j, 0, sizeof *j);
    j->shared = shared;
    j->id = l->next_job_id++;
    memcpy(j->name, c->name, sizeof j->name);
    j->vc = (uint32_t)vci;
    j->state = LEDGER_JOB_ACTIVE;
    j->submitted_ms = l->now;
    j->deadline_ms = deadline;
    j->lease_ms = lease;
    j->lease_expiry_ms = l->now + lease;
    j->best_effort = best_effort;
    j->reserved_run = reserved;
    j->period = -1;
    j->epoch = 1;
    ledger__job_where(j, c);
    j->has_profile = (c->flags & LEDGER_JOB_HAS_PROFILE) != 0;
    j->weight_milli = c->weight_milli;
    j->work_ms = c->work_ms;
    j->work_sd_ms = c->work_sd_ms;
    j->path_ms = c->path_ms;
    j->path_sd_ms = c->path_sd_ms;
    j->width = c->width;
    j->has_alpha = (c->flags & LEDGER_JOB_HAS_ALPHA) != 0;
    j->alpha_milli = j->has_alpha ? c->alpha_milli : 0;
    if (isfinite(q.finish_p50) && q.finish_p50 > 0 && isfinite(q.finish) && q.finish < 1e9) {
        j->pred_p50_ms = (int64_t)ceil(q.finish_p50 * 1000.0);
        j->pred_bound_ms = (int64_t)ceil(q.finish * 1000.0);
    }
    memcpy(j->user, c->user, sizeof j->user);
    j->held_since_ms = l->now;
    if (deadline != 0 && !best_effort && c->work_ms != 0 && c->width != 0 && isfinite(q.eff)) {
        /* issue 25: what the admitted deadline costs (MRM eq. 13's first term) */
        struct arbiter_shape sh = ledger__shape(l, c);
        double p = arbiter_price_at(&sh, q.eff, (double)(deadline - l->now) / 1000.0);
        j->price_milli = isfinite(p) && p > 0 && p < 1e12 ? (uint64_t)(p * 1000.0 + 0.5) : 0;
    }
    r->value = j->id;
    if (c->recurring[0] != '\0')
        ledger__recur_registered(l, j, c);
    ledger__inputs_read(l, c);
    ledger__arbitrate(l, vci, j->id); /* its minimum is reserved from now on */
    return 0;
}

/* Where the job's JM runs, when the command says (restarts, issue 14). */
static void ledger__job_where(struct ledger_job *j, const struct ledger_cmd *c)
{
    if (c->text2_len > 0 && c->text2_len < sizeof j->job_dir) {
        memcpy(j->job_dir, c->text2, c->text2_len);
        j->job_dir[c->text2_len] = '\0';
    }
    size_t alen = strlen(c->address);
    if (alen > 0 && alen < sizeof j->host)
        memcpy(j->host, c->address, alen + 1);
    if (c->boot_id != 0 && c->boot_id <= UINT32_MAX)
        j->jm_pid = (uint32_t)c->boot_id;
}

/* JOB_RESUME (issue 14): a JM started again for the job. A job that ended for good is not
 * resumed; an expired one (its lease lapsed) comes back to life, its history record undone. */
static int ledger__job_resume(ledger_t *l, const struct ledger_cmd *c, uint64_t *value)
{
    struct ledger_job *j = ledger__job_find(l, c->job, NULL);
    if (j == NULL)
        return ERR_NOTFOUND;
    if (j->state != LEDGER_JOB_ACTIVE && j->state != LEDGER_JOB_EXPIRED)
        return ERR_STATE;
    if (c->count != 0 && j->restarts >= c->count) {
        char why[LEDGER_REASON_MAX];
        snprintf(why, sizeof why, "its job manager was started again %u times (the limit)",
                 j->restarts);
        if (j->state == LEDGER_JOB_EXPIRED) {
            j->state = LEDGER_JOB_FAILED;
            ledger__history_refail(l, j, why);
        } else {
            struct ledger_cmd end;
            ledger_cmd_init(&end, LEDGER_CMD_JOB_END);
            end.text = why;
            end.text_len = (uint32_t)strlen(why);
            ledger__job_finish(l, j, LEDGER_JOB_FAILED, &end);
            ledger__arbitrate(l, j->vc, j->id);
        }
        return ERR_FULL;
    }
    if (j->state == LEDGER_JOB_EXPIRED) {
        ledger__history_unrecord(l, j);
        j->state = LEDGER_JOB_ACTIVE;
        j->finished_ms = 0;
        l->nfinished--;
    }
    j->epoch++;
    j->restarts++;
    ledger__job_where(j, c);
    j->lease_expiry_ms = l->now + j->lease_ms;
    j->asked = false; /* its new JM asks again; until then MinEDF's minimum stands */
    ledger__arbitrate(l, j->vc, j->id);
    *value = j->epoch;
    return 0;
}

static struct ledger_job *ledger__active_job(ledger_t *l, uint64_t id, int *rc)
{
    struct ledger_job *j = ledger__job_find(l, id, NULL);
    *rc = j == NULL ? ERR_NOTFOUND : j->state != LEDGER_JOB_ACTIVE ? ERR_STATE : 0;
    return *rc == 0 ? j : NULL;
}

static int ledger__tick(ledger_t *l, uint64_t *value)
{
    uint64_t n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        struct ledger_job *j = &l->jobs[i];
        if (j->state == LEDGER_JOB_ACTIVE && j->lease_expiry_ms <= l->now) {
            ledger__job_finish(l, j, LEDGER_JOB_EXPIRED, NULL);
            n++;
        }
    }
    /* a tick is also when MinEDF's minimums follow the clock: recompute them all */
    for (size_t v = 0; v < l->nvcs; v++)
        ledger__arbitrate(l, v, 0);
    ledger__job_gc(l);
    *value = n;
    return 0;
}

static int ledger__job_cmd(ledger_t *l, const struct ledger_cmd *c, uint64_t *value)
{
    int rc = 0;
    if (c->type == LEDGER_CMD_JOB_RESUME)
        return ledger__job_resume(l, c, value);
    struct ledger_job *e = ledger__job_find(l, c->job, NULL);
    if (c->type == LEDGER_CMD_JOB_END && e != NULL && e->state == LEDGER_JOB_EXPIRED &&
        c->state == LEDGER_JOB_FAILED) {
        /* the leader gives up on a job whose JM is gone for good */
        char why[LEDGER_REASON_MAX];
        size_t n = c->text_len < sizeof why - 1 ? c->text_len : sizeof why - 1;
        memcpy(why, c->text != NULL ? c->text : "", n);
        why[n] = '\0';
        e->state = LEDGER_JOB_FAILED;
        ledger__history_refail(l, e, why);
        return 0;
    }
    struct ledger_job *j = ledger__active_job(l, c->job, &rc);
    if (j == NULL)
        return rc;
    size_t vci = j->vc;
    uint64_t id = j->id;
    switch (c->type) {
    case LEDGER_CMD_JOB_END:
        if (c->state < LEDGER_JOB_DONE || c->state > LEDGER_JOB_CANCELLED)
            return ERR_INVAL;
        ledger__job_finish(l, j, c->state, c);
        ledger__arbitrate(l, vci, id); /* its tokens go to the others */
        return 0;
    case LEDGER_CMD_JOB_DEADLINE: {
        if (c->deadline_ms < 0)
            return ERR_INVAL;
        /* issue 25: a tighter deadline (or a first one) goes through admission against the
           other admitted jobs; a looser one, or none, always passes */
        bool tighter =
            c->deadline_ms != 0 && (j->deadline_ms == 0 || c->deadline_ms < j->deadline_ms);
        /* k_milli comes with entry version 5: an older entry's change is applied as it was */
        if (tighter && c->k_milli != 0 && !j->best_effort && j->work_ms != 0 && j->width != 0 &&
            !j->reserved_run) {
            struct arbiter_shape rem = ledger__remain(j);
            struct ledger_cmd a;
            ledger_cmd_init(&a, LEDGER_CMD_JOB_REGISTER);
            a.deadline_ms = c->deadline_ms;
            a.k_milli = c->k_milli;
            a.work_ms = (uint64_t)(rem.work * 1000.0);
            a.work_sd_ms = (uint64_t)(rem.work_sd * 1000.0);
            a.path_ms = (uint64_t)(rem.path * 1000.0);
            a.path_sd_ms = (uint64_t)(rem.path_sd * 1000.0);
            a.width = j->width;
            a.flags = j->has_alpha ? LEDGER_JOB_HAS_ALPHA : 0;
            a.alpha_milli = j->alpha_milli;
            int64_t old = j->deadline_ms;
            j->deadline_ms = 0; /* judged as a newcomer: not part of the load it is judged by */
            struct ledger_result ar = {0, 0, 0};
            struct arbiter_quote q;
            int arc = a.work_ms > 0 ? ledger__admit(l, &a, vci, &ar, &q) : 0;
            j->deadline_ms = old;
            if (arc != 0) {
                *value = ar.value; /* the earliest feasible finish, ms from now */
                return arc;
            }
        }
        j->deadline_ms = c->deadline_ms;
        break;
    }
    case LEDGER_CMD_TOKEN_REQUEST:
        if (c->count > LEDGER_MAX_TOKENS)
            return ERR_RANGE;
        j->wanted = c->count;
        j->raw = c->raw <= LEDGER_MAX_TOKENS ? c->raw : 0;
        j->asked = true;
        j->lease_expiry_ms = l->now + j->lease_ms;
        break;
    case LEDGER_CMD_TOKEN_RELEASE:
        j->wanted = c->count < j->tokens ? j->tokens - c->count : 0;
        j->asked = true;
        break;
    case LEDGER_CMD_LEASE_RENEW:
        if (c->epoch != 0 && c->epoch < j->epoch)
            return ERR_FENCED; /* a stale JM's renewal changes nothing (issue 14) */
        if (c->lease_ms != 0 &&
            (c->lease_ms < LEDGER_LEASE_MIN_MS || c->lease_ms > LEDGER_LEASE_MAX_MS))
            return ERR_RANGE;
        if (c->done_permille > 1000 || c->eta_ms < 0 || c->eta_p95_ms < 0 ||
            c->count > LEDGER_MAX_TOKENS + 1)
            return ERR_RANGE;
        if (c->lease_ms != 0)
            j->lease_ms = c->lease_ms; /* the JM asked for another lease length */
        j->lease_expiry_ms = l->now + j->lease_ms;
        ledger__job_where(j, c);
        j->done_permille = c->done_permille;
        j->eta_ms = c->eta_ms;
        j->eta_p95_ms = c->eta_p95_ms;
        /* Most renewals change nothing the arbiter reads: the same demand and a minimum it
         * already has. Skipping them keeps a renewal O(1) instead of a sort of the cluster's
         * jobs; one whose MinEDF minimum moved with the clock or its progress arbitrates. */
        if (j->demand == c->count && ledger__minimum(l, j) == j->minimum &&
            !ledger__plan_moved(l, vci, l->vcs[vci].arbitrated_ms, l->now)) {
            *value = j->tokens;
            return 0;
        }
        j->demand = c->count;
        break;
    default:
        return ERR_INVAL;
    }
    ledger__arbitrate(l, vci, id);
    *value = ledger__job_find(l, id, NULL)->tokens;
    return 0;
}

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
