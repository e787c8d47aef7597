/* view.c - heartbeat aggregation and view publication. */
#include "rm/rmview.h"

#include "common/err.h"
#include "common/map.h"
#include "common/mem.h"
#include "proto/pack.h"
#include "proto/view_cells.h"

#include <stdio.h>
#include <string.h>

struct rmview {
    struct rmview_node *nodes;
    size_t n, cap;
    struct map index; /* name -> node index + 1 (as a pointer-sized integer) */
    uint64_t seq;
    int64_t delta_ms;           /* when the latest delta went out (0: none yet) */
    proto_view_node_t *scratch; /* PROTO_MAX_VIEW_NODES wire entries */
};

rmview_t *rmview_new(void)
{
    rmview_t *v = mem_calloc(1, sizeof *v);
    if (v == NULL)
        return NULL;
    map_init(&v->index);
    v->scratch = mem_calloc(PROTO_MAX_VIEW_NODES, sizeof *v->scratch);
    if (v->scratch == NULL) {
        mem_free(v);
        return NULL;
    }
    return v;
}

void rmview_destroy(rmview_t **vp)
{
    if (vp == NULL || *vp == NULL)
        return;
    rmview_t *v = *vp;
    for (size_t i = 0; i < v->n; i++) {
        mem_free(v->nodes[i].cache_filter);
        mem_free(v->nodes[i].pub_cells);
    }
    map_close(&v->index);
    mem_free(v->nodes);
    mem_free(v->scratch);
    mem_free(v);
    *vp = NULL;
}

static struct rmview_node *rmview__find(const rmview_t *v, const char *name)
{
    void *val = NULL;
    if (!map_find(&v->index, name, strlen(name), &val))
        return NULL;
    return &v->nodes[(uintptr_t)val - 1];
}

static int rmview__copy(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strlen(src) : 0;
    if (n >= cap)
        return ERR_INVAL;
    memcpy(dst, src != NULL ? src : "", n + 1);
    return 0;
}

static struct rmview_node *rmview__add(rmview_t *v, const char *name, int *rc)
{
    if (strlen(name) >= LEDGER_NAME_MAX || name[0] == '\0') {
        *rc = ERR_INVAL;
        return NULL;
    }
    if (v->n == v->cap) {
        size_t cap = v->cap < 64 ? 64 : v->cap * 2;
        void *p = mem_reallocarray(v->nodes, cap, sizeof *v->nodes);
        if (p == NULL) {
            *rc = ERR_NOMEM;
            return NULL;
        }
        v->nodes = p;
        v->cap = cap;
    }
    if (map_put(&v->index, name, (void *)(uintptr_t)(v->n + 1), NULL) != 0) {
        *rc = ERR_NOMEM;
        return NULL;
    }
    struct rmview_node *n = &v->nodes[v->n++];
    memset(n, 0, sizeof *n);
    memcpy(n->name, name, strlen(name) + 1);
    n->state = PROTO_NODE_UP;
    n->dirty = n->dirty_full = true;
    *rc = 0;
    return n;
}

/* Keeps a copy of the heartbeat's cache filter (unchanged bytes are not copied again). */
static int rmview__filter(struct rmview_node *n, const proto_heartbeat_t *hb)
{
    uint32_t len = hb->cache_filter != NULL ? hb->cache_filter_len : 0;
    if (len == n->cache_filter_len &&
        (len == 0 || memcmp(n->cache_filter, hb->cache_filter, len) == 0))
        return 0;
    uint8_t *copy = NULL;
    if (len > 0) {
        if (len > PROTO_MAX_CACHE_FILTER)
            return ERR_INVAL;
        if ((copy = mem_alloc(len)) == NULL)
            return ERR_NOMEM;
        memcpy(copy, hb->cache_filter, len);
    }
    mem_free(n->cache_filter);
    n->cache_filter = copy;
    n->cache_filter_len = len;
    return 0;
}

static bool rmview__str_differs(const char *held, const char *got)
{
    return strcmp(held, got != NULL ? got : "") != 0;
}

/* Whether a heartbeat changes what a JM uses of a node that is not dirty (its held facts are
 * then the published ones, but for the load and the waits, compared with pub_cells): 0 no, 1
 * its wait cells alone moved past the tolerance, 2 something else changed. */
