/* The libuv-driven HTTP server over real TCP on 127.0.0.1: an ephemeral port, routing by
 * longest prefix, 404, query and header access, the client address, extra response headers,
 * keep-alive, a flood of junk that is refused without harming the server, and a clean stop
 * (every handle closed, the loop closes). The client runs on a thread with blocking sockets;
 * handlers run on the loop thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/httpd.h"
#include "common/metrics.h"

struct fixture {
    uv_loop_t loop;
    httpd_t *h;
    uv_async_t done;
    uv_timer_t watchdog;
    bool timed_out;
    int metrics_calls;
    bool client_ok;
    char last_client[64];
    bool last_loopback;
    char auth[128];
    pthread_t thr;
    void (*client)(struct fixture *);
};

static void on_metrics(const struct httpd_req *req, struct httpd_resp *resp, void *arg)
{
    struct fixture *f = arg;
    f->metrics_calls++;
    snprintf(f->last_client, sizeof f->last_client, "%s", req->client);
    f->last_loopback = req->client_loopback;
    struct metrics m;
    metrics_init(&m);
    metrics_counter1(&m, "test_scrapes_total", "Scrapes.", f->metrics_calls);
    size_t len;
    char *t = metrics_take(&m, &len);
    httpd_resp_type(resp, METRICS_CONTENT_TYPE);
    httpd_resp_take(resp, &t, len);
    metrics_close(&m);
}

static void on_page(const struct httpd_req *req, struct httpd_resp *resp, void *arg)
{
    struct fixture *f = arg;
    const char *a = httpd_req_header(req, "Authorization");
    snprintf(f->auth, sizeof f->auth, "%s", a ? a : "");
    if (a == NULL || strcmp(a, "Bearer s3cret") != 0) {
        httpd_resp_status(resp, 401);
        assert_int_equal(httpd_resp_header(resp, "WWW-Authenticate", "Bearer realm=\"paddock\""),
                         0);
        assert_int_equal(httpd_resp_header(resp, "Bad\r\nName", "x"), ERR_INVAL);
        httpd_resp_body(resp, "no\n", 3);
        return;
    }
    const char *q = httpd_req_query(req, "job");
    const char *flag = httpd_req_query(req, "live");
    char body[256];
    int n = snprintf(body, sizeof body, "%s %s job=%s live=%s\n", req->method, req->path,
                     q ? q : "(none)", flag ? (flag[0] ? flag : "(empty)") : "(none)");
    httpd_resp_type(resp, "text/html; charset=utf-8");
    httpd_resp_body(resp, body, (size_t)n);
}

static void on_done(uv_async_t *a)
{
    struct fixture *f = a->data;
    httpd_stop(&f->h);
    uv_close((uv_handle_t *)&f->done, NULL);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
}

static void on_watchdog(uv_timer_t *t)
{
    struct fixture *f = t->data;
    f->timed_out = true;
    httpd_stop(&f->h);
    uv_close((uv_handle_t *)&f->done, NULL);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    char msg[256];
    int rc = httpd_start(&f->h, &f->loop, "127.0.0.1:0", msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "httpd_start: %s\n", msg);
        return -1;
    }
    assert_int_equal(httpd_route(f->h, "/metrics", on_metrics, f), 0);
    assert_int_equal(httpd_route(f->h, "/cluster/", on_page, f), 0);
    assert_int_equal(httpd_route(f->h, "nope", on_page, f), ERR_INVAL);
    uv_async_init(&f->loop, &f->done, on_done);
    f->done.data = f;
    uv_timer_init(&f->loop, &f->watchdog);
    f->watchdog.data = f;
    uv_timer_start(&f->watchdog, on_watchdog, 20000, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(uv_loop_close(&f->loop), 0); /* every handle closed */
    free(f);
    return 0;
}

static int dial_t(uint16_t port, int timeout_s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int dial(uint16_t port)
{
    return dial_t(port, 5);
}

/* Sends `req` and reads one response (Content-Length framed) into out. Returns its length. */
static int exchange(int fd, const char *req, char *out, size_t cap)
{
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
        return -1;
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, out + len, cap - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        out[len] = '\0';
        char *hdr_end = strstr(out, "\r\n\r\n");
        const char *cl = strcasestr(out, "Content-Length:");
        if (hdr_end && strncmp(req, "HEAD ", 5) == 0)
            break; /* headers only */
        if (hdr_end && cl && cl < hdr_end) {
            size_t body = strtoul(cl + 15, NULL, 10);
            if (len >= (size_t)(hdr_end + 4 - out) + body)
                break;
        }
        if (len + 1 >= cap)
            break;
    }
    out[len] = '\0';
    return (int)len;
}

static void *client_thread(void *arg)
{
    struct fixture *f = arg;
    f->client(f);
    uv_async_send(&f->done);
    return NULL;
}

static void run(struct fixture *f, void (*client)(struct fixture *))
{
    f->client = client;
    pthread_create(&f->thr, NULL, client_thread, f);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    pthread_join(f->thr, NULL);
    assert_false(f->timed_out);
}

static void client_basic(struct fixture *f)
{
    (void)f;
}

static uint16_t g_port;

/* A failed check in the client thread says which one and what came back. */
#define CHECK(flag, cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "client check failed at line %d: %s\n--- got:\n%s\n", __LINE__, #cond, \
                    buf);                                                                          \
            flag = false;                                                                          \
        }                                                                                          \
    } while (0)

