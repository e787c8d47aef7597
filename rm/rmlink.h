/* rmlink.h - a non-blocking RM API client for daemons (a JM's lease renewals and token
 * requests), on the daemon's libuv loop through common/zuv.h.
 *
 * The same rules as rm/rmclient.h, asynchronously: one DEALER per replica; a request goes to
 * the replica believed to lead; ERROR(ERR_NOTLEADER) with a leader endpoint sends it there, one
 * without (an election) or ERR_UNAVAILABLE sends it to the next replica after a short pause;
 * a replica silent for `try_ms` is skipped; the same bytes (same idempotency key) are re-sent
 * each time, so retries are safe. Replies are matched by req_id, which the link sets.
 *
 * Async contract (libuv's): if rmlink_call fails its callback never runs; otherwise it runs
 * exactly once, never from inside rmlink_call: with status 0 and the reply (an ERROR other than
 * ERR_NOTLEADER / ERR_UNAVAILABLE is a refusal by the leader), ERR_TIMEOUT when `deadline_ms`
 * passed, or ERR_CANCELLED from rmlink_destroy. The reply is borrowed for the callback.
 * Not thread-safe: use it from its loop's thread.
 */
#ifndef PADDOCK_RM_RMLINK_H
#define PADDOCK_RM_RMLINK_H

#include "common/curve.h"
#include "proto/proto.h"

#include <stddef.h>
#include <uv.h>

typedef struct rmlink rmlink_t;

typedef void rmlink_reply_fn(void *arg, int status, const proto_msg_t *reply);

/* Connects a DEALER to each of `n` API endpoints (1..RMCLIENT_MAX_REPLICAS), with CURVE as a
 * client when `curve` is not NULL (borrowed for the call). Caller owns *out. Returns 0,
 * ERR_INVAL, ERR_SYS or ERR_NOMEM (reason in msg). */
int rmlink_new(rmlink_t **out, uv_loop_t *loop, const char *const *endpoints, size_t n,
               const curve_t *curve, char *msg, size_t cap);

/* Calls every pending callback with ERR_CANCELLED, closes the sockets (their memory goes with
 * libuv's close callbacks: run the loop afterwards) and nullifies the caller's reference. */
void rmlink_destroy(rmlink_t **l);

/* Sends *req (borrowed for the call; its req_id is overwritten). Returns 0 (the callback will
 * run), or ERR_NOMEM / an encoding error (it will not). */
int rmlink_call(rmlink_t *l, proto_msg_t *req, int try_ms, int deadline_ms, rmlink_reply_fn *cb,
                void *arg);

/* Requests waiting for their callback. */
size_t rmlink_pending(const rmlink_t *l);

/* Messages from the replicas that did not decode (not one frame, or rejected by proto_decode):
 * dropped, counted here and logged the first time and every 100th after; the request they may
 * have answered is retried as for a silent replica. */
size_t rmlink_dropped(const rmlink_t *l);

#endif
