#include "tools/sim/engine.h"

#include <math.h>

#include "common/err.h"
#include "common/heap.h"
#include "common/mem.h"

/* ---- events ---- */

struct engine_event {
    double t;
    engine_fn *fn;
    void *ctx;
    uint64_t arg;
    struct engine_event *next_free;
};

#define ENGINE_CHUNK 4096

struct engine_chunk {
    struct engine_chunk *next;
    struct engine_event ev[ENGINE_CHUNK];
};

struct engine {
    double now;
    struct heap q;
    struct engine_event *free;
    struct engine_chunk *chunks;
    uint64_t ran;
    int stop;
};

int engine_new(engine_t **out)
{
    *out = NULL;
    engine_t *e = mem_calloc(1, sizeof *e);
    if (e == NULL)
        return ERR_NOMEM;
    heap_init(&e->q);
    *out = e;
    return 0;
}

void engine_destroy(engine_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    engine_t *e = *p;
    heap_close(&e->q);
    while (e->chunks != NULL) {
        struct engine_chunk *c = e->chunks;
        e->chunks = c->next;
        mem_free(c);
    }
    mem_free(e);
    *p = NULL;
}

double engine_now(const engine_t *e)
{
    return e->now;
}

static struct engine_event *engine__alloc(engine_t *e)
{
    if (e->free == NULL) {
        struct engine_chunk *c = mem_alloc(sizeof *c);
        if (c == NULL)
            return NULL;
        c->next = e->chunks;
        e->chunks = c;
        for (size_t i = ENGINE_CHUNK; i-- > 0;) {
            c->ev[i].next_free = e->free;
            e->free = &c->ev[i];
        }
    }
    struct engine_event *ev = e->free;
    e->free = ev->next_free;
    return ev;
}

int engine_at(engine_t *e, double t, engine_fn *fn, void *ctx, uint64_t arg)
{
    if (isnan(t) || t < e->now || fn == NULL)
        return ERR_INVAL;
    struct engine_event *ev = engine__alloc(e);
    if (ev == NULL)
        return ERR_NOMEM;
    ev->t = t;
    ev->fn = fn;
    ev->ctx = ctx;
    ev->arg = arg;
    if (heap_push(&e->q, heap_key_from_double(t), ev) != 0) {
        ev->next_free = e->free;
        e->free = ev;
        return ERR_NOMEM;
    }
    return 0;
}

int engine_after(engine_t *e, double dt, engine_fn *fn, void *ctx, uint64_t arg)
{
    if (isnan(dt) || dt < 0)
        return ERR_INVAL;
    return engine_at(e, e->now + dt, fn, ctx, arg);
}

int engine_step(engine_t *e)
{
    struct heap_entry he;
    if (!heap_pop(&e->q, &he))
        return 0;
    struct engine_event *ev = he.value;
    struct engine_event copy = *ev;
    ev->next_free = e->free; /* recycled before the call: the callback may schedule */
    e->free = ev;
    e->now = copy.t;
    e->ran++;
    copy.fn(e, copy.ctx, copy.arg);
    return 1;
}

uint64_t engine_run(engine_t *e, double until)
{
    uint64_t n = 0;
    e->stop = 0;
    struct heap_entry he;
    while (!e->stop && heap_peek(&e->q, &he)) {
        const struct engine_event *ev = he.value;
        if (ev->t > until)
            break;
        engine_step(e);
        n++;
    }
    e->stop = 0;
    return n;
}

void engine_stop(engine_t *e)
{
    e->stop = 1;
}

size_t engine_pending(const engine_t *e)
{
    return e->q.len;
}

uint64_t engine_events_run(const engine_t *e)
{
    return e->ran;
}
