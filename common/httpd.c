/* httpd.c - libmicrohttpd in external-polling epoll mode, driven by libuv (see httpd.h).
 *
 * libmicrohttpd is not linked: it is loaded with dlopen the first time a server starts. Its
 * library constructor initialises gnutls, which maps gnutls, p11-kit, nettle, libtasn1 and more
 * into the process: about 2.7 MiB of resident memory in every daemon even with metrics off,
 * enough to put the PN's idle RSS over its 10 MiB target (docs/architecture.md, "Targets"). So a
 * daemon with metrics off never loads it; one with metrics on pays for it (docs/metrics.md,
 * "Cost"). The header gives the types and constants; the functions are called through `mhd`, a
 * table of pointers typed from the header's own declarations, resolved once. */
#include "common/httpd.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"

struct httpd_route_ent {
    char *prefix;
    size_t plen;
    httpd_handler_fn *fn;
    void *arg;
};

struct httpd {
    uv_loop_t *loop;
    struct MHD_Daemon *mhd;
    uv_poll_t poll;
    uv_timer_t timer;
    int open_handles; /* libuv handles not yet closed; freed when it reaches 0 */
    bool stopping;
    uint16_t port;
    char url[HTTPD_LISTEN_MAX + 16];
    struct httpd_route_ent routes[HTTPD_ROUTES_MAX];
    size_t nroutes;
    uint64_t served;
};

/* Marks a request whose headers were seen (libmicrohttpd's per-request pointer). */
static int httpd__seen;

/* The shared object loaded (Debian: package libmicrohttpd12; check the SONAME with
 * `objdump -p libmicrohttpd.so | grep SONAME`). A build may name another with -D. */
#ifndef HTTPD_MHD_SONAME
#define HTTPD_MHD_SONAME "libmicrohttpd.so.12"
#endif

/* Every libmicrohttpd function this file calls: X(name) for MHD_name. */
#define HTTPD__MHD_FUNCS(X)                                                                        \
    X(start_daemon)                                                                                \
    X(stop_daemon)                                                                                 \
    X(run)                                                                                         \
    X(get_timeout)                                                                                 \
    X(get_daemon_info)                                                                             \
    X(get_connection_info)                                                                         \
    X(lookup_connection_value)                                                                     \
    X(lookup_connection_value_n)                                                                   \
    X(create_response_from_buffer)                                                                 \
    X(add_response_header)                                                                         \
    X(queue_response)                                                                              \
    X(destroy_response)

/* mhd.run is MHD_run, typed as microhttpd.h declares it. Filled once by httpd__mhd_load (under
 * httpd__mhd_once) and read-only afterwards; valid only when httpd__mhd_err is "". The library
 * stays loaded until the process exits. */
static struct {
#define HTTPD__MHD_FIELD(name) __typeof__(&MHD_##name) name;
    HTTPD__MHD_FUNCS(HTTPD__MHD_FIELD)
#undef HTTPD__MHD_FIELD
} mhd;
static pthread_once_t httpd__mhd_once = PTHREAD_ONCE_INIT;
static char httpd__mhd_err[512]; /* why it could not be loaded; "" once loaded */

