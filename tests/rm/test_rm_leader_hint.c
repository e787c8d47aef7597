/* test_rm_leader_hint.c - clients connect to the RM leader alone (rm/rmclient.h, the cluster
 * directory's "leader" file): on `paddock cluster up --rm 3 --pn 1`,
 *   - `paddock rm status` writes the file with the leader its replicas report;
 *   - without the file, a submit's JM connects its API socket to every replica (as before), and
 *     the submit writes the file with the leader's endpoint;
 *   - with it, a JM holds one API connection, to the leader, and so does an rmclient, and the
 *     JM takes its view from a follower;
 *   - a file naming a follower costs the submit a redirect and rewrites it; its JM, told the
 *     leader by the submit, asks the follower nothing and never connects to the third replica;
 *   - when the leader is killed, a running JM that held one API connection connects to the new
 *     leader and keeps its job (its lease renewed there); `rm status` names the new leader in
 *     the file; a file naming the dead replica is moved by a query to a live one, and the next
 *     submit names the new leader in it.
 * Connections are read from the processes' sockets (/proc/PID/fd and /proc/net/tcp). Skipped
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

static unsigned g_api[4]; /* API ports by replica id 1..3 */

static int group_setup(void **state)
{
    (void)state;
    return rm_harness_init("rmhint");
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini(); /* `cluster down` stops the replicas, the PN and the JMs */
    return 0;
}

/* The leader's id (1..3) by `paddock rm status`, waiting up to ms for one; 0 when none. */
static int leader_id(int ms)
{
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end;) {
        json_t *st = rm_harness_json("rm status --cluster %s --json", rm_harness_dir());
        long id = (long)json_integer_value(json_object_get(st, "leader"));
        json_decref(st);
        if (id >= 1 && id <= 3)
            return (int)id;
        usleep(200 * 1000);
    }
    return 0;
}

/* Requests replica ID refused as not the leader, by `paddock rm status` (-1: no answer). */
static long not_leader(int id)
{
    json_t *st = rm_harness_json("rm status --cluster %s --json", rm_harness_dir());
    long n = -1;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(st, "replicas"), i, r)
    {
        if (json_integer_value(json_object_get(r, "id")) == id)
            n = (long)json_integer_value(
                json_object_get(json_object_get(r, "rejected"), "not_leader"));
    }
    json_decref(st);
    return n;
}

/* The replica id the leader file names (0: no file, or none of the three). */
static int hinted(void)
{
    struct rmclient_cluster cl;
    char msg[256];
    assert_int_equal(rmclient_cluster_load(rm_harness_dir(), &cl, msg, sizeof msg), 0);
    int i = rmclient_leader_hint(rm_harness_dir(), (const char *const *)cl.api, cl.n);
    rmclient_cluster_close(&cl);
    return i + 1;
}

static void write_hint(int id)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", rm_harness_dir(), RMCLIENT_LEADER_FILE);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "tcp://127.0.0.1:%u\n", g_api[id]);
    fclose(f);
}

/* Submits a job of one 60 s sleep: its JM's pid. */
static long submit(const char *spec)
{
    json_t *sub = rm_harness_json("submit %s --cluster %s --json", spec, rm_harness_dir());
    assert_non_null(sub);
    long jm = (long)json_integer_value(json_object_get(sub, "jm_pid"));
    json_decref(sub);
    assert_true(jm > 0);
    return jm;
}

/* PID's API connections by replica id, once they have settled (the handshakes run in the
 * socket layer's thread): the counts when two reads 300 ms apart agree. */
static void api_links(long pid, long out[4])
{
    long again[4];
    rm_harness_tcp_links(pid, g_api, 4, out);
    for (int k = 0; k < 20; k++) {
        usleep(300 * 1000);
        rm_harness_tcp_links(pid, g_api, 4, again);
        if (memcmp(out, again, sizeof again) == 0)
            return;
        memcpy(out, again, sizeof again);
    }
}

