/* test_policy.c - the cluster view (freshness, racks, light list), priorities (longest path,
 * input size) and dispatch (tokens, opportunistic allowance, upgrades). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/dag.h"
#include "common/mem.h"
#include "common/rng.h"
#include "jm/dispatch.h"
#include "jm/estimator.h"
#include "jm/matcher.h"
#include "jm/place.h"
#include "jm/priority.h"
#include "jm/spec.h"
#include "jm/view.h"
#include "jm/view_proto.h"
#include "jm_fixture.h"

static void test_view_freshness(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    double cb[1] = {16}, mb[1] = {65536}, w5[1] = {5}, w9[1] = {9}, w1[1] = {1};
    struct view_entry e = {.name = "pn-1",
                           .rack = "r1",
                           .cpu = 8,
                           .mem_mb = 8192,
                           .up = 1,
                           .boot_id = 100,
                           .seq = 10,
                           .age_ms = 0,
                           .ncpu = 1,
                           .nmem = 1,
                           .cpu_bins = cb,
                           .mem_bins_mb = mb,
                           .wait_s = w5};
    assert_int_equal(view_update(v, &e, 1000), 1);
    /* an older heartbeat of the same boot (from a lagging replica) is ignored */
    e.seq = 9;
    e.wait_s = w9;
    assert_int_equal(view_update(v, &e, 2000), 0);
    assert_true(view_node(v, 0)->wait_s[0] == 5.0f);
    /* a newer one is applied */
    e.seq = 11;
    assert_int_equal(view_update(v, &e, 2000), 1);
    assert_true(view_node(v, 0)->wait_s[0] == 9.0f);
    /* a restarted PN (new boot id, low seq) wins when its information is more recent ... */
    e.boot_id = 7;
    e.seq = 1;
    e.wait_s = w1;
    e.age_ms = 100;
    assert_int_equal(view_update(v, &e, 3000), 1);
    assert_true(view_node(v, 0)->wait_s[0] == 1.0f);
    assert_int_equal(view_node(v, 0)->info_ms, 2900);
    assert_int_equal(view_age_ms(view_node(v, 0), 4000), 1100);
    /* ... and an old boot's entry relayed late loses */
    e.boot_id = 100;
    e.seq = 50;
    e.age_ms = 5000;
    assert_int_equal(view_update(v, &e, 3100), 0);
    /* bad entries */
    struct view_entry bad = e;
    bad.cpu = 0;
    assert_int_equal(view_update(v, &bad, 0), ERR_INVAL);
    bad = e;
    bad.name = "";
    assert_int_equal(view_update(v, &bad, 0), ERR_INVAL);
    bad = e;
    bad.ncpu = 17;
    assert_int_equal(view_update(v, &bad, 0), ERR_INVAL);
    double desc[2] = {4, 2}, cells[2] = {0, 0};
    bad = e;
    bad.ncpu = 2;
    bad.cpu_bins = desc;
    bad.wait_s = cells;
    assert_int_equal(view_update(v, &bad, 0), ERR_INVAL);
    assert_int_equal(view_count(v), 1);
    view_destroy(&v);
    assert_null(v);
}

