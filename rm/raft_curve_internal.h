/* raft_curve_internal.h - what the files of raft's CURVE transport share (not part of its
 * interface, rm/raft_curve.h): raft_curve.c (the raft_uv_transport interface, counters),
 * raft_curve_conn.c (a connection: its socketpair with raft, keepalive, the outgoing side) and
 * raft_curve_listen.c (the ROUTER that accepts, and its monitor). */
#ifndef PADDOCK_RM_RAFT_CURVE_INTERNAL_H
#define PADDOCK_RM_RAFT_CURVE_INTERNAL_H

#include "rm/raft_curve.h"

#include "common/map.h"
#include "common/zuv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Frame types: the first byte of every frame's body. */
enum {
    RC_OPEN = 1,  /* client -> server: protocol (1 byte), raft id (8, big endian), address */
    RC_ACK = 2,   /* server -> client: the stream was handed to raft */
    RC_DATA = 3,  /* either way: stream bytes */
    RC_CLOSE = 4, /* either way: the connection is over */
    RC_PING = 5,  /* either way: keepalive */
};

enum rc_state { RC_CONNECTING, RC_UP, RC_DOWN };

#define RC_FDS_MAX 256 /* listener connections followed by the monitor */

enum { RC_FD_FREE, RC_FD_HANDSHAKE, RC_FD_UP };

struct rc_fd {
    int fd;
    uint8_t state;
    uint64_t seq; /* accept order */
};

struct rc;

/* One logical connection. */
struct rc_conn {
    struct rc *t;
    struct rc_conn *prev, *next;
    bool outbound;
    enum rc_state state;
    int status;                  /* what a connect callback not yet fired gets */
    struct raft_uv_connect *req; /* outbound, until connect_cb fired */
    raft_uv_connect_cb cb;
    zuv_sock_t *dealer; /* outbound */
    uint8_t rid[256];   /* inbound: the ROUTER's routing id of the peer */
    size_t rid_len;
    uv_timer_t timer; /* outbound: the connect deadline */
    bool timer_init;
    uv_pipe_t pipe; /* our end of the socketpair */
    bool pipe_init;
    uv_shutdown_t shut;
    int handles; /* libuv handles not yet closed */
    uint64_t last_rx;
};

struct rc {
    struct raft_uv_transport *tr;
    uv_loop_t *loop;
    const curve_t *curve;
    bool insecure;
    raft_id id;
    char address[RAFT_CURVE_ADDR_MAX + 1];
    raft_uv_accept_cb accept_cb;
    raft_uv_transport_close_cb close_cb;
    bool closing;
    zuv_sock_t *router, *mon;
    struct map inbound;           /* routing id -> struct rc_conn */
    struct rc_fd fds[RC_FDS_MAX]; /* the listener's connections (monitor) */
    uint64_t fd_seq;
    unsigned failed_pending; /* handshake failures whose DISCONNECTED has not come yet */
    struct rc_conn *conns;
    size_t nconns; /* allocated, freed once their handles closed */
    uv_timer_t tick;
    bool tick_init, tick_on, tick_closed;
    struct raft_curve_stats st;
    char mon_ep[64];
    char buf[1 + RAFT_CURVE_CHUNK]; /* a DATA frame being read from a pipe */
};

/* Counts a refusal (raft_curve_stats.rejected) and logs it at most once per power of two. */
void raft_curve__reject(struct rc *t, enum raft_curve_reject why, const char *what);

/* raft_curve_conn.c */
/* Calls the transport's close callback once every connection and the tick are gone. */
void raft_curve__maybe_closed(struct rc *t);
/* Sends one frame body to the connection's peer. 0 or an ERR_* (ERR_STATE: no channel). */
int raft_curve__send(struct rc_conn *c, const void *body, size_t len);
/* Ends a connection: tells the peer (when `tell`), closes its channel and our end of the
 * socketpair (raft then reads end-of-file and fails its writes), frees it once libuv has
 * closed its handles. A connect callback not fired yet gets `status`. */
void raft_curve__conn_drop(struct rc_conn *c, int status, bool tell);
/* A new connection of t, inbound or outbound; NULL when RAFT_CURVE_CONNS_MAX are open or on
 * ERR_NOMEM. */
struct rc_conn *raft_curve__conn_new(struct rc *t, bool outbound);
/* Hands bytes from the peer to raft. */
void raft_curve__deliver(struct rc_conn *c, const uint8_t *p, size_t n);
/* Makes the socketpair: raft's end in *out (raft_malloc'd: raft closes and frees it), ours
 * read into DATA frames. 0 or a RAFT_* code. */
int raft_curve__pair(struct rc_conn *c, uv_stream_t **out);
/* Starts the keepalive timer (once). */
void raft_curve__tick_start(struct rc *t);
/* The DEALER of an outgoing connection: a frame from the peer. */
void raft_curve__on_dealer(zuv_sock_t *zs, zmsg_t **msg, void *arg);
/* An outgoing connection not acknowledged in time. */
void raft_curve__connect_timeout(uv_timer_t *h);

/* raft_curve_listen.c */
/* The listening ROUTER: a frame from a peer. */
void raft_curve__on_router(zuv_sock_t *zs, zmsg_t **msg, void *arg);
/* The ROUTER's monitor: handshake successes and failures of the listener's connections. */
void raft_curve__on_monitor(zuv_sock_t *zs, zmsg_t **msg, void *arg);

#endif
