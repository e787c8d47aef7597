/* Unit tests of jm/grain.h: a task's cost in hundredths of a token, and the dispatcher packing
 * small tasks several to a token within the grant (issue 25, "spare capacity filled"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "jm/dispatch.h"
#include "jm/grain.h"

static void test_task_units(void **state)
{
    (void)state;
    assert_int_equal(grain_task_units(0.25, 16, 1.0, 4096), 25);
    assert_int_equal(grain_task_units(1.0, 4096, 1.0, 4096), 100);
    assert_int_equal(grain_task_units(1.0, 4097, 1.0, 4096), 101); /* memory dominates */
    assert_int_equal(grain_task_units(0.5, 3072, 1.0, 4096), 75);
    assert_int_equal(grain_task_units(0.001, 1, 1.0, 4096), 1); /* at least one unit */
    assert_int_equal(grain_task_units(0.3, 16, 0, 0), 30);      /* default token size */
    assert_int_equal(grain_task_units(4.0, 1024, 2.0, 8192), 200);
    assert_int_equal(grain_task_units(1.0 / 3.0, 16, 1.0, 4096), 34); /* rounded up */
    assert_int_equal(grain_units(8), 800);
    assert_int_equal(grain_units(UINT32_MAX), UINT32_MAX);
    assert_int_equal(grain_tokens(0), 0);
    assert_int_equal(grain_tokens(1), 1);
    assert_int_equal(grain_tokens(100), 1);
    assert_int_equal(grain_tokens(101), 2);
}

/* One token, granted in units: four 0.25-cpu tasks go regular on it (not one), the allowance of
 * one more token takes four more opportunistically, and the ninth waits. */
static void test_small_tasks_share_a_token(void **state)
{
    (void)state;
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(NULL, 9, &d), 0);
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(dispatch_set_cost(d, i, grain_task_units(0.25, 16, 1.0, 4096)), 0);
    dispatch_set_tokens(d, grain_units(1));
    dispatch_set_factor(d, 1.0);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(dispatch_place(d, i), DISPATCH_REGULAR);
    for (size_t i = 4; i < 8; i++)
        assert_int_equal(dispatch_place(d, i), DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_place(d, 8), DISPATCH_NONE);
    assert_int_equal(dispatch_regular_units(d), 100);
    dispatch_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_units),
        cmocka_unit_test(test_small_tasks_share_a_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
