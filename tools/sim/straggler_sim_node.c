/* straggler_sim_node.c - the slice engine's nodes (straggler_sim.h): slots and FIFO queues,
 * foreign work and its bursts, each attempt's drawn run time, starts, ends and kills; the first
 * attempt of a task to start or finish settles its duplicates and copies (jm/speculate.h). */
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "tools/sim/straggler_sim_internal.h"

static int ss__push(struct ss *s, struct ss_node *n, const struct ss_item *it)
{
    if (n->qh > 64 && n->qh * 2 > n->qn) { /* compact the consumed head */
        memmove(n->q, n->q + n->qh, (n->qn - n->qh) * sizeof *n->q);
        n->qn -= n->qh;
        n->qh = 0;
    }
    if (n->qn == n->qcap) {
        size_t cap = n->qcap ? 2 * n->qcap : 64;
        struct ss_item *q = mem_reallocarray(n->q, cap, sizeof *q);
        if (!q) {
            s->rc = ERR_NOMEM;
            return ERR_NOMEM;
        }
        n->q = q;
        n->qcap = cap;
    }
    n->q[n->qn++] = *it;
    return 0;
}

/* Draws attempt k of task t's run time on the reference node. */
static double ss__draw(const struct ss *s, size_t t, uint32_t k)
{
    struct rng r;
    rng_seed_stream(&r, s->seed, 0x1000000000ull + (uint64_t)t * 64 + k);
    double d = s->tasks[t].est * rng_lognormal(&r, 0, s->c->noise_sigma);
    double u = rng_unif(&r);
    double f = rng_unif(&r);
    if (u < s->c->straggler_prob)
        d *= s->c->straggler_min + f * (s->c->straggler_max - s->c->straggler_min);
    return d;
}

void ss__simulate(struct ss *s, uint32_t ni, double now, int view)
{
    struct ss_node *n = &s->nodes[ni];
    size_t k = s->c->slots;
    double fr[64] = {0};
    for (size_t i = 0; i < k; i++) {
        const struct ss_slot *sl = &n->slot[i];
        fr[i] = now;
        if (sl->busy) {
            double end = sl->start + sl->est;
            fr[i] = end > now ? end : now + 0.1 * sl->est;
        }
    }
    for (size_t j = n->qh; j < n->qn; j++) {
        const struct ss_item *it = &n->q[j];
        if (it->att >= 0 && s->att[it->att].state != SS_QUEUED)
            continue;
        size_t b = 0;
        for (size_t i = 1; i < k; i++)
            if (fr[i] < fr[b])
                b = i;
        if (it->att >= 0)
            s->att[it->att].pn_start = fr[b];
        fr[b] += it->est;
    }
    double m = fr[0];
    for (size_t i = 1; i < k; i++)
        if (fr[i] < m)
            m = fr[i];
    if (view)
        n->view_wait = m - now;
}

static void ss__pump(struct ss *s, uint32_t ni);

int ss__place(struct ss *s, size_t t, int kind, int cls, long exclude)
{
    struct ss_task *tk = &s->tasks[t];
    long best = -1;
    double bw = 0;
    for (size_t i = 0; i < s->c->nodes; i++) {
        if ((long)i == exclude)
            continue;
        /* Apollo's small random term against herding: a hash of (task, attempt, node). */
        double jitter = (double)((t * 2654435761u + tk->natt * 40503u + i * 97u) % 1000) / 1e5;
        double w = s->nodes[i].view_wait + jitter * tk->est;
        if (best < 0 || w < bw) {
            best = (long)i;
            bw = w;
        }
    }
    if (best < 0)
        return ERR_INVAL;
    if (s->natt == s->attcap) {
        size_t cap = s->attcap ? 2 * s->attcap : 256;
        struct ss_att *a = mem_reallocarray(s->att, cap, sizeof *a);
        if (!a)
            return s->rc = ERR_NOMEM;
        s->att = a;
        s->attcap = cap;
    }
    struct ss_node *n = &s->nodes[best];
    struct ss_att *a = &s->att[s->natt];
    memset(a, 0, sizeof *a);
    a->task = t;
    a->node = (uint32_t)best;
    a->kind = kind;
    a->state = SS_QUEUED;
    a->enq = engine_now(s->e);
    a->dur = ss__draw(s, t, tk->natt) * n->speed;
    a->placed_wait = n->view_wait;
    a->pn_start = a->enq + n->view_wait;
    int rc = speculate_task_add(&tk->st, (uint32_t)s->natt, (int32_t)best, kind != SS_ORIG);
    if (rc)
        return s->rc = rc;
    tk->natt++;
    if (kind != SS_ORIG && cls == DISPATCH_OPPORTUNISTIC)
        s->extra_opp++;
    a->cls = kind != SS_ORIG ? cls : DISPATCH_NONE;
    struct ss_item it = {.att = (long)s->natt, .dur = a->dur, .est = tk->est};
    s->natt++;
    if (ss__push(s, n, &it))
        return s->rc;
    n->view_wait += tk->est / (double)s->c->slots;
    tk->placed = 1;
    ss__pump(s, (uint32_t)best);
    return s->rc;
}

/* An extra attempt ended: the units it held are free again. */
static void ss__extra_end(struct ss *s, struct ss_att *a)
{
    if (a->cls == DISPATCH_OPPORTUNISTIC && s->extra_opp > 0)
        s->extra_opp--;
    a->cls = DISPATCH_NONE;
}

