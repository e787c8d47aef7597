/* sim_match.c - `paddock-sim match`: matching quality on Apollo's Figure 12 setup (§5.5).
 *
 * "We measure the amount of time it takes for a workload of N tasks to complete on 100 servers,
 * using the greedy, stable matching, and optimal matching algorithms ... Each server has a single
 * execution slot and have an expected wait time that is exponentially distributed with an
 * average of 1. The expected runtime of each tasks is exponentially distributed with an average
 * of 1. Each task is randomly assigned a server preference and runs faster on the preferred
 * server."
 *
 * Model (the paper leaves these open; our choices): task t has runtime r_t ~ Exp(1) on any server
 * and r_t / speedup on its preferred server (uniform; --speedup, default 2). Scheduling proceeds
 * in batches as in the JM: a batch holds the ready tasks (all unassigned tasks, which share one
 * priority; --batch B takes only the first B), the cost of task t on server s is
 * C = avail_s + runtime(t, s) (avail_s starts at the server's Exp(1) initial wait and grows by
 * the runtime of each task appended to its queue) with W = avail_s, each matcher assigns at most
 * one task per server per batch (as Apollo does), and batches repeat until every task is
 * assigned. All matchers are jm/matcher.c's, the code the JM runs: stable (--iterations,
 * default 3, Apollo's "usually converges in less than 3 iterations"; tasks it leaves unmatched
 * wait for the next batch, as Apollo postpones low-quality matches), greedy in task order, and
 * the exact per-batch optima: "optimal" minimises the batch's latest completion (bottleneck
 * assignment, then least sum), "optimal_sum" the sum of C (plain Hungarian). Both optima, like
 * greedy, match as many tasks as a batch allows; so does "stable_converged", the stable matcher
 * run until no task can propose, printed to show what the bounded iterations change. The
 * workload completion time is the finish of
 * the last task. The lower bound is the larger of the best single-task finish and the water level
 * at which the servers' time after their initial waits holds all the work at each task's fastest
 * runtime.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/rng.h"
#include "common/mem.h"
#include "jm/matcher.h"
#include "tools/cli.h"

#define SIM_MATCH_MAX_TASKS   100000
#define SIM_MATCH_MAX_SERVERS 10000

struct sim_workload {
    size_t n, s;
    double *wait0;   /* per server */
    double *runtime; /* per task, on a non-preferred server */
    uint32_t *pref;  /* per task */
    double speedup;
};

static double sim__rt(const struct sim_workload *w, size_t t, size_t s)
{
    return w->pref[t] == s ? w->runtime[t] / w->speedup : w->runtime[t];
}

enum sim_alg { SIM_STABLE, SIM_GREEDY, SIM_OPTIMAL, SIM_OPTIMAL_SUM };

/* Runs the batched assignment with one matcher; returns the completion time or < 0 on error. */
static double sim__run(const struct sim_workload *w, enum sim_alg alg, int iterations, size_t batch)
{
    size_t n = w->n, s = w->s;
    double *avail = mem_calloc(s, sizeof *avail);
    size_t *left = mem_calloc(n, sizeof *left);
    size_t *off = mem_calloc(n + 1, sizeof *off);
    struct matcher_cand *cand = mem_calloc(n * s, sizeof *cand);
    struct matcher_match *out = mem_calloc(n, sizeof *out);
    unsigned char *done = mem_calloc(n, 1);
    matcher_t *m = NULL;
    double makespan = -1;
    if (avail == NULL || left == NULL || off == NULL || cand == NULL || out == NULL ||
        done == NULL || matcher_new(s, &m) != 0)
        goto out;
    memcpy(avail, w->wait0, s * sizeof *avail);
    size_t nleft = n;
    for (size_t i = 0; i < n; i++)
        left[i] = i;
    double finish = 0;
    while (nleft > 0) {
        size_t k = 0, nb = nleft < batch ? nleft : batch;
        for (size_t i = 0; i < nb; i++) {
            off[i] = k;
            for (size_t j = 0; j < s; j++)
                cand[k++] =
                    (struct matcher_cand){(uint32_t)j, avail[j] + sim__rt(w, left[i], j), avail[j]};
        }
        off[nb] = k;
        struct matcher_batch b = {nb, off, cand};
        size_t nm = 0;
        int rc = alg == SIM_STABLE    ? matcher_stable(m, &b, iterations, out, &nm)
                 : alg == SIM_GREEDY  ? matcher_greedy(m, &b, out, &nm)
                 : alg == SIM_OPTIMAL ? matcher_optimal_bottleneck(m, &b, out, &nm)
                                      : matcher_optimal(m, &b, out, &nm);
        if (rc != 0 || nm == 0)
            goto out;
        for (size_t i = 0; i < nm; i++) {
            size_t t = left[out[i].task];
            avail[out[i].node] += sim__rt(w, t, out[i].node);
            if (avail[out[i].node] > finish)
                finish = avail[out[i].node];
            done[t] = 1;
        }
        size_t wpos = 0;
        for (size_t i = 0; i < nleft; i++)
            if (!done[left[i]])
                left[wpos++] = left[i];
        nleft = wpos;
    }
    makespan = finish;
out:
    matcher_destroy(&m);
    mem_free(avail);
    mem_free(left);
    mem_free(off);
    mem_free(cand);
    mem_free(out);
    mem_free(done);
    return makespan;
}

