/* Garbled input: at least 1,000,000 random, truncated, bit-flipped, spliced and otherwise
 * damaged buffers through the decoder (seeded, reproducible: PADDOCK_GARBLE_SEED and
 * PADDOCK_GARBLE_N override the defaults). Checks: no crash (and no leak, no UB under the
 * sanitizer build), every call counted exactly once as decoded or rejected, the code returned
 * matches the reason counted, every type's body decoder saw damaged input, and whatever the
 * decoder accepts, the encoder accepts and reproduces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/proto.h"
#include "sample.h"

static uint64_t rng_state;

static uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t below(size_t n)
{
    return n == 0 ? 0 : (size_t)(rng() % n);
}

typedef struct seed {
    uint8_t *data;
    size_t len;
} seed_t;

#define MAX_SEEDS 64
static seed_t seeds[MAX_SEEDS];
static size_t nseeds;

static void add_seed(const proto_msg_t *m)
{
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(m, &b, NULL, 0), 0);
    assert_true(nseeds < MAX_SEEDS);
    seeds[nseeds].data = b.data; /* ownership moves to the seed table */
    seeds[nseeds].len = b.len;
    nseeds++;
}

static int expected_code(proto_reject_t r)
{
    switch (r) {
    case PROTO_REJ_SIZE:
    case PROTO_REJ_STRUCTURE:
    case PROTO_REJ_LIMIT:
        return ERR_TOOBIG;
    case PROTO_REJ_VERSION:
        return ERR_VERSION;
    case PROTO_REJ_UNKNOWN_TYPE:
        return ERR_UNKNOWN_TYPE;
    case PROTO_REJ_RANGE:
        return ERR_RANGE;
    case PROTO_REJ_NOMEM:
        return ERR_NOMEM;
    default:
        return ERR_PARSE;
    }
}

static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                      0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc6, 0xc7, 0xc9, 0xca,
                                      0xcb, 0xcc, 0xce, 0xcf, 0xd0, 0xd3, 0xd4, 0xd8, 0xd9,
                                      0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff};

