/* test_jmd_spec.c - the JM daemon's extra attempts (jm/daemon/jmd_spec.c) in process: a jmd_t set
 * up by jmd_sched_init on a small job and a view of three nodes (their endpoints never answer: the
 * commands go nowhere), fed TASK_STATUS messages as the nodes would send them. Checks:
 *   - a straggler gets a copy on another node; the copy finishing first wins, the original is
 *     cancelled and recorded so, the task succeeds once, and the original's late success is
 *     ignored;
 *   - the original failing while its copy runs: the copy goes on and its success is the task's;
 *   - a task with "speculate": false is never copied;
 *   - a queued task far behind its placement gets a duplicate; the one that starts first keeps
 *     the task, the other is discarded;
 *   - a producer with a node-local output, its node down and a dependent still waiting: it is
 *     made ready again, the dependent waits, no failure is charged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "jm/daemon/jmd.h"
#include "jm/view_proto.h"

#define NODES 3

struct h {
    jmd_t j;
    char dir[64];
    uint64_t seq[NODES];
};

static const char *const SPEC =
    "{\"version\": 1, \"name\": \"h\", \"tasks\": ["
    "{\"id\": \"m0\", \"stage\": \"m\", \"cmd\": [\"true\"]},"
    "{\"id\": \"m1\", \"stage\": \"m\", \"cmd\": [\"true\"]},"
    "{\"id\": \"m2\", \"stage\": \"m\", \"cmd\": [\"true\"]},"
    "{\"id\": \"m3\", \"stage\": \"m\", \"cmd\": [\"true\"]},"
    "{\"id\": \"m4\", \"stage\": \"m\", \"cmd\": [\"true\"]},"
    "{\"id\": \"n0\", \"stage\": \"n\", \"speculate\": false, \"cmd\": [\"true\"]},"
    "{\"id\": \"n1\", \"stage\": \"n\", \"speculate\": false, \"cmd\": [\"true\"]},"
    "{\"id\": \"n2\", \"stage\": \"n\", \"speculate\": false, \"cmd\": [\"true\"]},"
    "{\"id\": \"n3\", \"stage\": \"n\", \"speculate\": false, \"cmd\": [\"true\"]},"
    "{\"id\": \"p\", \"cmd\": [\"true\"], \"outputs\": [{\"path\": \"o\", \"local\": true}]},"
    "{\"id\": \"c\", \"cmd\": [\"true\"], \"after\": [\"p\", \"m0\", \"m1\", \"m2\", \"m3\", "
    "\"m4\", \"n0\", \"n1\", \"n2\", \"n3\"]}]}";

static void view_node_set(struct h *h, int n, int up)
{
    char name[16], ep[64];
    snprintf(name, sizeof name, "pn-%d", n + 1);
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", 1 + n); /* nobody listens there */
    proto_view_node_t v;
    memset(&v, 0, sizeof v);
    v.name = name;
    v.rack = "r";
    v.endpoint = ep;
    v.state = up ? PROTO_NODE_UP : PROTO_NODE_DOWN;
    v.cpu = 8;
    v.mem_mb = 16384;
    v.boot_id = 1;
    v.seq = up ? ++h->seq[n] : h->seq[n];
    assert_true(view_update_from_proto(h->j.view, &v, jmd_now(&h->j)) >= 0);
    jmd_sched_view_changed(&h->j);
}

static int setup(void **state)
{
    struct h *h = calloc(1, sizeof *h);
    assert_non_null(h);
    snprintf(h->dir, sizeof h->dir, "/tmp/paddock-jmdspec-XXXXXX");
    assert_non_null(mkdtemp(h->dir));
    jmd_t *j = &h->j;
    jmd_opts_default(&j->o);
    j->o.job_dir = h->dir;
    j->o.job_id = "j-1";
    j->journal_fd = -1;
    assert_int_equal(uv_loop_init(&j->loop), 0);
    j->t0_mono = jmd_now(j);
    j->t0_wall = clock_wall_ms();
    char msg[256];
    assert_int_equal(spec_parse(SPEC, strlen(SPEC), NULL, &j->spec, msg, sizeof msg), 0);
    assert_int_equal(jmd_sched_init(j, msg, sizeof msg), 0);
    for (int n = 0; n < NODES; n++)
        view_node_set(h, n, 1);
    j->view_whole = 1;
    jmd_sched_tokens(j, 20);
    jmd_sched_round(j);
    *state = h;
    return 0;
}

