/* straggler_sim.c - the slice engine (straggler_sim.h): one job on a shared cluster with
 * injected stragglers under a correction mode: setup, the task graph, the events; its nodes are
 * in straggler_sim_node.c and its JM in straggler_sim_jm.c. */
#include "tools/sim/straggler_sim.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/priority.h"
#include "tools/sim/straggler_sim_internal.h"

const char *straggler_mode_name(enum straggler_mode m)
{
    static const char *const names[] = {"none", "move", "duplicate", "speculate"};
    return m < STRAGGLER_NMODES ? names[m] : "?";
}

void straggler_cond_default(struct straggler_cond *c)
{
    c->nodes = 20;
    c->slots = 4;
    c->load = 0.5;
    c->burst_rate = 3;
    c->burst_size = 3;
    c->noise_sigma = 0.2;
    c->straggler_prob = 0.05;
    c->straggler_min = 3;
    c->straggler_max = 10;
    c->slow_factor = 4;
    c->tokens = 0;
    c->opp_factor = 1.0;
    c->queued_mode = CORRECT_MODE_DUPLICATE;
    correct_config_default(&c->correct);
    speculate_config_default(&c->speculate);
}

uint64_t ss__arg(int ev, uint64_t a, uint64_t b)
{
    return (uint64_t)ev << 56 | (a & 0xffffffull) << 32 | (b & 0xffffffffull);
}

static void ss__start_job(struct ss *s)
{
    double now = engine_now(s->e);
    for (uint32_t i = 0; i < s->c->nodes; i++)
        ss__simulate(s, i, now, 1);
    for (size_t t = 0; t < s->sp->ntasks && !s->rc; t++)
        ss__ready(s, t);
}

void ss__event(engine_t *e, void *ctx, uint64_t arg)
{
    (void)e;
    struct ss *s = ctx;
    if (s->rc)
        return;
    int ev = (int)(arg >> 56);
    uint32_t a = (uint32_t)((arg >> 32) & 0xffffff), b = (uint32_t)arg;
    switch (ev) {
    case SS_EV_FINISH:
        ss__finish(s, a / 64, a % 64, b);
        break;
    case SS_EV_ARRIVE:
        ss__arrive(s, a, 0);
        break;
    case SS_EV_BURST:
        ss__arrive(s, a, 1);
        break;
    case SS_EV_TICK:
        if (b == 1)
            ss__start_job(s);
        else
            ss__tick(s);
        break;
    }
    if (s->rc)
        engine_stop(s->e);
}

/* Task graph: explicit edges as children lists, stage barriers as pending counts. */
static int ss__graph(struct ss *s)
{
    const struct spec *sp = s->sp;
    for (size_t t = 0; t < sp->ntasks; t++) {
        const struct spec_task *st = &sp->tasks[t];
        s->tasks[t].pending += st->nafter;
        for (size_t j = 0; j < st->nafter; j++)
            s->nchildren[st->after[j]]++;
        const struct spec_stage *g = &sp->stages[st->stage];
        for (size_t j = 0; j < g->nafter; j++)
            if (sp->stages[g->after[j]].ntasks)
                s->tasks[t].pending++;
    }
    for (size_t t = 0; t < sp->ntasks; t++) {
        if (s->nchildren[t] && !(s->children[t] = mem_calloc(s->nchildren[t], sizeof(size_t))))
            return ERR_NOMEM;
        s->nchildren[t] = 0;
    }
    for (size_t t = 0; t < sp->ntasks; t++)
        for (size_t j = 0; j < sp->tasks[t].nafter; j++) {
            size_t p = sp->tasks[t].after[j];
            s->children[p][s->nchildren[p]++] = t;
        }
    return 0;
}

static int ss__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void ss__free(struct ss *s)
{
    if (s->nodes)
        for (size_t i = 0; i < s->c->nodes; i++) {
            mem_free(s->nodes[i].slot);
            mem_free(s->nodes[i].q);
        }
    if (s->stages)
        for (size_t g = 0; g < s->sp->nstages; g++)
            speculate_dist_close(&s->stages[g].dist);
    if (s->children)
        for (size_t t = 0; t < s->sp->ntasks; t++)
            mem_free(s->children[t]);
    mem_free(s->children);
    mem_free(s->nchildren);
    mem_free(s->nodes);
    mem_free(s->tasks);
    mem_free(s->stages);
    mem_free(s->att);
    readyq_destroy(&s->rq);
    mem_free(s->bl);
    dag_destroy(&s->dag);
    dispatch_destroy(&s->disp);
    engine_destroy(&s->e);
}

