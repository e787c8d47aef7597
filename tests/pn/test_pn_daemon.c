/* Integration test: a real paddock-pn on 127.0.0.1 and this test acting as a job manager
 * (DEALER). No RM answers (its endpoint is a closed port): the PN must work regardless. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pn_client.h"

#define MAXT 1200

typedef struct seen {
    char name[64];
    int order[PROTO_TASK_STATE_COUNT]; /* 1-based arrival rank of each state, 0 = not seen */
    int nstatus;
    proto_task_state_t last;
    proto_task_class_t klass;
    int exit_code, signal;
    uint64_t cpu_ms, rss_kb, wall_ms;
    int64_t queued_at, started_at, ended_at;
    uint32_t hits, misses;
    int64_t queued_wait_ms; /* expected_wait_ms of its QUEUED status, -1 before one */
    char reason[256];
} seen_t;

static pnc_daemon_t d;
static seen_t seen[MAXT];
static int nseen;
static int64_t cells[4 * MAXT]; /* matrix cell (0,0) of every status, in arrival order */
static char cell_task[4 * MAXT][64];
static int cell_state[4 * MAXT];
static int ncells;

static seen_t *find(const char *name)
{
    for (int i = 0; i < nseen; i++)
        if (strcmp(seen[i].name, name) == 0)
            return &seen[i];
    if (nseen == MAXT)
        return NULL;
    seen_t *s = &seen[nseen++];
    memset(s, 0, sizeof *s);
    s->queued_wait_ms = -1;
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

static void reset_seen(void)
{
    nseen = 0;
    ncells = 0;
}

/* Receives one message; statuses are recorded. Returns its type, or 0 on timeout. */
static int pump(zsock_t *s, int timeout_ms, proto_msg_t *keep)
{
    proto_msg_t m;
    if (pnc_recv(s, &m, timeout_ms) != 0)
        return 0;
    int type = m.type;
    if (m.type == PROTO_TASK_STATUS) {
        const proto_task_status_t *st = &m.task_status;
        seen_t *x = find(st->task_id);
        if (x) {
            x->nstatus++;
            if (!x->order[st->state])
                x->order[st->state] = x->nstatus;
            x->last = st->state;
            x->klass = st->task_class;
            x->exit_code = st->exit_code;
            x->signal = st->signal;
            x->cpu_ms = st->cpu_time_ms;
            x->rss_kb = st->peak_rss_kb;
            x->wall_ms = st->wall_ms;
            x->queued_at = st->queued_at_ms;
            x->started_at = st->started_at_ms;
            x->ended_at = st->ended_at_ms;
            x->hits = st->cache_hits;
            x->misses = st->cache_misses;
            if (st->state == PROTO_TASK_QUEUED)
                x->queued_wait_ms = (int64_t)st->expected_wait_ms;
            snprintf(x->reason, sizeof x->reason, "%s", st->reason ? st->reason : "");
        }
        if (ncells < 4 * MAXT && st->matrix.ncpu > 0) {
            cells[ncells] = proto_matrix_cell(&st->matrix, 0, 0);
            snprintf(cell_task[ncells], 64, "%s", st->task_id);
            cell_state[ncells] = (int)st->state;
            ncells++;
        }
    }
    if (keep)
        *keep = m;
    else
        proto_msg_close(&m);
    return type;
}

static int terminal(const char *name)
{
    seen_t *x = find(name);
    return x && proto_task_state_terminal(x->last) && x->nstatus > 0;
}

static int state_of(const char *name, proto_task_state_t st)
{
    seen_t *x = find(name);
    return x && x->order[st];
}

/* Pumps until `name` has reached state `st` (bounded by timeout_ms in total). */
static int await_state(zsock_t *s, const char *name, proto_task_state_t st, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms && !state_of(name, st); waited += 50)
        pump(s, 50, NULL);
    return state_of(name, st);
}

