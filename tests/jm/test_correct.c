/* test_correct.c - the deferred-correction rule (jm/correct.h, Apollo §3.4): when a queued task
 * is moved to another node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "jm/correct.h"

/* A 1 s task placed on a node that looked idle (W = 0), now told by its PN that 8 s of work are
 * ahead of it, with another node free. */
static struct correct_input stuck(void)
{
    struct correct_input in = {
        .waited_s = 1.5,
        .placed_wait_s = 0,
        .pn_wait_s = 8.0,
        .since_report_s = 1.5,
        .cur_wait_s = 8.0,
        .own_share_s = 0.5,
        .run_s = 1.0,
        .alt_c_s = 1.2,
        .moves = 0,
    };
    return in;
}

static void test_stuck_task_moves(void **state)
{
    (void)state;
    struct correct_input in = stuck();
    double left = 0;
    assert_int_equal(correct_check(NULL, &in, &left), CORRECT_MOVE);
    assert_true(left > 7.49 && left < 7.51); /* 8 - 1.5 still to wait, plus its 1 s */
}

static void test_too_soon(void **state)
{
    (void)state;
    struct correct_input in = stuck();
    in.waited_s = 0.2; /* under min(min_wait_s, a quarter of its 1 s run): not judged yet */
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_TOO_SOON);
    in.waited_s = 0.3; /* a quarter of its run: a 1 s task need not wait a second to move */
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_MOVE);
    in.run_s = 8;
    in.waited_s = 0.9; /* an 8 s task: min_wait_s (1 s) itself */
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_TOO_SOON);
    /* Placed knowing it would wait 6 s: 1.5 s waited and 6.5 s to go is not twice that. */
    in = stuck();
    in.placed_wait_s = 6.0;
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_TOO_SOON);
    /* A task moved max_moves times stays. */
    in = stuck();
    in.moves = 3;
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_TOO_SOON);
}

static void test_no_better_node(void **state)
{
    (void)state;
    struct correct_input in = stuck();
    in.alt_c_s = 6.5; /* saves 1 s of 7.5: under a quarter */
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_STAY);
    in.alt_c_s = 5.5; /* saves 2 s: over a quarter */
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_MOVE);
    in.alt_c_s = 1e300; /* no other node can hold it */
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_STAY);
}

static void test_about_to_start_stays(void **state)
{
    (void)state;
    /* The PN's expected wait has run out: the task starts any moment, moving it saves nothing. */
    struct correct_input in = stuck();
    in.since_report_s = 9.0;
    in.waited_s = 9.0;
    double left = 0;
    assert_int_equal(correct_check(NULL, &in, &left), CORRECT_STAY);
    assert_true(left > 0.99 && left < 1.01);
}

static void test_matrix_when_no_report(void **state)
{
    (void)state;
    /* Without the PN's word, the node's matrix wait less the task's own share stands in. */
    struct correct_input in = stuck();
    in.pn_wait_s = -1;
    in.cur_wait_s = 4.5;
    in.own_share_s = 0.5;
    double left = 0;
    assert_int_equal(correct_check(NULL, &in, &left), CORRECT_MOVE);
    assert_true(left > 4.99 && left < 5.01);
    in.cur_wait_s = 0.5; /* only itself is ahead in the matrix */
    assert_int_equal(correct_check(NULL, &in, &left), CORRECT_STAY);
}

static void test_margin_and_config(void **state)
{
    (void)state;
    struct correct_config cfg;
    correct_config_default(&cfg);
    /* Left 10.2 s of a 10 s task, with a gain of 0.01: the margin (0.5 s) decides. */
    cfg.gain = 0.01;
    struct correct_input in = stuck();
    in.pn_wait_s = 2.2;
    in.since_report_s = 2.0;
    in.waited_s = 2.0;
    in.run_s = 10.0;
    in.alt_c_s = 9.8;
    assert_int_equal(correct_check(&cfg, &in, NULL), CORRECT_STAY);
    cfg.margin_s = 0.2;
    assert_int_equal(correct_check(&cfg, &in, NULL), CORRECT_MOVE);
    /* A 1 s task: the margin is at most a quarter of its run (0.25 s), not 0.5 s */
    correct_config_default(&cfg);
    cfg.gain = 0.01;
    in.run_s = 1.0;
    in.alt_c_s = 0.98; /* left 1.2 s: saves 0.22 s */
    assert_int_equal(correct_check(&cfg, &in, NULL), CORRECT_STAY);
    in.alt_c_s = 0.9; /* saves 0.3 s */
    assert_int_equal(correct_check(&cfg, &in, NULL), CORRECT_MOVE);
    /* Nonsense inputs are clamped, never a move on their account. */
    in = stuck();
    in.waited_s = -3;
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_TOO_SOON);
    in = stuck();
    in.alt_c_s = -1;
    assert_int_equal(correct_check(NULL, &in, NULL), CORRECT_STAY);
}

/* A duplicate with no class to go in (the job's tokens all held by its queued tasks, no
 * opportunistic allowance) is a move: the task takes its own token to the node that would finish
 * it sooner instead of waiting where it is, re-judged each tick and never acted on (cycles in the
 * simulator). Within the move cap, and a task with room is still duplicated. */
static void test_no_room_moves_instead(void **state)
{
    (void)state;
    struct correct_dup_input in = {.q = stuck(), .stage_avg_wait_s = -1};
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, NULL, NULL),
                     CORRECT_ACT_DUPLICATE);
    in.no_room = 1;
    unsigned conds = 0;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &conds, NULL),
                     CORRECT_ACT_MOVE);
    assert_true(conds & CORRECT_COND_WAIT_GREW);
    in.dups = 1; /* the duplicate cap does not apply to a move */
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, NULL, NULL),
                     CORRECT_ACT_MOVE);
    in.q.moves = 3;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, NULL, NULL), CORRECT_NONE);
    in.q.moves = 0;
    in.q.alt_c_s = 7.0; /* no node clearly better: it stays */
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, NULL, NULL), CORRECT_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_task_moves),      cmocka_unit_test(test_too_soon),
        cmocka_unit_test(test_no_better_node),        cmocka_unit_test(test_about_to_start_stays),
        cmocka_unit_test(test_matrix_when_no_report), cmocka_unit_test(test_margin_and_config),
        cmocka_unit_test(test_no_room_moves_instead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
