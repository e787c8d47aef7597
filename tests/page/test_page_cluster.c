/* test_page_cluster.c - the live cluster page on a real local cluster (`paddock cluster up`:
 * 3 RM replicas, 3 PNs, real paddock-jm), opened in headless Chromium while a job runs:
 *   - exactly one replica (the leader) serves /cluster.json; the two followers answer 503
 *     naming it, and their "/" is a notice pointing at it (data-role, data-leader);
 *   - during the job (tests/page/page-job.json: three waves of map tasks on the six cores,
 *     then two reduce tasks; the page is opened once the first wave is done), the page drawn by
 * Chromium after its live updates ran (data-updates >= 2, no reload) shows every node (data-node),
 * every job of the document with ours active (data-job), and one heatmap cell per wait-time matrix
 * cell of every node (class="cell"), counted in the DOM and checked against the leader's document;
 *   - a screenshot of the page during the job (cluster-page.png in the test's directory, and
 *     at $PADDOCK_PAGE_SCREENSHOT when set: docs/images/cluster-page.png is made so);
 *   - a loopback client needs no token; an unknown path is 404.
 * Skipped (77) without paddock-jm, curl or /usr/bin/chromium. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define BROWSER "/usr/bin/chromium"
#define NREP    3

static char urls[NREP][256]; /* http://HOST:PORT of each replica's HTTP listener */
static bool ready;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    while (buf != NULL && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *g = realloc(buf, cap * 2);
            if (g == NULL)
                break;
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL)
        buf[len] = '\0';
    return buf;
}

/* GET url with curl (a loopback client, no token); the status, and the body in *body. */
static int get(const char *url, char **body)
{
    char out[512], cmd[2048];
    snprintf(out, sizeof out, "%s/../http.body", e2e_dir());
    snprintf(cmd, sizeof cmd, "curl -s -m 5 -o '%s' -w '%%{http_code}' '%s'", out, url);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    int code = -1;
    if (fscanf(p, "%d", &code) != 1)
        code = -1;
    pclose(p);
    if (body != NULL)
        *body = slurp(out);
    return code;
}

static json_t *get_json(const char *base, const char *path, int *code)
{
    char url[1024], *body = NULL;
    snprintf(url, sizeof url, "%s%s", base, path);
    *code = get(url, &body);
    json_t *doc = body != NULL ? json_loads(body, 0, NULL) : NULL;
    free(body);
    return doc;
}

/* The [metrics] listen of DIR/rm-N.conf (`paddock cluster up` turns it on). */
static bool listen_of(int n, char *out, size_t cap)
{
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/rm-%d.conf", e2e_dir(), n);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool in = false, found = false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '[')
            in = strcmp(line, "[metrics]") == 0;
        else if (in && strncmp(line, "listen", 6) == 0) {
            const char *v = strchr(line, '=');
            if (v != NULL) {
                v++;
                while (*v == ' ')
                    v++;
                snprintf(out, cap, "http://%s", v);
                found = true;
            }
        }
    }
    fclose(f);
    return found;
}

static int group_setup(void **state)
{
    (void)state;
    if (!e2e_have_jm() || access(BROWSER, X_OK) != 0 || system("command -v curl >/dev/null") != 0)
        return 0;
    if (e2e_cluster_up("--rm 3 --pn 3 --pn-cpus 2 --pn-mem-mb 2048") != 0)
        return -1;
    for (int i = 0; i < NREP; i++) {
        if (!listen_of(i + 1, urls[i], sizeof urls[i])) {
            fprintf(stderr, "%s/rm-%d.conf has no [metrics] listen\n", e2e_dir(), i + 1);
            return -1;
        }
    }
    ready = true;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    e2e_jobs_stop();
    e2e_cluster_down();
    return 0;
}

