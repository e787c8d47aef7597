/* test_jmd.c - paddock-jm on a real local cluster (`paddock cluster up`, 3 RM replicas, 3 PNs),
 * each test with its own cluster in a temporary directory:
 *  - a DAG with diamonds, stage barriers and explicit edges where every task records when it
 *    started and ended, and no task starts before all its parents ended;
 *  - a task that fails twice and then succeeds (the job succeeds, the second attempt runs on
 *    another node), a task that always fails (the job fails naming the task and why), and a
 *    spec the JM refuses (state failed with the reason);
 *  - a PN killed with SIGKILL while it runs tasks of the job, which still succeeds;
 *  - every RM replica killed mid-job: the JM goes on with the view and tokens it has;
 *  - a job that got fewer tokens than it asked for gets the rest once another job frees them.
 * The JM is started by the test per docs/job-directory.md and checked through its job
 * directory (state.json, report.json, journal). */
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jmd_fixture.h"

static struct jmf g_f;

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 3 --pn 3 --pn-cpus 2");
}

static int teardown(void **state)
{
    (void)state;
    jmf_down(&g_f);
    return 0;
}

/* A task that records "NODE START_NS" in WORK/ID.start, sleeps, then WORK/ID.end (atomically). */
static json_t *marked_task(const char *id, const char *stage, double sleep_s)
{
    char sh[4096];
    snprintf(sh, sizeof sh,
             "echo \"$PADDOCK_NODE $(date +%%s%%N)\" > %s/%s.start.tmp && mv %s/%s.start.tmp "
             "%s/%s.start; sleep %.3f; date +%%s%%N > %s/%s.end.tmp && mv %s/%s.end.tmp %s/%s.end",
             g_f.work, id, g_f.work, id, g_f.work, id, sleep_s, g_f.work, id, g_f.work, id,
             g_f.work, id);
    json_t *t = json_pack("{s:s, s:[s, s, s], s:f, s:f}", "id", id, "cmd", "sh", "-c", sh,
                          "runtime_s", sleep_s + 0.05, "cpu", 0.5);
    if (stage)
        json_object_set_new(t, "stage", json_string(stage));
    return t;
}

/* Appends n marked tasks PREFIX-0 .. PREFIX-(n-1) of stage `stage`, each sleeping sleep_s. */
static void add_marked(json_t *tasks, const char *prefix, const char *stage, int n, double sleep_s)
{
    char id[64];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "%s-%d", prefix, i);
        json_array_append_new(tasks, marked_task(id, stage, sleep_s));
    }
}

/* Gives every task of `tasks` a whole token's cpu (1.0): the JM packs smaller tasks several to
 * a token (jm/grain.h), and the token tests count one task per token. */
static void whole_tokens(json_t *tasks)
{
    for (size_t i = 0; i < json_array_size(tasks); i++)
        json_object_set_new(json_array_get(tasks, i), "cpu", json_real(1.0));
}

/* A job spec named `name` with `tasks` (stolen) and no stages or deadline. */
static json_t *plain_job(const char *name, json_t *tasks)
{
    return json_pack("{s:i, s:s, s:o}", "version", 1, "name", name, "tasks", tasks);
}

/* The node a marked task started on (the first word of WORK/ID.start); false until it has. */
static bool started_on(const char *id, char *node, size_t cap)
{
    char name[80], buf[256];
    snprintf(name, sizeof name, "%s.start", id);
    if (!jmf_mark(&g_f, name, buf, sizeof buf))
        return false;
    char *sp = strchr(buf, ' ');
    if (sp)
        *sp = '\0';
    snprintf(node, cap, "%.63s", buf);
    return true;
}

static long long mark_ns(const char *id, const char *kind)
{
    char name[256], buf[256];
    snprintf(name, sizeof name, "%s.%s", id, kind);
    if (!jmf_mark(&g_f, name, buf, sizeof buf))
        return -1;
    const char *p = strrchr(buf, ' ');
    return atoll(p ? p + 1 : buf);
}

/* `paddock node show NAME --json` on the fixture's cluster (NULL when it fails). */
static json_t *node_show(const char *name)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/paddock node show %s --cluster %s --json 2>/dev/null", g_f.bin,
             name, g_f.cluster);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    json_t *doc = json_loadf(p, JSON_DISABLE_EOF_CHECK, NULL);
    pclose(p);
    return doc;
}

