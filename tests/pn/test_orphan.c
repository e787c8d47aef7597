/* Tests of the process node's pure fencing and reaping rules (pn/fence.h, pn/orphan.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "pn/fence.h"
#include "pn/orphan.h"

/* ---- epochs ---- */

static void test_fence_older_refused(void **state)
{
    (void)state;
    uint32_t seen = 3;
    assert_int_equal(fence_check(3, 2), ERR_FENCED);
    assert_int_equal(fence_admit(&seen, 2), ERR_FENCED);
    assert_int_equal(fence_admit(&seen, 1), ERR_FENCED);
    assert_int_equal(seen, 3); /* a refusal changes nothing */
}

static void test_fence_equal_admitted(void **state)
{
    (void)state;
    uint32_t seen = 3;
    assert_int_equal(fence_check(3, 3), 0);
    assert_int_equal(fence_admit(&seen, 3), 0);
    assert_int_equal(seen, 3);
}

static void test_fence_higher_raises(void **state)
{
    (void)state;
    uint32_t seen = 0;
    assert_int_equal(fence_admit(&seen, 1), 1);
    assert_int_equal(seen, 1);
    assert_int_equal(fence_admit(&seen, 4), 1);
    assert_int_equal(seen, 4);
    assert_int_equal(fence_admit(&seen, 3), ERR_FENCED);
    assert_int_equal(fence_admit(&seen, UINT32_MAX), 1);
    assert_int_equal(seen, UINT32_MAX);
}

static void test_fence_zero_unfenced(void **state)
{
    (void)state;
    uint32_t seen = 0;
    assert_int_equal(fence_admit(&seen, 0), 0); /* an old JM on a fresh job */
    assert_int_equal(seen, 0);
    seen = 7;
    assert_int_equal(fence_check(7, 0), 0);
    assert_int_equal(fence_admit(&seen, 0), 0); /* never refused ... */
    assert_int_equal(seen, 7);                  /* ... and never lowers or raises */
}

/* ---- grace ---- */

#define ENDED  5000u
#define ORPHAN 60000u

typedef struct fixture {
    orphan_t *o;
    char ids[16][64];
    orphan_verdict_t v[16];
    size_t n;
} fixture_t;

static int setup(void **state)
{
    static fixture_t f;
    memset(&f, 0, sizeof f);
    orphan_config_t cfg = {.ended_grace_ms = ENDED, .orphan_grace_ms = ORPHAN};
    f.o = orphan_new(&cfg);
    *state = &f;
    return f.o ? 0 : -1;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    orphan_destroy(&f->o);
    return f->o == NULL ? 0 : -1;
}

static void on_reap(void *arg, const orphan_verdict_t *v)
{
    fixture_t *f = arg;
    assert_true(f->n < 16);
    snprintf(f->ids[f->n], sizeof f->ids[f->n], "%s", v->job_id);
    f->v[f->n] = *v;
    f->v[f->n].job_id = f->ids[f->n];
    f->n++;
}

static size_t due(fixture_t *f, uint64_t now)
{
    f->n = 0;
    return orphan_due(f->o, now, on_reap, f);
}

static void test_grace_each_ended_state(void **state)
{
    fixture_t *f = *state;
    const uint32_t states[] = {ORPHAN_DONE, ORPHAN_FAILED, ORPHAN_CANCELLED};
    for (size_t i = 0; i < 3; i++) {
        uint64_t t0 = 1000 + i * 100000;
        assert_int_equal(orphan_note(f->o, "j", states[i], t0), 0);
        assert_int_equal(due(f, t0), 0);
        assert_int_equal(due(f, t0 + ENDED - 1), 0);
        assert_int_equal(orphan_note(f->o, "j", states[i], t0 + ENDED - 1), 0); /* no restart */
        assert_int_equal(due(f, t0 + ENDED), 1);                                /* inclusive */
        assert_string_equal(f->v[0].job_id, "j");
        assert_int_equal(f->v[0].state, states[i]);
        assert_int_equal(f->v[0].ended, 1);
        assert_int_equal(f->v[0].waited_ms, ENDED);
        assert_int_equal(orphan_len(f->o), 0); /* forgotten once due */
        assert_int_equal(due(f, t0 + 10 * ORPHAN), 0);
    }
}

