/* Defensive decoding: hand-made msgpack that a well-behaved encoder never produces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/proto.h"
#include "proto/schema.h"
#include "sample.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static msgpack_sbuffer sb;
static msgpack_packer pk;
static proto_stats_t stats;
static char err[256];

static int setup(void **state)
{
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    proto_stats_init(&stats);
    return 0;
}

static int teardown(void **state)
{
    msgpack_sbuffer_destroy(&sb);
    return 0;
}

/* Starts [1, type, 7, {nfields...}] in sb. */
static void begin(uint64_t type, uint32_t nfields)
{
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint32(&pk, PROTO_VERSION);
    msgpack_pack_uint64(&pk, type);
    msgpack_pack_uint32(&pk, 7);
    msgpack_pack_map(&pk, nfields);
}

static void str(const char *s)
{
    msgpack_pack_str_with_body(&pk, s, strlen(s));
}

static void kv(const char *k, const char *v)
{
    str(k);
    str(v);
}

/* Decodes sb; returns the reason (PROTO_REJ_COUNT when accepted, message closed). */
static proto_reject_t decode_sb(proto_msg_t *out)
{
    proto_msg_t local;
    proto_msg_t *m = out != NULL ? out : &local;
    proto_reject_t why = PROTO_REJ_COUNT;
    int rc = proto_decode_ex(sb.data, sb.size, m, &stats, &why, err, sizeof err);
    if (rc == 0 && out == NULL)
        proto_msg_close(m);
    return rc == 0 ? PROTO_REJ_COUNT : why;
}

static proto_reject_t decode_bytes(const void *p, size_t n, int expect_code)
{
    proto_msg_t m;
    proto_reject_t why = PROTO_REJ_COUNT;
    int rc = proto_decode_ex(p, n, &m, &stats, &why, err, sizeof err);
    assert_int_equal(rc, expect_code);
    return why;
}

/* A valid TASK_UPGRADE body has job_id, task_id and attempt. */
static void upgrade_fields(void)
{
    kv("job_id", "j-1");
    kv("task_id", "t-1");
    str("attempt");
    msgpack_pack_uint32(&pk, 1);
}

static void test_huge_declared_sizes_rejected_before_unpacking(void **state)
{
    static const uint8_t bombs[][9] = {
        {0xdd, 0xff, 0xff, 0xff, 0xff}, /* array of 4G elements */
        {0xdf, 0xff, 0xff, 0xff, 0xff}, /* map of 4G pairs */
        {0xdd, 0x00, 0x40, 0x00, 0x00}, /* array of 4M: msgpack-c would reserve 128 MiB */
        {0xdb, 0xff, 0xff, 0xff, 0xff}, /* str of 4 GiB */
        {0xc6, 0xff, 0xff, 0xff, 0xff}, /* bin of 4 GiB */
        {0xc9, 0xff, 0xff, 0xff, 0xff}, /* ext of 4 GiB */
        {0x94, 0x01, 0x03, 0x00, 0xdf, 0xff, 0xff, 0xff, 0xff}, /* body map of 4G pairs */
    };
    for (size_t i = 0; i < sizeof bombs / sizeof bombs[0]; i++) {
        size_t n = bombs[i][0] == 0x94 ? 9 : 5;
        assert_int_equal(decode_bytes(bombs[i], n, ERR_PARSE), PROTO_REJ_MALFORMED);
    }
    assert_int_equal(stats.rejected_by_reason[PROTO_REJ_MALFORMED], 7);
    assert_int_equal(stats.rejected_by_type[0], 7);
}

/* Documents why the pre-scan exists: msgpack-c itself reserves memory for declared counts.
 * Then shows the decoder stays within a small address-space limit on the same input and on
 * the largest legal message. Needs a real malloc, so not under ASan. */