static void assert_final(const char *want_state, int want_rc, int rc)
{
    json_t *st = jmf_job_file(&g_f, "state.json");
    const char *s = st ? json_string_value(json_object_get(st, "state")) : NULL;
    if (rc != want_rc || !s || strcmp(s, want_state) != 0) {
        fprintf(stderr, "JM exit %d (want %d), state %s (want %s)\n", rc, want_rc, s ? s : "(none)",
                want_state);
        jmf_dump(&g_f);
    }
    assert_int_equal(rc, want_rc);
    assert_non_null(s);
    assert_string_equal(s, want_state);
    json_decref(st);
}

/* ---- DAG with diamonds and barriers ---- */

struct edge {
    const char *child, *parent;
};

static void test_dag_order(void **state)
{
    (void)state;
    json_t *tasks = json_array();
    const char *src[] = {"src-0", "src-1", "src-2"};
    for (int i = 0; i < 3; i++)
        json_array_append_new(tasks, marked_task(src[i], "src", 0.2));
    json_array_append_new(tasks, marked_task("left-0", "left", 0.3));
    json_array_append_new(tasks, marked_task("left-1", "left", 0.1));
    json_array_append_new(tasks, marked_task("right-0", "right", 0.1));
    json_t *r1 = marked_task("right-1", "right", 0.1);
    json_object_set_new(r1, "after", json_pack("[s]", "right-0"));
    json_array_append_new(tasks, r1);
    json_array_append_new(tasks, marked_task("join-0", "join", 0.1));
    json_t *fin = marked_task("final", NULL, 0.05);
    json_object_set_new(fin, "after", json_pack("[s, s]", "join-0", "left-1"));
    json_array_append_new(tasks, fin);
    json_t *spec = json_pack(
        "{s:i, s:s, s:[{s:s}, {s:s, s:[s]}, {s:s, s:[s]}, {s:s, s:[s, s]}], s:o}", "version", 1,
        "name", "jmd-dag-order", "stages", "name", "src", "name", "left", "after", "src", "name",
        "right", "after", "src", "name", "join", "after", "left", "right", "tasks", tasks);
    assert_non_null(spec);
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    assert_final("succeeded", 0, rc);

    /* Every parent (explicit edges and every task of a barrier stage) ended before the child
       started. */
    static const struct edge edges[] = {
        {"left-0", "src-0"},  {"left-0", "src-1"},   {"left-0", "src-2"},    {"left-1", "src-0"},
        {"left-1", "src-1"},  {"left-1", "src-2"},   {"right-0", "src-0"},   {"right-0", "src-1"},
        {"right-0", "src-2"}, {"right-1", "src-2"},  {"right-1", "right-0"}, {"join-0", "left-0"},
        {"join-0", "left-1"}, {"join-0", "right-0"}, {"join-0", "right-1"},  {"final", "join-0"},
        {"final", "left-1"},
    };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        long long ps = mark_ns(edges[i].parent, "end"), cs = mark_ns(edges[i].child, "start");
        if (ps < 0 || cs < 0 || cs < ps)
            fprintf(stderr, "%s started at %lld, parent %s ended at %lld\n", edges[i].child, cs,
                    edges[i].parent, ps);
        assert_true(ps > 0 && cs > 0);
        assert_true(cs >= ps);
    }
    /* The sources ran in parallel (without a deadline the job asks for its widest stage). */
    long long s0 = mark_ns("src-0", "start"), e1 = mark_ns("src-1", "end");
    long long s1 = mark_ns("src-1", "start"), e0 = mark_ns("src-0", "end");
    assert_true(s0 < e1 && s1 < e0);

    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(rep);
    assert_int_equal(json_integer_value(json_object_get(rep, "tasks_succeeded")), 9);
    assert_int_equal(json_array_size(json_object_get(rep, "attempts")), 9);
    assert_true(json_is_null(json_object_get(rep, "deadline_met"))); /* no deadline */
    assert_true(json_array_size(json_object_get(rep, "tokens")) >= 1);
    assert_true(json_array_size(json_object_get(rep, "progress")) >= 1);
    json_decref(rep);
}

/* ---- retries ---- */

