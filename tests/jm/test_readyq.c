/* test_readyq.c - the ready queue (jm/readyq.h): tasks come out in jm/priority.h's order (the
 * order priority_sort gives), keys change in place, removal from anywhere, a random sequence of
 * operations against a sorted model, and bad calls refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/rng.h"
#include "jm/dag.h"
#include "jm/priority.h"
#include "jm/readyq.h"
#include "jm/spec.h"

static void test_order_update_remove(void **state)
{
    (void)state;
    readyq_t *q = NULL;
    assert_int_equal(readyq_new(8, &q), 0);
    assert_int_equal(readyq_count(q), 0);
    size_t t = 99;
    assert_int_equal(readyq_peek(q, &t), ERR_NOTFOUND);
    /* priority first, then bytes, then the lower index */
    assert_int_equal(readyq_push(q, 0, 1.0, 10), 0);
    assert_int_equal(readyq_push(q, 1, 5.0, 0), 0);
    assert_int_equal(readyq_push(q, 2, 1.0, 20), 0);
    assert_int_equal(readyq_push(q, 3, 1.0, 10), 0);
    assert_int_equal(readyq_push(q, 4, 3.0, 0), 0);
    assert_int_equal(readyq_count(q), 5);
    assert_int_equal(readyq_peek(q, &t), 0);
    assert_int_equal(t, 1);
    assert_true(readyq_contains(q, 3));
    assert_false(readyq_contains(q, 5));

    /* task 0 gains priority: it goes first; task 1 drops to last */
    assert_int_equal(readyq_update(q, 0, 9.0, 10), 0);
    assert_int_equal(readyq_update(q, 1, 0.5, 0), 0);
    /* task 4 leaves from the middle */
    assert_int_equal(readyq_remove(q, 4), 0);
    assert_false(readyq_contains(q, 4));
    assert_int_equal(readyq_remove(q, 4), ERR_NOTFOUND);

    size_t out[8];
    assert_int_equal(readyq_pop(q, out, 2), 2);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 2);
    assert_false(readyq_contains(q, 0));
    assert_int_equal(readyq_count(q), 2);
    /* a popped task pushed back comes out where its key puts it */
    assert_int_equal(readyq_push(q, 2, 1.0, 20), 0);
    assert_int_equal(readyq_pop(q, out, 8), 3);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 3);
    assert_int_equal(out[2], 1);
    assert_int_equal(readyq_count(q), 0);

    /* bad calls change nothing */
    assert_int_equal(readyq_push(q, 8, 1.0, 0), ERR_RANGE);
    assert_int_equal(readyq_push(q, 1, NAN, 0), ERR_RANGE);
    assert_int_equal(readyq_push(q, 1, 1.0, 0), 0);
    assert_int_equal(readyq_push(q, 1, 2.0, 0), ERR_EXISTS);
    assert_int_equal(readyq_update(q, 2, 1.0, 0), ERR_NOTFOUND);
    assert_int_equal(readyq_update(q, 9, 1.0, 0), ERR_RANGE);
    assert_int_equal(readyq_remove(q, 9), ERR_RANGE);
    assert_int_equal(readyq_count(q), 1);
    readyq_clear(q);
    assert_int_equal(readyq_count(q), 0);
    assert_false(readyq_contains(q, 1));
    assert_int_equal(readyq_push(q, 1, 1.0, 0), 0);
    readyq_destroy(&q);
    assert_null(q);
    readyq_destroy(&q);
}

