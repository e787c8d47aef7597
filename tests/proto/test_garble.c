/* Garbled input: at least 1,000,000 random, truncated, bit-flipped, spliced and otherwise
 * damaged buffers through the decoder (seeded, reproducible: PADDOCK_GARBLE_SEED and
 * PADDOCK_GARBLE_N override the defaults); a fifth of them are structured: valid msgpack with
 * one object replaced (wrong type, length, count or value) or one map pair dropped, duplicated
 * or renamed, so the body decoders see more than broken framing. Checks: no crash (and no leak, no
 * UB under the sanitizer build), every call counted exactly once as decoded or rejected, the code
 * returned matches the reason counted, every type's body decoder saw damaged input, and whatever
 * the decoder accepts, the encoder accepts and reproduces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <msgpack.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/rng.h"
#include "proto/proto.h"
#include "sample.h"

static struct rng garble__rng; /* seeded in test_garble */

static uint64_t draw(void)
{
    return rng_next(&garble__rng);
}

static size_t below(size_t n)
{
    return n == 0 ? 0 : (size_t)(draw() % n);
}

#define NSTRATEGIES 10 /* 0-7 byte-level damage, 8-9 structured */

typedef struct seed {
    uint8_t *data;
    size_t len;
} seed_t;

#define MAX_SEEDS 64
static seed_t seeds[MAX_SEEDS];
static size_t nseeds;

/* Structure-aware damage: each seed unpacked once into a tree (kept for the whole test), then
 * repacked with one object replaced, one map pair dropped, duplicated or renamed. These reach
 * the body decoders with valid msgpack carrying wrong types, lengths, counts and values. */
static msgpack_zone tree_zone;
static msgpack_object trees[MAX_SEEDS];
static msgpack_sbuffer tree_out;
static msgpack_packer tree_pk;

static size_t tree_count(const msgpack_object *o)
{
    size_t n = 1;
    if (o->type == MSGPACK_OBJECT_ARRAY)
        for (uint32_t i = 0; i < o->via.array.size; i++)
            n += tree_count(&o->via.array.ptr[i]);
    else if (o->type == MSGPACK_OBJECT_MAP)
        for (uint32_t i = 0; i < o->via.map.size; i++)
            n += tree_count(&o->via.map.ptr[i].key) + tree_count(&o->via.map.ptr[i].val);
    return n;
}

static void pack_random_str(size_t len)
{
    msgpack_pack_str(&tree_pk, len);
    char chunk[64];
    for (size_t done = 0; done < len;) {
        size_t k = len - done < sizeof chunk ? len - done : sizeof chunk;
        for (size_t i = 0; i < k; i++)
            chunk[i] = below(64) == 0 ? '\0' : (char)('a' + below(26));
        msgpack_pack_str_body(&tree_pk, chunk, k);
        done += k;
    }
}

static void pack_random_object(void)
{
    static const size_t lens[] = {0, 1, 255, 256, 1024, 1025, 4096, 4097};
    static const uint32_t counts[] = {0, 1, 2, 16, 17, 256, 257, 513, 1025, 4097};
    static const uint64_t uints[] = {0,
                                     1,
                                     7,
                                     127,
                                     128,
                                     255,
                                     256,
                                     1000,
                                     1001,
                                     65535,
                                     65536,
                                     4294967295ull,
                                     4294967296ull,
                                     1ull << 52,
                                     (1ull << 52) + 1,
                                     9223372036854775807ull,
                                     9223372036854775808ull,
                                     18446744073709551615ull};
    switch (below(12)) {
    case 0:
        msgpack_pack_uint64(&tree_pk, uints[below(sizeof uints / sizeof uints[0])]);
        break;
    case 1: {
        uint64_t v = draw();
        msgpack_pack_uint64(&tree_pk, v >> below(64));
        break;
    }
    case 2:
        if (below(2)) {
            msgpack_pack_int64(&tree_pk, -1);
        } else {
            int64_t v = (int64_t)(draw() | (1ull << 63));
            msgpack_pack_int64(&tree_pk, v >> below(63));
        }
        break;
    case 3: {
        static const double d[] = {0.0, -0.0, 0.001, 0.0009, 4096, 4096.5, -1, 1e300};
        double v = below(5) == 0 ? (below(2) ? NAN : INFINITY) : d[below(8)];
        if (below(2))
            msgpack_pack_float(&tree_pk, (float)v);
        else
            msgpack_pack_double(&tree_pk, v);
        break;
    }
    case 4:
    case 5:
        pack_random_str(lens[below(sizeof lens / sizeof lens[0])]);
        break;
    case 6:
        msgpack_pack_bin_with_body(&tree_pk, "\x01\x02", 2);
        break;
    case 7:
        if (below(2))
            msgpack_pack_nil(&tree_pk);
        else
            msgpack_pack_true(&tree_pk);
        break;
    case 8: {
        uint32_t n = counts[below(sizeof counts / sizeof counts[0])];
        msgpack_pack_array(&tree_pk, n);
        int strs = below(2);
        for (uint32_t i = 0; i < n; i++) {
            if (strs)
                msgpack_pack_str_with_body(&tree_pk, "x", 1);
            else
                msgpack_pack_uint32(&tree_pk, i);
        }
        break;
    }
    case 9: {
        uint32_t n = counts[below(6)];
        msgpack_pack_map(&tree_pk, n);
        for (uint32_t i = 0; i < n; i++) {
            char k[16];
            int kl = snprintf(k, sizeof k, "K%u", i);
            msgpack_pack_str_with_body(&tree_pk, k, (size_t)kl);
            msgpack_pack_str_with_body(&tree_pk, "v", 1);
        }
        break;
    }
    case 10:
        msgpack_pack_ext_with_body(&tree_pk, "e", 1, 5);
        break;
    default:
        msgpack_pack_int8(&tree_pk, (int8_t)draw());
        break;
    }
}

