/* test_bloom.c - the bounded Bloom filter of the cache advertisement (common/bloom.h): no false
 * negatives, the false-positive rate within its bound (measured), sizing within a byte budget,
 * the wire form and its refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/bloom.h"
#include "common/err.h"

static int key(char *buf, size_t cap, const char *kind, size_t i)
{
    return snprintf(buf, cap, "/data/%s/part-%05zu.parquet", kind, i);
}

/* Adds n keys, checks each is found, measures the rate over `probes` keys never added. */
static double measure(bloom_t *b, size_t n, size_t probes)
{
    char k[96];
    for (size_t i = 0; i < n; i++)
        bloom_add(b, k, (size_t)key(k, sizeof k, "held", i));
    for (size_t i = 0; i < n; i++)
        assert_true(bloom_has(b, k, (size_t)key(k, sizeof k, "held", i)));
    size_t fp = 0;
    for (size_t i = 0; i < probes; i++)
        fp += (size_t)bloom_has(b, k, (size_t)key(k, sizeof k, "absent", i));
    return (double)fp / (double)probes;
}

static void test_rate_within_bound(void **state)
{
    (void)state;
    /* (m, k, n): a well-sized filter, an over-full one, a single hash. */
    const struct {
        uint32_t m;
        unsigned k;
        size_t n;
    } cases[] = {{8192, 6, 800}, {8192, 4, 4000}, {4096, 1, 300}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bloom_t *b = NULL;
        assert_int_equal(bloom_new(cases[c].m, cases[c].k, &b), 0);
        double got = measure(b, cases[c].n, 100000);
        double bound = bloom_fp_bound(b);
        assert_true(bound == bloom_fp_rate(cases[c].m, cases[c].k, cases[c].n));
        /* The measured rate within the bound (plus three binomial standard deviations). */
        double sd = 3 * sqrt(bound * (1 - bound) / 100000);
        printf("m %u k %u n %zu: measured %.5f bound %.5f\n", cases[c].m, cases[c].k, cases[c].n,
               got, bound);
        assert_true(got <= bound * 1.05 + sd);
        /* ... and not absurdly below it (the hashes spread). */
        assert_true(got >= bound * 0.5 - sd);
        bloom_destroy(&b);
        assert_null(b);
    }
}

static void test_sizing(void **state)
{
    (void)state;
    uint32_t m;
    unsigned k;
    /* 1000 files at 1%: 9586 bits -> 9592, k = 7; it meets the target. */
    assert_int_equal(bloom_size(1000, 0.01, 4096, &m, &k), 0);
    assert_int_equal(m % 8, 0);
    assert_true(m >= 9585 && m <= 9600);
    assert_int_equal(k, 7);
    assert_true(bloom_fp_rate(m, k, 1000) <= 0.0101);
    /* A budget of 256 bytes binds: 2048 bits, and the rate it gives is reported honestly. */
    assert_int_equal(bloom_size(1000, 0.01, 256, &m, &k), 0);
    assert_int_equal(m, 2048);
    assert_true(k >= 1 && k <= 2);
    assert_true(bloom_fp_rate(m, k, 1000) > 0.2);
    bloom_t *b = NULL;
    assert_int_equal(bloom_new(m, k, &b), 0);
    double got = measure(b, 1000, 20000);
    assert_true(got <= bloom_fp_bound(b) * 1.05 + 0.01);
    bloom_destroy(&b);
    assert_int_equal(bloom_size(0, 0.01, 256, &m, &k), ERR_INVAL);
    assert_int_equal(bloom_size(10, 1.5, 256, &m, &k), ERR_INVAL);
    assert_int_equal(bloom_new(4, 3, &b), ERR_INVAL);
    assert_int_equal(bloom_new(BLOOM_MAX_BITS + 1, 3, &b), ERR_INVAL);
    assert_int_equal(bloom_new(64, 0, &b), ERR_INVAL);
    assert_int_equal(bloom_new(64, BLOOM_MAX_K + 1, &b), ERR_INVAL);
    assert_null(b);
}

static void test_wire_form(void **state)
{
    (void)state;
    bloom_t *b = NULL, *d = NULL;
    assert_int_equal(bloom_new(1001, 5, &b), 0); /* a bit count that is not a multiple of 8 */
    char k[96];
    for (size_t i = 0; i < 50; i++)
        bloom_add(b, k, (size_t)key(k, sizeof k, "held", i));
    uint8_t buf[BLOOM_HEADER_BYTES + 126];
    size_t len = 0;
    assert_int_equal(bloom_encoded_size(b), BLOOM_HEADER_BYTES + 126);
    assert_int_equal(bloom_encode(b, buf, sizeof buf - 1, &len), ERR_TOOBIG);
    assert_int_equal(bloom_encode(b, buf, sizeof buf, &len), 0);
    assert_int_equal(len, sizeof buf);
    assert_int_equal(bloom_decode(buf, len, &d), 0);
    assert_int_equal(bloom_bits(d), 1001);
    assert_int_equal(bloom_k(d), 5);
    assert_int_equal(bloom_count(d), 50);
    assert_true(bloom_fill(d) == bloom_fill(b) && bloom_fill(b) > 0);
    for (size_t i = 0; i < 50; i++)
        assert_true(bloom_has(d, k, (size_t)key(k, sizeof k, "held", i)));
    for (size_t i = 0; i < 2000; i++) {
        int n = key(k, sizeof k, "absent", i);
        assert_int_equal(bloom_has(d, k, (size_t)n), bloom_has(b, k, (size_t)n));
    }
    bloom_destroy(&d);
    /* Refusals: short, long, bad magic, version, k, m, stray bits past m. */
    assert_int_equal(bloom_decode(buf, len - 1, &d), ERR_PARSE);
    assert_int_equal(bloom_decode(buf, 5, &d), ERR_PARSE);
    uint8_t bad[sizeof buf + 1];
    memcpy(bad, buf, sizeof buf);
    assert_int_equal(bloom_decode(bad, sizeof bad, &d), ERR_PARSE);
    bad[0] = 'X';
    assert_int_equal(bloom_decode(bad, len, &d), ERR_PARSE);
    memcpy(bad, buf, len);
    bad[2] = 2;
    assert_int_equal(bloom_decode(bad, len, &d), ERR_VERSION);
    memcpy(bad, buf, len);
    bad[3] = 0;
    assert_int_equal(bloom_decode(bad, len, &d), ERR_PARSE);
    memcpy(bad, buf, len);
    bad[4] = 0xff;
    bad[5] = 0xff;
    bad[6] = 0xff;
    assert_int_equal(bloom_decode(bad, len, &d), ERR_PARSE);
    memcpy(bad, buf, len);
    bad[len - 1] |= 0x80; /* bit 1007 of a 1001-bit filter */
    assert_int_equal(bloom_decode(bad, len, &d), ERR_PARSE);
    assert_null(d);
    /* Clear empties it. */
    bloom_clear(b);
    assert_int_equal(bloom_count(b), 0);
    assert_true(bloom_fill(b) == 0);
    assert_false(bloom_has(b, "x", 1));
    bloom_destroy(&b);
    bloom_destroy(&b); /* NULL-safe */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_within_bound),
        cmocka_unit_test(test_sizing),
        cmocka_unit_test(test_wire_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
