/* test_e2e_resume.c - a job survives its job manager (issue 14), on a real local cluster (3 RM
 * replicas, 3 PNs of 2 cores, the PNs' orphan grace shortened to ORPHAN_GRACE_S), through the
 * CLI and the files the daemons write:
 *   - ten jobs of 100 tasks (a three-stage DAG), each task appending its id to the job's marks
 *     file; each job's paddock-jm is killed with SIGKILL at a seeded random point between 0.5 s
 *     and 80% of an undisturbed run's length: the RM leader starts it again within 5 s, it
 *     resumes, the job succeeds, every task id is in the marks exactly once, and report.json
 *     has one succeeded attempt per task, the attempts before the kill included;
 *   - a stale JM: SIGSTOP past the lease, the RM starts another, SIGCONT: the old one exits 3
 *     ("a newer job manager") and the job still runs every task exactly once. A paused JM asks
 *     the RM before it acts, so it sends nothing; a create it had in flight is what the PNs'
 *     fencing is for: one is sent to each PN as the old JM would have (epoch 1, CURVE with the
 *     cluster's keys) and must be refused with ERR_FENCED (refused_fenced) and never run.
 * Orphans and a whole-cluster restart are in test_e2e_resume_restart.c; the cluster, the DAG and
 * the checks in resume_fixture.h. PADDOCK_E2E_SEED picks the kill points (printed);
 * PADDOCK_E2E_ONLY runs only the tests its pattern names. Skipped while paddock-jm is not
 * built. */
#include "tests/e2e/e2e.h"

#include "common/curve.h"
#include "common/err.h"
#include "common/rng.h"
#include "proto/proto.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "tests/e2e/resume_fixture.h"

#define ROUNDS         10
#define RESTART_MAX_MS 5000

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* An undisturbed run, then ten, each JM killed at a seeded random point. */
static void test_jm_killed_ten_times(void **state)
{
    (void)state;
    skip_without_jm();
    unsigned seed = 14;
    const char *s = getenv("PADDOCK_E2E_SEED");
    if (s != NULL && *s != '\0')
        seed = (unsigned)strtoul(s, NULL, 10);
    struct rng g;
    rng_seed(&g, seed);
    fprintf(stderr, "seed %u (PADDOCK_E2E_SEED)\n", seed);

    char marks[1300], spec[1300], job[64];
    snprintf(marks, sizeof marks, "%s/marks-base", e2e_dir());
    write_spec("base", marks, "0.2", spec, sizeof spec);
    int64_t t0 = e2e_wall_ms();
    e2e_submit(spec, job);
    await_success(job, 120);
    int64_t length = e2e_wall_ms() - t0;
    check_marks(marks, job, NULL);
    check_report(job, 0);
    fprintf(stderr, "undisturbed run: %lld ms\n", (long long)length);

    long long relaunch[ROUNDS], resumed[ROUNDS], total[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        char name[32];
        snprintf(name, sizeof name, "kill-%d", r);
        snprintf(marks, sizeof marks, "%s/marks-%d", e2e_dir(), r);
        write_spec(name, marks, "0.2", spec, sizeof spec);
        /* the point: 0.5 s to 80% of the undisturbed length, uniform */
        int64_t hi = length * 8 / 10 > 600 ? length * 8 / 10 : 600;
        int64_t at = 500 + (int64_t)(rng_unif(&g) * (double)(hi - 500));
        t0 = e2e_wall_ms();
        e2e_submit(spec, job);
        long pid = await_jm(job, 0, 10000);
        assert_true(pid > 1);
        e2e_sleep_ms(t0 + at - e2e_wall_ms());
        if (!state_running(job)) {
            fprintf(stderr, "round %d: the job ended before its kill point %lld ms\n", r,
                    (long long)at);
            fail();
        }
        long long done = e2e_state_int(job, "tasks_succeeded");
        assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
        int64_t killed = e2e_wall_ms();
        long again = await_jm(job, pid, 3 * RESTART_MAX_MS);
        int64_t back = e2e_wall_ms();
        if (again == 0) {
            fprintf(stderr, "round %d: no JM started again within %d ms\n", r, 3 * RESTART_MAX_MS);
            e2e_job_dump(job);
        }
        assert_true(again > 1);
        /* resumed: the new JM's state.json (its pid, a resume counted) */
        int64_t end = back + 3 * RESTART_MAX_MS;
        while (e2e_wall_ms() < end &&
               !(e2e_state_int(job, "pid") == again && e2e_state_int(job, "resumes") >= 1))
            e2e_sleep_ms(10);
        int64_t up = e2e_wall_ms();
        assert_int_equal(e2e_state_int(job, "pid"), again);
        relaunch[r] = back - killed;
        resumed[r] = up - killed;
        fprintf(stderr,
                "round %d: killed at %lld ms (%lld of %d tasks done): JM started again in %lld "
                "ms, resumed in %lld ms\n",
                r, (long long)at, done, NTASKS, relaunch[r], resumed[r]);
        assert_true(relaunch[r] <= RESTART_MAX_MS);
        await_success(job, 120);
        total[r] = e2e_wall_ms() - t0;
        check_marks(marks, job, NULL);
        check_report(job, 1);
        assert_true(e2e_state_int(job, "resumes") >= 1);
    }
    qsort(relaunch, ROUNDS, sizeof relaunch[0], cmp_ll);
    qsort(resumed, ROUNDS, sizeof resumed[0], cmp_ll);
    qsort(total, ROUNDS, sizeof total[0], cmp_ll);
    fprintf(stderr,
            "restart (kill to new JM) ms: min %lld median %lld max %lld; resumed: min %lld "
            "median %lld max %lld; job with a kill: median %lld ms (undisturbed %lld)\n",
            relaunch[0], relaunch[ROUNDS / 2], relaunch[ROUNDS - 1], resumed[0],
            resumed[ROUNDS / 2], resumed[ROUNDS - 1], total[ROUNDS / 2], (long long)length);
}

