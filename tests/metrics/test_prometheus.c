/* A real Prometheus scrapes a local cluster while a job runs (issue 17).
 *
 * `paddock cluster up` turns metrics on for every daemon; the endpoints are found the way an
 * operator finds them (`rm status`, `nodes`, `job show`, all --json) and written to a file of
 * static targets that Prometheus (Debian's binary, its own temporary directory, a free port,
 * scrape_interval 1s) reads with file_sd. The JM's port is set beforehand (PADDOCK_JM_METRICS),
 * so that its target is scraped from the JM's first second (Prometheus applies target changes
 * only every 5 s), and `job show` must report that URL. A chain of short tasks runs with a
 * deadline; then Prometheus' HTTP API (/api/v1/query) must show the JM's tasks started rising and
 * the RM's tokens granted going up and back down to 0, and every endpoint's text must pass
 * `promtool check metrics`. Everything started is stopped by pid. Skipped (cmocka's skip, with a
 * message) only when the prometheus or promtool binary is absent, or paddock-jm is not built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../e2e/e2e.h"
#include "common/port.h"

static pid_t prom_pid = -1;
static int prom_port;
static char prom_dir[700];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool have_binary(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

static int free_port(void)
{
    int fd, port = port_reserve(&fd);
    if (port >= 0)
        close(fd);
    return port;
}

/* GET http://HOST:PORT/PATH (url given whole) with HTTP/1.0; the body into *body (malloc'd).
 * Returns the status code, or -1. */
static int http_get(const char *url, char **body)
{
    *body = NULL;
    char host[64], path[2048];
    int port = 0;
    if (sscanf(url, "http://%63[^:]:%d%2047s", host, &port, path) != 3)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    char req[2300];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    int status = -1;
    sscanf(buf, "HTTP/1.%*d %d", &status);
    char *b = strstr(buf, "\r\n\r\n");
    *body = strdup(b ? b + 4 : "");
    free(buf);
    return status;
}

/* Percent-encodes a PromQL expression for a query string. */
static void urlencode(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '.' || c == '-')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, cap - o, "%%%02X", c);
    }
    out[o] = '\0';
}

/* One instant query; the value of the first sample, or NAN when there is none. */
static double prom_query(const char *expr)
{
    char enc[2048], url[2300];
    urlencode(expr, enc, sizeof enc);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/query?query=%s", prom_port, enc);
    char *body = NULL;
    double v = NAN;
    if (http_get(url, &body) == 200) {
        json_t *doc = json_loads(body, 0, NULL);
        json_t *res = json_object_get(json_object_get(doc, "data"), "result");
        json_t *val = json_object_get(json_array_get(res, 0), "value");
        const char *s = json_string_value(json_array_get(val, 1));
        if (s != NULL)
            v = strtod(s, NULL);
        json_decref(doc);
    }
    free(body);
    return v;
}

/* Writes the file_sd targets: "host:port" of each URL, with a `daemon` label. */
static void write_targets(char urls[][300], const char *const *kinds, size_t n)
{
    char path[800], tmp[800];
    snprintf(path, sizeof path, "%s/targets.json", prom_dir);
    snprintf(tmp, sizeof tmp, "%s/targets.json.tmp", prom_dir);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f, "[");
    for (size_t i = 0; i < n; i++) {
        char hp[128];
        sscanf(urls[i], "http://%127[^/]", hp);
        fprintf(f, "%s{\"targets\":[\"%s\"],\"labels\":{\"daemon\":\"%s\"}}", i ? "," : "", hp,
                kinds[i]);
    }
    fprintf(f, "]\n");
    fclose(f);
    assert_int_equal(rename(tmp, path), 0); /* Prometheus never reads half a file */
}

