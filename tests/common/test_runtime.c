/* The small runtime pieces: log lines, clocks, ids, vec, map, heap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/heap.h"
#include "common/id.h"
#include "common/log.h"
#include "common/map.h"
#include "common/mem.h"
#include "common/vec.h"

/* Runs fn with log output captured through a pipe; returns what was written. */
static void capture(void (*fn)(void), char *out, size_t cap)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    log_set_fd(p[1]);
    fn();
    log_set_fd(2);
    close(p[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < cap && (n = read(p[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(p[0]);
}

static void log_some(void)
{
    log_debug("hidden %d", 1);
    log_info("hello %s", "world");
    log_warn("careful\n");
    log_error("bad %d", 42);
}

static void test_log_terminal_and_journal(void **state)
{
    (void)state;
    char buf[4096];
    log_init("paddock-test");
    log_set_journal(false);
    log_set_level(LOG_LEVEL_INFO);
    capture(log_some, buf, sizeof buf);
    /* "2026-11-21T05:55:12.123Z paddock-test[PID] info: hello world\n" */
    char want[128];
    snprintf(want, sizeof want, " paddock-test[%ld] info: hello world\n", (long)getpid());
    char *line = strstr(buf, want);
    assert_non_null(line);
    assert_true(line - buf == 24);
    assert_true(buf[4] == '-' && buf[10] == 'T' && buf[23] == 'Z');
    assert_null(strstr(buf, "hidden"));
    assert_non_null(strstr(buf, "] warn: careful\n"));
    assert_null(strstr(buf, "careful\n\n"));
    assert_non_null(strstr(buf, "] error: bad 42\n"));

    log_set_journal(true);
    log_set_level(LOG_LEVEL_DEBUG);
    capture(log_some, buf, sizeof buf);
    assert_string_equal(buf, "<7>paddock-test: hidden 1\n<6>paddock-test: hello world\n"
                             "<4>paddock-test: careful\n<3>paddock-test: bad 42\n");
    log_set_level(LOG_LEVEL_INFO);
    log_set_journal(false);
}

static void log_long(void)
{
    char big[LOG_LINE_MAX * 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    log_info("%s", big);
}

static void test_log_truncates_long_lines(void **state)
{
    (void)state;
    char buf[LOG_LINE_MAX * 3];
    capture(log_long, buf, sizeof buf);
    size_t len = strlen(buf);
    assert_true(len <= LOG_LINE_MAX);
    assert_memory_equal(buf + len - 4, "...\n", 4);
}

static void test_log_levels(void **state)
{
    (void)state;
    enum log_level l;
    assert_int_equal(log_level_parse("WARNING", &l), 0);
    assert_int_equal(l, LOG_LEVEL_WARN);
    assert_int_equal(log_level_parse("debug", &l), 0);
    assert_int_equal(l, LOG_LEVEL_DEBUG);
    assert_int_equal(log_level_parse("loud", &l), ERR_INVAL);
    assert_string_equal(log_level_name(LOG_LEVEL_ERROR), "error");
    setenv("PADDOCK_LOG_LEVEL", "error", 1);
    log_init("paddock-test");
    assert_int_equal(log_get_level(), LOG_LEVEL_ERROR);
    setenv("PADDOCK_LOG_LEVEL", "bogus", 1);
    log_set_level(LOG_LEVEL_DEBUG);
    log_init("paddock-test");
    assert_int_equal(log_get_level(), LOG_LEVEL_DEBUG);
    unsetenv("PADDOCK_LOG_LEVEL");
    log_set_level(LOG_LEVEL_WARN);
    assert_false(log_enabled(LOG_LEVEL_INFO));
    assert_true(log_enabled(LOG_LEVEL_ERROR));
    log_set_level(LOG_LEVEL_INFO);
}

static void test_clocks(void **state)
{
    (void)state;
    uint64_t a = clock_mono_ns();
    uint64_t b = clock_mono_ns();
    assert_true(b >= a);
    assert_true(clock_mono_ms() >= a / 1000000);
    int64_t w = clock_wall_ms();
    assert_true(w > 1600000000000); /* after 2020 */
    int64_t wn = clock_wall_ns();
    assert_true(wn / 1000000 >= w);
    char buf[CLOCK_RFC3339_SIZE];
    assert_string_equal(clock_format_rfc3339(0, buf), "1970-01-01T00:00:00.000Z");
    assert_string_equal(clock_format_rfc3339(1700000000123, buf), "2023-11-14T22:13:20.123Z");
    assert_string_equal(clock_format_rfc3339(-1, buf), "1969-12-31T23:59:59.999Z");
}

static void test_ids(void **state)
{
    (void)state;
    char a[ID_JOB_SIZE], b[ID_JOB_SIZE];
    assert_int_equal(id_job_new(a), 0);
    assert_int_equal(id_job_new(b), 0);
    assert_int_equal(strlen(a), ID_JOB_LEN);
    assert_true(id_job_valid(a, strlen(a)));
    assert_string_not_equal(a, b);
    assert_false(id_job_valid("j-3fa9c2e01b7", 13));
    assert_false(id_job_valid("j-3fa9c2e01b7G", 14));
    assert_false(id_job_valid("x-3fa9c2e01b7d", 14));
    assert_true(id_job_valid("j-3fa9c2e01b7d", 14));
    uint64_t u, v;
    assert_int_equal(id_random_u64(&u), 0);
    assert_int_equal(id_random_u64(&v), 0);
    assert_true(u != 0 && u != v);
    char hex[ID_U64_SIZE];
    id_format_u64(0x00ab00cd00ef0012u, hex);
    assert_string_equal(hex, "00ab00cd00ef0012");
    assert_int_equal(id_parse_u64(hex, 16, &v), 0);
    assert_true(v == 0x00ab00cd00ef0012u);
    assert_int_equal(id_parse_u64("DEADbeef", 8, &v), 0);
    assert_true(v == 0xdeadbeefu);
    assert_int_equal(id_parse_u64("12345678901234567", 17, &v), ERR_PARSE);
    assert_int_equal(id_parse_u64("12g", 3, &v), ERR_PARSE);
    assert_int_equal(id_parse_u64("", 0, &v), ERR_PARSE);
    unsigned char raw[3] = {0x00, 0x7f, 0xff};
    char h[7];
    assert_string_equal(id_hex(h, raw, 3), "007fff");
}

static void test_vec(void **state)
{
    (void)state;
    VEC(int) v;
    vec_init(&v);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(vec_push(&v, i), 0);
    assert_int_equal(v.len, 1000);
    assert_int_equal(vec_pop(&v), 999);
    vec_remove(&v, 0); /* 1..998 */
    assert_int_equal(v.items[0], 1);
    vec_remove_swap(&v, 0); /* 998, 2, 3, ... */
    assert_int_equal(v.items[0], 998);
    assert_int_equal(v.len, 997);
    vec_truncate(&v, 2);
    assert_int_equal(v.len, 2);
    assert_int_equal(v.items[1], 2);
    /* A failed growth leaves the vector as it was. */
    size_t cap = v.cap;
    mem_fail_after(0);
    assert_int_equal(vec_reserve(&v, cap + 1), ERR_NOMEM);
    mem_fail_reset();
    assert_int_equal(v.cap, cap);
    assert_int_equal(v.items[1], 2);
    vec_close(&v);
    assert_null(v.items);
    assert_int_equal(v.len, 0);
}

static void test_map(void **state)
{
    (void)state;
    struct map m;
    map_init(&m);
    assert_null(map_get(&m, "absent"));
    char key[32];
    static int values[5000];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "node-%d", i);
        values[i] = i;
        void *old = &m;
        assert_int_equal(map_put(&m, key, &values[i], &old), 0);
        assert_null(old);
    }
    assert_int_equal(m.len, 5000);
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "node-%d", i);
        int *p = map_get(&m, key);
        assert_non_null(p);
        assert_int_equal(*p, i);
    }
    /* Replace returns the old value. */
    void *old = NULL;
    assert_int_equal(map_put(&m, "node-7", &values[8], &old), 0);
    assert_ptr_equal(old, &values[7]);
    assert_int_equal(m.len, 5000);
    /* Binary keys with embedded NULs are distinct from their prefixes. */
    assert_int_equal(map_putn(&m, "a\0b", 3, &values[1], NULL), 0);
    assert_int_equal(map_putn(&m, "a", 1, &values[2], NULL), 0);
    assert_ptr_equal(map_getn(&m, "a\0b", 3), &values[1]);
    assert_ptr_equal(map_get(&m, "a"), &values[2]);
    /* NULL values are found. */
    assert_int_equal(map_put(&m, "null", NULL, NULL), 0);
    void *v = &m;
    assert_true(map_find(&m, "null", 4, &v));
    assert_null(v);
    /* Delete every even node while iterating; each entry is visited exactly once. */
    size_t it = 0, visited = 0;
    const char *k;
    size_t klen;
    while (map_next(&m, &it, &k, &klen, &v)) {
        visited++;
        assert_int_equal(strlen(k) == klen, memchr(k, '\0', klen) == NULL);
        int n;
        if (sscanf(k, "node-%d", &n) == 1 && n % 2 == 0)
            assert_true(map_del(&m, k, NULL));
    }
    assert_int_equal(visited, 5003);
    assert_int_equal(m.len, 2503);
    assert_null(map_get(&m, "node-4"));
    assert_non_null(map_get(&m, "node-5"));
    assert_false(map_del(&m, "node-4", NULL));
    /* Reinsert after deletion and churn: markers get reused and cleaned. */
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 5000; i += 2) {
            snprintf(key, sizeof key, "node-%d", i);
            assert_int_equal(map_put(&m, key, &values[i], NULL), 0);
        }
        for (int i = 0; i < 5000; i += 2) {
            snprintf(key, sizeof key, "node-%d", i);
            assert_true(map_del(&m, key, &v));
            assert_ptr_equal(v, &values[i]);
        }
    }
    assert_int_equal(m.len, 2503);
    assert_true(m.cap <= 16384);
    /* A failed insert changes nothing. */
    for (long n = 0; n < 4; n++) {
        mem_fail_after(n);
        int rc = map_put(&m, "brand-new", &values[0], NULL);
        mem_fail_reset();
        if (rc == 0) {
            assert_true(map_del(&m, "brand-new", NULL));
            break;
        }
        assert_int_equal(rc, ERR_NOMEM);
        assert_int_equal(m.len, 2503);
        assert_null(map_get(&m, "brand-new"));
    }
    map_close(&m);
    assert_int_equal(m.len, 0);
}

