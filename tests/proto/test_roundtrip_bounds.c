/* Every field of every message type at its bounds and just past them, driven by the schema
 * (the encoder refuses, and a message packed without checks is rejected by the decoder with the
 * expected reason). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/bloom.h"
#include "proto/proto.h"
#include "proto/schema.h"
#include "sample.h"
#include "roundtrip_fixture.h"

/* Every field at its bounds, driven by the schema. */

static proto_msg_t cur; /* the message whose body the sweep mutates */
static char wherebuf[256];

static void at(const proto__schema_t *s, const proto__field_t *f, const char *what)
{
    snprintf(wherebuf, sizeof wherebuf, "%s.%s %s", s->name, f->key, what);
    where = wherebuf;
}

static void fill_elem(const proto__schema_t *sub, void *elem, uint32_t i)
{
    if (strcmp(sub->name, "file") == 0) {
        proto_file_t *f = elem;
        f->path = mem_strdup("/opt/jobs/run.sh");
        f->bytes = i;
    } else if (strcmp(sub->name, "outcome") == 0) {
        proto_outcome_t *o = elem;
        char name[32];
        snprintf(name, sizeof name, "pn-%u", i);
        o->node = mem_strdup(name);
        o->ok = i;
        o->failed = i % 3;
    } else if (strcmp(sub->name, "sky") == 0) {
        ((proto_sky_t *)elem)->milli = 1000 * i;
    } else if (strcmp(sub->name, "job_info") == 0) {
        proto_job_info_t *j = elem;
        char id[32];
        snprintf(id, sizeof id, "j-%012u", i);
        j->job_id = mem_strdup(id);
        j->state = i % 6;
        j->epoch = i;
    } else if (strcmp(sub->name, "task_status") == 0) { /* TASK_STATUS_BATCH's statuses */
        proto_msg_t one;
        sample_msg(&one, PROTO_TASK_STATUS, i % 2 ? SAMPLE_TYPICAL : SAMPLE_MINIMAL);
        *(proto_task_status_t *)elem = one.task_status;
    } else {
        assert_string_equal(sub->name, "view_node");
        sample_view_node(elem, i, 1);
    }
}

static void sweep(const proto__schema_t *s, unsigned char *base);

static void sweep_uint(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    int is32 = f->kind == PROTO__U32;
    uint64_t tmax = is32 ? UINT32_MAX : UINT64_MAX;
    void *p = base + f->off;
    uint64_t save = is32 ? *(uint32_t *)p : *(uint64_t *)p;
#define SET(v) (is32 ? (void)(*(uint32_t *)p = (uint32_t)(v)) : (void)(*(uint64_t *)p = (v)))
    at(s, f, "= max");
    SET(f->umax);
    expect_roundtrip(&cur);
    at(s, f, "= min");
    SET(f->umin);
    expect_roundtrip(&cur);
    if (f->umax < tmax) {
        at(s, f, "= max + 1");
        SET(f->umax + 1);
        expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    }
    if (f->umin > 0) {
        at(s, f, "= min - 1");
        SET(f->umin - 1);
        expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    }
    SET(save);
#undef SET
}

static void sweep_int(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    int is32 = f->kind == PROTO__I32;
    int64_t tmin = is32 ? INT32_MIN : INT64_MIN, tmax = is32 ? INT32_MAX : INT64_MAX;
    void *p = base + f->off;
    int64_t save = is32 ? *(int32_t *)p : *(int64_t *)p;
#define SET(v) (is32 ? (void)(*(int32_t *)p = (int32_t)(v)) : (void)(*(int64_t *)p = (v)))
    at(s, f, "= max");
    SET(f->imax);
    expect_roundtrip(&cur);
    at(s, f, "= min");
    SET(f->imin);
    expect_roundtrip(&cur);
    if (f->imax < tmax) {
        at(s, f, "= max + 1");
        SET(f->imax + 1);
        expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    }
    if (f->imin > tmin) {
        at(s, f, "= min - 1");
        SET(f->imin - 1);
        expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    }
    SET(save);
#undef SET
}