static void test_grace_expired_and_unknown(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(orphan_note(f->o, "exp", ORPHAN_EXPIRED, 0), 0);
    assert_int_equal(orphan_note(f->o, "unk", ORPHAN_UNKNOWN, 10), 0);
    assert_int_equal(due(f, ENDED), 0); /* the short grace is for ended jobs only */
    assert_int_equal(due(f, ORPHAN - 1), 0);
    assert_int_equal(due(f, ORPHAN), 1);
    assert_string_equal(f->v[0].job_id, "exp");
    assert_int_equal(f->v[0].state, ORPHAN_EXPIRED);
    assert_int_equal(f->v[0].ended, 0);
    assert_int_equal(f->v[0].waited_ms, ORPHAN);
    assert_int_equal(due(f, ORPHAN + 9), 0);
    assert_int_equal(due(f, ORPHAN + 10), 1);
    assert_string_equal(f->v[0].job_id, "unk");
    assert_int_equal(f->v[0].state, ORPHAN_UNKNOWN);
    assert_int_equal(orphan_len(f->o), 0);
}

static void test_grace_active_resets(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(orphan_note(f->o, "j", ORPHAN_EXPIRED, 0), 0);
    assert_int_equal(orphan_note(f->o, "j", ORPHAN_ACTIVE, ORPHAN - 1), 0); /* resumed in time */
    assert_int_equal(orphan_len(f->o), 0);
    assert_int_equal(due(f, ORPHAN), 0);
    assert_int_equal(orphan_note(f->o, "j", ORPHAN_EXPIRED, 100000), 0); /* its JM died again */
    assert_int_equal(due(f, 100000 + ORPHAN - 1), 0); /* a fresh clock, not the old one */
    assert_int_equal(due(f, 100000 + ORPHAN), 1);
    /* an ended job seen active again (an RM's view that lagged) is left alone too */
    assert_int_equal(orphan_note(f->o, "k", ORPHAN_DONE, 0), 0);
    assert_int_equal(orphan_note(f->o, "k", ORPHAN_ACTIVE, ENDED - 1), 0);
    assert_int_equal(due(f, ENDED), 0);
    assert_int_equal(orphan_note(f->o, "k", ORPHAN_DONE, ENDED), 0);
    assert_int_equal(due(f, 2 * ENDED - 1), 0);
    assert_int_equal(due(f, 2 * ENDED), 1);
}

static void test_grace_expired_then_ended(void **state)
{
    fixture_t *f = *state;
    /* expired for most of its grace, then the job ended: the orphan grace runs out first */
    assert_int_equal(orphan_note(f->o, "a", ORPHAN_EXPIRED, 0), 0);
    assert_int_equal(orphan_note(f->o, "a", ORPHAN_FAILED, ORPHAN - 2000), 0);
    assert_int_equal(due(f, ORPHAN - 1), 0);
    assert_int_equal(due(f, ORPHAN), 1);
    assert_int_equal(f->v[0].ended, 0);
    assert_int_equal(f->v[0].state, ORPHAN_FAILED);
    /* expired briefly, then ended: the ended grace from when it ended */
    assert_int_equal(orphan_note(f->o, "b", ORPHAN_EXPIRED, 0), 0);
    assert_int_equal(orphan_note(f->o, "b", ORPHAN_CANCELLED, 1000), 0);
    assert_int_equal(due(f, 1000 + ENDED - 1), 0);
    assert_int_equal(due(f, 1000 + ENDED), 1);
    assert_int_equal(f->v[0].ended, 1);
    assert_int_equal(f->v[0].waited_ms, ENDED);
    /* ended, then the RM forgot it (unknown): still reaped at the ended grace */
    assert_int_equal(orphan_note(f->o, "c", ORPHAN_DONE, 0), 0);
    assert_int_equal(orphan_note(f->o, "c", ORPHAN_UNKNOWN, 1000), 0);
    assert_int_equal(due(f, ENDED), 1);
    assert_int_equal(f->v[0].ended, 1);
}

