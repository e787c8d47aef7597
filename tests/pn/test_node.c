/* Tests of the process node's core (pn/node.h) driven directly, its statuses caught by a fake
 * send callback: fencing epochs, TASK_QUERY, the jobs a heartbeat names, and reaping the tasks
 * of jobs the RM's HEARTBEAT_ACK says are over (time injected). Real processes (sleep). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bloom.h"
#include "common/err.h"
#include "common/mem.h"
#include "jm/estimator.h"
#include "jm/place.h"
#include "jm/spec.h"
#include "jm/view_proto.h"
#include "pn/exec.h"
#include "pn/node.h"
#include "pn/pnconf.h"
#include "proto/proto.h"
#include "rm/rmview.h"

#define MAXSENT 512

typedef struct sent {
    char peer[16];
    char endpoint[128];
    proto_type_t type;
    uint64_t req_id;
    char job[64], task[64], text[256];
    proto_task_state_t state;
    int code;
    uint32_t tasks;
    uint64_t expected_wait_ms, cpu_time_ms, bytes_read;
    int64_t queued_at, started_at;
} sent_t;

typedef struct fixture {
    char dir[128];
    pnconf_t cfg;
    uv_loop_t loop;
    node_t *n;
    sent_t sent[MAXSENT];
    size_t nsent;
    proto_buf_t buf;
} fixture_t;

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static void on_send(void *arg, const void *peer, size_t plen, const char *endpoint,
                    const void *data, size_t len)
{
    fixture_t *f = arg;
    proto_msg_t m;
    assert_int_equal(proto_decode(data, len, &m, NULL, NULL, 0), 0);
    assert_true(f->nsent < MAXSENT);
    sent_t *s = &f->sent[f->nsent++];
    memset(s, 0, sizeof *s);
    memcpy(s->peer, peer, plen < sizeof s->peer - 1 ? plen : sizeof s->peer - 1);
    copy(s->endpoint, sizeof s->endpoint, endpoint);
    s->type = m.type;
    s->req_id = m.req_id;
    if (m.type == PROTO_TASK_STATUS) {
        copy(s->job, sizeof s->job, m.task_status.job_id);
        copy(s->task, sizeof s->task, m.task_status.task_id);
        copy(s->text, sizeof s->text, m.task_status.reason);
        s->state = m.task_status.state;
        s->expected_wait_ms = m.task_status.expected_wait_ms;
        s->cpu_time_ms = m.task_status.cpu_time_ms;
        s->bytes_read = m.task_status.bytes_read;
        s->queued_at = m.task_status.queued_at_ms;
        s->started_at = m.task_status.started_at_ms;
    } else if (m.type == PROTO_ERROR) {
        s->code = m.error.code;
        copy(s->text, sizeof s->text, m.error.text);
    } else if (m.type == PROTO_TASK_QUERY_REPLY) {
        copy(s->job, sizeof s->job, m.task_query_reply.job_id);
        copy(s->text, sizeof s->text, m.task_query_reply.node);
        s->tasks = m.task_query_reply.tasks;
    }
    proto_msg_close(&m);
}

static int setup_with(void **state, const char *extra)
{
    fixture_t *f = mem_calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/paddock-test-node-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    char work[256], shim[512];
    snprintf(work, sizeof work, "pn.work_dir=%s/work", f->dir);
    snprintf(shim, sizeof shim, "pn.exec_shim=%s/paddock-pn-exec", bin ? bin : ".");
    char *sets[] = {work,
                    shim,
                    "node.name=n1",
                    "node.cpus=1",
                    "node.memory=4GiB",
                    "tasks.status_refresh=0",
                    "tasks.quiet_queued=false", /* every create answered at once */
                    (char *)extra};
    size_t nsets = sizeof sets / sizeof *sets - (extra ? 0 : 1);
    char msg[512];
    if (pnconf_load(&f->cfg, NULL, sets, nsets, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        return -1;
    }
    if (uv_loop_init(&f->loop) != 0)
        return -1;
    f->n = node_new(&f->cfg, &f->loop, 42, (uid_t)-1, (gid_t)-1, on_send, f, msg, sizeof msg);
    if (!f->n) {
        fprintf(stderr, "%s\n", msg);
        return -1;
    }
    proto_buf_init(&f->buf);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, NULL);
}

