/* httpd.h - a small HTTP server (libmicrohttpd) driven by a daemon's libuv loop.
 *
 * What it is for: read-only endpoints of a daemon (Prometheus /metrics, the RM's cluster
 * page). All HTTP parsing is libmicrohttpd's (Debian's libmicrohttpd-dev); this file only
 * wires it to libuv and routes requests by path prefix.
 *
 * How it runs: libmicrohttpd is started without threads of its own (MHD_USE_EPOLL, external
 * polling). Its epoll descriptor (MHD_DAEMON_INFO_EPOLL_FD) is watched with uv_poll for
 * readability, and a uv_timer is re-armed after every MHD_run from MHD_get_timeout (idle
 * connections time out). So every handler runs on the loop's thread, between the daemon's
 * other callbacks: it may read and change daemon state without locks, and must not block.
 *
 * Requests: any method reaches the handler (HEAD is answered from the GET handler: MHD sends
 * the headers only). Request bodies are discarded unread (endpoints are read-only). The handler is
 * called once per request with the request (borrowed for the call) and fills a response.
 * Limits: at most HTTPD_CONN_MAX connections at once, HTTPD_IDLE_S seconds idle per connection,
 * a request header block of at most 32 KiB (larger requests are refused by libmicrohttpd).
 *
 * Loading: libmicrohttpd is not linked into the programs but loaded (dlopen, libmicrohttpd.so.12)
 * by the first httpd_start, so a daemon with metrics off never maps it nor the TLS libraries it
 * pulls in. Without it installed, httpd_start fails with ERR_UNAVAILABLE and says so.
 *
 * Grammar of one exchange: C:request S:response (keep-alive connections repeat it).
 * Not thread-safe: use an httpd_t only from its loop's thread.
 */
#ifndef PADDOCK_COMMON_HTTPD_H
#define PADDOCK_COMMON_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define HTTPD_CONN_MAX    64
#define HTTPD_IDLE_S      15
#define HTTPD_ROUTES_MAX  16
#define HTTPD_HEADERS_MAX 4 /* extra response headers per response */
#define HTTPD_BODY_MAX    (64u << 20)
#define HTTPD_LISTEN_MAX  255 /* "host:port" text */

typedef struct httpd httpd_t;

/* One request, borrowed for the duration of the handler call (all fields read-only). */
struct httpd_req {
    const char *method;   /* "GET", "HEAD", "POST", ... */
    const char *path;     /* URL path, without the query string ("/metrics") */
    const char *prefix;   /* the route prefix that matched */
    char client[64];      /* client address, numeric ("127.0.0.1", "::1"); "" when unknown */
    bool client_loopback; /* client is 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104 */
    void *conn_;          /* private */
};

/* Value of request header `name` (case-insensitive, e.g. "Authorization"), or NULL. Borrowed
 * for the handler call. */
const char *httpd_req_header(const struct httpd_req *r, const char *name);

/* Value of query argument `name` (URL-decoded; "" for "?name"), or NULL. Borrowed for the
 * handler call. */
const char *httpd_req_query(const struct httpd_req *r, const char *name);

/* A response being filled by a handler. Fields are private: use the functions below. Before
 * the handler runs it is status 200, content type "text/plain; charset=utf-8", empty body. */
struct httpd_resp {
    int status;
    const char *content_type; /* borrowed: must outlive the handler (a literal, typically) */
    char *body;               /* owned by the response */
    size_t len;
    size_t nheaders;
    char *hname[HTTPD_HEADERS_MAX], *hvalue[HTTPD_HEADERS_MAX]; /* owned */
    int err;                                                    /* first failure, or 0 */
};

/* Sets the status code (e.g. 200, 401, 404). */
void httpd_resp_status(struct httpd_resp *r, int status);
/* Sets the content type: borrowed, must outlive the handler call (use a string literal). */
void httpd_resp_type(struct httpd_resp *r, const char *content_type);
/* Replaces the body with a copy of `len` bytes. Returns 0 or ERR_NOMEM/ERR_TOOBIG (the
 * response then becomes a 500). */
int httpd_resp_body(struct httpd_resp *r, const void *data, size_t len);
/* Replaces the body with *body (`len` bytes, allocated with mem_alloc): transferred, the
 * caller's pointer is nulled. Returns 0 (never fails). */
int httpd_resp_take(struct httpd_resp *r, char **body, size_t len);
/* Adds a response header (both copied), e.g. "WWW-Authenticate", "Bearer realm=\"paddock\"".
 * At most HTTPD_HEADERS_MAX per response. Returns 0, ERR_FULL, ERR_INVAL (CR/LF in either
 * string) or ERR_NOMEM. */
int httpd_resp_header(struct httpd_resp *r, const char *name, const char *value);

/* A request handler. `req` is borrowed for the call; fill `resp`. `arg` as registered. */
typedef void httpd_handler_fn(const struct httpd_req *req, struct httpd_resp *resp, void *arg);

/* Parses "host:port" ("127.0.0.1:9100", "[::1]:0", "localhost:9100"; port 0 = ephemeral).
 * Copies the host (at most host_cap-1 bytes, brackets removed) and the port. Returns 0 or
 * ERR_INVAL with the reason in msg. */
int httpd_parse_listen(const char *listen, char *host, size_t host_cap, uint16_t *port, char *msg,
                       size_t cap);

/* Starts a server on `listen` ("host:port", see httpd_parse_listen) driven by `loop`.
 * Returns 0 and *out, or ERR_INVAL/ERR_CONFIG (bad address), ERR_SYS (bind failed: in use,
 * no such address), ERR_UNAVAILABLE (libmicrohttpd cannot be loaded) or ERR_NOMEM, with the
 * reason in `msg`. Caller owns *out: httpd_stop. Safe to call from several threads at once
 * (each with its own loop). */
int httpd_start(httpd_t **out, uv_loop_t *loop, const char *listen, char *msg, size_t cap);

/* Routes requests whose path starts with `prefix` ("/metrics", "/", "/cluster/") to `fn`;
 * the longest matching prefix wins; a path no route matches gets 404. A prefix registered
 * again replaces the earlier handler. `prefix` is copied; `arg` is borrowed until httpd_stop.
 * Returns 0, ERR_FULL (HTTPD_ROUTES_MAX), ERR_INVAL or ERR_NOMEM. */
int httpd_route(httpd_t *h, const char *prefix, httpd_handler_fn *fn, void *arg);

/* The port bound (the ephemeral one chosen when listen asked for port 0). */
uint16_t httpd_port(const httpd_t *h);

/* "http://host:port" of the server, for advertising (borrowed, valid until httpd_stop). A
 * wildcard host ("0.0.0.0", "::") is reported as given; callers advertising to other
 * machines should configure a concrete address. */
const char *httpd_url(const httpd_t *h);

/* Requests served (handler ran) since start; for tests and metrics. */
uint64_t httpd_served(const httpd_t *h);

/* Stops listening, closes every connection and frees the server; memory of the libuv handles
 * is freed from their close callbacks (run the loop after the last stop before
 * uv_loop_close). Nullifies the caller's reference; NULL or *h == NULL is a no-op. Must not
 * be called from inside a handler. */
void httpd_stop(httpd_t **h);

#endif