static int group_setup(void **state)
{
    (void)state;
    /* an RM endpoint nobody listens on */
    const char *extra = "[rm]\nendpoints = tcp://127.0.0.1:9\nheartbeat = 100ms\n"
                        "[node]\ncpus = 2\nmemory = 4GiB\n"
                        "[queue]\nmatrix_min_interval = 0ms\ncpu_bins = 0.5,1,2\n"
                        "mem_bins_mb = 1024,4096\n"
                        "[tasks]\nmemory_poll = 20ms\nmemory_margin_mb = 16\n"
                        "status_refresh = 0s\n"; /* exact status sequences below */
    return pnc_start(&d, extra);
}

static int teardown(void **state)
{
    (void)state;
    pnc_close_all();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    pnc_close_all();
    return pnc_stop(&d);
}

static void test_thousand_tasks(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    assert_non_null(s);
    const char *t_true[] = {"true", NULL};
    const char *t_fail[] = {"sh", "-c", "exit 3", NULL};
    const char *t_cpu[] = {"sh", "-c", "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done", NULL};
    char name[64];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        pnc_task_t t = {.job = "j-000000000001",
                        .task = name,
                        .cpu = 0.05,
                        .mem_mb = 16,
                        .runtime_ms = 100,
                        .argv = i % 100 == 7  ? t_cpu
                                : i % 10 == 3 ? t_fail
                                              : t_true};
        assert_int_equal(pnc_create(s, &t), 0);
    }
    int done = 0;
    for (int waited = 0; waited < 90000 && done < 1000; waited++) {
        pump(s, 100, NULL);
        done = 0;
        for (int i = 0; i < nseen; i++)
            done += proto_task_state_terminal(seen[i].last) && seen[i].nstatus > 0;
    }
    assert_int_equal(done, 1000);
    int unsent = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        seen_t *x = find(name);
        /* queued, running, ended; or, for a task that started as soon as it was set up
           ([tasks] quiet_queued), running and ended; and without running for a task that
           ended in the loop pass its start was seen in (its end says when it started) */
        int ran = x->order[PROTO_TASK_RUNNING] != 0;
        if (x->order[PROTO_TASK_QUEUED] == 0) {
            unsent++;
            assert_true(!ran || x->order[PROTO_TASK_RUNNING] == 1);
            assert_int_equal(x->nstatus, 1 + ran);
        } else {
            assert_true(x->order[PROTO_TASK_QUEUED] == 1);
            assert_true(!ran || x->order[PROTO_TASK_RUNNING] == 2);
            assert_int_equal(x->nstatus, 2 + ran);
        }
        assert_true(x->queued_at > 0 && x->started_at >= x->queued_at &&
                    x->ended_at >= x->started_at);
        assert_true(x->wall_ms < 30000);
        assert_true(x->rss_kb > 0);
        if (i % 10 == 3 && i % 100 != 7) {
            assert_int_equal(x->last, PROTO_TASK_FAILED);
            assert_int_equal(x->exit_code, 3);
            assert_string_equal(x->reason, "exit code 3");
        } else {
            assert_int_equal(x->last, PROTO_TASK_SUCCEEDED);
            assert_int_equal(x->exit_code, 0);
            assert_int_equal(x->signal, 0);
        }
        if (i % 100 == 7)
            assert_true(x->cpu_ms >= 5); /* a shell loop burns measurable CPU */
    }
    /* the first task, at least, found the node idle; 1,000 at once cannot all start at once */
    assert_true(find("t0")->order[PROTO_TASK_QUEUED] == 0);
    assert_true(unsent >= 1 && unsent < 1000);
    fprintf(stderr, "%d of 1000 tasks started without a QUEUED status\n", unsent);
}

