/* Tests of the process node's core (pn/node.h) driven directly, its statuses caught by a fake
 * send callback: statuses held back, fencing epochs, TASK_QUERY, the jobs a heartbeat names, and
 * reaping the tasks of jobs the RM's HEARTBEAT_ACK says are over (time injected). Real processes
 * (sleep). The fixture is in node_fixture.h; estimates and the cache advertisement are in
 * test_node_estimate.c, task directories and spawner threads in test_node_dir.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/err.h"
#include "pn/exec.h"
#include "tests/pn/node_fixture.h"

/* ---- statuses held back ---- */

/* On an idle node a new task's first status is RUNNING, answering the create's req_id: its
 * QUEUED status (expected wait 0) is not sent. A task that has to wait still gets QUEUED at
 * once, with its expected wait. */
static void test_queued_held_back(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t1", 1, 11);
    assert_int_equal(f->nsent, 0); /* nothing yet: its set-up runs on the thread pool */
    const sent_t *st = wait_state(f, "j", "t1", PROTO_TASK_RUNNING);
    assert_int_equal(st->req_id, 11);
    assert_true(st->queued_at > 0);
    size_t n1 = 0;
    for (size_t i = 0; i < f->nsent; i++)
        n1 += f->sent[i].type == PROTO_TASK_STATUS && strcmp(f->sent[i].task, "t1") == 0;
    assert_int_equal(n1, 1);
    assert_int_equal(counters(f).queued_unsent, 1);
    size_t before = f->nsent;
    create(f, "A", "j", "t2", 1, 12); /* the one core is taken for 30 s: it waits */
    assert_int_equal(f->nsent, before + 1);
    assert_int_equal(last(f)->state, PROTO_TASK_QUEUED);
    assert_int_equal(last(f)->req_id, 12);
    assert_true(last(f)->expected_wait_ms > 20000);
    cancel(f, "A", "j", "t2", 1);
    wait_state(f, "j", "t2", PROTO_TASK_CANCELLED);
    cancel(f, "A", "j", "t1", 1);
    wait_state(f, "j", "t1", PROTO_TASK_CANCELLED);
    assert_int_equal(counters(f).queued_unsent, 1);
}

/* Two tasks of one job on a 1-core node in the same turn, the second of a higher priority: the
 * first's QUEUED is held back (its expected wait is 0), the second's is sent (it waits behind
 * the first). Whichever the queue starts (the higher priority may start in the first's place,
 * pn/queue.h), the other has said QUEUED by then, with its expected wait: never silent. */
static void test_queued_sent_when_not_started(void **state)
{
    fixture_t *f = *state;
    proto_msg_t m;
    for (int i = 0; i < 2; i++) {
        proto_msg_init(&m, PROTO_TASK_CREATE);
        m.req_id = 21 + (uint64_t)i;
        proto_task_create_t *c = &m.task_create;
        c->job_id = "j";
        c->task_id = i == 0 ? "low" : "high";
        c->attempt = 1;
        c->task_class = PROTO_CLASS_REGULAR;
        c->cpu = 1;
        c->mem_mb = 64;
        c->runtime_ms = 30000;
        c->weight = 1;
        c->priority = i == 0 ? 1 : 100;
        c->argv = (char **)sleeper;
        c->argc = 2;
        deliver(f, "A", &m);
    }
    const sent_t *lo = NULL, *hi = NULL;
    for (int i = 0; i < 10000; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        lo = last_status(f, "j", "low");
        hi = last_status(f, "j", "high");
        if (lo && hi && (lo->state == PROTO_TASK_RUNNING || hi->state == PROTO_TASK_RUNNING))
            break;
        pause_ms(1);
    }
    assert_non_null(lo);
    assert_non_null(hi);
    const sent_t *run = lo->state == PROTO_TASK_RUNNING ? lo : hi;
    const sent_t *wait = run == lo ? hi : lo;
    assert_int_equal(run->state, PROTO_TASK_RUNNING);
    assert_int_equal(wait->state, PROTO_TASK_QUEUED);
    assert_int_equal(wait->req_id, wait == lo ? 21 : 22);
    assert_true(wait->expected_wait_ms > 20000);
    for (int i = 0; i < 50; i++) { /* a few more turns: nothing more is said */
        uv_run(&f->loop, UV_RUN_NOWAIT);
        pause_ms(1);
    }
    size_t nrun = 0, nwait = 0; /* the waiting one said QUEUED once; the other at most twice */
    for (size_t i = 0; i < f->nsent; i++) {
        nrun += f->sent[i].type == PROTO_TASK_STATUS && strcmp(f->sent[i].task, run->task) == 0;
        nwait += f->sent[i].type == PROTO_TASK_STATUS && strcmp(f->sent[i].task, wait->task) == 0;
    }
    assert_int_equal(nwait, 1);
    assert_true(nrun >= 1 && nrun <= 2);
    fprintf(stderr, "started %s; %s waits\n", run == lo ? "low" : "high",
            wait == lo ? "low" : "high");
    cancel(f, "A", "j", "low", 1);
    cancel(f, "A", "j", "high", 1);
    wait_state(f, "j", "low", PROTO_TASK_CANCELLED);
    wait_state(f, "j", "high", PROTO_TASK_CANCELLED);
}