static void test_view_racks_and_lookup(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "node-%d", i);
        fx_node(v, name, i % 2 ? "odd" : "even", (double)(1000 - i), 1, 0);
    }
    assert_int_equal(view_count(v), 1000);
    assert_int_equal(view_find(v, "node-777"), 777);
    assert_int_equal(view_find(v, "node-1000"), -1);
    assert_int_equal(view_rack_count(v), 2);
    size_t n;
    const uint32_t *odd = view_rack_nodes(v, view_node(v, 1)->rack, &n);
    assert_int_equal(n, 500);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(odd[i] % 2, 1);
    assert_string_equal(view_rack_name(v, view_node(v, 1)->rack), "odd");
    /* moving a node to another rack re-files it */
    fx_node(v, "node-1", "even", 1, 2, 0);
    view_rack_nodes(v, view_node(v, 1)->rack, &n);
    assert_int_equal(n, 501);
    /* light list: lowest wait first, down nodes excluded */
    view_set_up(v, 999, 0);
    assert_int_equal(view_refresh_light(v, 3), 0);
    const uint32_t *l = view_light(v, &n);
    assert_int_equal(n, 3);
    assert_int_equal(l[0], 1); /* wait 1 after the refresh */
    assert_int_equal(l[1], 998);
    assert_int_equal(l[2], 997);
    view_destroy(&v);

    /* many racks (looked up by name, not scanned): every node filed in its own, in order */
    assert_int_equal(view_new(&v), 0);
    char rack[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "node-%d", i);
        snprintf(rack, sizeof rack, "dc1-row-%02d-rack-%03d", i / 400, (i / 8) % 50);
        fx_node(v, name, rack, 1, 1, 0);
    }
    assert_int_equal(view_rack_count(v), 250);
    for (uint32_t i = 0; i < 2000; i++) {
        snprintf(rack, sizeof rack, "dc1-row-%02u-rack-%03u", i / 400, (i / 8) % 50);
        assert_string_equal(view_rack_name(v, view_node(v, i)->rack), rack);
        const uint32_t *in = view_rack_nodes(v, view_node(v, i)->rack, &n);
        assert_int_equal(n, 8);
        assert_int_equal(in[i % 8], i);
    }
    /* a node moved to a rack never seen gets a new one, found again by name */
    fx_node(v, "node-5", "spare-rack", 1, 2, 0);
    assert_int_equal(view_rack_count(v), 251);
    assert_string_equal(view_rack_name(v, view_node(v, 5)->rack), "spare-rack");
    fx_node(v, "node-6", "spare-rack", 1, 2, 0);
    assert_int_equal(view_node(v, 6)->rack, view_node(v, 5)->rack);
    view_rack_nodes(v, view_node(v, 0)->rack, &n);
    assert_int_equal(n, 6);
    view_destroy(&v);
}

static void test_view_wait_lookup(void **state)
{
    (void)state;
    struct view_node n;
    memset(&n, 0, sizeof n);
    n.cpu = 4;
    n.mem_mb = 4096;
    n.ncpu = 2;
    n.nmem = 2;
    const float cpu_bins[2] = {1, 2}, mem_bins[2] = {1024, 2048};
    float cells[4] = {1, 2, 3, 4};
    n.cpu_bins = cpu_bins;
    n.mem_bins_mb = mem_bins;
    n.wait_s = cells;
    assert_true(view_wait(&n, 0.5, 100, 0) == 1.0);
    assert_true(view_wait(&n, 1.5, 100, 0) == 3.0);
    assert_true(view_wait(&n, 1, 1500, 0) == 2.0);
    assert_true(view_wait(&n, 3, 3000, 0) == 4.0); /* past the bins but within capacity */
    assert_true(view_wait(&n, 5, 100, 0) < 0);     /* over capacity */
    assert_true(view_wait(&n, 0.5, 100, 1) == 4.0);
    n.ncpu = 0;
    assert_true(view_wait(&n, 1, 1, 0) == 0.0); /* no matrix: idle */
}

static void test_view_from_proto(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    proto_view_node_t n;
    memset(&n, 0, sizeof n);
    n.name = "pn-9";
    n.rack = "r2";
    n.endpoint = "tcp://127.0.0.1:1";
    n.state = PROTO_NODE_UP;
    n.cpu = 4;
    n.mem_mb = 8192;
    n.running_regular = 2;
    n.queued_opportunistic = 3;
    n.boot_id = 5;
    n.seq = 7;
    n.age_ms = 250;
    n.successes = 3;
    n.failures = 1;
    n.matrix.ncpu = 2;
    n.matrix.nmem = 1;
    n.matrix.cpu_bounds[0] = 1;
    n.matrix.cpu_bounds[1] = 4;
    n.matrix.mem_bounds_mb[0] = 8192;
    n.matrix.cells_ms[0] = 1500;
    n.matrix.cells_ms[1] = PROTO_WAIT_NEVER;
    assert_int_equal(view_update_from_proto(v, &n, 10000), 1);
    const struct view_node *vn = view_node(v, 0);
    assert_true(vn->up);
    assert_int_equal(vn->running, 2);
    assert_int_equal(vn->queued, 3);
    assert_string_equal(vn->endpoint, "tcp://127.0.0.1:1");
    assert_int_equal(vn->info_ms, 9750);
    assert_true(fabs(vn->psucc - 4.0 / 6.0) < 1e-12);
    assert_true(view_wait(vn, 1, 100, 0) == 1.5);
    assert_true(view_wait(vn, 2, 100, 0) < 0); /* NEVER */
    /* draining: known but not up for placement */
    n.state = PROTO_NODE_DRAINING;
    n.seq = 8;
    assert_int_equal(view_update_from_proto(v, &n, 11000), 1);
    assert_false(view_node(v, 0)->up);
    /* a PN's own matrix with a task status replaces the cells and is fresh */
    proto_matrix_t m;
    memset(&m, 0, sizeof m);
    m.ncpu = 1;
    m.nmem = 1;
    m.cpu_bounds[0] = 4;
    m.mem_bounds_mb[0] = 8192;
    m.cells_ms[0] = 20;
    assert_int_equal(view_update_matrix_from_proto(v, "pn-9", &m, 20000), 0);
    assert_true(fabs(view_wait(view_node(v, 0), 2, 100, 0) - 0.02) < 1e-6);
    assert_int_equal(view_age_ms(view_node(v, 0), 20000), 0);
    assert_int_equal(view_update_matrix_from_proto(v, "nope", &m, 0), ERR_NOTFOUND);
    m.ncpu = 17;
    assert_int_equal(view_update_matrix_from_proto(v, "pn-9", &m, 0), ERR_INVAL);
    view_destroy(&v);
}

