/* test_output.c - pn/output.c: a task's stdout and stderr read back in parts (offset, tail,
 * bounds, a file cut shorter, a link the task left), the end of stderr made into one line for a
 * failure reason, and a forgotten task's directory found again by its name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "pn/output.h"
#include "proto/limits.h"

struct fixture {
    char dir[64];
};

static void write_file(const char *dir, const char *name, const char *text, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/paddock-test-output-XXXXXX");
    if (mkdtemp(fx->dir) == NULL)
        return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0)
        return -1;
    free(fx);
    return 0;
}

/* Reads and checks the bytes, start and size. */
static void expect_read(const char *dir, uint32_t stream, uint64_t off, uint64_t tail, uint32_t max,
                        const char *want, uint64_t want_start, uint64_t want_size)
{
    uint8_t *data = NULL;
    uint32_t len = 0;
    uint64_t start = 99, size = 99;
    char msg[256];
    assert_int_equal(
        output_read(dir, stream, off, tail, max, &data, &len, &start, &size, msg, sizeof msg), 0);
    assert_int_equal(len, strlen(want));
    if (len > 0)
        assert_memory_equal(data, want, len);
    else
        assert_null(data);
    assert_int_equal(start, want_start);
    assert_int_equal(size, want_size);
    mem_free(data);
}

static void test_read_parts(void **state)
{
    struct fixture *fx = *state;
    write_file(fx->dir, "stdout", "hello\nworld\n", 12);
    write_file(fx->dir, "stderr", "oops\n", 5);
    expect_read(fx->dir, OUTPUT_STDOUT, 0, 0, 0, "hello\nworld\n", 0, 12);
    expect_read(fx->dir, OUTPUT_STDERR, 0, 0, 0, "oops\n", 0, 5);
    expect_read(fx->dir, OUTPUT_STDOUT, 6, 0, 0, "world\n", 6, 12);
    expect_read(fx->dir, OUTPUT_STDOUT, 0, 0, 5, "hello", 0, 12);   /* at most max */
    expect_read(fx->dir, OUTPUT_STDOUT, 0, 6, 0, "world\n", 6, 12); /* the last 6 bytes */
    expect_read(fx->dir, OUTPUT_STDOUT, 0, 100, 0, "hello\nworld\n", 0, 12);
    expect_read(fx->dir, OUTPUT_STDOUT, 3, 6, 0, "lo\nworld\n", 3, 12); /* tail only from 0 */
    /* where a follower stands after the end: nothing yet, the start clamped to the size */
    expect_read(fx->dir, OUTPUT_STDOUT, 12, 0, 0, "", 12, 12);
    expect_read(fx->dir, OUTPUT_STDOUT, 40, 0, 0, "", 12, 12);
    /* a task that left nothing gave its directory back: empty output */
    expect_read(NULL, OUTPUT_STDERR, 0, 0, 0, "", 0, 0);
}

static void test_read_large_in_chunks(void **state)
{
    struct fixture *fx = *state;
    size_t n = PROTO_MAX_OUTPUT_CHUNK + 1000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    big[10] = '\0'; /* output is bytes, NULs included */
    write_file(fx->dir, "stdout", big, n);
    uint64_t off = 0, size = 0;
    size_t total = 0;
    for (int parts = 0; parts < 10 && off < n; parts++) {
        uint8_t *data = NULL;
        uint32_t len = 0;
        uint64_t start = 0;
        char msg[128];
        assert_int_equal(output_read(fx->dir, OUTPUT_STDOUT, off, 0, 0, &data, &len, &start, &size,
                                     msg, sizeof msg),
                         0);
        assert_true(len <= PROTO_MAX_OUTPUT_CHUNK);
        assert_int_equal(start, off);
        assert_memory_equal(data, big + off, len);
        off += len;
        total += len;
        mem_free(data);
    }
    assert_int_equal(total, n);
    assert_int_equal(size, n);
    free(big);
}

static void test_read_refusals(void **state)
{
    struct fixture *fx = *state;
    uint8_t *data = NULL;
    uint32_t len = 0;
    uint64_t start = 0, size = 0;
    char msg[256] = "";
    /* the directory was removed (or never had the file) */
    assert_int_equal(
        output_read(fx->dir, OUTPUT_STDOUT, 0, 0, 0, &data, &len, &start, &size, msg, sizeof msg),
        ERR_NOTFOUND);
    assert_non_null(strstr(msg, "stdout"));
    assert_int_equal(output_read("/nonexistent/dir", OUTPUT_STDERR, 0, 0, 0, &data, &len, &start,
                                 &size, msg, sizeof msg),
                     ERR_NOTFOUND);
    assert_int_equal(output_read(fx->dir, 2, 0, 0, 0, &data, &len, &start, &size, msg, sizeof msg),
                     ERR_INVAL);
    /* a task that replaced its stdout by a link to a file of the PN's: not followed */
    char path[256];
    snprintf(path, sizeof path, "%s/stdout", fx->dir);
    assert_int_equal(symlink("/etc/hostname", path), 0);
    assert_true(output_read(fx->dir, OUTPUT_STDOUT, 0, 0, 0, &data, &len, &start, &size, msg,
                            sizeof msg) < 0);
    assert_null(data);
}

