/* amdahl.c - Jockey §4.1's modified Amdahl's law. */
#include "jm/amdahl.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

int amdahl_init(struct amdahl *am, int nstages, const int *n, const double *l, const double *L,
                const double *T)
{
    if (am == NULL || nstages < 1 || n == NULL || l == NULL || L == NULL || T == NULL)
        return ERR_INVAL;
    for (int s = 0; s < nstages; s++) {
        if (n[s] < 0 || !isfinite(l[s]) || !isfinite(L[s]) || !isfinite(T[s]) || l[s] < 0 ||
            L[s] < 0 || T[s] < 0)
            return ERR_INVAL;
    }
    struct amdahl a = {.nstages = nstages};
    a.n = mem_calloc((size_t)nstages, sizeof *a.n);
    a.l = mem_calloc((size_t)nstages, sizeof *a.l);
    a.L = mem_calloc((size_t)nstages, sizeof *a.L);
    a.T = mem_calloc((size_t)nstages, sizeof *a.T);
    if (a.n == NULL || a.l == NULL || a.L == NULL || a.T == NULL) {
        amdahl_close(&a);
        return ERR_NOMEM;
    }
    memcpy(a.n, n, (size_t)nstages * sizeof *n);
    memcpy(a.l, l, (size_t)nstages * sizeof *l);
    memcpy(a.L, L, (size_t)nstages * sizeof *L);
    memcpy(a.T, T, (size_t)nstages * sizeof *T);
    *am = a;
    am->S0 = amdahl_serial(am, NULL);
    am->P0 = amdahl_parallel(am, NULL);
    return 0;
}

void amdahl_close(struct amdahl *am)
{
    if (am == NULL)
        return;
    mem_free(am->n);
    mem_free(am->l);
    mem_free(am->L);
    mem_free(am->T);
    memset(am, 0, sizeof *am);
}

static double amdahl__frac(const struct amdahl *am, const int *done, int s)
{
    if (done == NULL || am->n[s] <= 0)
        return am->n[s] <= 0 ? 1.0 : 0.0;
    int d = done[s];
    if (d < 0)
        d = 0;
    if (d > am->n[s])
        d = am->n[s];
    return (double)d / am->n[s];
}

double amdahl_serial(const struct amdahl *am, const int *done)
{
    double best = 0;
    for (int s = 0; s < am->nstages; s++) {
        double f = amdahl__frac(am, done, s);
        if (f >= 1.0)
            continue;
        double v = (1.0 - f) * am->l[s] + am->L[s];
        if (v > best)
            best = v;
    }
    return best;
}

double amdahl_parallel(const struct amdahl *am, const int *done)
{
    double sum = 0;
    for (int s = 0; s < am->nstages; s++) {
        double f = amdahl__frac(am, done, s);
        if (f < 1.0)
            sum += (1.0 - f) * am->T[s];
    }
    return sum;
}

double amdahl_remaining(const struct amdahl *am, const int *done, double a)
{
    if (!(a >= 1.0))
        a = 1.0;
    return amdahl_serial(am, done) + amdahl_parallel(am, done) / a;
}
