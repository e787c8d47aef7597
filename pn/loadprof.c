#include "pn/loadprof.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

/* Fractions of a core and of a MiB are compared with this slack so that 10 × 0.1 cores
 * fit in 1 core. */
#define LOADPROF__EPS 1e-9

void loadprof_init(loadprof_t *p, double cpus, double mem_mb)
{
    memset(p, 0, sizeof *p);
    p->cpus = cpus;
    p->mem_mb = mem_mb;
}

void loadprof_close(loadprof_t *p)
{
    mem_free(p->steps);
    p->steps = NULL;
    p->n = p->cap = 0;
}

static int loadprof__reserve(loadprof_t *p, size_t n)
{
    if (n <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap * 2 : 16;
    while (cap < n)
        cap *= 2;
    loadprof_step_t *s = mem_reallocarray(p->steps, cap, sizeof *s);
    if (!s)
        return ERR_NOMEM;
    p->steps = s;
    p->cap = cap;
    return 0;
}

int loadprof_reset(loadprof_t *p, double now)
{
    int rc = loadprof__reserve(p, 1);
    if (rc)
        return rc;
    p->steps[0] = (loadprof_step_t){.t = now, .cpu = 0, .mem = 0};
    p->n = 1;
    return 0;
}

/* Index of the segment containing t (t >= steps[0].t). */
static size_t loadprof__find(const loadprof_t *p, double t)
{
    size_t lo = 0, hi = p->n; /* steps[lo].t <= t < steps[hi].t */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->steps[mid].t <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Makes sure a step starts exactly at t; returns its index. Capacity reserved by caller. */
static size_t loadprof__split(loadprof_t *p, double t)
{
    size_t i = loadprof__find(p, t);
    if (p->steps[i].t == t)
        return i;
    memmove(&p->steps[i + 2], &p->steps[i + 1], (p->n - i - 1) * sizeof *p->steps);
    p->steps[i + 1] = p->steps[i];
    p->steps[i + 1].t = t;
    p->n++;
    return i + 1;
}

int loadprof_add(loadprof_t *p, double start, double end, double cpu, double mem)
{
    if (p->n == 0 || isnan(start) || isnan(end) || end < start || cpu < 0 || mem < 0)
        return ERR_INVAL;
    if (start < p->steps[0].t)
        start = p->steps[0].t;
    if (end <= start)
        return 0;
    int rc = loadprof__reserve(p, p->n + 2);
    if (rc)
        return rc;
    size_t i = loadprof__split(p, start);
    size_t j = isinf(end) ? p->n : loadprof__split(p, end);
    for (size_t k = i; k < j; k++) {
        p->steps[k].cpu += cpu;
        p->steps[k].mem += mem;
    }
    return 0;
}

double loadprof_fit(const loadprof_t *p, double cpu, double mem, double dur)
{
    return loadprof_fit_from(p, cpu, mem, dur, -INFINITY);
}

double loadprof_fit_from(const loadprof_t *p, double cpu, double mem, double dur, double from)
{
    if (p->n == 0 || cpu > p->cpus + LOADPROF__EPS || mem > p->mem_mb + LOADPROF__EPS)
        return INFINITY;
    double cmax = p->cpus - cpu + LOADPROF__EPS, mmax = p->mem_mb - mem + LOADPROF__EPS;
    size_t i = from > p->steps[0].t ? loadprof__find(p, from) : 0;
    while (i < p->n) {
        double end = p->steps[i].t + dur;
        size_t j = i;
        int ok = 1;
        /* A start at step i is blocked by any segment in [t_i, t_i + dur) over capacity; every
         * start before that segment is blocked too, so the next candidate is just after it. */
        while (j < p->n && (j == i || p->steps[j].t < end)) {
            if (p->steps[j].cpu > cmax || p->steps[j].mem > mmax) {
                ok = 0;
                break;
            }
            j++;
        }
        if (ok)
            return p->steps[i].t;
        i = j + 1;
    }
    return INFINITY;
}

double loadprof_fit_hinted(const loadprof_t *p, loadprof_hint_t *h, double cpu, double mem,
                           double dur)
{
    double at;
    if (h->set && cpu >= h->cpu && mem >= h->mem && dur >= h->dur) {
        if (isinf(h->at))
            return INFINITY; /* the smaller request never fitted: nor does this one */
        at = loadprof_fit_from(p, cpu, mem, dur, h->at);
    } else {
        at = loadprof_fit(p, cpu, mem, dur);
    }
    *h = (loadprof_hint_t){.cpu = cpu, .mem = mem, .dur = dur, .at = at, .set = 1};
    return at;
}

/* Sorts items by end, latest first: inlined comparisons (glibc's qsort is a merge sort through
 * a function pointer, and allocates), median of three, insertion sort for short runs. */
static void loadprof__sort(loadprof_item_t *v, size_t n)
{
    while (n > 12) {
        size_t m = n / 2;
        loadprof_item_t tmp;
#define LOADPROF__SWAP(a, b) (tmp = v[a], v[a] = v[b], v[b] = tmp)
        if (v[m].end > v[0].end)
            LOADPROF__SWAP(m, 0);
        if (v[n - 1].end > v[0].end)
            LOADPROF__SWAP(n - 1, 0);
        if (v[n - 1].end > v[m].end)
            LOADPROF__SWAP(n - 1, m);
        double pivot = v[m].end; /* v[0] >= pivot >= v[n - 1] */
        size_t i = 0, j = n - 1;
        for (;;) {
            while (v[i].end > pivot)
                i++;
            while (v[j].end < pivot)
                j--;
            if (i >= j)
                break;
            LOADPROF__SWAP(i, j);
            i++;
            j--;
        }
#undef LOADPROF__SWAP
        /* [0, j] >= pivot >= [j + 1, n): recurse into the shorter side */
        size_t left = j + 1;
        if (left < n - left) {
            loadprof__sort(v, left);
            v += left;
            n -= left;
        } else {
            loadprof__sort(v + left, n - left);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        loadprof_item_t x = v[i];
        size_t k = i;
        for (; k > 0 && v[k - 1].end < x.end; k--)
            v[k] = v[k - 1];
        v[k] = x;
    }
}

int loadprof_reset_ends(loadprof_t *p, double now, loadprof_item_t *items, size_t n)
{
    int rc = loadprof_reset(p, now);
    if (rc)
        return rc;
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(items[i].end) || isnan(items[i].cpu) || isnan(items[i].mem) || items[i].cpu < 0 ||
            items[i].mem < 0)
            return ERR_INVAL;
        if (items[i].end > now)
            items[live++] = items[i];
    }
    if ((rc = loadprof__reserve(p, live + 1)) != 0)
        return rc;
    loadprof__sort(items, live);
    size_t steps = 1; /* one step per distinct finite end, and the start */
    for (size_t i = 0; i < live; i++)
        steps += !isinf(items[i].end) && (i == 0 || items[i].end != items[i - 1].end);
    /* from the latest end back to now, each segment the sum of the items still running in it */
    double cpu = 0, mem = 0;
    size_t k = steps, i = 0;
    while (i < live && isinf(items[i].end)) {
        cpu += items[i].cpu;
        mem += items[i].mem;
        i++;
    }
    while (i < live) {
        double end = items[i].end;
        p->steps[--k] = (loadprof_step_t){.t = end, .cpu = cpu, .mem = mem};
        for (; i < live && items[i].end == end; i++) {
            cpu += items[i].cpu;
            mem += items[i].mem;
        }
    }
    p->steps[0] = (loadprof_step_t){.t = now, .cpu = cpu, .mem = mem};
    p->n = steps;
    return 0;
}

void loadprof_at(const loadprof_t *p, double t, double *cpu, double *mem)
{
    double c = 0, m = 0;
    if (p->n && t >= p->steps[0].t) {
        size_t i = loadprof__find(p, t);
        c = p->steps[i].cpu;
        m = p->steps[i].mem;
    }
    if (cpu)
        *cpu = c;
    if (mem)
        *mem = m;
}

double loadprof_end(const loadprof_t *p)
{
    return p->n ? p->steps[p->n - 1].t : 0;
}