static void test_msgpack_reserves_and_the_decoder_does_not(void **state)
{
    if (UNDER_ASAN)
        skip();
    static const char map4m[5] = {(char)0xdf, 0, 0x40, 0, 0};
    msgpack_zone z;
    assert_true(msgpack_zone_init(&z, MSGPACK_ZONE_CHUNK_SIZE));
    size_t before = mallinfo2().hblkhd, off = 0;
    msgpack_object o;
    (void)msgpack_unpack(map4m, sizeof map4m, &off, &z, &o);
    size_t reserved = mallinfo2().hblkhd - before;
    msgpack_zone_destroy(&z);
    assert_true(reserved >= (size_t)(4u << 20) * sizeof(msgpack_object_kv));

    /* The largest message the pre-scan lets through: PROTO_MAX_OBJECTS objects. */
    size_t big_len = 5 + PROTO_MAX_OBJECTS - 1;
    uint8_t *big = malloc(big_len);
    big[0] = 0xdd;
    uint32_t n = PROTO_MAX_OBJECTS - 1;
    big[1] = (uint8_t)(n >> 24), big[2] = (uint8_t)(n >> 16), big[3] = (uint8_t)(n >> 8);
    big[4] = (uint8_t)n;
    memset(big + 5, 0xc0, big_len - 5);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        long pages = 0, page = sysconf(_SC_PAGESIZE);
        FILE *f = fopen("/proc/self/statm", "r");
        if (f == NULL || fscanf(f, "%ld", &pages) != 1)
            _exit(2);
        fclose(f);
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)page + (64u << 20);
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(3);
        proto_msg_t m;
        if (proto_decode(map4m, sizeof map4m, &m, NULL, NULL, 0) != ERR_PARSE)
            _exit(4);
        /* An array is no envelope, but it has to be unpacked to find that out. */
        if (proto_decode(big, big_len, &m, NULL, NULL, 0) != ERR_PARSE)
            _exit(5);
        big[4]++; /* one object more */
        if (proto_decode(big, big_len + 1, &m, NULL, NULL, 0) != ERR_PARSE)
            _exit(6);
        /* Control: msgpack-c alone runs out of memory under the same limit. */
        msgpack_zone zc;
        msgpack_zone_init(&zc, MSGPACK_ZONE_CHUNK_SIZE);
        size_t o2 = 0;
        int r = msgpack_unpack(map4m, sizeof map4m, &o2, &zc, &o);
        _exit(r == MSGPACK_UNPACK_NOMEM_ERROR ? 0 : 7);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    free(big);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_structure_limits(void **state)
{
    /* Nine nested arrays around the body: deeper than PROTO_MAX_DEPTH. */
    msgpack_sbuffer_clear(&sb);
    for (int i = 0; i < 9; i++)
        msgpack_pack_array(&pk, 1);
    msgpack_pack_nil(&pk);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_STRUCTURE);
    /* Eight levels are fine structurally (then rejected as no envelope). */
    msgpack_sbuffer_clear(&sb);
    for (int i = 0; i < 8; i++)
        msgpack_pack_array(&pk, 1);
    msgpack_pack_nil(&pk);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_ENVELOPE);
    /* Too many objects, all present. */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, PROTO_MAX_OBJECTS);
    for (uint32_t i = 0; i < PROTO_MAX_OBJECTS; i++)
        msgpack_pack_nil(&pk);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_STRUCTURE);
    /* Over the size cap, and empty. */
    uint8_t *big = calloc(PROTO_MAX_MSG_BYTES + 1, 1);
    assert_int_equal(decode_bytes(big, PROTO_MAX_MSG_BYTES + 1, ERR_TOOBIG), PROTO_REJ_SIZE);
    free(big);
    assert_int_equal(decode_bytes("", 0, ERR_TOOBIG), PROTO_REJ_SIZE);
    assert_int_equal(decode_bytes(NULL, 10, ERR_TOOBIG), PROTO_REJ_SIZE);
    static const uint8_t c1 = 0xc1; /* never used in msgpack */
    assert_int_equal(decode_bytes(&c1, 1, ERR_PARSE), PROTO_REJ_MALFORMED);
}