static void sweep_f64(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    double *p = (double *)(base + f->off), save = *p;
    at(s, f, "= max");
    *p = f->dmax;
    expect_roundtrip(&cur);
    at(s, f, "= min");
    *p = f->dmin;
    expect_roundtrip(&cur);
    at(s, f, "just above max");
    *p = nextafter(f->dmax, INFINITY);
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "just below min");
    *p = nextafter(f->dmin, -INFINITY);
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "= NaN");
    *p = NAN;
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "= inf");
    *p = INFINITY;
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    *p = save;
}

static void sweep_str(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    char **p = (char **)(base + f->off), *save = *p;
    at(s, f, "at max length");
    *p = sample_str(f->umax, 'a');
    expect_roundtrip(&cur);
    mem_free(*p);
    at(s, f, "one byte over");
    *p = sample_str(f->umax + 1, 'a');
    expect_reject(&cur, ERR_TOOBIG, PROTO_REJ_LIMIT);
    mem_free(*p);
    if (f->umin > 0) {
        at(s, f, "one byte short");
        *p = sample_str(f->umin - 1, 'a');
        expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
        mem_free(*p);
    } else {
        at(s, f, "empty");
        *p = sample_str(0, 'a');
        expect_roundtrip(&cur);
        mem_free(*p);
    }
    if (f->required) {
        *p = NULL;
        assert_int_equal(proto_encode(&cur, &buf, NULL, 0), ERR_RANGE);
    }
    *p = save;
}

/* A bytes field that is not a filter (a task's output): any bytes up to the limit, NUL bytes
 * included, one byte over, and empty (absent). */
static void sweep_bytes(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    uint8_t **p = (uint8_t **)(base + f->off), *save = *p;
    uint32_t *n = (uint32_t *)(base + f->count_off), nsave = *n;
    uint8_t *big = mem_calloc(f->umax + 1, 1);
    for (uint64_t i = 0; i <= f->umax; i++)
        big[i] = (uint8_t)(i * 7);
    at(s, f, "bytes at the limit");
    *p = big;
    *n = (uint32_t)f->umax;
    expect_roundtrip(&cur);
    at(s, f, "one byte over");
    *n = (uint32_t)f->umax + 1;
    expect_reject(&cur, ERR_TOOBIG, PROTO_REJ_LIMIT);
    at(s, f, "empty");
    *n = 0;
    expect_roundtrip(&cur);
    mem_free(big);
    *p = save;
    *n = nsave;
}

/* A bytes field (the cache filter): a Bloom filter of the largest size, one byte over the
 * limit, bytes that are not a filter (the body check), and empty (absent). */
static void sweep_bin(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    if (strcmp(f->key, "cache_filter") != 0) {
        sweep_bytes(s, f, base);
        return;
    }
    uint8_t **p = (uint8_t **)(base + f->off), *save = *p;
    uint32_t *n = (uint32_t *)(base + f->count_off), nsave = *n;
    bloom_t *b = NULL;
    assert_int_equal(bloom_new((uint32_t)(f->umax - BLOOM_HEADER_BYTES) * 8, 4, &b), 0);
    bloom_add(b, "/data/x", 7);
    size_t len = 0;
    uint8_t *big = mem_calloc(f->umax + 1, 1);
    assert_int_equal(bloom_encode(b, big, f->umax + 1, &len), 0);
    assert_int_equal(len, f->umax);
    bloom_destroy(&b);
    at(s, f, "a filter at the limit");
    *p = big;
    *n = (uint32_t)len;
    expect_roundtrip(&cur);
    at(s, f, "one byte over");
    *n = (uint32_t)len + 1;
    expect_reject(&cur, ERR_TOOBIG, PROTO_REJ_LIMIT);
    at(s, f, "not a filter");
    *n = 20;
    memset(big, 0x5a, 20);
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "empty");
    *n = 0;
    expect_roundtrip(&cur);
    mem_free(big);
    *p = save;
    *n = nsave;
}

static char **strv(uint32_t n, size_t len0)
{
    char **v = mem_calloc(n ? n : 1, sizeof *v);
    for (uint32_t i = 0; i < n; i++)
        v[i] = sample_str(i == 0 ? len0 : 1 + i % 3, 'k');
    return v;
}

