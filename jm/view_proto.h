/* view_proto.h - feeding the JM's cluster view (jm/view.h) from wire messages (proto/proto.h):
 * the RM's published view nodes and the matrix a PN attaches to every task status.
 *
 * Pure conversions: matrix cells in milliseconds become seconds, PROTO_WAIT_NEVER becomes
 * VIEW_WAIT_NEVER; a node is "up" for placement when the RM says up or suspect (draining and down
 * nodes take no new tasks).
 */
#ifndef PADDOCK_JM_VIEW_PROTO_H
#define PADDOCK_JM_VIEW_PROTO_H

#include <stdint.h>

#include "jm/view.h"
#include "proto/proto.h"

/* What a process that takes the view keeps free at its heap's top between messages
 * (mem_keep_top, common/mem.h): a 20,000-node snapshot's parts are about 1 MiB each inflated;
 * with glibc's default (128 KiB) each part's decode faulted its pages in again, and a JM's first
 * snapshot decoded 3 x slower on a VM where page faults are dear (docs/benchmarks.md). */
#define VIEW_PROTO_HEAP_PAD (4u << 20)

/* Merges one node of an RM view snapshot or delta received at now_ms (freshness rules of
 * view_update). Returns view_update's result. */
int view_update_from_proto(view_t *v, const proto_view_node_t *n, int64_t now_ms);

/* The same for a node from RM replica `replica` (0-based): the entry remembers it, and whether
 * it was live (age_ms below PROTO_VIEW_LIVE_MS), for view_confirm. */
int view_update_from_replica(view_t *v, const proto_view_node_t *n, int64_t now_ms,
                             uint32_t replica);

/* One replica's view stream as a JM follows it (proto/README.md "View subscriptions"): whole
 * once every part of one snapshot arrived in order, then in sequence for as long as each delta's
 * base_seq is the view_seq held. Pure: the caller subscribes and unsubscribes. */
struct view_stream {
    uint64_t seq;       /* the view_seq held when in sequence */
    uint64_t building;  /* the snapshot whose parts are arriving (0: none) */
    uint32_t next_part; /* the part expected next */
    int synced;         /* whole, and every delta since taken */
    uint64_t wholes, gaps, confirms;
};

enum {
    VIEW_STREAM_WHOLE = 1, /* a snapshot completed: in sequence from here; snapshots not needed */
    VIEW_STREAM_GAP = 2,   /* a delta did not follow the one before: ask for a snapshot */
    VIEW_STREAM_NEXT = 4,  /* a delta followed in sequence: the live nodes it omits are confirmed */
};

/* Takes one VIEW_SNAPSHOT or VIEW_DELTA (its nodes are merged by the caller whatever this says:
 * each node's own freshness rules). Returns a VIEW_STREAM_* flag, or 0. */
int view_stream_take(struct view_stream *s, const proto_msg_t *m);

/* Takes one VIEW_CELLS message (proto/view_cells.h), a link of the same chain as the deltas: as
 * view_stream_take for a VIEW_DELTA. */
struct proto_view_cells;
int view_stream_take_cells(struct view_stream *s, const struct proto_view_cells *c);

/* Merges a VIEW_CELLS message from RM replica `replica` received at now_ms: each node the view
 * holds with the message's matrix shape takes its cells, seq and age (view_set_cells). Returns
 * how many were applied; *skipped (may be NULL) counts those unknown or of another shape. */
size_t view_update_cells_from_replica(view_t *v, const struct proto_view_cells *c, int64_t now_ms,
                                      uint32_t replica, size_t *skipped);

/* Replaces a known node's matrix with the one a PN sent directly (TASK_STATUS) at now_ms: the
 * freshest information there is, so its age restarts at 0. ERR_NOTFOUND for an unknown node
 * name, ERR_INVAL for a bad matrix; an empty matrix (0 x 0) changes nothing. */
int view_update_matrix_from_proto(view_t *v, const char *node, const proto_matrix_t *m,
                                  int64_t now_ms);

#endif
