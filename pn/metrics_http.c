/* metrics_http.c - the PN's own /metrics responder (metrics_http.h). */
#include "pn/metrics_http.h"

#include <http_parser.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/err.h"
#include "common/httpd.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/metrics.h"

typedef struct mh_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wr;
    struct metrics_http *srv;
    struct mh_conn *prev, *next;
    int open_handles; /* freed when both handles have closed */
    int closing;
    size_t len;
    char head[METRICS_HTTP_HEAD_MAX];
    char reply[256];
    char *body;
} mh_conn_t;

struct metrics_http {
    uv_tcp_t listener;
    uv_loop_t *loop;
    metrics_http_fn *fn;
    void *arg;
    char path[128];
    char url[300];
    mh_conn_t *conns;
    size_t nconns;
    uint64_t served, bad;
    int stopping;
};

/* What the request's callbacks gather: where the target lies in the buffer (one span, as the
 * whole head is parsed from one buffer), and whether the head ended. */
struct mh__req {
    const char *url;
    size_t url_len;
    int head_done;
};

static int mh__on_url(http_parser *p, const char *at, size_t n)
{
    struct mh__req *r = p->data;
    if (r->url == NULL)
        r->url = at;
    else if (at != r->url + r->url_len)
        return 1; /* not one span: stops the parser (HPE_CB_url) */
    r->url_len += n;
    return 0;
}

static int mh__on_headers_complete(http_parser *p)
{
    struct mh__req *r = p->data;
    r->head_done = 1;
    http_parser_pause(p, 1); /* the head is all a scrape sends that we read */
    return 0;
}

/* The request head is parsed by Debian's http-parser (libhttp-parser-dev), not by hand. */
int metrics_http_parse(const char *buf, size_t len, char *method, size_t mcap, char *path,
                       size_t pcap)
{
    static const http_parser_settings settings = {
        .on_url = mh__on_url,
        .on_headers_complete = mh__on_headers_complete,
    };
    struct mh__req r = {0};
    http_parser p;
    http_parser_init(&p, HTTP_REQUEST);
    p.data = &r;
    http_parser_execute(&p, &settings, buf, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&p);
    if (!r.head_done)
        return e == HPE_OK ? 0 : -1;
    if ((e != HPE_OK && e != HPE_PAUSED) || p.http_major != 1 || r.url == NULL)
        return -1;
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(r.url, r.url_len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH)))
        return -1;
    const char *name = http_method_str((enum http_method)p.method);
    size_t ml = strlen(name), pl = u.field_data[UF_PATH].len;
    const char *at = r.url + u.field_data[UF_PATH].off;
    if (ml + 1 > mcap || pl + 1 > pcap || pl == 0 || at[0] != '/')
        return -1;
    memcpy(method, name, ml + 1);
    memcpy(path, at, pl);
    path[pl] = '\0';
    return 1;
}

static void mh__free_cb(uv_handle_t *h)
{
    mh_conn_t *c = h->data;
    if (--c->open_handles == 0) {
        mem_free(c->body);
        mem_free(c);
    }
}

static void mh__close(mh_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    metrics_http_t *s = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    uv_close((uv_handle_t *)&c->timer, mh__free_cb);
    uv_close((uv_handle_t *)&c->tcp, mh__free_cb);
}

static void mh__on_timeout(uv_timer_t *t)
{
    mh__close(t->data);
}

static void mh__on_written(uv_write_t *w, int status)
{
    (void)status;
    mh__close(w->data);
}

static void mh__respond(mh_conn_t *c, int code, const char *type, int head_only)
{
    static const char *const texts[] = {"OK", "Bad Request", "Not Found", "Method Not Allowed",
                                        "Internal Server Error"};
    const char *text = code == 200   ? texts[0]
                       : code == 400 ? texts[1]
                       : code == 404 ? texts[2]
                       : code == 405 ? texts[3]
                                     : texts[4];
    if (code != 200) { /* a short text body */
        mem_free(c->body);
        c->body = mem_strdup(text);
        type = "text/plain";
    }
    size_t blen = c->body ? strlen(c->body) : 0;
    int n = snprintf(c->reply, sizeof c->reply,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     code, text, type, blen);
    uv_buf_t bufs[2] = {uv_buf_init(c->reply, (unsigned)n),
                        uv_buf_init(c->body ? c->body : c->reply, (unsigned)blen)};
    c->srv->served++;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs, head_only || !blen ? 1 : 2,
                 mh__on_written) != 0)
        mh__close(c);
}

