/* test_correct_dup.c - Apollo's three re-evaluation conditions for a queued task, move or
 * duplicate (jm/correct.h, §3.4), and the upgrade with re-match (§3.5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/correct.h"

/* A 2 s task placed on a 4 s wait; it has waited 1.5 s; its PN says 3 s more (on the scale of
 * what it was placed on: nothing wrong); its stage's tasks waited 10 s on average; another node
 * would finish it in 1 s. */
static struct correct_dup_input quiet(void)
{
    struct correct_dup_input in = {
        .q =
            {
                .waited_s = 1.5,
                .placed_wait_s = 4,
                .pn_wait_s = 3,
                .since_report_s = 0,
                .cur_wait_s = 3,
                .own_share_s = 0,
                .run_s = 2,
                .alt_c_s = 1,
                .moves = 0,
            },
        .stage_avg_wait_s = 10,
        .dups = 0,
    };
    return in;
}

static void test_no_condition_no_action(void **state)
{
    (void)state;
    struct correct_dup_input in = quiet();
    unsigned c = 99;
    double left = 0;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, &left), CORRECT_NONE);
    assert_int_equal(c, 0);
    assert_true(left > 4.99 && left < 5.01);
}

static void test_condition_i_wait_grew(void **state)
{
    (void)state;
    struct correct_dup_input in = quiet();
    in.q.pn_wait_s = 7; /* 1.5 + 7 >= 2 x 4: the wait was underestimated */
    unsigned c = 0;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, NULL),
                     CORRECT_ACT_DUPLICATE);
    assert_int_equal(c, CORRECT_COND_WAIT_GREW);
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_MOVE, &in, &c, NULL), CORRECT_ACT_MOVE);
}

static void test_condition_ii_above_stage(void **state)
{
    (void)state;
    struct correct_dup_input in = quiet();
    in.stage_avg_wait_s = 4; /* expected 1.5 + 3 = 4.5 > 4, waited 1.5 < 4 */
    unsigned c = 0;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, NULL),
                     CORRECT_ACT_DUPLICATE);
    assert_int_equal(c, CORRECT_COND_ABOVE_STAGE);
}

static void test_condition_iii_waited_long(void **state)
{
    (void)state;
    struct correct_dup_input in = quiet();
    in.q.waited_s = 5;
    in.q.placed_wait_s = 6; /* 5 + 3 < 12: (i) does not hold */
    in.stage_avg_wait_s = 4.5;
    unsigned c = 0;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, NULL),
                     CORRECT_ACT_DUPLICATE);
    assert_int_equal(c, CORRECT_COND_ABOVE_STAGE | CORRECT_COND_WAITED_LONG);
    /* Without a stage average (ii) and (iii) cannot hold. */
    in.stage_avg_wait_s = -1;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, NULL), CORRECT_NONE);
    assert_int_equal(c, 0);
}

static void test_reevaluation_must_gain(void **state)
{
    (void)state;
    struct correct_dup_input in = quiet();
    in.q.pn_wait_s = 7; /* (i): 9 s left here */
    in.q.alt_c_s = 7;   /* saves 2 s < 0.25 x 9 */
    unsigned c = 0;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, NULL), CORRECT_NONE);
    assert_int_equal(c, CORRECT_COND_WAIT_GREW); /* it held; the re-evaluation said no */
    in.q.alt_c_s = 6.75;                         /* exactly 0.25 x 9 */
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, NULL),
                     CORRECT_ACT_DUPLICATE);
    in.q.alt_c_s = 1e300; /* no other node */
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, &c, NULL), CORRECT_NONE);
}

static void test_too_soon(void **state)
{
    (void)state;
    struct correct_dup_input in = quiet();
    in.q.waited_s = 0.4; /* under min(min_wait_s, a quarter of its 2 s run): (i) and (iii)
                            wait */
    in.q.pn_wait_s = 100;
    in.stage_avg_wait_s = 0.1;
    unsigned c = 0;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_MOVE, &in, &c, NULL), CORRECT_ACT_MOVE);
    assert_int_equal(c, CORRECT_COND_ABOVE_STAGE); /* (ii) looks at the expectation only */
}

static void test_caps_per_mode(void **state)
{
    (void)state;
    struct correct_dup_input in = quiet();
    in.q.pn_wait_s = 7;
    in.dups = 1; /* one duplicate per task */
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, NULL, NULL), CORRECT_NONE);
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_MOVE, &in, NULL, NULL), CORRECT_ACT_MOVE);
    in.q.moves = 3;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_MOVE, &in, NULL, NULL), CORRECT_NONE);
    struct correct_config cfg;
    correct_config_default(&cfg);
    cfg.max_dups = 2;
    assert_int_equal(correct_decide(&cfg, CORRECT_MODE_DUPLICATE, &in, NULL, NULL),
                     CORRECT_ACT_DUPLICATE);
    cfg.stage_factor = 3; /* (ii)/(iii) against 3 x the average */
    in = quiet();
    in.stage_avg_wait_s = 2; /* 4.5 < 6 */
    unsigned c = 9;
    assert_int_equal(correct_decide(&cfg, CORRECT_MODE_DUPLICATE, &in, &c, NULL), CORRECT_NONE);
    assert_int_equal(c, 0);
}

