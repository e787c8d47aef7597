/* view.h - the cluster view: PN heartbeats merged into soft state, published as snapshots
 * plus deltas (pure: no sockets, no clock; `now` comes from the caller).
 *
 * Apollo §3.1: the RM aggregates the PNs' load information (capacity, usage, the wait-time
 * matrix) into a cluster-wide view that JMs use for placement; it is soft state, rebuilt from
 * heartbeats after a restart, never written to the Raft log. Every replica keeps its own view.
 *
 * Freshness: per node, the pair (boot_id, seq). A heartbeat with the same boot id and a seq not
 * above the one held is stale and ignored; another boot id replaces the entry (the PN
 * restarted). Durable facts (state up/suspect/down/draining, failure history) come from the
 * ledger through rmview_note.
 *
 * Publication (proto.h grammar S:(VIEW_SNAPSHOT+ VIEW_DELTA*)*): rmview_publish_delta emits
 * the nodes changed since the previous delta, each delta applying to the view at base_seq and
 * yielding view_seq (several deltas chain when more nodes changed than one holds): one unbroken
 * chain, so a subscriber that takes only deltas sees a gap as base_seq != its view_seq.
 * rmview_publish_snapshot first publishes what changed as deltas, then every node in parts of at
 * most PROTO_MAX_VIEW_NODES sharing view_seq = the latest delta's: the view a joiner takes whole
 * is exactly where the chain stands, and a snapshot neither moves the chain nor hides a change
 * from a subscriber that takes deltas only. Each published node carries age_ms, the time since
 * this replica heard from it, so subscribers see staleness per node.
 *
 * What a delta names (a JM subscribes once and follows deltas, so they are what every
 * subscriber pays for): a node whose JM-relevant facts changed since the delta that last named
 * it. Exact: rack, endpoint, capacity, boot id, draining, state and failure history, the cache
 * filter, the matrix's bins. Within a tolerance: the wait cells, published again only when one
 * moved by more than max(RMVIEW_WAIT_TOL_MS, 1/RMVIEW_WAIT_TOL_DIV of the published wait).
 * Load (used cpu and memory, running and queued counts) alone is not a change: it travels with
 * the node when something else is. And liveness: a node published live (proto/pack.h
 * PROTO_VIEW_LIVE_MS) is published again once it has been silent that long, so that a JM, which
 * takes every delta in sequence as a confirmation of the live nodes it does not name, stops
 * confirming it.
 */
#ifndef PADDOCK_RM_RMVIEW_H
#define PADDOCK_RM_RMVIEW_H

#include "proto/proto.h"
#include "rm/ledger.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rmview rmview_t;

/* One node of the view. Read-only for callers; valid until the next rmview_* call that adds
 * nodes (rmview_ingest, rmview_note) or rmview_destroy. */
struct rmview_node {
    char name[LEDGER_NAME_MAX];
    char rack[LEDGER_RACK_MAX];
    char endpoint[LEDGER_ADDR_MAX];
    double cpu;
    uint64_t mem_mb;
    double used_cpu;
    uint64_t used_mem_mb;
    uint32_t running_regular, running_opportunistic;
    uint32_t queued_regular, queued_opportunistic;
    proto_matrix_t matrix;
    uint64_t boot_id;
    uint64_t seq;
    int64_t rx_ms;  /* when the latest heartbeat arrived; 0: none yet (known from the ledger) */
    uint32_t state; /* proto_node_state_t, from the ledger */
    bool draining;  /* the PN's own word (SIGUSR1, stop_mode finish): published as DRAINING */
    uint64_t failures, successes;
    /* The PN's cache advertisement as its latest heartbeat carried it (a Bloom filter's wire
     * form, at most PROTO_MAX_CACHE_FILTER bytes; NULL: none), published with the node. */
    uint8_t *cache_filter;
    uint32_t cache_filter_len;
    bool dirty;      /* private: changed since the last delta */
    bool dirty_full; /* private: ... by more than its wait cells (a VIEW_DELTA names it whole) */
    /* private: what the last delta that named the node said (the reference for "changed") */
    bool pub_live;       /* published with an age below PROTO_VIEW_LIVE_MS */
    uint32_t pub_ncells; /* 0: never published */
    uint32_t *pub_cells; /* pub_ncells wait cells, ms */
};

#define RMVIEW_WAIT_TOL_MS  250u /* a wait cell within this of the published one is unchanged */
#define RMVIEW_WAIT_TOL_DIV 8u   /* ... or within an eighth of it, whichever is larger */

/* A replica with nothing to say still publishes an empty delta this often: a JM takes it as a
 * confirmation of its live nodes, and a JM that follows one replica's view (jm/daemon/jmd_rm.c)
 * moves to another when its replica has said nothing for several of these. */
#define RMVIEW_KEEPALIVE_MS 1000

#define RMVIEW_WAIT_QUANTUM_MS 50u /* published waits: multiples of 50 ms ... */
#define RMVIEW_WAIT_QUANTUM_DIV                                                                    \
    16u /* ... times the largest power of two within 1/16 of the wait                              \
         */

