/* node_fixture.c - see node_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/mem.h"
#include "tests/pn/node_fixture.h"

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

int setup_with(void **state, const char *extra)
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

int setup(void **state)
{
    return setup_with(state, NULL);
}

/* The daemon's default: no QUEUED status for a task that starts once set up. */
int setup_quiet(void **state)
{
    return setup_with(state, "tasks.quiet_queued=true");
}

/* Finished tasks are forgotten at the first sweep. */
int setup_forget(void **state)
{
    return setup_with(state, "tasks.retain_max=0");
}

void settle(fixture_t *f)
{
    /* staging on the thread pool must have drained before node_destroy (pn/node.h): wait for
     * its completions (UV_RUN_ONCE blocks until one comes), not a fixed number of turns */
    for (int i = 0; i < 100000 && node_busy(f->n) > 0; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
}

int teardown(void **state)
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

void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void deliver(fixture_t *f, const char *peer, const proto_msg_t *m)
{
    char err[256];
    assert_int_equal(proto_encode(m, &f->buf, err, sizeof err), 0);
    node_handle(f->n, peer, strlen(peer), f->buf.data, f->buf.len);
}

const char *sleeper[] = {"/bin/sleep", "30"};

void create(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch,
            uint64_t req_id)
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

/* A command about job/task's attempt 1 under `epoch`: the message `m` of `type`, its body the
 * union member `body` (each names the job, task, attempt and epoch alike). */
#define TASK_COMMAND(m, type, body, job, task, epoch)                                              \
    do {                                                                                           \
        proto_msg_init(&(m), (type));                                                              \
        (m).body.job_id = (char *)(job);                                                           \
        (m).body.task_id = (char *)(task);                                                         \
        (m).body.attempt = 1;                                                                      \
        (m).body.epoch = (epoch);                                                                  \
    } while (0)

void cancel(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch)
{
    proto_msg_t m;
    TASK_COMMAND(m, PROTO_TASK_CANCEL, task_cancel, job, task, epoch);
    deliver(f, peer, &m);
}

void upgrade(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch)
{
    proto_msg_t m;
    TASK_COMMAND(m, PROTO_TASK_UPGRADE, task_upgrade, job, task, epoch);
    m.task_upgrade.task_class = PROTO_CLASS_REGULAR;
    deliver(f, peer, &m);
}

void estimate(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch,
              uint64_t runtime_ms)
{
    proto_msg_t m;
    TASK_COMMAND(m, PROTO_TASK_ESTIMATE, task_estimate, job, task, epoch);
    m.task_estimate.runtime_ms = runtime_ms;
    deliver(f, peer, &m);
}

void query(fixture_t *f, const char *peer, const char *job, uint32_t epoch, const char *reply,
           uint64_t req_id)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_QUERY);
    m.req_id = req_id;
    m.task_query.job_id = (char *)job;
    m.task_query.epoch = epoch;
    m.task_query.reply_endpoint = (char *)reply;
    deliver(f, peer, &m);
}

void ack(fixture_t *f, const char *job, uint32_t state, uint32_t epoch, uint64_t now)
{
    proto_job_info_t ji = {.job_id = (char *)job, .state = state, .epoch = epoch};
    proto_heartbeat_ack_t a = {.jobs = &ji, .njobs = 1, .rm_id = 1};
    node_jobs_ack(f->n, &a, now);
}

/* The last status of job/task sent, or NULL. */
const sent_t *last_status(const fixture_t *f, const char *job, const char *task)
{
    for (size_t i = f->nsent; i-- > 0;)
        if (f->sent[i].type == PROTO_TASK_STATUS && strcmp(f->sent[i].job, job) == 0 &&
            strcmp(f->sent[i].task, task) == 0)
            return &f->sent[i];
    return NULL;
}

/* Runs the loop and reaps until job/task's last status is `s` (bounded: 10 s). */
const sent_t *wait_state(fixture_t *f, const char *job, const char *task, proto_task_state_t s)
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

const sent_t *last(const fixture_t *f)
{
    assert_true(f->nsent > 0);
    return &f->sent[f->nsent - 1];
}

node_counters_t counters(const fixture_t *f)
{
    node_counters_t c;
    node_counters(f->n, &c);
    return c;
}