static void test_envelope(void **state)
{
    begin(PROTO_TASK_UPGRADE, 3);
    upgrade_fields();
    assert_int_equal(decode_sb(NULL), PROTO_REJ_COUNT);
    /* Every proper prefix is truncated; one more byte is trailing. */
    for (size_t n = 1; n < sb.size; n++)
        assert_int_equal(decode_bytes(sb.data, n, ERR_PARSE), PROTO_REJ_MALFORMED);
    msgpack_pack_nil(&pk);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_TRAILING);

    struct {
        uint64_t version, type;
        int neg_req;
        proto_reject_t why;
        int code;
    } cases[] = {
        {2, PROTO_TASK_UPGRADE, 0, PROTO_REJ_VERSION, ERR_VERSION},
        {0, PROTO_TASK_UPGRADE, 0, PROTO_REJ_VERSION, ERR_VERSION},
        {1, 0, 0, PROTO_REJ_UNKNOWN_TYPE, ERR_UNKNOWN_TYPE},
        {1, PROTO_TYPE_LIMIT, 0, PROTO_REJ_UNKNOWN_TYPE, ERR_UNKNOWN_TYPE},
        {1, (1ull << 32) + PROTO_TASK_UPGRADE, 0, PROTO_REJ_UNKNOWN_TYPE, ERR_UNKNOWN_TYPE},
        {1, PROTO_TASK_UPGRADE, 1, PROTO_REJ_ENVELOPE, ERR_PARSE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        msgpack_sbuffer_clear(&sb);
        msgpack_pack_array(&pk, 4);
        msgpack_pack_uint64(&pk, cases[i].version);
        msgpack_pack_uint64(&pk, cases[i].type);
        msgpack_pack_int64(&pk, cases[i].neg_req ? -1 : 1);
        msgpack_pack_map(&pk, 3);
        upgrade_fields();
        proto_msg_t m;
        proto_reject_t why;
        assert_int_equal(proto_decode_ex(sb.data, sb.size, &m, &stats, &why, err, sizeof err),
                         cases[i].code);
        assert_int_equal(why, cases[i].why);
    }
    assert_int_equal(stats.rejected_by_reason[PROTO_REJ_UNKNOWN_TYPE], 3);
    /* Envelope shapes: a map, three elements, a negative version, a body that is an array. */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_map(&pk, 0);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_ENVELOPE);
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, PROTO_TASK_UPGRADE);
    msgpack_pack_map(&pk, 0);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_ENVELOPE);
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int32(&pk, -1);
    msgpack_pack_uint32(&pk, PROTO_TASK_UPGRADE);
    msgpack_pack_uint32(&pk, 0);
    msgpack_pack_map(&pk, 0);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_ENVELOPE);
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, PROTO_TASK_UPGRADE);
    msgpack_pack_uint32(&pk, 0);
    msgpack_pack_array(&pk, 0);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_ENVELOPE);
}

static void test_fields(void **state)
{
    proto_msg_t m;
    /* Unknown fields, of any shape, are ignored. */
    begin(PROTO_TASK_UPGRADE, 5);
    str("from_the_future");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_map(&pk, 1);
    kv("a", "b");
    msgpack_pack_bin_with_body(&pk, "xy", 2);
    upgrade_fields();
    kv("attempt2", "not me");
    assert_int_equal(decode_sb(&m), PROTO_REJ_COUNT);
    assert_string_equal(m.task_upgrade.job_id, "j-1");
    assert_int_equal(m.task_upgrade.attempt, 1);
    assert_int_equal(m.req_id, 7);
    proto_msg_close(&m);

    /* A field twice. */
    begin(PROTO_TASK_UPGRADE, 4);
    upgrade_fields();
    kv("job_id", "j-2");
    assert_int_equal(decode_sb(NULL), PROTO_REJ_DUPLICATE);
    /* A required field missing; keys match by length and bytes, not as C strings. */
    static const char *near[] = {"job_i", "job_idx", "JOB_ID"};
    for (int i = 0; i < 3; i++) {
        begin(PROTO_TASK_UPGRADE, 3);
        kv(near[i], "j-1");
        kv("task_id", "t-1");
        str("attempt");
        msgpack_pack_uint32(&pk, 1);
        assert_int_equal(decode_sb(NULL), PROTO_REJ_MISSING);
    }
    begin(PROTO_TASK_UPGRADE, 3);
    msgpack_pack_str_with_body(&pk, "job_id\0", 7);
    str("j-1");
    kv("task_id", "t-1");
    str("attempt");
    msgpack_pack_uint32(&pk, 1);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_MISSING);
    /* A key that is not a string. */
    begin(PROTO_TASK_UPGRADE, 4);
    upgrade_fields();
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, 1);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_FIELD_TYPE);
    /* Strings: NUL inside, bin instead of str. */
    begin(PROTO_TASK_UPGRADE, 3);
    str("job_id");
    msgpack_pack_str_with_body(&pk, "j\0-1", 4);
    kv("task_id", "t-1");
    str("attempt");
    msgpack_pack_uint32(&pk, 1);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_RANGE);
    begin(PROTO_TASK_UPGRADE, 3);
    str("job_id");
    msgpack_pack_bin_with_body(&pk, "j-1", 3);
    kv("task_id", "t-1");
    str("attempt");
    msgpack_pack_uint32(&pk, 1);
    assert_int_equal(decode_sb(NULL), PROTO_REJ_FIELD_TYPE);
}

