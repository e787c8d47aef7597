/* view_proto.c - wire messages into the JM's cluster view (see view_proto.h). */
#include "jm/view_proto.h"

#include "common/err.h"
#include "proto/pack.h"

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
