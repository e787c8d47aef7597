/* test_bindlog.c - the lines of an open job's SPOOL/binds (jm/bindlog.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jm/bindlog.h"

struct seen {
    char ids[8][BINDLOG_LINE_MAX + 1];
    size_t n;
};

static void collect(void *ctx, const char *id)
{
    struct seen *s = ctx;
    if (s->n < 8)
        snprintf(s->ids[s->n], sizeof s->ids[0], "%s", id);
    s->n++;
}

static void test_pieces(void **state)
{
    (void)state;
    struct bindlog b;
    struct seen s = {0};
    bindlog_init(&b);
    /* a line split over three pieces waits for its newline; an empty line is passed over */
    assert_int_equal(bindlog_feed(&b, "count.", 6, collect, &s), 0);
    assert_int_equal(bindlog_feed(&b, "3\n\nsplit", 8, collect, &s), 1);
    assert_int_equal(bindlog_feed(&b, NULL, 0, collect, &s), 0);
    assert_int_equal(bindlog_feed(&b, ".1\n", 3, collect, &s), 1);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.ids[0], "count.3");
    assert_string_equal(s.ids[1], "split.1");
    assert_int_equal(b.lines, 2);
    assert_int_equal(b.bad, 0);
}

static void test_bad_lines(void **state)
{
    (void)state;
    struct bindlog b;
    struct seen s = {0};
    bindlog_init(&b);
    char longline[BINDLOG_LINE_MAX + 3];
    memset(longline, 'x', sizeof longline);
    longline[sizeof longline - 1] = '\n';
    assert_int_equal(bindlog_feed(&b, longline, sizeof longline, collect, &s), 0);
    /* exactly the bound is an id */
    longline[BINDLOG_LINE_MAX] = '\n';
    assert_int_equal(bindlog_feed(&b, longline, BINDLOG_LINE_MAX + 1, collect, &s), 1);
    assert_int_equal(strlen(s.ids[0]), BINDLOG_LINE_MAX);
    assert_int_equal(bindlog_feed(&b, "a\0b\nok\n", 7, collect, &s), 1);
    assert_string_equal(s.ids[1], "ok");
    assert_int_equal(b.bad, 2);
    assert_int_equal(b.lines, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_bad_lines),
    };
    return cmocka_run_group_tests_name("bindlog", tests, NULL, NULL);
}
