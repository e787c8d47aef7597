/* Tests of pn/metrics_http: the request parser, and a live responder on a loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "pn/metrics_http.h"

static void test_parse(void **state)
{
    (void)state;
    char m[16], p[64];
    const char *ok = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(metrics_http_parse(ok, strlen(ok), m, sizeof m, p, sizeof p), 1);
    assert_string_equal(m, "GET");
    assert_string_equal(p, "/metrics");
    const char *part = "GET /metrics HTTP/1.1\r\nHost: a\r\n";
    assert_int_equal(metrics_http_parse(part, strlen(part), m, sizeof m, p, sizeof p), 0);
    const char *bad[] = {"garbage\r\n\r\n",
                         "GET metrics HTTP/1.1\r\n\r\n",
                         "GET /metrics HTTP/2\r\n\r\n",
                         "get /metrics HTTP/1.0\r\n\r\n",
                         " /metrics HTTP/1.0\r\n\r\n",
                         "GET  HTTP/1.0\r\n\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(metrics_http_parse(bad[i], strlen(bad[i]), m, sizeof m, p, sizeof p), -1);
    /* a path longer than the caller's room is refused, not cut */
    assert_int_equal(metrics_http_parse(ok, strlen(ok), m, sizeof m, p, 5), -1);
}

static void body_fn(void *arg, char **body, size_t *len)
{
    int *calls = arg;
    (*calls)++;
    *body = mem_strdup("paddock_x 1\n");
    *len = *body ? strlen(*body) : 0;
}

/* Sends `req` to the responder and returns what it answered until it closed (malloc'd). */
static char *exchange(uv_loop_t *loop, int port, const char *req)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    char *out = calloc(1, 65536);
    size_t len = 0;
    for (int i = 0; i < 20000; i++) {
        uv_run(loop, UV_RUN_NOWAIT);
        ssize_t n = recv(fd, out + len, 65535 - len, MSG_DONTWAIT);
        if (n == 0)
            break;
        if (n > 0)
            len += (size_t)n;
        else
            usleep(500);
    }
    close(fd);
    return out;
}

static void test_live(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    metrics_http_t *h = NULL;
    int calls = 0;
    char msg[256];
    assert_int_equal(
        metrics_http_start(&h, &loop, "127.0.0.1:0", "/metrics", body_fn, &calls, msg, sizeof msg),
        0);
    int port = 0;
    assert_int_equal(sscanf(metrics_http_url(h), "http://127.0.0.1:%d", &port), 1);
    char *r = exchange(&loop, port, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r, "Content-Length: 12\r\n"));
    assert_non_null(strstr(r, "\r\n\r\npaddock_x 1\n"));
    free(r);
    r = exchange(&loop, port, "HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "200 OK"));
    assert_null(strstr(r, "paddock_x")); /* headers only */
    free(r);
    r = exchange(&loop, port, "GET /other HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 404 "));
    free(r);
    r = exchange(&loop, port, "POST /metrics HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 405 "));
    free(r);
    r = exchange(&loop, port, "nonsense\r\n\r\n");
    assert_non_null(strstr(r, "HTTP/1.1 400 "));
    free(r);
    assert_int_equal(calls, 2); /* the GET and the HEAD of /metrics */
    assert_int_equal(metrics_http_served(h), 5);
    assert_int_equal(metrics_http_bad(h), 1);
    /* a head that fills the buffer without ending: 400 (exactly the buffer, so that the
     * responder has read every byte before it answers and closes) */
    char *big = malloc(METRICS_HTTP_HEAD_MAX + 1);
    memset(big, 'a', METRICS_HTTP_HEAD_MAX);
    big[METRICS_HTTP_HEAD_MAX] = 0;
    r = exchange(&loop, port, big);
    assert_non_null(strstr(r, "HTTP/1.1 400 "));
    free(r);
    free(big);
    metrics_http_stop(&h);
    assert_null(h);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    /* a bad address is refused with its reason */
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_not_equal(
        metrics_http_start(&h, &loop, "nohostport", "/metrics", body_fn, &calls, msg, sizeof msg),
        0);
    assert_null(h);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_live),
    };
    return cmocka_run_group_tests_name("pn metrics_http", tests, NULL, NULL);
}