/* Writes one damaged buffer into out (capacity cap), returns its length. */
static size_t garble(uint8_t *out, size_t cap, unsigned *strategy)
{
    const seed_t *a = &seeds[below(nseeds)], *b = &seeds[below(nseeds)];
    size_t n;
    *strategy = (unsigned)below(8);
    switch (*strategy) {
    case 0: /* random bytes */
        n = below(97);
        for (size_t i = 0; i < n; i++)
            out[i] = (uint8_t)rng();
        return n;
    case 1: { /* a valid envelope of a random type, then random bytes as the body */
        out[0] = 0x94;
        out[1] = 0x01;
        out[2] = (uint8_t)(1 + below(PROTO_TYPE_LIMIT - 1));
        out[3] = 0x00;
        n = 4 + below(120);
        for (size_t i = 4; i < n; i++)
            out[i] = below(4) == 0 ? interesting[below(sizeof interesting)] : (uint8_t)rng();
        return n;
    }
    case 2: /* truncated */
        n = below(a->len);
        memcpy(out, a->data, n);
        return n;
    case 3: { /* 1..8 bit flips */
        memcpy(out, a->data, a->len);
        for (size_t k = 1 + below(8); k > 0; k--) {
            size_t bit = below(a->len * 8);
            out[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        return a->len;
    }
    case 4: /* 1..4 bytes replaced by msgpack type bytes */
        memcpy(out, a->data, a->len);
        for (size_t k = 1 + below(4); k > 0; k--)
            out[below(a->len)] = interesting[below(sizeof interesting)];
        return a->len;
    case 5: { /* splice: a's head, b's tail */
        size_t head = below(a->len + 1), tail = below(b->len + 1);
        memcpy(out, a->data, head);
        memcpy(out + head, b->data + b->len - tail, tail);
        return head + tail;
    }
    case 6: { /* insert or delete a few bytes */
        size_t at = below(a->len + 1), k = 1 + below(4);
        memcpy(out, a->data, at);
        if (below(2) == 0 && at + k <= a->len) { /* delete */
            memcpy(out + at, a->data + at + k, a->len - at - k);
            return a->len - k;
        }
        for (size_t i = 0; i < k; i++)
            out[at + i] = (uint8_t)rng();
        memcpy(out + at + k, a->data + at, a->len - at);
        return a->len + k;
    }
    default: { /* one byte off by +-1 (lengths and counts shift by one) */
        memcpy(out, a->data, a->len);
        size_t i = below(a->len);
        out[i] = (uint8_t)(out[i] + (below(2) ? 1 : 0xff));
        (void)cap;
        return a->len;
    }
    }
}

static void test_garble(void **state)
{
    uint64_t seed = 20261121;
    uint64_t total = 1000000;
    const char *e = getenv("PADDOCK_GARBLE_SEED");
    if (e != NULL)
        seed = strtoull(e, NULL, 10);
    e = getenv("PADDOCK_GARBLE_N");
    if (e != NULL)
        total = strtoull(e, NULL, 10);
    rng_state = seed;

    for (proto_type_t t = 1; t < PROTO_TYPE_LIMIT; t++)
        for (int v = SAMPLE_TYPICAL; v <= SAMPLE_MINIMAL; v++) {
            proto_msg_t m;
            sample_msg(&m, t, v);
            add_seed(&m);
            proto_msg_close(&m);
        }
    proto_msg_t m;
    sample_msg(&m, PROTO_HEARTBEAT, SAMPLE_TYPICAL);
    sample_matrix(&m.heartbeat.matrix, 16, 16, 1);
    add_seed(&m);
    proto_msg_close(&m);

    size_t cap = 0;
    for (size_t i = 0; i < nseeds; i++)
        cap = seeds[i].len > cap ? seeds[i].len : cap;
    cap = 2 * cap + 256;
    uint8_t *work = malloc(cap);
    assert_non_null(work);

    proto_stats_t st;
    proto_stats_init(&st);
    proto_buf_t re;
    proto_buf_init(&re);
    uint64_t by_strategy_accepted[8] = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t i = 0; i < total; i++) {
        unsigned strategy;
        size_t n = garble(work, cap, &strategy);
        uint64_t dec = st.decoded_total, rej = st.rejected_total;
        proto_reject_t why = PROTO_REJ_COUNT;
        proto_msg_t d;
        int rc = proto_decode_ex(work, n, &d, &st, &why, NULL, 0);
        if (rc == 0) {
            assert_int_equal(st.decoded_total, dec + 1);
            assert_int_equal(st.rejected_total, rej);
            by_strategy_accepted[strategy]++;
            /* What the decoder accepts, the encoder accepts and reproduces. */
            char err[256];
            int erc = proto_encode(&d, &re, err, sizeof err);
            if (erc != 0)
                fail_msg("iteration %llu: decoded %s does not encode: %s", (unsigned long long)i,
                         proto_type_name(d.type), err);
            proto_msg_t d2;
            assert_int_equal(proto_decode(re.data, re.len, &d2, NULL, NULL, 0), 0);
            if (!sample_msg_equal(&d, &d2, err, sizeof err))
                fail_msg("iteration %llu: re-encoding changed %s", (unsigned long long)i, err);
            proto_msg_close(&d2);
            proto_msg_close(&d);
        } else {
            assert_int_equal(st.rejected_total, rej + 1);
            assert_int_equal(st.decoded_total, dec);
            assert_true(why < PROTO_REJ_COUNT);
            assert_int_equal(rc, expected_code(why));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    assert_int_equal(st.calls, total);
    assert_int_equal(st.decoded_total + st.rejected_total, total);
    uint64_t sum_reason = 0, sum_type = 0, sum_dec = 0;
    for (int r = 0; r < PROTO_REJ_COUNT; r++)
        sum_reason += st.rejected_by_reason[r];
    for (int t = 0; t < PROTO_TYPE_LIMIT; t++) {
        sum_type += st.rejected_by_type[t];
        sum_dec += st.decoded_by_type[t];
        /* every body decoder saw damaged input */
        if (t > 0 && total >= 100000)
            assert_true(st.rejected_by_type[t] > 0);
    }
    assert_int_equal(sum_reason, st.rejected_total);
    assert_int_equal(sum_type, st.rejected_total);
    assert_int_equal(sum_dec, st.decoded_total);

    print_message("garble: seed %llu, %llu buffers in %.2f s (%.0f/s), %llu accepted, "
                  "%llu rejected\n",
                  (unsigned long long)seed, (unsigned long long)total, secs, (double)total / secs,
                  (unsigned long long)st.decoded_total, (unsigned long long)st.rejected_total);
    for (int r = 0; r < PROTO_REJ_COUNT; r++)
        print_message("  rejected %-13s %llu\n", proto_reject_name(r),
                      (unsigned long long)st.rejected_by_reason[r]);

    proto_buf_close(&re);
    free(work);
    for (size_t i = 0; i < nseeds; i++)
        mem_free(seeds[i].data);
    nseeds = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_garble),
    };
    return cmocka_run_group_tests_name("proto_garble", tests, NULL, NULL);
}
