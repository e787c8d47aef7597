/* place.c - a JM scheduling round: candidates, estimates, stable matching (see place.h). */
#include "jm/place.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

struct place__stage {
    uint32_t *nodes; /* sorted */
    size_t n, cap;
};

/* What the JM keeps per node (cfg.fill) besides its room this round. */
struct place__node {
    uint32_t room_stamp; /* the round `room` was computed in */
    double claim_cpu, claim_mem;
    int64_t claim_ms; /* the last claim's time, INT64_MIN for none */
    /* the job's regular tasks queued there, their cores and highest priority
       (place_queued_update) */
    double queued_cpu, queued_prio;
};

struct place {
    const struct spec *spec;
    struct place_config cfg;
    struct estimator_task *tasks;
    struct estimator_input *inputs;
    int32_t *nodes;
    struct place__stage *stages;
    uint32_t *failed; /* per task: node of the last failed attempt, UINT32_MAX for none */
    matcher_t *m;
    /* scratch, grown on demand */
    size_t cap;
    size_t *off;
    struct matcher_cand *cand;
    struct estimate *est;
    struct matcher_match *match;
    uint32_t *cnodes;
    struct matcher_room *need; /* per batch task (cfg.fill) */
    size_t *prio_at;           /* per batch task: its match (place__priority_first) */
    /* per node (cfg.fill), nnode entries: room this round (stamped), claims since the view */
    size_t nnode;
    struct matcher_room *room; /* the matcher's input */
    struct place__node *ns;
    uint32_t stamp;
    int queued_any;       /* some queued_cpu is not 0 */
    uint32_t *queued_buf; /* place_queued_update: the queued tasks in task order */
    size_t queued_cap;
};

/* A matrix cell at most this many seconds counts as "starts now" (the PN's float cells). */
#define PLACE__ZERO_WAIT_S 0.001

void place_config_default(struct place_config *cfg)
{
    matcher_cand_config_default(&cfg->cand);
    cfg->max_iter = 3;
    cfg->max_cands = 64;
    cfg->fill = 0;
    cfg->hold_max_s = 0;
    cfg->age_waits = 0;
    cfg->yield = 0;
    cfg->priority_first = 0;
}

void place_config_daemon(struct place_config *cfg)
{
    place_config_default(cfg);
    cfg->fill = 1; /* a node with room for several tasks now takes them in one round */
    cfg->hold_max_s = PLACE_HOLD_MAX_S; /* late binding: place_hold */
    cfg->cand.all_nodes_max = PLACE_ALL_NODES_MAX;
    cfg->age_waits = 1;
    cfg->yield = 1;          /* tokens follow the free cores: place_yield */
    cfg->priority_first = 1; /* a core that starts work now goes to the highest priority */
}

const struct place_config *place_get_config(const place_t *p)
{
    return &p->cfg;
}

int place_hold(const struct place_config *cfg, const struct place_match *m, double ready_s)
{
    if (!(cfg->hold_max_s > 0))
        return 0;
    double w = m->est.w_s;
    if (!(w > PLACE_HOLD_WAIT_S))
        return 0;
    return ready_s < cfg->hold_max_s;
}

int place_yield(const struct place_config *cfg, const struct place_match *m)
{
    if (!cfg->yield)
        return 0;
    double w = m->est.w_s;
    return w >= 0 && w <= PLACE_HOLD_WAIT_S;
}

