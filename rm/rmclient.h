/* rmclient.h - a small blocking client of the RM API, for the CLI, tools and tests.
 *
 * Holds one DEALER per RM replica (CURVE when keys are given). rmclient_call sends a request to
 * the replica believed to lead and follows the protocol's redirects: an ERROR(ERR_NOTLEADER)
 * with a leader endpoint makes it retry there, one without (an election) makes it try the next
 * replica after a short pause, and a silent replica is skipped after the per-try timeout; all
 * of it within an overall deadline. The request is re-sent unchanged, so a write's idempotency
 * key makes the retries safe (proto.h). Replies are matched by req_id, which the client sets.
 *
 * Where the replicas are: rmclient_open takes the CLI's options (docs/architecture.md,
 * "The command line"): a local cluster's directory (--cluster DIR, or PADDOCK_CLUSTER), whose
 * cluster.conf names the endpoints and the keys, or a comma-separated endpoint list with a keys
 * directory.
 *
 * Not thread-safe; a blocking client (use zuv sockets inside daemons). Several clients may
 * live in several threads once czmq is initialised: call zsys_init() (or create any client)
 * from one thread first, as czmq's global set-up must not race.
 */
#ifndef PADDOCK_RM_RMCLIENT_H
#define PADDOCK_RM_RMCLIENT_H

#include "proto/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RMCLIENT_MAX_REPLICAS 7
#define RMCLIENT_CLUSTER_FILE "cluster.conf"
#define RMCLIENT_LEADER_FILE  "leader" /* a cluster directory's hint: the last leader seen */

typedef struct rmclient rmclient_t;

/* What a cluster directory's cluster.conf says (see rmclient_cluster_load). Strings owned by
 * the struct; release with rmclient_cluster_close. */
struct rmclient_cluster {
    size_t n;
    uint64_t ids[RMCLIENT_MAX_REPLICAS]; /* Raft ids, 0 when the file does not say */
    char *api[RMCLIENT_MAX_REPLICAS];
    char *pub[RMCLIENT_MAX_REPLICAS];
    char *heartbeat[RMCLIENT_MAX_REPLICAS]; /* the API endpoint when the file names none */
    char *keys_dir;                         /* absolute, or NULL: no CURVE */
    char *key_name;
};

/* Reads DIR/cluster.conf:
 *     [cluster]  ids = 1, 2, 3   api = tcp://..., ...   heartbeat = ... (optional)
 *                pub = tcp://..., ...
 *     [security] keys_dir = keys (relative to DIR, or absolute)   key_name = paddock
 * Returns 0, ERR_IO or ERR_CONFIG (reason in msg). */
int rmclient_cluster_load(const char *dir, struct rmclient_cluster *out, char *msg, size_t cap);
void rmclient_cluster_close(struct rmclient_cluster *c);

/* Connects to `n` replicas' API endpoints. keys_dir NULL or "" means no CURVE (loopback only);
 * otherwise the client loads KEYS_DIR/KEY_NAME.secret and trusts KEYS_DIR/KEY_NAME.pub as the
 * server key. Caller owns *out. Returns 0, ERR_INVAL, ERR_IO, ERR_PARSE or ERR_SYS. */
int rmclient_new(rmclient_t **out, const char *const *endpoints, size_t n, const char *keys_dir,
                 const char *key_name, char *msg, size_t cap);

/* The CLI's way: `cluster_dir` (else PADDOCK_CLUSTER) names a cluster directory; otherwise
 * `rm_endpoints` ("tcp://a:1,tcp://b:2") with `keys_dir` (may be NULL).
 *
 * With a cluster directory, its file RMCLIENT_LEADER_FILE (one line: the API endpoint of the
 * replica last seen to lead) is a hint: only that replica is connected now and asked first, the
 * others when a call turns to them, and a call answered by another leader rewrites the file, as
 * does an admin query another replica answered where the hinted one was silent (that one is
 * alive at least; a write there is redirected to the leader, which corrects the file).
 * Each connection is a CURVE handshake on both sides, on the path of every command, and a
 * client talks to the leader alone unless it fails over. Without the file (or when it names no
 * replica of the cluster, or with `rm_endpoints`), every replica is connected at once. */
