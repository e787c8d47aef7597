/* `paddock keygen` end to end: the binary writes loadable keys, refuses to overwrite them
 * without --force, and rejects bad usage with exit code 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/curve.h"

static char out[4096];

/* Runs the paddock binary with `args`; captures stdout into `out`; returns the exit code. */
static int run(const char *args)
{
    const char *bin = getenv("PADDOCK_BIN_DIR");
    assert_non_null(bin);
    char cmd[1024];
    assert_true(snprintf(cmd, sizeof cmd, "'%s/paddock' %s 2>/dev/null", bin, args) <
                (int)sizeof cmd);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_keygen(void **state)
{
    (void)state;
    char dir[] = "/tmp/paddock-keygen-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char args[256], msg[512];
    snprintf(args, sizeof args, "keygen --dir '%s/keys' --name pn-3 --json", dir);
    assert_int_equal(run(args), 0);
    /* {"dir":"...","name":"pn-3","public_key":"<40 chars>"} */
    char *pk = strstr(out, "\"public_key\":\"");
    assert_non_null(pk);
    pk += strlen("\"public_key\":\"");
    char keydir[128];
    snprintf(keydir, sizeof keydir, "%s/keys", dir);
    curve_t *c = NULL;
    assert_int_equal(curve_load(&c, keydir, "pn-3", NULL, msg, sizeof msg), 0);
    assert_memory_equal(pk, curve_public_key(c), CURVE_KEY_Z85_LEN);
    assert_int_equal(pk[CURVE_KEY_Z85_LEN], '"');
    curve_destroy(&c);
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/keys/allow/pn-3.pub", dir);
    assert_int_equal(stat(path, &st), 0);

    assert_int_equal(run(args), 1); /* exists */
    snprintf(args, sizeof args, "keygen --dir '%s/keys' --name pn-3 --force", dir);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(out, "public key  "));
    assert_int_equal(run("keygen --name x"), 2);           /* no --dir */
    assert_int_equal(run("keygen --dir /tmp --bogus"), 2); /* unknown option */
    snprintf(args, sizeof args, "keygen --dir '%s/keys' --name ../x", dir);
    assert_int_equal(run(args), 1);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keygen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
