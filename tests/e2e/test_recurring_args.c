/* test_recurring_args.c - `paddock recurring add`, `history` and `plan` refuse bad arguments
 * with a reason and a non-zero exit before any RM is contacted: the cluster named is a directory
 * that does not exist, so an argument that got through would fail on it instead ("cluster.conf"),
 * which the valid case shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/common/capture.h"

#define NO_CLUSTER "/nonexistent/paddock-no-cluster"

/* Runs `paddock ARGS --cluster NO_CLUSTER` (stderr into the output, PADDOCK_CLUSTER unset);
 * checks the exit code and that the output names `reason`. */
static void check(const char *args, int want_rc, const char *reason)
{
    static char out[1 << 16];
    char cmd[2048];
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    assert_non_null(bin);
    assert_non_null(src);
    snprintf(cmd, sizeof cmd,
             "cd '%s/tests/specs' && env -u PADDOCK_CLUSTER '%s/paddock' %s --cluster %s 2>&1", src,
             bin, args, NO_CLUSTER);
    int rc = capture_run(cmd, out, sizeof out);
    if (rc != want_rc || strstr(out, reason) == NULL)
        fprintf(stderr, "paddock %s: exit %d (want %d), output:\n%s(want '%s')\n", args, rc,
                want_rc, out, reason);
    assert_int_equal(rc, want_rc);
    assert_non_null(strstr(out, reason));
    if (want_rc == 2 || strstr(reason, "cluster.conf") == NULL)
        assert_null(strstr(out, "cluster.conf")); /* refused before the cluster was looked at */
}

static void test_add_refusals(void **state)
{
    (void)state;
    const char *spec = "valid/diamond_barriers.json"; /* deadline_s 60 */
    char a[512];
    snprintf(a, sizeof a, "recurring add n --every 0.5s %s", spec);
    check(a, 2, "the period must be at least 1s");
    snprintf(a, sizeof a, "recurring add n --every 0s %s", spec);
    check(a, 2, "the period must be at least 1s");
    snprintf(a, sizeof a, "recurring add n --every soon %s", spec);
    check(a, 2, "--every 'soon'");
    snprintf(a, sizeof a, "recurring add n --every 5m --deadline 10m %s", spec);
    check(a, 2, "--deadline 10m is longer than the period 5m");
    snprintf(a, sizeof a, "recurring add n --every 5m --deadline 0s %s", spec);
    check(a, 2, "must be positive");
    snprintf(a, sizeof a, "recurring add n --every 30s %s", spec);
    check(a, 2, "the spec's deadline_s (1m) is longer than the period 30s");
    snprintf(a, sizeof a, "recurring add n --every 1m --offset 1m %s", spec);
    check(a, 2, "the offset must be shorter than the period");
    snprintf(a, sizeof a, "recurring add n %s", spec);
    check(a, 2, "missing --every PERIOD");
    check("recurring add n --every 1m", 2, "missing SPEC.json");
    check("recurring add --every 1m", 2, "missing NAME");
    snprintf(a, sizeof a, "recurring add a/b --every 1m %s", spec);
    check(a, 2, "name 'a/b'");
    check("recurring add n --every 1m missing.json", 1, "missing.json: No such file");
    check("recurring add n --every 1m bad/cmd_not_array.json", 1, "cmd_not_array.json: ");
    /* valid: gets as far as the cluster, which does not exist */
    snprintf(a, sizeof a, "recurring add n --every 1m --deadline 45s --offset 10s %s", spec);
    check(a, 1, "cluster.conf");
}

static void test_other_refusals(void **state)
{
    (void)state;
    check("recurring", 2, "usage: paddock recurring add");
    check("recurring frobnicate", 2, "unknown subcommand 'frobnicate'");
    check("recurring show", 2, "missing NAME");
    check("recurring pause a b", 2, "too many arguments");
    check("recurring list --every 1m", 2, "unexpected '--every'");
    check("history --limit 0", 2, "--limit '0'");
    check("plan --width 3", 2, "--width '3'");
    check("plan --json --html x.html", 2, "exclude each other");
    check("recurring list", 1, "cluster.conf");
    check("history clicklog --limit 5", 1, "cluster.conf");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_refusals),
        cmocka_unit_test(test_other_refusals),
    };
    return cmocka_run_group_tests_name("recurring_args", tests, NULL, NULL);
}