/* Integers in any msgpack width and sign, range-checked; floats where numbers go. */
static void test_numbers(void **state)
{
    proto_msg_t m;
    /* attempt as int8 1 (a positive value in a signed encoding) is accepted */
    begin(PROTO_TASK_UPGRADE, 3);
    kv("job_id", "j-1");
    kv("task_id", "t-1");
    str("attempt");
    static const uint8_t int8_one[] = {0xd0, 0x01};
    msgpack_sbuffer_write(&sb, (const char *)int8_one, 2);
    assert_int_equal(decode_sb(&m), PROTO_REJ_COUNT);
    assert_int_equal(m.task_upgrade.attempt, 1);
    proto_msg_close(&m);
    /* uint64 encoding of a small value */
    begin(PROTO_TASK_UPGRADE, 3);
    kv("job_id", "j-1");
    kv("task_id", "t-1");
    str("attempt");
    static const uint8_t u64_five[] = {0xcf, 0, 0, 0, 0, 0, 0, 0, 5};
    msgpack_sbuffer_write(&sb, (const char *)u64_five, sizeof u64_five);
    assert_int_equal(decode_sb(&m), PROTO_REJ_COUNT);
    assert_int_equal(m.task_upgrade.attempt, 5);
    proto_msg_close(&m);
    /* negative, float, string, 2^32 for a u32 */
    for (int k = 0; k < 4; k++) {
        begin(PROTO_TASK_UPGRADE, 3);
        kv("job_id", "j-1");
        kv("task_id", "t-1");
        str("attempt");
        if (k == 0)
            msgpack_pack_int32(&pk, -1);
        else if (k == 1)
            msgpack_pack_double(&pk, 1.0);
        else if (k == 2)
            str("1");
        else
            msgpack_pack_uint64(&pk, 1ull << 32);
        assert_int_equal(decode_sb(NULL),
                         k == 0 || k == 3 ? PROTO_REJ_RANGE : PROTO_REJ_FIELD_TYPE);
    }
    /* Signed fields: exit_code -1 as negative fixint, int64 above INT64_MAX for a timestamp */
    for (int k = 0; k < 3; k++) {
        begin(PROTO_TASK_STATUS, 6);
        kv("job_id", "j-1");
        kv("task_id", "t-1");
        str("attempt");
        msgpack_pack_uint32(&pk, 0);
        kv("node", "pn-1");
        str("state");
        msgpack_pack_uint32(&pk, PROTO_TASK_SUCCEEDED);
        if (k == 0) {
            str("exit_code");
            msgpack_pack_int8(&pk, -1);
        } else if (k == 1) {
            str("ended_at_ms");
            msgpack_pack_uint64(&pk, UINT64_MAX);
        } else {
            str("exit_code");
            msgpack_pack_int64(&pk, INT64_MIN);
        }
        proto_reject_t why = decode_sb(&m);
        if (k == 0) {
            assert_int_equal(why, PROTO_REJ_COUNT);
            assert_int_equal(m.task_status.exit_code, -1);
            proto_msg_close(&m);
        } else {
            assert_int_equal(why, PROTO_REJ_RANGE);
        }
    }
    /* Doubles: an integer and a float32 are numbers too; a string is not. */
    for (int k = 0; k < 3; k++) {
        begin(PROTO_TASK_CREATE, 7);
        str("mem_mb");
        msgpack_pack_uint32(&pk, 64);
        kv("job_id", "j-1");
        kv("task_id", "t-1");
        str("attempt");
        msgpack_pack_uint32(&pk, 0);
        str("task_class");
        msgpack_pack_uint32(&pk, 0);
        str("argv");
        msgpack_pack_array(&pk, 1);
        str("/bin/true");
        str("cpu");
        if (k == 0)
            msgpack_pack_uint32(&pk, 2);
        else if (k == 1)
            msgpack_pack_float(&pk, 0.5f);
        else
            str("2");
        proto_reject_t why = decode_sb(&m);
        if (k < 2) {
            assert_int_equal(why, PROTO_REJ_COUNT);
            assert_true(m.task_create.cpu == (k == 0 ? 2.0 : 0.5));
            assert_string_equal(m.task_create.argv[0], "/bin/true");
            proto_msg_close(&m);
        } else {
            assert_int_equal(why, PROTO_REJ_FIELD_TYPE);
        }
    }
}

