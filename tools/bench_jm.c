/* bench_jm.c - JM placement rate on a synthetic 20,000-node view (docs/architecture.md, "Targets":
 * at least 100,000 placements per second per JM core; a 1,000-task batch matched in under 10 ms),
 * and the JM's CPU time per placed task as the job grows (issue 16: roughly flat from 2,000 to
 * 200,000 ready tasks).
 *
 * A placement is the whole per-task path the JM runs: candidate set (input holders, their
 * rack-mates, two random lightly-loaded nodes), an estimate (E = I + W + R, C) for every
 * candidate, and the stable matcher over the batch. Prints figures; not a test.
 *
 * The per-task figure drives the daemon's scheduling loop (jm/daemon/jmd_sched.c) on the pure
 * modules: a job of N independent ready tasks on --sched-nodes nodes of --sched-slots cores each
 * (one core per task; tokens for every slot), passes of up to 16 rounds until the slots are full,
 * then every task in flight ends, the nodes tell they are idle, and the next pass runs; the CPU
 * time of the passes (ready set, placement, dispatch, DAG updates) over the tasks placed. Two
 * ways: "queue" is the daemon's (jm/readyq.h, a batch sized by the free token units, a node
 * takes what its room holds), "resort" the earlier one (each round copies and priority-sorts
 * the whole ready list, places a batch of 512, one task per node).
 *
 * usage: bench_jm [--nodes N] [--racks R] [--batch B] [--batches K] [--seed S]
 *                 [--sched-nodes K] [--sched-slots S] [--placements P] [--json]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rng.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/estimator.h"
#include "jm/matcher.h"
#include "jm/place.h"
#include "jm/priority.h"
#include "jm/readyq.h"
#include "jm/spec.h"
#include "jm/view.h"

static struct rng bench__g = {.s = 1}; /* common/rng.h's splitmix64, raw state 1 */
static uint64_t bench__next(void)
{
    return rng_next(&bench__g);
}
static double bench__unif(void)
{
    return rng_unif(&bench__g);
}

static double bench__draw(void *ctx)
{
    (void)ctx;
    return bench__unif();
}

/* A spec of `batch` tasks, each with one input of up to 2 GB on three named nodes. */
static struct spec *bench__spec(long batch, long nodes)
{
    size_t cap = (size_t)batch * 200 + 64, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return NULL;
    len += (size_t)snprintf(buf + len, cap - len, "{\"version\":1,\"tasks\":[");
    for (long i = 0; i < batch; i++)
        len += (size_t)snprintf(
            buf + len, cap - len,
            "%s{\"id\":\"t%ld\",\"stage\":\"s%ld\",\"cmd\":[\"true\"],\"cpu\":%ld,"
            "\"mem_mb\":2048,\"runtime_s\":%.1f,\"inputs\":[{\"bytes\":%llu,\"nodes\":"
            "[\"pn-%llu\",\"pn-%llu\",\"pn-%llu\"]}]}",
            i ? "," : "", i, i % 4, 1 + i % 3, 10 + bench__unif() * 50,
            (unsigned long long)(bench__unif() * 2e9),
            (unsigned long long)(bench__next() % (uint64_t)nodes),
            (unsigned long long)(bench__next() % (uint64_t)nodes),
            (unsigned long long)(bench__next() % (uint64_t)nodes));
    snprintf(buf + len, cap - len, "]}");
    char msg[256];
    struct spec *s = NULL;
    int rc = spec_parse(buf, strlen(buf), NULL, &s, msg, sizeof msg);
    free(buf);
    if (rc != 0)
        fprintf(stderr, "bench_jm: spec: %s\n", msg);
    return s;
}

static double bench__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define BENCH_REPLICAS 3
#define BENCH_CAND_CAP 64

struct bench_task {
    int32_t replicas[BENCH_REPLICAS];
    struct estimator_input in;
    struct estimator_task t;
};