static struct spec *load(const char *name)
{
    const char *d = getenv("PADDOCK_SOURCE_DIR");
    char fp[4096], msg[512] = "";
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/%s", d != NULL ? d : ".", name);
    struct spec *s = NULL;
    if (spec_load(fp, NULL, &s, msg, sizeof msg) != 0)
        fail_msg("%s: %s", name, msg);
    return s;
}

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

static void test_priority_longest_path(void **state)
{
    (void)state;
    struct spec *s = load("diamond_barriers.json");
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    double *sp = calloc(s->nstages, sizeof *sp), *bl = calloc(s->ntasks, sizeof *bl);
    assert_int_equal(priority_compute(d, NULL, bl, sp), 0);
    /* split 0.05 -> left 0.1 (longer than right's chain 0.02+0.02) -> join 0.05 -> final 0.01 */
    NEAR(sp[spec_stage_index(s, "split")], 0.21);
    NEAR(sp[spec_stage_index(s, "left")], 0.16);
    NEAR(sp[spec_stage_index(s, "right")], 0.10);
    NEAR(sp[spec_stage_index(s, "join")], 0.06);
    NEAR(sp[spec_stage_index(s, "final")], 0.01);
    NEAR(bl[spec_task_index(s, "right-1")], 0.08);
    NEAR(bl[spec_task_index(s, "right-0")], 0.10);
    size_t ready[3] = {(size_t)spec_task_index(s, "right-0"), (size_t)spec_task_index(s, "left-0"),
                       (size_t)spec_task_index(s, "left-1")};
    priority_sort(d, sp, ready, 3);
    /* the left stage first (longer path), larger input first within it */
    assert_int_equal(ready[0], spec_task_index(s, "left-1"));
    assert_int_equal(ready[1], spec_task_index(s, "left-0"));
    assert_int_equal(ready[2], spec_task_index(s, "right-0"));
    /* refined runtimes change the order: make the right stage slow */
    double *rt = calloc(s->ntasks, sizeof *rt);
    for (size_t i = 0; i < s->ntasks; i++)
        rt[i] = s->tasks[i].runtime_s;
    rt[spec_task_index(s, "right-0")] = 5;
    assert_int_equal(priority_compute(d, rt, NULL, sp), 0);
    priority_sort(d, sp, ready, 3);
    assert_int_equal(ready[0], spec_task_index(s, "right-0"));
    free(rt);
    free(sp);
    free(bl);
    dag_destroy(&d);
    spec_destroy(&s);
}

/* An explicit edge across stages lengthens the path: a short stage feeding a long chain ranks
 * above a long stage that ends the job. */
static void test_priority_explicit_edges(void **state)
{
    (void)state;
    const char *doc = "{\"version\":1,\"tasks\":["
                      "{\"id\":\"a\",\"stage\":\"A\",\"cmd\":[\"t\"],\"runtime_s\":1},"
                      "{\"id\":\"b\",\"stage\":\"B\",\"cmd\":[\"t\"],\"runtime_s\":5},"
                      "{\"id\":\"c\",\"stage\":\"C\",\"cmd\":[\"t\"],\"runtime_s\":3,"
                      "\"after\":[\"a\"]},"
                      "{\"id\":\"d\",\"stage\":\"C\",\"cmd\":[\"t\"],\"runtime_s\":3,"
                      "\"after\":[\"c\"]}]}";
    char msg[256];
    struct spec *s = NULL;
    assert_int_equal(spec_parse(doc, strlen(doc), NULL, &s, msg, sizeof msg), 0);
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    double sp[3], bl[4];
    assert_int_equal(priority_compute(d, NULL, bl, sp), 0);
    NEAR(bl[0], 7); /* a -> c -> d */
    NEAR(bl[1], 5);
    NEAR(bl[2], 6);
    NEAR(bl[3], 3);
    NEAR(sp[spec_stage_index(s, "A")], 7);
    NEAR(sp[spec_stage_index(s, "B")], 5);
    NEAR(sp[spec_stage_index(s, "C")], 6);
    size_t ready[2] = {1, 0};
    priority_sort(d, sp, ready, 2);
    assert_int_equal(ready[0], 0);
    dag_destroy(&d);
    spec_destroy(&s);
}

