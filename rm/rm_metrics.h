/* rm_metrics.h - an RM replica's Prometheus metrics and its HTTP listener (docs/metrics.md).
 *
 * With `[metrics] listen = HOST:PORT` in the replica's configuration, the replica serves
 * "/metrics" (text exposition 0.0.4) from an HTTP server (common/httpd.h) on its own loop; the
 * same server carries the cluster page (rm/rm_page.h), which registers its routes on
 * rm_metrics_httpd(). Every replica reports what it has applied: the ledger figures are the
 * same on every replica up to replication lag; Raft figures are the replica's own.
 *
 * Endpoints of others: PNs advertise their metrics URL in HEARTBEAT.metrics_url and JMs in
 * LEASE_RENEW.metrics_url (JOB_REGISTER carries the field too, for a registrant that already
 * serves metrics, but a JM registers before its listener starts, so the RM records renewals
 * only). The replica keeps the latest of each here (volatile, not replicated: a new leader
 * learns them again from the next heartbeat or renewal) so that `paddock nodes` and `paddock
 * job show` can print them.
 *
 * Extending (e.g. the Raft transport's "rejected connections by reason"): a module registers a
 * source, a function that appends its own families to the scrape:
 *     static void my_source(struct metrics *m, void *arg) {
 *         metrics_family(m, "paddock_rm_raft_transport_rejected_total", METRICS_COUNTER, "...");
 *         const char *l[] = {"reason", "bad_key", NULL};
 *         metrics_sample(m, l, counters->bad_key);
 *     }
 *     rm_metrics_add_source(s, my_source, counters);
 * Sources may be added at any time, also before rm_metrics_start and with metrics off.
 *
 * Everything runs on the replica's loop thread. Private to rm/.
 */
#ifndef PADDOCK_RM_RM_METRICS_H
#define PADDOCK_RM_RM_METRICS_H

#include "common/httpd.h"
#include "common/metrics.h"

#include <stddef.h>
#include <stdint.h>

#define RM_METRICS_SOURCES_MAX 8
#define RM_METRICS_URLS_MAX    65536 /* node and job URLs kept (then the oldest set is dropped) */
#define RM_METRICS_PATH        "/metrics"

struct rmserver;

/* Appends families to a scrape (see above). `m` and `arg` are borrowed for the call. */
typedef void rm_metrics_source_fn(struct metrics *m, void *arg);

/* Starts the listener when the configuration has [metrics] listen (nothing otherwise).
 * Returns 0, or an httpd_start error with the reason in msg. */
int rm_metrics_start(struct rmserver *s, char *msg, size_t cap);
/* Stops the listener (its handles close on the loop); idempotent. */
void rm_metrics_stop(struct rmserver *s);
/* Frees what rm_metrics holds; after the loop has closed. Idempotent. */
void rm_metrics_free(struct rmserver *s);

/* The HTTP server (NULL when metrics are off), borrowed until rm_metrics_stop. */
httpd_t *rm_metrics_httpd(struct rmserver *s);
/* "http://HOST:PORT/metrics", or NULL when off. Borrowed. */
const char *rm_metrics_url(struct rmserver *s);

/* Registers a source; `arg` is borrowed until rm_metrics_free. Returns 0, ERR_FULL or
 * ERR_NOMEM. */
int rm_metrics_add_source(struct rmserver *s, rm_metrics_source_fn *fn, void *arg);

/* Records the metrics URL a node or a job's JM advertised (copied; NULL or "" forgets it).
 * URLs longer than PROTO_MAX_ENDPOINT are not stored (the decoder bounds them already). */
void rm_metrics_note_node(struct rmserver *s, const char *node, const char *url);
void rm_metrics_note_job(struct rmserver *s, uint64_t job_id, const char *url);
/* The URL recorded for a node or job, or NULL. Borrowed until the next note. */
const char *rm_metrics_node_url(struct rmserver *s, const char *node);
const char *rm_metrics_job_url(struct rmserver *s, uint64_t job_id);

/* The exposition text of replica s (what /metrics serves). Caller frees with mem_free; NULL
 * on ERR_NOMEM. For tests. */
char *rm_metrics_text(struct rmserver *s, size_t *len);

#endif
