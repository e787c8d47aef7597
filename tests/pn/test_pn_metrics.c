/* Integration test: a real paddock-pn with `[metrics] listen = 127.0.0.1:0` scraped over
 * plain HTTP (a GET written on a socket): the exposition is well formed (promtool check
 * metrics when promtool is installed), and its counters move when a task runs and when a
 * create is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "pn_client.h"

static pnc_daemon_t d;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    (void)state;
    return pnc_start(&d, "[metrics]\nlisten = 127.0.0.1:0\n");
}

static int teardown(void **state)
{
    (void)state;
    pnc_close_all();
    return pnc_stop(&d);
}

/* The port of WORK/metrics.url ("http://127.0.0.1:PORT/metrics"), waited for (bounded). */
static int metrics_port(void)
{
    char path[512], url[256] = "";
    snprintf(path, sizeof path, "%s/work/metrics.url", d.dir);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            int ok = fgets(url, sizeof url, f) != NULL && strchr(url, '\n');
            fclose(f);
            int port = 0;
            if (ok && sscanf(url, "http://127.0.0.1:%d/metrics", &port) == 1 && port > 0)
                return port;
        }
        pause_ms(10);
    }
    fail_msg("no metrics.url (%s)", url);
    return -1;
}

/* GET `path` from 127.0.0.1:port; the body into a malloc'd string (caller frees), the status
 * code into *status. HTTP/1.0 with Connection: close, so the body ends with the stream. */
static char *http_get(int port, const char *path, int *status)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        if (len + 4096 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        assert_true(r >= 0);
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    assert_int_equal(sscanf(buf, "HTTP/1.%*d %d", status), 1);
    char *body = strstr(buf, "\r\n\r\n");
    assert_non_null(body);
    char *out = strdup(body + 4);
    free(buf);
    return out;
}

/* The value of the sample line that starts with `series` followed by a space; -1 if none. */
static double value(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return atof(p + n + 1);
    return -1;
}

/* promtool check metrics over the text, when promtool is installed: 0, or 1 when it fails,
 * -1 when there is no promtool. */
static int promtool_check(const char *text)
{
    if (system("command -v promtool >/dev/null 2>&1") != 0)
        return -1;
    FILE *p = popen("promtool check metrics >/dev/null 2>&1", "w");
    assert_non_null(p);
    fputs(text, p);
    int rc = pclose(p);
    return rc == 0 ? 0 : 1;
}

static const char *const true_argv[] = {"true", NULL};

static void test_counters_move_when_a_task_runs(void **state)
{
    (void)state;
    int port = metrics_port();
    int status = 0;
    char *before = http_get(port, "/metrics", &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(before, "# TYPE paddock_pn_task_starts_total counter"));
    assert_non_null(strstr(before, "# TYPE paddock_pn_spawn_latency_seconds histogram"));
    assert_non_null(strstr(before, "process_resident_memory_bytes "));
    int pt = promtool_check(before);
    assert_true(pt != 1); /* well formed, when promtool is there to say so */
    double starts0 = value(before, "paddock_pn_task_starts_total{class=\"regular\"}");
    double ok0 =
        value(before, "paddock_pn_tasks_ended_total{state=\"succeeded\",class=\"regular\"}");
    double spawns0 = value(before, "paddock_pn_spawn_latency_seconds_count");
    double cap0 = value(before, "paddock_pn_creates_refused_total{reason=\"capacity\"}");
    assert_true(starts0 >= 0 && ok0 >= 0 && spawns0 >= 0 && cap0 >= 0);
    assert_true(value(before, "process_resident_memory_bytes") > 1e6);

    zsock_t *s = pnc_connect(&d);
    assert_non_null(s);
    pnc_task_t t = {.job = "j-metrics",
                    .task = "t1",
                    .cpu = 0.1,
                    .mem_mb = 16,
                    .runtime_ms = 100,
                    .argv = true_argv};
    assert_int_equal(pnc_create(s, &t), 0);
    int done = 0;
    for (int i = 0; i < 100 && !done; i++) {
        proto_msg_t m;
        if (pnc_recv(s, &m, 100) != 0)
            continue;
        done = m.type == PROTO_TASK_STATUS && m.task_status.state == PROTO_TASK_SUCCEEDED;
        proto_msg_close(&m);
    }
    assert_true(done);
    pnc_task_t big = t; /* larger than the node: refused for capacity */
    big.task = "t2";
    big.cpu = 4096; /* the most a task may ask; more than this node has */
    assert_int_equal(pnc_create(s, &big), 0);
    int refused = 0;
    for (int i = 0; i < 100 && !refused; i++) {
        proto_msg_t m;
        if (pnc_recv(s, &m, 100) != 0)
            continue;
        refused = m.type == PROTO_ERROR;
        proto_msg_close(&m);
    }
    assert_true(refused);

    char *after = http_get(port, "/metrics", &status);
    assert_int_equal(status, 200);
    assert_true(value(after, "paddock_pn_task_starts_total{class=\"regular\"}") == starts0 + 1);
    assert_true(
        value(after, "paddock_pn_tasks_ended_total{state=\"succeeded\",class=\"regular\"}") ==
        ok0 + 1);
    assert_true(value(after, "paddock_pn_spawn_latency_seconds_count") == spawns0 + 1);
    assert_true(value(after, "paddock_pn_spawn_latency_seconds_sum") > 0);
    assert_true(value(after, "paddock_pn_creates_refused_total{reason=\"capacity\"}") == cap0 + 1);
    assert_true(value(after, "paddock_pn_task_start_delay_seconds_count") >= 1);
    assert_true(promtool_check(after) != 1);

    char *missing = http_get(port, "/nothing-here", &status);
    assert_int_equal(status, 404);
    free(missing);
    free(before);
    free(after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counters_move_when_a_task_runs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