static void test_heap(void **state)
{
    (void)state;
    struct heap h;
    heap_init(&h);
    assert_false(heap_pop(&h, NULL));
    /* A deterministic pseudo-random sequence with many equal keys. */
    static int vals[2000];
    uint64_t x = 88172645463325252u;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        vals[i] = i;
        assert_int_equal(heap_push(&h, x % 100, &vals[i]), 0);
    }
    struct heap_entry e, prev = {.key = 0, .value = NULL};
    int n = 0;
    while (heap_pop(&h, &e)) {
        if (n > 0) {
            assert_true(e.key >= prev.key);
            if (e.key == prev.key) /* FIFO among equal keys */
                assert_true(*(int *)e.value > *(int *)prev.value);
        }
        prev = e;
        n++;
    }
    assert_int_equal(n, 2000);
    heap_close(&h);
    double ds[] = {-1e300, -2.5, -0.0, 0.0, 1e-300, 3.0, 1e300};
    for (size_t i = 0; i + 1 < sizeof ds / sizeof ds[0]; i++)
        assert_true(heap_key_from_double(ds[i]) <= heap_key_from_double(ds[i + 1]));
    assert_true(heap_key_from_double(-2.5) < heap_key_from_double(-1.0));
    assert_true(heap_key_from_double(1.0) < heap_key_from_double(2.0));
}