static void client_requests(struct fixture *f)
{
    char buf[8192];
    int fd = dial(g_port);
    if (fd < 0)
        return;
    bool ok = true;
    /* Two requests on one keep-alive connection. */
    exchange(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
    CHECK(ok, strncmp(buf, "HTTP/1.1 200", 12) == 0);
    CHECK(ok, strstr(buf, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") != NULL);
    CHECK(ok, strstr(buf, "test_scrapes_total 1\n") != NULL);
    exchange(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
    CHECK(ok, strstr(buf, "test_scrapes_total 2\n") != NULL);
    /* Unknown path. */
    exchange(fd, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
    CHECK(ok, strncmp(buf, "HTTP/1.1 404", 12) == 0);
    /* The longest prefix wins: /cluster/ (not /metrics) without credentials -> 401. */
    exchange(fd, "GET /cluster/jobs HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
    CHECK(ok, strncmp(buf, "HTTP/1.1 401", 12) == 0);
    CHECK(ok, strstr(buf, "WWW-Authenticate: Bearer realm=\"paddock\"\r\n") != NULL);
    exchange(fd,
             "GET /cluster/jobs?job=j%2F1&live HTTP/1.1\r\nHost: x\r\n"
             "Authorization: Bearer s3cret\r\n\r\n",
             buf, sizeof buf);
    CHECK(ok, strncmp(buf, "HTTP/1.1 200", 12) == 0);
    CHECK(ok, strstr(buf, "GET /cluster/jobs job=j/1 live=(empty)\n") != NULL);
    CHECK(ok, strstr(buf, "Content-Type: text/html; charset=utf-8\r\n") != NULL);
    /* HEAD: headers only. */
    int n = exchange(fd, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
    CHECK(ok, n > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0);
    CHECK(ok, strstr(buf, "test_scrapes_total") == NULL);
    close(fd);
    f->client_ok = ok;
}

static void client_junk(struct fixture *f)
{
    char buf[8192];
    /* Raw garbage, a truncated request, an oversized header block: each connection is
     * answered with an error or closed; the server keeps serving. */
    const char *junk[] = {"\x00\x01\x02garbage\r\n\r\n", "GET /metrics HTTP/1.1\r\nHost",
                          "NOT HTTP AT ALL\r\n\r\n"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        int fd = dial_t(g_port, 1); /* answered, closed, or left waiting: all fine */
        if (fd < 0)
            return;
        (void)!write(fd, junk[i], strlen(junk[i]) + (i == 0 ? 10 : 0));
        shutdown(fd, SHUT_WR);
        (void)!read(fd, buf, sizeof buf);
        close(fd);
    }
    int fd = dial(g_port);
    if (fd < 0)
        return;
    static char big[70000];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET /metrics HTTP/1.1\r\nX-Big: ", 30);
    memcpy(big + sizeof big - 5, "\r\n\r\n", 5);
    (void)!write(fd, big, sizeof big - 1);
    int n = (int)read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    bool refused = n <= 0 || strncmp(buf, "HTTP/1.1 431", 12) == 0 ||
                   strncmp(buf, "HTTP/1.1 413", 12) == 0 || strncmp(buf, "HTTP/1.1 400", 12) == 0;
    close(fd);
    fd = dial(g_port);
    if (fd < 0)
        return;
    exchange(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof buf);
    close(fd);
    f->client_ok = refused && strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

static void test_start_stop(void **state)
{
    struct fixture *f = *state;
    assert_true(httpd_port(f->h) > 0);
    char want[64];
    snprintf(want, sizeof want, "http://127.0.0.1:%u", (unsigned)httpd_port(f->h));
    assert_string_equal(httpd_url(f->h), want);
    run(f, client_basic);
    assert_null(f->h);
}

static void test_requests(void **state)
{
    struct fixture *f = *state;
    g_port = httpd_port(f->h);
    run(f, client_requests);
    assert_true(f->client_ok);
    assert_int_equal(f->metrics_calls, 3); /* two GETs and a HEAD */
    assert_string_equal(f->last_client, "127.0.0.1");
    assert_true(f->last_loopback);
    assert_string_equal(f->auth, "Bearer s3cret");
}

static void test_junk(void **state)
{
    struct fixture *f = *state;
    g_port = httpd_port(f->h);
    run(f, client_junk);
    assert_true(f->client_ok);
    assert_int_equal(f->metrics_calls, 1); /* only the well-formed request reached it */
}

static void test_bind_errors(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    char msg[256];
    httpd_t *a = NULL, *b = NULL;
    assert_int_equal(httpd_start(&a, &loop, "127.0.0.1:0", msg, sizeof msg), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)httpd_port(a));
    assert_int_equal(httpd_start(&b, &loop, addr, msg, sizeof msg), ERR_SYS);
    assert_non_null(strstr(msg, "in use"));
    assert_null(b);
    assert_int_equal(httpd_start(&b, &loop, "127.0.0.1", msg, sizeof msg), ERR_INVAL);
    assert_int_equal(httpd_start(&b, &loop, "127.0.0.1:99999", msg, sizeof msg), ERR_INVAL);
    assert_int_equal(httpd_start(&b, &loop, "::1:80", msg, sizeof msg), ERR_INVAL);
    assert_int_equal(httpd_start(&b, &loop, ":80", msg, sizeof msg), ERR_INVAL);
    char host[64];
    uint16_t port;
    assert_int_equal(httpd_parse_listen("[::1]:9100", host, sizeof host, &port, msg, sizeof msg),
                     0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 9100);
    httpd_stop(&a);
    assert_null(a);
    httpd_stop(&a); /* no-op */
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the daemons do (zuv_global_init) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_start_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_junk, setup, teardown),
        cmocka_unit_test(test_bind_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
