/* jmd_metrics.h - a job manager's Prometheus metrics (docs/metrics.md).
 *
 * Configuration: the JM serves "/metrics" when the environment variable PADDOCK_JM_METRICS is
 * HOST:PORT (port 0: a free one, the usual choice since several JMs share a host), or else when
 * $PADDOCK_CLUSTER/jm.conf exists with `[metrics] listen = HOST:PORT` (`paddock cluster up`
 * writes one). The environment wins; "" or "off" turns it off. A JM started by `paddock
 * submit` inherits the submitter's environment, one the RM leader restarts the RM's. An
 * unusable setting is logged and the job runs without metrics.
 *
 * The JM advertises the URL in its LEASE_RENEW.metrics_url; the RM shows it in `paddock job
 * show`. The server runs on the JM's loop (common/httpd.h); the figures are read from the
 * jmd_t at each scrape.
 */
#ifndef PADDOCK_JM_JMD_METRICS_H
#define PADDOCK_JM_JMD_METRICS_H

#include "common/metrics.h"

#include <stddef.h>

#define JMD_METRICS_ENV  "PADDOCK_JM_METRICS"
#define JMD_METRICS_FILE "jm.conf"

struct jmd;

/* Starts the listener on j's loop when configured (see above); never fails the job. */
void jmd_metrics_start(struct jmd *j);
/* Stops the listener (before the loop's handles are closed) and frees the state. Idempotent. */
void jmd_metrics_stop(struct jmd *j);
/* "http://HOST:PORT/metrics", or NULL when off. Borrowed until jmd_metrics_stop. */
const char *jmd_metrics_url(const struct jmd *j);
/* Appends the JM's families to m (what /metrics serves). */
void jmd_metrics_write(struct jmd *j, struct metrics *m);
/* The listen setting as configured (environment, then the cluster's jm.conf), into out;
 * "" when off. For tests and the log. */
void jmd_metrics_listen(char *out, size_t cap);

#endif