static int pid_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static void test_cancel_kills_grandchildren(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    char script[2048], path[300];
    snprintf(path, sizeof path, "%s/gc.pid", d.dir);
    snprintf(script, sizeof script, "sleep 300 & echo $! > %s.tmp; mv %s.tmp %s; wait", path, path,
             path);
    const char *argv[] = {"sh", "-c", script, NULL};
    pnc_task_t t = {
        .job = "j-000000000002", .task = "tree", .cpu = 0.5, .mem_mb = 64, .argv = argv};
    assert_int_equal(pnc_create(s, &t), 0);
    assert_true(await_state(s, "tree", PROTO_TASK_RUNNING, 10000));
    pid_t gc = 0;
    for (int i = 0; i < 200 && gc <= 0; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%d", &gc) != 1)
                gc = 0;
            fclose(f);
        }
        if (gc <= 0)
            pump(s, 50, NULL);
    }
    assert_true(gc > 0);
    assert_false(pid_gone(gc));
    assert_int_equal(pnc_cancel(s, "j-000000000002", "tree", 0), 0);
    assert_true(await_state(s, "tree", PROTO_TASK_CANCELLED, 10000));
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = pid_gone(gc);
        if (!gone)
            pump(s, 25, NULL);
    }
    assert_true(gone);
}

static void test_memory_limit(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    const char *argv[] = {"sh", "-c", "head -c 1000000000 /dev/zero | tail > /dev/null", NULL};
    pnc_task_t t = {.job = "j-000000000003", .task = "hog", .cpu = 0.5, .mem_mb = 32, .argv = argv};
    assert_int_equal(pnc_create(s, &t), 0);
    assert_true(await_state(s, "hog", PROTO_TASK_FAILED, 20000));
    seen_t *x = find("hog");
    assert_non_null(x);
    if (x == NULL) /* as the assertion: a Release build's -O2 does not see that it ends the test */
        return;
    assert_non_null(strstr(x->reason, "memory limit"));
    assert_true(x->rss_kb > 32 * 1024);
    assert_int_equal(x->signal, SIGKILL);
}

static long long await_counter(const char *key, long long want, int timeout_ms);

/* A class trade inside one job (issue 22): when the job's regular task is about to start and a
 * queued opportunistic task of the same job has a higher priority, that one starts as regular in
 * its place, the JM hears both class changes ("class trade"), and the PN counts it. */
static void test_class_trade(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    const char *blocker_argv[] = {"sleep", "1", NULL};
    const char *short_argv[] = {"sleep", "0.3", NULL};
    long long trades0 = pnc_status_field(&d, "class_trades");
    pnc_task_t b = {.job = "j-000000000024",
                    .task = "blocker",
                    .cpu = 2,
                    .mem_mb = 32,
                    .priority = 9,
                    .argv = blocker_argv};
    assert_int_equal(pnc_create(s, &b), 0);
    assert_true(await_state(s, "blocker", PROTO_TASK_RUNNING, 10000));
    pnc_task_t o = {.job = "j-000000000024",
                    .task = "critical",
                    .klass = PROTO_CLASS_OPPORTUNISTIC,
                    .weight = 1,
                    .cpu = 2,
                    .mem_mb = 32,
                    .priority = 5,
                    .argv = short_argv};
    assert_int_equal(pnc_create(s, &o), 0);
    pnc_task_t r = {.job = "j-000000000024",
                    .task = "sibling",
                    .cpu = 2,
                    .mem_mb = 32,
                    .priority = 1,
                    .argv = short_argv};
    assert_int_equal(pnc_create(s, &r), 0);
    assert_true(await_state(s, "critical", PROTO_TASK_SUCCEEDED, 15000));
    assert_int_equal(find("critical")->klass, PROTO_CLASS_REGULAR);
    assert_true(await_state(s, "sibling", PROTO_TASK_SUCCEEDED, 15000));
    /* the sibling waited as opportunistic and ran after the critical task */
    assert_true(find("sibling")->started_at >= find("critical")->started_at);
    assert_true(await_counter("class_trades", trades0 + 1, 5000) == trades0 + 1);
}

/* Regular work preempts another job's running opportunistic task, but not its own job's: then
 * the two trade classes (issue 22); an upgraded task is not preempted. */
