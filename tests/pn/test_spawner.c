/* Tests of pn/spawner: spawner threads start real processes, results come back on the loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "pn/spawner.h"

#define MAXR 256

typedef struct got {
    spawner_result_t r[MAXR];
    size_t n;
    int wrong_thread;
    pthread_t loop_thread;
} got_t;

static void on_done(void *arg, const spawner_result_t *r)
{
    got_t *g = arg;
    if (!pthread_equal(pthread_self(), g->loop_thread))
        g->wrong_thread++;
    assert_true(g->n < MAXR);
    g->r[g->n++] = *r;
}

static char *const true_argv[] = {"true", NULL};
static char *const env[] = {"PATH=/usr/bin:/bin", NULL};

static exec_spec_t spec_of(char *const *argv)
{
    exec_spec_t sp = {.argv = argv,
                      .envp = env,
                      .cwd = "/",
                      .stdout_path = "/dev/null",
                      .stderr_path = "/dev/null",
                      .uid = (uid_t)-1,
                      .gid = (gid_t)-1};
    return sp;
}

/* A loop and a spawner of `threads` threads delivering to g (cleared) on this thread. */
static spawner_t *spawner_up(uv_loop_t *loop, got_t *g, unsigned threads)
{
    assert_int_equal(uv_loop_init(loop), 0);
    memset(g, 0, sizeof *g);
    g->loop_thread = pthread_self();
    char msg[256];
    spawner_t *s = spawner_new(loop, threads, on_done, g, msg, sizeof msg);
    assert_non_null(s);
    return s;
}

/* 200 spawns over 4 threads: every result arrives once, on the loop's thread, with a distinct
 * pid that exits 0; a command that does not exist comes back as ERR_NOTFOUND. */
static void test_many(void **state)
{
    (void)state;
    uv_loop_t loop;
    static got_t g;
    spawner_t *s = spawner_up(&loop, &g, 4);
    enum { N = 200 };
    exec_spec_t sp = spec_of(true_argv);
    for (uint64_t i = 0; i < N; i++)
        assert_int_equal(spawner_submit(s, i + 1, &sp), 0);
    char *const missing[] = {"no-such-command-paddock", NULL};
    exec_spec_t bad = spec_of(missing);
    assert_int_equal(spawner_submit(s, 1000, &bad), 0);
    assert_int_equal(spawner_pending(s), N + 1);
    for (int i = 0; i < 100000 && g.n < N + 1; i++)
        uv_run(&loop, UV_RUN_ONCE); /* the async wakes the loop */
    assert_int_equal(g.n, N + 1);
    assert_int_equal(g.wrong_thread, 0);
    assert_int_equal(spawner_pending(s), 0);
    unsigned char seen[N + 1] = {0};
    for (size_t i = 0; i < g.n; i++) {
        const spawner_result_t *r = &g.r[i];
        if (r->id == 1000) {
            assert_int_equal(r->rc, ERR_NOTFOUND);
            assert_non_null(strstr(r->msg, "not found"));
            continue;
        }
        assert_true(r->id >= 1 && r->id <= N);
        assert_int_equal(seen[r->id], 0);
        seen[r->id] = 1;
        assert_int_equal(r->rc, 0);
        assert_true(r->pid > 0);
        assert_true(r->t1_ns >= r->t0_ns);
        assert_true(r->at.lo <= r->at.hi);
        int st = 0;
        assert_int_equal(waitpid(r->pid, &st, 0), r->pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    assert_true(spawner_cpu_us(s) > 0);
    spawner_free(&s);
    assert_null(s);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* spawner_flush waits for every queued spawn and delivers its result at once. */
static void test_flush(void **state)
{
    (void)state;
    uv_loop_t loop;
    static got_t g;
    spawner_t *s = spawner_up(&loop, &g, 2);
    exec_spec_t sp = spec_of(true_argv);
    for (uint64_t i = 0; i < 20; i++)
        assert_int_equal(spawner_submit(s, i, &sp), 0);
    spawner_flush(s);
    assert_int_equal(g.n, 20);
    assert_int_equal(spawner_pending(s), 0);
    for (size_t i = 0; i < g.n; i++) {
        int st;
        assert_int_equal(waitpid(g.r[i].pid, &st, 0), g.r[i].pid);
    }
    spawner_free(&s);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Submits between spawner_defer and its spawner_kick (nested) wake no thread: nothing is
 * spawned until the outer kick, and then all of them are. */
static void test_defer(void **state)
{
    (void)state;
    uv_loop_t loop;
    static got_t g;
    spawner_t *s = spawner_up(&loop, &g, 2);
    exec_spec_t sp = spec_of(true_argv);
    assert_int_equal(spawner_submit(s, 100, &sp), 0); /* not deferred: spawned at once */
    spawner_flush(s);
    assert_int_equal(g.n, 1);
    nap_ms(200); /* both threads asleep on the queue */
    spawner_defer(s);
    spawner_defer(s);
    for (uint64_t i = 0; i < 3; i++)
        assert_int_equal(spawner_submit(s, i + 1, &sp), 0);
    spawner_kick(s); /* inner: still deferred */
    nap_ms(300);
    assert_int_equal(spawner_drain(s), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(spawner_pending(s), 3);
    spawner_kick(s);
    for (int i = 0; i < 100000 && g.n < 4; i++)
        uv_run(&loop, UV_RUN_ONCE); /* the batch's results wake the loop */
    assert_int_equal(g.n, 4);
    assert_int_equal(spawner_pending(s), 0);
    for (size_t i = 0; i < g.n; i++) {
        int st;
        assert_int_equal(g.r[i].rc, 0);
        assert_int_equal(waitpid(g.r[i].pid, &st, 0), g.r[i].pid);
    }
    spawner_kick(s); /* unbalanced: ignored */
    spawner_free(&s);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_bad_count(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    char msg[256] = "";
    got_t *g = NULL;
    assert_null(spawner_new(&loop, 0, on_done, g, msg, sizeof msg));
    assert_non_null(strstr(msg, "1..64"));
    assert_null(spawner_new(&loop, 65, on_done, g, msg, sizeof msg));
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_flush),
        cmocka_unit_test(test_defer),
        cmocka_unit_test(test_bad_count),
    };
    return cmocka_run_group_tests_name("pn spawner", tests, NULL, NULL);
}
