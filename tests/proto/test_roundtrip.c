/* Round trips of every message type, and every field of every type at its bounds and just
 * past them (the encoder refuses, and a message packed without checks is rejected by the
 * decoder with the expected reason). */
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

static const proto_type_t all_types[] = {
#define T_(e, value, name, member, type) e,
    PROTO_TYPES(T_)
#undef T_
};
#define NTYPES (sizeof all_types / sizeof all_types[0])

static proto_buf_t buf;
static proto_stats_t stats;
static const char *where; /* the field under test, for failure messages */

static int setup(void **state)
{
    proto_buf_init(&buf);
    proto_stats_init(&stats);
    return 0;
}

static int teardown(void **state)
{
    proto_buf_close(&buf);
    return 0;
}

/* Encodes, decodes, compares, and checks re-encoding gives the same bytes. */
static void expect_roundtrip(const proto_msg_t *m)
{
    char err[256] = "";
    int rc = proto_encode(m, &buf, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s: encode: %s (%s)", proto_type_name(m->type), where, err_name(rc), err);
    proto_msg_t d;
    rc = proto_decode(buf.data, buf.len, &d, &stats, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s: decode: %s (%s)", proto_type_name(m->type), where, err_name(rc), err);
    assert_int_equal(d.version, PROTO_VERSION);
    if (!sample_msg_equal(m, &d, err, sizeof err))
        fail_msg("%s: %s: round trip: %s", proto_type_name(m->type), where, err);
    proto_buf_t again;
    proto_buf_init(&again);
    assert_int_equal(proto_encode(&d, &again, err, sizeof err), 0);
    assert_int_equal(again.len, buf.len);
    assert_memory_equal(again.data, buf.data, buf.len);
    proto_buf_close(&again);
    proto_msg_close(&d);
}

/* The encoder refuses with enc_code; packed anyway, the decoder rejects with `reason`. */
static void expect_reject(const proto_msg_t *m, int enc_code, proto_reject_t reason)
{
    char err[256] = "";
    int rc = proto_encode(m, &buf, err, sizeof err);
    if (rc != enc_code)
        fail_msg("%s: %s: encode gave %s, expected %s (%s)", proto_type_name(m->type), where,
                 err_name(rc), err_name(enc_code), err);
    assert_int_equal(proto__encode_unchecked(m, &buf), 0);
    proto_msg_t d;
    proto_reject_t got = PROTO_REJ_COUNT;
    uint64_t before = stats.rejected_by_reason[reason];
    /* Past the envelope the type is known, and the rejection is counted under it. */
    uint32_t t = reason > PROTO_REJ_UNKNOWN_TYPE ? m->type : 0;
    uint64_t before_type = stats.rejected_by_type[t];
    rc = proto_decode_ex(buf.data, buf.len, &d, &stats, &got, err, sizeof err);
    if (rc == 0) {
        proto_msg_close(&d);
        fail_msg("%s: %s: decoder accepted a bad message", proto_type_name(m->type), where);
    }
    if (got != reason)
        fail_msg("%s: %s: decoder said %s (%s), expected %s", proto_type_name(m->type), where,
                 proto_reject_name(got), err, proto_reject_name(reason));
    assert_int_equal(stats.rejected_by_reason[reason], before + 1);
    assert_int_equal(stats.rejected_by_type[t], before_type + 1);
}

static void test_every_type_typical_and_minimal(void **state)
{
    for (size_t i = 0; i < NTYPES; i++)
        for (int v = SAMPLE_TYPICAL; v <= SAMPLE_MINIMAL; v++) {
            proto_msg_t m;
            sample_msg(&m, all_types[i], v);
            where = v == SAMPLE_TYPICAL ? "typical" : "minimal";
            expect_roundtrip(&m);
            proto_msg_close(&m);
        }
    assert_int_equal(stats.decoded_total, 2 * NTYPES);
    for (size_t i = 0; i < NTYPES; i++)
        assert_int_equal(stats.decoded_by_type[all_types[i]], 2);
}

/* Spot checks that decoding puts values in the right members (the generic comparison would
 * not notice two members swapped consistently by a wrong table). */
static void test_values_land_in_their_fields(void **state)
{
    proto_msg_t m, d;
    sample_msg(&m, PROTO_HEARTBEAT, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.type, PROTO_HEARTBEAT);
    assert_int_equal(d.req_id, 0xfeedfacecafebeefull);
    assert_string_equal(d.heartbeat.name, "pn-3");
    assert_string_equal(d.heartbeat.rack, "rack-1");
    assert_int_equal(d.heartbeat.seq, 123456);
    assert_int_equal(d.heartbeat.running_regular, 2);
    assert_int_equal(d.heartbeat.running_opportunistic, 1);
    assert_int_equal(d.heartbeat.queued_regular, 5);
    assert_int_equal(d.heartbeat.queued_opportunistic, 9);
    assert_true(d.heartbeat.used_cpu == 2.5);
    assert_int_equal(d.heartbeat.matrix.ncpu, 8);
    assert_int_equal(d.heartbeat.matrix.nmem, 8);
    assert_int_equal(proto_matrix_cell(&d.heartbeat.matrix, 1, 2), 10 * 137);
    assert_int_equal(proto_matrix_cell(&d.heartbeat.matrix, 0, 4), PROTO_WAIT_NEVER);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_TASK_CREATE, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_create.argc, 4);
    assert_string_equal(d.task_create.argv[3], "exec ./extract.sh --part 0 > out.txt");
    assert_int_equal(d.task_create.nenv, 2);
    assert_string_equal(d.task_create.env[1].key, "PADDOCK_TASK");
    assert_string_equal(d.task_create.env[1].value, "");
    assert_int_equal(d.task_create.task_class, PROTO_CLASS_OPPORTUNISTIC);
    assert_int_equal(d.task_create.files[0].bytes, 2048);
    proto_msg_close(&m);
    proto_msg_close(&d);

    sample_msg(&m, PROTO_TASK_STATUS, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_status.exit_code, -1);
    assert_int_equal(d.task_status.signal, 9);
    assert_int_equal(d.task_status.state, PROTO_TASK_FAILED);
    assert_int_equal(d.task_status.ended_at_ms - d.task_status.started_at_ms, 6100);
    proto_msg_close(&d);
    proto_msg_close(&m);

    /* The arbiter's fields (issue 12): many are adjacent integers of one kind, where a
     * swapped table entry would still round-trip. */
    sample_msg(&m, PROTO_JOB_REGISTER, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.job_register.work_ms, 3600000);
    assert_int_equal(d.job_register.work_sd_ms, 240000);
    assert_int_equal(d.job_register.path_ms, 420000);
    assert_int_equal(d.job_register.path_sd_ms, 30000);
    assert_int_equal(d.job_register.width, 64);
    assert_true(d.job_register.has_profile);
    assert_true(d.job_register.best_effort);
    assert_true(d.job_register.weight == 2.5);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_JOB_REGISTER_REPLY, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.job_register_reply.code, ERR_ADMISSION);
    assert_int_equal(d.job_register_reply.eff_p50_ms, 1080000);
    assert_int_equal(d.job_register_reply.eff_ms, 1260000);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_TOKEN_GRANT, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.token_grant.granted, 100);
    assert_int_equal(d.token_grant.minimum, 60);
    assert_true(d.token_grant.token_cpu == 2.0);
    assert_int_equal(d.token_grant.token_mem_mb, 8192);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_LEASE_RENEW, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.lease_renew.deadline_ms, 900000);
    assert_int_equal(d.lease_renew.eta_ms, 720000);
    assert_int_equal(d.lease_renew.eta_p95_ms, 840000);
    assert_int_equal(d.lease_renew.demand, 13);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_LEASE_ACK, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.lease_ack.granted, 100);
    assert_int_equal(d.lease_ack.minimum, 80);
    assert_true(d.lease_ack.token_cpu == 0.5);
    assert_int_equal(d.lease_ack.token_mem_mb, 2048);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_TASK_UPGRADE, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_upgrade.attempt, 1);
    assert_int_equal(d.task_upgrade.task_class, PROTO_CLASS_OPPORTUNISTIC);
    assert_int_equal(d.task_upgrade.grace_ms, 30000);
    proto_msg_close(&d);
    proto_msg_close(&m);

    /* An older JM sends neither: the PN reads an upgrade to regular with no grace. */
    sample_msg(&m, PROTO_TASK_UPGRADE, SAMPLE_MINIMAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_upgrade.task_class, PROTO_CLASS_REGULAR);
    assert_int_equal(d.task_upgrade.grace_ms, 0);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_ERROR, SAMPLE_MINIMAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.error.code, INT32_MIN);
    assert_string_equal(d.error.text, "");
    assert_null(d.error.leader_endpoint);
    proto_msg_close(&d);
    proto_msg_close(&m);
}

