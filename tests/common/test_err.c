#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

static void test_names_and_texts(void **state)
{
    (void)state;
    assert_string_equal(err_name(ERR_NOMEM), "ERR_NOMEM");
    assert_string_equal(err_text(ERR_FULL), "queue full");
    assert_string_equal(err_name(12345), "ERR_?");
}

static void test_fmt_returns_code_and_truncates(void **state)
{
    (void)state;
    char buf[8];
    assert_int_equal(err_fmt(buf, sizeof buf, ERR_PARSE, "task %s bad", "abcdef"), ERR_PARSE);
    assert_int_equal(strlen(buf), 7);
    assert_memory_equal(buf, "task ab", 7);
}

static void test_mem_fail_injection(void **state)
{
    (void)state;
    mem_fail_after(2);
    void *a = mem_alloc(8);
    void *b = mem_alloc(8);
    void *c = mem_alloc(8);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    assert_int_equal(mem_fail_count(), 1);
    mem_fail_reset();
    c = mem_alloc(8);
    assert_non_null(c);
    mem_free(a);
    mem_free(b);
    mem_free(c);
    assert_null(mem_calloc(SIZE_MAX / 2, 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_texts),
        cmocka_unit_test(test_fmt_returns_code_and_truncates),
        cmocka_unit_test(test_mem_fail_injection),
    };
    return cmocka_run_group_tests_name("err", tests, NULL, NULL);
}