static double bench__cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A job of n independent one-core tasks, each reading up to 2 GB from one of `nodes` nodes. */
static struct spec *bench__job(long n, long nodes)
{
    size_t cap = (size_t)n * 160 + 64, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return NULL;
    len += (size_t)snprintf(buf + len, cap - len, "{\"version\":1,\"tasks\":[");
    for (long i = 0; i < n; i++)
        len += (size_t)snprintf(
            buf + len, cap - len,
            "%s{\"id\":\"t%ld\",\"stage\":\"s\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":512,"
            "\"runtime_s\":1,\"inputs\":[{\"bytes\":%llu,\"nodes\":"
            "[\"pn-%ld\"]}]}",
            i ? "," : "", i, (unsigned long long)(bench__unif() * 2e9),
            (long)(bench__next() % (uint64_t)nodes));
    snprintf(buf + len, cap - len, "]}");
    char msg[256];
    struct spec *s = NULL;
    int rc = spec_parse(buf, strlen(buf), NULL, &s, msg, sizeof msg);
    free(buf);
    if (rc != 0)
        fprintf(stderr, "bench_jm: job spec: %s\n", msg);
    return s;
}

/* Node `i` with `slots` cores tells it has `free_cpu` of them free (6x7 matrix, fresh at now). */
static int bench__tell(view_t *v, long i, long slots, double free_cpu, uint64_t seq, int64_t now)
{
    static const double cpu_bins[6] = {0.5, 1, 2, 4, 8, 16};
    static const double mem_bins[7] = {1024, 2048, 4096, 8192, 16384, 32768, 65536};
    double cells[42];
    for (int c = 0; c < 6; c++)
        for (int m = 0; m < 7; m++)
            cells[c * 7 + m] = cpu_bins[c] > (double)slots ? -1 : cpu_bins[c] <= free_cpu ? 0 : 1;
    char name[32];
    snprintf(name, sizeof name, "pn-%ld", i);
    struct view_entry e = {.name = name,
                           .rack = "rack-0",
                           .cpu = (double)slots,
                           .mem_mb = 65536,
                           .up = 1,
                           .boot_id = 1,
                           .seq = seq,
                           .successes = 100,
                           .ncpu = 6,
                           .nmem = 7,
                           .cpu_bins = cpu_bins,
                           .mem_bins_mb = mem_bins,
                           .wait_s = cells};
    return view_update(v, &e, now) == 1 ? 0 : -1;
}

#define BENCH_SCHED_ROUNDS 16  /* jmd_sched.c's JMD_SCHED__ROUNDS */
#define BENCH_SCHED_BATCH  512 /* JMD_SCHED__BATCH */
#define BENCH_SCHED_SLACK  4   /* JMD_SCHED__SLACK */

struct bench_sched {
    double us_per_task; /* CPU time of the passes per task placed */
    size_t placed, rounds, passes;
};