enum { RMVIEW__SAME = 0, RMVIEW__CELLS = 1, RMVIEW__FULL = 2 };
static int rmview__relevant(const struct rmview_node *n, const proto_heartbeat_t *hb)
{
    const proto_matrix_t *a = &n->matrix, *b = &hb->matrix;
    if (n->rx_ms == 0 || n->boot_id != hb->boot_id || rmview__str_differs(n->rack, hb->rack) ||
        rmview__str_differs(n->endpoint, hb->endpoint) || n->cpu != hb->cpu ||
        n->mem_mb != hb->mem_mb || n->draining != hb->draining || a->ncpu != b->ncpu ||
        a->nmem != b->nmem || n->pub_ncells != b->ncpu * b->nmem)
        return RMVIEW__FULL;
    for (uint32_t i = 0; i < b->ncpu && i < PROTO_MAX_MATRIX_DIM; i++)
        if (a->cpu_bounds[i] != b->cpu_bounds[i])
            return RMVIEW__FULL;
    for (uint32_t i = 0; i < b->nmem && i < PROTO_MAX_MATRIX_DIM; i++)
        if (a->mem_bounds_mb[i] != b->mem_bounds_mb[i])
            return RMVIEW__FULL;
    for (uint32_t i = 0; i < n->pub_ncells && i < PROTO_MAX_MATRIX_CELLS; i++) {
        uint32_t was = n->pub_cells[i], now = b->cells_ms[i];
        if ((was == PROTO_WAIT_NEVER) != (now == PROTO_WAIT_NEVER))
            return RMVIEW__CELLS;
        uint32_t d = was > now ? was - now : now - was;
        uint32_t tol = was / RMVIEW_WAIT_TOL_DIV;
        if (d > (tol > RMVIEW_WAIT_TOL_MS ? tol : RMVIEW_WAIT_TOL_MS))
            return RMVIEW__CELLS;
    }
    return RMVIEW__SAME;
}

int rmview_ingest(rmview_t *v, const proto_heartbeat_t *hb, int64_t now)
{
    if ((hb->cache_filter != NULL ? hb->cache_filter_len : 0) > PROTO_MAX_CACHE_FILTER)
        return ERR_INVAL;
    if (hb->name == NULL || strlen(hb->name) >= LEDGER_NAME_MAX ||
        (hb->rack != NULL && strlen(hb->rack) >= LEDGER_RACK_MAX) ||
        (hb->endpoint != NULL && strlen(hb->endpoint) >= LEDGER_ADDR_MAX))
        return ERR_INVAL;
    struct rmview_node *n = rmview__find(v, hb->name);
    if (n == NULL) {
        int rc;
        n = rmview__add(v, hb->name, &rc);
        if (n == NULL)
            return rc;
    } else if (n->rx_ms != 0 && n->boot_id == hb->boot_id && hb->seq <= n->seq) {
        return RMVIEW_STALE;
    }
    int why = n->dirty && n->dirty_full ? RMVIEW__FULL : rmview__relevant(n, hb);
    bool relevant = n->dirty || why != RMVIEW__SAME;
    uint8_t *filter = n->cache_filter;
    uint32_t filter_len = n->cache_filter_len;
    int rc = rmview__filter(n, hb);
    if (rc != 0)
        return rc;
    bool filtered = n->cache_filter != filter || n->cache_filter_len != filter_len;
    relevant = relevant || filtered;
    n->dirty_full = n->dirty_full || why == RMVIEW__FULL || filtered;
    rmview__copy(n->rack, sizeof n->rack, hb->rack);
    rmview__copy(n->endpoint, sizeof n->endpoint, hb->endpoint);
    n->cpu = hb->cpu;
    n->mem_mb = hb->mem_mb;
    n->used_cpu = hb->used_cpu;
    n->used_mem_mb = hb->used_mem_mb;
    n->running_regular = hb->running_regular;
    n->running_opportunistic = hb->running_opportunistic;
    n->queued_regular = hb->queued_regular;
    n->queued_opportunistic = hb->queued_opportunistic;
    n->draining = hb->draining;
    n->matrix = hb->matrix;
    n->boot_id = hb->boot_id;
    n->seq = hb->seq;
    n->rx_ms = now;
    n->dirty = relevant;
    return RMVIEW_FRESH;
}

static uint32_t rmview__state(const struct ledger_node *n)
{
    if (n->liveness == LEDGER_NODE_DOWN)
        return PROTO_NODE_DOWN;
    if (n->draining)
        return PROTO_NODE_DRAINING;
    return n->liveness == LEDGER_NODE_SUSPECT ? PROTO_NODE_SUSPECT : PROTO_NODE_UP;
}