/* ---------------------------------------------------------------------------------------- */
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

static void strv_free(char **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        mem_free(v[i]);
    mem_free(v);
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

/* The contract values themselves, not just what the table says. */
static void test_contract_limits(void **state)
{
    const proto__schema_t *hb = proto__schema_of(PROTO_HEARTBEAT);
    assert_non_null(hb);
    assert_int_equal(PROTO_MAX_MSG_BYTES, 4u << 20);
    assert_int_equal(PROTO_MAX_MATRIX_DIM, 16);
    proto_msg_t m;
    sample_msg(&m, PROTO_TASK_STATUS, SAMPLE_TYPICAL);
    where = "exit code -1 and 255";
    m.task_status.exit_code = 255;
    expect_roundtrip(&m);
    m.task_status.exit_code = -2;
    expect_reject(&m, ERR_RANGE, PROTO_REJ_RANGE);
    m.task_status.exit_code = 0;
    where = "state lost is the last";
    m.task_status.state = PROTO_TASK_LOST;
    expect_roundtrip(&m);
    m.task_status.state = PROTO_TASK_LOST + 1;
    expect_reject(&m, ERR_RANGE, PROTO_REJ_RANGE);
    proto_msg_close(&m);

    where = "node name of 255 and 256 bytes";
    sample_msg(&m, PROTO_HEARTBEAT, SAMPLE_TYPICAL);
    mem_free(m.heartbeat.name);
    m.heartbeat.name = sample_str(255, 'n');
    expect_roundtrip(&m);
    mem_free(m.heartbeat.name);
    m.heartbeat.name = sample_str(256, 'n');
    expect_reject(&m, ERR_TOOBIG, PROTO_REJ_LIMIT);
    proto_msg_close(&m);

    where = "req_id UINT64_MAX";
    sample_msg(&m, PROTO_TOKEN_GRANT, SAMPLE_MINIMAL);
    m.req_id = UINT64_MAX;
    expect_roundtrip(&m);
    proto_msg_close(&m);
}

/* A message within every per-field limit can still exceed the total size. */
static void test_message_over_total_size(void **state)
{
    proto_msg_t m;
    sample_msg(&m, PROTO_TASK_CREATE, SAMPLE_MINIMAL);
    strv_free(m.task_create.argv, m.task_create.argc);
    m.task_create.argc = PROTO_MAX_ARGV;
    m.task_create.argv = mem_calloc(PROTO_MAX_ARGV, sizeof(char *));
    for (uint32_t i = 0; i < PROTO_MAX_ARGV; i++)
        m.task_create.argv[i] = sample_str(PROTO_MAX_ARG, 'x');
    where = "argv 1024 x 4096 bytes";
    expect_reject(&m, ERR_TOOBIG, PROTO_REJ_SIZE);
    assert_true(buf.len > PROTO_MAX_MSG_BYTES);
    proto_msg_close(&m);
}

/* The limits fit together: the largest view part and delta the limits allow (every node
 * with 255-byte strings and a 16x16 matrix) stay within PROTO_MAX_MSG_BYTES and
 * PROTO_MAX_OBJECTS, as limits.h promises. */
static proto_view_node_t *largest_nodes(void)
{
    proto_view_node_t *v = mem_calloc(PROTO_MAX_VIEW_NODES, sizeof *v);
    for (uint32_t i = 0; i < PROTO_MAX_VIEW_NODES; i++) {
        sample_view_node(&v[i], i, 1);
        mem_free(v[i].name);
        mem_free(v[i].rack);
        mem_free(v[i].endpoint);
        v[i].name = sample_str(PROTO_MAX_NAME, 'n');
        v[i].rack = sample_str(PROTO_MAX_NAME, 'r');
        v[i].endpoint = sample_str(PROTO_MAX_ENDPOINT, 'e');
        v[i].cpu = v[i].used_cpu = 1.0 / 3; /* not representable as float32: 9 bytes */
        v[i].boot_id = v[i].seq = v[i].failures = v[i].successes = UINT64_MAX;
        sample_matrix(&v[i].matrix, PROTO_MAX_MATRIX_DIM, PROTO_MAX_MATRIX_DIM, 1);
        for (uint32_t c = 0; c < PROTO_MAX_MATRIX_CELLS; c++)
            v[i].matrix.cells_ms[c] = UINT32_MAX - c; /* 5 bytes each */
    }
    return v;
}

static void test_largest_view_messages_fit(void **state)
{
    proto_msg_t m;
    sample_msg(&m, PROTO_VIEW_SNAPSHOT, SAMPLE_MINIMAL);
    m.view_snapshot.nodes = largest_nodes();
    m.view_snapshot.nnodes = PROTO_MAX_VIEW_NODES;
    where = "largest snapshot part";
    expect_roundtrip(&m);
    size_t snapshot_bytes = buf.len;
    proto_msg_close(&m);

    sample_msg(&m, PROTO_VIEW_DELTA, SAMPLE_MINIMAL);
    m.view_delta.changed = largest_nodes();
    m.view_delta.nchanged = PROTO_MAX_VIEW_NODES;
    m.view_delta.removed = mem_calloc(PROTO_MAX_VIEW_REMOVED, sizeof(char *));
    m.view_delta.nremoved = PROTO_MAX_VIEW_REMOVED;
    for (uint32_t i = 0; i < PROTO_MAX_VIEW_REMOVED; i++)
        m.view_delta.removed[i] = sample_str(PROTO_MAX_NAME, 'g');
    where = "largest delta";
    expect_roundtrip(&m);
    print_message("largest snapshot part %zu bytes, largest delta %zu bytes (limit %u)\n",
                  snapshot_bytes, buf.len, PROTO_MAX_MSG_BYTES);
    assert_true(buf.len <= PROTO_MAX_MSG_BYTES);
    proto_msg_close(&m);
}

static void test_encode_refuses_unknown_type(void **state)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TYPE_LIMIT);
    char err[128];
    assert_int_equal(proto_encode(&m, &buf, err, sizeof err), ERR_UNKNOWN_TYPE);
    proto_msg_init(&m, PROTO_TYPE_NONE);
    assert_int_equal(proto_encode(&m, &buf, err, sizeof err), ERR_UNKNOWN_TYPE);
}

/* Encoding under allocation failure fails cleanly (ERR_NOMEM), then succeeds. */
static void test_encode_out_of_memory(void **state)
{
    proto_msg_t m;
    sample_msg(&m, PROTO_VIEW_SNAPSHOT, SAMPLE_TYPICAL);
    proto_buf_t b;
    proto_buf_init(&b);
    mem_fail_after(0);
    assert_int_equal(proto_encode(&m, &b, NULL, 0), ERR_NOMEM);
    mem_fail_reset();
    assert_int_equal(proto_encode(&m, &b, NULL, 0), 0);
    proto_buf_close(&b);
    proto_msg_close(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_typical_and_minimal),
        cmocka_unit_test(test_values_land_in_their_fields),
        cmocka_unit_test(test_every_field_at_its_bounds),
        cmocka_unit_test(test_contract_limits),
        cmocka_unit_test(test_message_over_total_size),
        cmocka_unit_test(test_largest_view_messages_fit),
        cmocka_unit_test(test_encode_refuses_unknown_type),
        cmocka_unit_test(test_encode_out_of_memory),
    };
    return cmocka_run_group_tests_name("proto_roundtrip", tests, setup, teardown);
}
