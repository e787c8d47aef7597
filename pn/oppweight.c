/* oppweight.c - the two-level opportunistic pick (see oppweight.h; Apollo §3.5). */
#include "pn/oppweight.h"

#include <math.h>

static double oppweight__w(double w)
{
    if (!(w > 0))
        return 1;
    return w < OPPWEIGHT_MIN ? OPPWEIGHT_MIN : w > OPPWEIGHT_MAX ? OPPWEIGHT_MAX : w;
}

/* A job's eligible tasks: their count and weight sum. The first eligible candidate of a job is
 * its representative (jobs are visited in order of first appearance: deterministic). */
struct oppweight__job {
    uint64_t job;
    double sum;
    size_t n;
};

/* Sums of job `j` over the eligible candidates. */
static void oppweight__sums(const struct oppweight_cand *c, size_t n, uint64_t j, double *sum,
                            size_t *cnt)
{
    *sum = 0;
    *cnt = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].eligible && c[i].job == j) {
            *sum += oppweight__w(c[i].weight);
            (*cnt)++;
        }
}

/* 1 when candidate i is the first eligible one of its job. */
static int oppweight__first(const struct oppweight_cand *c, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (c[k].eligible && c[k].job == c[i].job)
            return 0;
    return 1;
}

/* Fills jobs[] in order of first appearance; returns their count, or cap + 1 when there are
 * more than cap distinct jobs. */
static size_t oppweight__jobs(const struct oppweight_cand *c, size_t n, struct oppweight__job *jobs,
                              size_t cap)
{
    size_t nj = 0;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].eligible)
            continue;
        size_t k = 0;
        while (k < nj && jobs[k].job != c[i].job)
            k++;
        if (k == nj) {
            if (nj == cap)
                return cap + 1;
            jobs[nj].job = c[i].job;
            jobs[nj].sum = 0;
            jobs[nj].n = 0;
            nj++;
        }
        jobs[k].sum += oppweight__w(c[i].weight);
        jobs[k].n++;
    }
    return nj;
}

/* Level 1 by scanning, for more than OPPWEIGHT_STACK jobs (O(n^2), no allocation): the job of
 * the draw and the draw's remainder within its share, rescaled to [0, 1). */
static uint64_t oppweight__scan(const struct oppweight_cand *c, size_t n, double *draw)
{
    double total = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].eligible && oppweight__first(c, i)) {
            double s;
            size_t m;
            oppweight__sums(c, n, c[i].job, &s, &m);
            total += s / (double)m;
        }
    double target = *draw * total, acc = 0;
    uint64_t job = 0;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].eligible || !oppweight__first(c, i))
            continue;
        double s;
        size_t m;
        oppweight__sums(c, n, c[i].job, &s, &m);
        double mean = s / (double)m;
        job = c[i].job;
        *draw = (target - acc) / mean;
        if (target < acc + mean)
            break;
        acc += mean;
    }
    return job;
}

long oppweight_pick(const struct oppweight_cand *c, size_t n, double draw)
{
    if (!(draw >= 0) || draw >= 1)
        draw = 0;
    struct oppweight__job jobs[OPPWEIGHT_STACK];
    size_t nj = oppweight__jobs(c, n, jobs, OPPWEIGHT_STACK);
    if (nj == 0)
        return -1;
    uint64_t job;
    if (nj <= OPPWEIGHT_STACK) {
        /* Level 1: a job by its mean weight. */
        double total = 0;
        for (size_t k = 0; k < nj; k++)
            total += jobs[k].sum / (double)jobs[k].n;
        double target = draw * total, acc = 0;
        size_t k = 0;
        for (;; k++) {
            double mean = jobs[k].sum / (double)jobs[k].n;
            if (target < acc + mean || k + 1 == nj) {
                draw = (target - acc) / mean;
                break;
            }
            acc += mean;
        }
        job = jobs[k].job;
    } else {
        job = oppweight__scan(c, n, &draw);
    }
    /* Level 2: a task of that job by its weight, with the draw's remainder. */
    if (!(draw >= 0))
        draw = 0;
    if (draw >= 1)
        draw = 1 - 1e-12;
    double jsum;
    size_t m;
    oppweight__sums(c, n, job, &jsum, &m);
    double target = draw * jsum, acc = 0;
    long last = -1;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].eligible || c[i].job != job)
            continue;
        last = (long)i;
        acc += oppweight__w(c[i].weight);
        if (target < acc)
            break;
    }
    return last;
}

double oppweight_prob(const struct oppweight_cand *c, size_t n, size_t i)
{
    if (i >= n || !c[i].eligible)
        return 0;
    double total = 0;
    for (size_t k = 0; k < n; k++)
        if (c[k].eligible && oppweight__first(c, k)) {
            double s;
            size_t m;
            oppweight__sums(c, n, c[k].job, &s, &m);
            total += s / (double)m;
        }
    double s;
    size_t m;
    oppweight__sums(c, n, c[i].job, &s, &m);
    if (!(total > 0) || !(s > 0))
        return 0;
    return (s / (double)m) / total * (oppweight__w(c[i].weight) / s);
}

double oppweight_job_weight(uint32_t tokens, double ref_tokens)
{
    if (!(ref_tokens > 0))
        ref_tokens = 1;
    return oppweight__w(tokens ? (double)tokens / ref_tokens : OPPWEIGHT_MIN);
}
