/* test_place.c - a JM scheduling round end to end on the pure modules: spec inputs resolved to
 * view nodes, locality wins on an idle cluster, a busy holder loses to an idle rack-mate, a
 * retry avoids the failed node, cached files make a node cheaper, one task per node; with
 * fill, a node takes as many tasks in one round as its zero-wait room holds; aged waits count
 * down from when a node told them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/estimator.h"
#include "jm/place.h"
#include "jm/spec.h"
#include "jm/view.h"
#include "jm_fixture.h"

static double draw_half(void *ctx)
{
    (void)ctx;
    return 0.5;
}

static const char *SPEC =
    "{\"version\":1,\"tasks\":["
    "{\"id\":\"a\",\"stage\":\"s\",\"cmd\":[\"t\"],\"inputs\":[{\"bytes\":1000000000,"
    "\"nodes\":[\"pn-3\",\"ghost\"]}]},"
    "{\"id\":\"b\",\"stage\":\"s\",\"cmd\":[\"t\"],\"inputs\":[{\"bytes\":1000000000,"
    "\"nodes\":[\"pn-7\"]}]},"
    "{\"id\":\"c\",\"stage\":\"s\",\"cmd\":[\"t\"],\"inputs\":[{\"bytes\":1000000000,"
    "\"nodes\":[\"pn-3\"]}]},"
    "{\"id\":\"f\",\"stage\":\"files\",\"cmd\":[\"t\"],\"files\":[{\"path\":\"/x\","
    "\"bytes\":800000000}]}]}";

static const struct place_match *find(const struct place_match *m, size_t n, size_t task)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].task == task)
            return &m[i];
    return NULL;
}

static void test_round(void **state)
{
    (void)state;
    char msg[256];
    struct spec *s = NULL;
    assert_int_equal(spec_parse(SPEC, strlen(SPEC), NULL, &s, msg, sizeof msg), 0);
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    char name[16];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "pn-%d", i);
        fx_node(v, name, i < 5 ? "r0" : "r1", 0, 1, 0);
    }
    assert_int_equal(view_refresh_light(v, 10), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, s->nstages, &est), 0);
    place_t *p = NULL;
    assert_int_equal(place_new(s, NULL, &p), 0);
    assert_int_equal(place_resolve(p, v), 0);
    const struct estimator_task *ta = place_task(p, 0);
    assert_int_equal(ta->inputs[0].nodes[0], 3);
    assert_int_equal(ta->inputs[0].nodes[1], -1); /* unknown node */

    size_t tasks[4] = {0, 1, 2, 3};
    struct place_match out[4];
    size_t n;
    assert_int_equal(place_round(p, v, est, tasks, 4, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(find(out, n, 0)->node, 3); /* local */
    assert_int_equal(find(out, n, 1)->node, 7);
    uint32_t cnode = find(out, n, 2)->node; /* pn-3 is taken: a rack-mate of pn-3 */
    assert_true(cnode < 5 && cnode != 3);
    assert_true(find(out, n, 0)->est.io_s > 6.2 && find(out, n, 0)->est.io_s < 6.3);
    for (size_t i = 1; i < n; i++)
        assert_true(out[i - 1].est.w_s <= out[i].est.w_s);

    /* the holder becomes busy: an idle rack-mate wins over it */
    fx_node(v, "pn-3", "r0", 60, 2, 0);
    size_t one[1] = {0};
    assert_int_equal(place_round(p, v, est, one, 1, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    assert_true(out[0].node < 5 && out[0].node != 3);
    fx_node(v, "pn-3", "r0", 0, 3, 0);

    /* a failed attempt on pn-3: the retry prefers another node */
    place_note_failed(p, 0, 3);
    assert_int_equal(place_round(p, v, est, one, 1, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    assert_int_not_equal(out[0].node, 3);

    /* staging: 800 MB at 80 MB/s is 10 s, unless the stage's files are cached there */
    size_t ft[1] = {3};
    assert_int_equal(place_round(p, v, est, ft, 1, 0, draw_half, NULL, out, &n), 0);
    assert_true(out[0].est.i_s > 9.9);
    assert_int_equal(place_note_cached(p, s->tasks[3].stage, 8), 0);
    assert_int_equal(place_round(p, v, est, ft, 1, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(out[0].node, 8);
    assert_true(out[0].est.i_s == 0);

    size_t bad[1] = {99};
    assert_int_equal(place_round(p, v, est, bad, 1, 0, draw_half, NULL, out, &n), ERR_RANGE);
    place_destroy(&p);
    assert_null(p);
    estimator_destroy(&est);
    view_destroy(&v);
    spec_destroy(&s);
}

/* A node with a full 6x7 matrix: cells up to `free_cpu` cores (and any memory it has) start
 * now, bigger ones wait 30 s. */
static uint32_t fill_node(view_t *v, const char *name, double cpu, double free_cpu, uint64_t seq,
                          int64_t now_ms)
{
    double cpu_bins[6] = {0.5, 1, 2, 4, 8, 16};
    double mem_bins[7] = {1024, 2048, 4096, 8192, 16384, 32768, 65536};
    double cells[42];
    for (int c = 0; c < 6; c++)
        for (int m = 0; m < 7; m++)
            cells[c * 7 + m] = cpu_bins[c] > cpu ? -1 : cpu_bins[c] <= free_cpu ? 0 : 30;
    struct view_entry e = {.name = name,
                           .rack = "r0",
                           .cpu = cpu,
                           .mem_mb = 65536,
                           .up = 1,
                           .boot_id = 1,
                           .seq = seq,
                           .ncpu = 6,
                           .nmem = 7,
                           .cpu_bins = cpu_bins,
                           .mem_bins_mb = mem_bins,
                           .wait_s = cells};
    assert_int_equal(view_update(v, &e, now_ms), 1);
    return (uint32_t)view_find(v, name);
}

static struct spec *fill_spec(int n, double cpu)
{
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf, "{\"version\":1,\"tasks\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"id\":\"t%d\",\"cmd\":[\"true\"],\"cpu\":%g,\"mem_mb\":512}",
                                i ? "," : "", i, cpu);
    snprintf(buf + len, sizeof buf - len, "]}");
    char msg[256];
    struct spec *s = NULL;
    assert_int_equal(spec_parse(buf, strlen(buf), NULL, &s, msg, sizeof msg), 0);
    return s;
}

/* One node with 16 free cores and 20 ready tasks of one core: with fill, ONE round places 16 of
 * them on it (Apollo's one task per node per batch would place one); what was dispatched counts
 * against the room until the node tells anew; a busy node still takes one (it queues there). */
static void test_fill_one_big_node(void **state)
{
    (void)state;
    struct spec *s = fill_spec(20, 1);
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    uint32_t big = fill_node(v, "big", 16, 16, 1, 0);
    assert_int_equal(view_refresh_light(v, 10), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, s->nstages, &est), 0);

    size_t tasks[20];
    for (size_t i = 0; i < 20; i++)
        tasks[i] = i;
    struct place_match out[20];
    size_t n = 0;

    /* Apollo's rule (the default): one task per node per round */
    place_t *p = NULL;
    assert_int_equal(place_new(s, NULL, &p), 0);
    assert_int_equal(place_resolve(p, v), 0);
    assert_int_equal(place_round(p, v, est, tasks, 20, 10, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    place_destroy(&p);

    struct place_config cfg;
    place_config_default(&cfg);
    cfg.fill = 1;
    assert_int_equal(place_new(s, &cfg, &p), 0);
    assert_int_equal(place_resolve(p, v), 0);
    struct matcher_room room;
    assert_int_equal(place_room(p, v, big, &room), 0);
    assert_true(room.cpu == 16 && room.mem_mb == 65536);
    assert_int_equal(place_round(p, v, est, tasks, 20, 10, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 16);
    int seen[20] = {0};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(out[i].node, big);
        assert_true(out[i].task < 20 && !seen[out[i].task]);
        seen[out[i].task] = 1;
        assert_true(out[i].est.w_s == 0);
        assert_int_equal(place_claim(p, out[i].task, out[i].node, 10), 0);
    }
    /* the 16 dispatched fill it: the next round sees no room, and the node takes one (queued) */
    assert_int_equal(place_room(p, v, big, &room), 0);
    assert_true(room.cpu == 0);
    size_t rest[4] = {16, 17, 18, 19};
    assert_int_equal(place_round(p, v, est, rest, 4, 11, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    /* the node tells again later (half its cores free): the claims are replaced by that */
    fill_node(v, "big", 16, 8, 2, 20);
    assert_int_equal(place_room(p, v, big, &room), 0);
    assert_true(room.cpu == 8);
    assert_int_equal(place_round(p, v, est, rest, 4, 21, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(place_claim(p, 99, big, 21), ERR_RANGE);
    place_destroy(&p);
    estimator_destroy(&est);
    view_destroy(&v);
    spec_destroy(&s);
}

/* Two nodes with 8 and 4 free cores, 16 tasks of one core: 12 placed, each node to its room;
 * tasks of 3 cores: the 8-core room holds two of them (the 4 bin holds one). */
static void test_fill_two_nodes(void **state)
{
    (void)state;
    struct spec *s = fill_spec(16, 1);
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    uint32_t a = fill_node(v, "a", 16, 8, 1, 0);
    uint32_t b = fill_node(v, "b", 16, 4, 1, 0);
    assert_int_equal(view_refresh_light(v, 10), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, s->nstages, &est), 0);
    struct place_config cfg;
    place_config_default(&cfg);
    cfg.fill = 1;
    place_t *p = NULL;
    assert_int_equal(place_new(s, &cfg, &p), 0);
    assert_int_equal(place_resolve(p, v), 0);
    size_t tasks[16];
    for (size_t i = 0; i < 16; i++)
        tasks[i] = i;
    struct place_match out[16];
    size_t n = 0;
    assert_int_equal(place_round(p, v, est, tasks, 16, 10, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 12);
    size_t on_a = 0, on_b = 0;
    for (size_t i = 0; i < n; i++) {
        on_a += out[i].node == a;
        on_b += out[i].node == b;
    }
    assert_int_equal(on_a, 8);
    assert_int_equal(on_b, 4);
    place_destroy(&p);
    spec_destroy(&s);

    s = fill_spec(6, 3);
    assert_int_equal(place_new(s, &cfg, &p), 0);
    assert_int_equal(place_resolve(p, v), 0);
    assert_int_equal(place_round(p, v, est, tasks, 6, 10, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 3);
    on_a = on_b = 0;
    for (size_t i = 0; i < n; i++) {
        on_a += out[i].node == a;
        on_b += out[i].node == b;
    }
    assert_int_equal(on_a, 2);
    assert_int_equal(on_b, 1);
    place_destroy(&p);
    estimator_destroy(&est);
    view_destroy(&v);
    spec_destroy(&s);
}

/* Late binding (place_hold) and the claims in the wait: a node with 2 free cores of 4; the
 * JM sends two tasks there. A third placed before the node tells again is estimated behind the
 * two (its matrix still says 2 cores free now, the claims say otherwise), and is held in the
 * JM for at most hold_max_s; a task whose best node has room is never held. */
static void test_claims_and_hold(void **state)
{
    (void)state;
    struct spec *s = fill_spec(3, 1);
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    uint32_t a = fill_node(v, "a", 4, 2, 1, 0);
    assert_int_equal(view_refresh_light(v, 10), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, s->nstages, &est), 0);
    struct place_config cfg;
    place_config_default(&cfg);
    cfg.fill = 1;
    cfg.hold_max_s = 2;
    place_t *p = NULL;
    assert_int_equal(place_new(s, &cfg, &p), 0);
    assert_int_equal(place_resolve(p, v), 0);
    size_t tasks[3] = {0, 1, 2};
    struct place_match out[3];
    size_t n = 0;
    assert_int_equal(place_round(p, v, est, tasks, 2, 10, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i].est.w_s == 0);
        assert_int_equal(place_hold(&cfg, &out[i], 0), 0); /* room now: sent */
        assert_int_equal(place_claim(p, out[i].task, a, 10), 0);
    }
    assert_int_equal(place_round(p, v, est, &tasks[2], 1, 11, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    assert_float_equal(out[0].est.w_s, 30, 1e-9); /* 3 cores wanted: the 4-core cell waits */
    assert_int_equal(place_hold(&cfg, &out[0], 0), 1);
    assert_int_equal(place_hold(&cfg, &out[0], 1.9), 1);
    assert_int_equal(place_hold(&cfg, &out[0], 2.0), 0); /* held long enough: it queues */
    struct place_config off;
    place_config_default(&off);
    assert_int_equal(place_hold(&off, &out[0], 0), 0); /* Apollo's binding (the default) */
    /* place_yield: only a match its node can start now takes other tasks' tokens */
    struct place_config daemon;
    place_config_daemon(&daemon);
    assert_int_equal(daemon.yield, 1);
    assert_int_equal(off.yield, 0);
    assert_int_equal(place_yield(&daemon, &out[0]), 0); /* 30 s to wait */
    struct place_match now_m = out[0];
    now_m.est.w_s = PLACE_HOLD_WAIT_S;
    assert_int_equal(place_yield(&daemon, &now_m), 1);
    assert_int_equal(place_yield(&off, &now_m), 0);
    /* the node tells again with 3 cores free: the claims give way to what it says */
    fill_node(v, "a", 4, 3, 2, 20);
    assert_int_equal(place_round(p, v, est, &tasks[2], 1, 21, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    assert_true(out[0].est.w_s == 0);
    assert_ptr_equal(place_get_config(p), place_get_config(p));
    assert_true(place_get_config(p)->hold_max_s == 2);
    place_destroy(&p);
    estimator_destroy(&est);
    view_destroy(&v);
    spec_destroy(&s);
}

/* A node's waits count down from when its matrix was taken (cfg.age_waits): "a core frees in
 * 0.5 s" told 0.3 s ago is 0.2 s now, told 0.5 s ago is room; without the option, 0.5 s still. */
static void test_waits_age(void **state)
{
    (void)state;
    struct spec *s = fill_spec(1, 1);
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    double cpu_bins[2] = {1, 2}, mem_bins[1] = {65536}, cells[2] = {0.5, 0.5};
    struct view_entry e = {.name = "a",
                           .rack = "r0",
                           .cpu = 2,
                           .mem_mb = 65536,
                           .up = 1,
                           .boot_id = 1,
                           .seq = 1,
                           .ncpu = 2,
                           .nmem = 1,
                           .cpu_bins = cpu_bins,
                           .mem_bins_mb = mem_bins,
                           .wait_s = cells};
    assert_int_equal(view_update(v, &e, 1000), 1);
    assert_int_equal(view_refresh_light(v, 10), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, s->nstages, &est), 0);
    for (int aged = 0; aged <= 1; aged++) {
        struct place_config cfg;
        place_config_default(&cfg);
        cfg.fill = 1;
        cfg.hold_max_s = 2;
        cfg.age_waits = aged;
        place_t *p = NULL;
        assert_int_equal(place_new(s, &cfg, &p), 0);
        assert_int_equal(place_resolve(p, v), 0);
        size_t task = 0;
        struct place_match out[1];
        size_t n = 0;
        assert_int_equal(place_round(p, v, est, &task, 1, 1300, draw_half, NULL, out, &n), 0);
        assert_int_equal(n, 1);
        assert_float_equal(out[0].est.w_s, aged ? 0.2 : 0.5, 1e-9);
        assert_int_equal(place_hold(&cfg, &out[0], 0), 1);
        assert_int_equal(place_round(p, v, est, &task, 1, 1500, draw_half, NULL, out, &n), 0);
        assert_int_equal(n, 1);
        assert_float_equal(out[0].est.w_s, aged ? 0 : 0.5, 1e-9);
        assert_int_equal(place_hold(&cfg, &out[0], 0), !aged); /* room by now: sent */
        place_destroy(&p);
    }
    estimator_destroy(&est);
    view_destroy(&v);
    spec_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round),          cmocka_unit_test(test_fill_one_big_node),
        cmocka_unit_test(test_fill_two_nodes), cmocka_unit_test(test_claims_and_hold),
        cmocka_unit_test(test_waits_age),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