static void test_retries(void **state)
{
    (void)state;
    /* "flaky" fails on its first two runs (a counter in the work directory), then succeeds. */
    char sh[1024];
    snprintf(sh, sizeof sh,
             "n=$(cat %s/flaky.count 2>/dev/null || echo 0); n=$((n+1)); echo $n > "
             "%s/flaky.count; [ $n -ge 3 ] || exit 7",
             g_f.work, g_f.work);
    json_t *spec = json_pack("{s:i, s:s, s:[{s:s, s:[s, s, s]}, {s:s, s:[s], s:[s]}]}", "version",
                             1, "name", "jmd-flaky", "tasks", "id", "flaky", "cmd", "sh", "-c", sh,
                             "id", "after-flaky", "cmd", "true", "after", "flaky");
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    assert_final("succeeded", 0, rc);
    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(rep);
    json_t *att = json_object_get(rep, "attempts");
    const char *nodes[3] = {NULL, NULL, NULL};
    int failed = 0, ok = 0;
    for (size_t i = 0; i < json_array_size(att); i++) {
        json_t *a = json_array_get(att, i);
        if (strcmp(json_string_value(json_object_get(a, "task")), "flaky") != 0)
            continue;
        const char *st = json_string_value(json_object_get(a, "state"));
        json_int_t n = json_integer_value(json_object_get(a, "attempt"));
        if (n >= 1 && n <= 3)
            nodes[n - 1] = json_string_value(json_object_get(a, "node"));
        if (strcmp(st, "failed") == 0) {
            failed++;
            assert_int_equal(json_integer_value(json_object_get(a, "exit")), 7);
        } else if (strcmp(st, "succeeded") == 0) {
            ok++;
        }
    }
    assert_int_equal(failed, 2);
    assert_int_equal(ok, 1);
    assert_non_null(nodes[0]);
    assert_non_null(nodes[1]);
    assert_string_not_equal(nodes[0], nodes[1]); /* a retry prefers another node */
    /* The JM reported the outcomes per node with its lease renewals: the RM counts the failure
       on the node of the first attempt, and its Psucc is below what its successes alone give
       (Apollo §3.3). */
    json_t *nd = node_show(nodes[0]);
    json_int_t nfailed = json_integer_value(json_object_get(nd, "tasks_failed"));
    json_int_t nok = json_integer_value(json_object_get(nd, "tasks_ok"));
    double psucc = json_number_value(json_object_get(nd, "psucc"));
    fprintf(stderr, "%s: %lld failed, %lld ok, psucc %.3f\n", nodes[0], (long long)nfailed,
            (long long)nok, psucc);
    json_decref(nd);
    assert_true(nfailed >= 1);
    assert_true(psucc > 0 && psucc < (double)(nok + 1) / (double)(nok + 2));
    json_decref(rep);

    /* A task that always fails: the job fails after 3 attempts and says which task and why. */
    assert_int_equal(jmf_new_job(&g_f, "job2"), 0);
    spec = json_pack("{s:i, s:s, s:[{s:s, s:[s, s, s]}, {s:s, s:[s]}]}", "version", 1, "name",
                     "jmd-doomed", "tasks", "id", "doomed", "cmd", "sh", "-c", "exit 3", "id",
                     "fine", "cmd", "true");
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    rc = jmf_wait_jm(&g_f, 60);
    assert_final("failed", 1, rc);
    json_t *st = jmf_job_file(&g_f, "state.json");
    const char *reason = json_string_value(json_object_get(st, "reason"));
    assert_non_null(reason);
    assert_non_null(strstr(reason, "\"doomed\""));
    assert_non_null(strstr(reason, "3 times"));
    assert_int_equal(json_integer_value(json_object_get(st, "attempts_failed")), 3);
    /* every message from the nodes and the RM decoded: nothing dropped, and both counted */
    assert_true(json_is_integer(json_object_get(st, "pn_dropped")));
    assert_int_equal(json_integer_value(json_object_get(st, "pn_dropped")), 0);
    assert_int_equal(json_integer_value(json_object_get(st, "rm_dropped")), 0);
    json_decref(st);

    /* A task its PN kills for going over its memory request fails the job at once: the same
       request would be killed again, so it is not retried unchanged. */
    assert_int_equal(jmf_new_job(&g_f, "job-mem"), 0);
    spec = json_pack("{s:i, s:s, s:[{s:s, s:i, s:[s, s, s]}]}", "version", 1, "name", "jmd-hungry",
                     "tasks", "id", "hungry", "mem_mb", 8, "cmd", "python3", "-c",
                     "import time; b = bytearray(256 << 20); time.sleep(30)");
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    rc = jmf_wait_jm(&g_f, 60);
    assert_final("failed", 1, rc);
    st = jmf_job_file(&g_f, "state.json");
    reason = json_string_value(json_object_get(st, "reason"));
    assert_non_null(reason);
    fprintf(stderr, "over memory: %s\n", reason);
    assert_non_null(strstr(reason, "\"hungry\""));
    assert_non_null(strstr(reason, "memory request"));
    assert_non_null(strstr(reason, "mem_mb"));
    assert_int_equal(json_integer_value(json_object_get(st, "attempts_failed")), 1);
    json_decref(st);

    /* A spec the JM refuses (a cycle): exit 1, state failed, the reason names the cycle. */
    assert_int_equal(jmf_new_job(&g_f, "job3"), 0);
    spec =
        json_pack("{s:i, s:[{s:s, s:[s], s:[s]}, {s:s, s:[s], s:[s]}]}", "version", 1, "tasks",
                  "id", "a", "cmd", "true", "after", "b", "id", "b", "cmd", "true", "after", "a");
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    rc = jmf_wait_jm(&g_f, 30);
    assert_final("failed", 1, rc);
    st = jmf_job_file(&g_f, "state.json");
    reason = json_string_value(json_object_get(st, "reason"));
    assert_non_null(reason);
    assert_non_null(strstr(reason, "cycle"));
    json_decref(st);
}