static void httpd__mhd_load(void)
{
    void *lib = dlopen(HTTPD_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(httpd__mhd_err, sizeof httpd__mhd_err,
                 "HTTP server unavailable: cannot load %s (Debian package libmicrohttpd12): %s",
                 HTTPD_MHD_SONAME, e ? e : "unknown error");
        return;
    }
#define HTTPD__MHD_RESOLVE(name)                                                                   \
    mhd.name = (__typeof__(mhd.name))dlsym(lib, "MHD_" #name);                                     \
    if (mhd.name == NULL) {                                                                        \
        snprintf(httpd__mhd_err, sizeof httpd__mhd_err,                                            \
                 "HTTP server unavailable: %s has no MHD_" #name, HTTPD_MHD_SONAME);               \
        memset(&mhd, 0, sizeof mhd);                                                               \
        dlclose(lib);                                                                              \
        return;                                                                                    \
    }
    HTTPD__MHD_FUNCS(HTTPD__MHD_RESOLVE)
#undef HTTPD__MHD_RESOLVE
    httpd__mhd_err[0] = '\0';
}

/* Loads libmicrohttpd on the first call (any thread). Returns 0, or ERR_UNAVAILABLE with the
 * reason in msg (every later call gives the same answer). */
static int httpd__mhd_ready(char *msg, size_t cap)
{
    pthread_once(&httpd__mhd_once, httpd__mhd_load);
    if (httpd__mhd_err[0] != '\0')
        return err_fmt(msg, cap, ERR_UNAVAILABLE, "%s", httpd__mhd_err);
    return 0;
}

int httpd_parse_listen(const char *listen, char *host, size_t host_cap, uint16_t *port, char *msg,
                       size_t cap)
{
    if (listen == NULL || listen[0] == '\0')
        return err_fmt(msg, cap, ERR_INVAL, "empty listen address (want host:port)");
    if (strlen(listen) > HTTPD_LISTEN_MAX)
        return err_fmt(msg, cap, ERR_INVAL, "listen address longer than %d bytes",
                       HTTPD_LISTEN_MAX);
    const char *h = listen, *hend, *colon;
    if (listen[0] == '[') {
        hend = strchr(listen, ']');
        if (hend == NULL || hend[1] != ':')
            return err_fmt(msg, cap, ERR_INVAL, "'%s': want [ipv6]:port", listen);
        h = listen + 1;
        colon = hend + 1;
    } else {
        colon = strrchr(listen, ':');
        if (colon == NULL)
            return err_fmt(msg, cap, ERR_INVAL, "'%s': want host:port", listen);
        if (memchr(listen, ':', (size_t)(colon - listen)) != NULL)
            return err_fmt(msg, cap, ERR_INVAL, "'%s': put an IPv6 address in brackets", listen);
        hend = colon;
    }
    size_t hlen = (size_t)(hend - h);
    if (hlen == 0)
        return err_fmt(msg, cap, ERR_INVAL, "'%s': empty host", listen);
    if (hlen >= host_cap)
        return err_fmt(msg, cap, ERR_INVAL, "'%s': host too long", listen);
    const char *p = colon + 1;
    if (*p == '\0')
        return err_fmt(msg, cap, ERR_INVAL, "'%s': empty port", listen);
    unsigned long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return err_fmt(msg, cap, ERR_INVAL, "'%s': port is not a number", listen);
        v = v * 10 + (unsigned long)(*p - '0');
        if (v > 65535)
            return err_fmt(msg, cap, ERR_INVAL, "'%s': port above 65535", listen);
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)v;
    return 0;
}

__attribute__((format(printf, 2, 0))) static void httpd__mhd_log(void *cls, const char *fmt,
                                                                 va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    log_debug("httpd: %s", line);
}

static void httpd__rearm(httpd_t *h);

static void httpd__run(httpd_t *h)
{
    if (h->stopping || h->mhd == NULL)
        return;
    mhd.run(h->mhd);
    httpd__rearm(h);
}

static void httpd__on_poll(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    httpd__run(p->data);
}

static void httpd__on_timer(uv_timer_t *t)
{
    httpd__run(t->data);
}

static void httpd__rearm(httpd_t *h)
{
    MHD_UNSIGNED_LONG_LONG ms = 0;
    if (mhd.get_timeout(h->mhd, &ms) == MHD_YES) {
        if (ms > 60000)
            ms = 60000;
        uv_timer_start(&h->timer, httpd__on_timer, (uint64_t)ms, 0);
    } else {
        uv_timer_stop(&h->timer);
    }
}

static bool httpd__is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
    }
    return false;
}

const char *httpd_req_header(const struct httpd_req *r, const char *name)
{
    if (r == NULL || name == NULL)
        return NULL;
    return mhd.lookup_connection_value(r->conn_, MHD_HEADER_KIND, name);
}

const char *httpd_req_query(const struct httpd_req *r, const char *name)
{
    if (r == NULL || name == NULL)
        return NULL;
    const char *v = mhd.lookup_connection_value(r->conn_, MHD_GET_ARGUMENT_KIND, name);
    if (v == NULL && mhd.lookup_connection_value_n(r->conn_, MHD_GET_ARGUMENT_KIND, name,
                                                   strlen(name), NULL, NULL) == MHD_YES)
        return "";
    return v;
}

void httpd_resp_status(struct httpd_resp *r, int status)
{
    r->status = status;
}

void httpd_resp_type(struct httpd_resp *r, const char *content_type)
{
    r->content_type = content_type;
}

int httpd_resp_body(struct httpd_resp *r, const void *data, size_t len)
{
    if (len > HTTPD_BODY_MAX)
        return r->err = ERR_TOOBIG;
    char *b = mem_alloc(len ? len : 1);
    if (b == NULL)
        return r->err = ERR_NOMEM;
    if (len)
        memcpy(b, data, len);
    mem_free(r->body);
    r->body = b;
    r->len = len;
    return 0;
}

