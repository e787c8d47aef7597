#include "tools/sim/engine.h"

#include <math.h>

#include "common/err.h"
#include "common/heap.h"
#include "common/mem.h"

/* ---- random streams ---- */

static uint64_t engine__splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void engine_rng_seed(struct engine_rng *r, uint64_t seed, uint64_t stream)
{
    /* Mix the stream number in through its own splitmix step, so (seed, stream) and
       (seed + 1, stream - 1) do not collide. */
    uint64_t x = seed;
    uint64_t y = stream ^ 0x5851f42d4c957f2dull;
    uint64_t k = engine__splitmix(&x) ^ engine__splitmix(&y);
    for (int i = 0; i < 4; i++)
        r->s[i] = engine__splitmix(&k);
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
        r->s[0] = 1;
}

static uint64_t engine__rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t engine_rng_u64(struct engine_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = engine__rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = engine__rotl(s[3], 45);
    return out;
}

double engine_rng_unif(struct engine_rng *r)
{
    return (double)(engine_rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t engine_rng_below(struct engine_rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    /* Rejection keeps it exactly uniform. */
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t x = engine_rng_u64(r);
        if (x < lim)
            return x % n;
    }
}

int engine_rng_bernoulli(struct engine_rng *r, double p)
{
    if (!(p > 0))
        return 0;
    if (p >= 1)
        return 1;
    return engine_rng_unif(r) < p;
}

double engine_rng_exp(struct engine_rng *r, double mean)
{
    if (!(mean > 0))
        return 0;
    return -mean * log1p(-engine_rng_unif(r));
}

double engine_rng_normal(struct engine_rng *r)
{
    double u1 = 1.0 - engine_rng_unif(r); /* (0, 1]: log is finite */
    double u2 = engine_rng_unif(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double engine_rng_lognormal(struct engine_rng *r, double mu, double sigma)
{
    return exp(mu + sigma * engine_rng_normal(r));
}

double engine_rng_pareto(struct engine_rng *r, double xm, double alpha)
{
    if (!(xm > 0) || !(alpha > 0))
        return xm;
    double u = 1.0 - engine_rng_unif(r); /* (0, 1] */
    return xm / pow(u, 1.0 / alpha);
}

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