static void ss__kill(struct ss *s, size_t ai, double now)
{
    struct ss_att *a = &s->att[ai];
    ss__extra_end(s, a);
    if (a->state == SS_RUNNING) {
        struct ss_slot *sl = &s->nodes[a->node].slot[a->slot];
        sl->busy = 0;
        sl->gen++;
        s->out->work_s += now - a->start;
        s->running--;
        a->state = SS_DEAD;
        ss__pump(s, a->node);
    } else if (a->state == SS_QUEUED) {
        a->state = SS_DEAD; /* skipped when it reaches the head */
    }
    if (a->kind == SS_SPEC) {
        s->spec_inflight--;
        s->stages[s->sp->tasks[a->task].stage].inflight--;
    }
}

static void ss__start(struct ss *s, uint32_t ni, size_t slot, const struct ss_item *it)
{
    struct ss_node *n = &s->nodes[ni];
    struct ss_slot *sl = &n->slot[slot];
    double now = engine_now(s->e);
    sl->busy = 1;
    sl->att = it->att;
    sl->start = now;
    sl->est = it->est;
    sl->gen++;
    double dur = it->dur;
    if (it->att >= 0) {
        struct ss_att *a = &s->att[it->att];
        struct ss_task *tk = &s->tasks[a->task];
        a->state = SS_RUNNING;
        a->start = now;
        a->slot = (uint32_t)slot;
        s->running++;
        dur = a->dur;
        int first = 1;
        for (size_t j = 0; j < tk->st.n; j++)
            if (tk->st.a[j].started && tk->st.a[j].state != SPECULATE_A_NONE)
                first = 0;
        uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
        int k =
            speculate_task_started(&tk->st, (uint32_t)it->att, 1, cancel, SPECULATE_MAX_ATTEMPTS);
        if (first) {
            struct ss_stage *st = &s->stages[s->sp->tasks[a->task].stage];
            st->wait_sum += now - a->enq;
            st->wait_n++;
            if (a->kind == SS_DUP) {
                s->out->copies_won++; /* Apollo's success: the duplicate started first */
                s->out->dups_won++;
            }
        }
        for (int i = 0; i < k && i < SPECULATE_MAX_ATTEMPTS; i++)
            ss__kill(s, cancel[i], now);
    }
    if (engine_after(s->e, dur, ss__event, s, ss__arg(SS_EV_FINISH, ni * 64 + slot, sl->gen)))
        s->rc = ERR_NOMEM;
}

static void ss__pump(struct ss *s, uint32_t ni)
{
    struct ss_node *n = &s->nodes[ni];
    for (size_t i = 0; i < s->c->slots && n->qh < n->qn; i++) {
        if (n->slot[i].busy)
            continue;
        while (n->qh < n->qn) {
            struct ss_item it = n->q[n->qh++];
            if (it.att >= 0 && s->att[it.att].state != SS_QUEUED)
                continue;
            ss__start(s, ni, i, &it);
            break;
        }
    }
}

void ss__finish(struct ss *s, uint32_t ni, size_t slot, uint32_t gen)
{
    struct ss_node *n = &s->nodes[ni];
    struct ss_slot *sl = &n->slot[slot];
    if (!sl->busy || sl->gen != gen)
        return; /* killed */
    double now = engine_now(s->e);
    sl->busy = 0;
    if (sl->att >= 0) {
        size_t ai = (size_t)sl->att;
        struct ss_att *a = &s->att[ai];
        struct ss_task *tk = &s->tasks[a->task];
        s->running--;
        double ran = now - a->start;
        s->out->work_s += ran;
        s->out->useful_s += ran;
        uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
        int k = speculate_task_finished(&tk->st, (uint32_t)ai, cancel, SPECULATE_MAX_ATTEMPTS);
        a->state = SS_DONE;
        ss__extra_end(s, a);
        if (a->kind == SS_SPEC) {
            s->out->copies_won++;
            s->out->spec_won++;
            s->spec_inflight--;
            s->stages[s->sp->tasks[a->task].stage].inflight--;
        }
        for (int i = 0; i < k && i < SPECULATE_MAX_ATTEMPTS; i++)
            ss__kill(s, cancel[i], now);
        /* The stage's times per unit of estimate (the estimator's refined R plays this part in
           the JM): tasks of one stage differ in size. */
        if (speculate_dist_add(&s->stages[s->sp->tasks[a->task].stage].dist, ran / tk->est))
            s->rc = ERR_NOMEM;
        ss__task_done(s, a->task, now);
    }
    ss__pump(s, ni);
}

void ss__arrive(struct ss *s, uint32_t ni, int burst)
{
    struct ss_node *n = &s->nodes[ni];
    double mean = s->mean_est;
    size_t k = burst ? (size_t)ceil(s->c->burst_size * (double)s->c->slots) : 1;
    for (size_t i = 0; i < k; i++) {
        struct ss_item it = {.att = -1, .dur = 0, .est = 0};
        it.dur = rng_exp(&n->fg, mean);
        it.est = mean;
        if (ss__push(s, n, &it))
            return;
    }
    ss__pump(s, ni);
    double next;
    if (burst)
        next = s->c->burst_rate > 0 ? rng_exp(&n->fg, 100 * mean / s->c->burst_rate) : 0;
    else
        next = rng_exp(&n->fg, mean / (s->c->load * (double)s->c->slots));
    if (next > 0 &&
        engine_after(s->e, next, ss__event, s, ss__arg(burst ? SS_EV_BURST : SS_EV_ARRIVE, ni, 0)))
        s->rc = ERR_NOMEM;
}