/* ---- fencing ---- */

static void test_fence_older_refused(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t1", 2, 1);
    wait_state(f, "j", "t1", PROTO_TASK_RUNNING);
    size_t before = f->nsent;
    create(f, "B", "j", "t2", 1, 2);
    assert_int_equal(f->nsent, before + 1);
    const sent_t *e = last(f);
    assert_int_equal(e->type, PROTO_ERROR);
    assert_int_equal(e->code, ERR_FENCED);
    assert_string_equal(e->peer, "B");
    assert_string_equal(e->text, "job j: epoch 1 is older than 2");
    cancel(f, "B", "j", "t1", 1);
    assert_int_equal(last(f)->code, ERR_FENCED);
    upgrade(f, "B", "j", "t1", 1);
    assert_int_equal(last(f)->code, ERR_FENCED);
    query(f, "B", "j", 1, NULL, 3);
    assert_int_equal(last(f)->type, PROTO_ERROR);
    assert_int_equal(last(f)->code, ERR_FENCED);
    node_counters_t c = counters(f);
    assert_int_equal(c.refused_fenced, 4);
    assert_int_equal(c.created, 1);
    assert_int_equal(c.queries, 0);
    /* the stale commands changed nothing: t1 still runs, its statuses still go to A */
    cancel(f, "A", "j", "t1", 2);
    const sent_t *st = wait_state(f, "j", "t1", PROTO_TASK_CANCELLED);
    assert_string_equal(st->peer, "A");
}

static void test_fence_equal_and_repeat(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t1", 2, 1);
    wait_state(f, "j", "t1", PROTO_TASK_RUNNING);
    size_t before = f->nsent;
    create(f, "A", "j", "t1", 2, 7); /* a retry: answered with where it stands */
    assert_int_equal(f->nsent, before + 1);
    assert_int_equal(last(f)->type, PROTO_TASK_STATUS);
    assert_int_equal(last(f)->state, PROTO_TASK_RUNNING);
    assert_int_equal(last(f)->req_id, 7);
    create(f, "A", "j", "t2", 2, 8); /* equal epoch: a new task is queued (1 core, busy) */
    assert_int_equal(last(f)->type, PROTO_TASK_STATUS);
    assert_int_equal(last(f)->state, PROTO_TASK_QUEUED);
    assert_int_equal(counters(f).refused_fenced, 0);
    assert_int_equal(counters(f).created, 2);
}

static void test_fence_higher_raises(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t1", 1, 1);
    wait_state(f, "j", "t1", PROTO_TASK_RUNNING);
    create(f, "C", "j", "t2", 3, 2); /* a resumed JM */
    assert_int_equal(last(f)->type, PROTO_TASK_STATUS);
    assert_string_equal(last(f)->peer, "C");
    create(f, "A", "j", "t3", 1, 3);
    assert_int_equal(last(f)->code, ERR_FENCED);
    assert_string_equal(last(f)->text, "job j: epoch 1 is older than 3");
    create(f, "A", "j", "t3", 2, 4);
    assert_int_equal(last(f)->code, ERR_FENCED);
    /* t1's statuses now go to the newer JM's peer */
    cancel(f, "C", "j", "t1", 3);
    const sent_t *st = wait_state(f, "j", "t1", PROTO_TASK_CANCELLED);
    assert_string_equal(st->peer, "C");
    /* another job is not fenced by this one's epoch */
    create(f, "A", "other", "t1", 1, 5);
    assert_int_equal(last(f)->type, PROTO_TASK_STATUS);
    assert_int_equal(counters(f).refused_fenced, 2);
}

