/* test_e2e_resume_restart.c - a job survives its job manager (issue 14), on a real local
 * cluster (resume_fixture.h: 3 RM replicas, 3 PNs of 2 cores, the PNs' orphan grace shortened
 * to ORPHAN_GRACE_S), through the CLI and the files the daemons write:
 *   - orphans: a JM killed whose job directory is gone (so it cannot come back): once the lease
 *     and the PNs' orphan grace pass, no task process of the job is left (/proc);
 *   - whole-cluster restart: every RM, PN and the JM killed with SIGKILL at once, `paddock
 *     cluster up --dir` on the same directory: the job resumes and succeeds, every task once.
 * A JM killed ten times and a stale JM fenced are in test_e2e_resume.c. PADDOCK_E2E_ONLY runs
 * only the tests its pattern names. Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include "common/curve.h"
#include "common/err.h"
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

/* A JM gone for good: its tasks do not outlive the lease and the PNs' orphan grace. */
static void test_orphans_reaped(void **state)
{
    (void)state;
    skip_without_jm();
    char spec[4096], path[1300], job[64];
    snprintf(spec, sizeof spec,
             "{\"version\": 1, \"name\": \"orphans\", \"tasks\": [\n"
             "  {\"id\": \"o-0\", \"cmd\": [\"sh\", \"-c\", \"sleep 300\"], \"cpu\": 1, "
             "\"mem_mb\": 64, \"runtime_s\": 300},\n"
             "  {\"id\": \"o-1\", \"cmd\": [\"sh\", \"-c\", \"sleep 300\"], \"cpu\": 1, "
             "\"mem_mb\": 64, \"runtime_s\": 300},\n"
             "  {\"id\": \"o-2\", \"cmd\": [\"sh\", \"-c\", \"sleep 300\"], \"cpu\": 1, "
             "\"mem_mb\": 64, \"runtime_s\": 300}\n ]}\n");
    snprintf(path, sizeof path, "%s/orphans.json", e2e_dir());
    e2e_write_file(path, spec);
    long long reaped0 = pn_counter("reaped");
    e2e_submit(path, job);
    long pid = await_jm(job, 0, 10000);
    assert_true(pid > 1);
    long procs[64];
    /* all three running, as its JM says (a task may wait in the JM for a node with room, up to
       2 s: jm/place.h place_hold), then their processes */
    char statef[1300];
    snprintf(statef, sizeof statef, "%s/jobs/%s/state.json", e2e_dir(), job);
    int64_t end = e2e_wall_ms() + 30000;
    long long running = 0;
    while (e2e_wall_ms() < end && running < 3) {
        json_t *st = json_load_file(statef, 0, NULL);
        running = json_integer_value(json_object_get(st, "tasks_running"));
        json_decref(st);
        if (running < 3)
            e2e_sleep_ms(50);
    }
    assert_int_equal(running, 3);
    while (e2e_wall_ms() < end && job_procs(job, procs, 64) < 3)
        e2e_sleep_ms(50);
    size_t live = job_procs(job, procs, 64);
    fprintf(stderr, "orphans: %zu task processes of %s running\n", live, job);
    assert_true(live >= 3);
    /* gone for good: paused, its directory moved away (the RM cannot start it again), killed */
    assert_int_equal(kill((pid_t)pid, SIGSTOP), 0);
    char from[1300], to[1300];
    snprintf(from, sizeof from, "%s/jobs/%s", e2e_dir(), job);
    snprintf(to, sizeof to, "%s/gone-%s", e2e_dir(), job);
    assert_int_equal(rename(from, to), 0);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    int64_t killed = e2e_wall_ms();
    /* not at once: a restarted JM could still re-attach within the grace */
    e2e_sleep_ms(3000);
    assert_true(job_procs(job, procs, 64) > 0);
    end = killed + 1000LL * (10 + ORPHAN_GRACE_S + 20);
    size_t left = 0;
    while (e2e_wall_ms() < end && (left = job_procs(job, procs, 64)) > 0)
        e2e_sleep_ms(100);
    fprintf(stderr, "orphans: %zu task processes left %lld ms after the JM was killed\n", left,
            (long long)(e2e_wall_ms() - killed));
    for (size_t i = 0; i < left && i < 64; i++)
        fprintf(stderr, "  left: pid %ld\n", procs[i]);
    assert_int_equal(left, 0);
    /* status.json is rewritten every heartbeat (1 s) */
    long long reaped = 0;
    end = e2e_wall_ms() + 3000;
    while ((reaped = pn_counter("reaped") - reaped0) < 3 && e2e_wall_ms() < end)
        e2e_sleep_ms(100);
    fprintf(stderr, "orphans: the PNs reaped %lld tasks\n", reaped);
    assert_true(reaped >= 3);
}

