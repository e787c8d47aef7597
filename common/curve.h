/* curve.h - CURVE authentication and encryption for every TCP socket (docs/architecture.md,
 * "Sockets, keys and the event loop").
 *
 * Key files, as written by `paddock keygen --dir DIR [--name NAME]` (czmq zcert text format):
 *     DIR/NAME.pub       public certificate (public key, Z85). Shareable.
 *     DIR/NAME.secret    secret certificate (public and secret key), mode 0600.
 *     DIR/allow/         allow-list: the public certificates (*.pub) of the clients a server
 *                        accepts, one file per client. keygen also copies NAME.pub here, so
 *                        a cluster whose daemons and users share one identity works as is.
 *                        Remove a file to revoke a key: zauth re-reads the directory when it
 *                        changes (about 1 s); existing connections are not cut.
 * The default NAME is "paddock". DIR and DIR/allow are created with mode 0700.
 *
 * Servers (binding sockets) present their own certificate and accept only clients whose key
 * is in the allow-list: ZAP through one zauth actor per process (curve_auth_start), with the
 * ZAP domain CURVE_ZAP_DOMAIN enforced (ZMQ_ZAP_ENFORCE_DOMAIN), so a socket never falls back
 * to "encrypt but accept anyone". Clients (connecting sockets) present their own certificate
 * and the server's public key, and refuse a server that does not hold the matching secret.
 *
 * A daemon without keys may listen only on loopback (or ipc/inproc) unless it was told
 * --insecure: curve_check_listen decides.
 */
#ifndef PADDOCK_COMMON_CURVE_H
#define PADDOCK_COMMON_CURVE_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

#define CURVE_ZAP_DOMAIN   "paddock"
#define CURVE_DEFAULT_NAME "paddock"
#define CURVE_KEY_Z85_LEN  40 /* characters of a Z85-encoded 32-byte key */
#define CURVE_ALLOW_SUBDIR "allow"

/* A process's CURVE identity: its own certificate and the public key of the servers it
 * connects to. Opaque; immutable after curve_load. */
typedef struct curve curve_t;

enum curve_role {
    CURVE_SERVER, /* the socket binds and authenticates clients */
    CURVE_CLIENT, /* the socket connects and authenticates the server */
};

/* Generates a certificate and writes DIR/NAME.pub, DIR/NAME.secret and DIR/allow/NAME.pub,
 * creating the directories. Refuses to replace an existing DIR/NAME.secret unless `force`
 * (ERR_EXISTS). NAME is letters, digits, '-', '_' and '.', not starting with '.'
 * (ERR_INVAL). Returns 0, ERR_INVAL, ERR_EXISTS or ERR_IO (message in `msg`). */
int curve_keygen(const char *dir, const char *name, bool force, char *msg, size_t cap);

/* Loads this process's certificate from DIR/NAME.secret and the trusted server public key from
 * DIR/SERVER_NAME.pub (server_name NULL: the same NAME, a shared cluster identity).
 * Returns 0 with *out caller-owned, ERR_IO (file missing or unreadable), ERR_PARSE (not a
 * certificate, or no secret key in NAME.secret) or ERR_NOMEM. */
int curve_load(curve_t **out, const char *dir, const char *name, const char *server_name, char *msg,
               size_t cap);

/* Destroys the identity; nullifies the caller's reference. Sockets it was applied to keep
 * working (ZeroMQ copied the keys). */
void curve_destroy(curve_t **c);

/* This process's public key / the trusted server key, Z85 (40 characters), owned by `c`. */
const char *curve_public_key(const curve_t *c);
const char *curve_server_key(const curve_t *c);

/* Starts the process's one zauth actor with the allow-list directory `allow_dir` (copied) for
 * CURVE, and waits for its acknowledgements, so sockets bound afterwards authenticate.
 * Call zuv_global_init first. Returns 0, ERR_EXISTS (already running), ERR_IO (allow_dir is
 * not a readable directory) or ERR_SYS (zauth failed). Not thread-safe. */
int curve_auth_start(const char *allow_dir, char *msg, size_t cap);

/* Stops zauth and joins its thread. Call after closing every server socket and before exit
 * (LeakSanitizer and czmq's exit handler expect it). No-op when not running. */
void curve_auth_stop(void);

bool curve_auth_running(void);

/* Identity from the key (issue 27). The CURVE public key (Z85) that authenticated the
 * connection a received frame came on (ZeroMQ's "User-Id" property, set by zauth), or NULL
 * when the connection is not CURVE (insecure or loopback without keys). Owned by the frame. */
const char *curve_frame_key(zframe_t *frame);

/* The user an allow-listed key belongs to: the base name of its certificate in the allow-list
 * directory given to curve_auth_start (allow/alice.pub is user "alice"), written to name (cap
 * bytes). The directory is read again when it changed, so an added or removed user counts
 * within a second, as zauth does. Returns 0, ERR_NOTFOUND (no certificate of that key),
 * ERR_STATE (zauth is not running) or ERR_NOMEM. Not thread-safe. */
int curve_auth_user(const char *key, char *name, size_t cap);

/* THE helper, applied to every TCP socket before bind (server) or connect (client).
 * c == NULL means insecure mode and does nothing (returns 0): the caller has passed
 * curve_check_listen / chosen --insecure. Server: requires zauth running (ERR_STATE
 * otherwise: without ZAP every client key would be accepted); sets the ZAP domain, enforces
 * it, installs the certificate and makes the socket a CURVE server. Client: installs the
 * certificate and the server key (`server_key` in Z85, or NULL for curve_server_key(c);
 * ERR_INVAL if not 40 Z85 characters). Returns 0, ERR_INVAL, ERR_STATE or ERR_SYS. */
int curve_apply(zsock_t *sock, const curve_t *c, enum curve_role role, const char *server_key,
                char *msg, size_t cap);

/* True for tcp:// endpoints on a loopback address (127.0.0.0/8, [::1], localhost) and for
 * ipc:// and inproc://; false for anything else, wildcard hosts ("*", "0.0.0.0")
 * and interface names included. */
bool curve_endpoint_is_local(const char *endpoint);

/* Decides whether a daemon may bind `endpoint`: yes with keys (c != NULL), yes on a local
 * endpoint, yes when `insecure`; otherwise ERR_AUTH with a message naming the endpoint and
 * --insecure. */
int curve_check_listen(const char *endpoint, const curve_t *c, bool insecure, char *msg,
                       size_t cap);

#endif