static void prom_start(void)
{
    snprintf(prom_dir, sizeof prom_dir, "%s/prom", e2e_dir());
    assert_int_equal(mkdir(prom_dir, 0700), 0);
    char conf[800], data[800], listen[64], logp[800];
    snprintf(conf, sizeof conf, "%s/prometheus.yml", prom_dir);
    snprintf(data, sizeof data, "%s/data", prom_dir);
    snprintf(logp, sizeof logp, "%s/prometheus.log", prom_dir);
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fprintf(f,
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
            "scrape_configs:\n  - job_name: paddock\n    file_sd_configs:\n"
            "      - files: ['%s/targets.json']\n        refresh_interval: 1s\n",
            prom_dir);
    fclose(f);
    prom_port = free_port();
    assert_true(prom_port > 0);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", prom_port);
    char cfgarg[900], dataarg[900];
    snprintf(cfgarg, sizeof cfgarg, "--config.file=%s", conf);
    snprintf(dataarg, sizeof dataarg, "--storage.tsdb.path=%s", data);
    prom_pid = fork();
    assert_true(prom_pid >= 0);
    if (prom_pid == 0) {
        int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("prometheus", "prometheus", cfgarg, dataarg, listen, "--log.level=warn",
               "--web.enable-lifecycle", (char *)NULL);
        _exit(127);
    }
    char url[128], *body = NULL;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/-/ready", prom_port);
    double end = now_s() + 20;
    int st = -1;
    while (now_s() < end && (st = http_get(url, &body)) != 200) {
        free(body);
        body = NULL;
        nap_ms(100);
    }
    free(body);
    assert_int_equal(st, 200);
}

static void prom_stop(void)
{
    if (prom_pid <= 0)
        return;
    kill(prom_pid, SIGTERM);
    double end = now_s() + 10;
    int st;
    while (waitpid(prom_pid, &st, WNOHANG) == 0) {
        if (now_s() > end) {
            kill(prom_pid, SIGKILL);
            waitpid(prom_pid, &st, 0);
            break;
        }
        nap_ms(50);
    }
    prom_pid = -1;
}

/* `promtool check metrics` on the text the URL serves: 0 when it passes (problems printed). */
static int promtool_check(const char *url)
{
    char *body = NULL;
    int st = http_get(url, &body);
    if (st != 200) {
        fprintf(stderr, "GET %s: status %d\n", url, st);
        free(body);
        return -1;
    }
    char path[800], cmd[1800];
    snprintf(path, sizeof path, "%s/scrape.txt", prom_dir);
    FILE *f = fopen(path, "w");
    fputs(body, f);
    fclose(f);
    free(body);
    snprintf(cmd, sizeof cmd, "promtool check metrics < '%s' >&2", path);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "promtool check metrics failed on %s\n", url);
    return rc;
}