/* The daemon's default: no QUEUED status for a task that starts once set up. */
static int setup_quiet(void **state)
{
    return setup_with(state, "tasks.quiet_queued=true");
}

/* Finished tasks are forgotten at the first sweep. */
static int setup_forget(void **state)
{
    return setup_with(state, "tasks.retain_max=0");
}

static void settle(fixture_t *f)
{
    /* staging on the thread pool must have drained before node_destroy (pn/node.h): wait for
     * its completions (UV_RUN_ONCE blocks until one comes), not a fixed number of turns */
    for (int i = 0; i < 100000 && node_busy(f->n) > 0; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    settle(f);
    node_destroy(&f->n);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&f->loop);
    pnconf_close(&f->cfg);
    proto_buf_close(&f->buf);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        rc = -1;
    mem_free(f);
    return rc;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void deliver(fixture_t *f, const char *peer, const proto_msg_t *m)
{
    char err[256];
    assert_int_equal(proto_encode(m, &f->buf, err, sizeof err), 0);
    node_handle(f->n, peer, strlen(peer), f->buf.data, f->buf.len);
}

static const char *sleeper[] = {"/bin/sleep", "30"};

static void create(fixture_t *f, const char *peer, const char *job, const char *task,
                   uint32_t epoch, uint64_t req_id)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    m.req_id = req_id;
    proto_task_create_t *c = &m.task_create;
    c->job_id = (char *)job;
    c->task_id = (char *)task;
    c->attempt = 1;
    c->task_class = PROTO_CLASS_REGULAR;
    c->cpu = 1;
    c->mem_mb = 64;
    c->runtime_ms = 30000;
    c->weight = 1;
    c->argv = (char **)sleeper;
    c->argc = 2;
    c->epoch = epoch;
    deliver(f, peer, &m);
}

static void cancel(fixture_t *f, const char *peer, const char *job, const char *task,
                   uint32_t epoch)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CANCEL);
    m.task_cancel.job_id = (char *)job;
    m.task_cancel.task_id = (char *)task;
    m.task_cancel.attempt = 1;
    m.task_cancel.epoch = epoch;
    deliver(f, peer, &m);
}

static void upgrade(fixture_t *f, const char *peer, const char *job, const char *task,
                    uint32_t epoch)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_UPGRADE);
    m.task_upgrade.job_id = (char *)job;
    m.task_upgrade.task_id = (char *)task;
    m.task_upgrade.attempt = 1;
    m.task_upgrade.task_class = PROTO_CLASS_REGULAR;
    m.task_upgrade.epoch = epoch;
    deliver(f, peer, &m);
}

static void estimate(fixture_t *f, const char *peer, const char *job, const char *task,
                     uint32_t epoch, uint64_t runtime_ms)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_ESTIMATE);
    m.task_estimate.job_id = (char *)job;
    m.task_estimate.task_id = (char *)task;
    m.task_estimate.attempt = 1;
    m.task_estimate.runtime_ms = runtime_ms;
    m.task_estimate.epoch = epoch;
    deliver(f, peer, &m);
}

static void query(fixture_t *f, const char *peer, const char *job, uint32_t epoch,
                  const char *reply, uint64_t req_id)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_QUERY);
    m.req_id = req_id;
    m.task_query.job_id = (char *)job;
    m.task_query.epoch = epoch;
    m.task_query.reply_endpoint = (char *)reply;
    deliver(f, peer, &m);
}

static void ack(fixture_t *f, const char *job, uint32_t state, uint32_t epoch, uint64_t now)
{
    proto_job_info_t ji = {.job_id = (char *)job, .state = state, .epoch = epoch};
    proto_heartbeat_ack_t a = {.jobs = &ji, .njobs = 1, .rm_id = 1};
    node_jobs_ack(f->n, &a, now);
}

/* The last status of job/task sent, or NULL. */
static const sent_t *last_status(const fixture_t *f, const char *job, const char *task)
{
    for (size_t i = f->nsent; i-- > 0;)
        if (f->sent[i].type == PROTO_TASK_STATUS && strcmp(f->sent[i].job, job) == 0 &&
            strcmp(f->sent[i].task, task) == 0)
            return &f->sent[i];
    return NULL;
}