int httpd_resp_take(struct httpd_resp *r, char **body, size_t len)
{
    mem_free(r->body);
    r->body = *body;
    r->len = r->body ? len : 0;
    *body = NULL;
    return 0;
}

int httpd_resp_header(struct httpd_resp *r, const char *name, const char *value)
{
    if (name == NULL || value == NULL || name[0] == '\0' || strpbrk(name, "\r\n: ") != NULL ||
        strpbrk(value, "\r\n") != NULL)
        return ERR_INVAL;
    if (r->nheaders >= HTTPD_HEADERS_MAX)
        return ERR_FULL;
    char *n = mem_strdup(name), *v = mem_strdup(value);
    if (n == NULL || v == NULL) {
        mem_free(n);
        mem_free(v);
        return r->err = ERR_NOMEM;
    }
    r->hname[r->nheaders] = n;
    r->hvalue[r->nheaders] = v;
    r->nheaders++;
    return 0;
}

static void httpd__resp_close(struct httpd_resp *r)
{
    mem_free(r->body);
    for (size_t i = 0; i < r->nheaders; i++) {
        mem_free(r->hname[i]);
        mem_free(r->hvalue[i]);
    }
}

static enum MHD_Result httpd__queue(struct MHD_Connection *c, const struct httpd_resp *r)
{
    struct MHD_Response *mr =
        mhd.create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_COPY);
    if (mr == NULL)
        return MHD_NO; /* closes the connection: one failed request, not the process */
    mhd.add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    mhd.add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    for (size_t i = 0; i < r->nheaders; i++)
        mhd.add_response_header(mr, r->hname[i], r->hvalue[i]);
    enum MHD_Result ok = mhd.queue_response(c, (unsigned)r->status, mr);
    mhd.destroy_response(mr);
    return ok;
}

static const struct httpd_route_ent *httpd__match(const httpd_t *h, const char *path)
{
    const struct httpd_route_ent *best = NULL;
    for (size_t i = 0; i < h->nroutes; i++) {
        const struct httpd_route_ent *e = &h->routes[i];
        if (strncmp(path, e->prefix, e->plen) == 0 && (best == NULL || e->plen > best->plen))
            best = e;
    }
    return best;
}

static enum MHD_Result httpd__access(void *cls, struct MHD_Connection *c, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
    (void)version;
    (void)upload_data;
    httpd_t *h = cls;
    /* libmicrohttpd calls once when the headers are in, then with body chunks, then once with
     * *upload_data_size == 0: answer on that last call (answering earlier makes it close the
     * connection instead of keeping it alive). Bodies are discarded unread. */
    if (*con_cls == NULL) {
        *con_cls = &httpd__seen;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }

    struct httpd_resp resp = {.status = 200, .content_type = "text/plain; charset=utf-8"};
    const struct httpd_route_ent *e = httpd__match(h, url ? url : "");
    if (e == NULL) {
        resp.status = 404;
        httpd_resp_body(&resp, "not found\n", 10);
    } else {
        struct httpd_req req = {.method = method, .path = url, .prefix = e->prefix, .conn_ = c};
        const union MHD_ConnectionInfo *ci =
            mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci != NULL && ci->client_addr != NULL) {
            const struct sockaddr *sa = ci->client_addr;
            socklen_t sl = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                     : sizeof(struct sockaddr_in);
            if (getnameinfo(sa, sl, req.client, sizeof req.client, NULL, 0, NI_NUMERICHOST) != 0)
                req.client[0] = '\0';
            req.client_loopback = httpd__is_loopback(sa);
        }
        e->fn(&req, &resp, e->arg);
        h->served++;
        if (resp.err != 0) {
            mem_free(resp.body);
            resp.body = NULL;
            resp.len = 0;
            resp.status = 500;
            resp.content_type = "text/plain; charset=utf-8";
            httpd_resp_body(&resp, "internal error\n", 15);
        }
    }
    enum MHD_Result ok = httpd__queue(c, &resp);
    httpd__resp_close(&resp);
    return ok;
}

static int httpd__listen_socket(const char *host, uint16_t port, int *fd_out, int *family,
                                char *msg, size_t cap)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", (unsigned)port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || res == NULL)
        return err_fmt(msg, cap, ERR_CONFIG, "cannot resolve '%s': %s", host, gai_strerror(rc));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return err_fmt(msg, cap, ERR_SYS, "socket: %s", strerror(errno));
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (res->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        int e = errno;
        close(fd);
        freeaddrinfo(res);
        return err_fmt(msg, cap, ERR_SYS, "cannot listen on %s:%u: %s", host, (unsigned)port,
                       strerror(e));
    }
    *family = res->ai_family;
    freeaddrinfo(res);
    *fd_out = fd;
    return 0;
}