/* Matrix shapes the struct cannot even represent. */
static void test_matrix_wire(void **state)
{
    for (int k = 0; k < 4; k++) {
        begin(PROTO_TASK_STATUS, 6);
        kv("job_id", "j-1");
        kv("task_id", "t-1");
        str("attempt");
        msgpack_pack_uint32(&pk, 0);
        kv("node", "pn-1");
        str("state");
        msgpack_pack_uint32(&pk, 0);
        str("matrix");
        msgpack_pack_map(&pk, 3);
        uint32_t nc = k == 0 ? 17 : 2, nm = 2, ncells = k == 1 ? 3 : nc * nm;
        str("cpu");
        msgpack_pack_array(&pk, nc);
        for (uint32_t i = 0; i < nc; i++)
            msgpack_pack_double(&pk, 1.0 + i);
        str("mem");
        msgpack_pack_array(&pk, nm);
        for (uint32_t i = 0; i < nm; i++)
            msgpack_pack_uint32(&pk, 1024 * (i + 1));
        str(k == 3 ? "cellz" : "cells");
        msgpack_pack_array(&pk, ncells);
        for (uint32_t i = 0; i < ncells; i++) {
            if (k == 2 && i == 1)
                msgpack_pack_uint64(&pk, 1ull << 32);
            else
                msgpack_pack_uint32(&pk, i);
        }
        static const proto_reject_t want[] = {PROTO_REJ_LIMIT, PROTO_REJ_RANGE, PROTO_REJ_RANGE,
                                              PROTO_REJ_MISSING};
        assert_int_equal(decode_sb(NULL), want[k]);
    }
}

/* Every allocation of a decode failing in turn: ERR_NOMEM, counted, nothing leaked (ASan). */
static void test_decode_out_of_memory(void **state)
{
    static const proto_type_t types[] = {PROTO_VIEW_DELTA, PROTO_TASK_CREATE, PROTO_ADMIN_QUERY};
    proto_buf_t b;
    proto_buf_init(&b);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        proto_msg_t m;
        sample_msg(&m, types[t], SAMPLE_TYPICAL);
        assert_int_equal(proto_encode(&m, &b, NULL, 0), 0);
        proto_msg_close(&m);
        long k = 0;
        for (;; k++) {
            mem_fail_after(k);
            proto_reject_t why = PROTO_REJ_COUNT;
            memset(&m, 0xa5, sizeof m);
            int rc = proto_decode_ex(b.data, b.len, &m, &stats, &why, NULL, 0);
            mem_fail_reset();
            if (rc == 0)
                break;
            assert_int_equal(rc, ERR_NOMEM);
            assert_int_equal(why, PROTO_REJ_NOMEM);
            /* a rejected message is zeroed but for its envelope: nothing to free */
            proto_msg_t zero;
            memset(&zero, 0, sizeof zero);
            zero.type = types[t];
            zero.version = PROTO_VERSION;
            zero.req_id = 0xfeedfacecafebeefull;
            assert_memory_equal(&m, &zero, sizeof m);
        }
        assert_true(k > 3);
        assert_int_equal(stats.rejected_by_type[types[t]] >= (uint64_t)k, 1);
        proto_msg_close(&m);
    }
    proto_buf_close(&b);
    assert_int_equal(stats.rejected_total, stats.rejected_by_reason[PROTO_REJ_NOMEM]);
}