static void test_dispatch_tokens_and_allowance(void **state)
{
    (void)state;
    struct dispatch_config cfg = {.opp_factor = 1.5};
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(&cfg, 10, &d), 0);
    assert_int_equal(dispatch_next(d), DISPATCH_NONE); /* no tokens, no allowance */
    dispatch_set_tokens(d, 2);
    assert_int_equal(dispatch_allowance(d), 3);
    int want[6] = {DISPATCH_REGULAR,       DISPATCH_REGULAR,       DISPATCH_OPPORTUNISTIC,
                   DISPATCH_OPPORTUNISTIC, DISPATCH_OPPORTUNISTIC, DISPATCH_NONE};
    for (size_t t = 0; t < 6; t++)
        assert_int_equal(dispatch_place(d, t), want[t]);
    assert_int_equal(dispatch_class_of(d, 5), DISPATCH_NONE);
    assert_int_equal(dispatch_place(d, 0), ERR_STATE);
    assert_int_equal(dispatch_regular(d), 2);
    assert_int_equal(dispatch_opportunistic(d), 3);
    /* task 2 started running; 3 and 4 wait in PN queues. Task 4 has the higher priority. */
    assert_int_equal(dispatch_started(d, 2), 0);
    double prio[10] = {0, 0, 9, 1, 5, 0, 0, 0, 0, 0};
    size_t up[4];
    assert_int_equal(dispatch_upgrades(d, prio, up, 4), 0); /* no free token */
    assert_int_equal(dispatch_finished(d, 0), 0);           /* a token frees up */
    assert_int_equal(dispatch_upgrades(d, prio, up, 4), 1);
    assert_int_equal(up[0], 4); /* highest-priority waiting one; running task 2 not upgraded */
    assert_int_equal(dispatch_class_of(d, 4), DISPATCH_REGULAR);
    assert_int_equal(dispatch_regular(d), 2);
    assert_int_equal(dispatch_opportunistic(d), 2);
    /* Jockey raises the grant: the remaining waiting one is upgraded (oldest first w/o prio) */
    dispatch_set_tokens(d, 5);
    assert_int_equal(dispatch_upgrades(d, NULL, up, 4), 1);
    assert_int_equal(up[0], 3);
    /* Jockey lowers the grant below what is in flight: nothing preempted, no new regular */
    dispatch_set_tokens(d, 1);
    assert_int_equal(dispatch_regular(d), 3);
    assert_int_equal(dispatch_next(d), DISPATCH_NONE); /* opp 1 (task 2) >= allowance 1 */
    dispatch_set_factor(d, 4);
    assert_int_equal(dispatch_next(d), DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_finished(d, 9), ERR_STATE);
    assert_int_equal(dispatch_finished(d, 99), ERR_RANGE);
    /* a finished task can be dispatched again (retry) */
    assert_int_equal(dispatch_finished(d, 2), 0);
    assert_int_equal(dispatch_class_of(d, 2), DISPATCH_NONE);
    assert_int_equal(dispatch_place(d, 2), DISPATCH_OPPORTUNISTIC);
    dispatch_destroy(&d);
    assert_null(d);
    struct dispatch_config bad = {.opp_factor = -1};
    assert_int_equal(dispatch_new(&bad, 1, &d), ERR_INVAL);
}

/* A resumed JM adopts attempts found at the nodes whatever its grant; downgrades take back the
 * units over it. */