/* A second key (the tie) orders entries of equal key before insertion order does; reserved room
 * is kept by clear. */
static void test_heap_tie(void **state)
{
    (void)state;
    struct heap h;
    heap_init(&h);
    assert_int_equal(heap_reserve(&h, 40), 0);
    assert_true(h.cap >= 40);
    static int vals[40];
    for (int round = 0; round < 2; round++) {
        /* keys 0..3, ties pushed in the opposite of the order they must come out in */
        for (int i = 0; i < 40; i++) {
            vals[i] = i;
            assert_int_equal(heap_push_tie(&h, (uint64_t)(i % 4), (uint64_t)(39 - i), &vals[i]), 0);
        }
        assert_int_equal(h.len, 40);
        if (round == 0) {
            struct heap_entry e, prev = {.key = 0, .value = NULL};
            int n = 0;
            while (heap_pop(&h, &e)) {
                if (n > 0) {
                    assert_true(e.key >= prev.key);
                    if (e.key == prev.key) /* larger i, smaller tie: first */
                        assert_true(*(int *)e.value < *(int *)prev.value);
                }
                prev = e;
                n++;
            }
            assert_int_equal(n, 40);
        } else {
            size_t cap = h.cap;
            heap_clear(&h);
            assert_int_equal(h.len, 0);
            assert_int_equal(h.cap, cap);
            assert_false(heap_peek(&h, NULL));
        }
    }
    /* equal key and tie: insertion order, as heap_push */
    assert_int_equal(heap_push_tie(&h, 7, 1, &vals[0]), 0);
    assert_int_equal(heap_push_tie(&h, 7, 1, &vals[1]), 0);
    assert_int_equal(heap_push(&h, 7, &vals[2]), 0);
    struct heap_entry e;
    assert_true(heap_pop(&h, &e));
    assert_ptr_equal(e.value, &vals[2]); /* tie 0 */
    assert_true(heap_pop(&h, &e));
    assert_ptr_equal(e.value, &vals[0]);
    assert_true(heap_pop(&h, &e));
    assert_ptr_equal(e.value, &vals[1]);
    heap_close(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_terminal_and_journal),
        cmocka_unit_test(test_log_truncates_long_lines),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_vec),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_heap),
        cmocka_unit_test(test_heap_tie),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