static void test_grace_bad_state_and_forget(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(orphan_note(f->o, "j", 6, 0), ERR_INVAL);
    assert_int_equal(orphan_note(f->o, "j", UINT32_MAX, 0), ERR_INVAL);
    assert_int_equal(orphan_len(f->o), 0);
    assert_int_equal(orphan_note(f->o, "j", ORPHAN_DONE, 0), 0);
    assert_int_equal(orphan_note(f->o, "j", 9, 1), ERR_INVAL); /* leaves the entry as it was */
    assert_int_equal(orphan_len(f->o), 1);
    orphan_forget(f->o, "j"); /* no live task of it left */
    orphan_forget(f->o, "never-seen");
    assert_int_equal(orphan_len(f->o), 0);
    assert_int_equal(due(f, 10 * ORPHAN), 0);
}

static void test_grace_zero_and_clock_back(void **state)
{
    (void)state;
    orphan_config_t cfg = {.ended_grace_ms = 0, .orphan_grace_ms = 0};
    orphan_t *o = orphan_new(&cfg);
    assert_non_null(o);
    assert_int_equal(orphan_note(o, "j", ORPHAN_DONE, 50), 0);
    assert_int_equal(orphan_due(o, 50, NULL, NULL), 1); /* a zero grace: at once */
    orphan_destroy(&o);
    assert_null(o);
    cfg.ended_grace_ms = ENDED;
    cfg.orphan_grace_ms = ORPHAN;
    o = orphan_new(&cfg);
    assert_int_equal(orphan_note(o, "j", ORPHAN_DONE, 1000), 0);
    assert_int_equal(orphan_due(o, 10, NULL, NULL), 0); /* a time before the note: not due */
    orphan_destroy(&o);
}

static void forget_other(void *arg, const orphan_verdict_t *v)
{
    orphan_t *o = arg;
    orphan_forget(o, strcmp(v->job_id, "a") == 0 ? "b" : "a");
    orphan_forget(o, v->job_id); /* already forgotten: a no-op */
}

static void test_grace_callback_may_forget(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(orphan_note(f->o, "a", ORPHAN_DONE, 0), 0);
    assert_int_equal(orphan_note(f->o, "b", ORPHAN_DONE, 0), 0);
    assert_int_equal(orphan_note(f->o, "c", ORPHAN_EXPIRED, 0), 0);
    assert_int_equal(orphan_due(f->o, ENDED, forget_other, f->o), 1); /* the other one went */
    assert_int_equal(orphan_len(f->o), 1);
}

int main(void)
{
    const struct CMUnitTest fence[] = {
        cmocka_unit_test(test_fence_older_refused),
        cmocka_unit_test(test_fence_equal_admitted),
        cmocka_unit_test(test_fence_higher_raises),
        cmocka_unit_test(test_fence_zero_unfenced),
    };
    const struct CMUnitTest grace[] = {
        cmocka_unit_test_setup_teardown(test_grace_each_ended_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_expired_and_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_active_resets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_expired_then_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_bad_state_and_forget, setup, teardown),
        cmocka_unit_test(test_grace_zero_and_clock_back),
        cmocka_unit_test_setup_teardown(test_grace_callback_may_forget, setup, teardown),
    };
    int rc = cmocka_run_group_tests_name("fence", fence, NULL, NULL);
    return rc | cmocka_run_group_tests_name("grace", grace, NULL, NULL);
}
