/* test_intern.c - common/intern.h: one id per distinct string, "" is 0, strings kept across the
 * table's growth, and a failed allocation leaves the table as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/intern.h"
#include "common/mem.h"

static void test_ids(void **state)
{
    (void)state;
    struct intern in;
    intern_init(&in);
    uint32_t a, b, c, e, n;
    assert_int_equal(intern_add(&in, "pn-1", &a), 0);
    assert_int_equal(intern_add(&in, "pn-2", &b), 0);
    assert_int_equal(intern_add(&in, "pn-1", &c), 0);
    assert_int_equal(intern_add(&in, "", &e), 0);
    assert_int_equal(intern_add(&in, NULL, &n), 0);
    assert_true(a != 0 && b != 0 && a != b);
    assert_true(c == a);
    assert_true(e == 0 && n == 0);
    assert_string_equal(intern_str(&in, a), "pn-1");
    assert_string_equal(intern_str(&in, b), "pn-2");
    assert_string_equal(intern_str(&in, 0), "");
    assert_string_equal(intern_str(&in, 9999), ""); /* never given */
    assert_int_equal(in.len, 3);
    intern_close(&in);
}

static void test_growth(void **state)
{
    (void)state;
    struct intern in;
    intern_init(&in);
    uint32_t ids[2000];
    char s[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(s, sizeof s, "reason %d", i % 1000); /* each string twice */
        assert_int_equal(intern_add(&in, s, &ids[i]), 0);
    }
    assert_int_equal(in.len, 1001);
    for (int i = 0; i < 2000; i++) {
        snprintf(s, sizeof s, "reason %d", i % 1000);
        assert_string_equal(intern_str(&in, ids[i]), s);
        assert_true(ids[i] == ids[i % 1000]);
    }
    intern_close(&in);
}

static void test_nomem(void **state)
{
    (void)state;
    struct intern in;
    intern_init(&in);
    uint32_t a, b;
    assert_int_equal(intern_add(&in, "kept", &a), 0);
    int failed = 0;
    for (long k = 0; k < 8; k++) { /* fail each allocation of an add in turn */
        mem_fail_after(k);
        int rc = intern_add(&in, "new", &b);
        mem_fail_reset();
        if (rc == 0)
            break;
        failed = 1;
        assert_int_equal(rc, ERR_NOMEM);
        assert_true(b == 0);
        assert_int_equal(in.len, 2); /* unchanged: "" and "kept" */
        assert_string_equal(intern_str(&in, a), "kept");
    }
    assert_true(failed);
    assert_int_equal(intern_add(&in, "new", &b), 0);
    assert_string_equal(intern_str(&in, b), "new");
    assert_int_equal(in.len, 3);
    intern_close(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_nomem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