int place_new(const struct spec *spec, const struct place_config *cfg, place_t **out)
{
    *out = NULL;
    struct place_config def;
    if (cfg == NULL) {
        place_config_default(&def);
        cfg = &def;
    }
    if (spec == NULL || cfg->max_iter < 1 || cfg->max_cands < 1)
        return ERR_INVAL;
    place_t *p = mem_calloc(1, sizeof *p);
    if (p == NULL)
        return ERR_NOMEM;
    p->spec = spec;
    p->cfg = *cfg;
    size_t nin = 0, nnodes = 0;
    for (size_t i = 0; i < spec->ntasks; i++) {
        nin += spec->tasks[i].ninputs;
        for (size_t k = 0; k < spec->tasks[i].ninputs; k++)
            nnodes += spec->tasks[i].inputs[k].nnodes;
    }
    p->tasks = mem_calloc(spec->ntasks, sizeof *p->tasks);
    p->inputs = mem_calloc(nin + 1, sizeof *p->inputs);
    p->nodes = mem_calloc(nnodes + 1, sizeof *p->nodes);
    p->stages = mem_calloc(spec->nstages + 1, sizeof *p->stages);
    p->failed = mem_calloc(spec->ntasks, sizeof *p->failed);
    if (p->tasks == NULL || p->inputs == NULL || p->nodes == NULL || p->stages == NULL ||
        p->failed == NULL || matcher_new(16, &p->m) != 0) {
        place_destroy(&p);
        return ERR_NOMEM;
    }
    size_t ii = 0, ni = 0;
    for (size_t i = 0; i < spec->ntasks; i++) {
        const struct spec_task *st = &spec->tasks[i];
        p->failed[i] = UINT32_MAX;
        p->tasks[i] = (struct estimator_task){.stage = st->stage,
                                              .cpu = st->cpu,
                                              .mem_mb = (double)st->mem_mb,
                                              .runtime_s = st->runtime_s,
                                              .input_bytes = st->input_bytes,
                                              .inputs = &p->inputs[ii],
                                              .ninputs = st->ninputs,
                                              .file_bytes = st->file_bytes};
        for (size_t k = 0; k < st->ninputs; k++) {
            p->inputs[ii++] =
                (struct estimator_input){st->inputs[k].bytes, &p->nodes[ni], st->inputs[k].nnodes};
            for (size_t r = 0; r < st->inputs[k].nnodes; r++)
                p->nodes[ni++] = -1;
        }
    }
    *out = p;
    return 0;
}

void place_destroy(place_t **pp)
{
    if (pp == NULL || *pp == NULL)
        return;
    place_t *p = *pp;
    if (p->stages != NULL)
        for (size_t j = 0; j < p->spec->nstages; j++)
            mem_free(p->stages[j].nodes);
    mem_free(p->stages);
    mem_free(p->tasks);
    mem_free(p->inputs);
    mem_free(p->nodes);
    mem_free(p->failed);
    matcher_destroy(&p->m);
    mem_free(p->off);
    mem_free(p->cand);
    mem_free(p->est);
    mem_free(p->match);
    mem_free(p->cnodes);
    mem_free(p->need);
    mem_free(p->prio_at);
    mem_free(p->room);
    mem_free(p->ns);
    mem_free(p->queued_buf);
    mem_free(p);
    *pp = NULL;
}

int place_resolve(place_t *p, const view_t *view)
{
    const struct spec *s = p->spec;
    size_t ni = 0;
    for (size_t i = 0; i < s->ntasks; i++)
        for (size_t k = 0; k < s->tasks[i].ninputs; k++)
            for (size_t r = 0; r < s->tasks[i].inputs[k].nnodes; r++) {
                long idx = view_find(view, s->tasks[i].inputs[k].nodes[r]);
                p->nodes[ni++] = idx >= 0 && idx <= INT32_MAX ? (int32_t)idx : -1;
            }
    return matcher_reserve(p->m, view_count(view));
}

const struct estimator_task *place_task(const place_t *p, size_t task)
{
    return task < p->spec->ntasks ? &p->tasks[task] : NULL;
}

int place_note_cached(place_t *p, size_t stage, uint32_t node)
{
    if (stage >= p->spec->nstages)
        return ERR_RANGE;
    struct place__stage *st = &p->stages[stage];
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->nodes[mid] == node)
            return 0;
        if (st->nodes[mid] < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (st->n == st->cap) {
        size_t nc = st->cap == 0 ? 8 : st->cap * 2;
        uint32_t *nn = mem_reallocarray(st->nodes, nc, sizeof *nn);
        if (nn == NULL)
            return ERR_NOMEM;
        st->nodes = nn;
        st->cap = nc;
    }
    memmove(st->nodes + lo + 1, st->nodes + lo, (st->n - lo) * sizeof *st->nodes);
    st->nodes[lo] = node;
    st->n++;
    return 0;
}

void place_note_failed(place_t *p, size_t task, uint32_t node)
{
    if (task < p->spec->ntasks)
        p->failed[task] = node;
}