__attribute__((format(printf, 1, 2))) static json_t *paddock_json(const char *fmt, ...)
{
    struct e2e_run r;
    char args[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    e2e_paddock(&r, 30, "%s", args);
    json_t *doc = r.status == 0 ? json_loads(r.out, 0, NULL) : NULL;
    if (doc == NULL)
        fprintf(stderr, "paddock %s: status %d: %s\n", args, r.status, r.err);
    e2e_run_close(&r);
    return doc;
}

static const char *skip_reason(void)
{
    if (!have_binary("prometheus") || !have_binary("promtool"))
        return "the prometheus and promtool binaries are not installed (Debian: prometheus)";
    if (!e2e_have_jm())
        return "paddock-jm is not built";
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    if (skip_reason() != NULL)
        return 0;
    return e2e_cluster_up("--rm 3 --pn 2 --pn-cpus 2 --pn-mem-mb 2048");
}

static int teardown(void **state)
{
    (void)state;
    prom_stop();
    e2e_cluster_down();
    return 0;
}

static void test_prometheus_scrapes_a_running_job(void **state)
{
    (void)state;
    if (skip_reason() != NULL) {
        printf("SKIP: %s\n", skip_reason());
        skip();
    }
    /* Endpoints of the RM replicas and the PNs, as the CLI reports them. */
    char urls[16][300];
    const char *kinds[16];
    size_t n = 0;
    json_t *st = paddock_json("rm status --json");
    assert_non_null(st);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(st, "replicas"), i, r)
    {
        const char *u = json_string_value(json_object_get(r, "metrics"));
        assert_non_null(u); /* every replica serves metrics and says where */
        snprintf(urls[n], sizeof urls[n], "%s", u);
        kinds[n++] = "rm";
    }
    json_decref(st);
    assert_int_equal(n, 3);
    /* PNs advertise their URL in heartbeats: the first one follows registration shortly. */
    size_t npn = 0, nnodes = 0, n_rm = n;
    for (double end = now_s() + 5; now_s() < end; nap_ms(200)) {
        json_t *nodes = paddock_json("nodes --json");
        assert_non_null(nodes);
        n = n_rm;
        npn = 0;
        nnodes = json_array_size(json_object_get(nodes, "nodes"));
        json_array_foreach(json_object_get(nodes, "nodes"), i, r)
        {
            const char *u = json_string_value(json_object_get(r, "metrics"));
            if (u != NULL) {
                snprintf(urls[n], sizeof urls[n], "%s", u);
                kinds[n++] = "pn";
                npn++;
            }
        }
        json_decref(nodes);
        if (npn == nnodes)
            break;
    }
    /* PNs advertise their URL once paddock-pn serves metrics (a [metrics] section in the
     * configuration cluster up wrote): then every PN must. */
    char pnconf[800], line[256];
    snprintf(pnconf, sizeof pnconf, "%s/pn-1.conf", e2e_dir());
    bool pn_metrics = false;
    FILE *f = fopen(pnconf, "r");
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        pn_metrics |= strncmp(line, "[metrics]", 9) == 0;
    if (f != NULL)
        fclose(f);
    if (pn_metrics)
        assert_int_equal(npn, 2);
    else
        fprintf(stderr, "note: paddock-pn has no [metrics] section: PNs not scraped\n");

    /* The JM's port is chosen here (PADDOCK_JM_METRICS, which `paddock submit` passes on to the
     * JM and which wins over the cluster's jm.conf), so that Prometheus already has the target
     * when the JM starts: it hands new file_sd targets to its scrapers only every 5 s. */
    char jm_want[300], jm_listen[64];
    int jm_port = free_port();
    assert_true(jm_port > 0);
    snprintf(jm_listen, sizeof jm_listen, "127.0.0.1:%d", jm_port);
    snprintf(jm_want, sizeof jm_want, "http://%s/metrics", jm_listen);
    setenv("PADDOCK_JM_METRICS", jm_listen, 1);
    snprintf(urls[n], sizeof urls[n], "%s", jm_want);
    kinds[n++] = "jm";
    prom_start();
    write_targets(urls, kinds, n);
    /* Ready is not scraping: wait until every target, the JM's to be included, has been tried. */
    double tried = NAN;
    for (double end = now_s() + 20; now_s() < end; nap_ms(200))
        if ((tried = prom_query("count(up)")) == (double)n)
            break;
    assert_true(tried == (double)n);

    /* A chain of short tasks with a deadline: tokens are granted, tasks start one after the
     * other over several scrapes, then the tokens go back. */
    char spec[800];
    snprintf(spec, sizeof spec, "%s/chain.json", e2e_dir());
    f = fopen(spec, "w");
    assert_non_null(f);
    /* About 6 s of tasks starting one after the other, scraped every second. */
    fprintf(f, "{\"version\":1,\"name\":\"chain\",\"deadline_s\":120,\"tasks\":[");
    for (int t = 0; t < 4; t++) {
        fprintf(f, "%s{\"id\":\"t%d\",\"cmd\":[\"sleep\",\"1.5\"],\"runtime_s\":1.5", t ? "," : "",
                t);
        if (t > 0)
            fprintf(f, ",\"after\":[\"t%d\"]", t - 1);
        fprintf(f, "}");
    }
    fprintf(f, "]}\n");
    fclose(f);
    struct e2e_run run;
    double t_submit = now_s(), t_found = 0;
    e2e_paddock(&run, 30, "submit '%s'", spec);
    if (run.status != 0)
        fprintf(stderr, "submit: %s\n", run.err);
    assert_int_equal(run.status, 0);
    char id[64];
    size_t idl = strcspn(run.out, "\n");
    assert_true(idl > 2 && idl < sizeof id);
    memcpy(id, run.out, idl);
    id[idl] = '\0';
    e2e_run_close(&run);

    /* The JM advertises its URL in its first renewal; `job show` prints it. */
    char jm_url[300] = "";
    for (double end = now_s() + 10; now_s() < end && jm_url[0] == '\0'; nap_ms(100)) {
        json_t *js = paddock_json("job show %s --json", id);
        const char *u = json_string_value(json_object_get(js, "metrics"));
        if (u != NULL) {
            snprintf(jm_url, sizeof jm_url, "%s", u);
            t_found = now_s();
        }
        json_decref(js);
    }
    assert_string_equal(jm_url, jm_want);

    /* promtool on every endpoint while the job runs. */
    for (size_t k = 0; k < n; k++)
        assert_int_equal(promtool_check(urls[k]), 0);

    /* Wait for the job to end (its JM then lingers briefly; Prometheus keeps what it saw). */
    json_t *fin = e2e_job_wait(id, 60);
    assert_non_null(fin);
    assert_string_equal(json_string_value(json_object_get(fin, "state")), "succeeded");
    json_decref(fin);

    /* Tasks started rose while Prometheus watched: several values, from low to 4. */
    double hi = NAN, lo = NAN;
    for (double end = now_s() + 15; now_s() < end; nap_ms(500)) {
        hi = prom_query("max(max_over_time(paddock_jm_tasks_started_total[5m]))");
        lo = prom_query("min(min_over_time(paddock_jm_tasks_started_total[5m]))");
        if (hi == 4 && lo < hi)
            break;
    }
    fprintf(stderr,
            "tasks started: min %g, max %g (JM scraped %g times, found %.1f s after submit)\n", lo,
            hi, prom_query("sum(count_over_time(up{daemon=\"jm\"}[5m]))"), t_found - t_submit);
    assert_true(hi == 4);
    assert_true(lo < hi);
    /* Tokens granted went up while it ran and came back to 0 after: seen at the RM leader and
     * at the JM. */
    double up = NAN, now = NAN, jm_up = NAN;
    for (double end = now_s() + 15; now_s() < end; nap_ms(500)) {
        up = prom_query("max(max_over_time(paddock_rm_tokens_granted{virtual_cluster=\"default\"}"
                        "[5m]))");
        now = prom_query("max(paddock_rm_tokens_granted{virtual_cluster=\"default\"})");
        jm_up = prom_query("max(max_over_time(paddock_jm_tokens_granted[5m]))");
        if (up > 0 && now == 0 && jm_up > 0)
            break;
    }
    fprintf(stderr, "tokens granted: max %g, now %g; at the JM max %g\n", up, now, jm_up);
    assert_true(up > 0);
    assert_true(now == 0);
    assert_true(jm_up > 0);
    /* Prometheus scraped every target successfully at least once. */
    double targets_up = prom_query("count(max_over_time(up[5m]) == 1)");
    assert_true(targets_up == (double)n);
    /* The RM saw heartbeats, and its Raft figures make sense: one leader among three. */
    assert_true(prom_query("sum(paddock_rm_raft_role{role=\"leader\"})") == 1);
    assert_true(prom_query("min(paddock_rm_heartbeats_total)") > 0);
    /* Nodes and jobs by state, as every replica applied them. */
    assert_true(prom_query("min(paddock_rm_nodes{state=\"up\"})") == 2);
    double done = NAN;
    for (double end = now_s() + 5; now_s() < end; nap_ms(250))
        if ((done = prom_query("min(paddock_rm_jobs{state=\"done\"})")) == 1)
            break;
    assert_true(done == 1);
    assert_true(prom_query("min(paddock_rm_raft_term)") >= 1);
    /* The leader timed its log entries' commits: some, none more than it appended, each counted
     * in a bucket, and together taking time. */
    assert_true(prom_query("sum(paddock_rm_commit_seconds_count)") > 0);
    assert_true(prom_query("sum(paddock_rm_log_entries_appended_total) - "
                           "sum(paddock_rm_commit_seconds_count)") >= 0);
    assert_true(prom_query("sum(paddock_rm_commit_seconds_bucket{le=\"+Inf\"}) - "
                           "sum(paddock_rm_commit_seconds_count)") == 0);
    assert_true(prom_query("sum(paddock_rm_commit_seconds_sum)") > 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prometheus_scrapes_a_running_job, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