/* ---- a PN killed mid-job ---- */

static void test_pn_killed(void **state)
{
    (void)state;
    json_t *tasks = json_array();
    add_marked(tasks, "work", "work", 6, 2.0);
    add_marked(tasks, "tail", "tail", 3, 0.2);
    json_t *spec =
        json_pack("{s:i, s:s, s:[{s:s}, {s:s, s:[s]}], s:o}", "version", 1, "name", "jmd-pn-killed",
                  "stages", "name", "work", "name", "tail", "after", "work", "tasks", tasks);
    assert_int_equal(jmf_start_jm(&g_f, spec, "--node-timeout 6000"), 0);

    /* Wait until some task runs, then SIGKILL the PN it runs on. */
    char victim[64] = "";
    for (int i = 0; i < 400 && !victim[0]; i++) {
        for (int t = 0; t < 6 && !victim[0]; t++) {
            char id[32];
            snprintf(id, sizeof id, "work-%d", t);
            started_on(id, victim, sizeof victim);
        }
        if (!victim[0])
            jmf_pause(50);
    }
    assert_true(victim[0] != '\0');
    long pid = jmf_daemon_pid(&g_f, victim);
    assert_true(pid > 0);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);

    int rc = jmf_wait_jm(&g_f, 90);
    assert_final("succeeded", 0, rc);
    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(rep);
    assert_int_equal(json_integer_value(json_object_get(rep, "tasks_succeeded")), 9);
    json_t *att = json_object_get(rep, "attempts");
    int lost = 0;
    for (size_t i = 0; i < json_array_size(att); i++) {
        json_t *a = json_array_get(att, i);
        const char *st = json_string_value(json_object_get(a, "state"));
        const char *node = json_string_value(json_object_get(a, "node"));
        if (strcmp(st, "lost") == 0) {
            assert_string_equal(node, victim);
            lost++;
        }
        if (strcmp(st, "succeeded") == 0) /* the dead node finished nothing */
            assert_string_not_equal(node, victim);
    }
    assert_true(lost >= 1);
    json_decref(rep);
}

/* ---- every RM replica killed mid-job ---- */

static void test_rm_gone(void **state)
{
    (void)state;
    json_t *tasks = json_array();
    add_marked(tasks, "a", "a", 4, 1.0);
    add_marked(tasks, "b", "b", 4, 0.2);
    json_t *spec =
        json_pack("{s:i, s:s, s:[{s:s}, {s:s, s:[s]}], s:o}", "version", 1, "name", "jmd-rm-gone",
                  "stages", "name", "a", "name", "b", "after", "a", "tasks", tasks);
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    char buf[256];
    int started = 0;
    for (int i = 0; i < 400 && !started; i++) {
        started = jmf_mark(&g_f, "a-0.start", buf, sizeof buf);
        if (!started)
            jmf_pause(50);
    }
    assert_true(started);
    /* The JM keeps scheduling on the view and tokens it has (Apollo §3.1). */
    const char *rms[] = {"rm-1", "rm-2", "rm-3"};
    for (int i = 0; i < 3; i++) {
        long pid = jmf_daemon_pid(&g_f, rms[i]);
        assert_true(pid > 0);
        assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    }
    int rc = jmf_wait_jm(&g_f, 60);
    assert_final("succeeded", 0, rc);
    for (int i = 0; i < 4; i++) {
        char id[32];
        snprintf(id, sizeof id, "b-%d.end", i);
        assert_true(jmf_mark(&g_f, id, buf, sizeof buf));
    }
}

