/* rm_page.h - the RM leader's live cluster page (docs/cluster-page.md).
 *
 * A read-only view for operators, served on the RM's HTTP server (common/httpd.h, the listener
 * of `[metrics] listen`): "/" is one self-contained HTML page (inline CSS, JS and SVG, embedded
 * in the binary from rm/page/cluster.html; no network beyond the RM), "/cluster.json" the
 * document the page fetches every second: nodes with their queues and wait-time matrices,
 * jobs with progress against the deadline and ETA, tokens per virtual cluster and job, and
 * the Raft replicas. Only a ready leader serves the data; a follower's "/" is a notice naming
 * the leader, and its "/cluster.json" answers 503 with the leader's id (the open page then
 * shows the notice too).
 *
 * Authentication: a request from a loopback client (127.0.0.0/8, ::1) is served as is, the
 * same trust as the loopback listener the page has by default. Any other client must present
 * the cluster's web token, `KEYS_DIR/web.token` (rm_page_token_create), as
 * "Authorization: Bearer TOKEN" or as the query argument "?token=TOKEN" (what a browser can
 * open; the page then sends it as a header and removes it from the address bar). Without it,
 * or with a wrong one, the answer is 401 and the refusal is counted (rm_page_stats). With no
 * keys directory or no readable token every non-loopback request is refused.
 *
 * Not thread-safe: everything runs on the replica's loop thread (httpd handlers do).
 */
#ifndef PADDOCK_RM_RM_PAGE_H
#define PADDOCK_RM_RM_PAGE_H

#include "common/httpd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RM_PAGE_TOKEN_FILE "web.token"
#define RM_PAGE_TOKEN_MIN  16 /* shorter tokens in the file are refused */
#define RM_PAGE_TOKEN_MAX  128
#define RM_PAGE_JOBS_DONE  20 /* finished jobs shown beside the active ones (most recent) */
#define RM_PAGE_PATH       "/"
#define RM_PAGE_JSON_PATH  "/cluster.json"

typedef struct rm_page rm_page_t;
struct rmserver;

struct rm_page_stats {
    uint64_t pages;        /* "/" answered 200 (page or follower notice) */
    uint64_t documents;    /* "/cluster.json" answered 200 */
    uint64_t not_leader;   /* "/cluster.json" answered 503 by a follower */
    uint64_t unauthorized; /* non-loopback requests refused with 401 */
    uint64_t not_found;    /* other paths under "/" */
};

/* Serves the page of replica `s` on `h`: registers RM_PAGE_PATH and RM_PAGE_JSON_PATH.
 * `keys_dir` (copied; NULL or "": none) is where the token is read, again whenever the file
 * changes; when the file is missing it is created (rm_page_token_create), so a cluster made
 * with curve keys alone has one. `s` and `h` are borrowed: call rm_page_destroy after
 * httpd_stop(h) and before s goes. Returns 0 and *out (caller owns), or ERR_NOMEM (*out NULL) or
 * the httpd_route error with the reason in msg (*out is set all the same: a route made before
 * the failure uses it until httpd_stop). */
int rm_page_new(rm_page_t **out, struct rmserver *s, httpd_t *h, const char *keys_dir, char *msg,
                size_t cap);
/* Frees the page; nullifies the caller's reference; NULL or *p == NULL is a no-op. */
void rm_page_destroy(rm_page_t **p);

/* The daemon's hooks (rm/rmserver.c): rm_page_start serves the page of s on the replica's HTTP
 * server when it has one (rm_metrics_httpd; nothing otherwise) with the token of
 * cfg->keys_dir, and adds its counters to /metrics (paddock_rm_page_requests_total by result).
 * Returns 0 or the rm_page_new error with the reason in msg. rm_page_free frees it once the
 * loop has closed (after rm_metrics_free); idempotent. */
int rm_page_start(struct rmserver *s, char *msg, size_t cap);
void rm_page_free(struct rmserver *s);
/* Counters since rm_page_new (all zero for p == NULL). */
void rm_page_stats(const rm_page_t *p, struct rm_page_stats *out);

/* The decision for one request, pure: `loopback` the client's kind; `authorization` the
 * Authorization header, `query_token` the ?token= argument (each NULL when absent); `token`
 * the configured token (NULL or "": none). Compares in constant time. */
enum rm_page_auth {
    RM_PAGE_AUTH_OK = 0,   /* loopback, or a matching token */
    RM_PAGE_AUTH_MISSING,  /* non-loopback without credentials */
    RM_PAGE_AUTH_BAD,      /* a credential that does not match (or a malformed header) */
    RM_PAGE_AUTH_NO_TOKEN, /* non-loopback while no token is configured */
};
enum rm_page_auth rm_page_authorize(bool loopback, const char *authorization,
                                    const char *query_token, const char *token);

/* Reads the token of `keys_dir` into out (cap >= RM_PAGE_TOKEN_MAX + 1): the file's first
 * line without surrounding white space, RM_PAGE_TOKEN_MIN..RM_PAGE_TOKEN_MAX characters of
 * [A-Za-z0-9._~+/=-]. Returns 0, ERR_NOTFOUND (no file), ERR_IO or ERR_PARSE with the reason
 * in msg. */
int rm_page_token_load(const char *keys_dir, char *out, size_t cap, char *msg, size_t mcap);

/* Creates `keys_dir/web.token` (mode 0600, 64 hex digits from getrandom) unless it exists (then
 * 0 and nothing changes, or with `force` a new token replaces it atomically). Returns 0,
 * ERR_IO or ERR_SYS with the reason in msg. */
int rm_page_token_create(const char *keys_dir, bool force, char *msg, size_t cap);

/* The page's document for replica s (what RM_PAGE_JSON_PATH serves on a leader), compact
 * JSON; `stats` may be NULL. Caller frees with free(); NULL on ERR_NOMEM. */
char *rm_page_json(struct rmserver *s, const struct rm_page_stats *stats);

#endif