static void test_no_copies_moves_instead(void **state)
{
    (void)state;
    /* "speculate": false: two queued attempts could both start before the JM hears of either,
       so the duplicate becomes a move. */
    struct correct_dup_input in = quiet();
    in.q.pn_wait_s = 7;
    in.no_copies = 1;
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, NULL, NULL),
                     CORRECT_ACT_MOVE);
    in.q.moves = 3; /* ... within the move cap */
    assert_int_equal(correct_decide(NULL, CORRECT_MODE_DUPLICATE, &in, NULL, NULL), CORRECT_NONE);
}

static void test_check_unchanged(void **state)
{
    (void)state;
    /* The move rule of old keeps its answers (the daemon still calls it). */
    struct correct_dup_input in = quiet();
    in.q.pn_wait_s = 7;
    assert_int_equal(correct_check(NULL, &in.q, NULL), CORRECT_MOVE);
    in.q.pn_wait_s = 3;
    assert_int_equal(correct_check(NULL, &in.q, NULL), CORRECT_TOO_SOON);
}

/* --- Upgrade with re-match. --- */

static void test_upgrade_in_place(void **state)
{
    (void)state;
    /* One queued behind a short regular queue, nothing better elsewhere. */
    struct correct_upgrade_cand c[] = {{.prio = 5, .here_s = 4, .alt_s = 3.5, .running = 0}};
    struct correct_upgrade u;
    assert_int_equal(correct_upgrade_pick(NULL, c, 1, 0, &u), 0);
    assert_int_equal(u.idx, 0);
    assert_int_equal(u.replace, 0); /* 0.5 s < max(0.5 s, 1 s): in place */
    assert_true(u.best_s == 4);
}

static void test_upgrade_rematch_behind_a_busy_node(void **state)
{
    (void)state;
    /* The best task to upgrade waits behind 60 s of regular work; another node runs it in 5 s. */
    struct correct_upgrade_cand c[] = {
        {.prio = 10, .here_s = 62, .alt_s = 5, .running = 0},
        {.prio = 3, .here_s = 2, .alt_s = 9, .running = 0},
    };
    struct correct_upgrade u;
    assert_int_equal(correct_upgrade_pick(NULL, c, 2, 0, &u), 0);
    assert_int_equal(u.idx, 0); /* priority first */
    assert_int_equal(u.replace, 1);
    assert_true(u.best_s == 5 && u.saved_s == 57);
}

static void test_upgrade_favours_the_lighter_node(void **state)
{
    (void)state;
    /* Equal priorities: the token goes where it does most (a short regular queue) and the task
       behind a busy node waits for it to drain; a running task is upgraded in place only. */
    struct correct_upgrade_cand c[] = {
        {.prio = 7, .here_s = 40, .alt_s = 1e300, .running = 0},
        {.prio = 7.05, .here_s = 3, .alt_s = 1e300, .running = 0},
        {.prio = 7, .here_s = 30, .alt_s = 1, .running = 1},
    };
    struct correct_upgrade u;
    assert_int_equal(correct_upgrade_pick(NULL, c, 3, 0.1, &u), 0);
    assert_int_equal(u.idx, 1);
    assert_int_equal(u.replace, 0);
    /* With no priority band the highest wins whatever its cost. */
    c[0].prio = 8;
    assert_int_equal(correct_upgrade_pick(NULL, c, 3, 0.1, &u), 0);
    assert_int_equal(u.idx, 0);
    /* The running one is never re-placed even when another node would be quicker. */
    c[2].prio = 9;
    assert_int_equal(correct_upgrade_pick(NULL, c, 3, 0, &u), 0);
    assert_int_equal(u.idx, 2);
    assert_int_equal(u.replace, 0);
    assert_int_equal(correct_upgrade_pick(NULL, c, 0, 0, &u), ERR_NOTFOUND);
    assert_int_equal(u.idx, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_condition_no_action),
        cmocka_unit_test(test_condition_i_wait_grew),
        cmocka_unit_test(test_condition_ii_above_stage),
        cmocka_unit_test(test_condition_iii_waited_long),
        cmocka_unit_test(test_reevaluation_must_gain),
        cmocka_unit_test(test_too_soon),
        cmocka_unit_test(test_caps_per_mode),
        cmocka_unit_test(test_no_copies_moves_instead),
        cmocka_unit_test(test_check_unchanged),
        cmocka_unit_test(test_upgrade_in_place),
        cmocka_unit_test(test_upgrade_rematch_behind_a_busy_node),
        cmocka_unit_test(test_upgrade_favours_the_lighter_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
