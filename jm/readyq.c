/* readyq.c - the ready tasks as an indexed 4-ary heap (see readyq.h). */
#include "jm/readyq.h"

#include <math.h>

#include "common/err.h"
#include "common/mem.h"

#define READYQ__NONE SIZE_MAX
#define READYQ__D    4 /* children per entry: a shallower heap touches fewer cache lines */

/* A heap entry carries its key, so that sifting compares within the heap's own memory (a job of
 * 200,000 tasks would otherwise miss the cache at each comparison). */
struct readyq__ent {
    double prio;
    uint64_t bytes;
    size_t task;
};

struct readyq {
    size_t n;                 /* tasks the queue was made for */
    size_t len;               /* queued */
    struct readyq__ent *heap; /* heap[0] first in order */
    size_t *pos;              /* per task: its index in heap, or READYQ__NONE */
};

int readyq_new(size_t ntasks, readyq_t **out)
{
    *out = NULL;
    readyq_t *q = mem_calloc(1, sizeof *q);
    if (q == NULL)
        return ERR_NOMEM;
    size_t n = ntasks > 0 ? ntasks : 1;
    q->n = ntasks;
    q->heap = mem_calloc(n, sizeof *q->heap);
    q->pos = mem_calloc(n, sizeof *q->pos);
    if (q->heap == NULL || q->pos == NULL) {
        readyq_destroy(&q);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        q->pos[i] = READYQ__NONE;
    *out = q;
    return 0;
}

void readyq_destroy(readyq_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    readyq_t *q = *p;
    mem_free(q->heap);
    mem_free(q->pos);
    mem_free(q);
    *p = NULL;
}

/* 1 when entry a goes before entry b (jm/priority.h's order). */
static int readyq__before(const struct readyq__ent *a, const struct readyq__ent *b)
{
    if (a->prio != b->prio)
        return a->prio > b->prio;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    return a->task < b->task;
}

static void readyq__set(readyq_t *q, size_t i, const struct readyq__ent *e)
{
    q->heap[i] = *e;
    q->pos[e->task] = i;
}

/* Moves the entry at i up or down to where its key belongs. */
static void readyq__fix(readyq_t *q, size_t i)
{
    struct readyq__ent e = q->heap[i];
    size_t start = i;
    while (i > 0) {
        size_t parent = (i - 1) / READYQ__D;
        if (!readyq__before(&e, &q->heap[parent]))
            break;
        readyq__set(q, i, &q->heap[parent]);
        i = parent;
    }
    if (i == start) {
        for (;;) {
            size_t first = READYQ__D * i + 1, c = first;
            if (first >= q->len)
                break;
            size_t end = first + READYQ__D < q->len ? first + READYQ__D : q->len;
            for (size_t k = first + 1; k < end; k++)
                if (readyq__before(&q->heap[k], &q->heap[c]))
                    c = k;
            if (!readyq__before(&q->heap[c], &e))
                break;
            readyq__set(q, i, &q->heap[c]);
            i = c;
        }
    }
    readyq__set(q, i, &e);
}

int readyq_push(readyq_t *q, size_t task, double prio, uint64_t bytes)
{
    if (task >= q->n || isnan(prio))
        return ERR_RANGE;
    if (q->pos[task] != READYQ__NONE)
        return ERR_EXISTS;
    q->heap[q->len] = (struct readyq__ent){prio, bytes, task};
    readyq__fix(q, q->len++);
    return 0;
}

int readyq_update(readyq_t *q, size_t task, double prio, uint64_t bytes)
{
    if (task >= q->n || isnan(prio))
        return ERR_RANGE;
    size_t i = q->pos[task];
    if (i == READYQ__NONE)
        return ERR_NOTFOUND;
    q->heap[i].prio = prio;
    q->heap[i].bytes = bytes;
    readyq__fix(q, i);
    return 0;
}

int readyq_remove(readyq_t *q, size_t task)
{
    if (task >= q->n)
        return ERR_RANGE;
    size_t i = q->pos[task];
    if (i == READYQ__NONE)
        return ERR_NOTFOUND;
    q->pos[task] = READYQ__NONE;
    if (i < --q->len) { /* the last entry fills the hole and moves whichever way it must */
        q->heap[i] = q->heap[q->len];
        readyq__fix(q, i);
    }
    return 0;
}

int readyq_contains(const readyq_t *q, size_t task)
{
    return task < q->n && q->pos[task] != READYQ__NONE;
}

size_t readyq_count(const readyq_t *q)
{
    return q->len;
}

int readyq_peek(const readyq_t *q, size_t *task)
{
    if (q->len == 0)
        return ERR_NOTFOUND;
    *task = q->heap[0].task;
    return 0;
}

size_t readyq_pop(readyq_t *q, size_t *out, size_t k)
{
    size_t got = 0;
    while (got < k && q->len > 0) {
        size_t t = q->heap[0].task;
        out[got++] = t;
        q->pos[t] = READYQ__NONE;
        if (--q->len > 0) {
            q->heap[0] = q->heap[q->len];
            readyq__fix(q, 0);
        }
    }
    return got;
}

void readyq_clear(readyq_t *q)
{
    for (size_t i = 0; i < q->len; i++)
        q->pos[q->heap[i].task] = READYQ__NONE;
    q->len = 0;
}
