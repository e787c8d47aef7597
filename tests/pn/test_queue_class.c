/* Unit tests of pn/queue's opportunistic side and class changes: opportunistic picks fair across
 * jobs and by tokens, behind the regular queue; upgrade, downgrade and its grace, preemption
 * choice; a job's tasks in priority order without moving another job's reservation, and no
 * self-preemption. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/rng.h"
#include "pn/oppweight.h"
#include "pn/queue.h"
#include "tests/pn/queue_fixture.h"

static int push_job(queue_t *q, uint64_t id, uint64_t job)
{
    queue_task_t t = {.id = id,
                      .cpu = 1,
                      .mem_mb = 100,
                      .est_s = 5,
                      .klass = QUEUE_OPPORTUNISTIC,
                      .weight = 1,
                      .job = job};
    return queue_push(q, &t);
}

/* Apollo §3.5's weights in the real queue: job 1 queues 2 opportunistic tasks, job 2 queues
 * 200, all of weight 1. Over 1000 evenly spread draws (each picked task put back) job 1 gets
 * half the picks (oppweight_pick draws a job first), not the 1% a flat pick over tasks gives. */
static void test_opportunistic_fair_across_jobs(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 0, 0);
    assert_int_equal(push_job(q, 1, 1), 0);
    assert_int_equal(push_job(q, 2, 1), 0);
    for (uint64_t id = 100; id < 300; id++)
        assert_int_equal(push_job(q, id, 2), 0);
    int small = 0, n = 1000;
    for (int i = 0; i < n; i++) {
        queue_task_t t;
        assert_int_equal(queue_pick(q, i, (i + 0.5) / n, &t), 0);
        small += t.job == 1;
        assert_int_equal(queue_finish(q, t.id), 0);
        assert_int_equal(queue_push(q, &t), 0);
    }
    assert_in_range(small, 450, 550);
    /* with the node full no opportunistic task fits, whatever its job's share */
    queue_task_t big = {.id = 999, .cpu = 1, .mem_mb = 100, .est_s = 5, .klass = QUEUE_REGULAR};
    assert_int_equal(queue_push(q, &big), 0);
    assert_int_equal(pick(q, 2000, 0.1), 999);
    assert_int_equal(pick(q, 2000, 0.1), 0); /* full: no opportunistic task fits */
    queue_destroy(&q);
}

/* Issue 25, Apollo §3.5 ("shared fairly among jobs, proportionally to jobs' token allocation"):
 * two jobs' opportunistic tasks wait on one node of 2 cpus, job 1 granted 1 token and job 2
 * granted 3, each task weighed as the JM weighs it (oppweight_job_weight of its grant). Job 1
 * queues 30 tasks of 0.5 cpu, job 2 only 6, so a pick by task count would favour job 1. Tasks
 * start as room frees (a random running one ends each step, pseudo-random draws) and go back to
 * the queue; over 4000 starts, job 2 gets three times job 1's, within 10%. */
static void test_opportunistic_shares_by_tokens(void **state)
{
    (void)state;
    queue_t *q = mkq(2, 1000, 0, 0);
    double w1 = oppweight_job_weight(1, 1.0), w3 = oppweight_job_weight(3, 1.0);
    for (uint64_t id = 1; id <= 36; id++) {
        queue_task_t t = {.id = id,
                          .cpu = 0.5,
                          .mem_mb = 10,
                          .est_s = 5,
                          .klass = QUEUE_OPPORTUNISTIC,
                          .weight = id <= 30 ? w1 : w3,
                          .job = id <= 30 ? 1 : 2};
        assert_int_equal(queue_push(q, &t), 0);
    }
    struct rng g;
    rng_seed(&g, 0x2545f4914f6cdd1dull);
    uint64_t running[4];
    size_t nrun = 0;
    int starts[3] = {0, 0, 0};
    for (int step = 0; starts[1] + starts[2] < 4000; step++) {
        queue_task_t t;
        while (nrun < 4) {
            assert_int_equal(queue_pick(q, step, rng_unif(&g), &t), 0);
            starts[t.job]++;
            running[nrun++] = t.id;
        }
        size_t k = (size_t)(rng_next(&g) % nrun);
        uint64_t id = running[k];
        running[k] = running[--nrun];
        assert_int_equal(queue_finish(q, id), 0);
        queue_task_t back = {.id = id,
                             .cpu = 0.5,
                             .mem_mb = 10,
                             .est_s = 5,
                             .klass = QUEUE_OPPORTUNISTIC,
                             .weight = id <= 30 ? w1 : w3,
                             .job = id <= 30 ? 1 : 2};
        assert_int_equal(queue_push(q, &back), 0);
    }
    double ratio = (double)starts[2] / (double)starts[1];
    print_message("starts: job 1 (1 token) %d, job 2 (3 tokens) %d: ratio %.3f\n", starts[1],
                  starts[2], ratio);
    assert_true(ratio >= 3 * 0.9 && ratio <= 3 * 1.1);
    queue_destroy(&q);
}