static void mh__alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    mh_conn_t *c = h->data;
    size_t room = sizeof c->head - c->len;
    *buf = uv_buf_init(c->head + c->len, (unsigned)room);
}

static void mh__on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    mh_conn_t *c = st->data;
    if (nread < 0) {
        mh__close(c);
        return;
    }
    c->len += (size_t)nread;
    char method[16], path[256];
    int rc = metrics_http_parse(c->head, c->len, method, sizeof method, path, sizeof path);
    if (rc == 0 && c->len < sizeof c->head)
        return; /* more to come */
    if (rc <= 0) {
        c->srv->bad++;
        mh__respond(c, 400, NULL, 0);
        return;
    }
    int head = strcmp(method, "HEAD") == 0;
    if (!head && strcmp(method, "GET") != 0) {
        mh__respond(c, 405, NULL, 0);
        return;
    }
    if (strcmp(path, c->srv->path) != 0) {
        mh__respond(c, 404, NULL, head);
        return;
    }
    size_t len = 0;
    char *body = NULL;
    c->srv->fn(c->srv->arg, &body, &len);
    if (!body) {
        mh__respond(c, 500, NULL, head);
        return;
    }
    c->body = body;
    mh__respond(c, 200, METRICS_CONTENT_TYPE, head);
}

static void mh__on_conn(uv_stream_t *l, int status)
{
    metrics_http_t *s = l->data;
    if (status < 0)
        return;
    mh_conn_t *c = mem_calloc(1, sizeof *c);
    if (!c)
        return; /* left in the backlog: taken at the next connection */
    c->srv = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open_handles = 2;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0 || s->nconns > METRICS_HTTP_CONN_MAX ||
        uv_read_start((uv_stream_t *)&c->tcp, mh__alloc, mh__on_read) != 0) {
        mh__close(c);
        return;
    }
    uv_timer_start(&c->timer, mh__on_timeout, METRICS_HTTP_IDLE_MS, 0);
}

static void mh__srv_free(uv_handle_t *h)
{
    mem_free(h->data);
}

int metrics_http_start(metrics_http_t **out, uv_loop_t *loop, const char *listen, const char *path,
                       metrics_http_fn *fn, void *arg, char *msg, size_t cap)
{
    char host[256];
    uint16_t port = 0;
    int rc = httpd_parse_listen(listen, host, sizeof host, &port, msg, cap);
    if (rc)
        return rc;
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", (unsigned)port);
    int g = getaddrinfo(host, portstr, &hints, &res);
    if (g != 0 || !res)
        return err_fmt(msg, cap, ERR_CONFIG, "cannot resolve '%s': %s", host, gai_strerror(g));
    metrics_http_t *s = mem_calloc(1, sizeof *s);
    if (!s) {
        freeaddrinfo(res);
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    s->loop = loop;
    s->fn = fn;
    s->arg = arg;
    snprintf(s->path, sizeof s->path, "%s", path);
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    int e =
        uv_tcp_bind(&s->listener, res->ai_addr, res->ai_family == AF_INET6 ? UV_TCP_IPV6ONLY : 0);
    freeaddrinfo(res);
    if (e == 0)
        e = uv_listen((uv_stream_t *)&s->listener, 64, mh__on_conn);
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    if (e == 0)
        e = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &sl);
    if (e != 0) {
        uv_close((uv_handle_t *)&s->listener, mh__srv_free);
        return err_fmt(msg, cap, ERR_SYS, "cannot listen on %s:%u: %s", host, (unsigned)port,
                       uv_strerror(e));
    }
    char ip[64] = "";
    if (ss.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
        snprintf(s->url, sizeof s->url, "http://[%s]:%u", ip,
                 (unsigned)ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
    } else {
        uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
        snprintf(s->url, sizeof s->url, "http://%s:%u", ip,
                 (unsigned)ntohs(((struct sockaddr_in *)&ss)->sin_port));
    }
    *out = s;
    return 0;
}

const char *metrics_http_url(const metrics_http_t *h)
{
    return h ? h->url : "";
}

uint64_t metrics_http_served(const metrics_http_t *h)
{
    return h ? h->served : 0;
}

uint64_t metrics_http_bad(const metrics_http_t *h)
{
    return h ? h->bad : 0;
}

void metrics_http_stop(metrics_http_t **hp)
{
    if (!hp || !*hp)
        return;
    metrics_http_t *s = *hp;
    *hp = NULL;
    while (s->conns)
        mh__close(s->conns);
    uv_close((uv_handle_t *)&s->listener, mh__srv_free);
}