/* A server answers a request it cannot decode with an ERROR carrying its req_id. */
static void test_error_reply_to_a_bad_request(void **state)
{
    begin(PROTO_TASK_UPGRADE, 3);
    kv("job_id", "j-1");
    kv("task_id", "t-1");
    str("attempt");
    msgpack_pack_uint32(&pk, PROTO_MAX_ATTEMPT + 1);
    proto_msg_t req;
    memset(&req, 0x5a, sizeof req);
    int rc = proto_decode(sb.data, sb.size, &req, &stats, err, sizeof err);
    assert_int_equal(rc, ERR_RANGE);
    assert_int_equal(req.type, PROTO_TASK_UPGRADE);
    assert_int_equal(req.req_id, 7);
    assert_null(req.task_upgrade.job_id);
    assert_non_null(strstr(err, "attempt"));
    proto_msg_t e, d;
    proto_msg_error(&e, &req, rc, err, NULL);
    proto_msg_close(&req); /* harmless on a rejected message */
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(&e, &b, NULL, 0), 0);
    assert_int_equal(proto_decode(b.data, b.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.type, PROTO_ERROR);
    assert_int_equal(d.req_id, 7);
    assert_int_equal(d.error.in_reply_to, PROTO_TASK_UPGRADE);
    assert_int_equal(d.error.code, ERR_RANGE);
    assert_string_equal(d.error.text, err);
    proto_msg_close(&d);
    proto_buf_close(&b);
    /* Before the type is known, nothing of the envelope is kept. */
    static const uint8_t junk[] = {0x94, 0x01, 0x63, 0x07, 0x80};
    assert_int_equal(proto_decode(junk, sizeof junk, &req, NULL, NULL, 0), ERR_UNKNOWN_TYPE);
    assert_int_equal(req.type, PROTO_TYPE_NONE);
    assert_int_equal(req.req_id, 0);
}

static void test_describe(void **state)
{
    proto_msg_t m;
    sample_msg(&m, PROTO_TASK_STATUS, SAMPLE_TYPICAL);
    char line[512];
    size_t n = proto_describe(&m, line, sizeof line);
    assert_int_equal(n, strlen(line));
    assert_non_null(strstr(line, "TASK_STATUS req=18369614221190020847 job_id=\"j-000042\""));
    assert_non_null(strstr(line, " exit_code=-1 signal=9 "));
    assert_non_null(strstr(line, " matrix=6x7"));
    assert_non_null(strstr(line, "\"killed by signal 9 (preempted for a regular task...\""));
    /* truncation keeps the would-be length and a terminated prefix */
    char small[16];
    assert_int_equal(proto_describe(&m, small, sizeof small), n);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, line, sizeof small - 1);
    proto_msg_close(&m);
    /* control characters from a peer stay escaped on one line */
    sample_msg(&m, PROTO_TASK_CANCEL, SAMPLE_MINIMAL);
    m.task_cancel.reason = mem_strdup("a\nb\"");
    proto_describe(&m, line, sizeof line);
    assert_non_null(strstr(line, "reason=\"a\\x0ab\\x22\""));
    assert_null(strchr(line, '\n'));
    proto_msg_close(&m);
    proto_msg_init(&m, PROTO_TYPE_LIMIT);
    proto_describe(&m, line, sizeof line);
    char want[32];
    snprintf(want, sizeof want, "type %d?", (int)PROTO_TYPE_LIMIT);
    assert_string_equal(line, want);
}