/* Runs the scheduling loop over `spec` until `target` tasks were placed (see the top). */
static int bench__sched(const struct spec *spec, long nodes, long slots, size_t target, int resort,
                        struct bench_sched *r)
{
    memset(r, 0, sizeof *r);
    size_t n = spec->ntasks;
    view_t *v = NULL;
    dag_t *dag = NULL;
    estimator_t *est = NULL;
    dispatch_t *disp = NULL;
    place_t *pl = NULL;
    readyq_t *rq = NULL;
    double *sp = calloc(spec->nstages + 1, sizeof *sp);
    size_t *buf = calloc(resort ? n : BENCH_SCHED_BATCH, sizeof *buf);
    size_t *inflight = calloc((size_t)(nodes * slots) + 1, sizeof *inflight);
    struct place_match *pm = calloc(BENCH_SCHED_BATCH, sizeof *pm);
    int rc = -1;
    struct place_config pc;
    place_config_default(&pc);
    pc.fill = !resort;
    struct dispatch_config dc;
    dispatch_config_default(&dc);
    dc.opp_factor = 0;
    if (sp == NULL || buf == NULL || inflight == NULL || pm == NULL || view_new(&v) != 0 ||
        dag_new(spec, &dag) != 0 || estimator_new(NULL, spec->nstages, &est) != 0 ||
        dispatch_new(&dc, n, &disp) != 0 || place_new(spec, &pc, &pl) != 0 ||
        readyq_new(n, &rq) != 0 || priority_compute(dag, NULL, NULL, sp) != 0)
        goto out;
    int64_t now = 1000;
    uint64_t seq = 1;
    for (long i = 0; i < nodes; i++)
        if (bench__tell(v, i, slots, (double)slots, seq, now) != 0)
            goto out;
    view_refresh_light(v, (size_t)nodes);
    if (place_resolve(pl, v) != 0)
        goto out;
    dispatch_set_tokens(disp, (uint32_t)(nodes * slots));
    for (size_t i = 0; i < n; i++) /* as jmd_sched_init does (the task's token units) */
        dispatch_set_cost(disp, i, 1);
    size_t nr;
    const size_t *ready = dag_ready(dag, &nr);
    for (size_t i = 0; i < nr; i++)
        if (readyq_push(rq, ready[i], sp[spec->tasks[ready[i]].stage],
                        spec->tasks[ready[i]].input_bytes) != 0)
            goto out;
    double cpu = 0;
    size_t nin = 0;
    while (r->placed < target) {
        /* the PN side: everything in flight ends, every node tells it is idle */
        now += 1000;
        seq++;
        for (long i = 0; i < nodes; i++)
            bench__tell(v, i, slots, (double)slots, seq, now);
        double t0 = bench__cpu();
        for (size_t i = 0; i < nin; i++) {
            dispatch_finished(disp, inflight[i]);
            dag_succeed(dag, inflight[i], NULL);
        }
        nin = 0;
        size_t before = r->placed;
        for (int round = 0; round < BENCH_SCHED_ROUNDS; round++) {
            dispatch_round(disp);
            if (dispatch_next(disp) == DISPATCH_NONE)
                break;
            size_t nb, nm = 0;
            if (resort) {
                const size_t *rd = dag_ready(dag, &nb);
                memcpy(buf, rd, nb * sizeof *rd);
                priority_sort(dag, sp, buf, nb);
                if (nb > BENCH_SCHED_BATCH)
                    nb = BENCH_SCHED_BATCH;
            } else {
                uint64_t tok = dispatch_tokens(disp), reg = dispatch_regular_units(disp);
                uint64_t head = tok > reg ? tok - reg : 0;
                size_t batch = head < BENCH_SCHED_BATCH - BENCH_SCHED_SLACK
                                   ? (size_t)head + BENCH_SCHED_SLACK
                                   : BENCH_SCHED_BATCH;
                nb = readyq_pop(rq, buf, batch);
            }
            if (nb == 0)
                break;
            r->rounds++;
            if (place_round(pl, v, est, buf, nb, now, bench__draw, NULL, pm, &nm) != 0)
                goto out;
            size_t placed = 0;
            for (size_t i = 0; i < nm; i++) {
                int cls = dispatch_place(disp, pm[i].task);
                if (cls == DISPATCH_NONE)
                    break;
                if (cls < 0)
                    continue;
                dag_start(dag, pm[i].task);
                if (!resort)
                    place_claim(pl, pm[i].task, pm[i].node, now);
                inflight[nin++] = pm[i].task;
                placed++;
            }
            if (!resort)
                for (size_t i = 0; i < nb; i++)
                    if (dag_state(dag, buf[i]) == DAG_READY &&
                        readyq_push(rq, buf[i], sp[spec->tasks[buf[i]].stage],
                                    spec->tasks[buf[i]].input_bytes) != 0)
                        goto out; /* a task popped and not placed goes back: never a duplicate */
            r->placed += placed;
            if (placed == 0)
                break;
        }
        cpu += bench__cpu() - t0;
        r->passes++;
        if (r->placed == before)
            break; /* nothing placed: out of ready tasks */
    }
    r->us_per_task = r->placed ? cpu / (double)r->placed * 1e6 : 0;
    rc = 0;
out:
    readyq_destroy(&rq);
    place_destroy(&pl);
    dispatch_destroy(&disp);
    estimator_destroy(&est);
    dag_destroy(&dag);
    view_destroy(&v);
    free(sp);
    free(buf);
    free(inflight);
    free(pm);
    return rc;
}