int straggler_sim_job(const struct spec *sp, enum straggler_mode m, const struct straggler_cond *c,
                      uint64_t seed, struct straggler_run *out)
{
    memset(out, 0, sizeof *out);
    if (!sp || !sp->ntasks || m >= STRAGGLER_NMODES || c->nodes < 2 || c->nodes > 0xffff ||
        c->slots < 1 || c->slots > 64 || !(c->load > 0) || !(c->load < 1) || c->tokens > 1000000 ||
        !(c->opp_factor >= 0) || c->opp_factor > 100)
        return ERR_INVAL;
    struct ss s;
    memset(&s, 0, sizeof s);
    s.sp = sp;
    s.mode = m;
    s.c = c;
    s.seed = seed;
    s.out = out;
    int rc = engine_new(&s.e);
    if (rc)
        return rc;
    s.nodes = mem_calloc(c->nodes, sizeof *s.nodes);
    s.tasks = mem_calloc(sp->ntasks, sizeof *s.tasks);
    s.stages = mem_calloc(sp->nstages ? sp->nstages : 1, sizeof *s.stages);
    s.children = mem_calloc(sp->ntasks, sizeof *s.children);
    s.nchildren = mem_calloc(sp->ntasks, sizeof *s.nchildren);
    s.bl = mem_calloc(sp->ntasks, sizeof *s.bl);
    double *est = mem_calloc(sp->ntasks, sizeof *est);
    struct dispatch_config dc;
    dispatch_config_default(&dc);
    dc.opp_factor = c->opp_factor;
    if (!s.bl || !est || dispatch_new(&dc, sp->ntasks, &s.disp) != 0 ||
        readyq_new(sp->ntasks, &s.rq) != 0 || dag_new(sp, &s.dag) != 0 ||
        priority_compute(s.dag, NULL, s.bl, NULL) != 0 || !s.nodes || !s.tasks || !s.stages ||
        !s.children || !s.nchildren) {
        mem_free(est);
        ss__free(&s);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < c->nodes; i++) {
        if (!(s.nodes[i].slot = mem_calloc(c->slots, sizeof *s.nodes[i].slot))) {
            mem_free(est);
            ss__free(&s);
            return ERR_NOMEM;
        }
        s.nodes[i].speed = i == 0 && c->slow_factor > 1 ? c->slow_factor : 1;
        rng_seed_stream(&s.nodes[i].fg, seed, 0x2000000000ull + i);
    }
    double work = 0;
    for (size_t t = 0; t < sp->ntasks; t++) {
        speculate_task_init(&s.tasks[t].st);
        s.tasks[t].est = sp->tasks[t].runtime_s > 0 ? sp->tasks[t].runtime_s : 0.01;
        est[t] = s.tasks[t].est;
        work += est[t];
    }
    qsort(est, sp->ntasks, sizeof *est, ss__cmp);
    s.typ_est = est[sp->ntasks / 2];
    mem_free(est);
    s.mean_est = work / (double)sp->ntasks;
    for (size_t g = 0; g < sp->nstages; g++) {
        speculate_dist_init(&s.stages[g].dist);
        s.stages[g].left = sp->stages[g].ntasks;
    }
    rng_seed_stream(&s.prog, seed, 0x3000000000ull);
    dispatch_set_tokens(s.disp, c->tokens ? (uint32_t)c->tokens : (uint32_t)(c->nodes * c->slots));
    if ((rc = ss__graph(&s))) {
        ss__free(&s);
        return rc;
    }
    s.left = sp->ntasks;
    /* Ticks: a quarter of the typical task, but at most ~400 over the job's ideal length. */
    double ideal = work / ((double)(c->nodes * c->slots) * (1 - c->load));
    s.tick_s = s.typ_est / 4;
    if (s.tick_s < ideal / 400)
        s.tick_s = ideal / 400;
    if (s.tick_s < 1e-3)
        s.tick_s = 1e-3;
    s.t0 = 5 * s.mean_est;
    for (uint32_t i = 0; i < c->nodes && !rc; i++) {
        rc = engine_at(s.e, 0, ss__event, &s, ss__arg(SS_EV_ARRIVE, i, 0));
        if (!rc && c->burst_rate > 0)
            rc = engine_at(s.e, rng_exp(&s.nodes[i].fg, 100 * s.mean_est / c->burst_rate),
                           ss__event, &s, ss__arg(SS_EV_BURST, i, 0));
    }
    if (!rc)
        rc = engine_at(s.e, s.t0, ss__event, &s, ss__arg(SS_EV_TICK, 0, 1));
    if (!rc)
        rc = engine_at(s.e, s.t0, ss__event, &s, ss__arg(SS_EV_TICK, 0, 0));
    /* Foreign work never ends: the run stops with the job (engine_stop), or at a horizon far
       past any plausible makespan (a bug, reported as ERR_STATE rather than a hang). */
    if (!rc)
        engine_run(s.e, s.t0 + 100 * c->straggler_max * c->slow_factor * (work + s.typ_est));
    if (!rc)
        rc = s.rc;
    if (!rc && s.left)
        rc = ERR_STATE;
    out->makespan_s = s.last_end - s.t0;
    ss__free(&s);
    return rc;
}