static void check_tail(const char *dir, const char *text, size_t max, const char *want)
{
    write_file(dir, "stderr", text, strlen(text));
    char out[512];
    size_t n = output_stderr_tail(dir, max, out, sizeof out);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "tail of '%s' (max %zu): '%s', want '%s'\n", text, max, out, want);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
    assert_true(n <= max);
}

static void test_stderr_tail(void **state)
{
    struct fixture *fx = *state;
    check_tail(fx->dir, "real error: file not found: /data/x\n", 120,
               "real error: file not found: /data/x");
    /* lines joined from the end, blank ones and trailing blanks dropped */
    check_tail(fx->dir, "starting\n\nreading /data/x  \r\n\nreal error: file not found\n\n", 120,
               "starting | reading /data/x | real error: file not found");
    /* too long: the end kept, the cut marked */
    check_tail(fx->dir, "first line that is long\nsecond\nthe very last line\n", 30,
               "...second | the very last line");
    /* control characters and bytes outside ASCII, a tab as a blank, no newline at the end */
    check_tail(fx->dir, "bad\x1b[31m red\tx\xc3\xa9", 120, "bad?[31m red x??");
    check_tail(fx->dir, "abcdef\n", 2, "ef"); /* no room for the mark: the end alone */
    check_tail(fx->dir, "abcdef\n", 4, "...f");
    check_tail(fx->dir, "", 120, "");
    check_tail(fx->dir, "\n\n  \n", 120, "");
    char out[64] = "x";
    assert_int_equal(output_stderr_tail(NULL, 120, out, sizeof out), 0);
    assert_string_equal(out, "");
    /* a small buffer: cut, still terminated */
    write_file(fx->dir, "stderr", "abcdefghij\n", 11);
    char small[5];
    output_stderr_tail(fx->dir, 120, small, sizeof small);
    assert_string_equal(small, "abcd");
}

static void test_reason_append(void **state)
{
    struct fixture *fx = *state;
    char reason[256] = "exit code 3";
    output_reason_append(fx->dir, reason, sizeof reason); /* no stderr file: unchanged */
    assert_string_equal(reason, "exit code 3");
    write_file(fx->dir, "stderr", "", 0);
    output_reason_append(fx->dir, reason, sizeof reason);
    assert_string_equal(reason, "exit code 3");
    const char *err = "real error: file not found: /data/x\n";
    write_file(fx->dir, "stderr", err, strlen(err));
    output_reason_append(fx->dir, reason, sizeof reason);
    assert_string_equal(reason, "exit code 3; stderr: real error: file not found: /data/x");
    /* a long stderr: the reason still fits a JM's 160-byte attempt record */
    char big[2000];
    memset(big, 'x', sizeof big);
    big[sizeof big - 1] = '\n';
    write_file(fx->dir, "stderr", big, sizeof big);
    snprintf(reason, sizeof reason, "exit code 1");
    output_reason_append(fx->dir, reason, sizeof reason);
    assert_true(strlen(reason) < 160);
    assert_non_null(strstr(reason, "exit code 1; stderr: ...xxx"));
    /* a full buffer is left as it is */
    char tiny[12] = "exit code 1";
    output_reason_append(fx->dir, tiny, sizeof tiny);
    assert_string_equal(tiny, "exit code 1");
}

static void mk(const char *dir, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(mkdir(path, 0700), 0);
}

static void test_find_dir(void **state)
{
    struct fixture *fx = *state;
    char safe[64];
    output_safe_name("j-1/../x y", safe, sizeof safe);
    assert_string_equal(safe, "j-1_.._x_y");
    output_safe_name(".hidden", safe, sizeof safe);
    assert_string_equal(safe, "_hidden");
    mk(fx->dir, "7-j-1-b-1");
    mk(fx->dir, "9-j-1-b-2");
    mk(fx->dir, "12-j-1-b-1"); /* the same attempt again, later (a newer id) */
    mk(fx->dir, "10-j-1-bb-3");
    mk(fx->dir, "11-j-12-b-4");
    mk(fx->dir, "13-j-1-x_y-1"); /* task "x y" */
    mk(fx->dir, "spare");
    char out[256];
    uint32_t att = 0;
    assert_int_equal(output_find_dir(fx->dir, "j-1", "b", 1, out, sizeof out, &att), 0);
    assert_non_null(strstr(out, "/12-j-1-b-1"));
    assert_int_equal(att, 1);
    assert_int_equal(output_find_dir(fx->dir, "j-1", "b", 0, out, sizeof out, &att), 0);
    assert_non_null(strstr(out, "/9-j-1-b-2"));
    assert_int_equal(att, 2);
    assert_int_equal(output_find_dir(fx->dir, "j-1", "x y", 0, out, sizeof out, &att), 0);
    assert_non_null(strstr(out, "/13-j-1-x_y-1"));
    assert_int_equal(output_find_dir(fx->dir, "j-1", "b", 3, out, sizeof out, &att), ERR_NOTFOUND);
    assert_int_equal(output_find_dir(fx->dir, "j-2", "b", 0, out, sizeof out, &att), ERR_NOTFOUND);
    assert_int_equal(output_find_dir("/nonexistent", "j-1", "b", 0, out, sizeof out, &att),
                     ERR_NOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_large_in_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stderr_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reason_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_dir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