/* The same order as priority_sort on a real spec: stages of different priority, inputs. */
static void test_matches_priority_sort(void **state)
{
    (void)state;
    char buf[16384];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"version\":1,\"stages\":["
                                  "{\"name\":\"a\"},{\"name\":\"b\"},"
                                  "{\"name\":\"c\",\"after\":[\"a\"]}],"
                                  "\"tasks\":[");
    unsigned x = 7;
    for (int i = 0; i < 60; i++) {
        x = x * 1103515245u + 12345u;
        const char *stage = i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "c";
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"id\":\"t%d\",\"stage\":\"%s\",\"cmd\":[\"true\"],"
                                "\"runtime_s\":%u,\"inputs\":[{\"bytes\":%u,\"nodes\":[\"x\"]}]}",
                                i ? "," : "", i, stage, 1 + (x >> 20) % 5, (x >> 8) % 4);
    }
    snprintf(buf + len, sizeof buf - len, "]}");
    char msg[256];
    struct spec *s = NULL;
    assert_int_equal(spec_parse(buf, strlen(buf), NULL, &s, msg, sizeof msg), 0);
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    double *sp = calloc(s->nstages, sizeof *sp);
    assert_non_null(sp);
    assert_int_equal(priority_compute(d, NULL, NULL, sp), 0);
    size_t all[60], got[60];
    readyq_t *q = NULL;
    assert_int_equal(readyq_new(s->ntasks, &q), 0);
    for (size_t i = 0; i < s->ntasks; i++) {
        all[i] = s->ntasks - 1 - i; /* pushed in reverse */
        assert_int_equal(
            readyq_push(q, all[i], sp[s->tasks[all[i]].stage], s->tasks[all[i]].input_bytes), 0);
    }
    priority_sort(d, sp, all, s->ntasks);
    assert_int_equal(readyq_pop(q, got, s->ntasks), s->ntasks);
    for (size_t i = 0; i < s->ntasks; i++)
        assert_int_equal(got[i], all[i]);
    readyq_destroy(&q);
    free(sp);
    dag_destroy(&d);
    spec_destroy(&s);
}

/* Random pushes, updates, removals and pops against a model: the queue's first k always equal
 * the model's k best. */
#define RQ_N 300
static double m_prio[RQ_N];
static uint64_t m_bytes[RQ_N];
static int m_in[RQ_N];

static int model_before(size_t a, size_t b)
{
    if (m_prio[a] != m_prio[b])
        return m_prio[a] > m_prio[b];
    if (m_bytes[a] != m_bytes[b])
        return m_bytes[a] > m_bytes[b];
    return a < b;
}

static size_t model_best(size_t *out, size_t k)
{
    size_t n = 0;
    for (size_t t = 0; t < RQ_N; t++)
        if (m_in[t])
            out[n++] = t;
    for (size_t i = 1; i < n; i++) /* insertion sort: small */
        for (size_t j = i; j > 0 && model_before(out[j], out[j - 1]); j--) {
            size_t tmp = out[j];
            out[j] = out[j - 1];
            out[j - 1] = tmp;
        }
    return n < k ? n : k;
}

static void test_random_against_model(void **state)
{
    (void)state;
    readyq_t *q = NULL;
    assert_int_equal(readyq_new(RQ_N, &q), 0);
    memset(m_in, 0, sizeof m_in);
    struct rng g;
    rng_seed(&g, 42);
    size_t want[RQ_N], got[RQ_N], popped = 0;
    for (int step = 0; step < 20000; step++) {
        size_t t = (size_t)(rng_next(&g) % RQ_N);
        double prio = (double)(rng_next(&g) % 8);
        uint64_t bytes = rng_next(&g) % 4;
        switch (rng_next(&g) % 5) {
        case 0:
        case 1:
            assert_int_equal(readyq_push(q, t, prio, bytes), m_in[t] ? ERR_EXISTS : 0);
            if (!m_in[t]) {
                m_in[t] = 1;
                m_prio[t] = prio;
                m_bytes[t] = bytes;
            }
            break;
        case 2:
            assert_int_equal(readyq_update(q, t, prio, bytes), m_in[t] ? 0 : ERR_NOTFOUND);
            if (m_in[t]) {
                m_prio[t] = prio;
                m_bytes[t] = bytes;
            }
            break;
        case 3:
            assert_int_equal(readyq_remove(q, t), m_in[t] ? 0 : ERR_NOTFOUND);
            m_in[t] = 0;
            break;
        default: {
            size_t k = 1 + rng_next(&g) % 4;
            size_t nw = model_best(want, k);
            assert_int_equal(readyq_pop(q, got, k), nw);
            popped += nw;
            for (size_t i = 0; i < nw; i++) {
                assert_int_equal(got[i], want[i]);
                m_in[got[i]] = 0;
            }
            break;
        }
        }
        size_t c = 0;
        for (size_t i = 0; i < RQ_N; i++)
            c += (size_t)m_in[i];
        assert_int_equal(readyq_count(q), c);
    }
    assert_true(popped > 0); /* the walk did pop tasks, not only push and remove */
    size_t nw = model_best(want, RQ_N);
    assert_int_equal(readyq_pop(q, got, RQ_N), nw);
    for (size_t i = 0; i < nw; i++)
        assert_int_equal(got[i], want[i]);
    readyq_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_update_remove),
        cmocka_unit_test(test_matches_priority_sort),
        cmocka_unit_test(test_random_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