static void test_fence_zero_unfenced(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t1", 0, 1);
    wait_state(f, "j", "t1", PROTO_TASK_RUNNING);
    create(f, "A", "j", "t2", 4, 2);
    create(f, "B", "j", "t3", 0, 3); /* an older JM without epochs: never refused */
    assert_int_equal(last(f)->type, PROTO_TASK_STATUS);
    assert_int_equal(last(f)->state, PROTO_TASK_QUEUED);
    create(f, "B", "j", "t4", 3, 4); /* and it did not lower the job's epoch */
    assert_int_equal(last(f)->code, ERR_FENCED);
    assert_string_equal(last(f)->text, "job j: epoch 3 is older than 4");
}

/* ---- TASK_QUERY ---- */

static size_t count_since(const fixture_t *f, size_t from, proto_type_t type, const char *job)
{
    size_t k = 0;
    for (size_t i = from; i < f->nsent; i++)
        if (f->sent[i].type == type && (!job || strcmp(f->sent[i].job, job) == 0))
            k++;
    return k;
}

static void test_query_answers_every_task(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "run", 1, 1);
    wait_state(f, "j", "run", PROTO_TASK_RUNNING);
    create(f, "A", "j", "wait", 1, 2);
    create(f, "A", "j", "gone", 1, 3);
    cancel(f, "A", "j", "gone", 1); /* finished, within retention */
    create(f, "A", "other", "x", 1, 4);
    size_t from = f->nsent;
    query(f, "N", "j", 2, NULL, 99); /* a resumed JM, from a new socket */
    assert_int_equal(f->nsent - from, 4);
    assert_int_equal(count_since(f, from, PROTO_TASK_STATUS, "j"), 3);
    proto_task_state_t want[3] = {PROTO_TASK_RUNNING, PROTO_TASK_QUEUED, PROTO_TASK_CANCELLED};
    const char *names[3] = {"run", "wait", "gone"};
    for (size_t k = 0; k < 3; k++) {
        const sent_t *st = last_status(f, "j", names[k]);
        assert_true(st >= &f->sent[from]);
        assert_int_equal(st->state, want[k]);
        assert_int_equal(st->req_id, 99);
        assert_string_equal(st->peer, "N");
    }
    const sent_t *r = last(f); /* the reply comes last */
    assert_int_equal(r->type, PROTO_TASK_QUERY_REPLY);
    assert_string_equal(r->job, "j");
    assert_string_equal(r->text, "n1");
    assert_int_equal(r->tasks, 3);
    assert_int_equal(r->req_id, 99);
    assert_string_equal(r->peer, "N");
    assert_int_equal(counters(f).queries, 1);
    /* the query raised the epoch: the old JM's late create is refused */
    create(f, "A", "j", "late", 1, 5);
    assert_int_equal(last(f)->code, ERR_FENCED);
}

static void test_query_unknown_job(void **state)
{
    fixture_t *f = *state;
    size_t from = f->nsent;
    query(f, "A", "nope", 0, NULL, 5);
    assert_int_equal(f->nsent - from, 1);
    assert_int_equal(last(f)->type, PROTO_TASK_QUERY_REPLY);
    assert_int_equal(last(f)->tasks, 0);
    assert_string_equal(last(f)->job, "nope");
    assert_string_equal(last(f)->peer, "A");
    query(f, "A", "nope2", 0, "tcp://127.0.0.1:9", 6); /* to the reply endpoint */
    assert_string_equal(last(f)->endpoint, "tcp://127.0.0.1:9");
    assert_int_equal(last(f)->tasks, 0);
    size_t tasks, jobs;
    node_remembered(f->n, &tasks, &jobs);
    assert_int_equal(jobs, 0); /* epoch 0: nothing to remember */
    /* with an epoch, a job without tasks here is remembered: a create from an older JM that
       arrives after the query is refused, so the task is not run behind the new JM's back */
    query(f, "N", "fresh", 2, NULL, 7);
    assert_int_equal(last(f)->type, PROTO_TASK_QUERY_REPLY);
    assert_int_equal(last(f)->tasks, 0);
    create(f, "A", "fresh", "t", 1, 8);
    assert_int_equal(last(f)->code, ERR_FENCED);
    create(f, "N", "fresh", "t", 2, 9);
    assert_int_equal(last(f)->type, PROTO_TASK_STATUS);
    assert_string_equal(last(f)->peer, "N");
}