static void skip_unless_ready(void)
{
    if (!ready) {
        fprintf(stderr, "skipped: needs paddock-jm, curl and " BROWSER "\n");
        skip();
    }
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The integer value of attribute `name` of the page's <main id="app">, -1 when absent. */
static long app_attr(const char *dom, const char *name)
{
    const char *m = strstr(dom, "<main id=\"app\"");
    if (m == NULL)
        return -1;
    const char *end = strchr(m, '>');
    char pat[64];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *a = strstr(m, pat);
    if (a == NULL || a > end)
        return -1;
    return strtol(a + strlen(pat), NULL, 10);
}

/* The index of the leader among urls, after at most 20 s; -1 if none. */
static int find_leader(json_t **doc)
{
    for (int tries = 0; tries < 100; tries++) {
        for (int i = 0; i < NREP; i++) {
            int code = 0;
            json_t *d = get_json(urls[i], "/cluster.json", &code);
            if (code == 200 && d != NULL) {
                *doc = d;
                return i;
            }
            json_decref(d);
        }
        usleep(200 * 1000);
    }
    return -1;
}

static char *browser(const char *args, const char *url)
{
    char cmd[4096], out[512];
    snprintf(out, sizeof out, "%s/../dom.html", e2e_dir());
    snprintf(cmd, sizeof cmd,
             "timeout 90 " BROWSER " --headless --no-sandbox --disable-gpu --disable-quic "
             "--no-first-run --disable-background-networking --disable-component-update "
             "--disable-sync --hide-scrollbars --user-data-dir='%s/../profile' %s '%s' "
             ">'%s' 2>/dev/null",
             e2e_dir(), args, url, out);
    if (system(cmd) != 0)
        return NULL;
    return slurp(out);
}

static void test_leader_serves_followers_point_at_it(void **state)
{
    (void)state;
    skip_unless_ready();
    json_t *doc = NULL;
    int li = find_leader(&doc);
    assert_true(li >= 0);
    json_t *me = json_object_get(doc, "replica");
    json_int_t lid = json_integer_value(json_object_get(me, "id"));
    assert_string_equal(str(me, "role"), "leader");
    assert_int_equal(json_array_size(json_object_get(doc, "replicas")), NREP);
    assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 3);
    json_decref(doc);
    int followers = 0;
    for (int i = 0; i < NREP; i++) {
        if (i == li)
            continue;
        int code = 0;
        json_t *d = get_json(urls[i], "/cluster.json", &code);
        assert_int_equal(code, 503);
        assert_non_null(d);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "leader"), "id")),
                         lid);
        json_decref(d);
        char url[1024], *body = NULL, want[64];
        snprintf(url, sizeof url, "%s/", urls[i]);
        assert_int_equal(get(url, &body), 200);
        assert_non_null(body);
        assert_non_null(strstr(body, "data-role=\"follower\""));
        snprintf(want, sizeof want, "data-leader=\"%lld\"", (long long)lid);
        assert_non_null(strstr(body, want));
        free(body);
        followers++;
    }
    assert_int_equal(followers, NREP - 1);
    char url[1024];
    snprintf(url, sizeof url, "%s/nope", urls[li]);
    assert_int_equal(get(url, NULL), 404);
}

