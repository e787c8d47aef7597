/* zuv.h - ZeroMQ sockets (czmq) driven by one libuv loop per daemon.
 *
 * Why this is subtle (docs/architecture.md, "Facts about the dependencies"): a ZeroMQ socket's
 * ZMQ_FD is edge-triggered and signals only that the socket's command mailbox changed, not that a
 * message is there. So zuv:
 *  - watches ZMQ_FD with uv_poll for readability only;
 *  - on every wake-up reads ZMQ_EVENTS at the top of every iteration and receives without
 *    blocking while ZMQ_POLLIN is set, until nothing is left;
 *  - receives at most `batch` messages per wake-up, then re-arms itself with a uv_idle
 *    handle so other sockets and timers get their turn;
 *  - after every send made outside its own callback, and when asked after a connect
 *    (zuv_kick), reads ZMQ_EVENTS again and, if a message is waiting, drains it on the next
 *    loop iteration (a send can consume the edge: forgetting this hangs after ~300k messages);
 *  - sends without blocking; a message the socket cannot take now is queued, never silently
 *    dropped: ROUTER sockets get ZMQ_ROUTER_MANDATORY and one queue per peer (a slow peer
 *    does not hold up the others), other socket types one queue. Queues are retried on every
 *    wake-up and on a short timer while anything is queued. A send over the queue limit
 *    fails with ERR_FULL; a ROUTER peer unreachable for longer than `unreachable_ms` and the
 *    queues left at close are reported to the drop callback with a count and the reason. All
 *    of them are logged and counted in the stats.
 * PUB sockets drop at their high-water mark by ZeroMQ's design; zuv does not change that.
 *
 * Async contract (libuv's): the receive callback never runs from inside a zuv call; it runs
 * from the loop, once per message. Memory of a closed zuv_sock_t is freed by libuv close
 * callbacks: run the loop (uv_run) after the last close before uv_loop_close.
 * Not thread-safe: use a zuv_sock_t only from its loop's thread.
 *
 * Protocol framing is the caller's business; for ROUTER sockets the first frame of every
 * message received and sent is the peer's routing id.
 */
#ifndef PADDOCK_COMMON_ZUV_H
#define PADDOCK_COMMON_ZUV_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct zuv_sock zuv_sock_t;

/* One received message. *msg is transferred to the callback: take it (set *msg = NULL) or
 * leave it, and zuv destroys it after the callback returns. The callback may send on any
 * socket and may close any socket, `s` included (no further callbacks for a closed socket). */
typedef void zuv_recv_fn(zuv_sock_t *s, zmsg_t **msg, void *arg);

/* Messages discarded: `count` messages for `peer` (the routing id on a ROUTER socket, NULL
 * and 0 otherwise), `reason` ERR_UNAVAILABLE (ROUTER peer unreachable past unreachable_ms),
 * ERR_CANCELLED (still queued at close) or ERR_SYS (ZeroMQ refused a queued message for good,
 * peer NULL). Runs from the loop or from zuv_sock_close, never from zuv_send (which reports a
 * full queue by returning ERR_FULL). The callback may send and close. `peer` is borrowed for
 * the call. */
typedef void zuv_drop_fn(zuv_sock_t *s, const void *peer, size_t peer_len, size_t count, int reason,
                         void *arg);

/* Options (a value; zuv_opts_init fills the defaults). */
struct zuv_opts {
    unsigned batch;          /* messages received per wake-up before yielding (default 256) */
    size_t queue_max;        /* messages queued per peer / per socket (default 100000) */
    uint64_t unreachable_ms; /* ROUTER: drop a peer's queue after this long unreachable (30000) */
    uint64_t retry_ms;       /* retry period while anything is queued (default 5) */
    zuv_drop_fn *on_drop;    /* optional; drops are also logged at warn level and counted */
};

void zuv_opts_init(struct zuv_opts *o);

/* Counters (all since creation). */
struct zuv_stats {
    uint64_t received; /* messages delivered to the callback */
    uint64_t sent;     /* messages handed to ZeroMQ */
    uint64_t queued;   /* messages now waiting in zuv queues */
    uint64_t dropped;  /* messages discarded (see zuv_drop_fn) */
    uint64_t wakeups;  /* drain runs (poll callbacks, idle re-arms) */
};

/* Process-wide set-up, idempotent; call before the first socket (and before zauth): makes
 * libuv, not czmq, own SIGINT/SIGTERM (zsys_handler_set(NULL)), ignores SIGPIPE, and
 * initialises czmq. Returns 0 or ERR_SYS. */
int zuv_global_init(void);

/* A new unbound, unconnected czmq socket of ZMQ `type` with Paddock's options set (they must
 * precede bind/connect): receive size cap `max_msg_size` bytes (ZMQ_MAXMSGSIZE; 0 = none),
 * linger 0. Apply CURVE (curve_apply) next, then bind or connect, then zuv_sock_new.
 * Returns NULL when czmq cannot create it. Caller owns the socket. */
zsock_t *zuv_socket(int type, int64_t max_msg_size);

/* Watches `*sock` from `loop` and calls `on_recv` for every message. Sets the options zuv
 * needs (non-blocking send and receive; ZMQ_ROUTER_MANDATORY on ROUTER sockets) and schedules
 * a first drain. `*sock` is transferred on success (the caller's pointer is nulled; zuv
 * destroys the socket at close); on failure the caller keeps it. `opts` is copied (NULL for
 * the defaults); `arg` is borrowed until close. Returns 0, ERR_NOMEM, ERR_INVAL or ERR_SYS. */
int zuv_sock_new(zuv_sock_t **out, uv_loop_t *loop, zsock_t **sock, const struct zuv_opts *opts,
                 zuv_recv_fn *on_recv, void *arg);

/* Stops watching, reports what is still queued (ERR_CANCELLED), destroys the ZeroMQ socket
 * now and frees the rest from libuv's close callbacks. Nullifies the caller's reference;
 * NULL or *s == NULL is a no-op. Safe from inside the socket's own callback. */
void zuv_sock_close(zuv_sock_t **s);

/* Sends a message. *msg is always transferred (nulled; destroyed on error). On a ROUTER
 * socket the first frame is the destination peer's routing id. Returns 0 when the message
 * was handed to ZeroMQ or queued behind earlier ones; ERR_FULL when the queue is at
 * queue_max (the message is dropped and counted; no drop callback); ERR_INVAL for an empty
 * message or a ROUTER message with fewer than 2 frames; ERR_STATE after close. */
int zuv_send(zuv_sock_t *s, zmsg_t **msg);

/* Sends a copy of `len` bytes as one frame (preceded by the routing id `peer` on a ROUTER
 * socket; `peer` is ignored and may be NULL otherwise). Same returns as zuv_send, plus
 * ERR_NOMEM. The buffers are copied. */
int zuv_send_bytes(zuv_sock_t *s, const void *peer, size_t peer_len, const void *data, size_t len);

/* Re-reads ZMQ_EVENTS and schedules a drain if a message waits: call after operating on the
 * raw socket outside zuv (zsock_connect, zsock_set_subscribe, ...). */
void zuv_kick(zuv_sock_t *s);

/* The underlying socket, borrowed (for connect, subscribe, options). Do not send or receive
 * on it directly, and do not destroy it. */
zsock_t *zuv_sock_zsock(zuv_sock_t *s);

void zuv_sock_stats(const zuv_sock_t *s, struct zuv_stats *out);

#endif