int rmview_note(rmview_t *v, const struct ledger_node *ln)
{
    struct rmview_node *n = rmview__find(v, ln->name);
    if (n == NULL) {
        int rc;
        n = rmview__add(v, ln->name, &rc);
        if (n == NULL)
            return rc;
    }
    if (n->rx_ms == 0) { /* no heartbeat yet: the registration is all we know */
        memcpy(n->rack, ln->rack, sizeof n->rack);
        memcpy(n->endpoint, ln->address, sizeof n->endpoint);
        n->cpu = ln->cpus_milli / 1000.0;
        n->mem_mb = ln->mem_mb;
        n->boot_id = ln->boot_id;
    }
    uint32_t state = rmview__state(ln);
    uint64_t failures = ln->tasks_failed + ln->down_count;
    if (n->state != state || n->failures != failures || n->successes != ln->tasks_ok) {
        n->state = state;
        n->failures = failures;
        n->successes = ln->tasks_ok;
        n->dirty = n->dirty_full = true;
    }
    return 0;
}

size_t rmview_count(const rmview_t *v)
{
    return v->n;
}

const struct rmview_node *rmview_at(const rmview_t *v, size_t i)
{
    return i < v->n ? &v->nodes[i] : NULL;
}

const struct rmview_node *rmview_find(const rmview_t *v, const char *name)
{
    return rmview__find(v, name);
}

enum ledger_liveness rmview_liveness(int64_t heard_ms, int64_t now, int64_t suspect_ms,
                                     int64_t down_ms)
{
    int64_t age = now - heard_ms;
    if (age >= down_ms)
        return LEDGER_NODE_DOWN;
    return age >= suspect_ms ? LEDGER_NODE_SUSPECT : LEDGER_NODE_UP;
}

uint32_t rmview_quantize_ms(uint32_t ms)
{
    if (ms == PROTO_WAIT_NEVER)
        return ms;
    uint32_t step = RMVIEW_WAIT_QUANTUM_MS;
    while (step * 2 <= ms / RMVIEW_WAIT_QUANTUM_DIV && step < (1u << 30))
        step <<= 1;
    uint64_t q = ((uint64_t)ms + step / 2) / step * step;
    return q < PROTO_WAIT_NEVER ? (uint32_t)q : ms - ms % step;
}

static void rmview__wire(proto_view_node_t *w, const struct rmview_node *n, int64_t now)
{
    memset(w, 0, sizeof *w);
    w->name = (char *)n->name;
    w->rack = (char *)n->rack;
    w->endpoint = (char *)n->endpoint;
    /* A PN that drains of its own accord is draining for JMs too (it refuses new tasks), unless
       the ledger says it is down. */
    w->state = n->draining && (n->state == PROTO_NODE_UP || n->state == PROTO_NODE_SUSPECT)
                   ? PROTO_NODE_DRAINING
                   : n->state;
    w->cpu = n->cpu;
    w->mem_mb = n->mem_mb;
    w->used_cpu = n->used_cpu;
    w->used_mem_mb = n->used_mem_mb;
    w->running_regular = n->running_regular;
    w->running_opportunistic = n->running_opportunistic;
    w->queued_regular = n->queued_regular;
    w->queued_opportunistic = n->queued_opportunistic;
    w->matrix = n->matrix;
    uint32_t cells = w->matrix.ncpu * w->matrix.nmem;
    for (uint32_t i = 0; i < cells && i < PROTO_MAX_MATRIX_CELLS; i++)
        w->matrix.cells_ms[i] = rmview_quantize_ms(w->matrix.cells_ms[i]);
    w->boot_id = n->boot_id;
    w->seq = n->seq;
    int64_t age = n->rx_ms != 0 && now > n->rx_ms ? now - n->rx_ms : 0;
    /* never heard from by this replica: as stale as the protocol can say */
    w->age_ms = n->rx_ms != 0 ? (uint64_t)age : PROTO_MAX_DURATION_MS;
    w->failures = n->failures;
    w->successes = n->successes;
    w->cache_filter = n->cache_filter;
    w->cache_filter_len = n->cache_filter != NULL ? n->cache_filter_len : 0;
}