/* Runs the loop and reaps until job/task's last status is `s` (bounded: 10 s). */
static const sent_t *wait_state(fixture_t *f, const char *job, const char *task,
                                proto_task_state_t s)
{
    for (int i = 0; i < 10000; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        node_reap(f->n);
        const sent_t *st = last_status(f, job, task);
        if (st && st->state == s)
            return st;
        pause_ms(1);
    }
    const sent_t *st = last_status(f, job, task);
    fail_msg("%s/%s: state %d, waited for %d", job, task, st ? (int)st->state : -1, (int)s);
    return NULL;
}

static const sent_t *last(const fixture_t *f)
{
    assert_true(f->nsent > 0);
    return &f->sent[f->nsent - 1];
}

static node_counters_t counters(const fixture_t *f)
{
    node_counters_t c;
    node_counters(f->n, &c);
    return c;
}

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

/* ---- the JM's refined R (TASK_ESTIMATE) and progress in RUNNING statuses ---- */

static void test_estimate_changes_wait(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "t1", 1, 1); /* R 30 s, runs: one core */
    wait_state(f, "j", "t1", PROTO_TASK_RUNNING);
    create(f, "A", "j", "t2", 1, 2); /* queued behind it */
    const sent_t *q = last_status(f, "j", "t2");
    assert_int_equal(q->state, PROTO_TASK_QUEUED);
    uint64_t before = q->expected_wait_ms;
    assert_in_range(before, 25000, 30000);
    size_t sent = f->nsent;
    estimate(f, "A", "j", "t1", 1, 5000); /* the JM now expects 5 s: no reply */
    assert_int_equal(f->nsent, sent);
    assert_int_equal(counters(f).estimates, 1);
    create(f, "A", "j", "t2", 1, 3); /* a retry answers where t2 stands now */
    q = last_status(f, "j", "t2");
    assert_int_equal(q->req_id, 3);
    assert_in_range(q->expected_wait_ms, 1, 5000);
    assert_true(q->expected_wait_ms + 20000 < before);
    /* the queued task's own R does not move its start; a longer R for t1 moves it back */
    estimate(f, "A", "j", "t2", 1, 600000);
    estimate(f, "A", "j", "t1", 1, 60000);
    create(f, "A", "j", "t2", 1, 4);
    assert_in_range(last_status(f, "j", "t2")->expected_wait_ms, 55000, 60000);
    /* an unknown task is ignored and counted; an older epoch is refused */
    estimate(f, "A", "j", "nope", 1, 1000);
    assert_int_equal(counters(f).estimates_ignored, 1);
    assert_int_equal(f->nsent, sent + 2);
    estimate(f, "A", "j", "t1", 0, 1000); /* epoch 0 is never refused */
    assert_int_equal(counters(f).estimates, 4);
    create(f, "B", "j", "t3", 2, 5); /* raises the job's epoch to 2 */
    estimate(f, "A", "j", "t1", 1, 1000);
    assert_int_equal(last(f)->type, PROTO_ERROR);
    assert_int_equal(last(f)->code, ERR_FENCED);
    assert_int_equal(counters(f).estimates, 4);
}

/* A RUNNING status from node_refresh carries the CPU time and bytes read so far. */
static void test_refresh_progress(void **state)
{
    fixture_t *f = *state;
    static const char *reader[] = {"/bin/sh", "-c",
                                   "while :; do head -c 200000 /dev/zero >/dev/null; done"};
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    proto_task_create_t *c = &m.task_create;
    c->job_id = "j";
    c->task_id = "r";
    c->attempt = 1;
    c->cpu = 1;
    c->mem_mb = 64;
    c->runtime_ms = 30000;
    c->argv = (char **)reader;
    c->argc = 3;
    deliver(f, "A", &m);
    wait_state(f, "j", "r", PROTO_TASK_RUNNING);
    create(f, "A", "k", "q", 0, 2); /* another job's task, queued: one core */
    const sent_t *st = NULL;
    for (int i = 0; i < 100; i++) {
        pause_ms(50);
        node_poll_memory(f->n);
        node_refresh(f->n);
        st = last_status(f, "j", "r");
        if (st->cpu_time_ms >= 100 && st->bytes_read >= 1000000)
            break;
    }
    assert_int_equal(st->state, PROTO_TASK_RUNNING);
    assert_true(st->cpu_time_ms >= 100);
    assert_true(st->bytes_read >= 1000000);
    /* the job with nothing running still gets its queued task's refresh */
    size_t before = f->nsent;
    node_refresh(f->n);
    assert_int_equal(f->nsent, before + 2);
    assert_int_equal(last_status(f, "k", "q")->state, PROTO_TASK_QUEUED);
    cancel(f, "A", "j", "r", 0);
    wait_state(f, "j", "r", PROTO_TASK_CANCELLED);
}