static int place__grow(place_t *p, size_t n)
{
    size_t nc = n * p->cfg.max_cands;
    if (n <= p->cap)
        return 0;
    size_t *off = mem_reallocarray(p->off, n + 1, sizeof *off);
    if (off == NULL)
        return ERR_NOMEM;
    p->off = off;
    struct matcher_cand *c = mem_reallocarray(p->cand, nc, sizeof *c);
    if (c == NULL)
        return ERR_NOMEM;
    p->cand = c;
    struct estimate *e = mem_reallocarray(p->est, nc, sizeof *e);
    if (e == NULL)
        return ERR_NOMEM;
    p->est = e;
    struct matcher_match *m = mem_reallocarray(p->match, n, sizeof *m);
    if (m == NULL)
        return ERR_NOMEM;
    p->match = m;
    uint32_t *cn = mem_reallocarray(p->cnodes, p->cfg.max_cands, sizeof *cn);
    if (cn == NULL)
        return ERR_NOMEM;
    p->cnodes = cn;
    struct matcher_room *nd = mem_reallocarray(p->need, n, sizeof *nd);
    if (nd == NULL)
        return ERR_NOMEM;
    p->need = nd;
    size_t *pa = mem_reallocarray(p->prio_at, n, sizeof *pa);
    if (pa == NULL)
        return ERR_NOMEM;
    p->prio_at = pa;
    p->cap = n;
    return 0;
}

static int place__grow_nodes(place_t *p, size_t n)
{
    if (n <= p->nnode)
        return 0;
    size_t nc = p->nnode * 2 > n ? p->nnode * 2 : n;
    struct matcher_room *r = mem_reallocarray(p->room, nc, sizeof *r);
    if (r == NULL)
        return ERR_NOMEM;
    p->room = r;
    struct place__node *ns = mem_reallocarray(p->ns, nc, sizeof *ns);
    if (ns == NULL)
        return ERR_NOMEM;
    p->ns = ns;
    for (size_t i = p->nnode; i < nc; i++)
        p->ns[i] = (struct place__node){.claim_ms = INT64_MIN};
    p->nnode = nc;
    return 0;
}

/* What `node` can start now: its zero-wait cells (place.h), less the claims since its view
 * information. Needs place__grow_nodes past node. */
/* A node's matrix tells the waits as they were when it was taken (info_ms): by now, `age` later,
 * each is that much shorter. Without this, a node that said "a core frees in 0.1 s" a second ago
 * still looked busy until it next told, and the JM held a task, or queued it behind work
 * elsewhere, while the core idled (montage, seismology: a sixth of the cluster's time). */
static double place__aged(double w, double age_s)
{
    if (w < 0)
        return w; /* never */
    return w > age_s ? w - age_s : 0;
}

static double place__age_s(const struct view_node *vn, int64_t now_ms)
{
    return (double)view_age_ms(vn, now_ms) / 1000.0;
}

static struct matcher_room place__room(place_t *p, const struct view_node *vn, uint32_t node,
                                       int64_t now_ms)
{
    struct matcher_room r = {0, 0};
    if (vn == NULL || !vn->up)
        return r;
    double age = p->cfg.age_waits ? place__age_s(vn, now_ms) : 0;
    if (vn->ncpu == 0) {
        r = (struct matcher_room){vn->cpu, (double)vn->mem_mb};
    } else {
        for (int c = 0; c < vn->ncpu; c++) {
            double w = place__aged(vn->wait_s[c * vn->nmem], age);
            if (w >= 0 && w <= PLACE__ZERO_WAIT_S)
                r.cpu = vn->cpu_bins[c];
        }
        for (int m = 0; m < vn->nmem; m++) {
            double w = place__aged(vn->wait_s[m], age);
            if (w >= 0 && w <= PLACE__ZERO_WAIT_S)
                r.mem_mb = vn->mem_bins_mb[m];
        }
        if (r.cpu > vn->cpu)
            r.cpu = vn->cpu;
        if (r.mem_mb > (double)vn->mem_mb)
            r.mem_mb = (double)vn->mem_mb;
    }
    if (p->ns[node].claim_ms != INT64_MIN && vn->info_ms > p->ns[node].claim_ms) {
        p->ns[node].claim_cpu = p->ns[node].claim_mem = 0; /* the node has told since */
        p->ns[node].claim_ms = INT64_MIN;
    }
    r.cpu -= p->ns[node].claim_cpu;
    r.mem_mb -= p->ns[node].claim_mem;
    if (r.cpu < 0 || r.mem_mb < 0)
        r.cpu = r.mem_mb = 0;
    return r;
}