/* proto_peek_type: what every encoded type says it is, without decoding; garbage is NONE. */
static void test_peek_type(void **state)
{
    (void)state;
    proto_buf_t b;
    proto_buf_init(&b);
    for (int t = 1; t < PROTO_TYPE_LIMIT; t++) {
        proto_msg_t m;
        sample_msg(&m, (proto_type_t)t, SAMPLE_TYPICAL);
        assert_int_equal(proto_encode(&m, &b, NULL, 0), 0);
        assert_int_equal(proto_peek_type(b.data, b.len), t);
        assert_int_equal(proto_peek_type(b.data, 3), PROTO_TYPE_NONE);
        proto_msg_close(&m);
    }
    proto_buf_close(&b);
    static const uint8_t bad[][4] = {
        {0x93, 0x01, 0x19, 0x00}, /* three elements */
        {0x94, 0xcc, 0x19, 0x00}, /* a version that is not a fixint */
        {0x94, 0x01, 0x7f, 0x00}, /* a type past the table */
        {0x94, 0x01, 0x00, 0x00}, /* type 0 */
        {0x94, 0x01, 0xa1, 0x41}, /* a string */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(proto_peek_type(bad[i], 4), PROTO_TYPE_NONE);
    static const uint8_t wide[] = {0x94, 0x01, 0xcc, 0x19};
    assert_int_equal(proto_peek_type(wide, sizeof wide), PROTO_TASK_OUTPUT_READ);
    assert_int_equal(proto_peek_type(NULL, 0), PROTO_TYPE_NONE);
}

static void test_stats_json(void **state)
{
    proto_stats_t st;
    proto_stats_init(&st);
    char out[1024];
    proto_stats_json(&st, out, sizeof out);
    assert_string_equal(out, "{\"calls\":0,\"bytes\":0,\"decoded\":0,\"rejected\":0,"
                             "\"rejected_by_reason\":{},\"by_type\":{}}");
    proto_msg_t m;
    begin(PROTO_TASK_UPGRADE, 3);
    upgrade_fields();
    assert_int_equal(proto_decode(sb.data, sb.size, &m, &st, NULL, 0), 0);
    proto_msg_close(&m);
    size_t good = sb.size;
    begin(PROTO_TASK_UPGRADE, 2); /* attempt missing */
    kv("job_id", "j-1");
    kv("task_id", "t-1");
    assert_int_equal(proto_decode(sb.data, sb.size, &m, &st, NULL, 0), ERR_PARSE);
    size_t bad = sb.size;
    assert_int_equal(proto_decode("\xc1", 1, &m, &st, NULL, 0), ERR_PARSE);
    size_t n = proto_stats_json(&st, out, sizeof out);
    assert_int_equal(n, strlen(out));
    char want[512];
    snprintf(want, sizeof want,
             "{\"calls\":3,\"bytes\":%zu,\"decoded\":1,\"rejected\":2,"
             "\"rejected_by_reason\":{\"malformed\":1,\"missing\":1},"
             "\"by_type\":{\"unknown\":{\"rejected\":1},"
             "\"TASK_UPGRADE\":{\"decoded\":1,\"rejected\":1}}}",
             good + bad + 1);
    assert_string_equal(out, want);
}

static void test_names(void **state)
{
    /* The decoder tracks fields seen in a 64-bit mask. */
    for (uint32_t t = 1; t < PROTO_TYPE_LIMIT; t++) {
        const proto__schema_t *s = proto__schema_of(t);
        assert_non_null(s);
        assert_true(s->nfields <= 64);
        for (uint32_t i = 0; i < s->nfields; i++)
            if (s->fields[i].sub != NULL)
                assert_true(s->fields[i].sub->nfields <= 64);
    }
    /* Fields out of table order decode too (the decoder tries the next field first). */
    begin(PROTO_TASK_UPGRADE, 3);
    str("attempt");
    msgpack_pack_uint32(&pk, 4);
    kv("task_id", "t-9");
    kv("job_id", "j-9");
    proto_msg_t m;
    assert_int_equal(decode_sb(&m), PROTO_REJ_COUNT);
    assert_string_equal(m.task_upgrade.job_id, "j-9");
    assert_string_equal(m.task_upgrade.task_id, "t-9");
    assert_int_equal(m.task_upgrade.attempt, 4);
    proto_msg_close(&m);

    assert_string_equal(proto_type_name(PROTO_HEARTBEAT), "HEARTBEAT");
    assert_null(proto_type_name(PROTO_TYPE_LIMIT));
    assert_true(proto_type_valid(PROTO_ERROR));
    assert_false(proto_type_valid(0));
    assert_string_equal(proto_task_state_name(PROTO_TASK_PREEMPTED), "preempted");
    assert_string_equal(proto_task_state_name(PROTO_TASK_STATE_COUNT), "?");
    assert_true(proto_task_state_terminal(PROTO_TASK_LOST));
    assert_false(proto_task_state_terminal(PROTO_TASK_STAGING));
    assert_string_equal(proto_reject_name(PROTO_REJ_TRAILING), "trailing");
    assert_string_equal(proto_node_state_name(PROTO_NODE_DRAINING), "draining");
    assert_string_equal(proto_job_state_name(PROTO_JOB_CANCELLED), "cancelled");
    assert_string_equal(proto_task_class_name(PROTO_CLASS_OPPORTUNISTIC), "opportunistic");
    assert_string_equal(proto_verdict_name(PROTO_VERDICT_REJECTED), "rejected");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_huge_declared_sizes_rejected_before_unpacking, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_msgpack_reserves_and_the_decoder_does_not, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_structure_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_envelope, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matrix_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decode_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_reply_to_a_bad_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peek_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
    };
    return cmocka_run_group_tests_name("proto_decode", tests, NULL, NULL);
}
