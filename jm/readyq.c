/* readyq.c - the ready tasks as an indexed binary heap (see readyq.h). */
#include "jm/readyq.h"

#include <math.h>

#include "common/err.h"
#include "common/mem.h"

#define READYQ__NONE SIZE_MAX

struct readyq {
    size_t n;        /* tasks the queue was made for */
    size_t len;      /* queued */
    size_t *heap;    /* task indices, heap[0] first in order */
    size_t *pos;     /* per task: its index in heap, or READYQ__NONE */
    double *prio;    /* per task: key */
    uint64_t *bytes; /* per task: key */
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
    q->prio = mem_calloc(n, sizeof *q->prio);
    q->bytes = mem_calloc(n, sizeof *q->bytes);
    if (q->heap == NULL || q->pos == NULL || q->prio == NULL || q->bytes == NULL) {
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
    mem_free(q->prio);
    mem_free(q->bytes);
    mem_free(q);
    *p = NULL;
}

/* 1 when task a goes before task b (jm/priority.h's order). */
static int readyq__before(const readyq_t *q, size_t a, size_t b)
{
    if (q->prio[a] != q->prio[b])
        return q->prio[a] > q->prio[b];
    if (q->bytes[a] != q->bytes[b])
        return q->bytes[a] > q->bytes[b];
    return a < b;
}

static void readyq__set(readyq_t *q, size_t i, size_t task)
{
    q->heap[i] = task;
    q->pos[task] = i;
}

static void readyq__up(readyq_t *q, size_t i)
{
    size_t t = q->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!readyq__before(q, t, q->heap[parent]))
            break;
        readyq__set(q, i, q->heap[parent]);
        i = parent;
    }
    readyq__set(q, i, t);
}

static void readyq__down(readyq_t *q, size_t i)
{
    size_t t = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->len)
            break;
        if (c + 1 < q->len && readyq__before(q, q->heap[c + 1], q->heap[c]))
            c++;
        if (!readyq__before(q, q->heap[c], t))
            break;
        readyq__set(q, i, q->heap[c]);
        i = c;
    }
    readyq__set(q, i, t);
}

int readyq_push(readyq_t *q, size_t task, double prio, uint64_t bytes)
{
    if (task >= q->n || isnan(prio))
        return ERR_RANGE;
    if (q->pos[task] != READYQ__NONE)
        return ERR_EXISTS;
    q->prio[task] = prio;
    q->bytes[task] = bytes;
    readyq__set(q, q->len++, task);
    readyq__up(q, q->len - 1);
    return 0;
}

int readyq_update(readyq_t *q, size_t task, double prio, uint64_t bytes)
{
    if (task >= q->n || isnan(prio))
        return ERR_RANGE;
    size_t i = q->pos[task];
    if (i == READYQ__NONE)
        return ERR_NOTFOUND;
    q->prio[task] = prio;
    q->bytes[task] = bytes;
    readyq__up(q, i);
    readyq__down(q, q->pos[task]);
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
    size_t last = q->heap[--q->len];
    if (i < q->len) { /* the last entry fills the hole and moves whichever way it must */
        readyq__set(q, i, last);
        readyq__up(q, i);
        readyq__down(q, q->pos[last]);
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
    *task = q->heap[0];
    return 0;
}

size_t readyq_pop(readyq_t *q, size_t *out, size_t k)
{
    size_t got = 0;
    while (got < k && q->len > 0) {
        size_t t = q->heap[0];
        out[got++] = t;
        q->pos[t] = READYQ__NONE;
        if (--q->len > 0) {
            readyq__set(q, 0, q->heap[q->len]);
            readyq__down(q, 0);
        }
    }
    return got;
}

void readyq_clear(readyq_t *q)
{
    for (size_t i = 0; i < q->len; i++)
        q->pos[q->heap[i]] = READYQ__NONE;
    q->len = 0;
}