static uint16_t httpd__bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

int httpd_start(httpd_t **out, uv_loop_t *loop, const char *listen_addr, char *msg, size_t cap)
{
    *out = NULL;
    char host[HTTPD_LISTEN_MAX + 1];
    uint16_t port;
    int rc = httpd_parse_listen(listen_addr, host, sizeof host, &port, msg, cap);
    if (rc != 0)
        return rc;
    rc = httpd__mhd_ready(msg, cap);
    if (rc != 0)
        return rc;
    int fd = -1, family = AF_INET;
    rc = httpd__listen_socket(host, port, &fd, &family, msg, cap);
    if (rc != 0)
        return rc;
    httpd_t *h = mem_calloc(1, sizeof *h);
    if (h == NULL) {
        close(fd);
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    h->loop = loop;
    h->port = httpd__bound_port(fd);
    if (family == AF_INET6)
        snprintf(h->url, sizeof h->url, "http://[%s]:%u", host, (unsigned)h->port);
    else
        snprintf(h->url, sizeof h->url, "http://%s:%u", host, (unsigned)h->port);

    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->mhd = mhd.start_daemon(flags, 0, NULL, NULL, httpd__access, h, MHD_OPTION_LISTEN_SOCKET,
                              (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPD_CONN_MAX,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTPD_IDLE_S,
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(HTTPD_CONN_MAX / 2),
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                              MHD_OPTION_EXTERNAL_LOGGER, httpd__mhd_log, NULL, MHD_OPTION_END);
    if (h->mhd == NULL) {
        close(fd);
        mem_free(h);
        return err_fmt(msg, cap, ERR_SYS, "libmicrohttpd refused to start on %s", listen_addr);
    }
    const union MHD_DaemonInfo *di = mhd.get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (di == NULL || uv_poll_init(loop, &h->poll, di->epoll_fd) != 0) {
        mhd.stop_daemon(h->mhd); /* closes the listening socket it was given */
        mem_free(h);
        return err_fmt(msg, cap, ERR_SYS, "cannot watch libmicrohttpd's epoll descriptor");
    }
    uv_timer_init(loop, &h->timer);
    h->poll.data = h;
    h->timer.data = h;
    h->open_handles = 2;
    uv_poll_start(&h->poll, UV_READABLE, httpd__on_poll);
    httpd__rearm(h);
    *out = h;
    return 0;
}

int httpd_route(httpd_t *h, const char *prefix, httpd_handler_fn *fn, void *arg)
{
    if (h == NULL || prefix == NULL || prefix[0] != '/' || fn == NULL)
        return ERR_INVAL;
    for (size_t i = 0; i < h->nroutes; i++) {
        if (strcmp(h->routes[i].prefix, prefix) == 0) {
            h->routes[i].fn = fn;
            h->routes[i].arg = arg;
            return 0;
        }
    }
    if (h->nroutes >= HTTPD_ROUTES_MAX)
        return ERR_FULL;
    char *p = mem_strdup(prefix);
    if (p == NULL)
        return ERR_NOMEM;
    h->routes[h->nroutes++] = (struct httpd_route_ent){p, strlen(p), fn, arg};
    return 0;
}

uint16_t httpd_port(const httpd_t *h)
{
    return h ? h->port : 0;
}

const char *httpd_url(const httpd_t *h)
{
    return h ? h->url : "";
}

uint64_t httpd_served(const httpd_t *h)
{
    return h ? h->served : 0;
}

static void httpd__on_close(uv_handle_t *hd)
{
    httpd_t *h = hd->data;
    if (--h->open_handles > 0)
        return;
    for (size_t i = 0; i < h->nroutes; i++)
        mem_free(h->routes[i].prefix);
    mem_free(h);
}

void httpd_stop(httpd_t **hp)
{
    if (hp == NULL || *hp == NULL)
        return;
    httpd_t *h = *hp;
    *hp = NULL;
    h->stopping = true;
    /* The poll handle watches MHD's epoll descriptor: close it before MHD closes that fd. */
    uv_close((uv_handle_t *)&h->poll, httpd__on_close);
    uv_close((uv_handle_t *)&h->timer, httpd__on_close);
    mhd.stop_daemon(h->mhd);
    h->mhd = NULL;
}