/* Sends to PN `pn` a TASK_CREATE of job `job`, task `task` (attempt 9), under `epoch`, as a JM
 * would: returns the answer's ERROR code, 0 for a TASK_STATUS (the create was taken), or 1 when
 * nothing came back within 5 s. */
static int stale_create(int pn, const char *job, const char *task, const char *marks,
                        uint32_t epoch)
{
    char path[1300], keys[1300], msg[512], cmd[1400];
    snprintf(path, sizeof path, "%s/pn-%d/pn.endpoint", e2e_dir(), pn);
    char *endpoint = e2e_read_file(path, NULL);
    assert_non_null(endpoint);
    endpoint[strcspn(endpoint, "\r\n")] = '\0';
    snprintf(keys, sizeof keys, "%s/keys", e2e_dir());
    curve_t *c = NULL;
    if (curve_load(&c, keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg) != 0)
        fail_msg("keys: %s", msg);
    zsock_t *sock = zsock_new(ZMQ_DEALER);
    assert_non_null(sock);
    zsock_set_rcvtimeo(sock, 5000);
    zsock_set_linger(sock, 0);
    if (curve_apply(sock, c, CURVE_CLIENT, NULL, msg, sizeof msg) != 0)
        fail_msg("curve: %s", msg);
    assert_int_equal(zsock_connect(sock, "%s", endpoint), 0);
    snprintf(cmd, sizeof cmd, "echo %s >> %s", task, marks);
    char *argv[] = {(char *)"sh", (char *)"-c", cmd};
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    m.req_id = 1;
    m.task_create.job_id = (char *)job;
    m.task_create.task_id = (char *)task;
    m.task_create.attempt = 9;
    m.task_create.task_class = PROTO_CLASS_REGULAR;
    m.task_create.argv = argv;
    m.task_create.argc = 3;
    m.task_create.cpu = 1;
    m.task_create.mem_mb = 64;
    m.task_create.runtime_ms = 100;
    m.task_create.epoch = epoch;
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(&m, &b, msg, sizeof msg), 0);
    assert_int_equal(zmq_send(zsock_resolve(sock), b.data, b.len, 0), (int)b.len);
    proto_buf_close(&b);
    int rc = 1;
    zmsg_t *in = zmsg_recv(sock);
    if (in != NULL) {
        zframe_t *f = zmsg_last(in);
        proto_msg_t r;
        assert_int_equal(proto_decode(zframe_data(f), zframe_size(f), &r, NULL, msg, sizeof msg),
                         0);
        rc = r.type == PROTO_ERROR ? r.error.code : 0;
        if (r.type == PROTO_ERROR)
            fprintf(stderr, "stale create on pn-%d: ERROR %d (%s)\n", pn, r.error.code,
                    r.error.text);
        else
            fprintf(stderr, "stale create on pn-%d: answered %s\n", pn, proto_type_name(r.type));
        proto_msg_close(&r);
        zmsg_destroy(&in);
    }
    zsock_destroy(&sock);
    curve_destroy(&c);
    free(endpoint);
    return rc;
}