static void test_preemption(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    const char *sleepy[] = {"sleep", "300", NULL};
    const char *quick[] = {"true", NULL};
    pnc_task_t o = {.job = "j-000000000004",
                    .task = "opp",
                    .klass = PROTO_CLASS_OPPORTUNISTIC,
                    .weight = 1,
                    .cpu = 2,
                    .mem_mb = 64,
                    .argv = sleepy};
    assert_int_equal(pnc_create(s, &o), 0);
    assert_true(await_state(s, "opp", PROTO_TASK_RUNNING, 10000));
    long long swaps0 = pnc_status_field(&d, "class_swaps");
    /* the job's own regular task does not preempt it (issue 22): the running one turns
       regular in its place, and the queued one, which never ran, goes back to its JM */
    pnc_task_t r = {.job = "j-000000000004", .task = "own", .cpu = 1, .mem_mb = 64, .argv = quick};
    assert_int_equal(pnc_create(s, &r), 0);
    assert_true(await_state(s, "own", PROTO_TASK_CANCELLED, 10000));
    assert_non_null(strstr(find("own")->reason, "returned"));
    assert_false(state_of("own", PROTO_TASK_RUNNING));
    for (int i = 0; i < 100 && find("opp")->klass != PROTO_CLASS_REGULAR; i++)
        pump(s, 50, NULL);
    assert_int_equal(find("opp")->klass, PROTO_CLASS_REGULAR);
    assert_int_equal(find("opp")->last, PROTO_TASK_RUNNING);
    assert_false(state_of("opp", PROTO_TASK_PREEMPTED));
    assert_true(await_counter("class_swaps", swaps0 + 1, 5000) >= swaps0 + 1);
    assert_int_equal(pnc_cancel(s, "j-000000000004", "opp", 0), 0);
    assert_true(await_state(s, "opp", PROTO_TASK_CANCELLED, 10000));
    /* another job's regular task still preempts it */
    o.task = "opp3";
    assert_int_equal(pnc_create(s, &o), 0);
    assert_true(await_state(s, "opp3", PROTO_TASK_RUNNING, 10000));
    r.job = "j-000000000014";
    r.task = "reg";
    assert_int_equal(pnc_create(s, &r), 0);
    assert_true(await_state(s, "opp3", PROTO_TASK_PREEMPTED, 10000));
    assert_non_null(strstr(find("opp3")->reason, "preempted"));
    assert_true(await_state(s, "reg", PROTO_TASK_SUCCEEDED, 10000));
    r.job = "j-000000000004";
    /* an upgraded opportunistic task is no longer preempted */
    o.task = "opp2";
    assert_int_equal(pnc_create(s, &o), 0);
    assert_true(await_state(s, "opp2", PROTO_TASK_RUNNING, 10000));
    assert_int_equal(pnc_upgrade(s, "j-000000000004", "opp2", 0), 0);
    for (int i = 0; i < 100 && find("opp2")->klass != PROTO_CLASS_REGULAR; i++)
        pump(s, 50, NULL);
    assert_int_equal(find("opp2")->klass, PROTO_CLASS_REGULAR);
    r.task = "reg2";
    assert_int_equal(pnc_create(s, &r), 0);
    assert_true(await_state(s, "reg2", PROTO_TASK_QUEUED, 10000));
    for (int i = 0; i < 6; i++)
        pump(s, 50, NULL);
    assert_false(state_of("opp2", PROTO_TASK_PREEMPTED));
    assert_false(state_of("reg2", PROTO_TASK_RUNNING));
    assert_int_equal(pnc_cancel(s, "j-000000000004", "opp2", 0), 0);
    assert_true(await_state(s, "reg2", PROTO_TASK_SUCCEEDED, 10000));
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits (bounded) until status.json's counter `key` reaches at least `want`. */
static long long await_counter(const char *key, long long want, int timeout_ms)
{
    long long v = pnc_status_field(&d, key);
    for (int waited = 0; waited < timeout_ms && v < want; waited += 50) {
        usleep(50 * 1000);
        v = pnc_status_field(&d, key);
    }
    return v;
}

/* A downgrade (issue 12: the job's spare tokens were reclaimed) keeps the task running in
 * place: the status says opportunistic, the task is not restarted and succeeds. Within its
 * grace it is not preempted for regular work; after the grace it is, and both are counted. */
static void test_downgrade_in_place(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    long long downgrades0 = await_counter("downgrades", 0, 2000);
    long long preempted0 = await_counter("preempted", 0, 2000);
    assert_true(downgrades0 >= 0 && preempted0 >= 0);
    const char *one[] = {"sleep", "1", NULL};
    pnc_task_t r = {.job = "j-000000000012", .task = "dg", .cpu = 2, .mem_mb = 64, .argv = one};
    assert_int_equal(pnc_create(s, &r), 0);
    assert_true(await_state(s, "dg", PROTO_TASK_RUNNING, 10000));
    seen_t *x = find("dg");
    assert_int_equal(x->klass, PROTO_CLASS_REGULAR);
    int64_t started = x->started_at;
    int nstatus = x->nstatus;
    assert_int_equal(pnc_downgrade(s, "j-000000000012", "dg", 0, 0), 0);
    for (int i = 0; i < 100 && x->nstatus == nstatus; i++)
        pump(s, 50, NULL);
    assert_int_equal(x->nstatus, nstatus + 1); /* the reply */
    assert_int_equal(x->klass, PROTO_CLASS_OPPORTUNISTIC);
    assert_int_equal(x->last, PROTO_TASK_RUNNING);
    assert_true(x->started_at == started);
    assert_true(await_state(s, "dg", PROTO_TASK_SUCCEEDED, 10000));
    assert_int_equal(x->exit_code, 0);
    assert_true(x->started_at == started);            /* one run, not restarted */
    assert_int_equal(x->order[PROTO_TASK_QUEUED], 0); /* the node was idle: started at once */
    assert_int_equal(x->order[PROTO_TASK_RUNNING], 1);
    assert_int_equal(x->nstatus, nstatus + 2); /* running, downgraded, succeeded */
    assert_int_equal(x->klass, PROTO_CLASS_OPPORTUNISTIC);
    assert_true(await_counter("downgrades", downgrades0 + 1, 5000) == downgrades0 + 1);
    /* downgrading it again, or a finished task, changes nothing and still answers */
    assert_int_equal(pnc_downgrade(s, "j-000000000012", "dg", 0, 0), 0);
    for (int i = 0; i < 100 && x->nstatus == nstatus + 2; i++)
        pump(s, 50, NULL);
    assert_int_equal(x->last, PROTO_TASK_SUCCEEDED);

    /* with a grace: a regular task that needs the node waits for it, then it is preempted */
    const char *sleepy[] = {"sleep", "300", NULL};
    const char *quick[] = {"true", NULL};
    r.task = "dg2";
    r.argv = sleepy;
    assert_int_equal(pnc_create(s, &r), 0);
    assert_true(await_state(s, "dg2", PROTO_TASK_RUNNING, 10000));
    const int grace_ms = 1500;
    int64_t t0 = mono_ms();
    assert_int_equal(pnc_downgrade(s, "j-000000000012", "dg2", 0, grace_ms), 0);
    /* the tokens went to another job: its regular task (the job's own would swap classes) */
    pnc_task_t q = {.job = "j-000000000013", .task = "reg3", .cpu = 1, .mem_mb = 64, .argv = quick};
    assert_int_equal(pnc_create(s, &q), 0);
    assert_true(await_state(s, "reg3", PROTO_TASK_QUEUED, 10000));
    assert_int_equal(find("dg2")->klass, PROTO_CLASS_OPPORTUNISTIC);
    assert_true(await_state(s, "dg2", PROTO_TASK_PREEMPTED, 10000));
    int64_t waited = mono_ms() - t0;
    assert_true(waited >= grace_ms);
    assert_non_null(strstr(find("dg2")->reason, "preempted"));
    assert_true(await_state(s, "reg3", PROTO_TASK_SUCCEEDED, 10000));
    assert_true(find("reg3")->started_at > 0); /* it ran (RUNNING may come with its end) */
    assert_true(await_counter("preempted", preempted0 + 1, 5000) == preempted0 + 1);
    assert_true(await_counter("downgrades", downgrades0 + 2, 5000) == downgrades0 + 2);
}

/* Five 2-core tasks estimated at 2 s each on a 2-core node: the wait for a new task rises by
 * 2 s with every one queued, and falls as they finish. */
static void test_matrix_rises_and_falls(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    const char *argv[] = {"sleep", "0.2", NULL};
    char name[16];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "m%d", i);
        pnc_task_t t = {.job = "j-000000000005",
                        .task = name,
                        .cpu = 2,
                        .mem_mb = 64,
                        .runtime_ms = 2000,
                        .argv = argv};
        assert_int_equal(pnc_create(s, &t), 0);
    }
    for (int waited = 0; waited < 20000 && !terminal("m4"); waited += 50)
        pump(s, 50, NULL);
    assert_true(terminal("m4"));
    int64_t prev = -1, peak = 0;
    int rises = 0, falls = 0;
    for (int i = 0; i < ncells; i++) {
        if (cell_state[i] == PROTO_TASK_QUEUED) {
            assert_true(cells[i] > prev);
            prev = cells[i];
            rises++;
        }
        if (cells[i] > peak)
            peak = cells[i];
    }
    assert_int_equal(rises, 4); /* m0 started at once: no QUEUED status */
    assert_true(peak >= 8000);
    prev = INT64_MAX;
    for (int i = 0; i < ncells; i++) {
        if (cell_state[i] == PROTO_TASK_SUCCEEDED) {
            assert_true(cells[i] < prev);
            prev = cells[i];
            falls++;
        }
    }
    assert_int_equal(falls, 5);
    assert_int_equal(prev, 0);
    /* Each QUEUED status also says where that task stands: about 2 s behind the one before
       (Apollo §3.4: what the JM compares with the wait it placed the task on). */
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "m%d", i);
        int64_t w = find(name)->queued_wait_ms;
        fprintf(stderr, "%s: expected wait %lld ms when queued\n", name, (long long)w);
        if (i == 0)
            assert_true(w == -1); /* its expected wait was 0: RUNNING answered its create */
        else
            assert_true(w >= 2000 * i - 500 && w <= 2000 * i + 100);
    }
}

