/* progress.c - Jockey's progress indicators (§4.2, §5.4). */
#include "jm/progress.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

int progress_init(struct progress_model *pm, enum progress_kind kind, int nstages, const int *n,
                  const double *Q, const double *T, const struct amdahl *am)
{
    if (pm == NULL || nstages < 1 || n == NULL)
        return ERR_INVAL;
    if ((kind == PROGRESS_TOTALWORK_Q || kind == PROGRESS_TOTALWORK) && T == NULL)
        return ERR_INVAL;
    if (kind == PROGRESS_TOTALWORK_Q && Q == NULL)
        return ERR_INVAL;
    if (kind == PROGRESS_CP && (am == NULL || am->nstages != nstages))
        return ERR_INVAL;
    if (kind > PROGRESS_CP)
        return ERR_INVAL;
    struct progress_model p = {.kind = kind, .nstages = nstages, .am = am};
    p.n = mem_calloc((size_t)nstages, sizeof *p.n);
    p.w = mem_calloc((size_t)nstages, sizeof *p.w);
    if (p.n == NULL || p.w == NULL) {
        progress_close(&p);
        return ERR_NOMEM;
    }
    long total_tasks = 0;
    double total_w = 0;
    for (int s = 0; s < nstages; s++) {
        p.n[s] = n[s] > 0 ? n[s] : 0;
        total_tasks += p.n[s];
        double ws = 0;
        if (kind == PROGRESS_TOTALWORK_Q)
            ws = Q[s] + T[s];
        else if (kind == PROGRESS_TOTALWORK)
            ws = T[s];
        if (!isfinite(ws) || ws < 0 || p.n[s] == 0)
            ws = 0;
        p.w[s] = ws; /* stage total for now */
        total_w += ws;
    }
    int fallback = kind == PROGRESS_VERTEXFRAC || kind == PROGRESS_CP || !(total_w > 0);
    for (int s = 0; s < nstages; s++) {
        if (p.n[s] == 0)
            p.w[s] = 0;
        else if (fallback)
            p.w[s] = total_tasks > 0 ? 1.0 / (double)total_tasks : 0;
        else
            p.w[s] = p.w[s] / total_w / p.n[s];
    }
    *pm = p;
    return 0;
}

void progress_close(struct progress_model *pm)
{
    if (pm == NULL)
        return;
    mem_free(pm->n);
    mem_free(pm->w);
    memset(pm, 0, sizeof *pm);
}

int progress_is_linear(const struct progress_model *pm)
{
    return pm->kind != PROGRESS_CP;
}

double progress_task_weight(const struct progress_model *pm, int s)
{
    if (s < 0 || s >= pm->nstages || pm->kind == PROGRESS_CP)
        return 0;
    return pm->w[s];
}

double progress_eval(const struct progress_model *pm, const int *done)
{
    double p = 0;
    if (pm->kind == PROGRESS_CP) {
        if (!(pm->am->S0 > 0))
            return 1.0;
        p = 1.0 - amdahl_serial(pm->am, done) / pm->am->S0;
    } else {
        for (int s = 0; s < pm->nstages; s++) {
            int d = done[s] < 0 ? 0 : done[s] > pm->n[s] ? pm->n[s] : done[s];
            p += pm->w[s] * d;
        }
    }
    if (p < 0)
        p = 0;
    if (p > 1)
        p = 1;
    return p;
}

static const char *const progress__names[] = {"totalworkWithQ", "totalwork", "vertexfrac", "cp"};

const char *progress_kind_name(enum progress_kind kind)
{
    if ((unsigned)kind > PROGRESS_CP)
        return NULL;
    return progress__names[kind];
}

int progress_kind_parse(const char *name, enum progress_kind *out)
{
    for (int k = 0; k <= PROGRESS_CP; k++) {
        if (name != NULL && strcmp(name, progress__names[k]) == 0) {
            *out = (enum progress_kind)k;
            return 0;
        }
    }
    return ERR_INVAL;
}
