/* test_port.c - ports below the ephemeral range, and the claims that keep a cluster's ports its
 * own while one of its daemons is down (common/port.h). */
#include "common/port.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char g_a[64], g_b[64];

static int setup(void **state)
{
    (void)state;
    snprintf(g_a, sizeof g_a, "/tmp/paddock-port-a-XXXXXX");
    snprintf(g_b, sizeof g_b, "/tmp/paddock-port-b-XXXXXX");
    return mkdtemp(g_a) && mkdtemp(g_b) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rmdir(g_a);
    rmdir(g_b);
    port_claim_for(NULL);
    return 0;
}

/* A port reserved for cluster A and released (its daemon stopped) is not another cluster's to
 * take while A's directory exists; A may take it again; once A's directory is gone, anyone may. */
static void test_claim_outlives_the_bind(void **state)
{
    (void)state;
    port_claim_for(g_a);
    int fd, port = port_reserve(&fd);
    assert_true(port >= PORT_LOW);
    close(fd); /* released: as just before the daemon starts, or after it was killed */
    char path[96], owner[256] = "";
    snprintf(path, sizeof path, "/tmp/paddock-ports-%u/%d", (unsigned)getuid(), port);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(owner, sizeof owner, f));
    fclose(f);
    char abs[256];
    assert_non_null(realpath(g_a, abs));
    assert_string_equal(owner, abs);

    port_claim_for(g_b);
    assert_int_equal(port_claimed(port), 1); /* cluster B passes it over */
    port_claim_for(g_a);
    assert_int_equal(port_claimed(port), 0); /* A's own */
    port_claim_for(g_b);
    assert_int_equal(rmdir(g_a), 0);
    assert_int_equal(port_claimed(port), 0); /* A is gone: its claim lapsed */
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claim_outlives_the_bind, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
