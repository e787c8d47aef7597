/* view.h - the JM's model of the cluster: per node capacity, rack, wait-time matrix, its age and
 * the node's success probability (Apollo §3.1, §3.3).
 *
 * Pure: no sockets, no clock. The daemon feeds it entries from every RM replica's view (and from
 * PNs' own status messages) with the time they were received; the estimator reads it.
 *
 * Freshness (docs/architecture.md, "How a task flows", step 2): per node the freshest entry wins.
 * Within one boot of a PN (same boot_id) the higher heartbeat sequence number is fresher; across
 * boots (a PN restarted, boot ids are random) the entry whose information is more recent (receive
 * time minus reported age) wins. An older entry is ignored.
 *
 * Nodes are numbered 0..view_count()-1 in order of first appearance and are never renumbered
 * (a node that leaves is marked down, so indices held by a JM stay valid).
 */
#ifndef PADDOCK_JM_VIEW_H
#define PADDOCK_JM_VIEW_H

#include <stddef.h>
#include <stdint.h>

#define VIEW_MAX_BINS     16
#define VIEW_NAME_MAX     128 /* node and rack names, bytes including the NUL */
#define VIEW_ENDPOINT_MAX 256 /* a PN's endpoint for JMs, bytes including the NUL */
#define VIEW_MAX_NODES    1000000
#define VIEW_WAIT_NEVER   (-1.0f) /* a matrix cell for a request the node can never hold */

/* One node's entry as received (public value; strings borrowed for the call). */
struct view_entry {
    const char *name;     /* required, 1..VIEW_NAME_MAX-1 bytes */
    const char *rack;     /* may be "" (a rack of its own named "") */
    const char *endpoint; /* the PN's endpoint for JMs ("tcp://..."); NULL keeps the known one */
    double cpu;           /* capacity, cores */
    uint64_t mem_mb;      /* capacity, MiB */
    int up;               /* 0 when the RM considers the node down */
    uint32_t running;     /* regular + opportunistic tasks running */
    uint32_t queued;      /* tasks queued */
    uint64_t boot_id;
    uint64_t seq;
    uint64_t age_ms;    /* age of this information when received (0 for a PN's direct report) */
    uint64_t failures;  /* failed task attempts (for Psucc) */
    uint64_t successes; /* succeeded task attempts */
    /* wait-time matrix: ncpu x nmem cells, row-major, seconds, VIEW_WAIT_NEVER allowed;
       ncpu == 0 means "no matrix" (treated as an idle node whose every fitting cell is 0) */
    uint32_t ncpu, nmem;
    const double *cpu_bins;    /* ncpu ascending upper bounds, cores */
    const double *mem_bins_mb; /* nmem ascending upper bounds, MiB */
    const double *wait_s;      /* ncpu * nmem */
    /* the PN's cache advertisement (common/bloom.h wire form; NULL or 0 bytes: none, and a
       filter the view held for the node is dropped) */
    const uint8_t *cache_filter;
    size_t cache_filter_len;
    /* where it came from, for view_confirm: 1 + the RM replica's index, 0 for anything else; and
       whether that replica heard from the node recently (proto/pack.h PROTO_VIEW_LIVE_MS) */
    uint8_t src;
    uint8_t live;
};

/* A node as the view holds it. Public, read-only for callers; its pointers are valid until
 * the next view_update or view_set_matrix of the same node, or view_destroy. Compact: the
 * strings and the cells live in the view's own arena, each at its length, and the bins, which
 * most nodes share, once per distinct set (a 20,000-node view with 6 x 7 matrices holds a few
 * MiB, where fixed 128/256-byte strings and 16 x 16 cells held 51). */
struct view_node {
    const char *name;
    const char *endpoint; /* "" when never told */
    uint32_t rack;        /* index into the rack table (view_rack_name) */
    uint8_t ncpu, nmem;
    uint8_t src, live; /* of the entry it holds (struct view_entry) */
    int up;
    uint16_t wait_cap; /* cells wait_s has room for */
    uint32_t running, queued;
    double cpu;
    uint64_t mem_mb;
    uint64_t boot_id, seq;
    int64_t info_ms;          /* local time the information reflects: receive time - age */
    double psucc;             /* (successes + 1) / (attempts + 2), in (0, 1) */
    const float *cpu_bins;    /* ncpu ascending upper bounds, cores */
    const float *mem_bins_mb; /* nmem ascending upper bounds, MiB */
    float *wait_s;            /* ncpu * nmem cells, row-major [cpu][mem] */
    struct bloom *cache;      /* the files the node advertises (view_cached); NULL: none */
};

typedef struct view view_t;

