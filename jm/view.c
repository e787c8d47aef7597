/* view.c - the JM's cluster view (see view.h). */
#include "jm/view.h"

#include <stdlib.h>
#include <string.h>

#include "common/bloom.h"
#include "common/err.h"
#include "common/map.h"
#include "common/mem.h"

struct view__rack {
    char *name;
    uint32_t *nodes;
    size_t n, cap;
};

/* The arena: chunks carved in 8-byte steps, freed only with the view. What a node replaces (an
 * endpoint that changed, a larger matrix) stays unused there: rare, and bounded by the changes. */
struct view__chunk {
    struct view__chunk *next;
    size_t used, cap;
    max_align_t data[];
};

#define VIEW__CHUNK    (64u * 1024u)
#define VIEW__MAX_SETS 64 /* distinct bin sets interned; beyond, a node's own copy */

struct view__set {
    uint8_t n;
    const float *b;
};

struct view {
    struct view__chunk *arena;
    size_t arena_bytes;
    struct view__set sets[VIEW__MAX_SETS];
    size_t nsets;
    struct view_node *nodes;
    size_t n, cap;
    uint32_t *table; /* open addressing: node index + 1, 0 = empty */
    size_t tcap;     /* power of two, > 2n */
    struct view__rack *racks;
    size_t nracks, rcap;
    struct map rack_ix; /* rack name -> index + 1 (a snapshot's every new node looks its rack up) */
    uint32_t *light;
    size_t nlight;
};

static uint64_t view__hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static void *view__alloc(view_t *v, size_t len)
{
    len = (len + 7) & ~(size_t)7;
    struct view__chunk *c = v->arena;
    if (c == NULL || c->cap - c->used < len) {
        size_t cap = len > VIEW__CHUNK / 4 ? len : VIEW__CHUNK - sizeof *c;
        c = mem_alloc(sizeof *c + cap);
        if (c == NULL)
            return NULL;
        c->next = v->arena;
        c->used = 0;
        c->cap = cap;
        v->arena = c;
        v->arena_bytes += sizeof *c + cap;
    }
    void *p = (char *)c->data + c->used;
    c->used += len;
    return p;
}

