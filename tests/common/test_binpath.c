/* test_binpath.c - common/binpath.h: this executable's folder, a sibling found in a given folder
 * first, then beside this executable, else the bare name for PATH. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/binpath.h"
#include "common/err.h"

static char g_self[PATH_MAX]; /* this test's absolute path */

static void test_self_dir(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_int_equal(binpath_self_dir(dir, sizeof dir), 0);
    size_t n = strlen(dir);
    assert_true(n > 0);
    assert_memory_equal(dir, g_self, n);
    assert_int_equal(g_self[n], '/');
    assert_null(strchr(g_self + n + 1, '/'));
    /* too small a buffer is refused, not cut */
    char small[4];
    assert_int_equal(binpath_self_dir(small, sizeof small), ERR_RANGE);
}

static void test_sibling(void **state)
{
    (void)state;
    char tmp[] = "/tmp/test_binpath.XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char tool[PATH_MAX];
    snprintf(tool, sizeof tool, "%s/some-tool", tmp);
    int fd = open(tool, O_WRONLY | O_CREAT, 0755);
    assert_true(fd >= 0);
    close(fd);
    char out[PATH_MAX];
    /* in the given folder first */
    binpath_sibling("some-tool", tmp, out, sizeof out);
    assert_string_equal(out, tool);
    /* not executable there: not taken */
    assert_int_equal(chmod(tool, 0644), 0);
    binpath_sibling("some-tool", tmp, out, sizeof out);
    assert_string_equal(out, "some-tool");
    /* beside this executable (the test finds itself), with or without a folder */
    const char *me = strrchr(g_self, '/') + 1;
    binpath_sibling(me, tmp, out, sizeof out);
    assert_string_equal(out, g_self);
    binpath_sibling(me, NULL, out, sizeof out);
    assert_string_equal(out, g_self);
    binpath_sibling(me, "", out, sizeof out);
    assert_string_equal(out, g_self);
    /* nowhere: the bare name, for PATH */
    binpath_sibling("no-such-paddock-tool", tmp, out, sizeof out);
    assert_string_equal(out, "no-such-paddock-tool");
    /* a path that does not fit is not tried cut short: the bare name, which fits */
    assert_int_equal(chmod(tool, 0755), 0);
    char tiny[sizeof "some-tool"];
    binpath_sibling("some-tool", tmp, tiny, sizeof tiny);
    assert_string_equal(tiny, "some-tool");
    unlink(tool);
    rmdir(tmp);
}

int main(void)
{
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0)
        return 1;
    g_self[n] = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_dir),
        cmocka_unit_test(test_sibling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