/* Repacks o; object number `target` (pre-order) is damaged according to `how`. */
static void tree_pack(const msgpack_object *o, size_t *index, size_t target, unsigned how)
{
    size_t me = (*index)++;
    if (me == target && how == 0) {
        pack_random_object();
        return;
    }
    switch (o->type) {
    case MSGPACK_OBJECT_ARRAY:
        msgpack_pack_array(&tree_pk, o->via.array.size);
        for (uint32_t i = 0; i < o->via.array.size; i++)
            tree_pack(&o->via.array.ptr[i], index, target, how);
        return;
    case MSGPACK_OBJECT_MAP: {
        uint32_t n = o->via.map.size, pick = (uint32_t)below(n);
        int touch = me == target && n > 0; /* how: 1 drop, 2 duplicate, 3 rename a pair */
        msgpack_pack_map(&tree_pk, touch && how == 1 ? n - 1 : touch && how == 2 ? n + 1 : n);
        for (uint32_t i = 0; i < n; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            if (touch && i == pick && how == 1) {
                *index += tree_count(&kv->key) + tree_count(&kv->val);
                continue;
            }
            if (touch && i == pick && how == 3) {
                pack_random_str(1 + below(8));
                (*index) += tree_count(&kv->key);
            } else {
                tree_pack(&kv->key, index, target, how);
            }
            tree_pack(&kv->val, index, target, how);
            if (touch && i == pick && how == 2) {
                msgpack_pack_object(&tree_pk, kv->key);
                msgpack_pack_object(&tree_pk, kv->val);
            }
        }
        return;
    }
    default:
        msgpack_pack_object(&tree_pk, *o);
        return;
    }
}

static void add_seed(const proto_msg_t *m)
{
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(m, &b, NULL, 0), 0);
    assert_true(nseeds < MAX_SEEDS);
    seeds[nseeds].data = b.data; /* ownership moves to the seed table */
    seeds[nseeds].len = b.len;
    size_t off = 0;
    assert_int_equal(msgpack_unpack((const char *)b.data, b.len, &off, &tree_zone, &trees[nseeds]),
                     MSGPACK_UNPACK_SUCCESS);
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

/* Makes one damaged buffer: in out (capacity cap) or, for the structured strategies, in
 * tree_out. Sets *buf to it and returns its length. */
static size_t garble(uint8_t *out, size_t cap, unsigned *strategy, const uint8_t **buf)
{
    size_t which = below(nseeds);
    const seed_t *a = &seeds[which], *b = &seeds[below(nseeds)];
    size_t n;
    *strategy = (unsigned)below(NSTRATEGIES);
    *buf = out;
    if (*strategy >= 8) { /* structured: replace an object, or drop/duplicate/rename a pair */
        msgpack_sbuffer_clear(&tree_out);
        size_t index = 0, total = tree_count(&trees[which]);
        /* skip the envelope's own array and its scalars most of the time */
        size_t target = total > 5 && below(8) != 0 ? 4 + below(total - 4) : below(total);
        tree_pack(&trees[which], &index, target, *strategy == 8 ? 0 : (unsigned)(1 + below(3)));
        *buf = (const uint8_t *)tree_out.data;
        return tree_out.size;
    }
    switch (*strategy) {
    case 0: /* random bytes */
        n = below(97);
        for (size_t i = 0; i < n; i++)
            out[i] = (uint8_t)draw();
        return n;
    case 1: { /* a valid envelope of a random type, then random bytes as the body */
        out[0] = 0x94;
        out[1] = 0x01;
        out[2] = (uint8_t)(1 + below(PROTO_TYPE_LIMIT - 1));
        out[3] = 0x00;
        n = 4 + below(120);
        for (size_t i = 4; i < n; i++)
            out[i] = below(4) == 0 ? interesting[below(sizeof interesting)] : (uint8_t)draw();
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
        for (size_t k = 1 + below(4); k > 0; k--) {
            size_t at = below(a->len); /* one draw per statement: the order is then fixed */
            out[at] = interesting[below(sizeof interesting)];
        }
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
            out[at + i] = (uint8_t)draw();
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
    rng_seed(&garble__rng, seed);

    assert_true(msgpack_zone_init(&tree_zone, 1 << 16));
    msgpack_sbuffer_init(&tree_out);
    msgpack_packer_init(&tree_pk, &tree_out, msgpack_sbuffer_write);
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
    uint64_t by_strategy_accepted[NSTRATEGIES] = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t i = 0; i < total; i++) {
        unsigned strategy;
        const uint8_t *in;
        size_t n = garble(work, cap, &strategy, &in);
        uint64_t dec = st.decoded_total, rej = st.rejected_total;
        proto_reject_t why = PROTO_REJ_COUNT;
        proto_msg_t d;
        int rc = proto_decode_ex(in, n, &d, &st, &why, NULL, 0);
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

    for (int k = 0; k < NSTRATEGIES; k++)
        print_message("  strategy %d accepted %llu\n", k,
                      (unsigned long long)by_strategy_accepted[k]);
    for (int t = 1; t < PROTO_TYPE_LIMIT; t++)
        print_message("  %-19s decoded %7llu rejected %7llu\n", proto_type_name(t),
                      (unsigned long long)st.decoded_by_type[t],
                      (unsigned long long)st.rejected_by_type[t]);

    proto_buf_close(&re);
    msgpack_sbuffer_destroy(&tree_out);
    msgpack_zone_destroy(&tree_zone);
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
