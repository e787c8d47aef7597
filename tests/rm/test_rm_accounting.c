/* test_rm_accounting.c - issue 25's RM ledger items on a local cluster through the CLI:
 * `paddock submit --max-price P` registers the earliest deadline the RM prices at most P (and
 * refuses, exit 3, when none is that cheap); a finished job's token-seconds and the price of its
 * admitted deadline are in `paddock usage`; a tighter `paddock job deadline` is refused with the
 * earliest feasible finish and the old deadline kept, a feasible tighter one and a looser one
 * pass; `paddock audit` records all of it. Skipped when paddock-pn or paddock-jm is not built.
 * Stops only the daemons of its own cluster directory. */
#include "common/clock.h"
#include "tests/rm/rm_harness.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char spec_short[512], spec_long[512];

static void write_spec(char *path, size_t cap, const char *name, int seconds)
{
    snprintf(path, cap, "%s/%s.json", rm_harness_dir(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"version\":1,\"name\":\"%s\",\"tasks\":["
            "{\"id\":\"a\",\"cmd\":[\"sleep\",\"%d\"],\"runtime_s\":%d},"
            "{\"id\":\"b\",\"cmd\":[\"sleep\",\"%d\"],\"runtime_s\":%d,\"after\":[\"a\"]}]}\n",
            name, seconds, seconds, seconds, seconds);
    fclose(f);
}

static int group_setup(void **state)
{
    (void)state;
    char path[600];
    if (rm_harness_init("acct") != 0)
        return -1;
    snprintf(path, sizeof path, "%s/paddock-pn", rm_harness_bin());
    if (access(path, X_OK) != 0)
        return 0;
    snprintf(path, sizeof path, "%s/paddock-jm", rm_harness_bin());
    if (access(path, X_OK) != 0)
        return 0;
    if (rm_harness_cluster("up --rm 1 --pn 2 --pn-cpus 2") != 0)
        return -1;
    write_spec(spec_short, sizeof spec_short, "short", 1);
    write_spec(spec_long, sizeof spec_long, "long", 30);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini();
    return 0;
}

static void need_cluster(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/cluster.conf", rm_harness_dir());
    if (access(path, F_OK) != 0)
        skip();
}

static void test_max_price_and_usage(void **state)
{
    (void)state;
    need_cluster();
    const char *dir = rm_harness_dir();
    json_t *q = rm_harness_json("quote %s --json --cluster %s", spec_short, dir);
    assert_non_null(q);
    json_t *curve = json_object_get(q, "price_curve");
    size_t n = json_array_size(curve);
    assert_true(n >= 4);
    /* a price between two points of the curve: the earliest deadline at most it is the later */
    double p1 = json_number_value(json_object_get(json_array_get(curve, 1), "price_token_s"));
    double p2 = json_number_value(json_object_get(json_array_get(curve, 2), "price_token_s"));
    double d2 = json_number_value(json_object_get(json_array_get(curve, 2), "deadline_s"));
    double cheapest =
        json_number_value(json_object_get(json_array_get(curve, n - 1), "price_token_s"));
    assert_true(p1 > p2);
    json_decref(q);
    double max = (p1 + p2) / 2;

    /* cheaper than anything offered: refused (exit 3), nothing registered */
    assert_int_equal(
        rm_harness_run("submit %s --max-price %.3f --cluster %s", spec_short, cheapest / 2, dir),
        3);
    json_t *r = rm_harness_json("submit %s --max-price %.3f --wait --json --cluster %s", spec_short,
                                max, dir);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "succeeded");
    double dl = json_number_value(json_object_get(r, "deadline_s"));
    assert_true(dl > d2 - 2.0 && dl < d2 + 2.0); /* the curve moves a little with the clock */
    json_decref(r);

    /* accounting: the job's token-seconds and the price of the deadline it was admitted with */
    json_t *u = rm_harness_json("usage --by name --json --cluster %s", dir);
    assert_non_null(u);
    json_t *t = json_array_get(json_object_get(u, "totals"), 0);
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "short");
    assert_int_equal(json_integer_value(json_object_get(t, "jobs")), 1);
    double ts = json_number_value(json_object_get(t, "token_s"));
    double price = json_number_value(json_object_get(t, "price_token_s"));
    assert_true(ts >= 1.5 && ts < 20); /* two 1 s tasks, a token each */
    assert_true(price > 0 && price <= max * 1.2);
    json_decref(u);
}

static void test_deadline_through_admission(void **state)
{
    (void)state;
    need_cluster();
    const char *dir = rm_harness_dir();
    /* two 30 s tasks in a chain, admitted with 10 minutes */
    json_t *r = rm_harness_json("submit %s --deadline 10m --json --cluster %s", spec_long, dir);
    char id[64] = "";
    if (r != NULL)
        snprintf(id, sizeof id, "%s", json_string_value(json_object_get(r, "job_id")));
    json_decref(r);
    assert_true(strncmp(id, "j-", 2) == 0);
    /* tighter than its 60 s of path: refused, and the deadline stays */
    assert_int_equal(rm_harness_run("job deadline %s 20s --cluster %s", id, dir), 1);
    json_t *show = rm_harness_json("job show %s --json --cluster %s", id, dir);
    assert_non_null(show);
    json_t *rm = json_object_get(show, "rm");
    /* measured from the client's submission time, a moment before the RM's record of it */
    json_int_t kept = json_integer_value(json_object_get(rm, "deadline_ms")) -
                      json_integer_value(json_object_get(rm, "submitted_ms"));
    assert_true(kept > 599000 && kept <= 600000);
    json_decref(show);
    /* a feasible tighter one and a looser one pass */
    assert_int_equal(rm_harness_run("job deadline %s 5m --cluster %s", id, dir), 0);
    assert_int_equal(rm_harness_run("job deadline %s 20m --cluster %s", id, dir), 0);
    show = rm_harness_json("job show %s --json --cluster %s", id, dir);
    assert_non_null(show);
    rm = json_object_get(show, "rm");
    assert_int_equal(json_integer_value(json_object_get(rm, "deadline_ms")) -
                         json_integer_value(json_object_get(rm, "submitted_ms")),
                     1200000);
    json_decref(show);
    assert_int_equal(rm_harness_run("job cancel %s --cluster %s", id, dir), 0);

    /* the audit trail has the three changes, the refused one with its code, and the cancel */
    json_t *a = rm_harness_json("audit --json --cluster %s", dir);
    assert_non_null(a);
    int deadlines = 0, refused = 0, cancels = 0;
    size_t i;
    json_t *line;
    json_array_foreach(json_object_get(a, "audit"), i, line)
    {
        const char *act = json_string_value(json_object_get(line, "action"));
        const char *res = json_string_value(json_object_get(line, "result"));
        if (strcmp(json_string_value(json_object_get(line, "target")), id) != 0)
            continue;
        assert_string_equal(json_string_value(json_object_get(line, "user")), "paddock");
        deadlines += strcmp(act, "deadline") == 0;
        refused += strcmp(act, "deadline") == 0 && strcmp(res, "ERR_ADMISSION") == 0;
        cancels += strcmp(act, "cancel") == 0 && strcmp(res, "ok") == 0;
    }
    json_decref(a);
    assert_int_equal(deadlines, 3);
    assert_int_equal(refused, 1);
    assert_int_equal(cancels, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_price_and_usage),
        cmocka_unit_test(test_deadline_through_admission),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