static void test_page_in_chromium_during_a_job(void **state)
{
    (void)state;
    skip_unless_ready();
    json_t *doc = NULL;
    int li = find_leader(&doc);
    assert_true(li >= 0);
    json_decref(doc);
    struct e2e_run r;
    e2e_paddock(&r, 30, "submit '%s/tests/page/page-job.json'", e2e_src());
    if (r.status != 0)
        fprintf(stderr, "submit: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    char job[64];
    snprintf(job, sizeof job, "%.*s", (int)strcspn(r.out, "\n"), r.out);
    e2e_run_close(&r);

    /* until the leader's document shows the job active, part done, with tasks running on the
     * nodes (the first of three waves of map tasks has ended) */
    bool running = false;
    for (int tries = 0; tries < 150 && !running; tries++) {
        int code = 0;
        doc = get_json(urls[li], "/cluster.json", &code);
        size_t i;
        json_t *v;
        long tasks = 0;
        json_array_foreach(json_object_get(doc, "nodes"), i, v)
        {
            tasks += (long)json_integer_value(json_object_get(v, "running_regular")) +
                     (long)json_integer_value(json_object_get(v, "running_opportunistic"));
        }
        bool active = false;
        json_array_foreach(json_object_get(doc, "jobs"), i, v)
        {
            if (strcmp(str(v, "job_id"), job) == 0 && strcmp(str(v, "state"), "active") == 0 &&
                json_real_value(json_object_get(v, "progress")) > 0)
                active = true;
        }
        running = code == 200 && active && tasks > 0;
        json_decref(doc);
        if (!running)
            usleep(200 * 1000);
    }
    assert_true(running);

    /* the screenshot first, while the most tasks run */
    char shot[1024], args[1200], url[1024];
    const char *env = getenv("PADDOCK_PAGE_SCREENSHOT");
    if (env != NULL && env[0] != '\0')
        snprintf(shot, sizeof shot, "%s", env);
    else if (getcwd(shot, sizeof shot - 32) != NULL)
        strcat(shot, "/cluster-page.png");
    unlink(shot);
    snprintf(url, sizeof url, "%s/", urls[li]);
    snprintf(args, sizeof args,
             "--window-size=1400,1000 --virtual-time-budget=2500 --screenshot='%s'", shot);
    free(browser(args, url));
    FILE *png = fopen(shot, "rb");
    assert_non_null(png);
    unsigned char magic[8] = {0};
    assert_int_equal(fread(magic, 1, 8, png), 8);
    fseek(png, 0, SEEK_END);
    long size = ftell(png);
    fclose(png);
    assert_memory_equal(magic, "\x89PNG\r\n\x1a\n", 8);
    assert_true(size > 20000); /* a drawn page, not a blank one */
    fprintf(stderr, "screenshot: %s (%ld bytes)\n", shot, size);

    /* the DOM after 4 s of the page's own polling */
    char *dom = browser("--virtual-time-budget=4000 --dump-dom", url);
    assert_non_null(dom);
    int code = 0;
    doc = get_json(urls[li], "/cluster.json", &code);
    assert_int_equal(code, 200);
    long updates = app_attr(dom, "data-updates");
    fprintf(stderr, "page: %ld updates, %ld nodes, %ld jobs, %ld heatmap cells\n", updates,
            app_attr(dom, "data-nodes"), app_attr(dom, "data-jobs"), app_attr(dom, "data-cells"));
    assert_true(updates >= 2); /* redrawn live, without a reload */
    assert_non_null(strstr(dom, "data-role=\"leader\""));
    /* nodes: one card each */
    size_t nnodes = json_array_size(json_object_get(doc, "nodes"));
    assert_int_equal(nnodes, 3);
    assert_int_equal(count(dom, "data-node=\""), (int)nnodes);
    assert_int_equal(app_attr(dom, "data-nodes"), (long)nnodes);
    /* jobs: one row each, ours active */
    size_t njobs = json_array_size(json_object_get(doc, "jobs"));
    assert_true(njobs >= 1);
    assert_int_equal(count(dom, "data-job=\""), (int)njobs);
    assert_int_equal(app_attr(dom, "data-jobs"), (long)njobs);
    /* ours active; the document was taken after the page's, so a job still active in it was
     * active on the page too, and one that ended meanwhile (a slow browser under load) is shown
     * active or as it ended */
    const char *now_state = "";
    size_t ji;
    json_t *jv;
    json_array_foreach(json_object_get(doc, "jobs"), ji, jv)
    {
        if (strcmp(str(jv, "job_id"), job) == 0)
            now_state = str(jv, "state");
    }
    char want[128], ended[160];
    snprintf(want, sizeof want, "data-job=\"%s\" data-state=\"active\"", job);
    snprintf(ended, sizeof ended, "data-job=\"%s\" data-state=\"%s\"", job, now_state);
    if (strcmp(now_state, "active") == 0 || strstr(dom, ended) == NULL)
        assert_non_null(strstr(dom, want));
    /* heatmaps: a cell per matrix cell of every node */
    size_t i, cells = 0;
    json_t *v;
    json_array_foreach(json_object_get(doc, "nodes"), i, v)
    {
        cells += json_array_size(json_object_get(json_object_get(v, "matrix"), "cells_ms"));
    }
    assert_true(cells >= 3 * 4); /* every PN sends a matrix */
    assert_int_equal(count(dom, "class=\"cell\""), (int)cells);
    assert_int_equal(app_attr(dom, "data-cells"), (long)cells);
    /* tokens: the virtual cluster and the job's grant */
    assert_non_null(strstr(dom, "data-vc=\"default\""));
    json_decref(doc);
    free(dom);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader_serves_followers_point_at_it),
        cmocka_unit_test(test_page_in_chromium_during_a_job),
    };
    int rc = cmocka_run_group_tests_name("page_cluster", tests, group_setup, group_teardown);
    if (!ready && rc == 0)
        return 77;
    return rc;
}