/* A JM paused past its lease: the RM starts another; the old one, woken, is fenced. */
static void test_stale_jm_fenced(void **state)
{
    (void)state;
    skip_without_jm();
    char marks[1300], spec[1300], job[64];
    snprintf(marks, sizeof marks, "%s/marks-stale", e2e_dir());
    write_spec("stale", marks, "0.2", spec, sizeof spec);
    long long fenced0 = pn_counter("refused_fenced");
    /* the JM `paddock submit` starts is orphaned at once: as a subreaper this process becomes
       its parent and can read its exit code */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    e2e_submit(spec, job);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
    long old = await_jm(job, 0, 10000);
    assert_true(old > 1);
    g_extra[g_nextra++] = (pid_t)old;
    int64_t end = e2e_wall_ms() + 30000;
    while (e2e_wall_ms() < end && e2e_state_int(job, "tasks_succeeded") < 10)
        e2e_sleep_ms(20);
    assert_true(state_running(job));
    assert_int_equal(kill((pid_t)old, SIGSTOP), 0);
    int64_t stopped = e2e_wall_ms();
    long fresh = await_jm(job, old, 20000);
    if (fresh == 0)
        e2e_job_dump(job);
    assert_true(fresh > 1);
    int64_t relaunched = e2e_wall_ms();
    /* the new JM has resumed (its epoch is above the old one's) before the old one wakes */
    end = e2e_wall_ms() + 10000;
    while (e2e_wall_ms() < end &&
           !(e2e_state_int(job, "pid") == fresh && e2e_state_int(job, "epoch") >= 2))
        e2e_sleep_ms(20);
    assert_true(e2e_state_int(job, "epoch") >= 2);
    /* ... and has fenced every node: its resume query (carrying the new epoch) was answered. A
       node the new JM has not yet reached knows no newer epoch and would take the stale create,
       as it would a paused JM's message in flight in that window (docs/jm-daemon.md, "Resume") */
    char jmlog[1300];
    snprintf(jmlog, sizeof jmlog, "%s/jobs/%s/jm.log", e2e_dir(), job);
    char *seen = NULL;
    end = e2e_wall_ms() + 10000;
    while (e2e_wall_ms() < end &&
           !((seen = e2e_read_file(jmlog, NULL)) && strstr(seen, "attempts adopted"))) {
        free(seen);
        seen = NULL;
        e2e_sleep_ms(20);
    }
    assert_non_null(seen);
    free(seen);
    fprintf(stderr, "stale: paused JM replaced after %lld ms (lease), resumed at %lld ms\n",
            (long long)(relaunched - stopped), (long long)(e2e_wall_ms() - stopped));
    assert_int_equal(kill((pid_t)old, SIGCONT), 0);
    int st = 0;
    pid_t w = 0;
    end = e2e_wall_ms() + 20000;
    while (e2e_wall_ms() < end && (w = waitpid((pid_t)old, &st, WNOHANG)) == 0)
        e2e_sleep_ms(20);
    if (w != (pid_t)old)
        fprintf(stderr, "stale JM %ld: waitpid %d (%s)\n", old, (int)w, strerror(errno));
    assert_int_equal(w, (pid_t)old);
    g_extra[--g_nextra] = 0;
    assert_true(WIFEXITED(st));
    fprintf(stderr, "stale JM exited %d %lld ms after SIGCONT\n", WEXITSTATUS(st),
            (long long)(e2e_wall_ms() - relaunched));
    assert_int_equal(WEXITSTATUS(st), 3);
    char log[1300];
    snprintf(log, sizeof log, "%s/jobs/%s/jm.log", e2e_dir(), job);
    char *text = e2e_read_file(log, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "a newer job manager"));
    free(text);
    /* what the old JM would have had in flight: refused by every PN, whichever epoch it saw */
    for (int i = 1; i <= NPN; i++)
        assert_int_equal(stale_create(i, job, "a-0", marks, 1), ERR_FENCED);
    /* a refused command must not take the job's statuses away from the newer JM either */
    await_success(job, 120);
    int64_t wait_end = e2e_wall_ms() + 3000;
    long long fenced = 0;
    while ((fenced = pn_counter("refused_fenced") - fenced0) < NPN && e2e_wall_ms() < wait_end)
        e2e_sleep_ms(100);
    fprintf(stderr, "stale: the PNs refused %lld commands of the old epoch\n", fenced);
    assert_true(fenced >= NPN);
    check_report(job, 1);
    check_marks(marks, job, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jm_killed_ten_times),
        cmocka_unit_test(test_stale_jm_fenced),
    };
    const char *only = getenv("PADDOCK_E2E_ONLY"); /* e.g. test_stale_jm_fenced */
    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