static void test_staging_cache(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    char file[512];
    snprintf(file, sizeof file, "%s/input.txt", d.dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("hello staging\n", f);
    fclose(f);
    const char *argv[] = {"grep", "-q", "hello staging", "input.txt", NULL};
    pnc_task_t t = {.job = "j-000000000006",
                    .task = "s1",
                    .cpu = 0.5,
                    .mem_mb = 64,
                    .argv = argv,
                    .file = file};
    assert_int_equal(pnc_create(s, &t), 0);
    assert_true(await_state(s, "s1", PROTO_TASK_SUCCEEDED, 10000));
    assert_int_equal(find("s1")->order[PROTO_TASK_STAGING], 1);
    assert_int_equal(find("s1")->misses, 1);
    assert_int_equal(find("s1")->hits, 0);
    t.task = "s2";
    assert_int_equal(pnc_create(s, &t), 0);
    assert_true(await_state(s, "s2", PROTO_TASK_SUCCEEDED, 10000));
    assert_int_equal(find("s2")->hits, 1);
    assert_int_equal(find("s2")->misses, 0);
    /* an executable file stays executable and runs from the task's directory */
    char script[512];
    snprintf(script, sizeof script, "%s/run.sh", d.dir);
    f = fopen(script, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    assert_int_equal(chmod(script, 0755), 0);
    const char *run[] = {"./run.sh", NULL};
    pnc_task_t x = {.job = "j-000000000006",
                    .task = "sx",
                    .cpu = 0.5,
                    .mem_mb = 64,
                    .argv = run,
                    .file = script};
    assert_int_equal(pnc_create(s, &x), 0);
    assert_true(await_state(s, "sx", PROTO_TASK_SUCCEEDED, 10000));
    t.task = "s3";
    t.file = "/nonexistent/file";
    assert_int_equal(pnc_create(s, &t), 0);
    assert_true(await_state(s, "s3", PROTO_TASK_FAILED, 10000));
    assert_non_null(strstr(find("s3")->reason, "staging"));
}

/* A JM that reconnects (new routing id) gets the state of its job's tasks. */
static void test_reconnect_gets_state(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *a = pnc_connect(&d);
    const char *sleepy[] = {"sleep", "300", NULL};
    pnc_task_t t = {
        .job = "j-000000000007", .task = "long", .cpu = 0.5, .mem_mb = 64, .argv = sleepy};
    assert_int_equal(pnc_create(a, &t), 0);
    assert_true(await_state(a, "long", PROTO_TASK_RUNNING, 10000));
    reset_seen();
    zsock_t *b = pnc_connect(&d);
    t.task = "long";
    assert_int_equal(pnc_create(b, &t), 0); /* the same attempt again: no second process */
    assert_true(await_state(b, "long", PROTO_TASK_RUNNING, 10000));
    assert_false(state_of("long", PROTO_TASK_QUEUED));
    assert_int_equal(pnc_cancel(b, "j-000000000007", "long", 0), 0);
    assert_true(await_state(b, "long", PROTO_TASK_CANCELLED, 10000));
}

/* A task inherits stdin, stdout and stderr and nothing else of the PN (no sockets, no
 * cache files): ls sees 0, 1, 2 and the directory it reads. */
static void test_no_descriptor_leaks(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    const char *argv[] = {"sh", "-c", "n=$(ls /proc/self/fd | wc -l); test \"$n\" -le 4", NULL};
    pnc_task_t t = {.job = "j-00000000000a", .task = "fds", .cpu = 0.5, .mem_mb = 64, .argv = argv};
    assert_int_equal(pnc_create(s, &t), 0);
    for (int waited = 0; waited < 10000 && !terminal("fds"); waited += 50)
        pump(s, 50, NULL);
    assert_int_equal(find("fds")->last, PROTO_TASK_SUCCEEDED);
}

/* Statuses go to the reply_endpoint a TASK_CREATE names (a ROUTER of the JM's own). */
static void test_reply_endpoint(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    zsock_t *inbox = pnc_track(zsock_new(ZMQ_ROUTER));
    int port = zsock_bind(inbox, "tcp://127.0.0.1:*");
    assert_true(port > 0);
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", port);
    const char *quick[] = {"true", NULL};
    pnc_task_t t = {.job = "j-000000000009",
                    .task = "r1",
                    .cpu = 0.5,
                    .mem_mb = 64,
                    .argv = quick,
                    .reply = ep};
    assert_int_equal(pnc_create(s, &t), 0);
    int terminal_seen = 0;
    zsock_set_rcvtimeo(inbox, 100);
    for (int k = 0; k < 100 && !terminal_seen; k++) {
        zmsg_t *msg = zmsg_recv(inbox);
        if (!msg)
            continue;
        assert_int_equal(zmsg_size(msg), 2); /* the PN's routing id, the status */
        zframe_t *id = zmsg_pop(msg), *body = zmsg_pop(msg);
        proto_msg_t m;
        assert_int_equal(proto_decode(zframe_data(body), zframe_size(body), &m, NULL, NULL, 0), 0);
        assert_int_equal(m.type, PROTO_TASK_STATUS);
        assert_string_equal(m.task_status.task_id, "r1");
        terminal_seen = m.task_status.state == PROTO_TASK_SUCCEEDED;
        proto_msg_close(&m);
        zframe_destroy(&id);
        zframe_destroy(&body);
        zmsg_destroy(&msg);
    }
    assert_true(terminal_seen);
    proto_msg_t m;
    assert_int_equal(pump(s, 200, &m), 0); /* nothing came back the other way */
}

/* Garbage and every truncation of a valid request: each answered by ERROR, none run, the PN
 * keeps working. */
static void test_garbage_storm(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    /* a valid TASK_CREATE, to truncate */
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    char *argv[] = {"true", NULL};
    m.task_create.job_id = "j-00000000000b";
    m.task_create.task_id = "never";
    m.task_create.argv = argv;
    m.task_create.argc = 1;
    m.task_create.cpu = 0.5;
    m.task_create.mem_mb = 64;
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(&m, &b, NULL, 0), 0);
    uint64_t x = 88172645463325252ULL;
    int sent = 0;
    for (size_t cut = 0; cut < b.len; cut++, sent++)
        assert_int_equal(pnc_send_raw(s, b.data, cut ? cut : 1), 0);
    unsigned char junk[256];
    for (int i = 0; i < 1000; i++, sent++) {
        size_t len = 1 + (size_t)(x % sizeof junk);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            junk[k] = (unsigned char)x;
        }
        junk[0] = (unsigned char)(0x90 | (x & 0x0f)); /* often a plausible fixarray header */
        assert_int_equal(pnc_send_raw(s, junk, len), 0);
    }
    proto_buf_close(&b);
    int errors = 0, statuses = 0;
    for (int idle = 0; idle < 40 && errors < sent;) { /* bounded: 2 s without a message */
        proto_msg_t r;
        int type = pump(s, 50, &r);
        idle = type ? 0 : idle + 1;
        if (type == PROTO_ERROR)
            errors++;
        else if (type == PROTO_TASK_STATUS)
            statuses++;
        if (type)
            proto_msg_close(&r);
    }
    assert_int_equal(errors, sent);
    assert_int_equal(statuses, 0);
    const char *quick[] = {"true", NULL};
    pnc_task_t t = {
        .job = "j-00000000000b", .task = "alive", .cpu = 0.5, .mem_mb = 64, .argv = quick};
    assert_int_equal(pnc_create(s, &t), 0);
    assert_true(await_state(s, "alive", PROTO_TASK_SUCCEEDED, 10000));
}