int main(int argc, char **argv)
{
    long nodes = 20000, racks = 500, batch = 1000, batches = 100;
    long sched_nodes = 1, sched_slots = 16, placements = 2000;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        }
        if (i + 1 >= argc)
            goto usage;
        long v = strtol(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--nodes") == 0)
            nodes = v;
        else if (strcmp(argv[i], "--racks") == 0)
            racks = v;
        else if (strcmp(argv[i], "--batch") == 0)
            batch = v;
        else if (strcmp(argv[i], "--batches") == 0)
            batches = v;
        else if (strcmp(argv[i], "--seed") == 0)
            bench__g.s = (uint64_t)v;
        else if (strcmp(argv[i], "--sched-nodes") == 0)
            sched_nodes = v;
        else if (strcmp(argv[i], "--sched-slots") == 0)
            sched_slots = v;
        else if (strcmp(argv[i], "--placements") == 0)
            placements = v;
        else
            goto usage;
        i++;
    }
    if (nodes < 10 || nodes > 1000000 || racks < 1 || racks > nodes || batch < 1 ||
        batch > 100000 || batches < 1 || batches > 100000 || sched_nodes < 1 ||
        sched_nodes > 10000 || sched_slots < 1 || sched_slots > 16 || placements < 1 ||
        placements > 200000)
        goto usage;

    /* The view: R racks, 6x7 matrices with waits drawn so some nodes are idle and most busy. */
    view_t *view = NULL;
    if (view_new(&view) != 0)
        return 1;
    double cpu_bins[6] = {0.5, 1, 2, 4, 8, 16};
    double mem_bins[7] = {1024, 2048, 4096, 8192, 16384, 32768, 65536};
    double cells[42];
    for (long i = 0; i < nodes; i++) {
        char name[32], rack[32];
        snprintf(name, sizeof name, "pn-%ld", i);
        snprintf(rack, sizeof rack, "rack-%ld", i % racks);
        double base = bench__unif() < 0.2 ? 0 : bench__unif() * 30;
        for (int c = 0; c < 6; c++)
            for (int m = 0; m < 7; m++)
                cells[c * 7 + m] = base * (1 + 0.2 * (c + m));
        struct view_entry e = {.name = name,
                               .rack = rack,
                               .cpu = 16,
                               .mem_mb = 65536,
                               .up = 1,
                               .boot_id = 1,
                               .seq = 1,
                               .age_ms = (uint64_t)(bench__unif() * 5000),
                               .successes = 100,
                               .failures = bench__next() % 5,
                               .ncpu = 6,
                               .nmem = 7,
                               .cpu_bins = cpu_bins,
                               .mem_bins_mb = mem_bins,
                               .wait_s = cells};
        if (view_update(view, &e, 10000) != 1)
            return 1;
    }
    view_refresh_light(view, (size_t)(nodes / 10));
    estimator_t *est = NULL;
    matcher_t *m = NULL;
    if (estimator_new(NULL, 4, &est) != 0 || matcher_new((size_t)nodes, &m) != 0)
        return 1;
    struct matcher_cand_config cc;
    matcher_cand_config_default(&cc);

    struct bench_task *tasks = calloc((size_t)batch, sizeof *tasks);
    size_t *off = calloc((size_t)batch + 1, sizeof *off);
    struct matcher_cand *cand = calloc((size_t)batch * BENCH_CAND_CAP, sizeof *cand);
    struct matcher_match *out = calloc((size_t)batch, sizeof *out);
    if (tasks == NULL || off == NULL || cand == NULL || out == NULL)
        return 1;
    double t_cand = 0, t_match = 0, t_greedy = 0, t_opt = 0, worst_match = 0;
    size_t placed = 0, ncands = 0, opt_batches = 0;
    for (long b = 0; b < batches; b++) {
        for (long i = 0; i < batch; i++) {
            struct bench_task *bt = &tasks[i];
            for (int r = 0; r < BENCH_REPLICAS; r++)
                bt->replicas[r] = (int32_t)(bench__next() % (uint64_t)nodes);
            bt->in = (struct estimator_input){(uint64_t)(bench__unif() * 2e9), bt->replicas,
                                              BENCH_REPLICAS};
            bt->t = (struct estimator_task){.stage = (size_t)(i % 4),
                                            .cpu = 1 + (double)(i % 3),
                                            .mem_mb = 2048,
                                            .runtime_s = 10 + bench__unif() * 50,
                                            .input_bytes = bt->in.bytes,
                                            .inputs = &bt->in,
                                            .ninputs = 1};
        }
        double t0 = bench__now();
        size_t k = 0;
        for (long i = 0; i < batch; i++) {
            uint32_t cn[BENCH_CAND_CAP];
            double draws[3] = {bench__unif(), bench__unif(), bench__unif()};
            size_t n = matcher_candidates(m, view, &tasks[i].t, &cc, draws, 3, cn, BENCH_CAND_CAP);
            off[i] = k;
            for (size_t c = 0; c < n; c++) {
                struct estimate e;
                double cost =
                    estimator_estimate(est, view, &tasks[i].t, cn[c], 12000, bench__unif(), &e);
                cand[k++] = (struct matcher_cand){cn[c], cost, e.w_s};
            }
        }
        off[batch] = k;
        ncands += k;
        double t1 = bench__now();
        struct matcher_batch mb = {(size_t)batch, off, cand};
        size_t nm = 0;
        if (matcher_stable(m, &mb, 3, out, &nm) != 0)
            return 1;
        double t2 = bench__now();
        placed += nm;
        t_cand += t1 - t0;
        t_match += t2 - t1;
        if (t2 - t1 > worst_match)
            worst_match = t2 - t1;
        size_t ng = 0;
        double t3 = bench__now();
        matcher_greedy(m, &mb, out, &ng);
        t_greedy += bench__now() - t3;
        if (b < 3) { /* the exact optimum is slow: a few batches for reference */
            size_t no = 0;
            double t4 = bench__now();
            if (matcher_optimal(m, &mb, out, &no) == 0) {
                t_opt += bench__now() - t4;
                opt_batches++;
            }
        }
    }
    /* The same work through jm/place (the glue the daemon and simulator use), from a spec. */
    struct spec *sp = bench__spec(batch, nodes);
    place_t *pl = NULL;
    struct place_match *pm = calloc((size_t)batch, sizeof *pm);
    size_t *order = calloc((size_t)batch, sizeof *order);
    double t_place = 0;
    size_t placed2 = 0;
    if (sp == NULL || pm == NULL || order == NULL || place_new(sp, NULL, &pl) != 0 ||
        place_resolve(pl, view) != 0)
        return 1;
    for (long i = 0; i < batch; i++)
        order[i] = (size_t)i;
    for (long b = 0; b < batches; b++) {
        size_t nm = 0;
        double t0 = bench__now();
        if (place_round(pl, view, est, order, (size_t)batch, 12000, bench__draw, NULL, pm, &nm) !=
            0)
            return 1;
        t_place += bench__now() - t0;
        placed2 += nm;
    }
    double rate_place = (double)placed2 / t_place;
    place_destroy(&pl);
    spec_destroy(&sp);
    free(pm);
    free(order);

    /* The JM's CPU time per placed task as the ready set grows. The re-sorting way costs a sort
       of the whole ready set per round: it places fewer tasks at the larger sizes (the same
       figure per task, in less time). */
    static const long sizes[3] = {2000, 20000, 200000};
    struct bench_sched bq[3], br[3];
    for (int k = 0; k < 3; k++) {
        struct spec *job = bench__job(sizes[k], sched_nodes);
        if (job == NULL)
            return 1;
        size_t tr = (size_t)placements * 2000 / (size_t)sizes[k];
        if (tr < 32)
            tr = 32;
        if (bench__sched(job, sched_nodes, sched_slots, (size_t)placements, 0, &bq[k]) != 0 ||
            bench__sched(job, sched_nodes, sched_slots, tr, 1, &br[k]) != 0) {
            fprintf(stderr, "bench_jm: the scheduling run of %ld tasks failed\n", sizes[k]);
            return 1;
        }
        spec_destroy(&job);
    }

    double total = t_cand + t_match;
    double rate = (double)placed / total;
    double per_batch_ms = t_match / (double)batches * 1e3;
    double full_batch_ms = total / (double)batches * 1e3;
    if (json) {
        printf("{\"nodes\": %ld, \"racks\": %ld, \"batch\": %ld, \"batches\": %ld, "
               "\"placed\": %zu, \"candidates_per_task\": %.1f, "
               "\"placements_per_s\": %.0f, \"stable_match_ms\": %.3f, "
               "\"stable_match_worst_ms\": %.3f, \"batch_with_estimates_ms\": %.3f, "
               "\"greedy_match_ms\": %.3f, \"optimal_match_ms\": %.1f, "
               "\"place_round_placements_per_s\": %.0f, \"sched_nodes\": %ld, "
               "\"sched_slots\": %ld, \"cpu_us_per_task_ready_2000\": %.2f, "
               "\"cpu_us_per_task_ready_20000\": %.2f, \"cpu_us_per_task_ready_200000\": %.2f, "
               "\"resort_cpu_us_per_task_ready_2000\": %.2f, "
               "\"resort_cpu_us_per_task_ready_20000\": %.2f, "
               "\"resort_cpu_us_per_task_ready_200000\": %.2f, \"tasks_per_round\": %.2f, "
               "\"resort_tasks_per_round\": %.2f}\n",
               nodes, racks, batch, batches, placed, (double)ncands / (double)(batch * batches),
               rate, per_batch_ms, worst_match * 1e3, full_batch_ms,
               t_greedy / (double)batches * 1e3,
               opt_batches ? t_opt / (double)opt_batches * 1e3 : -1.0, rate_place, sched_nodes,
               sched_slots, bq[0].us_per_task, bq[1].us_per_task, bq[2].us_per_task,
               br[0].us_per_task, br[1].us_per_task, br[2].us_per_task,
               bq[2].rounds ? (double)bq[2].placed / (double)bq[2].rounds : 0,
               br[2].rounds ? (double)br[2].placed / (double)br[2].rounds : 0);
    } else {
        printf("JM placement on a %ld-node view (%ld racks), %ld batches of %ld tasks:\n", nodes,
               racks, batches, batch);
        printf("  candidates per task          %.1f\n", (double)ncands / (double)(batch * batches));
        printf("  placements per second        %.0f  (candidates + estimates + stable match, "
               "one core; target >= 100000)\n",
               rate);
        printf("  tasks matched per batch      %.1f of %ld\n", (double)placed / (double)batches,
               batch);
        printf("  stable match of one batch    %.3f ms mean, %.3f ms worst  (target < 10 ms)\n",
               per_batch_ms, worst_match * 1e3);
        printf("  batch incl. candidate sets and estimates  %.3f ms\n", full_batch_ms);
        printf("  placements per second via jm/place (the daemon's path)  %.0f\n", rate_place);
        printf("  greedy match of one batch    %.3f ms\n", t_greedy / (double)batches * 1e3);
        if (opt_batches)
            printf("  optimal (Hungarian) match    %.1f ms  (reference, %zu batches)\n",
                   t_opt / (double)opt_batches * 1e3, opt_batches);
        else
            printf("  optimal (Hungarian) match    not run: tasks x distinct candidate nodes is "
                   "over its dense-matrix bound (try --nodes 2000)\n");
        printf("JM CPU time per placed task, a job of N ready one-core tasks on %ld node(s) of "
               "%ld cores:\n",
               sched_nodes, sched_slots);
        printf("  %-9s %14s %9s %9s   %14s %9s %9s\n", "ready", "queue us/task", "placed", "/round",
               "resort us/task", "placed", "/round");
        for (int k = 0; k < 3; k++)
            printf("  %-9ld %14.2f %9zu %9.2f   %14.2f %9zu %9.2f\n", sizes[k], bq[k].us_per_task,
                   bq[k].placed, bq[k].rounds ? (double)bq[k].placed / (double)bq[k].rounds : 0,
                   br[k].us_per_task, br[k].placed,
                   br[k].rounds ? (double)br[k].placed / (double)br[k].rounds : 0);
        printf("  (queue: the daemon's ready queue and filling rounds; resort: each round sorting "
               "the whole ready set, one task per node)\n");
    }
    free(tasks);
    free(off);
    free(cand);
    free(out);
    matcher_destroy(&m);
    estimator_destroy(&est);
    view_destroy(&view);
    return 0;
usage:
    fprintf(stderr, "usage: bench_jm [--nodes N] [--racks R] [--batch B] [--batches K] "
                    "[--seed S]\n"
                    "                [--sched-nodes K] [--sched-slots 1..16] "
                    "[--placements 1..200000] [--json]\n");
    return 2;
}