/* ---- tokens asked again once other jobs free them ---- */

static int setup_small(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 3 --pn 3 --pn-cpus 2 --tokens 4");
}

static void test_tokens_refilled(void **state)
{
    (void)state;
    /* "hog" holds 3 of the 4 tokens for about 2 s. */
    struct jmf hog = g_f;
    json_t *tasks = json_array();
    add_marked(tasks, "h", "hog", 3, 2.0);
    whole_tokens(tasks);
    assert_int_equal(jmf_new_job(&hog, "hog"), 0);
    assert_int_equal(jmf_start_jm(&hog, plain_job("jmd-hog", tasks), ""), 0);
    char buf[256];
    bool started = false;
    for (int i = 0; i < 400 && !started; i++) {
        started = jmf_mark(&g_f, "h-0.start", buf, sizeof buf);
        if (!started)
            jmf_pause(50);
    }
    /* "wide" wants 4 tokens (4 parallel tasks of 3 s). Neither job has a deadline: the RM's
       arbiter (MinEDF-WC) shares the virtual cluster between them in proportion to their
       weights, so wide gets 2 at once (hog's spare third is reclaimed: hog downgrades a task)
       and all 4 once hog is done. */
    tasks = json_array();
    add_marked(tasks, "w", "wide", 4, 3.0);
    whole_tokens(tasks);
    assert_int_equal(jmf_new_job(&g_f, "wide"), 0);
    assert_int_equal(jmf_start_jm(&g_f, plain_job("jmd-wide", tasks), "--opp-factor 0"), 0);
    int hrc = jmf_wait_jm(&hog, 60);
    if (hrc != 0)
        kill(hog.jm, SIGKILL);
    assert_true(started);
    assert_int_equal(hrc, 0);
    int rc = jmf_wait_jm(&g_f, 60);
    assert_final("succeeded", 0, rc);
    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(rep);
    int first = -1, most = 0;
    json_t *toks = json_object_get(rep, "tokens");
    for (size_t i = 0; i < json_array_size(toks); i++) {
        int g = (int)json_integer_value(json_object_get(json_array_get(toks, i), "granted"));
        if (first < 0 && g > 0)
            first = g;
        if (g > most)
            most = g;
    }
    json_t *hst = jmf_job_file(&hog, "state.json");
    fprintf(stderr, "wide: first grant %d, later %d; hog downgraded %lld\n", first, most,
            (long long)json_integer_value(json_object_get(hst, "downgrades")));
    json_decref(hst);
    /* half of the virtual cluster (3 if hog was already asking for its last task only) */
    assert_true(first >= 2 && first <= 3);
    assert_int_equal(most, 4); /* and all four once hog released its tokens */
    json_decref(rep);
}

/* A job without a deadline asks for its width, and gives tokens back in its tail: once its
 * unfinished tasks are at most half its target it asks for that many. Here "tail" (three 0.3 s
 * tasks and one of 8 s, width 4) holds all 4 tokens of the virtual cluster, then 1 while its long
 * task runs; "next", wanting 3, gets them and finishes before "tail" does. */
