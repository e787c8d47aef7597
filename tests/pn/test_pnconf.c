/* Unit tests of pn/pnconf: defaults detected from the machine, files, --set, bad values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "pn/pnconf.h"

static void test_defaults_detect_the_machine(void **state)
{
    (void)state;
    pnconf_t c;
    memset(&c, 0, sizeof c);
    char msg[256];
    assert_int_equal(pnconf_load(&c, NULL, NULL, 0, msg, sizeof msg), 0);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(c.cpus > 0 && c.cpus <= (double)n);
    assert_true(c.memory >= (1ull << 20));
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    assert_string_equal(c.name, host);
    assert_string_equal(c.advertise, c.listen); /* advertise defaults to listen */
    assert_int_equal(c.heartbeat_ms, 1000);
    assert_int_equal(c.rm_api.len, 0);
    assert_int_equal(c.ended_grace_ms, 5000); /* reaping (issue 14) */
    assert_int_equal(c.orphan_grace_ms, 60000);
    pnconf_close(&c);
}

static void test_grace_keys(void **state)
{
    (void)state;
    pnconf_t c;
    memset(&c, 0, sizeof c);
    char msg[256] = "";
    char *sets[] = {"pn.ended_grace=0", "pn.orphan_grace=2m"};
    assert_int_equal(pnconf_load(&c, NULL, sets, 2, msg, sizeof msg), 0);
    assert_int_equal(c.ended_grace_ms, 0);
    assert_int_equal(c.orphan_grace_ms, 120000);
    pnconf_close(&c);
}

static void test_file_then_sets(void **state)
{
    (void)state;
    char path[] = "/tmp/paddock-pnconf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "[node]\nname = n7\nrack = r2\ncpus = 3.5\nmemory = 6GiB\n"
                       "[rm]\nendpoints = tcp://10.0.0.1:7201, tcp://10.0.0.2:7201\n"
                       "heartbeat = 250ms\n[tasks]\nmemory_margin_pct = 5\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    pnconf_t c;
    memset(&c, 0, sizeof c);
    char msg[256];
    char *sets[] = {"node.rack=r9", "queue.max_regular=7"};
    assert_int_equal(pnconf_load(&c, path, sets, 2, msg, sizeof msg), 0);
    assert_string_equal(c.name, "n7");
    assert_string_equal(c.rack, "r9");
    assert_true(c.cpus == 3.5);
    assert_int_equal(c.memory, 6ull << 30);
    assert_int_equal(c.rm_api.len, 2);
    assert_string_equal(c.rm_api.items[1], "tcp://10.0.0.2:7201");
    assert_int_equal(c.heartbeat_ms, 250);
    assert_true(c.memory_margin_pct == 5);
    assert_int_equal(c.max_regular, 7);
    pnconf_close(&c);
    unlink(path);
}

static void test_bad_values_rejected(void **state)
{
    (void)state;
    const char *bad[] = {"node.cpus=-1",
                         "queue.max_regular=0",
                         "rm.heartbeat=1ms",
                         "node.nosuchkey=1",
                         "tasks.opportunistic_nice=20",
                         "node.memory=512KiB",
                         "pn.orphan_grace=-1s",
                         "pn.ended_grace=2d"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pnconf_t c;
        memset(&c, 0, sizeof c);
        char msg[256] = "";
        char *sets[] = {(char *)bad[i]};
        int rc = pnconf_load(&c, NULL, sets, 1, msg, sizeof msg);
        assert_int_equal(rc, ERR_CONFIG);
        assert_true(strlen(msg) > 0);
        pnconf_close(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_detect_the_machine),
        cmocka_unit_test(test_file_then_sets),
        cmocka_unit_test(test_grace_keys),
        cmocka_unit_test(test_bad_values_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