static void test_query_reply_endpoint(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t", 1, 1);
    size_t from = f->nsent;
    query(f, "N", "j", 1, "tcp://127.0.0.1:7", 2);
    assert_int_equal(f->nsent - from, 2);
    for (size_t i = from; i < f->nsent; i++)
        assert_string_equal(f->sent[i].endpoint, "tcp://127.0.0.1:7");
    assert_int_equal(last(f)->tasks, 1);
}

/* ---- heartbeat ---- */

static int names(const proto_heartbeat_t *hb, const char *job)
{
    for (uint32_t i = 0; i < hb->njobs; i++)
        if (strcmp(hb->jobs[i], job) == 0)
            return 1;
    return 0;
}

static void test_heartbeat_jobs(void **state)
{
    fixture_t *f = *state;
    proto_heartbeat_t hb;
    node_heartbeat(f->n, &hb);
    assert_int_equal(hb.njobs, 0);
    create(f, "A", "a", "t1", 1, 1);
    wait_state(f, "a", "t1", PROTO_TASK_RUNNING);
    create(f, "A", "a", "t2", 1, 2); /* queued: one core */
    create(f, "A", "b", "t1", 0, 3);
    create(f, "A", "c", "t1", 0, 4);
    cancel(f, "A", "c", "t1", 0); /* c has only a finished task */
    node_heartbeat(f->n, &hb);
    assert_int_equal(hb.njobs, 2);
    assert_true(names(&hb, "a"));
    assert_true(names(&hb, "b"));
    assert_false(names(&hb, "c"));
    cancel(f, "A", "a", "t2", 1);
    cancel(f, "A", "a", "t1", 1);
    wait_state(f, "a", "t1", PROTO_TASK_CANCELLED);
    node_heartbeat(f->n, &hb);
    assert_int_equal(hb.njobs, 1);
    assert_string_equal(hb.jobs[0], "b");
    /* the heartbeat encodes */
    proto_msg_t m;
    proto_msg_init(&m, PROTO_HEARTBEAT);
    m.heartbeat = hb;
    assert_int_equal(proto_encode(&m, &f->buf, NULL, 0), 0);
}

/* ---- reaping from the RM's answers ---- */

static void test_reap_ended_job(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "run", 1, 1);
    wait_state(f, "j", "run", PROTO_TASK_RUNNING);
    create(f, "A", "j", "wait", 1, 2);
    create(f, "A", "keep", "t", 1, 3);
    const uint64_t t0 = 1000000, grace = (uint64_t)f->cfg.ended_grace_ms;
    assert_int_equal(grace, 5000); /* the default */
    ack(f, "j", 2, 1, t0);         /* done */
    ack(f, "keep", 1, 1, t0);      /* active */
    ack(f, "j", 2, 1, t0 + grace - 1);
    assert_int_equal(counters(f).reaped, 0);
    assert_int_equal(last_status(f, "j", "wait")->state, PROTO_TASK_QUEUED);
    ack(f, "j", 2, 1, t0 + grace);
    assert_int_equal(counters(f).reaped, 2);
    const sent_t *w = last_status(f, "j", "wait");
    assert_int_equal(w->state, PROTO_TASK_CANCELLED);
    assert_string_equal(w->text, "job j ended (done): reaped after 5 s");
    const sent_t *r = wait_state(f, "j", "run", PROTO_TASK_CANCELLED);
    assert_string_equal(r->text, "job j ended (done): reaped after 5 s");
    /* the slot it held went to the job still active */
    wait_state(f, "keep", "t", PROTO_TASK_RUNNING);
    proto_heartbeat_t hb;
    node_heartbeat(f->n, &hb);
    assert_int_equal(hb.njobs, 1);
    assert_string_equal(hb.jobs[0], "keep");
    ack(f, "keep", 1, 1, t0 + 100 * grace);
    assert_int_equal(counters(f).reaped, 2);
}