static void test_dispatch_adopt(void **state)
{
    (void)state;
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(NULL, 4, &d), 0);
    assert_int_equal(dispatch_adopt(d, 0, DISPATCH_REGULAR), 0); /* no tokens yet */
    assert_int_equal(dispatch_adopt(d, 1, DISPATCH_REGULAR), 0);
    assert_int_equal(dispatch_adopt(d, 2, DISPATCH_OPPORTUNISTIC), 0);
    assert_int_equal(dispatch_adopt(d, 0, DISPATCH_REGULAR), ERR_STATE);
    assert_int_equal(dispatch_adopt(d, 3, DISPATCH_NONE), ERR_INVAL);
    assert_int_equal(dispatch_adopt(d, 9, DISPATCH_REGULAR), ERR_RANGE);
    assert_int_equal(dispatch_regular(d), 2);
    assert_int_equal(dispatch_opportunistic(d), 1);
    dispatch_set_tokens(d, 1);
    size_t out[4];
    assert_int_equal(dispatch_downgrades(d, NULL, NULL, out, 4), 1);
    assert_int_equal(dispatch_regular(d), 1);
    assert_int_equal(dispatch_finished(d, out[0]), 0);
    assert_int_equal(dispatch_class_of(d, out[0]), DISPATCH_NONE);
    dispatch_destroy(&d);
}

/* Sized tokens: 16-unit tasks and 1-unit tasks share a grant of 20 units. */
static void test_dispatch_sized(void **state)
{
    (void)state;
    struct dispatch_config cfg = {.opp_factor = 0};
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(&cfg, 10, &d), 0);
    assert_int_equal(dispatch_set_cost(d, 0, 16), 0);
    assert_int_equal(dispatch_set_cost(d, 1, 16), 0);
    assert_int_equal(dispatch_set_cost(d, 99, 16), ERR_RANGE);
    assert_int_equal(dispatch_cost(d, 2), 1); /* default */
    dispatch_set_tokens(d, 20);
    assert_int_equal(dispatch_place(d, 0), DISPATCH_REGULAR);
    assert_int_equal(dispatch_regular_units(d), 16);
    /* task 1 (16) does not fit the 4 free units: it reserves the grant, small tasks wait */
    assert_int_equal(dispatch_place(d, 1), DISPATCH_NONE);
    assert_int_equal(dispatch_place(d, 2), DISPATCH_NONE);
    assert_int_equal(dispatch_regular(d), 1);
    /* task 0 ends: the 20 units are free; the reservation holds back only task 1's 16, so a
       task of one unit fits beside it, and one of 8 does not */
    assert_int_equal(dispatch_finished(d, 0), 0);
    dispatch_round(d);
    assert_int_equal(dispatch_set_cost(d, 9, 8), 0);
    assert_int_equal(dispatch_place(d, 9), DISPATCH_NONE); /* 8 + 16 > 20: reserved */
    assert_int_equal(dispatch_set_cost(d, 9, 1), 0);
    assert_int_equal(dispatch_place(d, 2), DISPATCH_REGULAR); /* 1 + 16 <= 20 */
    assert_int_equal(dispatch_place(d, 1), DISPATCH_REGULAR);
    for (size_t t = 3; t < 6; t++)
        assert_int_equal(dispatch_place(d, t), DISPATCH_REGULAR);
    assert_int_equal(dispatch_regular_units(d), 20);
    assert_int_equal(dispatch_regular(d), 5);
    assert_int_equal(dispatch_place(d, 6), DISPATCH_NONE); /* a full grant: task 6 reserves */
    /* a reservation lapses when its task is not offered within a round (no node fits it) */
    assert_int_equal(dispatch_finished(d, 1), 0);
    dispatch_round(d);
    dispatch_round(d);
    assert_int_equal(dispatch_set_cost(d, 0, 8), 0);
    assert_int_equal(dispatch_place(d, 0), DISPATCH_REGULAR); /* 4 + 8 */
    assert_int_equal(dispatch_set_cost(d, 7, 10), 0);
    assert_int_equal(dispatch_place(d, 7), DISPATCH_NONE); /* 12 + 10 > 20: reserves */
    assert_int_equal(dispatch_place(d, 6), DISPATCH_NONE);
    dispatch_round(d); /* task 7 was offered in this round: kept */
    assert_int_equal(dispatch_place(d, 6), DISPATCH_NONE);
    dispatch_round(d); /* not offered since: lapses */
    assert_int_equal(dispatch_place(d, 6), DISPATCH_REGULAR);
    /* a task costlier than the whole grant never reserves it and never runs regular */
    assert_int_equal(dispatch_set_cost(d, 8, 30), 0);
    assert_int_equal(dispatch_place(d, 8), DISPATCH_NONE);
    assert_int_equal(dispatch_place(d, 9), DISPATCH_REGULAR);
    /* ... but opportunistically when the allowance has room for it */
    dispatch_set_factor(d, 2); /* 40 units */
    assert_int_equal(dispatch_place(d, 8), DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_opportunistic_units(d), 30);
    assert_int_equal(dispatch_allowance(d), 40);
    dispatch_destroy(&d);
}