static int sim__dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double sim__lower_bound(const struct sim_workload *w)
{
    double work = 0, single = 0;
    for (size_t t = 0; t < w->n; t++) {
        double best = INFINITY, fastest = INFINITY;
        for (size_t j = 0; j < w->s; j++) {
            double rt = sim__rt(w, t, j);
            if (w->wait0[j] + rt < best)
                best = w->wait0[j] + rt;
            if (rt < fastest)
                fastest = rt;
        }
        work += fastest;
        if (best > single)
            single = best;
    }
    /* water level x: sum over servers of max(0, x - wait0) = work */
    double *wv = mem_calloc(w->s, sizeof *wv);
    if (wv == NULL)
        return single;
    memcpy(wv, w->wait0, w->s * sizeof *wv);
    qsort(wv, w->s, sizeof *wv, sim__dbl_cmp);
    double level = wv[0], acc = 0; /* acc = sum of wv[0..k) */
    for (size_t k = 1; k <= w->s; k++) {
        acc += wv[k - 1];
        double x = (work + acc) / (double)k; /* level using the k lowest servers */
        if (k == w->s || x <= wv[k]) {
            level = x;
            break;
        }
    }
    mem_free(wv);
    return level > single ? level : single;
}

static int sim__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock-sim match --tasks N --servers S [--seed S] [--speedup X]\n"
            "                         [--iterations K] [--batch B] [--json]\n");
    return 2;
}

static int sim_match_main(int argc, char **argv)
{
    long tasks = 100, servers = 100, iterations = 3, batch = 0;
    unsigned long long seed = 1;
    double speedup = 2.0;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (i + 1 >= argc)
            return sim__usage();
        const char *v = argv[++i];
        if (strcmp(a, "--tasks") == 0)
            tasks = strtol(v, &end, 10);
        else if (strcmp(a, "--servers") == 0)
            servers = strtol(v, &end, 10);
        else if (strcmp(a, "--seed") == 0)
            seed = strtoull(v, &end, 10);
        else if (strcmp(a, "--batch") == 0)
            batch = strtol(v, &end, 10);
        else if (strcmp(a, "--iterations") == 0)
            iterations = strtol(v, &end, 10);
        else if (strcmp(a, "--speedup") == 0)
            speedup = strtod(v, &end);
        else
            return sim__usage();
        if (end == v || *end != '\0') {
            fprintf(stderr, "paddock-sim match: bad value for %s: '%s'\n", a, v);
            return 2;
        }
    }
    if (tasks < 1 || tasks > SIM_MATCH_MAX_TASKS || servers < 1 ||
        servers > SIM_MATCH_MAX_SERVERS || iterations < 1 || iterations > 1000 || !(speedup >= 1) ||
        !(speedup <= 1000)) {
        fprintf(stderr,
                "paddock-sim match: --tasks 1..%d, --servers 1..%d, --iterations "
                "1..1000, --speedup 1..1000\n",
                SIM_MATCH_MAX_TASKS, SIM_MATCH_MAX_SERVERS);
        return 2;
    }
    if ((double)tasks * (double)servers > 1e7) {
        fprintf(stderr,
                "paddock-sim match: tasks x servers over 1e7 (the exact optimum is dense)\n");
        return 2;
    }
    struct sim_workload w = {(size_t)tasks, (size_t)servers, NULL, NULL, NULL, speedup};
    w.wait0 = mem_calloc(w.s, sizeof *w.wait0);
    w.runtime = mem_calloc(w.n, sizeof *w.runtime);
    w.pref = mem_calloc(w.n, sizeof *w.pref);
    int rc = 1;
    if (w.wait0 == NULL || w.runtime == NULL || w.pref == NULL) {
        fprintf(stderr, "paddock-sim match: out of memory\n");
        goto out;
    }
    struct rng rng = {seed * 0x2545f4914f6cdd1dull + 1};
    for (size_t j = 0; j < w.s; j++)
        w.wait0[j] = rng_exp(&rng, 1.0);
    for (size_t t = 0; t < w.n; t++) {
        w.runtime[t] = rng_exp(&rng, 1.0);
        w.pref[t] = (uint32_t)(rng_next(&rng) % w.s);
    }
    size_t nb = batch > 0 ? (size_t)batch : w.n;
    double st = sim__run(&w, SIM_STABLE, (int)iterations, nb);
    /* the same matcher run until no task can propose (every batch a maximal matching) */
    double sc = sim__run(&w, SIM_STABLE, (int)(w.n + 1 < 1000000 ? w.n + 1 : 1000000), nb);
    double gr = sim__run(&w, SIM_GREEDY, 0, nb);
    double op = sim__run(&w, SIM_OPTIMAL, 0, nb);
    double os = sim__run(&w, SIM_OPTIMAL_SUM, 0, nb);
    double lb = sim__lower_bound(&w);
    if (st < 0 || sc < 0 || gr < 0 || op < 0 || os < 0) {
        fprintf(stderr, "paddock-sim match: a matcher failed (out of memory?)\n");
        goto out;
    }
    if (json)
        printf("{\"tasks\": %ld, \"servers\": %ld, \"seed\": %llu, \"stable\": %.6f, "
               "\"greedy\": %.6f, \"optimal\": %.6f, \"lower_bound\": %.6f, "
               "\"optimal_sum\": %.6f, \"stable_converged\": %.6f, \"iterations\": %ld}\n",
               tasks, servers, seed, st, gr, op, lb, os, sc, iterations);
    else
        printf("tasks %ld servers %ld seed %llu: completion time stable %.3f greedy %.3f "
               "optimal %.3f lower bound %.3f (stable/optimal %.3f, greedy/optimal %.3f; "
               "sum-optimal %.3f, stable run to convergence %.3f)\n",
               tasks, servers, seed, st, gr, op, lb, st / op, gr / op, os, sc);
    rc = 0;
out:
    mem_free(w.wait0);
    mem_free(w.runtime);
    mem_free(w.pref);
    return rc;
}

CLI_COMMAND("match", "matching quality on Apollo's Figure 12 setup (stable, greedy, optimal)",
            sim_match_main, sim__usage)