/* A wait cell as the view publishes it (every snapshot and delta): rounded to the nearest
 * multiple of a step, 50 ms below 1.6 s, 100 ms below 3.2 s, 200 ms below 6.4 s and so on (the
 * largest 50 ms x 2^k at most a sixteenth of the wait), so within 25 ms or a thirty-second of
 * the PN's figure: half what RMVIEW_WAIT_TOL_* lets a held wait drift before it is published
 * again. PROTO_WAIT_NEVER is kept. Waits a few ms apart then publish as one value: a 20,000-node
 * snapshot packs into about half the bytes (docs/rm.md "Heartbeats and the view"). Monotonic. */
uint32_t rmview_quantize_ms(uint32_t ms);

/* A new empty view. Caller owns; NULL on ERR_NOMEM. */
rmview_t *rmview_new(void);
void rmview_destroy(rmview_t **vp);

enum rmview_ingest_result {
    RMVIEW_FRESH = 0, /* accepted */
    RMVIEW_STALE = 1, /* older or repeated (boot_id, seq): ignored */
};

/* Merges one decoded heartbeat received at `now` (its cache filter is copied: a heartbeat
 * without one clears the node's). Returns RMVIEW_FRESH, RMVIEW_STALE, ERR_INVAL
 * (a name, rack or endpoint too long for the ledger's fields) or ERR_NOMEM. The message is
 * borrowed. */
int rmview_ingest(rmview_t *v, const proto_heartbeat_t *hb, int64_t now);

/* Records the ledger's facts about a node (adds it when unknown, e.g. registered but silent):
 * state, failure history, and the registered identity if the view has none yet. */
int rmview_note(rmview_t *v, const struct ledger_node *n);

size_t rmview_count(const rmview_t *v);
const struct rmview_node *rmview_at(const rmview_t *v, size_t i);
const struct rmview_node *rmview_find(const rmview_t *v, const char *name);

/* The liveness a node should have given the time since it was last heard from (or, never
 * heard, since `heard_ms` the caller's grace start): up below suspect_ms, suspect below
 * down_ms, down beyond. */
enum ledger_liveness rmview_liveness(int64_t heard_ms, int64_t now, int64_t suspect_ms,
                                     int64_t down_ms);

/* Receives each message to publish; the message and everything it points to are borrowed for
 * the call (encode it there). Return 0 to go on, non-zero to stop (that code is returned). */
typedef int rmview_emit_fn(void *arg, const proto_msg_t *msg);

/* Publishes what changed as deltas (rmview_publish_delta), then the whole view as parts sharing
 * view_seq = the latest delta's (1 when nothing was ever published). Returns 0 or the emitter's
 * code. */
int rmview_publish_snapshot(rmview_t *v, int64_t now, uint64_t rm_id, rmview_emit_fn *emit,
                            void *arg);
/* Publishes the nodes changed since the last delta as deltas, and the live nodes gone silent
 * for PROTO_VIEW_LIVE_MS; when none did, an empty delta (the chain moves by one) if the last
 * delta is RMVIEW_KEEPALIVE_MS old, else nothing (nor before the chain started). Returns 0 or
 * the emitter's code. */
int rmview_publish_delta(rmview_t *v, int64_t now, uint64_t rm_id, rmview_emit_fn *emit, void *arg);
/* Receives each compact delta to publish (proto/view_cells.h), borrowed for the call. */
struct proto_view_cells;
typedef int rmview_emit_cells_fn(void *arg, const struct proto_view_cells *c);
/* As rmview_publish_delta, but a node whose wait cells alone moved since the delta that last
 * named it (same boot id, capacity, bins, state, filter; heard from within PROTO_VIEW_LIVE_MS and
 * published live) goes in a VIEW_CELLS message through emit_cells, after the VIEW_DELTAs of the
 * others, in the same chain: its name, seq, age and cells, a third of the bytes. Its load stays
 * as last published. Returns 0 or an emitter's code. */
int rmview_publish_delta_cells(rmview_t *v, int64_t now, uint64_t rm_id, rmview_emit_fn *emit,
                               rmview_emit_cells_fn *emit_cells, void *arg);
/* The seq of the latest publication (0 before the first). */
uint64_t rmview_seq(const rmview_t *v);

/* Whether a subscription to `topic` (an XPUB subscription message without its first byte) takes
 * snapshots: "" or a prefix of proto/pack.h's PROTO_VIEW_TOPIC_SNAPSHOT. Returns the topic's
 * length (0..PROTO_VIEW_TOPIC_LEN) when it does, -1 when it does not. */
int rmview_topic_snapshot(const uint8_t *topic, size_t len);

/* Snapshots addressed to their joiners (docs/rm.md "Heartbeats and the view"): the RM numbers
 * its snapshots (the messages' req_id, 1, 2, ...) and, its view socket set to ZMQ_XPUB_MANUAL,
 * answers a subscription to the whole snapshot topic by subscribing that subscriber to the
 * next snapshot's number only: a JM takes the one snapshot made for it, not every snapshot
 * published while it still receives its own (a thousand JMs joining at once took each of a dozen
 * 2.5 MiB snapshots). A packed message starts with the topic, 0xcf and its req_id in 8 bytes
 * (proto/pack.h), so this prefix matches exactly snapshot `gen`'s parts. Returns its length. */
#define RMVIEW_GEN_TOPIC_LEN 13u
size_t rmview_gen_topic(uint64_t gen, uint8_t out[RMVIEW_GEN_TOPIC_LEN]);

#endif