/* Tokens follow the free cores (issue 22): a task whose node can start it now takes the units of
 * waiting regular tasks (lowest priority first, newest on ties), never a running one's, and the
 * regular units stay within the grant; a freed unit upgrades the yielded task again. */
static int test__may_yield(void *ctx, size_t task)
{
    return task != *(const size_t *)ctx;
}

static void test_dispatch_yield(void **state)
{
    (void)state;
    struct dispatch_config cfg = {.opp_factor = 0};
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(&cfg, 8, &d), 0);
    dispatch_set_tokens(d, 4);
    for (size_t t = 0; t < 4; t++)
        assert_int_equal(dispatch_place(d, t), DISPATCH_REGULAR);
    assert_int_equal(dispatch_started(d, 0), 0);
    assert_int_equal(dispatch_started(d, 1), 0); /* 2 and 3 wait in queues */
    double prio[8] = {1, 1, 5, 3, 9, 0, 0, 0};
    size_t out[8];
    assert_int_equal(dispatch_place(d, 4), DISPATCH_NONE);
    assert_int_equal(dispatch_yieldable(d, NULL, NULL), 2);
    size_t not3 = 3; /* the caller's filter: task 3 may not yield */
    assert_int_equal(dispatch_yieldable(d, test__may_yield, &not3), 1);
    assert_int_equal(dispatch_yield(d, 4, prio, test__may_yield, &not3, out, 8), 1);
    assert_int_equal(out[0], 2);
    dispatch_reclass(d, 2, DISPATCH_REGULAR); /* back, for the unfiltered case */
    assert_int_equal(dispatch_yield(d, 4, prio, NULL, NULL, out, 8), 1);
    assert_int_equal(out[0], 3); /* the lower priority of the two waiting */
    assert_int_equal(dispatch_class_of(d, 3), DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_regular_units(d), 3);
    assert_int_equal(dispatch_place(d, 4), DISPATCH_REGULAR);
    assert_int_equal(dispatch_regular_units(d), 4); /* within the grant */
    assert_int_equal(dispatch_yielded(d), 2);
    /* free units: nothing yields; an in-flight task cannot be the one that takes */
    assert_int_equal(dispatch_yield(d, 4, prio, NULL, NULL, out, 8), 0);
    assert_int_equal(dispatch_finished(d, 0), 0);
    assert_int_equal(dispatch_yield(d, 5, prio, NULL, NULL, out, 8), 0); /* a unit is free */
    /* the freed unit upgrades the yielded task */
    assert_int_equal(dispatch_upgrades(d, prio, out, 8), 1);
    assert_int_equal(out[0], 3);
    /* only running regular tasks and one waiting (2): a task of 2 units cannot get them */
    assert_int_equal(dispatch_started(d, 3), 0);
    assert_int_equal(dispatch_started(d, 4), 0);
    assert_int_equal(dispatch_set_cost(d, 5, 2), 0);
    assert_int_equal(dispatch_yield(d, 5, prio, NULL, NULL, out, 8), 0);
    assert_int_equal(dispatch_class_of(d, 2), DISPATCH_REGULAR);         /* nothing changed */
    assert_int_equal(dispatch_yield(d, 6, prio, NULL, NULL, out, 8), 1); /* one unit: yes */
    assert_int_equal(out[0], 2);
    dispatch_destroy(&d);
}

/* The grant falls below the regular units in flight: queued tasks are downgraded first, then
 * the running ones with the most time left; upgrades bring queued ones back. */
