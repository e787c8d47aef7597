/* raft_curve.h - canonical/raft's libuv transport (struct raft_uv_transport) over ZeroMQ with
 * CURVE: every replica-to-replica connection is authenticated against the cluster's keys and
 * encrypted, like every other Paddock socket (docs/raft-transport.md, common/curve.h).
 *
 * raft_uv reads and writes uv_stream_t byte streams. Each logical connection is a socketpair:
 * raft gets one end (a uv_pipe_t it owns, closes and frees, as with raft_uv_tcp), the transport
 * pumps bytes between the other end and a ZeroMQ channel:
 *   - listen: one ROUTER bound to tcp://RAFT_ADDRESS, a CURVE server with ZAP (the process's
 *     zauth and its allow-list, the same keys as the API socket);
 *   - connect: one DEALER per outgoing connection, a CURVE client trusting the cluster's
 *     server key. It sends OPEN(protocol, raft id, raft address); the listener answers ACK
 *     after handing raft the accepted stream, and only then does connect_cb report success
 *     (no ACK within RAFT_CURVE_CONNECT_MS: RAFT_NOCONNECTION, as a refused TCP connect);
 *   - DATA frames carry the stream's bytes in order, CLOSE ends a connection either way, PING
 *     keeps it alive: a connection that hears nothing for RAFT_CURVE_DEAD_MS is closed, so a
 *     dead or restarted peer shows up as a closed stream and raft reconnects.
 * Without keys (curve NULL) the same framing runs over plain ZeroMQ, and the listen address
 * must be loopback unless `insecure` (curve_check_listen).
 *
 * Connections refused before or at the ZeroMQ handshake (raw bytes, a replayed capture, an
 * unknown key) never reach raft; they are counted by reason from the ROUTER's socket monitor,
 * as are malformed frames from authenticated peers. Single-threaded: the RM's loop only.
 */
#ifndef PADDOCK_RM_RAFT_CURVE_H
#define PADDOCK_RM_RAFT_CURVE_H

#include "common/curve.h"

#include <raft.h>
#include <raft/uv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define RAFT_CURVE_PROTOCOL     1           /* OPEN's protocol version */
#define RAFT_CURVE_CONNECT_MS   1000        /* OPEN to ACK, else RAFT_NOCONNECTION */
#define RAFT_CURVE_PING_MS      250         /* keepalive period on every open connection */
#define RAFT_CURVE_DEAD_MS      1500        /* silence after which a connection is closed */
#define RAFT_CURVE_HANDSHAKE_MS 2000        /* ZMTP/CURVE handshake deadline (ZMQ_HANDSHAKE_IVL) */
#define RAFT_CURVE_CHUNK        (64 * 1024) /* at most this many stream bytes per DATA */
#define RAFT_CURVE_ADDR_MAX     1024        /* longest raft address in OPEN */
#define RAFT_CURVE_CONNS_MAX    256         /* connections open at once, both ways */

/* Why a connection or frame on the Raft port was refused. */
enum raft_curve_reject {
    RAFT_CURVE_REJ_HANDSHAKE, /* no valid ZMTP/CURVE handshake: raw bytes, a wrong greeting or
                                 mechanism, closed or timed out before it completed */
    RAFT_CURVE_REJ_CRYPTO,    /* a CURVE handshake that does not decrypt (a replayed capture) */
    RAFT_CURVE_REJ_AUTH,      /* a key not on the allow-list (ZAP said no) */
    RAFT_CURVE_REJ_FRAME,     /* an authenticated peer's malformed frame or OPEN */
    RAFT_CURVE_REJ_UNKNOWN,   /* data for a connection never opened here (or closed since) */
    RAFT_CURVE_REJ_COUNT
};

struct raft_curve_stats {
    uint64_t rejected[RAFT_CURVE_REJ_COUNT];
    uint64_t handshakes;     /* ZMTP/CURVE handshakes completed on the listener */
    uint64_t accepted;       /* connections handed to raft (accept_cb) */
    uint64_t connected;      /* outgoing connections acknowledged (connect_cb 0) */
    uint64_t connect_failed; /* outgoing connections not acknowledged in time */
    uint64_t timed_out;      /* open connections closed after RAFT_CURVE_DEAD_MS of silence */
    uint64_t closed_by_peer; /* open connections the other side closed (CLOSE) */
    uint64_t open;           /* connections open now, both ways */
    uint64_t bytes_in;       /* stream bytes received, handed to raft */
    uint64_t bytes_out;      /* stream bytes raft wrote, sent */
};

/* Sets up `t` (its init/listen/connect/close) for `loop`. `curve` is borrowed until
 * raft_curve_close (NULL: no CURVE). Returns 0 or ERR_NOMEM (message in msg). */
int raft_curve_init(struct raft_uv_transport *t, uv_loop_t *loop, const curve_t *curve,
                    bool insecure, char *msg, size_t cap);

/* Frees what raft_curve_init allocated; call after raft's close callback (raft_close). */
void raft_curve_close(struct raft_uv_transport *t);

/* Counters since init (zeros before init or after close). */
void raft_curve_stats(const struct raft_uv_transport *t, struct raft_curve_stats *out);

/* "handshake", "crypto", "auth", "frame", "unknown". */
const char *raft_curve_reject_name(enum raft_curve_reject r);

/* The ZeroMQ endpoint of a raft address: "HOST:PORT" -> "tcp://HOST:PORT" (a "tcp://" address
 * is kept). 0, or ERR_INVAL for an empty or too long address. */
int raft_curve_endpoint(const char *address, char *out, size_t cap);

/* A metrics source (rm/rm_metrics.h: rm_metrics_add_source(s, raft_curve_metrics,
 * &s->transport)): paddock_rm_raft_transport_rejected_total{reason} and the other counters. */
struct metrics;
void raft_curve_metrics(struct metrics *m, void *transport);

/* The counters as a JSON object (a json_t *, typed void to keep jansson out of the header),
 * for `rm status`: {"rejected": {reason: n, ..., "total": n}, "handshakes": n, ...}. */
void *raft_curve_json(const struct raft_uv_transport *t);

#endif
