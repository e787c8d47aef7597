/* test_jmd_quote_spread.c - `paddock quote` with the job's own spread (issue 22), on a real
 * cluster: a spec without a profile has none (the cluster's factor bounds it); after one run
 * leaves a profile, the quote computes the job's own spread from it (jm/shape.h), prints it, and
 * the RM's bound factor for the job is that spread times the cluster's own factor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "jmd_fixture.h"

static struct jmf g_f;

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 1 --pn 2 --pn-cpus 3 --tokens 6");
}

static int teardown(void **state)
{
    (void)state;
    jmf_down(&g_f);
    return 0;
}

/* "jmd-spread": twelve 1-core tasks of 0.3-0.5 s in one stage. */
static json_t *spec(void)
{
    json_t *tasks = json_array();
    char id[32], secs[16];
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof id, "t-%d", i);
        snprintf(secs, sizeof secs, "%.1f", 0.3 + 0.1 * (i % 3));
        json_array_append_new(tasks, json_pack("{s:s, s:s, s:[s, s], s:f, s:f}", "id", id, "stage",
                                               "work", "cmd", "sleep", secs, "runtime_s",
                                               0.3 + 0.1 * (i % 3), "cpu", 1.0));
    }
    return json_pack("{s:i, s:s, s:o}", "version", 1, "name", "jmd-spread", "tasks", tasks);
}

/* `paddock quote SPEC ARGS` on the test's cluster: its exit code, stdout into out. */
static int quote(const char *path, const char *args, char *out, size_t cap)
{
    char cmd[4096], res[512];
    snprintf(res, sizeof res, "%s/quote.out", g_f.dir);
    snprintf(cmd, sizeof cmd,
             "PADDOCK_CLUSTER='%s' exec timeout -k 5 30 '%s/paddock' quote '%s' %s >'%s' "
             "2>&1 </dev/null",
             g_f.cluster, g_f.bin, path, args, res);
    int st = system(cmd);
    out[0] = '\0';
    FILE *fp = fopen(res, "r");
    if (fp != NULL) {
        size_t n = fread(out, 1, cap - 1, fp);
        out[n] = '\0';
        fclose(fp);
    }
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_quote_own_spread(void **state)
{
    (void)state;
    char path[512], out[16384];
    snprintf(path, sizeof path, "%s/spread.json", g_f.dir);
    json_t *s = spec();
    assert_int_equal(json_dump_file(s, path, JSON_INDENT(1)), 0);
    json_decref(s);
    /* no profile yet: no spread of its own */
    assert_int_equal(quote(path, "--json", out, sizeof out), 0);
    json_t *q = json_loads(out, 0, NULL);
    if (q == NULL)
        fail_msg("quote: %s", out);
    assert_true(json_is_null(json_object_get(q, "own_spread")));
    json_decref(q);
    assert_int_equal(quote(path, "", out, sizeof out), 0);
    assert_null(strstr(out, "own spread"));
    /* one run leaves a profile */
    assert_int_equal(jmf_start_jm(&g_f, spec(), ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    assert_int_equal(quote(path, "--json", out, sizeof out), 0);
    q = json_loads(out, 0, NULL);
    if (q == NULL)
        fail_msg("quote: %s", out);
    double spread = json_number_value(json_object_get(q, "own_spread"));
    double own =
        json_number_value(json_object_get(json_object_get(q, "calibration"), "own_factor"));
    double factor = json_number_value(json_object_get(q, "job_bound_factor"));
    fprintf(stderr, "own spread %.3f, own factor %.3f, the job's bound factor %.3f\n", spread, own,
            factor);
    assert_true(spread >= 1.0 && spread < 3.0);
    assert_true(own > 0);
    double p50 =
        json_number_value(json_object_get(json_object_get(q, "calibration"), "p50_factor"));
    assert_true(fabs(factor - fmax(spread * own, p50)) < 1e-6);
    json_decref(q);
    assert_int_equal(quote(path, "", out, sizeof out), 0);
    if (strstr(out, "own spread      q95 / p50") == NULL)
        fail_msg("no own spread in the quote:\n%s", out);
    assert_non_null(strstr(out, "its own spread x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_quote_own_spread, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