/* The estimate `e` of task `t` on `node`, with what this JM sent there since the node last
 * told (place_claim) counted as demand ahead of it: the wait for the claims and the task
 * together. A node's matrix says one core is free now; three tasks sent there in one pass do
 * not all start now, and without this each of them was estimated as if it were alone. Returns
 * the new cost. */
static double place__claimed_wait(place_t *p, const struct view_node *vn, uint32_t node,
                                  const struct estimator_task *t, struct estimate *e,
                                  int64_t now_ms)
{
    if (vn == NULL || p->ns[node].claim_ms == INT64_MIN || vn->info_ms > p->ns[node].claim_ms ||
        (p->ns[node].claim_cpu <= 0 && p->ns[node].claim_mem <= 0))
        return e->c_s;
    double age = p->cfg.age_waits ? place__age_s(vn, now_ms) : 0;
    double w = place__aged(
        view_wait(vn, t->cpu + p->ns[node].claim_cpu, t->mem_mb + p->ns[node].claim_mem, 0), age);
    if (w < 0) {
        /* more than the node holds at once: it waits for one of them to end at least; their
           run times are not known here, its own stands in */
        double all = place__aged(view_wait(vn, vn->cpu, t->mem_mb, 0), age);
        w = (all > 0 ? all : 0) + e->r_s;
    }
    if (!(w > e->w_s))
        return e->c_s;
    double factor = e->e_s > 0 ? e->c_s / e->e_s : 1;
    e->e_s += w - e->w_s;
    e->w_s = w;
    e->c_s = e->e_s * factor;
    return e->c_s;
}

/* The estimate `e` with its wait aged (place__aged): the node's wait as of now. */
static double place__age_estimate(const struct view_node *vn, struct estimate *e, int64_t now_ms)
{
    double w = place__aged(e->w_s, place__age_s(vn, now_ms));
    if (!(w < e->w_s))
        return e->c_s;
    double factor = e->e_s > 0 ? e->c_s / e->e_s : 1;
    e->e_s -= e->w_s - w;
    e->w_s = w;
    e->c_s = e->e_s * factor;
    return e->c_s;
}

int place_claim(place_t *p, size_t task, uint32_t node, int64_t now_ms)
{
    if (task >= p->spec->ntasks || node >= VIEW_MAX_NODES)
        return ERR_RANGE;
    int rc = place__grow_nodes(p, (size_t)node + 1);
    if (rc != 0)
        return rc;
    p->ns[node].claim_cpu += p->tasks[task].cpu;
    p->ns[node].claim_mem += p->tasks[task].mem_mb;
    if (now_ms > p->ns[node].claim_ms)
        p->ns[node].claim_ms = now_ms;
    return 0;
}

static int place__task_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

int place_queued_update(place_t *p, const attempt_t *a, const double *prio)
{
    if (p->queued_any)
        for (size_t i = 0; i < p->nnode; i++)
            p->ns[i].queued_cpu = p->ns[i].queued_prio = 0;
    p->queued_any = 0;
    if (dispatch_regular(attempt_dispatch(a)) == 0)
        return 0; /* none in flight */
    /* The attempt machine's index of the queued tasks, not a walk over every task's record
       (O(tasks) per round, up to 16 rounds a pass, on a million-task job). In task order, as
       that walk added them, so the cores' sums are the same to the bit: O(q log q). */
    const uint32_t *q;
    size_t nq = attempt_queued(a, &q);
    if (nq == 0)
        return 0;
    if (nq > p->queued_cap) {
        size_t nc = nq > p->queued_cap * 2 ? nq : p->queued_cap * 2;
        uint32_t *b = mem_reallocarray(p->queued_buf, nc, sizeof *b);
        if (b == NULL)
            return ERR_NOMEM;
        p->queued_buf = b;
        p->queued_cap = nc;
    }
    memcpy(p->queued_buf, q, nq * sizeof *q);
    qsort(p->queued_buf, nq, sizeof *p->queued_buf, place__task_cmp);
    for (size_t i = 0; i < nq; i++) {
        size_t t = p->queued_buf[i];
        const struct attempt_task *at = attempt_get(a, t);
        if (at == NULL || t >= p->spec->ntasks)
            continue;
        int rc = place__grow_nodes(p, (size_t)at->node + 1);
        if (rc != 0)
            return rc;
        size_t n = (size_t)at->node;
        if (p->ns[n].queued_cpu <= 0 || prio[t] > p->ns[n].queued_prio)
            p->ns[n].queued_prio = prio[t];
        p->ns[n].queued_cpu += p->tasks[t].cpu;
        p->queued_any = 1;
    }
    return 0;
}