static void test_tail_gives_back(void **state)
{
    (void)state;
    struct jmf tail = g_f;
    json_t *tasks = json_array();
    char buf[256];
    add_marked(tasks, "s", "short", 3, 0.3);
    json_array_append_new(tasks, marked_task("long", "long", 8.0));
    whole_tokens(tasks);
    assert_int_equal(jmf_new_job(&tail, "tail"), 0);
    assert_int_equal(jmf_start_jm(&tail, plain_job("jmd-tail", tasks), "--opp-factor 0"), 0);
    /* Until the short tasks are done and the tail's target is down to 1. */
    int target = -1;
    for (int i = 0; i < 200 && target != 1; i++) {
        json_t *st = jmf_job_file(&tail, "state.json");
        if (st && jmf_mark(&g_f, "s-0.end", buf, sizeof buf) &&
            jmf_mark(&g_f, "s-1.end", buf, sizeof buf) &&
            jmf_mark(&g_f, "s-2.end", buf, sizeof buf))
            target = (int)json_integer_value(json_object_get(st, "tokens_target"));
        json_decref(st);
        if (target != 1)
            jmf_pause(50);
    }
    assert_int_equal(target, 1);
    assert_false(jmf_mark(&g_f, "long.end", buf, sizeof buf));

    tasks = json_array();
    add_marked(tasks, "n", "next", 3, 0.5);
    whole_tokens(tasks);
    assert_int_equal(jmf_new_job(&g_f, "next"), 0);
    assert_int_equal(jmf_start_jm(&g_f, plain_job("jmd-next", tasks), "--opp-factor 0"), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    bool tail_running = !jmf_mark(&g_f, "long.end", buf, sizeof buf);
    assert_final("succeeded", 0, rc);
    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(rep);
    int most = 0;
    json_t *toks = json_object_get(rep, "tokens");
    for (size_t i = 0; i < json_array_size(toks); i++) {
        int g = (int)json_integer_value(json_object_get(json_array_get(toks, i), "granted"));
        if (g > most)
            most = g;
    }
    json_decref(rep);
    int trc = jmf_wait_jm(&tail, 60);
    if (trc != 0)
        kill(tail.jm, SIGKILL);
    fprintf(stderr, "next: granted up to %d while tail still ran: %s\n", most,
            tail_running ? "yes" : "no");
    assert_int_equal(trc, 0);
    assert_int_equal(most, 3); /* the three tokens tail gave back */
    assert_true(tail_running);
}

/* A PN told to drain (SIGUSR1) finishes its tasks but takes no new ones: it says so in its
 * heartbeats, the RM publishes it as draining, and a create it still receives is refused with
 * ERR_UNAVAILABLE, which re-places the task without charging it. A job with --max-attempts 1
 * running beside the drain must not fail on it. */
static void test_draining_node(void **state)
{
    (void)state;
    struct jmf hold = g_f;
    json_t *tasks = json_array();
    add_marked(tasks, "hold", "hold", 3, 5.0);
    assert_int_equal(jmf_new_job(&hold, "hold"), 0);
    assert_int_equal(jmf_start_jm(&hold, plain_job("jmd-hold", tasks), ""), 0);
    char victim[64] = "";
    for (int i = 0; i < 400 && !started_on("hold-0", victim, sizeof victim); i++)
        jmf_pause(50);
    assert_true(victim[0] != '\0');
    long pid = jmf_daemon_pid(&g_f, victim);
    assert_true(pid > 0);
    assert_int_equal(kill((pid_t)pid, SIGUSR1), 0);

    tasks = json_array();
    add_marked(tasks, "b", "many", 24, 0.2);
    assert_int_equal(jmf_new_job(&g_f, "many"), 0);
    assert_int_equal(jmf_start_jm(&g_f, plain_job("jmd-many", tasks), "--max-attempts 1"), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    assert_final("succeeded", 0, rc);
    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(rep);
    int failed = 0, refused = 0, on_victim = 0;
    json_t *att = json_object_get(rep, "attempts");
    for (size_t i = 0; i < json_array_size(att); i++) {
        json_t *a = json_array_get(att, i);
        const char *st = json_string_value(json_object_get(a, "state"));
        const char *why = json_string_value(json_object_get(a, "reason"));
        const char *node = json_string_value(json_object_get(a, "node"));
        failed += st && strcmp(st, "failed") == 0;
        refused += why && strstr(why, "draining") != NULL;
        on_victim += st && strcmp(st, "succeeded") == 0 && node && strcmp(node, victim) == 0;
    }
    json_decref(rep);
    /* The RM learned it from the PN's heartbeats: `paddock node show` says draining (the
       node still runs the first job's task). */
    char state_now[64] = "";
    for (int i = 0; i < 100 && strcmp(state_now, "draining") != 0; i++) {
        json_t *doc = node_show(victim);
        const char *sv = json_string_value(json_object_get(doc, "state"));
        snprintf(state_now, sizeof state_now, "%s", sv ? sv : "");
        json_decref(doc);
        if (strcmp(state_now, "draining") != 0)
            jmf_pause(50);
    }
    assert_string_equal(state_now, "draining");
    /* the tasks already running on the draining node finish */
    int hrc = jmf_wait_jm(&hold, 60);
    if (hrc != 0)
        kill(hold.jm, SIGKILL);
    fprintf(stderr, "drained %s: %d refused creates re-placed, %d failed, %d ran there\n", victim,
            refused, failed, on_victim);
    assert_int_equal(hrc, 0);
    assert_int_equal(failed, 0);
    assert_int_equal(on_victim, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dag_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pn_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rm_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokens_refilled, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_tail_gives_back, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_draining_node, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
