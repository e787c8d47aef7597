/* test_rm_view_follow.c - a JM follows one replica's view, not every replica's: on `paddock
 * cluster up --rm 3 --pn 1` one JM makes one replica publish one snapshot (it took three, one
 * from each replica, before) and holds a connection to that replica's view socket alone (it
 * connected to all three, a CURVE handshake each, before), and when that replica is killed the
 * JM follows another within a few seconds (the replicas publish an empty delta a second,
 * rm/rmview.h RMVIEW_KEEPALIVE_MS, so a silent one is a stopped one) and is whole again from it.
 * Checked through `paddock rm status --json`, the job's state.json and the JM's sockets. Skipped
 * when paddock-pn is not built. Kills only pids from the cluster's own pid files. */
#include "common/clock.h"
#include "rm/rmclient.h"
#include "tests/rm/rm_harness.h"

#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
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
    return rm_harness_init("rmfollow");
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini(); /* `cluster down` stops the replicas, the PN and the JM */
    return 0;
}

/* Each replica's view_snapshots by id (1..3; -1: it did not answer); their sum. */
static long snapshots_by_replica(long out[4])
{
    for (int i = 0; i < 4; i++)
        out[i] = -1;
    json_t *st = rm_harness_json("rm status --cluster %s --json", rm_harness_dir());
    long sum = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(st, "replicas"), i, r)
    {
        long id = (long)json_integer_value(json_object_get(r, "id"));
        json_t *n = json_object_get(r, "view_snapshots");
        if (id >= 1 && id <= 3 && json_is_integer(n)) {
            out[id] = (long)json_integer_value(n);
            sum += out[id];
        }
    }
    json_decref(st);
    return sum;
}

/* The JM's established TCP connections to each replica's view (PUB) endpoint, into out[id]
 * (ids 1..3 in cluster.conf's order). */
static void view_links(long jm_pid, long out[4])
{
    unsigned ports[4];
    rm_harness_ports("pub", ports);
    assert_true(ports[1] != 0 && ports[2] != 0 && ports[3] != 0);
    rm_harness_tcp_links(jm_pid, ports, 4, out);
    out[0] = 0;
}

/* The job's state.json view_wholes (-1: not readable yet). */
static long view_wholes(const char *job_dir)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/state.json", job_dir);
    json_t *s = json_load_file(path, 0, NULL);
    long w = json_is_integer(json_object_get(s, "view_wholes"))
                 ? (long)json_integer_value(json_object_get(s, "view_wholes"))
                 : -1;
    json_decref(s);
    return w;
}

static bool until_wholes(const char *job_dir, long want, int ms)
{
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end;) {
        if (view_wholes(job_dir) >= want)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

static void test_one_view_then_another(void **state)
{
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/paddock-pn", rm_harness_bin());
    if (access(path, X_OK) != 0)
        skip();
    assert_int_equal(rm_harness_cluster("up --rm 3 --pn 1"), 0);
    char spec[1200];
    rm_harness_sleep_spec("follow", spec, sizeof spec);
    json_t *sub = rm_harness_json("submit %s --cluster %s --json", spec, rm_harness_dir());
    assert_non_null(sub);
    char job_dir[1200];
    snprintf(job_dir, sizeof job_dir, "%s", json_string_value(json_object_get(sub, "job_dir")));
    long jm = (long)json_integer_value(json_object_get(sub, "jm_pid"));
    json_decref(sub);
    assert_true(jm > 0);

    /* whole once, from one replica: one snapshot published in the cluster, not three */
    assert_true(until_wholes(job_dir, 1, 15000));
    usleep(1500 * 1000); /* time for the other replicas to have answered, had it asked them */
    long snaps[4];
    assert_int_equal(snapshots_by_replica(snaps), 1);
    assert_int_equal(view_wholes(job_dir), 1);
    int followed = 0;
    for (int id = 1; id <= 3; id++)
        followed = snaps[id] == 1 ? id : followed;
    assert_true(followed >= 1);
    /* ... and connected to that replica's view alone (the others' never: a handshake each) */
    long links[4];
    view_links(jm, links);
    fprintf(stderr, "JM %ld view links by replica: %ld %ld %ld (following %d)\n", jm, links[1],
            links[2], links[3], followed);
    for (int id = 1; id <= 3; id++)
        assert_int_equal(links[id], id == followed ? 1 : 0);

    /* the followed replica stops: the JM follows another and is whole again from it */
    long pid = rm_harness_rm_pid((uint64_t)followed);
    assert_true(pid > 0 && rm_harness_running(pid));
    uint64_t t0 = clock_mono_ms();
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    assert_true(until_wholes(job_dir, 2, 20000));
    fprintf(stderr, "replica %d killed: the JM whole again from another in %llu ms\n", followed,
            (unsigned long long)(clock_mono_ms() - t0));
    long after[4];
    snapshots_by_replica(after);
    long others = 0;
    for (int id = 1; id <= 3; id++)
        others += id != followed && after[id] > 0 ? after[id] : 0;
    assert_int_equal(others, 1); /* one snapshot, from the one replica it follows now */
    view_links(jm, links);
    long linked = 0;
    for (int id = 1; id <= 3; id++)
        linked += id != followed ? links[id] : 0;
    assert_int_equal(linked, 1); /* linked to the one it follows now */
    assert_int_equal(links[followed], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_view_then_another),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