static void sweep_strs(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    char ***p = (char ***)(base + f->off), **save = *p;
    uint32_t *n = (uint32_t *)(base + f->count_off), nsave = *n;
    struct {
        const char *what;
        uint32_t count;
        size_t len0;
        int enc;
        proto_reject_t rej;
    } cases[] = {
        {"at max count", (uint32_t)f->umax, 3, 0, 0},
        {"one entry over", (uint32_t)f->umax + 1, 3, ERR_TOOBIG, PROTO_REJ_LIMIT},
        {"entry at max length", 1, f->item_max, 0, 0},
        {"entry one byte over", 1, f->item_max + 1, ERR_TOOBIG, PROTO_REJ_LIMIT},
        {"below min count", (uint32_t)f->umin - 1, 3, ERR_RANGE, PROTO_REJ_RANGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (i == 4 && f->umin == 0)
            continue;
        at(s, f, cases[i].what);
        *p = strv(cases[i].count, cases[i].len0);
        *n = cases[i].count;
        if (cases[i].enc == 0)
            expect_roundtrip(&cur);
        else
            expect_reject(&cur, cases[i].enc, cases[i].rej);
        strv_free(*p, *n);
    }
    *p = save;
    *n = nsave;
}

static void sweep_kvs(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    proto_kv_t **p = (proto_kv_t **)(base + f->off), *save = *p;
    uint32_t *n = (uint32_t *)(base + f->count_off), nsave = *n;
    struct {
        const char *what;
        uint32_t count;
        const char *key0; /* NULL: a key of key_len bytes */
        size_t key_len, value_len;
        int enc;
        proto_reject_t rej;
    } cases[] = {
        {"at max count", (uint32_t)f->umax, "K", 0, 5, 0, 0},
        {"one entry over", (uint32_t)f->umax + 1, "K", 0, 5, ERR_TOOBIG, PROTO_REJ_LIMIT},
        {"key at max length", 1, NULL, PROTO_MAX_ENV_KEY, 5, 0, 0},
        {"key one byte over", 1, NULL, PROTO_MAX_ENV_KEY + 1, 5, ERR_TOOBIG, PROTO_REJ_LIMIT},
        {"value at max length", 1, "K", 0, f->item_max, 0, 0},
        {"value one byte over", 1, "K", 0, f->item_max + 1, ERR_TOOBIG, PROTO_REJ_LIMIT},
        {"empty key", 1, "", 0, 1, ERR_RANGE, PROTO_REJ_RANGE},
        {"key with =", 1, "A=B", 0, 1, ERR_RANGE, PROTO_REJ_RANGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        at(s, f, cases[i].what);
        uint32_t cnt = cases[i].count;
        proto_kv_t *v = mem_calloc(cnt, sizeof *v);
        for (uint32_t j = 0; j < cnt; j++) {
            char k[32];
            snprintf(k, sizeof k, "K%u", j);
            v[j].key = j > 0                   ? mem_strdup(k)
                       : cases[i].key0 != NULL ? mem_strdup(cases[i].key0)
                                               : sample_str(cases[i].key_len, 'A');
            v[j].value = sample_str(j == 0 ? cases[i].value_len : 2, 'v');
        }
        *p = v;
        *n = cnt;
        if (cases[i].enc == 0)
            expect_roundtrip(&cur);
        else
            expect_reject(&cur, cases[i].enc, cases[i].rej);
        for (uint32_t j = 0; j < cnt; j++) {
            mem_free(v[j].key);
            mem_free(v[j].value);
        }
        mem_free(v);
    }
    *p = save;
    *n = nsave;
}

static void sweep_structs(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    unsigned char **p = (unsigned char **)(base + f->off), *save = *p;
    uint32_t *n = (uint32_t *)(base + f->count_off), nsave = *n;
    const proto__schema_t *sub = f->sub;
    uint32_t counts[] = {(uint32_t)f->umax, (uint32_t)f->umax + 1, 1};
    for (size_t i = 0; i < 3; i++) {
        uint32_t cnt = counts[i];
        unsigned char *v = mem_calloc(cnt, sub->size);
        for (uint32_t j = 0; j < cnt; j++)
            fill_elem(sub, v + (size_t)j * sub->size, j);
        *p = v;
        *n = cnt;
        if (i == 0) {
            at(s, f, "at max count");
            expect_roundtrip(&cur);
        } else if (i == 1) {
            at(s, f, "one entry over");
            expect_reject(&cur, ERR_TOOBIG, PROTO_REJ_LIMIT);
        } else {
            sweep(sub, v); /* every field of one element at its bounds */
        }
        for (uint32_t j = 0; j < cnt; j++)
            proto__body_free(sub, v + (size_t)j * sub->size);
        mem_free(v);
    }
    *p = save;
    *n = nsave;
}

static void sweep_matrix(const proto__schema_t *s, const proto__field_t *f, unsigned char *base)
{
    proto_matrix_t *m = (proto_matrix_t *)(base + f->off), save = *m;
    at(s, f, "16x16");
    sample_matrix(m, PROTO_MAX_MATRIX_DIM, PROTO_MAX_MATRIX_DIM, PROTO_MAX_TIME_MS);
    expect_roundtrip(&cur);
    at(s, f, "1x1 at time 0");
    sample_matrix(m, 1, 1, 0);
    expect_roundtrip(&cur);
    at(s, f, "absent");
    memset(m, 0, sizeof *m);
    expect_roundtrip(&cur);
    at(s, f, "0x3");
    sample_matrix(m, 1, 3, 5);
    m->ncpu = 0;
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "cpu bounds not increasing");
    sample_matrix(m, 3, 3, 5);
    m->cpu_bounds[2] = m->cpu_bounds[1];
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "memory bound 0");
    sample_matrix(m, 3, 3, 5);
    m->mem_bounds_mb[0] = 0;
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "cpu bound NaN");
    sample_matrix(m, 3, 3, 5);
    m->cpu_bounds[1] = NAN;
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    at(s, f, "negative timestamp");
    sample_matrix(m, 3, 3, -1);
    expect_reject(&cur, ERR_RANGE, PROTO_REJ_RANGE);
    *m = save;
}

