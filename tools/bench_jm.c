/* bench_jm.c - JM placement rate on a synthetic 20,000-node view (DESIGN.md 5: at least 100,000
 * placements per second per JM core; a 1,000-task batch matched in under 10 ms).
 *
 * A placement is the whole per-task path the JM runs: candidate set (input holders, their
 * rack-mates, two random lightly-loaded nodes), an estimate (E = I + W + R, C) for every
 * candidate, and the stable matcher over the batch. Prints figures; not a test.
 *
 * usage: bench_jm [--nodes N] [--racks R] [--batch B] [--batches K] [--seed S] [--json]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jm/estimator.h"
#include "jm/matcher.h"
#include "jm/place.h"
#include "jm/spec.h"
#include "jm/view.h"

static uint64_t bench__s = 1;
static uint64_t bench__next(void)
{
    uint64_t z = (bench__s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double bench__unif(void)
{
    return (double)(bench__next() >> 11) / 9007199254740992.0;
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

int main(int argc, char **argv)
{
    long nodes = 20000, racks = 500, batch = 1000, batches = 100;
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
            bench__s = (uint64_t)v;
        else
            goto usage;
        i++;
    }
    if (nodes < 10 || nodes > 1000000 || racks < 1 || racks > nodes || batch < 1 ||
        batch > 100000 || batches < 1 || batches > 100000)
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
               "\"place_round_placements_per_s\": %.0f}\n",
               nodes, racks, batch, batches, placed, (double)ncands / (double)(batch * batches),
               rate, per_batch_ms, worst_match * 1e3, full_batch_ms,
               t_greedy / (double)batches * 1e3,
               opt_batches ? t_opt / (double)opt_batches * 1e3 : -1.0, rate_place);
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
                    "[--seed S] [--json]\n");
    return 2;
}
