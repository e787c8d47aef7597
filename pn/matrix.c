#include "pn/matrix.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

static const double matrix__cpu_default[] = {0.5, 1, 2, 4, 8, 16};
static const double matrix__mem_default[] = {1024, 2048, 4096, 8192, 16384, 32768, 65536};

static int matrix__ascending(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] > 0) || isinf(v[i]) || (i && !(v[i] > v[i - 1])))
            return 0;
    }
    return 1;
}

int matrix_init(matrix_t *m, const double *cpu_bins, size_t ncpu, const double *mem_bins,
                size_t nmem)
{
    if (!ncpu) {
        cpu_bins = matrix__cpu_default;
        ncpu = sizeof matrix__cpu_default / sizeof *matrix__cpu_default;
    }
    if (!nmem) {
        mem_bins = matrix__mem_default;
        nmem = sizeof matrix__mem_default / sizeof *matrix__mem_default;
    }
    if (ncpu > MATRIX_MAX_BINS || nmem > MATRIX_MAX_BINS || !matrix__ascending(cpu_bins, ncpu) ||
        !matrix__ascending(mem_bins, nmem))
        return ERR_INVAL;
    memset(m, 0, sizeof *m);
    m->ncpu = ncpu;
    m->nmem = nmem;
    memcpy(m->cpu_bins, cpu_bins, ncpu * sizeof *cpu_bins);
    memcpy(m->mem_bins, mem_bins, nmem * sizeof *mem_bins);
    return 0;
}

int matrix_parse_bins(const char *s, double *out, char *msg, size_t cap)
{
    size_t n = 0;
    const char *p = s;
    while (*p) {
        if (n == MATRIX_MAX_BINS)
            return err_fmt(msg, cap, ERR_RANGE, "more than %d bins", MATRIX_MAX_BINS);
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !(v > 0) || isinf(v))
            return err_fmt(msg, cap, ERR_PARSE, "bad bin value at \"%s\"", p);
        if (n && !(v > out[n - 1]))
            return err_fmt(msg, cap, ERR_RANGE, "bins must be strictly ascending");
        out[n++] = v;
        while (*end == ' ')
            end++;
        if (*end == ',')
            end++;
        else if (*end)
            return err_fmt(msg, cap, ERR_PARSE, "expected ',' at \"%s\"", end);
        while (*end == ' ')
            end++;
        p = end;
    }
    if (!n)
        return err_fmt(msg, cap, ERR_PARSE, "no bins");
    return (int)n;
}

int matrix_compute(matrix_t *m, const queue_t *q, double now, loadprof_t *scratch)
{
    int rc = queue_simulate(q, now, scratch);
    if (rc)
        return rc;
    for (size_t c = 0; c < m->ncpu; c++) {
        for (size_t k = 0; k < m->nmem; k++) {
            double at = loadprof_fit(scratch, m->cpu_bins[c], m->mem_bins[k], INFINITY);
            m->wait_s[c][k] = isinf(at) ? MATRIX_NEVER : (at > now ? at - now : 0);
        }
    }
    m->computed_at = now;
    return 0;
}

double matrix_lookup(const matrix_t *m, double cpu, double mem_mb)
{
    size_t c = 0, k = 0;
    while (c < m->ncpu && m->cpu_bins[c] < cpu)
        c++;
    while (k < m->nmem && m->mem_bins[k] < mem_mb)
        k++;
    if (c == m->ncpu || k == m->nmem)
        return MATRIX_NEVER;
    return m->wait_s[c][k];
}