static void test_dispatch_downgrades(void **state)
{
    (void)state;
    struct dispatch_config cfg = {.opp_factor = 0.5};
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(&cfg, 8, &d), 0);
    for (size_t t = 0; t < 6; t++)
        dispatch_set_cost(d, t, 2);
    dispatch_set_tokens(d, 12);
    for (size_t t = 0; t < 6; t++)
        assert_int_equal(dispatch_place(d, t), DISPATCH_REGULAR);
    for (size_t t = 0; t < 4; t++)
        assert_int_equal(dispatch_started(d, t), 0); /* 4 and 5 wait in queues */
    double prio[8] = {5, 1, 3, 2, 7, 4, 0, 0};
    double rem[8] = {10, 30, 30, 1, 0, 0, 0, 0};
    size_t out[8];
    assert_int_equal(dispatch_downgrades(d, prio, rem, out, 8), 0); /* nothing over */
    dispatch_set_tokens(d, 5); /* 12 units in flight, 5 granted: 4 tasks go */
    assert_int_equal(dispatch_downgrades(d, prio, rem, out, 8), 4);
    assert_int_equal(out[0], 5); /* queued, lower priority */
    assert_int_equal(out[1], 4); /* queued */
    assert_int_equal(out[2], 1); /* running, 30 s left, lower priority than task 2 */
    assert_int_equal(out[3], 2); /* running, 30 s left */
    assert_int_equal(dispatch_regular_units(d), 4);
    assert_int_equal(dispatch_opportunistic_units(d), 8); /* beyond the allowance of 2 */
    assert_int_equal(dispatch_class_of(d, 1), DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_downgraded(d), 4);
    assert_int_equal(dispatch_next(d), DISPATCH_REGULAR); /* 4 of 5 units: one more unit */
    assert_int_equal(dispatch_set_cost(d, 6, 2), 0);
    assert_int_equal(dispatch_place(d, 6), DISPATCH_NONE); /* neither fits */
    /* a downgraded task ends: its units leave the opportunistic count */
    assert_int_equal(dispatch_finished(d, 1), 0);
    assert_int_equal(dispatch_opportunistic_units(d), 6);
    /* the grant comes back: once task 6's reservation lapses, the queued downgraded ones are
     * upgraded, highest priority first */
    dispatch_set_tokens(d, 8);
    assert_int_equal(dispatch_upgrades(d, prio, out, 8), 0);
    dispatch_round(d);
    dispatch_round(d);
    assert_int_equal(dispatch_upgrades(d, prio, out, 8), 2);
    assert_int_equal(out[0], 4);
    assert_int_equal(out[1], 5);
    assert_int_equal(dispatch_regular_units(d), 8);
    /* the PN reports a class of its own: the units move */
    assert_int_equal(dispatch_reclass(d, 0, DISPATCH_OPPORTUNISTIC), 0);
    assert_int_equal(dispatch_regular_units(d), 6);
    assert_int_equal(dispatch_reclass(d, 0, DISPATCH_OPPORTUNISTIC), 0);
    assert_int_equal(dispatch_opportunistic_units(d), 4);
    assert_int_equal(dispatch_reclass(d, 7, DISPATCH_REGULAR), ERR_STATE);
    assert_int_equal(dispatch_reclass(d, 0, DISPATCH_NONE), ERR_INVAL);
    dispatch_destroy(&d);
}

/* Every allocation point fails once: the call reports ERR_NOMEM, leaves no object, leaks nothing
 * (ASan) and leaves an existing view unchanged. */
static void test_alloc_failures(void **state)
{
    (void)state;
    struct spec *s = load("diamond_barriers.json");
    int failures = 0;
    for (long n = 0; n < 200; n++) {
        mem_fail_after(n);
        dag_t *d = NULL;
        estimator_t *e = NULL;
        dispatch_t *di = NULL;
        matcher_t *m = NULL;
        place_t *p = NULL;
        int r1 = dag_new(s, &d), r2 = estimator_new(NULL, 4, &e), r3 = dispatch_new(NULL, 9, &di);
        int r4 = matcher_new(100, &m), r5 = place_new(s, NULL, &p);
        double sp[8];
        int r6 = d != NULL ? priority_compute(d, NULL, NULL, sp) : 0;
        long refused = mem_fail_count();
        mem_fail_reset();
        int rs[6] = {r1, r2, r3, r4, r5, r6};
        for (int i = 0; i < 6; i++)
            assert_true(rs[i] == 0 || rs[i] == ERR_NOMEM);
        assert_true((r1 == 0) == (d != NULL));
        assert_true((r2 == 0) == (e != NULL));
        assert_true((r3 == 0) == (di != NULL));
        assert_true((r4 == 0) == (m != NULL));
        assert_true((r5 == 0) == (p != NULL));
        failures += refused > 0;
        dag_destroy(&d);
        estimator_destroy(&e);
        dispatch_destroy(&di);
        matcher_destroy(&m);
        place_destroy(&p);
        if (refused == 0)
            break;
    }
    assert_true(failures > 10);
    /* a view keeps its state when an update cannot allocate */
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    char name[32];
    int refused_updates = 0;
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "n%d", i);
        size_t before = view_count(v);
        mem_fail_after(0);
        double cb[1] = {1}, mb[1] = {1}, w[1] = {0};
        struct view_entry e = {.name = name,
                               .rack = i % 7 ? "r" : name,
                               .cpu = 1,
                               .mem_mb = 1,
                               .up = 1,
                               .ncpu = 1,
                               .nmem = 1,
                               .cpu_bins = cb,
                               .mem_bins_mb = mb,
                               .wait_s = w};
        int rc = view_update(v, &e, 0);
        mem_fail_reset();
        if (rc == ERR_NOMEM) {
            refused_updates++;
            assert_int_equal(view_count(v), before);
            assert_int_equal(view_find(v, name), -1);
            rc = view_update(v, &e, 0);
        }
        assert_int_equal(rc, 1);
        assert_int_equal(view_find(v, name), (long)before);
    }
    assert_true(refused_updates > 0);
    view_destroy(&v);
    spec_destroy(&s);
}

