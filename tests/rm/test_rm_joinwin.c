/* test_rm_joinwin.c - the join window of the RM's view (rm/joinwin.h): the base window by the
 * view's size; joiners far apart, or a cheap snapshot, served at once with the window at its
 * base however many came before (one-task jobs half a second apart once drove it to the storm
 * limit, each JM waiting 200-240 ms); joiners close to an expensive snapshot share the next one
 * at the window's end, the window doubling up to the storm limit and back after a quiet second. */
#include "rm/joinwin.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define STORM 800

static void base_by_size(void **state)
{
    (void)state;
    struct joinwin w;
    joinwin_init(&w, STORM);
    assert_int_equal(joinwin_window_ms(&w, 1), 5);
    assert_int_equal(joinwin_window_ms(&w, 1024), 15);   /* three parts of 512 begun */
    assert_int_equal(joinwin_window_ms(&w, 20000), 100); /* 40 parts: at the limit */
    assert_int_equal(joinwin_join(&w, 1000, 20000), 0);  /* nothing published yet: at once */
}

/* One-task jobs on a small cluster, a JM every 580 ms (bench_e2e --first-task): each served at
 * once, and the window never leaves its base. */
static void far_apart_at_once(void **state)
{
    (void)state;
    struct joinwin w;
    joinwin_init(&w, STORM);
    int64_t t = 10000;
    for (int i = 0; i < 40; i++, t += 580) {
        assert_int_equal(joinwin_join(&w, t, 1), 0);
        joinwin_published(&w, t, 1, 30); /* 30 us to encode one node */
        assert_int_equal(joinwin_window_ms(&w, 1), 5);
        assert_false(w.wanted);
    }
    /* Even a 20,000-node view is not shared with a joiner 580 ms after it, if it cost 40 ms
       (under a tenth of the time since). */
    joinwin_published(&w, t, 20000, 40000);
    assert_int_equal(joinwin_join(&w, t + 580, 20000), 0);
    assert_int_equal(joinwin_window_ms(&w, 20000), 100);
}

/* A crowd on an expensive view: the first joiner within the window waits for its end, the
 * others with it; the snapshot they shared doubles the window; so does one asked for after the
 * window while the last still costs over a tenth of the time since; a quiet second resets it. */
static void crowd_shares(void **state)
{
    (void)state;
    struct joinwin w;
    joinwin_init(&w, STORM);
    const size_t n = 20000;
    assert_int_equal(joinwin_join(&w, 0, n), 0);
    joinwin_published(&w, 0, n, 40000);            /* 40 ms to encode */
    assert_int_equal(joinwin_join(&w, 10, n), 90); /* the window's end */
    assert_int_equal(joinwin_join(&w, 20, n), -1); /* already waiting */
    assert_false(joinwin_due(&w, 99, n));
    assert_true(joinwin_due(&w, 100, n));
    joinwin_published(&w, 100, n, 40000);
    assert_false(joinwin_due(&w, 150, n)); /* nobody waits */
    assert_int_equal(joinwin_window_ms(&w, n), 200);
    /* after the (now 200 ms) window, 250 ms on: 40 ms is over a tenth of that, so at once but
       widening */
    assert_int_equal(joinwin_join(&w, 350, n), 0);
    assert_true(w.wanted);
    joinwin_published(&w, 350, n, 40000);
    assert_int_equal(joinwin_window_ms(&w, n), 400);
    for (int64_t t = 360; t < 5000; t += 10) { /* joiners every 10 ms: at most the storm limit */
        int64_t r = joinwin_join(&w, t, n);
        if (r == 0 || joinwin_due(&w, t, n))
            joinwin_published(&w, t, n, 40000);
    }
    if (w.wanted) /* the last waiters' timer */
        joinwin_published(&w, w.last_ms + STORM, n, 40000);
    assert_int_equal(joinwin_window_ms(&w, n), STORM);
    int64_t last = w.last_ms;
    assert_int_equal(joinwin_join(&w, last + 1500, n), 0); /* a quiet second and a half */
    assert_false(w.wanted);
    assert_int_equal(joinwin_window_ms(&w, n), 100);
}

/* Within the window, a cheap snapshot is published at once; an expensive one is waited for. */
static void cheap_within_window(void **state)
{
    (void)state;
    struct joinwin w;
    joinwin_init(&w, STORM);
    joinwin_published(&w, 0, 1024, 300);            /* 0.3 ms for 1,024 nodes: window 15 ms */
    assert_int_equal(joinwin_join(&w, 5, 1024), 0); /* 0.3 ms is under a tenth of 5 ms */
    assert_false(w.wanted);
    joinwin_published(&w, 5, 1024, 3000);             /* 3 ms this time */
    assert_int_equal(joinwin_join(&w, 10, 1024), 10); /* over a tenth of 5 ms: the window's end */
    assert_true(w.wanted);
    assert_true(joinwin_due(&w, 20, 1024));
    joinwin_published(&w, 20, 1024, 3000);
    assert_int_equal(joinwin_window_ms(&w, 1024), 30); /* one waited: doubled */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(base_by_size),
        cmocka_unit_test(far_apart_at_once),
        cmocka_unit_test(crowd_shares),
        cmocka_unit_test(cheap_within_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