/* ---- the cache advertisement: heartbeat -> RM view -> JM view -> the JM's estimate ---- */

static double draw_half(void *ctx)
{
    (void)ctx;
    return 0.5;
}

/* Encodes and decodes (the receiver's strict decoder), like the wire. */
static void wire(fixture_t *f, const proto_msg_t *in, proto_msg_t *out)
{
    char err[256];
    assert_int_equal(proto_encode(in, &f->buf, err, sizeof err), 0);
    assert_int_equal(proto_decode(f->buf.data, f->buf.len, out, NULL, err, sizeof err), 0);
}

struct jm_side {
    fixture_t *f;
    view_t *view;
};

static int to_jm(void *arg, const proto_msg_t *msg)
{
    struct jm_side *js = arg;
    proto_msg_t d;
    wire(js->f, msg, &d);
    if (d.type == PROTO_VIEW_DELTA) { /* published first (rm/rmview.h); the snapshot has all */
        proto_msg_close(&d);
        return 0;
    }
    assert_int_equal(d.type, PROTO_VIEW_SNAPSHOT);
    for (uint32_t i = 0; i < d.view_snapshot.nnodes; i++)
        assert_int_equal(view_update_from_proto(js->view, &d.view_snapshot.nodes[i], 1000), 1);
    proto_msg_close(&d);
    return 0;
}