int place_overtakes(const place_t *p, const struct place_match *m, const double *prio)
{
    if (m->task >= p->spec->ntasks || m->node >= p->nnode || !(p->ns[m->node].queued_cpu > 0))
        return 0;
    return p->ns[m->node].queued_cpu + 1e-9 >= p->tasks[m->task].cpu &&
           prio[m->task] > p->ns[m->node].queued_prio;
}

int place_room(place_t *p, const view_t *view, uint32_t node, struct matcher_room *out)
{
    const struct view_node *vn = view_node(view, node);
    if (vn == NULL)
        return ERR_RANGE;
    int rc = place__grow_nodes(p, view_count(view));
    if (rc != 0)
        return rc;
    *out = place__room(p, vn, node, vn->info_ms);
    return 0;
}

int place_files_advertised(const place_t *p, const view_t *view, size_t task, uint32_t node)
{
    if (task >= p->spec->ntasks)
        return 0;
    const struct spec_task *st = &p->spec->tasks[task];
    const struct view_node *vn = view_node(view, node);
    if (st->nfiles == 0 || vn == NULL || vn->cache == NULL)
        return 0;
    for (size_t i = 0; i < st->nfiles; i++)
        if (!view_cached(vn, st->files[i].path))
            return 0;
    return 1;
}

/* The candidate of batch task bi on `node` (NULL: none). */
static const struct matcher_cand *place__cand(const place_t *p, size_t bi, uint32_t node)
{
    for (size_t c = p->off[bi]; c < p->off[bi + 1]; c++)
        if (p->cand[c].node == node)
            return &p->cand[c];
    return NULL;
}

/* Greedy list scheduling gives a core that can start work now to the highest-priority ready
 * task. The stable matcher orders by quality (cost), so a lower-priority task could take the
 * only node that starts now while a higher-priority one, matched to a node where it waits, is
 * then held in the JM (place_hold). Here such a pair trades nodes when the higher-priority
 * task can start on the other's node now. The batch is in priority order (tasks[0] first). */
static size_t place__priority_first(place_t *p, size_t n, size_t nm)
{
    size_t *at = p->prio_at; /* batch task -> its match index, SIZE_MAX: unmatched */
    for (size_t b = 0; b < n; b++)
        at[b] = SIZE_MAX;
    for (size_t i = 0; i < nm; i++)
        at[p->match[i].task] = i;
    for (size_t hi = 0; hi < n; hi++) {
        size_t mh = at[hi];
        if (mh != SIZE_MAX && !(p->match[mh].wait > PLACE_HOLD_WAIT_S))
            continue; /* starts now where it is */
        for (size_t lo = hi + 1; lo < n; lo++) {
            size_t ml = at[lo];
            if (ml == SIZE_MAX || p->match[ml].wait > PLACE_HOLD_WAIT_S)
                continue;
            const struct matcher_cand *c = place__cand(p, hi, p->match[ml].node);
            if (c == NULL || c->cost >= ESTIMATOR_INF || c->wait > PLACE_HOLD_WAIT_S ||
                p->need[hi].cpu > p->need[lo].cpu + 1e-9 ||
                p->need[hi].mem_mb > p->need[lo].mem_mb + 1e-9)
                continue;
            uint32_t old = mh != SIZE_MAX ? p->match[mh].node : UINT32_MAX;
            const struct matcher_cand *back = old != UINT32_MAX ? place__cand(p, lo, old) : NULL;
            p->match[ml].task = hi;
            p->match[ml].cost = c->cost;
            p->match[ml].wait = c->wait;
            at[hi] = ml;
            if (mh != SIZE_MAX && back != NULL && back->cost < ESTIMATOR_INF) {
                p->match[mh].task = lo;
                p->match[mh].cost = back->cost;
                p->match[mh].wait = back->wait;
                at[lo] = mh;
            } else if (mh != SIZE_MAX) { /* lo cannot go there: hi's old match goes */
                p->match[mh] = p->match[nm - 1];
                at[p->match[mh].task] = mh;
                nm--;
                at[lo] = SIZE_MAX;
            } else {
                at[lo] = SIZE_MAX;
            }
            break;
        }
    }
    return nm;
}