static void test_reap_expired_resumed_in_time(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "run", 1, 1);
    wait_state(f, "j", "run", PROTO_TASK_RUNNING);
    const uint64_t t0 = 5000, grace = (uint64_t)f->cfg.orphan_grace_ms;
    assert_int_equal(grace, 60000);
    ack(f, "j", 5, 1, t0);             /* expired: its JM died */
    ack(f, "j", 1, 2, t0 + grace - 1); /* resumed (epoch 2) in time */
    ack(f, "j", 1, 2, t0 + 2 * grace); /* and still active */
    assert_int_equal(counters(f).reaped, 0);
    assert_int_equal(last_status(f, "j", "run")->state, PROTO_TASK_RUNNING);
    create(f, "A", "j", "t2", 1, 2); /* the RM's epoch fenced the old JM */
    assert_int_equal(last(f)->code, ERR_FENCED);
    ack(f, "j", 0, 2, t0 + 3 * grace); /* unknown to the RM (a new cluster) */
    ack(f, "j", 0, 2, t0 + 4 * grace - 1);
    assert_int_equal(counters(f).reaped, 0);
    ack(f, "j", 0, 2, t0 + 4 * grace);
    assert_int_equal(counters(f).reaped, 1);
    const sent_t *r = wait_state(f, "j", "run", PROTO_TASK_LOST);
    assert_string_equal(r->text, "job j unknown to the RM: reaped after 60 s");
}

/* A task that ends while regular work is queued here goes with the last matrix (that work
 * takes the room, so a fresh one would differ only by the time since); one that ends with
 * nothing queued still forces a fresh matrix (its JM places the next task on it). */
static void test_matrix_on_end(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t1", 1, 1);
    wait_state(f, "j", "t1", PROTO_TASK_RUNNING);
    create(f, "A", "j", "t2", 1, 2); /* waits: the one core is taken */
    assert_int_equal(last(f)->state, PROTO_TASK_QUEUED);
    node_counters_t c0 = counters(f);
    cancel(f, "A", "j", "t1", 1);
    wait_state(f, "j", "t1", PROTO_TASK_CANCELLED);
    node_counters_t c1 = counters(f);
    assert_int_equal(c1.matrix_kept, c0.matrix_kept + 1);
    wait_state(f, "j", "t2", PROTO_TASK_RUNNING);
    node_counters_t c2 = counters(f);
    cancel(f, "A", "j", "t2", 1);
    wait_state(f, "j", "t2", PROTO_TASK_CANCELLED);
    node_counters_t c3 = counters(f);
    assert_int_equal(c3.matrix_kept, c2.matrix_kept);
    assert_true(c3.matrix_computes > c2.matrix_computes);
}

static void test_reap_ignores_other_jobs(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t", 1, 1);
    cancel(f, "A", "j", "t", 1);
    ack(f, "j", 3, 1, 0);     /* failed, but nothing of it lives here */
    ack(f, "ghost", 2, 1, 0); /* never here */
    ack(f, "j", 9, 1, 0);     /* a state this node does not know: ignored */
    ack(f, "j", 3, 1, 1000000);
    assert_int_equal(counters(f).reaped, 0);
    create(f, "A", "k", "t", 1, 2);
    wait_state(f, "k", "t", PROTO_TASK_RUNNING);
    ack(f, "k", 9, 1, 0);
    assert_int_equal(counters(f).acks_ignored, 1);
    ack(f, "k", 9, 1, 1000000);
    assert_int_equal(counters(f).reaped, 0);
    wait_state(f, "k", "t", PROTO_TASK_RUNNING);
}

int main(void)
{
    if (exec_become_subreaper() != 0)
        return 1;
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest quiet[] = {
        cmocka_unit_test_setup_teardown(test_queued_held_back, setup_quiet, teardown),
        cmocka_unit_test_setup_teardown(test_queued_sent_when_not_started, setup_quiet, teardown),
    };
    const struct CMUnitTest fence[] = {
        T(test_fence_older_refused),
        T(test_fence_equal_and_repeat),
        T(test_fence_higher_raises),
        T(test_fence_zero_unfenced),
    };
    const struct CMUnitTest query_tests[] = {
        T(test_query_answers_every_task),
        T(test_query_unknown_job),
        T(test_query_reply_endpoint),
        T(test_heartbeat_jobs),
    };
    const struct CMUnitTest reap[] = {
        T(test_reap_ended_job),
        T(test_reap_expired_resumed_in_time),
        T(test_reap_ignores_other_jobs),
        T(test_matrix_on_end),
    };
    int rc = cmocka_run_group_tests_name("node fencing", fence, NULL, NULL);
    rc |= cmocka_run_group_tests_name("node statuses held back", quiet, NULL, NULL);
    rc |= cmocka_run_group_tests_name("node query", query_tests, NULL, NULL);
    return rc | cmocka_run_group_tests_name("node reaping", reap, NULL, NULL);
}