static const char *view__strdup(view_t *v, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = view__alloc(v, n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* Bins as floats in the arena, shared with every node that has the same set. */
static const float *view__bins(view_t *v, const float *held, uint8_t held_n, const double *b,
                               uint32_t n)
{
    float f[VIEW_MAX_BINS];
    for (uint32_t i = 0; i < n; i++)
        f[i] = (float)b[i];
    if (held != NULL && held_n == n && memcmp(held, f, n * sizeof *f) == 0)
        return held;
    for (size_t i = 0; i < v->nsets; i++)
        if (v->sets[i].n == n && memcmp(v->sets[i].b, f, n * sizeof *f) == 0)
            return v->sets[i].b;
    float *p = view__alloc(v, n * sizeof *p);
    if (p == NULL)
        return NULL;
    memcpy(p, f, n * sizeof *p);
    if (v->nsets < VIEW__MAX_SETS)
        v->sets[v->nsets++] = (struct view__set){(uint8_t)n, p};
    return p;
}

size_t view_bytes(const view_t *v)
{
    size_t b = sizeof *v + v->arena_bytes + v->cap * sizeof *v->nodes + v->tcap * sizeof *v->table;
    for (size_t i = 0; i < v->nracks; i++)
        b += v->racks[i].cap * sizeof *v->racks[i].nodes + strlen(v->racks[i].name) + 1;
    return b + v->rcap * sizeof *v->racks;
}

int view_new(view_t **out)
{
    *out = NULL;
    view_t *v = mem_calloc(1, sizeof *v);
    if (v == NULL)
        return ERR_NOMEM;
    map_init(&v->rack_ix);
    v->tcap = 64;
    v->table = mem_calloc(v->tcap, sizeof *v->table);
    if (v->table == NULL) {
        mem_free(v);
        return ERR_NOMEM;
    }
    *out = v;
    return 0;
}

void view_destroy(view_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    view_t *v = *p;
    for (size_t i = 0; i < v->n; i++)
        bloom_destroy(&v->nodes[i].cache);
    for (size_t i = 0; i < v->nracks; i++) {
        mem_free(v->racks[i].name);
        mem_free(v->racks[i].nodes);
    }
    mem_free(v->racks);
    map_close(&v->rack_ix);
    mem_free(v->nodes);
    mem_free(v->table);
    mem_free(v->light);
    while (v->arena != NULL) {
        struct view__chunk *c = v->arena;
        v->arena = c->next;
        mem_free(c);
    }
    mem_free(v);
    *p = NULL;
}

long view_find(const view_t *v, const char *name)
{
    size_t mask = v->tcap - 1;
    for (size_t i = view__hash(name) & mask;; i = (i + 1) & mask) {
        uint32_t e = v->table[i];
        if (e == 0)
            return -1;
        if (strcmp(v->nodes[e - 1].name, name) == 0)
            return (long)(e - 1);
    }
}

static void view__insert(uint32_t *table, size_t tcap, const struct view_node *nodes, uint32_t idx)
{
    size_t mask = tcap - 1;
    size_t i = view__hash(nodes[idx].name) & mask;
    while (table[i] != 0)
        i = (i + 1) & mask;
    table[i] = idx + 1;
}

static long view__rack_find(const view_t *v, const char *name)
{
    void *r = map_get(&v->rack_ix, name);
    return r != NULL ? (long)((uintptr_t)r - 1) : -1;
}

/* A new rack at the end of the table (room reserved by view__reserve). Its index, or ERR_NOMEM. */
static long view__rack_add(view_t *v, const char *rack)
{
    char *nm = mem_strdup(rack);
    if (nm == NULL)
        return ERR_NOMEM;
    if (map_put(&v->rack_ix, rack, (void *)(uintptr_t)(v->nracks + 1), NULL) != 0) {
        mem_free(nm);
        return ERR_NOMEM;
    }
    v->racks[v->nracks] = (struct view__rack){nm, NULL, 0, 0};
    return (long)v->nracks++;
}

/* Reserves room for one more node, one more rack and the hash table (no state change). */
static int view__reserve(view_t *v, int new_node, int new_rack, uint32_t rack)
{
    if (new_node && v->n == v->cap) {
        size_t nc = v->cap == 0 ? 64 : v->cap + v->cap / 2; /* a node is 120 bytes: 1.5x */
        struct view_node *nn = mem_reallocarray(v->nodes, nc, sizeof *nn);
        if (nn == NULL)
            return ERR_NOMEM;
        v->nodes = nn;
        v->cap = nc;
    }
    if (new_node && 2 * (v->n + 1) >= v->tcap) {
        size_t tc = v->tcap * 2;
        uint32_t *t = mem_calloc(tc, sizeof *t);
        if (t == NULL)
            return ERR_NOMEM;
        for (size_t i = 0; i < v->n; i++)
            view__insert(t, tc, v->nodes, (uint32_t)i);
        mem_free(v->table);
        v->table = t;
        v->tcap = tc;
    }
    if (new_rack && v->nracks == v->rcap) {
        size_t rc = v->rcap == 0 ? 8 : v->rcap * 2;
        struct view__rack *r = mem_reallocarray(v->racks, rc, sizeof *r);
        if (r == NULL)
            return ERR_NOMEM;
        v->racks = r;
        v->rcap = rc;
    }
    if (!new_rack && new_node) {
        struct view__rack *r = &v->racks[rack];
        if (r->n == r->cap) {
            size_t c = r->cap == 0 ? 16 : r->cap * 2;
            uint32_t *nn = mem_reallocarray(r->nodes, c, sizeof *nn);
            if (nn == NULL)
                return ERR_NOMEM;
            r->nodes = nn;
            r->cap = c;
        }
    }
    return 0;
}

static int view__check(const struct view_entry *e)
{
    if (e->name == NULL || e->name[0] == '\0' || strlen(e->name) >= VIEW_NAME_MAX)
        return ERR_INVAL;
    if (e->rack != NULL && strlen(e->rack) >= VIEW_NAME_MAX)
        return ERR_INVAL;
    if (e->endpoint != NULL && strlen(e->endpoint) >= VIEW_ENDPOINT_MAX)
        return ERR_INVAL;
    if (!(e->cpu > 0) || e->mem_mb == 0)
        return ERR_INVAL;
    if (e->ncpu > VIEW_MAX_BINS || e->nmem > VIEW_MAX_BINS || (e->ncpu == 0) != (e->nmem == 0))
        return ERR_INVAL;
    if (e->ncpu > 0 && (e->cpu_bins == NULL || e->mem_bins_mb == NULL || e->wait_s == NULL))
        return ERR_INVAL;
    for (uint32_t i = 0; i < e->ncpu; i++)
        if (!(e->cpu_bins[i] > 0) || (i > 0 && !(e->cpu_bins[i] > e->cpu_bins[i - 1])))
            return ERR_INVAL;
    for (uint32_t i = 0; i < e->nmem; i++)
        if (!(e->mem_bins_mb[i] > 0) || (i > 0 && !(e->mem_bins_mb[i] > e->mem_bins_mb[i - 1])))
            return ERR_INVAL;
    return 0;
}

/* What an entry needs from the arena, taken before the node changes (so that ERR_NOMEM leaves
 * it as it was). */
struct view__prep {
    const char *endpoint;
    const float *cpu_bins, *mem_bins;
    float *cells;
    uint16_t cells_cap;
};

static int view__prepare(view_t *v, const struct view_node *n, const struct view_entry *e,
                         struct view__prep *p)
{
    p->endpoint = n != NULL ? n->endpoint : "";
    if (e->endpoint != NULL && strcmp(p->endpoint, e->endpoint) != 0) {
        p->endpoint = e->endpoint[0] == '\0' ? "" : view__strdup(v, e->endpoint);
        if (p->endpoint == NULL)
            return ERR_NOMEM;
    }
    p->cpu_bins = n != NULL ? n->cpu_bins : NULL;
    p->mem_bins = n != NULL ? n->mem_bins_mb : NULL;
    p->cells = n != NULL ? n->wait_s : NULL;
    p->cells_cap = n != NULL ? n->wait_cap : 0;
    if (e->ncpu == 0)
        return 0;
    p->cpu_bins = view__bins(v, p->cpu_bins, n != NULL ? n->ncpu : 0, e->cpu_bins, e->ncpu);
    p->mem_bins = view__bins(v, p->mem_bins, n != NULL ? n->nmem : 0, e->mem_bins_mb, e->nmem);
    if (p->cpu_bins == NULL || p->mem_bins == NULL)
        return ERR_NOMEM;
    uint32_t cells = e->ncpu * e->nmem;
    if (cells > p->cells_cap) {
        p->cells = view__alloc(v, cells * sizeof *p->cells);
        if (p->cells == NULL)
            return ERR_NOMEM;
        p->cells_cap = (uint16_t)cells;
    }
    return 0;
}

static void view__matrix_fill(struct view_node *n, const struct view__prep *p, uint32_t ncpu,
                              uint32_t nmem, const double *wait_s)
{
    n->ncpu = (uint8_t)ncpu;
    n->nmem = (uint8_t)nmem;
    if (ncpu == 0)
        return; /* bins and cells kept for a later matrix; unused while ncpu is 0 */
    n->cpu_bins = p->cpu_bins;
    n->mem_bins_mb = p->mem_bins;
    n->wait_s = p->cells;
    n->wait_cap = p->cells_cap;
    for (uint32_t i = 0; i < ncpu * nmem; i++) {
        double w = wait_s[i];
        n->wait_s[i] = w < 0 ? VIEW_WAIT_NEVER : (float)w;
    }
}

static void view__fill(struct view_node *n, const struct view_entry *e, int64_t now_ms,
                       bloom_t **cache, const struct view__prep *p)
{
    bloom_destroy(&n->cache); /* the entry's filter replaces it, or its absence clears it */
    n->cache = *cache;
    *cache = NULL;
    n->endpoint = p->endpoint;
    n->cpu = e->cpu;
    n->mem_mb = e->mem_mb;
    n->up = e->up;
    n->running = e->running;
    n->queued = e->queued;
    n->boot_id = e->boot_id;
    n->seq = e->seq;
    n->info_ms = now_ms - (int64_t)(e->age_ms > INT64_MAX / 2 ? INT64_MAX / 2 : e->age_ms);
    double att = (double)e->failures + (double)e->successes;
    n->psucc = ((double)e->successes + 1.0) / (att + 2.0);
    n->src = e->src;
    n->live = e->live;
    view__matrix_fill(n, p, e->ncpu, e->nmem, e->wait_s);
}

static int view__update(view_t *v, const struct view_entry *e, int64_t now_ms, bloom_t **cache);

/* An entry older than what the view holds for the node. The same heartbeat again is news when
   the RM calls the node down or draining, or no longer live (silent for PROTO_VIEW_LIVE_MS): its
   liveness judgement comes without a newer heartbeat (a dead node sends none). */
static int view__stale(const struct view_node *n, const struct view_entry *e, int64_t now_ms)
{
    int64_t info = now_ms - (int64_t)(e->age_ms > INT64_MAX / 2 ? INT64_MAX / 2 : e->age_ms);
    int down_news =
        e->boot_id == n->boot_id && e->seq == n->seq && (!e->up || (n->live && !e->live));
    return !down_news && (e->boot_id == n->boot_id ? e->seq <= n->seq : info < n->info_ms);
}

int view_update(view_t *v, const struct view_entry *e, int64_t now_ms)
{
    int rc = view__check(e);
    if (rc != 0)
        return rc;
    long idx = view_find(v, e->name);
    if (idx >= 0 && view__stale(&v->nodes[idx], e, now_ms))
        return 0; /* before decoding its filter: every replica publishes every node */
    bloom_t *cache = NULL;
    if (e->cache_filter != NULL && e->cache_filter_len > 0) {
        rc = bloom_decode(e->cache_filter, e->cache_filter_len, &cache);
        if (rc != 0)
            return rc == ERR_NOMEM ? rc : ERR_INVAL;
    }
    rc = view__update(v, e, now_ms, &cache);
    bloom_destroy(&cache); /* not taken: stale entry or error */
    return rc;
}

int view_cached(const struct view_node *n, const char *path)
{
    return n != NULL && n->cache != NULL && path != NULL && bloom_has(n->cache, path, strlen(path));
}

static int view__update(view_t *v, const struct view_entry *e, int64_t now_ms, bloom_t **cache)
{
    int rc = view__check(e);
    if (rc != 0)
        return rc;
    const char *rack = e->rack != NULL ? e->rack : "";
    long idx = view_find(v, e->name);
    if (idx >= 0) {
        struct view_node *n = &v->nodes[idx];
        if (view__stale(n, e, now_ms))
            return 0;
        struct view__prep p;
        if ((rc = view__prepare(v, n, e, &p)) != 0)
            return rc;
        if (strcmp(v->racks[n->rack].name, rack) != 0) {
            /* moved to another rack: rare; re-file it */
            long r = view__rack_find(v, rack);
            if ((rc = view__reserve(v, 0, r < 0, 0)) != 0)
                return rc;
            if (r < 0 && (r = view__rack_add(v, rack)) < 0)
                return (int)r;
            struct view__rack *nr = &v->racks[r];
            if (nr->n == nr->cap) {
                size_t c = nr->cap == 0 ? 16 : nr->cap * 2;
                uint32_t *nn = mem_reallocarray(nr->nodes, c, sizeof *nn);
                if (nn == NULL)
                    return ERR_NOMEM;
                nr->nodes = nn;
                nr->cap = c;
            }
            struct view__rack *old = &v->racks[n->rack];
            for (size_t i = 0; i < old->n; i++)
                if (old->nodes[i] == (uint32_t)idx) {
                    old->nodes[i] = old->nodes[--old->n];
                    break;
                }
            nr->nodes[nr->n++] = (uint32_t)idx;
            n->rack = (uint32_t)r;
        }
        view__fill(n, e, now_ms, cache, &p);
        return 1;
    }
    if (v->n >= VIEW_MAX_NODES)
        return ERR_FULL;
    struct view__prep p;
    const char *name = view__strdup(v, e->name);
    if (name == NULL)
        return ERR_NOMEM;
    if ((rc = view__prepare(v, NULL, e, &p)) != 0)
        return rc;
    long r = view__rack_find(v, rack);
    if (r < 0) {
        if ((rc = view__reserve(v, 1, 1, 0)) != 0)
            return rc;
        if ((r = view__rack_add(v, rack)) < 0)
            return (int)r;
    }
    if ((rc = view__reserve(v, 1, 0, (uint32_t)r)) != 0)
        return rc;
    struct view_node *n = &v->nodes[v->n];
    memset(n, 0, sizeof *n);
    n->name = name;
    n->rack = (uint32_t)r;
    view__fill(n, e, now_ms, cache, &p);
    view__insert(v->table, v->tcap, v->nodes, (uint32_t)v->n);
    struct view__rack *rk = &v->racks[r];
    rk->nodes[rk->n++] = (uint32_t)v->n;
    v->n++;
    return 1;
}

int view_set_matrix(view_t *v, uint32_t node, uint32_t ncpu, uint32_t nmem, const double *cpu_bins,
                    const double *mem_bins_mb, const double *wait_s, int64_t now_ms)
{
    if (node >= v->n)
        return ERR_NOTFOUND;
    struct view_node *n = &v->nodes[node];
    struct view_entry e = {.name = n->name,
                           .rack = "",
                           .cpu = n->cpu,
                           .mem_mb = n->mem_mb,
                           .ncpu = ncpu,
                           .nmem = nmem,
                           .cpu_bins = cpu_bins,
                           .mem_bins_mb = mem_bins_mb,
                           .wait_s = wait_s};
    int rc = view__check(&e);
    struct view__prep p;
    if (rc == 0)
        rc = view__prepare(v, n, &e, &p);
    if (rc != 0)
        return rc;
    view__matrix_fill(n, &p, ncpu, nmem, wait_s);
    if (now_ms > n->info_ms)
        n->info_ms = now_ms;
    return 0;
}

int view_set_cells(view_t *v, uint32_t node, uint32_t ncpu, uint32_t nmem, const double *wait_s,
                   uint64_t seq, int64_t info_ms, uint8_t src, int live)
{
    if (node >= v->n)
        return ERR_NOTFOUND;
    struct view_node *n = &v->nodes[node];
    if (ncpu != n->ncpu || nmem != n->nmem || ncpu * nmem > n->wait_cap)
        return ERR_INVAL;
    if (seq <= n->seq)
        return 0;
    for (uint32_t i = 0; i < ncpu * nmem; i++)
        n->wait_s[i] = wait_s[i] < 0 ? VIEW_WAIT_NEVER : (float)wait_s[i];
    n->seq = seq;
    n->info_ms = info_ms;
    n->src = src;
    n->live = (uint8_t)(live != 0);
    return 1;
}

size_t view_confirm(view_t *v, uint8_t src, int64_t info_ms)
{
    size_t moved = 0;
    if (src == 0)
        return 0;
    for (size_t i = 0; i < v->n; i++) {
        struct view_node *n = &v->nodes[i];
        if (n->src == src && n->live && n->info_ms < info_ms) {
            n->info_ms = info_ms;
            moved++;
        }
    }
    return moved;
}

size_t view_adopt(view_t *v, uint8_t src)
{
    size_t moved = 0;
    for (size_t i = 0; i < v->n; i++) {
        moved += v->nodes[i].src != src;
        v->nodes[i].src = src;
    }
    return moved;
}

int view_set_up(view_t *v, uint32_t node, int up)
{
    if (node >= v->n)
        return ERR_NOTFOUND;
    v->nodes[node].up = up;
    return 0;
}

size_t view_count(const view_t *v)
{
    return v->n;
}

const struct view_node *view_node(const view_t *v, uint32_t node)
{
    return node < v->n ? &v->nodes[node] : NULL;
}

size_t view_rack_count(const view_t *v)
{
    return v->nracks;
}

const char *view_rack_name(const view_t *v, uint32_t rack)
{
    return rack < v->nracks ? v->racks[rack].name : NULL;
}

const uint32_t *view_rack_nodes(const view_t *v, uint32_t rack, size_t *n)
{
    if (rack >= v->nracks) {
        *n = 0;
        return NULL;
    }
    *n = v->racks[rack].n;
    return v->racks[rack].nodes;
}

double view_wait(const struct view_node *n, double cpu, double mem_mb, int steps)
{
    if (cpu > n->cpu + 1e-9 || mem_mb > (double)n->mem_mb)
        return -1.0;
    if (n->ncpu == 0)
        return 0.0;
    int c = 0, m = 0;
    while (c < n->ncpu - 1 && (double)n->cpu_bins[c] < cpu - 1e-9)
        c++;
    while (m < n->nmem - 1 && (double)n->mem_bins_mb[m] < mem_mb)
        m++;
    if (steps < 0)
        steps = 0;
    /* A pessimistic (larger) cell may be one the node can never hold: step back towards the
       plain lookup until a usable cell is found. */
    for (int s = steps; s >= 0; s--) {
        int cc = c + s < n->ncpu ? c + s : n->ncpu - 1;
        int mm = m + s < n->nmem ? m + s : n->nmem - 1;
        float w = n->wait_s[cc * n->nmem + mm];
        if (w >= 0)
            return (double)w;
    }
    return -1.0;
}

int64_t view_age_ms(const struct view_node *n, int64_t now_ms)
{
    return now_ms > n->info_ms ? now_ms - n->info_ms : 0;
}

struct view__score {
    float wait;
    uint32_t queued;
    uint32_t idx;
};

static int view__score_cmp(const void *a, const void *b)
{
    const struct view__score *x = a, *y = b;
    if (x->wait != y->wait)
        return x->wait < y->wait ? -1 : 1;
    if (x->queued != y->queued)
        return x->queued < y->queued ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int view_refresh_light(view_t *v, size_t max)
{
    struct view__score *sc = mem_calloc(v->n + 1, sizeof *sc);
    if (sc == NULL)
        return ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++) {
        const struct view_node *n = &v->nodes[i];
        if (!n->up)
            continue;
        float w = n->ncpu == 0 ? 0.0f : n->wait_s[0];
        if (w < 0)
            continue;
        sc[k++] = (struct view__score){w, n->queued, (uint32_t)i};
    }
    qsort(sc, k, sizeof *sc, view__score_cmp);
    if (k > max)
        k = max;
    uint32_t *l = mem_calloc(k + 1, sizeof *l);
    if (l == NULL) {
        mem_free(sc);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < k; i++)
        l[i] = sc[i].idx;
    mem_free(sc);
    mem_free(v->light);
    v->light = l;
    v->nlight = k;
    return 0;
}

const uint32_t *view_light(const view_t *v, size_t *n)
{
    *n = v->nlight;
    return v->light;
}
