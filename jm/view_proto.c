/* view_proto.c - wire messages into the JM's cluster view (see view_proto.h). */
#include "jm/view_proto.h"

#include "common/err.h"
#include "proto/pack.h"
#include "proto/view_cells.h"

/* Converts a wire matrix; returns 0 with *ncpu = *nmem = 0 for "no matrix". */
static int view__matrix(const proto_matrix_t *m, uint32_t *ncpu, uint32_t *nmem, double *cpu,
                        double *mem, double *cells)
{
    *ncpu = *nmem = 0;
    if (m->ncpu == 0 && m->nmem == 0)
        return 0;
    if (m->ncpu == 0 || m->nmem == 0 || m->ncpu > VIEW_MAX_BINS || m->nmem > VIEW_MAX_BINS)
        return ERR_INVAL;
    for (uint32_t i = 0; i < m->ncpu; i++)
        cpu[i] = m->cpu_bounds[i];
    for (uint32_t i = 0; i < m->nmem; i++)
        mem[i] = (double)m->mem_bounds_mb[i];
    for (uint32_t r = 0; r < m->ncpu; r++)
        for (uint32_t c = 0; c < m->nmem; c++) {
            uint32_t ms = proto_matrix_cell(m, r, c);
            cells[r * m->nmem + c] = ms == PROTO_WAIT_NEVER ? -1.0 : (double)ms / 1000.0;
        }
    *ncpu = m->ncpu;
    *nmem = m->nmem;
    return 0;
}

static int view__from_proto(view_t *v, const proto_view_node_t *n, int64_t now_ms, uint8_t src);

int view_update_from_proto(view_t *v, const proto_view_node_t *n, int64_t now_ms)
{
    return view__from_proto(v, n, now_ms, 0);
}

int view_update_from_replica(view_t *v, const proto_view_node_t *n, int64_t now_ms,
                             uint32_t replica)
{
    return view__from_proto(v, n, now_ms, replica < 255 ? (uint8_t)(replica + 1) : 0);
}

int view_stream_take(struct view_stream *s, const proto_msg_t *m)
{
    if (m->type == PROTO_VIEW_SNAPSHOT) {
        const proto_view_snapshot_t *p = &m->view_snapshot;
        if (p->part == 0) {
            s->building = p->view_seq;
            s->next_part = 1;
        } else if (s->building != 0 && s->building == p->view_seq && p->part == s->next_part) {
            s->next_part++;
        } else {
            s->building = 0; /* a part missed: wait for the next snapshot */
        }
        if (s->building == 0 || s->next_part < p->parts)
            return 0;
        s->seq = s->building;
        s->building = 0;
        s->synced = 1;
        s->wholes++;
        return VIEW_STREAM_WHOLE;
    }
    if (m->type != PROTO_VIEW_DELTA || !s->synced)
        return 0;
    if (m->view_delta.base_seq != s->seq) {
        s->synced = 0;
        s->gaps++;
        return VIEW_STREAM_GAP;
    }
    s->seq = m->view_delta.view_seq;
    s->confirms++;
    return VIEW_STREAM_NEXT;
}

int view_stream_take_cells(struct view_stream *s, const struct proto_view_cells *c)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_VIEW_DELTA);
    m.view_delta.base_seq = c->base_seq;
    m.view_delta.view_seq = c->view_seq;
    return view_stream_take(s, &m);
}

size_t view_update_cells_from_replica(view_t *v, const struct proto_view_cells *c, int64_t now_ms,
                                      uint32_t replica, size_t *skipped)
{
    size_t applied = 0, skip = 0;
    double cells[VIEW_MAX_BINS * VIEW_MAX_BINS];
    uint8_t src = replica < 255 ? (uint8_t)(replica + 1) : 0;
    uint32_t ncells = c->ncpu * c->nmem;
    if (c->ncpu > VIEW_MAX_BINS || c->nmem > VIEW_MAX_BINS) {
        skip = c->nnodes;
        ncells = 0;
    }
    for (uint32_t i = 0; ncells > 0 && i < c->nnodes; i++) {
        const struct proto_view_cells_node *n = &c->nodes[i];
        long idx = view_find(v, n->name);
        for (uint32_t k = 0; k < ncells; k++)
            cells[k] = n->cells_ms[k] == PROTO_WAIT_NEVER ? -1.0 : (double)n->cells_ms[k] / 1000.0;
        int64_t age = n->age_ms > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)n->age_ms;
        int rc = idx < 0 ? ERR_NOTFOUND
                         : view_set_cells(v, (uint32_t)idx, c->ncpu, c->nmem, cells, n->seq,
                                          now_ms - age, src, n->age_ms < PROTO_VIEW_LIVE_MS);
        applied += rc == 1;
        skip += rc < 0;
    }
    if (skipped != NULL)
        *skipped = skip;
    return applied;
}

static int view__from_proto(view_t *v, const proto_view_node_t *n, int64_t now_ms, uint8_t src)
{
    double cpu[VIEW_MAX_BINS], mem[VIEW_MAX_BINS], cells[VIEW_MAX_BINS * VIEW_MAX_BINS];
    uint32_t nc, nm;
    int rc = view__matrix(&n->matrix, &nc, &nm, cpu, mem, cells);
    if (rc != 0)
        return rc;
    struct view_entry e = {
        .name = n->name,
        .rack = n->rack,
        .endpoint = n->endpoint,
        .cpu = n->cpu,
        .mem_mb = n->mem_mb,
        .up = n->state == PROTO_NODE_UP || n->state == PROTO_NODE_SUSPECT,
        .running = n->running_regular + n->running_opportunistic,
        .queued = n->queued_regular + n->queued_opportunistic,
        .boot_id = n->boot_id,
        .seq = n->seq,
        .age_ms = n->age_ms,
        .failures = n->failures,
        .successes = n->successes,
        .ncpu = nc,
        .nmem = nm,
        .cpu_bins = cpu,
        .mem_bins_mb = mem,
        .wait_s = cells,
        .cache_filter = n->cache_filter,
        .cache_filter_len = n->cache_filter_len,
        .src = src,
        .live = n->age_ms < PROTO_VIEW_LIVE_MS,
    };
    return view_update(v, &e, now_ms);
}

int view_update_matrix_from_proto(view_t *v, const char *node, const proto_matrix_t *m,
                                  int64_t now_ms)
{
    long idx = node != NULL ? view_find(v, node) : -1;
    if (idx < 0)
        return ERR_NOTFOUND;
    double cpu[VIEW_MAX_BINS], mem[VIEW_MAX_BINS], cells[VIEW_MAX_BINS * VIEW_MAX_BINS];
    uint32_t nc, nm;
    int rc = view__matrix(m, &nc, &nm, cpu, mem, cells);
    if (rc != 0 || nc == 0)
        return rc;
    return view_set_matrix(v, (uint32_t)idx, nc, nm, cpu, mem, cells, now_ms);
}
