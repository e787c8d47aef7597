/* test_rm_local_cluster.c - `paddock cluster up` with real PNs: it returns with every PN
 * registered (racks, capacities as asked), heartbeats reach the view, a PN killed with SIGKILL
 * turns suspect through the log, `cluster up` on the same directory restarts just that PN and
 * it is up again, and `cluster down` leaves none of the daemons running. Skipped when
 * paddock-pn is not built. Kills only pids from the cluster's own pid files. */
#include "common/clock.h"
#include "tests/rm/rm_harness.h"

#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static int group_setup(void **state)
{
    (void)state;
    return rm_harness_init("rmlocal");
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini();
    return 0;
}

static json_t *node_named(json_t *nodes, const char *name)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(nodes, "nodes"), i, n)
    {
        if (strcmp(json_string_value(json_object_get(n, "name")), name) == 0)
            return n;
    }
    return NULL;
}

/* Polls `paddock nodes --json` until pred holds (bounded). */
static bool until_nodes(bool (*pred)(json_t *), int ms)
{
    uint64_t end = clock_mono_ms() + (uint64_t)ms;
    while (clock_mono_ms() < end) {
        json_t *nodes = rm_harness_json("nodes --cluster %s --json", rm_harness_dir());
        bool ok = nodes != NULL && pred(nodes);
        json_decref(nodes);
        if (ok)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

static bool all_heard(json_t *nodes)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(nodes, "nodes"), i, n)
    {
        if (!json_is_integer(json_object_get(n, "age_ms")))
            return false;
    }
    return json_array_size(json_object_get(nodes, "nodes")) == 3;
}

static bool pn2_suspect(json_t *nodes)
{
    const char *s = json_string_value(json_object_get(node_named(nodes, "pn-2"), "state"));
    return s != NULL && strcmp(s, "suspect") == 0;
}

static bool pn2_up_again(json_t *nodes)
{
    json_t *n = node_named(nodes, "pn-2");
    const char *s = json_string_value(json_object_get(n, "state"));
    return s != NULL && strcmp(s, "up") == 0 && json_is_integer(json_object_get(n, "age_ms")) &&
           json_integer_value(json_object_get(n, "age_ms")) < 2000;
}

static void test_local_cluster(void **state)
{
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/paddock-pn", rm_harness_bin());
    if (access(path, X_OK) != 0)
        skip();
    assert_int_equal(
        rm_harness_cluster("up --rm 3 --pn 3 --racks 2 --pn-cpus 1.5 --pn-mem-mb 1000"), 0);
    /* registered as asked, at once */
    json_t *nodes = rm_harness_json("nodes --cluster %s --json", rm_harness_dir());
    assert_non_null(nodes);
    assert_int_equal(json_array_size(json_object_get(nodes, "nodes")), 3);
    const char *racks[] = {"rack-1", "rack-2", "rack-1"};
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "pn-%d", i + 1);
        json_t *n = node_named(nodes, name);
        assert_non_null(n);
        assert_string_equal(json_string_value(json_object_get(n, "state")), "up");
        assert_string_equal(json_string_value(json_object_get(n, "rack")), racks[i]);
        assert_true(json_real_value(json_object_get(n, "cpus")) == 1.5);
        assert_int_equal(json_integer_value(json_object_get(n, "mem_mb")), 1000);
    }
    json_decref(nodes);
    assert_true(until_nodes(all_heard, 5000));
    /* SIGKILL one PN: suspect after liveness.suspect_after (3 s), through the log */
    long pn2 = rm_harness_pid("pn-2");
    assert_true(pn2 > 0 && rm_harness_running(pn2));
    assert_int_equal(kill((pid_t)pn2, SIGKILL), 0);
    assert_true(until_nodes(pn2_suspect, 8000));
    /* cluster up on the same directory restarts just that PN */
    long rm1 = rm_harness_pid("rm-1"), pn1 = rm_harness_pid("pn-1");
    assert_int_equal(rm_harness_cluster("up"), 0);
    assert_int_equal(rm_harness_pid("rm-1"), rm1);
    assert_int_equal(rm_harness_pid("pn-1"), pn1);
    assert_true(rm_harness_pid("pn-2") != pn2);
    assert_true(until_nodes(pn2_up_again, 8000));
    /* a follower down: queries for the leader's data do not wait on it (issue 16; the bound is
     * generous: behaviour, not speed, is what is asserted; 11-12 ms measured on 2 cores) */
    json_t *st = rm_harness_json("rm status --cluster %s --json", rm_harness_dir());
    assert_non_null(st);
    long leader = (long)json_integer_value(json_object_get(st, "leader"));
    json_decref(st);
    assert_true(leader >= 1 && leader <= 3);
    char follower[16];
    snprintf(follower, sizeof follower, "rm-%ld", leader % 3 + 1);
    long fpid = rm_harness_pid(follower);
    assert_true(fpid > 0 && kill((pid_t)fpid, SIGKILL) == 0);
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = clock_mono_ms();
        nodes = rm_harness_json("nodes --cluster %s --json", rm_harness_dir());
        uint64_t took = clock_mono_ms() - t0;
        assert_non_null(nodes);
        assert_int_equal(json_array_size(json_object_get(nodes, "nodes")), 3);
        json_decref(nodes);
        fprintf(stderr, "nodes with %s down: %llu ms\n", follower, (unsigned long long)took);
        assert_true(took < 1000);
    }
    uint64_t t0 = clock_mono_ms();
    st = rm_harness_json("rm status --cluster %s --json", rm_harness_dir());
    uint64_t took = clock_mono_ms() - t0;
    assert_non_null(st);
    json_decref(st);
    fprintf(stderr, "rm status with %s down: %llu ms\n", follower, (unsigned long long)took);
    assert_true(took < 1500);
    assert_int_equal(rm_harness_cluster("up"), 0); /* the follower back, for what follows */
    /* down: none of the daemons runs any more */
    long pids[6];
    const char *names[] = {"rm-1", "rm-2", "rm-3", "pn-1", "pn-2", "pn-3"};
    for (int i = 0; i < 6; i++) {
        pids[i] = rm_harness_pid(names[i]);
        assert_true(pids[i] > 0 && rm_harness_running(pids[i]));
    }
    assert_int_equal(rm_harness_cluster("down"), 0);
    for (int i = 0; i < 6; i++)
        assert_false(rm_harness_running(pids[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_cluster),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