/* Every daemon of the cluster and the job's JM killed at once, the cluster started again. */
static void test_whole_cluster_restart(void **state)
{
    (void)state;
    skip_without_jm();
    char marks[1300], spec[1300], job[64];
    snprintf(marks, sizeof marks, "%s/marks-whole", e2e_dir());
    write_spec("whole", marks, "0.2", spec, sizeof spec);
    e2e_submit(spec, job);
    long jm = await_jm(job, 0, 10000);
    assert_true(jm > 1);
    int64_t end = e2e_wall_ms() + 30000;
    while (e2e_wall_ms() < end && e2e_state_int(job, "tasks_succeeded") < 30)
        e2e_sleep_ms(20);
    assert_true(state_running(job));
    long long done = e2e_state_int(job, "tasks_succeeded");
    long pids[NRM + NPN + 1];
    size_t n = 0;
    for (int i = 1; i <= NRM; i++) {
        char name[16];
        snprintf(name, sizeof name, "rm-%d", i);
        pids[n] = daemon_pid(name);
        assert_true(pids[n] > 1 && proc_is(pids[n], "paddock-rm"));
        n++;
    }
    for (int i = 1; i <= NPN; i++) {
        char name[16];
        snprintf(name, sizeof name, "pn-%d", i);
        pids[n] = daemon_pid(name);
        assert_true(pids[n] > 1 && proc_is(pids[n], "paddock-pn"));
        n++;
    }
    pids[n++] = jm;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(kill((pid_t)pids[i], SIGKILL), 0);
    int64_t killed = e2e_wall_ms();
    await_gone(pids, NRM, "paddock-rm");
    await_gone(pids + NRM, NPN, "paddock-pn");
    await_gone(pids + NRM + NPN, 1, "paddock-jm");
    /* what had succeeded for good: the journal once every writer is dead */
    bool journaled[NTASKS], in_flight[NTASKS];
    size_t recorded = journaled_succeeded(job, journaled);
    for (int k = 0; k < NTASKS; k++)
        in_flight[k] = !journaled[k];
    fprintf(stderr, "whole: every daemon killed with %lld of %d tasks done (%zu journaled)\n", done,
            NTASKS, recorded);
    cluster_up_again();
    int64_t up = e2e_wall_ms();
    long again = await_jm(job, jm, 30000);
    int64_t back = e2e_wall_ms();
    if (again == 0)
        e2e_job_dump(job);
    assert_true(again > 1);
    fprintf(stderr,
            "whole: cluster up again %lld ms after the kill, the JM %lld ms after it was up "
            "(%lld ms in all)\n",
            (long long)(up - killed), (long long)(back - up), (long long)(back - killed));
    await_success(job, 120);
    /* Nothing that succeeded runs again. A task running when its PN was killed with SIGKILL
       keeps running (its process group outlives the PN) and may append its mark before the
       PN's next boot kills it; no record of that run survives, so it is run again: at most
       the 6 slots' worth, each at most twice. */
    int again_twice = check_marks(marks, job, in_flight);
    fprintf(stderr, "whole: %d tasks in flight at the kill ran again after finishing\n",
            again_twice);
    assert_true(again_twice <= NPN * 2);
    check_report(job, 1);
    /* and none of the old PNs' task processes is left */
    long procs[16];
    int64_t gone = e2e_wall_ms() + 5000;
    size_t left = 0;
    while ((left = job_procs(job, procs, 16)) > 0 && e2e_wall_ms() < gone)
        e2e_sleep_ms(100);
    assert_int_equal(left, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orphans_reaped),
        cmocka_unit_test(test_whole_cluster_restart),
    };
    const char *only = getenv("PADDOCK_E2E_ONLY"); /* e.g. test_whole_cluster_restart */
    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