static void test_opportunistic_waits_for_regular_queue(void **state)
{
    (void)state;
    queue_t *q = mkq(2, 1000, 0, 0);
    assert_int_equal(push(q, 1, 2, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(push(q, 2, 2, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 3, 0.5, 100, 1, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(pick(q, 0, 0.5), 0);
    assert_int_equal(queue_finish(q, 1), 0);
    assert_int_equal(pick(q, 1, 0.5), 2);
    assert_int_equal(queue_finish(q, 2), 0);
    assert_int_equal(pick(q, 2, 0.5), 3);
    queue_destroy(&q);
}

static void test_upgrade_in_place(void **state)
{
    (void)state;
    queue_t *q = mkq(2, 1000, 0, 0);
    queue_class_t k;
    assert_int_equal(push(q, 1, 1, 100, 10, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 3, 1, 100, 10, QUEUE_OPPORTUNISTIC, 1), 0);
    /* queued: moves to the regular queue's tail */
    assert_int_equal(queue_upgrade(q, 3), 0);
    assert_int_equal(queue_state(q, 3, &k), QUEUE_QUEUED);
    assert_int_equal(k, QUEUE_REGULAR);
    assert_int_equal(queue_upgrade(q, 3), ERR_STATE);
    assert_int_equal(queue_upgrade(q, 99), ERR_NOTFOUND);
    assert_int_equal(pick(q, 0, 0), 2);
    assert_int_equal(pick(q, 0, 0), 3);
    assert_int_equal(queue_finish(q, 2), 0);
    assert_int_equal(pick(q, 1, 0), 1); /* regular queue empty now: the opportunistic one */
    /* running opportunistic task upgraded: no longer preemptible */
    assert_int_equal(queue_upgrade(q, 1), 0);
    assert_int_equal(queue_state(q, 1, &k), QUEUE_RUNNING);
    assert_int_equal(k, QUEUE_REGULAR);
    assert_int_equal(push(q, 4, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    uint64_t ids[4];
    assert_int_equal(queue_preempt(q, 2, ids, 4), 0);
    queue_destroy(&q);
}

/* A queued regular task downgraded moves to the opportunistic queue: it no longer starts
 * ahead of opportunistic work, nor while regular work waits, and the simulated regular work
 * (the wait-time matrix's input) no longer holds it. */
static void test_downgrade_queued(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 0, 0);
    queue_class_t k;
    assert_int_equal(push(q, 1, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    loadprof_t p;
    loadprof_init(&p, 1, 1000);
    double at;
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &at), 0);
    assert_true(fabs(at - 10) < 1e-9); /* behind task 1 */
    assert_int_equal(queue_downgrade(q, 1, 0), 0);
    assert_int_equal(queue_state(q, 1, &k), QUEUE_QUEUED);
    assert_int_equal(k, QUEUE_OPPORTUNISTIC);
    queue_stats_t st;
    queue_stats(q, &st);
    assert_int_equal(st.regular_queued, 1);
    assert_int_equal(st.opportunistic_queued, 1);
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &at), 0);
    assert_true(fabs(at) < 1e-9); /* now at the head */
    assert_int_equal(queue_expected_start(q, 0, 1, &p, &at), ERR_NOTFOUND);
    assert_int_equal(pick(q, 0, 0), 2); /* the regular task first */
    assert_int_equal(pick(q, 0, 0), 0);
    assert_int_equal(queue_finish(q, 2), 0);
    assert_int_equal(pick(q, 1, 0), 1); /* then the downgraded one, as opportunistic */
    assert_int_equal(queue_state(q, 1, &k), QUEUE_RUNNING);
    assert_int_equal(k, QUEUE_OPPORTUNISTIC);
    loadprof_close(&p);
    queue_destroy(&q);

    /* the opportunistic queue at its bound: refused, the task stays regular and queued */
    q = mkq(1, 1000, 0, 1);
    assert_int_equal(push(q, 1, 1, 100, 10, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(queue_downgrade(q, 2, 0), ERR_FULL);
    assert_int_equal(queue_state(q, 2, &k), QUEUE_QUEUED);
    assert_int_equal(k, QUEUE_REGULAR);
    queue_destroy(&q);
    /* a failed allocation (the opportunistic queue's first) leaves it as it was too */
    q = mkq(1, 1000, 0, 0);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    mem_fail_after(0);
    assert_int_equal(queue_downgrade(q, 2, 0), ERR_NOMEM);
    mem_fail_reset();
    assert_int_equal(queue_state(q, 2, &k), QUEUE_QUEUED);
    assert_int_equal(k, QUEUE_REGULAR);
    assert_int_equal(queue_downgrade(q, 2, 0), 0);
    queue_destroy(&q);
}

/* A running regular task downgraded keeps running, counts as opportunistic, and leaves the
 * simulated regular work: a queued regular task's expected start moves up to "now". */
static void test_downgrade_running(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 0, 0);
    queue_class_t k;
    assert_int_equal(push(q, 1, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    loadprof_t p;
    loadprof_init(&p, 1, 1000);
    double at;
    assert_int_equal(queue_expected_start(q, 1, 2, &p, &at), 0);
    assert_true(fabs(at - 10) < 1e-9);
    uint64_t ids[4];
    assert_int_equal(queue_preempt(q, 1, ids, 4), 0); /* regular: not preemptible */
    assert_int_equal(queue_downgrade(q, 1, 0), 0);
    assert_int_equal(queue_state(q, 1, &k), QUEUE_RUNNING);
    assert_int_equal(k, QUEUE_OPPORTUNISTIC);
    queue_stats_t st;
    queue_stats(q, &st);
    assert_int_equal(st.regular_running, 0);
    assert_int_equal(st.opportunistic_running, 1);
    assert_true(fabs(st.cpu_used - 1) < 1e-9); /* still holds its core */
    assert_int_equal(queue_expected_start(q, 1, 2, &p, &at), 0);
    assert_true(fabs(at - 1) < 1e-9);
    /* no grace: preemptible at once, and upgraded back it is regular again */
    assert_int_equal(queue_preempt(q, 1, ids, 4), 1);
    assert_int_equal(ids[0], 1);
    assert_int_equal(queue_upgrade(q, 1), 0);
    assert_int_equal(queue_state(q, 1, &k), QUEUE_RUNNING);
    assert_int_equal(k, QUEUE_REGULAR);
    assert_int_equal(queue_preempt(q, 1, ids, 4), 0);
    loadprof_close(&p);
    queue_destroy(&q);
}

/* A node of 2 cpus running two regular tasks of 1 cpu (1 started before 2, or at the same time
 * when second_at is 0), 100 s each, the first downgraded with grace_1 s of grace (an absolute
 * time) and the second with grace_2. */
static queue_t *two_downgraded(double second_at, double grace_1, double grace_2)
{
    queue_t *q = mkq(2, 1000, 0, 0);
    assert_int_equal(push(q, 1, 1, 100, 100, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 2, 1, 100, 100, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(pick(q, second_at, 0), 2);
    assert_int_equal(queue_next_grace(q, 0), 0); /* no grace before a downgrade */
    assert_int_equal(queue_downgrade(q, 1, grace_1), 0);
    assert_int_equal(queue_downgrade(q, 2, grace_2), 0);
    return q;
}

/* Within its grace a downgraded task is not named by queue_preempt, and the regular work
 * waiting for it sees it hold its room until the grace ends; after the grace it is. */
static void test_downgrade_grace(void **state)
{
    (void)state;
    /* 1 downgraded at t=10 with 20 s of grace, 2 with none */
    queue_t *q = two_downgraded(0, 30, 0);
    assert_true(fabs(queue_next_grace(q, 10) - 30) < 1e-9);
    assert_int_equal(push(q, 3, 2, 100, 10, QUEUE_REGULAR, 0), 0); /* needs both cores */
    loadprof_t p;
    loadprof_init(&p, 2, 1000);
    double at;
    assert_int_equal(queue_expected_start(q, 10, 3, &p, &at), 0);
    assert_true(fabs(at - 30) < 1e-9); /* when the grace ends */
    assert_int_equal(pick(q, 10, 0), 0);
    uint64_t ids[4];
    /* its reservation is not "now": nothing is killed for it, not even task 2 */
    assert_int_equal(queue_preempt(q, 10, ids, 4), 0);
    assert_int_equal(queue_preempt(q, 29.9, ids, 4), 0);
    assert_int_equal(queue_state(q, 1, NULL), QUEUE_RUNNING);
    assert_int_equal(queue_state(q, 2, NULL), QUEUE_RUNNING);
    /* an urgent regular task ends the grace at once (TASK_CREATE urgent): both can go now */
    {
        queue_t *u = two_downgraded(0, 30, 0);
        assert_int_equal(push(u, 3, 2, 100, 10, QUEUE_REGULAR, 0), 0);
        assert_int_equal(queue_preempt(u, 10, ids, 4), 0);
        assert_int_equal(queue_end_graces(u), 1);
        assert_int_equal(queue_next_grace(u, 10), 0);
        assert_int_equal(queue_preempt(u, 10, ids, 4), 2);
        assert_int_equal(queue_end_graces(u), 0);
        queue_destroy(&u);
    }
    /* after the grace both go, the latest started first */
    assert_int_equal(queue_next_grace(q, 30), 0);
    assert_int_equal(queue_expected_start(q, 30, 3, &p, &at), 0);
    assert_true(fabs(at - 30) < 1e-9);
    assert_int_equal(queue_preempt(q, 30, ids, 4), 2);
    assert_int_equal(queue_state(q, 1, NULL), QUEUE_PREEMPTING);
    assert_int_equal(queue_state(q, 2, NULL), QUEUE_PREEMPTING);
    loadprof_close(&p);
    queue_destroy(&q);

    /* a small regular task that fits beside the graced task takes the other, graceless one */
    q = two_downgraded(1, 0, 50); /* 2 the latest started */
    assert_int_equal(push(q, 3, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(queue_preempt(q, 10, ids, 4), 1);
    assert_int_equal(ids[0], 1); /* not 2, the latest started, which is in its grace */
    queue_destroy(&q);
}

/* Downgrading what is already opportunistic changes nothing; an unknown id is not found. */
static void test_downgrade_noop_and_notfound(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 0, 0);
    queue_class_t k;
    assert_int_equal(queue_downgrade(q, 1, 0), ERR_NOTFOUND);
    assert_int_equal(push(q, 1, 1, 100, 10, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(queue_downgrade(q, 1, 5), 0);
    assert_int_equal(queue_state(q, 1, &k), QUEUE_QUEUED);
    assert_int_equal(k, QUEUE_OPPORTUNISTIC);
    assert_int_equal(pick(q, 0, 0), 1); /* first among equals: its place kept */
    /* running opportunistic: no grace is granted by a downgrade, it stays preemptible */
    assert_int_equal(queue_downgrade(q, 1, 50), 0);
    assert_int_equal(queue_next_grace(q, 0), 0);
    assert_int_equal(push(q, 3, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    uint64_t ids[4];
    assert_int_equal(queue_preempt(q, 1, ids, 4), 1);
    assert_int_equal(ids[0], 1);
    assert_int_equal(queue_downgrade(q, 99, 0), ERR_NOTFOUND);
    assert_int_equal(queue_finish(q, 1), 0);
    assert_int_equal(queue_downgrade(q, 1, 0), ERR_NOTFOUND); /* gone */
    queue_destroy(&q);
}

static void test_preemption_choice(void **state)
{
    (void)state;
    queue_t *q = mkq(3, 1000, 0, 0);
    assert_int_equal(push(q, 1, 1, 100, 10, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(pick(q, 1, 0), 2);
    assert_int_equal(push(q, 3, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 2, 0), 3); /* a free core: no preemption needed */
    assert_int_equal(push(q, 4, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 2, 0), 0);
    uint64_t ids[4];
    assert_int_equal(queue_preempt(q, 2, ids, 4), 1);
    assert_int_equal(ids[0], 2); /* the latest started */
    assert_int_equal(queue_state(q, 2, NULL), QUEUE_PREEMPTING);
    assert_int_equal(queue_preempt(q, 2, ids, 4), 0); /* already on its way out */
    assert_int_equal(queue_finish(q, 2), 0);
    assert_int_equal(pick(q, 3, 0), 4);
    /* a regular task blocked by regular work only never preempts */
    assert_int_equal(push(q, 5, 3, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(queue_preempt(q, 3, ids, 4), 0);
    queue_destroy(&q);
}

static int push_full(queue_t *q, uint64_t id, double cpu, double est, queue_class_t k, uint64_t job,
                     double prio)
{
    queue_task_t t = {.id = id,
                      .cpu = cpu,
                      .mem_mb = 100,
                      .est_s = est,
                      .klass = k,
                      .weight = 1,
                      .job = job,
                      .prio = prio};
    return queue_push(q, &t);
}

static double expected(queue_t *q, double now, uint64_t id)
{
    loadprof_t p;
    loadprof_init(&p, queue_config(q)->cpus, queue_config(q)->mem_mb);
    double at = -1;
    assert_int_equal(queue_expected_start(q, now, id, &p, &at), 0);
    loadprof_close(&p);
    return at;
}

/* Issue 22: a critical task of job A (a chain link, bottom level 10 s) queued behind A's own
 * side tasks (bottom level 1 s) starts first, in the place of the first of them, while job B's
 * reservation stays where it was; without priorities the same queue runs in FIFO order. */
static void test_critical_overtakes_own_siblings(void **state)
{
    (void)state;
    for (int prios = 0; prios < 2; prios++) {
        queue_t *q = mkq(2, 1000, 0, 0);
        double side = prios ? 1 : 0, chain = prios ? 10 : 0;
        assert_int_equal(push_full(q, 1, 1, 4, QUEUE_REGULAR, 0xa, side), 0);
        assert_int_equal(push_full(q, 2, 1, 4, QUEUE_REGULAR, 0xa, side), 0);
        assert_int_equal(push_full(q, 3, 2, 4, QUEUE_REGULAR, 0xb, 0), 0); /* job B */
        assert_int_equal(push_full(q, 4, 1, 4, QUEUE_REGULAR, 0xa, side), 0);
        assert_int_equal(push_full(q, 5, 1, 1, QUEUE_REGULAR, 0xa, chain), 0); /* critical */
        assert_true(fabs(expected(q, 0, 3) - 4) < 1e-9);
        queue_task_t t;
        int moved = -1;
        assert_int_equal(queue_pick_ex(q, 0, 0, &t, &moved), 0);
        assert_int_equal(t.id, prios ? 5 : 1);
        assert_int_equal(moved, prios);
        assert_int_equal(queue_pick_ex(q, 0, 0, &t, &moved), 0);
        assert_int_equal(t.id, 2);
        assert_int_equal(moved, 0);
        assert_int_equal(pick(q, 0, 0), 0);              /* B needs the whole node */
        assert_true(fabs(expected(q, 0, 3) - 4) < 1e-9); /* B's reservation did not move */
        if (prios) { /* the side task traded places with the critical one: it waits behind B */
            assert_int_equal(queue_state(q, 1, NULL), QUEUE_QUEUED);
            assert_true(expected(q, 0, 1) >= 8 - 1e-9);
        }
        queue_destroy(&q);
    }
}

/* The trade is refused when it would move another job's reservation: A's long critical task
 * in the place of a short sibling would push B's start from 1 s to 10 s. */
static void test_reorder_keeps_other_jobs(void **state)
{
    (void)state;
    queue_t *q = mkq(2, 1000, 0, 0);
    assert_int_equal(push_full(q, 1, 1, 1, QUEUE_REGULAR, 0xa, 1), 0);
    assert_int_equal(push_full(q, 2, 2, 5, QUEUE_REGULAR, 0xb, 0), 0);
    assert_int_equal(push_full(q, 3, 1, 10, QUEUE_REGULAR, 0xa, 20), 0);
    assert_true(fabs(expected(q, 0, 2) - 1) < 1e-9);
    queue_task_t t;
    int moved = -1;
    assert_int_equal(queue_pick_ex(q, 0, 0, &t, &moved), 0);
    assert_int_equal(t.id, 1);
    assert_int_equal(moved, 0);
    assert_true(fabs(expected(q, 0, 2) - 1) < 1e-9);
    /* the same within one job (no other job behind): the critical task goes first */
    queue_t *u = mkq(2, 1000, 0, 0);
    assert_int_equal(push_full(u, 1, 2, 1, QUEUE_REGULAR, 0xa, 1), 0);
    assert_int_equal(push_full(u, 3, 1, 10, QUEUE_REGULAR, 0xa, 20), 0);
    assert_int_equal(queue_pick_ex(u, 0, 0, &t, &moved), 0);
    assert_int_equal(t.id, 3);
    assert_int_equal(moved, 1);
    queue_destroy(&u);
    queue_destroy(&q);
}

/* Among a job's opportunistic tasks the draw picks the job; its highest-priority task that fits
 * starts. */
static void test_opportunistic_priority_within_job(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 0, 0);
    assert_int_equal(push_full(q, 1, 1, 5, QUEUE_OPPORTUNISTIC, 0xa, 1), 0);
    assert_int_equal(push_full(q, 2, 1, 5, QUEUE_OPPORTUNISTIC, 0xa, 3), 0);
    assert_int_equal(push_full(q, 3, 1, 5, QUEUE_OPPORTUNISTIC, 0xa, 2), 0);
    assert_int_equal(pick(q, 0, 0.01), 2);
    queue_destroy(&q);
}

/* The swap's cases on a node of `cpus` (issue 22): the opportunistic tasks started in order, then
 * the regular tasks queued; what queue_swap names (how many, the first, the queued task that
 * waits as opportunistic instead) and what queue_preempt names after it. When `critical` is
 * set, that queued task stays regular and is the next to start once `first` finishes. */
struct swap_task {
    uint64_t id;
    double cpu, est;
    uint64_t job;
    double prio;
};
struct swap_case {
    const char *what;
    int cpus;
    struct swap_task run[2], queued[2];
    int nrun, nqueued;
    int swapped;       /* queue_swap's answer */
    uint64_t first;    /* ids[0] when swapped (0: not checked) */
    uint64_t down;     /* the task that waits as opportunistic (0: not checked) */
    int preempted;     /* queue_preempt's answer after the swap (-1: not asked) */
    uint64_t critical; /* see above (0: none) */
};

static void swap_cases(void)
{
    static const struct swap_case cases[] = {
        {.what = "a task of no particular job (0) keeps the old rule: it preempts",
         .cpus = 1,
         .nrun = 1,
         .run = {{1, 1, 10, 0, 0}},
         .nqueued = 1,
         .queued = {{2, 1, 10, 0, 0}},
         .swapped = 0,
         .preempted = 1},
        {.what = "a bigger regular task takes as many of its job's opportunistic tasks as cover it",
         .cpus = 2,
         .nrun = 2,
         .run = {{1, 1, 10, 0xa, 0}, {2, 1, 10, 0xa, 0}},
         .nqueued = 1,
         .queued = {{3, 2, 10, 0xa, 0}},
         .swapped = 2,
         .down = 3,
         .preempted = -1},
        {.what =
             "the job's lowest-priority queued task waits as opportunistic, not its critical one",
         .cpus = 1,
         .nrun = 1,
         .run = {{1, 1, 10, 0xa, 1}},
         .nqueued = 2,
         .queued = {{2, 1, 1, 0xa, 10}, {3, 1, 5, 0xa, 2}}, /* 2 critical, first */
         .swapped = 1,
         .first = 1,
         .down = 3,
         .preempted = -1,
         .critical = 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct swap_case *k = &cases[c];
        print_message("%s\n", k->what);
        queue_t *q = mkq(k->cpus, 1000, 0, 0);
        /* all opportunistic tasks queued first, then started (the latest last) */
        for (int i = 0; i < k->nrun; i++) {
            const struct swap_task *t = &k->run[i];
            assert_int_equal(
                push_full(q, t->id, t->cpu, t->est, QUEUE_OPPORTUNISTIC, t->job, t->prio), 0);
        }
        uint64_t started = 0;
        for (int i = 0; i < k->nrun; i++)
            started += pick(q, 0, 0);
        uint64_t want = 0;
        for (int i = 0; i < k->nrun; i++)
            want += k->run[i].id;
        assert_int_equal(started, want);
        for (int i = 0; i < k->nqueued; i++) {
            const struct swap_task *t = &k->queued[i];
            assert_int_equal(push_full(q, t->id, t->cpu, t->est, QUEUE_REGULAR, t->job, t->prio),
                             0);
        }
        uint64_t ids[4], down = 0;
        assert_int_equal(queue_swap(q, 1, ids, 4, &down), k->swapped);
        if (k->first != 0)
            assert_int_equal(ids[0], k->first);
        if (k->down != 0)
            assert_int_equal(down, k->down);
        if (k->preempted >= 0)
            assert_int_equal(queue_preempt(q, 1, ids, 4), k->preempted);
        if (k->critical != 0) {
            queue_class_t cls;
            assert_int_equal(queue_state(q, k->critical, &cls), QUEUE_QUEUED);
            assert_int_equal(cls, QUEUE_REGULAR);
            assert_int_equal(queue_finish(q, k->first), 0);
            assert_int_equal(pick(q, 2, 0), k->critical);
        }
        queue_destroy(&q);
    }
}

/* Issue 22, no self-preemption: job A's regular task waiting only for A's own running
 * opportunistic tasks makes the latest started of them regular and waits as opportunistic in
 * its place (nothing killed); job B's regular task still preempts A's opportunistic work. */
static void test_no_self_preemption(void **state)
{
    (void)state;
    queue_t *q = mkq(2, 1000, 0, 0);
    assert_int_equal(push_full(q, 1, 1, 10, QUEUE_OPPORTUNISTIC, 0xa, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(push_full(q, 2, 1, 10, QUEUE_OPPORTUNISTIC, 0xa, 0), 0);
    assert_int_equal(pick(q, 1, 0), 2);
    assert_int_equal(push_full(q, 3, 1, 10, QUEUE_REGULAR, 0xa, 0), 0);
    assert_int_equal(pick(q, 2, 0), 0);
    uint64_t ids[4], down = 0;
    assert_int_equal(queue_preempt(q, 2, ids, 4), 0); /* never its own job's */
    assert_int_equal(queue_swap(q, 2, ids, 4, &down), 1);
    assert_int_equal(ids[0], 2); /* the latest started */
    assert_int_equal(down, 3);
    queue_class_t k;
    assert_int_equal(queue_state(q, 2, &k), QUEUE_RUNNING);
    assert_int_equal(k, QUEUE_REGULAR);
    assert_int_equal(queue_state(q, 1, &k), QUEUE_RUNNING);
    assert_int_equal(k, QUEUE_OPPORTUNISTIC);
    assert_int_equal(queue_state(q, 3, &k), QUEUE_QUEUED);
    assert_int_equal(k, QUEUE_OPPORTUNISTIC);
    assert_int_equal(queue_swap(q, 2, ids, 4, &down), 0);
    assert_int_equal(queue_preempt(q, 2, ids, 4), 0);
    queue_stats_t st;
    queue_stats(q, &st);
    assert_int_equal(st.regular_running, 1);
    assert_int_equal(st.opportunistic_running, 1);
    /* another job's regular task preempts A's remaining opportunistic task */
    assert_int_equal(push_full(q, 4, 1, 10, QUEUE_REGULAR, 0xb, 0), 0);
    assert_int_equal(pick(q, 3, 0), 0);
    assert_int_equal(queue_swap(q, 3, ids, 4, &down), 0);
    assert_int_equal(queue_preempt(q, 3, ids, 4), 1);
    assert_int_equal(ids[0], 1);
    assert_int_equal(queue_finish(q, 1), 0);
    assert_int_equal(pick(q, 3, 0), 4);
    queue_destroy(&q);
    swap_cases(); /* the rule's other cases, one node each */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opportunistic_fair_across_jobs),
        cmocka_unit_test(test_opportunistic_shares_by_tokens),
        cmocka_unit_test(test_opportunistic_waits_for_regular_queue),
        cmocka_unit_test(test_upgrade_in_place),
        cmocka_unit_test(test_downgrade_queued),
        cmocka_unit_test(test_downgrade_running),
        cmocka_unit_test(test_downgrade_grace),
        cmocka_unit_test(test_downgrade_noop_and_notfound),
        cmocka_unit_test(test_preemption_choice),
        cmocka_unit_test(test_critical_overtakes_own_siblings),
        cmocka_unit_test(test_reorder_keeps_other_jobs),
        cmocka_unit_test(test_opportunistic_priority_within_job),
        cmocka_unit_test(test_no_self_preemption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