int rmview_publish_snapshot(rmview_t *v, int64_t now, uint64_t rm_id, rmview_emit_fn *emit,
                            void *arg)
{
    int drc = rmview_publish_delta(v, now, rm_id, emit, arg);
    if (drc != 0)
        return drc;
    uint32_t parts = (uint32_t)((v->n + PROTO_MAX_VIEW_NODES - 1) / PROTO_MAX_VIEW_NODES);
    if (parts == 0)
        parts = 1;
    if (parts > PROTO_MAX_VIEW_PARTS)
        return ERR_TOOBIG;
    if (v->seq == 0)
        v->seq = 1; /* nothing published yet: the chain starts here */
    uint64_t seq = v->seq;
    for (uint32_t p = 0; p < parts; p++) {
        size_t first = (size_t)p * PROTO_MAX_VIEW_NODES, k = 0;
        for (; k < PROTO_MAX_VIEW_NODES && first + k < v->n; k++) {
            struct rmview_node *n = &v->nodes[first + k];
            rmview__wire(&v->scratch[k], n, now);
            /* a joiner takes it live: its going silent must reach the joiner too */
            n->pub_live = n->pub_live || v->scratch[k].age_ms < PROTO_VIEW_LIVE_MS;
        }
        proto_msg_t m;
        proto_msg_init(&m, PROTO_VIEW_SNAPSHOT);
        m.view_snapshot.rm_id = rm_id;
        m.view_snapshot.view_seq = seq;
        m.view_snapshot.part = p;
        m.view_snapshot.parts = parts;
        m.view_snapshot.timestamp_ms = now;
        m.view_snapshot.nodes = k > 0 ? v->scratch : NULL;
        m.view_snapshot.nnodes = (uint32_t)k;
        int rc = emit(arg, &m);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Keeps the wait cells a delta names the node with: the reference for the next heartbeats. */
static int rmview__published(struct rmview_node *n)
{
    uint32_t cells = n->matrix.ncpu * n->matrix.nmem;
    if (cells > PROTO_MAX_MATRIX_CELLS)
        cells = PROTO_MAX_MATRIX_CELLS;
    if (cells > n->pub_ncells || n->pub_cells == NULL) {
        uint32_t *p = mem_reallocarray(n->pub_cells, cells > 0 ? cells : 1, sizeof *p);
        if (p == NULL)
            return ERR_NOMEM;
        n->pub_cells = p;
    }
    memcpy(n->pub_cells, n->matrix.cells_ms, cells * sizeof *n->pub_cells);
    n->pub_ncells = cells;
    return 0;
}

/* Whether a changed node can travel in a VIEW_CELLS message: its cells alone moved, it is live
 * and was published live, and its matrix fits the form. */
static bool rmview__compact(const struct rmview_node *n, int64_t now)
{
    const proto_matrix_t *m = &n->matrix;
    if (!n->dirty || n->dirty_full || !n->pub_live || n->rx_ms == 0 ||
        now - n->rx_ms >= PROTO_VIEW_LIVE_MS || m->ncpu < 1 || m->nmem < 1 ||
        m->ncpu > PROTO_MAX_MATRIX_DIM || m->nmem > PROTO_MAX_MATRIX_DIM ||
        n->pub_ncells != m->ncpu * m->nmem || strlen(n->name) > PROTO_VIEW_CELLS_NAME_MAX)
        return false;
    for (uint32_t i = 0; i < m->ncpu * m->nmem; i++)
        if (proto_view_grid_index(rmview_quantize_ms(m->cells_ms[i])) < 0)
            return false;
    return true;
}

/* The compact nodes as VIEW_CELLS messages, one run per matrix shape. */
static int rmview__publish_cells(rmview_t *v, int64_t now, uint64_t rm_id,
                                 rmview_emit_cells_fn *emit_cells, void *arg)
{
    struct proto_view_cells_node *nodes = mem_calloc(PROTO_VIEW_CELLS_MAX_NODES, sizeof *nodes);
    uint32_t *cells = NULL;
    int rc = nodes != NULL ? 0 : ERR_NOMEM;
    for (size_t from = 0; rc == 0;) {
        while (from < v->n && !rmview__compact(&v->nodes[from], now))
            from++;
        if (from == v->n)
            break;
        struct proto_view_cells c = {.rm_id = rm_id, .timestamp_ms = now, .nodes = nodes};
        c.ncpu = v->nodes[from].matrix.ncpu;
        c.nmem = v->nodes[from].matrix.nmem;
        uint32_t ncells = c.ncpu * c.nmem;
        mem_free(cells);
        cells = mem_alloc((size_t)PROTO_VIEW_CELLS_MAX_NODES * ncells * sizeof *cells);
        if (cells == NULL) {
            rc = ERR_NOMEM;
            break;
        }
        for (size_t i = from; i < v->n && c.nnodes < PROTO_VIEW_CELLS_MAX_NODES; i++) {
            struct rmview_node *n = &v->nodes[i];
            if (!rmview__compact(n, now) || n->matrix.ncpu != c.ncpu || n->matrix.nmem != c.nmem)
                continue;
            uint32_t *nc = cells + (size_t)c.nnodes * ncells;
            for (uint32_t k = 0; k < ncells; k++)
                nc[k] = rmview_quantize_ms(n->matrix.cells_ms[k]);
            nodes[c.nnodes++] = (struct proto_view_cells_node){
                n->name, n->seq, now > n->rx_ms ? (uint64_t)(now - n->rx_ms) : 0, nc};
            if (rmview__published(n) != 0)
                n->pub_ncells = 0;
            n->dirty = false;
        }
        v->delta_ms = now;
        c.base_seq = v->seq;
        c.view_seq = ++v->seq;
        rc = emit_cells(arg, &c);
    }
    mem_free(nodes);
    mem_free(cells);
    return rc;
}

int rmview_publish_delta(rmview_t *v, int64_t now, uint64_t rm_id, rmview_emit_fn *emit, void *arg)
{
    return rmview_publish_delta_cells(v, now, rm_id, emit, NULL, arg);
}

int rmview_publish_delta_cells(rmview_t *v, int64_t now, uint64_t rm_id, rmview_emit_fn *emit,
                               rmview_emit_cells_fn *emit_cells, void *arg)
{
    size_t i = 0, compact = 0;
    bool first = true;
    for (;;) {
        size_t k = 0;
        for (; i < v->n && k < PROTO_MAX_VIEW_NODES; i++) {
            struct rmview_node *n = &v->nodes[i];
            bool silent = n->pub_live && (n->rx_ms == 0 || now - n->rx_ms >= PROTO_VIEW_LIVE_MS);
            if (!n->dirty && !silent)
                continue;
            if (emit_cells != NULL && rmview__compact(n, now)) {
                compact++;
                continue;
            }
            if (rmview__published(n) != 0)
                n->pub_ncells = 0; /* no reference kept: its next heartbeat is news */
            rmview__wire(&v->scratch[k], n, now);
            n->pub_live = v->scratch[k].age_ms < PROTO_VIEW_LIVE_MS;
            n->dirty = n->dirty_full = false;
            k++;
        }
        /* nothing changed: still one empty delta a second, the replica's word that nothing did
           (a JM confirms its live nodes by it, and tells a silent replica from a quiet one) */
        if (k == 0 && (first == false || v->seq == 0 || compact > 0 ||
                       now - v->delta_ms < RMVIEW_KEEPALIVE_MS))
            return compact > 0 ? rmview__publish_cells(v, now, rm_id, emit_cells, arg) : 0;
        first = false;
        v->delta_ms = now;
        proto_msg_t m;
        proto_msg_init(&m, PROTO_VIEW_DELTA);
        m.view_delta.rm_id = rm_id;
        m.view_delta.base_seq = v->seq;
        m.view_delta.view_seq = ++v->seq;
        m.view_delta.timestamp_ms = now;
        m.view_delta.changed = k > 0 ? v->scratch : NULL;
        m.view_delta.nchanged = (uint32_t)k;
        int rc = emit(arg, &m);
        if (rc != 0)
            return rc;
    }
}

uint64_t rmview_seq(const rmview_t *v)
{
    return v->seq;
}

int rmview_topic_snapshot(const uint8_t *topic, size_t len)
{
    if (len > PROTO_VIEW_TOPIC_LEN ||
        (len > 0 && memcmp(topic, PROTO_VIEW_TOPIC_SNAPSHOT, len) != 0))
        return -1;
    return (int)len;
}

size_t rmview_gen_topic(uint64_t gen, uint8_t out[RMVIEW_GEN_TOPIC_LEN])
{
    memcpy(out, PROTO_VIEW_TOPIC_SNAPSHOT, PROTO_VIEW_TOPIC_LEN);
    out[PROTO_VIEW_TOPIC_LEN] = 0xcf;
    for (int i = 0; i < 8; i++)
        out[PROTO_VIEW_TOPIC_LEN + 1 + i] = (uint8_t)(gen >> (56 - 8 * i));
    return RMVIEW_GEN_TOPIC_LEN;
}
