/* metrics_http.h - the PN's own /metrics responder, on its libuv loop (issue 24).
 *
 * Why not common/httpd: that server is libmicrohttpd, which with its TLS libraries (gnutls,
 * nettle, p11-kit, ...) maps about 2.5 MiB into every process that loads it; an idle PN with
 * metrics on held 10.9-11.2 MiB, over its 10 MiB budget. A Prometheus scrape needs none of
 * it: one GET per connection. This responder reads one request head (at most
 * METRICS_HTTP_HEAD_MAX bytes, within METRICS_HTTP_IDLE_MS; parsed by Debian's http-parser,
 * libhttp-parser-dev, about 40 KiB and no other library), answers GET and HEAD of the handler's
 * body with "Connection: close", 404 for any other path, 405 for any other method, 400 for a
 * head it cannot parse or that is too long, and closes. At most METRICS_HTTP_CONN_MAX
 * connections at once (more are closed at once). Every callback runs on the loop's thread.
 * Not thread-safe.
 */
#ifndef PADDOCK_PN_METRICS_HTTP_H
#define PADDOCK_PN_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define METRICS_HTTP_HEAD_MAX 8192
#define METRICS_HTTP_IDLE_MS  15000
#define METRICS_HTTP_CONN_MAX 64

typedef struct metrics_http metrics_http_t;

/* Builds the body of /metrics: a malloc'd (mem_*) text into *body and its length, or NULL
 * (the request is answered 500). */
typedef void metrics_http_fn(void *arg, char **body, size_t *len);

/* Listens on `listen` ("host:port", common/httpd's httpd_parse_listen; port 0 picks one) and
 * serves `path` with fn. 0, or ERR_INVAL/ERR_CONFIG/ERR_SYS/ERR_NOMEM with msg. */
int metrics_http_start(metrics_http_t **out, uv_loop_t *loop, const char *listen, const char *path,
                       metrics_http_fn *fn, void *arg, char *msg, size_t cap);
/* "http://host:port" as bound. */
const char *metrics_http_url(const metrics_http_t *h);
/* Requests answered (any status), and those refused for a bad or oversized head. */
uint64_t metrics_http_served(const metrics_http_t *h);
uint64_t metrics_http_bad(const metrics_http_t *h);
/* Closes the listener and every connection; the memory goes once the loop has run. */
void metrics_http_stop(metrics_http_t **h);

/* Parses a request head (pure, for tests and the fuzz target): 1 when `buf` holds a whole
 * head ("\r\n\r\n" seen) whose request line is METHOD SP TARGET SP HTTP/1.x, with method and
 * path (the target less any query) copied; 0 when more bytes are needed; -1 when malformed. */
int metrics_http_parse(const char *buf, size_t len, char *method, size_t mcap, char *path,
                       size_t pcap);

#endif