static void test_cache_advertised(void **state)
{
    fixture_t *f = *state;
    proto_heartbeat_t hb;
    node_heartbeat(f->n, &hb);
    assert_int_equal(hb.cache_filter_len, 0); /* nothing staged yet: nothing advertised */
    char path[256];
    snprintf(path, sizeof path, "%s/input.dat", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("lookup table\n", fp);
    fclose(fp);
    proto_file_t file = {.path = path, .bytes = 13};
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    proto_task_create_t *c = &m.task_create;
    c->job_id = "j";
    c->task_id = "t1";
    c->attempt = 1;
    c->cpu = 1;
    c->mem_mb = 64;
    c->argv = (char **)sleeper;
    c->argc = 2;
    c->files = &file;
    c->nfiles = 1;
    deliver(f, "A", &m);
    wait_state(f, "j", "t1", PROTO_TASK_RUNNING); /* staged */

    /* PN -> RM: the heartbeat carries a filter naming the staged file */
    node_heartbeat(f->n, &hb);
    assert_true(hb.cache_filter_len > BLOOM_HEADER_BYTES);
    assert_true(hb.cache_filter_len <= PROTO_MAX_CACHE_FILTER);
    proto_msg_t out, in;
    proto_msg_init(&out, PROTO_HEARTBEAT);
    out.heartbeat = hb;
    wire(f, &out, &in);
    rmview_t *rv = rmview_new();
    assert_non_null(rv);
    assert_int_equal(rmview_ingest(rv, &in.heartbeat, 500), RMVIEW_FRESH);
    proto_msg_close(&in);
    const struct rmview_node *rn = rmview_find(rv, "n1");
    assert_non_null(rn);
    assert_int_equal(rn->cache_filter_len, hb.cache_filter_len);
    assert_memory_equal(rn->cache_filter, hb.cache_filter, hb.cache_filter_len);

    /* RM -> JM: the view snapshot carries it, the JM's view keeps it */
    struct jm_side js = {f, NULL};
    assert_int_equal(view_new(&js.view), 0);
    assert_int_equal(rmview_publish_snapshot(rv, 1000, 1, to_jm, &js), 0);
    long idx = view_find(js.view, "n1");
    assert_true(idx >= 0);
    const struct view_node *vn = view_node(js.view, (uint32_t)idx);
    assert_non_null(vn->cache);
    assert_true(view_cached(vn, path));
    assert_false(view_cached(vn, "/no/such/file"));

    /* the JM's placement: I = 0 for the cached file (80 MB at 80 MB/s would be 1 s), not for
       the absent one; a task needing both is not cached either */
    char spec_json[1024];
    snprintf(spec_json, sizeof spec_json,
             "{\"version\":1,\"tasks\":["
             "{\"id\":\"here\",\"stage\":\"a\",\"cmd\":[\"t\"],\"files\":[{\"path\":\"%s\","
             "\"bytes\":80000000}]},"
             "{\"id\":\"absent\",\"stage\":\"b\",\"cmd\":[\"t\"],\"files\":[{\"path\":"
             "\"/no/such/file\",\"bytes\":80000000}]},"
             "{\"id\":\"both\",\"stage\":\"c\",\"cmd\":[\"t\"],\"files\":[{\"path\":\"%s\","
             "\"bytes\":40000000},{\"path\":\"/no/such/file\",\"bytes\":40000000}]}]}",
             path, path);
    char msg[256];
    struct spec *sp = NULL;
    assert_int_equal(spec_parse(spec_json, strlen(spec_json), NULL, &sp, msg, sizeof msg), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, sp->nstages, &est), 0);
    place_t *pl = NULL;
    assert_int_equal(place_new(sp, NULL, &pl), 0);
    assert_int_equal(place_resolve(pl, js.view), 0);
    assert_int_equal(place_files_advertised(pl, js.view, 0, (uint32_t)idx), 1);
    assert_int_equal(place_files_advertised(pl, js.view, 1, (uint32_t)idx), 0);
    assert_int_equal(place_files_advertised(pl, js.view, 2, (uint32_t)idx), 0);
    for (size_t t = 0; t < 3; t++) {
        struct place_match pm;
        size_t nm = 0;
        assert_int_equal(place_round(pl, js.view, est, &t, 1, 1000, draw_half, NULL, &pm, &nm), 0);
        assert_int_equal(nm, 1);
        assert_int_equal(pm.node, (uint32_t)idx);
        if (t == 0)
            assert_float_equal(pm.est.i_s, 0, 1e-12);
        else
            assert_float_equal(pm.est.i_s, 1.0, 1e-9);
    }
    place_destroy(&pl);
    estimator_destroy(&est);
    spec_destroy(&sp);

    /* a heartbeat without a filter (a PN restarted with an empty cache) clears it downstream */
    hb.seq++;
    hb.cache_filter = NULL;
    hb.cache_filter_len = 0;
    assert_int_equal(rmview_ingest(rv, &hb, 1500), RMVIEW_FRESH);
    assert_null(rmview_find(rv, "n1")->cache_filter);
    assert_int_equal(rmview_publish_snapshot(rv, 2000, 1, to_jm, &js), 0);
    assert_null(view_node(js.view, (uint32_t)idx)->cache);
    assert_false(view_cached(view_node(js.view, (uint32_t)idx), path));
    view_destroy(&js.view);
    rmview_destroy(&rv);
    cancel(f, "A", "j", "t1", 0);
    wait_state(f, "j", "t1", PROTO_TASK_CANCELLED);
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

/* ---- task directories ---- */

static void create_argv(fixture_t *f, const char *job, const char *task, const char **argv,
                        uint32_t argc)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    proto_task_create_t *c = &m.task_create;
    c->job_id = (char *)job;
    c->task_id = (char *)task;
    c->attempt = 1;
    c->cpu = 0.1;
    c->mem_mb = 16;
    c->runtime_ms = 100;
    c->argv = (char **)argv;
    c->argc = argc;
    deliver(f, "A", &m);
}

/* The one directory under WORK/SUB whose name ends with `suffix` (or, suffix NULL, the number
 * of entries, into *count). */
static int find_entry(const fixture_t *f, const char *sub, const char *suffix, char *out,
                      size_t cap, size_t *count)
{
    char path[400];
    snprintf(path, sizeof path, "%s/work/%s", f->dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *de;
    size_t n = 0;
    int found = -1;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        n++;
        size_t ln = strlen(de->d_name), ls = suffix ? strlen(suffix) : 0;
        if (suffix && ln >= ls && strcmp(de->d_name + ln - ls, suffix) == 0) {
            snprintf(out, cap, "%.399s/%.100s", path, de->d_name);
            found = 0;
        }
    }
    closedir(d);
    if (count)
        *count = n;
    return suffix ? found : 0;
}