static void test_leader_alone(void **state)
{
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/paddock-pn", rm_harness_bin());
    if (access(path, X_OK) != 0)
        skip();
    assert_int_equal(rm_harness_cluster("up --rm 3 --pn 1"), 0);
    rm_harness_ports("api", g_api);
    assert_true(g_api[1] != 0 && g_api[2] != 0 && g_api[3] != 0);
    int lead = leader_id(15000);
    assert_true(lead >= 1);
    char spec[1200];
    rm_harness_sleep_spec("hint", spec, sizeof spec);
    long links[4];

    /* no file (`rm status` wrote one: it names the leader its replicas report): every
       replica, and the submit leaves the leader's name */
    assert_int_equal(hinted(), lead);
    snprintf(path, sizeof path, "%s/%s", rm_harness_dir(), RMCLIENT_LEADER_FILE);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(hinted(), 0);
    long jm = submit(spec);
    assert_int_equal(hinted(), lead);
    api_links(jm, links);
    fprintf(stderr, "no hint: JM API links %ld %ld %ld (leader %d)\n", links[1], links[2], links[3],
            lead);
    assert_int_equal(links[1] + links[2] + links[3], 3);

    /* the file names the leader: one connection, to it, for a JM and for an rmclient */
    jm = submit(spec);
    api_links(jm, links);
    fprintf(stderr, "hint right: JM API links %ld %ld %ld\n", links[1], links[2], links[3]);
    for (int id = 1; id <= 3; id++)
        assert_int_equal(links[id], id == lead ? 1 : 0);
    /* ... and it takes its view from a follower: the leader serves none */
    unsigned pub[4];
    long views[4];
    rm_harness_ports("pub", pub);
    rm_harness_tcp_links(jm, pub, 4, views);
    assert_int_equal(views[lead], 0);
    assert_int_equal(views[1] + views[2] + views[3], 1);
    rmclient_t *c = NULL;
    char msg[256];
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    json_t *st = rm_harness_admin(c, -1, "rm_status", 5000);
    assert_non_null(st);
    json_decref(st);
    api_links((long)getpid(), links);
    for (int id = 1; id <= 3; id++)
        assert_int_equal(links[id], id == lead ? 1 : 0);
    rmclient_destroy(&c);

    /* the file names a follower: rewritten; the JM reaches the leader, never the third */
    int fol = lead % 3 + 1, third = fol % 3 + 1;
    long refused = not_leader(fol); /* first: `rm status` names the leader in the file */
    write_hint(fol);
    long jm_stale = submit(spec);
    assert_int_equal(hinted(), lead);
    api_links(jm_stale, links);
    fprintf(stderr, "hint stale (%d): JM API links %ld %ld %ld\n", fol, links[1], links[2],
            links[3]);
    assert_int_equal(links[lead], 1);
    assert_int_equal(links[third], 0);
    /* the follower refused the submit's registration once, and nothing of the JM's: the
       submit told it the leader with its job */
    assert_int_equal(not_leader(fol) - refused, 1);

    /* the leader dies: the JM linked to it alone finds the new one; so does the next submit */
    long pid = rm_harness_rm_pid((uint64_t)lead);
    assert_true(pid > 0 && rm_harness_running(pid));
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    int next = 0;
    for (uint64_t end = clock_mono_ms() + 20000; clock_mono_ms() < end && next == 0;) {
        int l = leader_id(1000);
        next = l != lead ? l : 0;
    }
    assert_true(next >= 1);
    bool moved = false;
    for (uint64_t end = clock_mono_ms() + 20000; clock_mono_ms() < end && !moved;) {
        rm_harness_tcp_links(jm, g_api, 4, links);
        moved = links[next] == 1;
        usleep(200 * 1000);
    }
    fprintf(stderr, "leader %d killed, %d leads: the JM's API links %ld %ld %ld\n", lead, next,
            links[1], links[2], links[3]);
    assert_true(moved);
    assert_true(rm_harness_running(jm));
    assert_int_equal(hinted(), next); /* `rm status` found the new leader */
    /* a file naming the dead replica: a query any replica answers moves it to one that does */
    write_hint(lead);
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    st = rm_harness_admin(c, -1, "tokens", 10000);
    assert_non_null(st);
    json_decref(st);
    rmclient_destroy(&c);
    assert_true(hinted() >= 1 && hinted() != lead);
    long jm_after = submit(spec);
    assert_true(jm_after > 0);
    assert_int_equal(hinted(), next);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader_alone),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