static void close_cb(uv_handle_t *hd, void *arg)
{
    (void)arg;
    if (!uv_is_closing(hd))
        uv_close(hd, NULL);
}

static int teardown(void **state)
{
    struct h *h = *state;
    jmd_t *j = &h->j;
    jmd_pn_close(j);
    jmd_rm_close(j);
    uv_walk(&j->loop, close_cb, NULL);
    uv_run(&j->loop, UV_RUN_DEFAULT);
    uv_loop_close(&j->loop);
    jmd_out_close(j);
    jmd_sched_close(j);
    spec_destroy(&j->spec);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->dir);
    (void)system(cmd);
    free(h);
    return 0;
}

static size_t task(const struct h *h, const char *id)
{
    long t = spec_task_index(h->j.spec, id);
    assert_true(t >= 0);
    return (size_t)t;
}

/* A status of `task`'s attempt `attempt` from its node. */
static void status(struct h *h, size_t t, uint32_t attempt, int node, proto_task_state_t state,
                   int64_t started, int64_t ended)
{
    proto_task_status_t st;
    memset(&st, 0, sizeof st);
    char name[16];
    snprintf(name, sizeof name, "pn-%d", node + 1);
    st.job_id = "j-1";
    st.task_id = h->j.spec->tasks[t].id;
    st.attempt = attempt;
    st.node = name;
    st.state = state;
    st.task_class = h->j.tasks[t].cls == DISPATCH_OPPORTUNISTIC ? PROTO_CLASS_OPPORTUNISTIC
                                                                : PROTO_CLASS_REGULAR;
    st.exit_code = state == PROTO_TASK_FAILED ? 1 : 0;
    st.queued_at_ms = started ? started - 10 : 0;
    st.started_at_ms = started;
    st.ended_at_ms = ended;
    jmd_sched_status(&h->j, &st, node);
}

/* Runs `id` to success in ~1 s (by its statuses). */
static void succeed(struct h *h, const char *id)
{
    size_t t = task(h, id);
    const struct jmd_task *jt = &h->j.tasks[t];
    assert_true(jt->inflight);
    int64_t w = clock_wall_ms();
    status(h, t, jt->attempt, jt->node, PROTO_TASK_RUNNING, w - 1000, 0);
    status(h, t, jt->attempt, jt->node, PROTO_TASK_SUCCEEDED, w - 1000, w);
    assert_int_equal(dag_state(h->j.core.dag, t), DAG_SUCCEEDED);
}

/* Makes `id` a running straggler of `ran_s` seconds. */
static void straggle(struct h *h, const char *id, int ran_s)
{
    size_t t = task(h, id);
    struct jmd_task *jt = &h->j.tasks[t];
    assert_true(jt->inflight);
    status(h, t, jt->attempt, jt->node, PROTO_TASK_RUNNING, clock_wall_ms() - ran_s * 1000, 0);
    assert_true(jt->running);
    jt->run_mono = jmd_now(&h->j) - ran_s * 1000;
}

static int count_recs(const struct h *h, size_t t, int state)
{
    int n = 0;
    for (size_t i = 0; i < h->j.nrecs; i++)
        n += h->j.recs[i].task == t && h->j.recs[i].state == state;
    return n;
}