static size_t file_size(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

/* A forgotten task's directory is emptied and given to the next task (its inodes reused):
 * the next task finds only an empty stdout and stderr, nothing the first one left. */
static void test_task_dir_recycled(void **state)
{
    fixture_t *f = *state;
    const char *messy[] = {"/bin/sh", "-c",
                           "echo out; echo err >&2; echo x > junk; mkdir -p sub/deep; "
                           "echo y > sub/deep/f; ln -s /etc/hostname link; chmod 700 ."};
    create_argv(f, "j", "a", messy, 3);
    wait_state(f, "j", "a", PROTO_TASK_SUCCEEDED);
    char a[512], b[512];
    assert_int_equal(find_entry(f, "tasks", "-j-a-1", a, sizeof a, NULL), 0);
    assert_int_equal(file_size(a, "stdout"), 4);
    struct stat sa, sb, oa, ob;
    assert_int_equal(stat(a, &sa), 0);
    char p[1024];
    snprintf(p, sizeof p, "%s/stdout", a);
    assert_int_equal(stat(p, &oa), 0);

    node_sweep(f->n); /* forgets it: its directory goes to the spares */
    settle(f);
    size_t spares = 0, tasks = 0;
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(spares, 1);
    assert_int_equal(tasks, 0);

    const char *look[] = {"/bin/sh", "-c", "ls -A; pwd"};
    create_argv(f, "j", "b", look, 3);
    wait_state(f, "j", "b", PROTO_TASK_SUCCEEDED);
    assert_int_equal(find_entry(f, "tasks", "-j-b-1", b, sizeof b, NULL), 0);
    assert_int_equal(stat(b, &sb), 0);
    snprintf(p, sizeof p, "%s/stdout", b);
    assert_int_equal(stat(p, &ob), 0);
    assert_true(sa.st_ino == sb.st_ino); /* the same directory and stdout, renamed */
    assert_true(oa.st_ino == ob.st_ino);
    mode_t mask = umask(022);
    umask(mask);
    assert_int_equal(sb.st_mode & 07777, 0755 & ~mask); /* the first task's chmod undone */
    char want[1200], got[1200] = "";
    snprintf(want, sizeof want, "stderr\nstdout\n%s\n", b);
    FILE *o = fopen(p, "r");
    assert_non_null(o);
    size_t len = fread(got, 1, sizeof got - 1, o);
    fclose(o);
    got[len] = 0;
    assert_string_equal(got, want);
    assert_int_equal(file_size(b, "stderr"), 0);
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(spares, 0);
}

/* A task that succeeded leaving nothing (empty stdout and stderr, no files) gives its
 * directory back at once, before [tasks] retain: the next task reuses it. One that wrote
 * something, or failed, keeps its directory for a reader. */
static void test_task_dir_given_back_when_empty(void **state)
{
    fixture_t *f = *state;
    const char *quiet[] = {"/bin/true"};
    create_argv(f, "j", "q", quiet, 1);
    wait_state(f, "j", "q", PROTO_TASK_SUCCEEDED);
    settle(f);
    size_t spares = 0, tasks = 0;
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(spares, 1); /* no sweep: given back at the end */
    assert_int_equal(tasks, 0);

    const char *talk[] = {"/bin/sh", "-c", "echo out"};
    create_argv(f, "j", "t", talk, 3);
    wait_state(f, "j", "t", PROTO_TASK_SUCCEEDED);
    const char *fail[] = {"/bin/false"};
    create_argv(f, "j", "f", fail, 1);
    wait_state(f, "j", "f", PROTO_TASK_FAILED);
    settle(f);
    char t[512];
    assert_int_equal(find_entry(f, "tasks", "-j-t-1", t, sizeof t, NULL), 0);
    assert_int_equal(file_size(t, "stdout"), 4);
    assert_int_equal(find_entry(f, "tasks", "-j-f-1", t, sizeof t, NULL), 0);
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(spares, 0); /* the quiet task's directory went to "t" */
}

/* A process that escaped its task (setsid) and still holds the task's stdout open: the
 * directory is reused, but not that file, so what it writes cannot land in the next task's
 * output. */
static void test_task_dir_recycled_not_shared_output(void **state)
{
    fixture_t *f = *state;
    char script[600];
    snprintf(script, sizeof script,
             "echo kept > marker; " /* leaves something: its directory waits for the sweep */
             "setsid sh -c 'echo $$ > %s/escaped.pid; exec sleep 30' & "
             "while [ ! -s %s/escaped.pid ]; do sleep 0.01; done",
             f->dir, f->dir);
    const char *leak[] = {"/bin/sh", "-c", script};
    create_argv(f, "j", "a", leak, 3);
    wait_state(f, "j", "a", PROTO_TASK_SUCCEEDED);
    char a[512], b[512], p[1024];
    assert_int_equal(find_entry(f, "tasks", "-j-a-1", a, sizeof a, NULL), 0);
    struct stat da, db, oa, ob, ea, eb;
    assert_int_equal(stat(a, &da), 0);
    snprintf(p, sizeof p, "%s/stdout", a);
    assert_int_equal(stat(p, &oa), 0);
    snprintf(p, sizeof p, "%s/stderr", a);
    assert_int_equal(stat(p, &ea), 0);
    node_sweep(f->n);
    settle(f);
    const char *say[] = {"/bin/sh", "-c", "echo b"}; /* output: its directory is kept */
    create_argv(f, "j", "b", say, 3);
    wait_state(f, "j", "b", PROTO_TASK_SUCCEEDED);
    assert_int_equal(find_entry(f, "tasks", "-j-b-1", b, sizeof b, NULL), 0);
    assert_int_equal(stat(b, &db), 0);
    snprintf(p, sizeof p, "%s/stdout", b);
    assert_int_equal(stat(p, &ob), 0);
    snprintf(p, sizeof p, "%s/stderr", b);
    assert_int_equal(stat(p, &eb), 0);
    assert_true(da.st_ino == db.st_ino); /* the directory is reused */
    assert_true(oa.st_ino != ob.st_ino); /* its files, held open by the escapee, are not */
    assert_true(ea.st_ino != eb.st_ino);
    snprintf(p, sizeof p, "%s/escaped.pid", f->dir);
    FILE *pf = fopen(p, "r");
    assert_non_null(pf);
    int pid = 0;
    assert_int_equal(fscanf(pf, "%d", &pid), 1);
    fclose(pf);
    assert_true(pid > 1);
    kill(pid, SIGKILL);
}

/* A task that succeeded leaving nothing while a process it started (setsid) still holds its
 * stdout: its directory is given back at once, but not reused as it is on the loop: the next
 * task writes into a new stdout, not into the one the escapee holds. */
static void test_task_dir_quiet_escapee(void **state)
{
    fixture_t *f = *state;
    char script[600];
    snprintf(script, sizeof script,
             "setsid sh -c 'echo $$ > %s/quiet.pid; exec sleep 30' & "
             "while [ ! -s %s/quiet.pid ]; do sleep 0.01; done",
             f->dir, f->dir);
    const char *leak[] = {"/bin/sh", "-c", script};
    create_argv(f, "j", "a", leak, 3);
    wait_state(f, "j", "a", PROTO_TASK_SUCCEEDED);
    settle(f);
    size_t tasks = 0;
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(tasks, 0); /* given back: it left nothing */
    char p[1024];
    snprintf(p, sizeof p, "%s/quiet.pid", f->dir);
    FILE *pf = fopen(p, "r");
    assert_non_null(pf);
    int pid = 0;
    assert_int_equal(fscanf(pf, "%d", &pid), 1);
    fclose(pf);
    assert_true(pid > 1);
    struct stat held, ob;
    snprintf(p, sizeof p, "/proc/%d/fd/1", pid);
    assert_int_equal(stat(p, &held), 0);
    const char *say[] = {"/bin/sh", "-c", "echo b"};
    create_argv(f, "j", "b", say, 3);
    wait_state(f, "j", "b", PROTO_TASK_SUCCEEDED);
    char b[512];
    assert_int_equal(find_entry(f, "tasks", "-j-b-1", b, sizeof b, NULL), 0);
    snprintf(p, sizeof p, "%s/stdout", b);
    assert_int_equal(stat(p, &ob), 0);
    assert_true(held.st_ino != ob.st_ino || held.st_dev != ob.st_dev);
    assert_int_equal(file_size(b, "stdout"), 2);
    kill(pid, SIGKILL);
}

/* ---- spawner threads (issue 24) ---- */

static int setup_spawners(void **state)
{
    return setup_with(state, "tasks.spawn_threads=3");
}

/* Many short tasks through three spawner threads: most exit before their spawner's result
 * reaches the loop (their exits are parked until it does). Every task is reported RUNNING at
 * most once and then its true outcome, with its start time; none is lost. A task that ended in
 * the loop pass its start was seen in gets its terminal status alone (counted). */
static void test_spawners_short_tasks(void **state)
{
    fixture_t *f = *state;
    enum { N = 60 };
    const char *ok[] = {"/bin/true"};
    const char *bad[] = {"/bin/sh", "-c", "exit 3"};
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "t%d", i);
        if (i % 6 == 5)
            create_argv(f, "j", ids[i], bad, 3);
        else
            create_argv(f, "j", ids[i], ok, 1);
    }
    for (int i = 0; i < N; i++)
        wait_state(f, "j", ids[i], i % 6 == 5 ? PROTO_TASK_FAILED : PROTO_TASK_SUCCEEDED);
    size_t merged = 0;
    for (int i = 0; i < N; i++) {
        size_t running = 0, terminal = 0;
        for (size_t k = 0; k < f->nsent; k++) {
            const sent_t *st = &f->sent[k];
            if (st->type != PROTO_TASK_STATUS || strcmp(st->task, ids[i]) != 0)
                continue;
            running += st->state == PROTO_TASK_RUNNING;
            terminal += proto_task_state_terminal(st->state);
            if (st->state == PROTO_TASK_FAILED)
                assert_non_null(strstr(st->text, "exit code 3"));
            if (proto_task_state_terminal(st->state))
                assert_true(st->started_at > 0);
        }
        assert_true(running <= 1);
        assert_int_equal(terminal, 1);
        merged += running == 0;
    }
    node_counters_t c = counters(f);
    assert_int_equal(c.running_unsent, merged);
    assert_int_equal(c.starts[0] + c.starts[1], N);
    assert_int_equal(c.spawn_failures, 0);
    assert_int_equal(node_spawning(f->n), 0);
}