/* Bytes the view holds for its nodes (the node array, arena, name table, racks, filters not
 * counted). */
size_t view_bytes(const view_t *v);

/* New empty view. Returns 0 and stores it in *out (caller owns; view_destroy), or ERR_NOMEM. */
int view_new(view_t **out);

/* Frees the view and nullifies the caller's reference. NULL-safe. */
void view_destroy(view_t **p);

/* Merges one entry received at local time now_ms (copied). Returns 1 if it was applied, 0 if it
 * was older than what the view holds (an entry of the same boot and seq is applied only when it
 * says the node is not up, or not live where the view held it live: the RM's liveness verdict
 * on a node that stopped heartbeating),
 * ERR_INVAL for a bad entry (no name, name, rack or endpoint too long, capacity not positive,
 * matrix dimensions over VIEW_MAX_BINS or bins not ascending), ERR_FULL past VIEW_MAX_NODES,
 * ERR_NOMEM. On error the view is unchanged. */
int view_update(view_t *v, const struct view_entry *e, int64_t now_ms);

/* Replaces a node's matrix (ncpu x nmem cells as in struct view_entry) with information from
 * now_ms, e.g. a matrix the PN itself sent with a task status. ERR_NOTFOUND, ERR_INVAL. */
int view_set_matrix(view_t *v, uint32_t node, uint32_t ncpu, uint32_t nmem, const double *cpu_bins,
                    const double *mem_bins_mb, const double *wait_s, int64_t now_ms);

/* 1 when the node's cache advertisement says it may hold the file at `path` (a Bloom filter:
 * never a false "no", a false "yes" at the rate the PN sized it for, about 1%), 0 when it surely
 * does not or advertises nothing. */
int view_cached(const struct view_node *n, const char *path);

/* A compact delta's news (proto/view_cells.h) for a node the view holds: its wait cells (ncpu x
 * nmem as the node's, in seconds, negative for never), the heartbeat's seq, the time the
 * information reflects and its source (struct view_entry's src, live). Returns 1 when applied, 0
 * when seq is not newer than the one held, ERR_NOTFOUND, ERR_INVAL when the shape differs from
 * the node's (its bins and everything else are as held). */
int view_set_cells(view_t *v, uint32_t node, uint32_t ncpu, uint32_t nmem, const double *wait_s,
                   uint64_t seq, int64_t info_ms, uint8_t src, int live);

/* A replica's word that the live nodes it sent (src, live) are unchanged as of info_ms: their
 * information is that recent (it is never made older). Returns the nodes it moved. */
size_t view_confirm(view_t *v, uint8_t src, int64_t info_ms);

/* Every node's entry as if replica `src` had sent it: after a whole snapshot of that replica,
 * which named every node with the entry held or an older one, so that its deltas confirm them
 * (a JM that moves from one replica's view to another's). Returns the entries relabelled. */
size_t view_adopt(view_t *v, uint8_t src);

/* Marks a node down (e.g. it missed heartbeats and status past a timeout). ERR_NOTFOUND. */
int view_set_up(view_t *v, uint32_t node, int up);

size_t view_count(const view_t *v);
const struct view_node *view_node(const view_t *v, uint32_t node); /* NULL when out of range */

/* Index of a node by name, or -1. O(1) expected. */
long view_find(const view_t *v, const char *name);

size_t view_rack_count(const view_t *v);
const char *view_rack_name(const view_t *v, uint32_t rack);
/* Nodes in a rack (borrowed until the next view_update that adds a node). */
const uint32_t *view_rack_nodes(const view_t *v, uint32_t rack, size_t *n);

/* Wait in seconds for a (cpu, mem_mb) request on a node, looked up `steps` cells larger in both
 * dimensions than the smallest cell that covers it (steps = 0 is Apollo's plain lookup; the
 * estimator uses steps > 0 for stale matrices). Returns a negative value when the node can never
 * hold the request (larger than its capacity or a VIEW_WAIT_NEVER cell). Past the last bin the
 * last cell is used when the node's capacity still covers the request. */
double view_wait(const struct view_node *n, double cpu, double mem_mb, int steps);

/* Age of a node's information at now_ms (0 if it lies in the future). */
int64_t view_age_ms(const struct view_node *n, int64_t now_ms);

/* Rebuilds the list of lightly-loaded nodes: up to `max` up nodes with the lowest wait for the
 * smallest cell (ties: fewer queued, then lower index). Called by the daemon in the background
 * (e.g. once per view refresh), not per placement. ERR_NOMEM leaves the old list. */
int view_refresh_light(view_t *v, size_t max);
const uint32_t *view_light(const view_t *v, size_t *n);

#endif