static void sweep(const proto__schema_t *s, unsigned char *base)
{
    for (uint32_t i = 0; i < s->nfields; i++) {
        const proto__field_t *f = &s->fields[i];
        switch (f->kind) {
        case PROTO__BOOL:
            at(s, f, "true/false");
            *(bool *)(base + f->off) = !*(bool *)(base + f->off);
            expect_roundtrip(&cur);
            *(bool *)(base + f->off) = !*(bool *)(base + f->off);
            expect_roundtrip(&cur);
            break;
        case PROTO__U32:
        case PROTO__U64:
            sweep_uint(s, f, base);
            break;
        case PROTO__I32:
        case PROTO__I64:
            sweep_int(s, f, base);
            break;
        case PROTO__F64:
            sweep_f64(s, f, base);
            break;
        case PROTO__STR:
            sweep_str(s, f, base);
            break;
        case PROTO__STRS:
            sweep_strs(s, f, base);
            break;
        case PROTO__KVS:
            sweep_kvs(s, f, base);
            break;
        case PROTO__STRUCTS:
            sweep_structs(s, f, base);
            break;
        case PROTO__MATRIX:
            sweep_matrix(s, f, base);
            break;
        case PROTO__BIN:
            sweep_bin(s, f, base);
            break;
        }
    }
}

static void test_every_field_at_its_bounds(void **state)
{
    for (size_t i = 0; i < NTYPES; i++) {
        sample_msg(&cur, all_types[i], SAMPLE_TYPICAL);
        if (cur.type == PROTO_VIEW_SNAPSHOT) { /* part < parts holds across the sweep */
            cur.view_snapshot.part = 0;
            cur.view_snapshot.parts = PROTO_MAX_VIEW_PARTS;
        }
        where = "base";
        expect_roundtrip(&cur);
        sweep(proto__schema_of(cur.type), (unsigned char *)&cur + PROTO__BODY_OFF);
        expect_roundtrip(&cur); /* the sweep restored every field */
        proto_msg_close(&cur);
    }
    assert_int_equal(stats.decoded_total + stats.rejected_total, stats.calls);
    print_message("sweep: %llu decodes, %llu rejected\n", (unsigned long long)stats.calls,
                  (unsigned long long)stats.rejected_total);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_at_its_bounds),
    };
    return cmocka_run_group_tests_name("proto_roundtrip_bounds", tests, setup, teardown);
}