/* A task cancelled while a spawner thread starts it (its result not yet taken by the loop) is
 * killed when the result comes and reported cancelled, never left running. */
static void test_spawners_cancel_in_flight(void **state)
{
    fixture_t *f = *state;
    enum { N = 5 };
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "s%d", i);
        const char *sl[] = {"/bin/sleep", "30"};
        create_argv(f, "j", ids[i], sl, 2);
    }
    /* one loop iteration takes the results (poll) before it hands out new spawns (check):
     * stop right after the iteration that handed some out, and they are still in flight */
    size_t in_flight = 0;
    for (int i = 0; i < 10000 && (in_flight = node_spawning(f->n)) == 0; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        pause_ms(1);
    }
    assert_true(in_flight > 0);
    for (int i = 0; i < N; i++)
        cancel(f, "A", "j", ids[i], 0);
    for (int i = 0; i < N; i++) {
        const sent_t *st = wait_state(f, "j", ids[i], PROTO_TASK_CANCELLED);
        assert_non_null(strstr(st->text, "cancelled"));
    }
    node_counters_t c = counters(f);
    /* those in flight started, then were killed and reaped; the rest never started */
    assert_int_equal(c.starts[0] + c.starts[1], in_flight);
    assert_int_equal(c.cancelled, N);
    assert_int_equal(node_spawning(f->n), 0);
}