static void test_copy_wins_and_late_success_ignored(void **state)
{
    struct h *h = *state;
    jmd_t *j = &h->j;
    size_t m0 = task(h, "m0");
    succeed(h, "m1");
    succeed(h, "m2");
    succeed(h, "m3");
    straggle(h, "m0", 30);
    uint32_t orig = j->tasks[m0].attempt;
    int orig_node = j->tasks[m0].node;
    jmd_spec_tick(j, jmd_now(j));
    assert_int_equal(j->spec_stats.copies_started, 1);
    assert_int_equal(jmd_spec_extra(j, m0), 1);
    uint32_t copy = j->tasks[m0].seen;
    assert_true(copy > orig);
    /* a second tick starts no second copy (one per task) */
    jmd_spec_tick(j, jmd_now(j));
    assert_int_equal(j->spec_stats.copies_started, 1);
    /* which node: not the original's (the copy's statuses come from there) */
    int copy_node = -1;
    for (int n = 0; n < NODES; n++)
        if (n != orig_node)
            copy_node = copy_node < 0 ? n : copy_node;
    int64_t w = clock_wall_ms();
    /* the copy's statuses are accepted although the task's attempt is the original */
    status(h, m0, copy, copy_node, PROTO_TASK_RUNNING, w - 900, 0);
    assert_int_equal(dag_state(j->core.dag, m0), DAG_RUNNING);
    status(h, m0, copy, copy_node, PROTO_TASK_SUCCEEDED, w - 900, w);
    assert_int_equal(dag_state(j->core.dag, m0), DAG_SUCCEEDED);
    assert_int_equal(j->spec_stats.copies_won, 1);
    assert_int_equal(jmd_spec_extra(j, m0), 0);
    assert_int_equal(count_recs(h, m0, PROTO_TASK_SUCCEEDED), 1);
    assert_int_equal(count_recs(h, m0, PROTO_TASK_CANCELLED), 1);
    for (size_t i = 0; i < j->nrecs; i++)
        if (j->recs[i].task == m0 && j->recs[i].state == PROTO_TASK_CANCELLED) {
            assert_int_equal(j->recs[i].attempt, orig);
            assert_non_null(strstr(intern_str(&j->strs, j->recs[i].reason), "finished first"));
        }
    /* the original's success, racing its cancel: ignored */
    size_t before = j->nrecs;
    status(h, m0, orig, orig_node, PROTO_TASK_SUCCEEDED, w - 30000, w);
    assert_int_equal(j->nrecs, before);
    assert_int_equal(j->attempts_failed, 0);
}

static void test_original_fails_copy_goes_on(void **state)
{
    struct h *h = *state;
    jmd_t *j = &h->j;
    size_t m0 = task(h, "m0");
    succeed(h, "m1");
    succeed(h, "m2");
    succeed(h, "m3");
    straggle(h, "m0", 30);
    uint32_t orig = j->tasks[m0].attempt;
    int orig_node = j->tasks[m0].node;
    jmd_spec_tick(j, jmd_now(j));
    assert_int_equal(jmd_spec_extra(j, m0), 1);
    uint32_t copy = j->tasks[m0].seen;
    int64_t w = clock_wall_ms();
    status(h, m0, orig, orig_node, PROTO_TASK_FAILED, w - 30000, w);
    /* not retried: the copy is now the task's attempt */
    assert_int_equal(dag_state(j->core.dag, m0), DAG_RUNNING);
    assert_int_equal(j->tasks[m0].attempt, copy);
    assert_int_equal(jmd_spec_extra(j, m0), 0);
    assert_int_equal(j->tasks[m0].failures, 1);
    int copy_node = j->tasks[m0].node;
    assert_int_not_equal(copy_node, orig_node);
    status(h, m0, copy, copy_node, PROTO_TASK_SUCCEEDED, w - 900, w);
    assert_int_equal(dag_state(j->core.dag, m0), DAG_SUCCEEDED);
    assert_int_equal(count_recs(h, m0, PROTO_TASK_FAILED), 1);
    assert_int_equal(count_recs(h, m0, PROTO_TASK_SUCCEEDED), 1);
}

static void test_speculate_false_not_copied(void **state)
{
    struct h *h = *state;
    jmd_t *j = &h->j;
    succeed(h, "n1");
    succeed(h, "n2");
    succeed(h, "n3");
    straggle(h, "n0", 60);
    jmd_spec_tick(j, jmd_now(j));
    jmd_spec_tick(j, jmd_now(j));
    assert_int_equal(j->spec_stats.copies_started, 0);
    assert_int_equal(jmd_spec_extra(j, task(h, "n0")), 0);
}