static void test_malformed_refused_and_counted(void **state)
{
    (void)state;
    reset_seen();
    zsock_t *s = pnc_connect(&d);
    long long before = pnc_status_field(&d, "rejected");
    const unsigned char junk[] = {0x94, 0x01, 0x0d, 0x00, 0xdf, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(pnc_send_raw(s, junk, sizeof junk), 0);
    proto_msg_t m;
    assert_int_equal(pump(s, 5000, &m), PROTO_ERROR);
    assert_true(m.error.code < 0);
    proto_msg_close(&m);
    assert_int_equal(zsock_send(s, "ss", "two", "frames"), 0);
    /* the PN still works */
    const char *quick[] = {"true", NULL};
    pnc_task_t t = {
        .job = "j-000000000008", .task = "after", .cpu = 0.5, .mem_mb = 64, .argv = quick};
    assert_int_equal(pnc_create(s, &t), 0);
    assert_true(await_state(s, "after", PROTO_TASK_SUCCEEDED, 10000));
    /* a task bigger than the node is refused with a reason */
    t.task = "huge";
    t.cpu = 64;
    assert_int_equal(pnc_create(s, &t), 0);
    assert_int_equal(pump(s, 5000, &m), PROTO_ERROR);
    assert_int_equal(m.error.code, -16); /* ERR_CAPACITY */
    proto_msg_close(&m);
    long long after = before;
    for (int i = 0; i < 100 && after < before + 2; i++) {
        pump(s, 50, NULL);
        after = pnc_status_field(&d, "rejected");
    }
    assert_true(after >= before + 2);
    assert_int_equal(pnc_status_field(&d, "registered"), 0); /* no RM answered */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_thousand_tasks, teardown),
        cmocka_unit_test_teardown(test_cancel_kills_grandchildren, teardown),
        cmocka_unit_test_teardown(test_memory_limit, teardown),
        cmocka_unit_test_teardown(test_preemption, teardown),
        cmocka_unit_test_teardown(test_class_trade, teardown),
        cmocka_unit_test_teardown(test_downgrade_in_place, teardown),
        cmocka_unit_test_teardown(test_matrix_rises_and_falls, teardown),
        cmocka_unit_test_teardown(test_staging_cache, teardown),
        cmocka_unit_test_teardown(test_reconnect_gets_state, teardown),
        cmocka_unit_test_teardown(test_no_descriptor_leaks, teardown),
        cmocka_unit_test_teardown(test_reply_endpoint, teardown),
        cmocka_unit_test_teardown(test_garbage_storm, teardown),
        cmocka_unit_test_teardown(test_malformed_refused_and_counted, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
