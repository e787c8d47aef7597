/* Tests of the process node's core (pn/node.h), its statuses caught by a fake send callback
 * (node_fixture.h): the JM's refined R (TASK_ESTIMATE) moving expected waits, progress in
 * RUNNING statuses, and the cache advertisement from a heartbeat through the RM's view and the
 * JM's view to the JM's estimate. Real processes (sleep). */
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

#include "common/bloom.h"
#include "common/err.h"
#include "common/mem.h"
#include "jm/estimator.h"
#include "jm/place.h"
#include "jm/spec.h"
#include "jm/view_proto.h"
#include "pn/exec.h"
#include "rm/rmview.h"
#include "tests/pn/node_fixture.h"

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

int main(void)
{
    if (exec_become_subreaper() != 0)
        return 1;
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest est[] = {
        T(test_estimate_changes_wait),
        T(test_refresh_progress),
        T(test_cache_advertised),
    };
    return cmocka_run_group_tests_name("node estimates and cache", est, NULL, NULL);
}