static void test_lost_output_reruns_producer(void **state)
{
    struct h *h = *state;
    jmd_t *j = &h->j;
    size_t p = task(h, "p"), c = task(h, "c");
    int node = j->tasks[p].node;
    succeed(h, "p");
    /* another node going down changes nothing */
    view_node_set(h, (node + 1) % NODES, 0);
    jmd_spec_tick(j, jmd_now(j));
    assert_int_equal(dag_state(j->core.dag, p), DAG_SUCCEEDED);
    /* the producer's node goes down (the RM's verdict, no newer heartbeat): run again */
    view_node_set(h, node, 0);
    jmd_spec_tick(j, jmd_now(j));
    assert_int_equal(j->spec_stats.reruns, 1);
    assert_int_equal(dag_state(j->core.dag, p), DAG_READY);
    assert_int_equal(dag_state(j->core.dag, c), DAG_WAITING);
    assert_int_equal(j->attempts_failed, 0);
    /* it is placed again, elsewhere, and succeeds; once. Within a few rounds: a round may hold
       a task whose best node looks busy until the hold ends (place_hold), which on a loaded
       machine (1 run in 80 under ctest -j2) the first round after the rerun did. */
    for (int i = 0; i < 300 && !j->tasks[p].inflight; i++) {
        if (i > 0) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        jmd_sched_round(j);
    }
    assert_true(j->tasks[p].inflight);
    assert_int_not_equal(j->tasks[p].node, node);
    succeed(h, "p");
    jmd_spec_tick(j, jmd_now(j));
    assert_int_equal(j->spec_stats.reruns, 1);
}

/* A regular task queued much longer than it was placed for gets a duplicate elsewhere
 * (correct_decide, duplicate mode); the duplicate starts first: it keeps the task and the
 * original is discarded. */
static void test_duplicate_started_first_wins(void **state)
{
    struct h *h = *state;
    jmd_t *j = &h->j;
    size_t m4 = task(h, "m4");
    struct jmd_task *t = &j->tasks[m4];
    uint32_t orig = t->attempt;
    int orig_node = t->node;
    proto_task_status_t st;
    memset(&st, 0, sizeof st);
    char name[16];
    snprintf(name, sizeof name, "pn-%d", orig_node + 1);
    st.job_id = "j-1";
    st.task_id = "m4";
    st.attempt = orig;
    st.node = name;
    st.state = PROTO_TASK_QUEUED;
    st.queued_at_ms = clock_wall_ms() - 10000;
    st.expected_wait_ms = 60000; /* its node's queue turned out a minute long */
    jmd_sched_status(j, &st, orig_node);
    t->disp_mono = jmd_now(j) - 10000;
    jmd_spec_correct(j, jmd_now(j));
    assert_int_equal(j->spec_stats.dups_started, 1);
    assert_int_equal(jmd_spec_extra(j, m4), 1);
    uint32_t dup = t->seen;
    /* the duplicate reports running first */
    status(h, m4, dup, (orig_node + 1) % NODES, PROTO_TASK_RUNNING, clock_wall_ms(), 0);
    assert_int_equal(t->attempt, dup);
    assert_true(t->running);
    assert_int_not_equal(t->node, orig_node);
    assert_int_equal(jmd_spec_extra(j, m4), 0);
    assert_int_equal(j->spec_stats.dups_won, 1);
    assert_int_equal(count_recs(h, m4, PROTO_TASK_CANCELLED), 1);
    /* the original's own RUNNING, too late: ignored */
    size_t before = j->nrecs;
    status(h, m4, orig, orig_node, PROTO_TASK_RUNNING, clock_wall_ms(), 0);
    assert_int_equal(t->attempt, dup);
    assert_int_equal(j->nrecs, before);
    succeed(h, "m4");
    assert_int_equal(count_recs(h, m4, PROTO_TASK_SUCCEEDED), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_copy_wins_and_late_success_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_original_fails_copy_goes_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_speculate_false_not_copied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_output_reruns_producer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_started_first_wins, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