int rmclient_open(rmclient_t **out, const char *cluster_dir, const char *rm_endpoints,
                  const char *keys_dir, char *msg, size_t cap);

/* The index among api[0..n) of the replica DIR/RMCLIENT_LEADER_FILE names, or -1: no file, or
 * it names none of them. */
int rmclient_leader_hint(const char *cluster_dir, const char *const *api, size_t n);

/* Closes the sockets; nullifies the caller's reference. */
void rmclient_destroy(rmclient_t **c);

size_t rmclient_count(const rmclient_t *c);
const char *rmclient_endpoint(const rmclient_t *c, size_t i);

/* Sends *req (borrowed; its req_id is overwritten) to the leader, following redirects, for at
 * most `deadline_ms` in total, `try_ms` per replica try. On 0, *reply holds the answer (caller
 * owns it: proto_msg_close), which may be an ERROR other than ERR_NOTLEADER/ERR_UNAVAILABLE
 * (a refusal: the request reached the leader). Returns 0, ERR_TIMEOUT (no leader answered in
 * time), ERR_NOMEM or an encoding error (msg says why). */
int rmclient_call(rmclient_t *c, proto_msg_t *req, proto_msg_t *reply, int try_ms, int deadline_ms,
                  char *msg, size_t cap);

/* Sends to replica i only, waits at most `timeout_ms`. Returns 0 (reply as above) or
 * ERR_TIMEOUT. */
int rmclient_call_at(rmclient_t *c, size_t i, proto_msg_t *req, proto_msg_t *reply, int timeout_ms,
                     char *msg, size_t cap);

/* Admin queries of kinds[0..n) without arguments (n <= RMCLIENT_MAX_MANY), all sent to one
 * replica (the leader when known, else the first) before any reply is awaited: one round trip
 * for all. A replica that answers none within a second, the next, within timeout_ms in all.
 * json[i] is query i's document (caller frees with mem_free), or NULL where it was refused or
 * not answered. Returns how many were answered. */
#define RMCLIENT_MAX_MANY 8
int rmclient_admin_many(rmclient_t *c, const char *const *kinds, size_t n, int timeout_ms,
                        char **json);

/* An admin query: on replica `replica` (or, with replica < 0, on the leader following
 * redirects). On 0 *json is the reply document (caller frees with mem_free). A refusal
 * returns its ERR_* code with the RM's reason in msg. */
int rmclient_admin(rmclient_t *c, int replica, const char *kind, const char *const *args,
                   size_t nargs, int timeout_ms, char **json, char *msg, size_t cap);
/* The same with a document for the query (borrowed; NULL: none), e.g. recurring_add's spec. */
int rmclient_admin_data(rmclient_t *c, int replica, const char *kind, const char *const *args,
                        size_t nargs, const char *data, int timeout_ms, char **json, char *msg,
                        size_t cap);

/* The same admin query on every replica at once (one request each, answers collected as they
 * come): returns once all answered, `timeout_ms` passed, or `settle_ms` passed since the first
 * answer, so a replica that is down costs at most settle_ms beyond the others. json[i] receives
 * replica i's document (caller frees with mem_free) or NULL when it did not answer in time or
 * refused. Returns how many answered, or a negative ERR_* (encoding, ERR_NOMEM). */
int rmclient_admin_all(rmclient_t *c, const char *kind, const char *const *args, size_t nargs,
                       int timeout_ms, int settle_ms, char **json);

/* rmclient_admin_all that also returns as soon as an answer satisfies enough(json, arg) (NULL:
 * never): e.g. the leader's status, when only the leader's answer matters. */
int rmclient_admin_until(rmclient_t *c, const char *kind, const char *const *args, size_t nargs,
                         int timeout_ms, int settle_ms, bool (*enough)(const char *, void *),
                         void *arg, char **json);

/* A fresh random idempotency key ("k-" + 32 hex digits) into out (at least 35 bytes). */
int rmclient_new_key(char *out, size_t cap);

/* Index of the replica the client currently believes leads (-1: unknown). */
int rmclient_leader(const rmclient_t *c);

/* Replica i leads, as the caller learned (its rm_status says so): asked first from now on, and
 * named in the cluster directory's leader file. */
void rmclient_set_leader(rmclient_t *c, size_t i);

#endif