/* Upgrades look at the tasks in flight only (an in-flight list the dispatcher keeps): after random
 * adopts, placements, starts and ends, each upgrade is still the waiting opportunistic task of
 * highest priority, the oldest dispatch on ties, found by scanning the whole job here. */
static void test_dispatch_inflight_upgrades(void **state)
{
    (void)state;
    enum { N = 300 };
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(NULL, N, &d), 0);
    double prio[N];
    uint64_t seq[N], next = 0;
    struct rng g;
    rng_seed(&g, 7);
    size_t upgraded = 0;
    for (size_t t = 0; t < N; t++)
        prio[t] = (double)(t * 7919 % 13);
    for (int step = 0; step < 20000; step++) {
        size_t t = (size_t)(rng_next(&g) % N);
        enum dispatch_class c = dispatch_class_of(d, t);
        switch (rng_next(&g) % 6) {
        case 0:
        case 1: /* in flight as opportunistic whatever the capacity (no reservation) */
            if (c == DISPATCH_NONE) {
                assert_int_equal(dispatch_adopt(d, t, DISPATCH_OPPORTUNISTIC), 0);
                seq[t] = next++;
            }
            break;
        case 2: /* a regular placement while a unit is free */
            if (c == DISPATCH_NONE && dispatch_regular_units(d) < dispatch_tokens(d)) {
                assert_int_equal(dispatch_place(d, t), DISPATCH_REGULAR);
                seq[t] = next++;
            }
            break;
        case 3:
            if (c != DISPATCH_NONE)
                assert_int_equal(dispatch_started(d, t), 0);
            break;
        case 4:
            if (c != DISPATCH_NONE)
                assert_int_equal(dispatch_finished(d, t), 0);
            break;
        default: {
            dispatch_set_tokens(d, (uint32_t)(rng_next(&g) % 40));
            size_t up[4];
            size_t k = dispatch_upgrades(d, prio, up, 1);
            size_t best = SIZE_MAX, waiting = 0;
            for (size_t u = 0; u < N; u++) {
                int now_reg = k == 1 && u == up[0];
                if ((dispatch_class_of(d, u) != DISPATCH_OPPORTUNISTIC && !now_reg) ||
                    dispatch_running(d, u))
                    continue;
                waiting++;
                if (best == SIZE_MAX || prio[u] > prio[best] ||
                    (prio[u] == prio[best] && seq[u] < seq[best]))
                    best = u;
            }
            if (k == 1) {
                assert_int_equal(up[0], best);
                assert_int_equal(dispatch_class_of(d, up[0]), DISPATCH_REGULAR);
                upgraded++;
            } else {
                /* none: nothing waits, or no unit is free */
                assert_true(waiting == 0 ||
                            dispatch_regular_units(d) + 1 > (uint64_t)dispatch_tokens(d));
            }
            break;
        }
        }
        size_t nreg = 0, nopp = 0;
        for (size_t u = 0; u < N; u++) {
            nreg += dispatch_class_of(d, u) == DISPATCH_REGULAR;
            nopp += dispatch_class_of(d, u) == DISPATCH_OPPORTUNISTIC;
        }
        assert_int_equal(dispatch_regular(d), nreg);
        assert_int_equal(dispatch_opportunistic(d), nopp);
    }
    assert_true(upgraded > 0); /* the walk did exercise upgrades */
    dispatch_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_freshness),
        cmocka_unit_test(test_view_racks_and_lookup),
        cmocka_unit_test(test_view_wait_lookup),
        cmocka_unit_test(test_view_from_proto),
        cmocka_unit_test(test_priority_longest_path),
        cmocka_unit_test(test_priority_explicit_edges),
        cmocka_unit_test(test_dispatch_tokens_and_allowance),
        cmocka_unit_test(test_dispatch_sized),
        cmocka_unit_test(test_dispatch_adopt),
        cmocka_unit_test(test_dispatch_downgrades),
        cmocka_unit_test(test_dispatch_yield),
        cmocka_unit_test(test_dispatch_inflight_upgrades),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