int place_round(place_t *p, const view_t *view, const estimator_t *est, const size_t *tasks,
                size_t n, int64_t now_ms, place_draw_fn *draw, void *ctx, struct place_match *out,
                size_t *nout)
{
    *nout = 0;
    for (size_t i = 0; i < n; i++)
        if (tasks[i] >= p->spec->ntasks)
            return ERR_RANGE;
    if (n == 0)
        return 0;
    int rc = place__grow(p, n);
    if (rc == 0)
        rc = matcher_reserve(p->m, view_count(view));
    if (rc == 0 && p->cfg.fill)
        rc = place__grow_nodes(p, view_count(view));
    if (rc != 0)
        return rc;
    if (p->cfg.fill && ++p->stamp == 0) { /* wrapped: every stamp is stale */
        for (size_t i = 0; i < p->nnode; i++)
            p->ns[i].room_stamp = 0;
        p->stamp = 1;
    }
    double draws[1 + 16];
    size_t ndraws = 1 + (p->cfg.cand.nrandom < 16 ? p->cfg.cand.nrandom : 16);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t t = tasks[i];
        struct estimator_task et = p->tasks[t];
        const struct place__stage *st = &p->stages[et.stage];
        et.cached_nodes = st->nodes;
        et.ncached = st->n;
        for (size_t d = 0; d < ndraws; d++)
            draws[d] = draw(ctx);
        size_t nc = matcher_candidates(p->m, view, &et, &p->cfg.cand, draws, ndraws, p->cnodes,
                                       p->cfg.max_cands);
        p->off[i] = k;
        p->need[i] = (struct matcher_room){et.cpu, et.mem_mb};
        for (size_t c = 0; c < nc; c++) {
            uint32_t cn = p->cnodes[c];
            if (p->cfg.fill && p->ns[cn].room_stamp != p->stamp) {
                p->room[cn] = place__room(p, view_node(view, cn), cn, now_ms);
                p->ns[cn].room_stamp = p->stamp;
            }
            /* I = 0 where the node advertises the task's files (a cache it did not get from
               this JM) */
            struct estimator_task here = et;
            if (here.file_bytes > 0 && place_files_advertised(p, view, t, cn))
                here.file_bytes = 0;
            double cost =
                estimator_estimate(est, view, &here, p->cnodes[c], now_ms, draw(ctx), &p->est[k]);
            if (p->cfg.age_waits && cost < ESTIMATOR_INF)
                cost = place__age_estimate(view_node(view, cn), &p->est[k], now_ms);
            if (p->cfg.fill && cost < ESTIMATOR_INF)
                cost = place__claimed_wait(p, view_node(view, cn), cn, &here, &p->est[k], now_ms);
            if (p->cnodes[c] == p->failed[t] && cost < ESTIMATOR_INF)
                cost *= 2; /* a retry prefers another node */
            p->cand[k] = (struct matcher_cand){p->cnodes[c], cost, p->est[k].w_s};
            k++;
        }
    }
    p->off[n] = k;
    struct matcher_batch b = {n, p->off, p->cand};
    size_t nm = 0;
    rc = p->cfg.fill
             ? matcher_stable_room(p->m, &b, p->room, p->need, p->cfg.max_iter, p->match, &nm)
             : matcher_stable(p->m, &b, p->cfg.max_iter, p->match, &nm);
    if (rc != 0)
        return rc;
    if (p->cfg.priority_first)
        nm = place__priority_first(p, n, nm);
    for (size_t i = 0; i < nm; i++) {
        size_t bi = p->match[i].task;
        struct place_match *o = &out[i];
        o->task = tasks[bi];
        o->node = p->match[i].node;
        for (size_t c = p->off[bi]; c < p->off[bi + 1]; c++)
            if (p->cand[c].node == o->node) {
                o->est = p->est[c];
                break;
            }
    }
    *nout = nm;
    return 0;
}
