/* slo.c - deadline inference from a recurring job's history (see slo.h). */
#include "rm/slo.h"

#include "common/err.h"
#include "common/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void slo_params_default(struct slo_params *p)
{
    if (p == NULL)
        return;
    p->min_runs = 3;
    p->cv_max = 0.25;
    p->slack_min = 0.1;
    p->read_pct = 50;
    p->completion_pct = 95;
    p->completion_margin = 1.2;
}

const char *slo_source_name(uint8_t source)
{
    switch (source) {
    case SLO_CONSUMERS:
        return "consumers";
    case SLO_COMPLETION:
        return "completion";
    default:
        return "none";
    }
}

static int slo__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double slo_percentile(double *v, size_t n, double pct)
{
    if (v == NULL || n == 0)
        return 0;
    qsort(v, n, sizeof *v, slo__cmp);
    if (!(pct > 0))
        return v[0]; /* rank 1 (NaN too) */
    if (pct >= 100)
        return v[n - 1];
    /* Nearest rank: the smallest value with at least pct % of the values at or below it,
     * rank ceil(pct/100 · n). pct·n is formed first and a hair is taken off, so 95 % of 20
     * is rank 19 and not 20 by rounding. */
    double r = ceil(pct * (double)n / 100 - 1e-9);
    size_t rank = r < 1 ? 1 : (size_t)r;
    return v[(rank > n ? n : rank) - 1];
}

static bool slo__params_ok(const struct slo_params *p)
{
    return p->cv_max >= 0 && isfinite(p->cv_max) && isfinite(p->slack_min) && p->read_pct >= 0 &&
           p->read_pct <= 100 && p->completion_pct >= 0 && p->completion_pct <= 100 &&
           p->completion_margin > 0 && isfinite(p->completion_margin);
}

static int64_t slo__ms(double x)
{
    if (!(x > -9.2e18))
        return x < 0 ? INT64_MIN : 0;
    if (x >= 9.2e18)
        return INT64_MAX;
    return llround(x);
}

int slo_infer(const struct slo_run *runs, size_t n, const struct slo_params *p,
              struct slo_inference *out)
{
    if (out == NULL || p == NULL || (runs == NULL && n > 0) || !slo__params_ok(p))
        return ERR_INVAL;
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        if (!runs[i].ok)
            continue;
        if (runs[i].end < runs[i].start)
            return ERR_INVAL;
        ok++;
    }
    memset(out, 0, sizeof *out);
    out->source = SLO_NONE;
    out->runs = ok > UINT32_MAX ? UINT32_MAX : (uint32_t)ok;
    if (ok == 0)
        return 0;

    /* Three scratch arrays over the successful runs: ends, read times, slack ratios. */
    double *buf = mem_calloc(3 * ok, sizeof *buf);
    if (buf == NULL)
        return ERR_NOMEM;
    double *ends = buf, *reads = buf + ok, *slack = buf + 2 * ok;
    size_t nr = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        const struct slo_run *r = &runs[i];
        if (!r->ok)
            continue;
        ends[j++] = (double)r->end;
        if (r->out_read < 0)
            continue;
        /* A run that took no time at all is counted as 1 ms, so the ratio stays finite. */
        double took = (double)(r->end - r->start);
        reads[nr] = (double)r->out_read;
        slack[nr] = ((double)r->out_read - (double)r->end) / (took > 1 ? took : 1);
        nr++;
    }
    out->consumed = (uint32_t)(nr > UINT32_MAX ? UINT32_MAX : nr);
    out->end_pct = slo__ms(slo_percentile(ends, ok, p->completion_pct));
    if (nr > 0) {
        double median = slo_percentile(reads, nr, 50);
        out->read_median = slo__ms(median);
        out->slack_ratio = slo_percentile(slack, nr, 50);
        if (nr >= 2) {
            /* CV = MAD / median (Morpheus §4), MAD = median |x − median|; a median at the
             * period's start is taken as 1 ms so the ratio stays finite. */
            double *dev = slack; /* the slack ratios are no longer needed */
            for (size_t i = 0; i < nr; i++)
                dev[i] = fabs(reads[i] - median);
            double mad = slo_percentile(dev, nr, 50);
            out->read_cv = mad / (fabs(median) > 1 ? fabs(median) : 1);
        }
    }
    uint32_t min_runs = p->min_runs > 0 ? p->min_runs : 1;
    if (ok < min_runs) {
        mem_free(buf);
        return 0;
    }
    /* An actionable deadline needs as much evidence as any inference: min_runs consumed runs.
     * reads is still sorted, so its percentile needs no more work. */
    if (nr >= min_runs && out->read_cv <= p->cv_max && out->slack_ratio >= p->slack_min) {
        out->source = SLO_CONSUMERS;
        out->deadline = slo__ms(slo_percentile(reads, nr, p->read_pct));
    } else {
        out->source = SLO_COMPLETION;
        out->deadline = slo__ms((double)out->end_pct * p->completion_margin);
    }
    mem_free(buf);
    return 0;
}