/* With the loop thread spawning (spawn_threads=0), the same tasks behave the same. */
static int setup_inline(void **state)
{
    return setup_with(state, "tasks.spawn_threads=0");
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
    };
    const struct CMUnitTest dirs[] = {
        T(test_estimate_changes_wait),
        T(test_refresh_progress),
        T(test_cache_advertised),
        cmocka_unit_test_setup_teardown(test_task_dir_recycled, setup_forget, teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_given_back_when_empty, setup_forget,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_recycled_not_shared_output, setup_forget,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_quiet_escapee, setup_forget, teardown),
    };
    const struct CMUnitTest spawners[] = {
        cmocka_unit_test_setup_teardown(test_spawners_short_tasks, setup_spawners, teardown),
        cmocka_unit_test_setup_teardown(test_spawners_cancel_in_flight, setup_spawners, teardown),
        cmocka_unit_test_setup_teardown(test_spawners_short_tasks, setup_inline, teardown),
    };
    int rc = cmocka_run_group_tests_name("node fencing", fence, NULL, NULL);
    rc |= cmocka_run_group_tests_name("node statuses held back", quiet, NULL, NULL);
    rc |= cmocka_run_group_tests_name("node spawner threads", spawners, NULL, NULL);
    rc |= cmocka_run_group_tests_name("node task directories", dirs, NULL, NULL);
    rc |= cmocka_run_group_tests_name("node query", query_tests, NULL, NULL);
    return rc | cmocka_run_group_tests_name("node reaping", reap, NULL, NULL);
}
