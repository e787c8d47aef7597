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

/* Merges one node of an RM view snapshot or delta received at now_ms (freshness rules of
 * view_update). Returns view_update's result. */
int view_update_from_proto(view_t *v, const proto_view_node_t *n, int64_t now_ms);

/* Replaces a known node's matrix with the one a PN sent directly (TASK_STATUS) at now_ms: the
 * freshest information there is, so its age restarts at 0. ERR_NOTFOUND for an unknown node
 * name, ERR_INVAL for a bad matrix; an empty matrix (0 x 0) changes nothing. */
int view_update_matrix_from_proto(view_t *v, const char *node, const proto_matrix_t *m,
                                  int64_t now_ms);

#endif
