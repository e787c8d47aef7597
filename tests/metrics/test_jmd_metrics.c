/* The JM's metrics settings and families without a cluster: where the listen address comes
 * from (PADDOCK_JM_METRICS first, "off", then $PADDOCK_CLUSTER/jm.conf, a broken file is off),
 * and the exposition of a JM that has no job loaded yet (every family present, no error,
 * NaN where nothing is known). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/metrics.h"
#include "jm/daemon/jmd.h"
#include "jm/daemon/jmd_metrics.h"

static char dir[512];

static void write_conf(const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, JMD_METRICS_FILE);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/paddock-jmm.XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL)
        return -1;
    unsetenv(JMD_METRICS_ENV);
    setenv("PADDOCK_CLUSTER", dir, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, JMD_METRICS_FILE);
    unlink(path);
    rmdir(dir);
    return 0;
}

static void test_listen_sources(void **state)
{
    (void)state;
    char out[300];
    jmd_metrics_listen(out, sizeof out);
    assert_string_equal(out, ""); /* no file, no variable: off */

    write_conf("[metrics]\nlisten = 127.0.0.1:0\n");
    jmd_metrics_listen(out, sizeof out);
    assert_string_equal(out, "127.0.0.1:0");

    setenv(JMD_METRICS_ENV, "127.0.0.1:9999", 1); /* the environment wins */
    jmd_metrics_listen(out, sizeof out);
    assert_string_equal(out, "127.0.0.1:9999");
    setenv(JMD_METRICS_ENV, "off", 1);
    jmd_metrics_listen(out, sizeof out);
    assert_string_equal(out, "");
    unsetenv(JMD_METRICS_ENV);

    write_conf("[metrics]\nlisten = 127.0.0.1:1\nbogus = 1\n"); /* refused as a whole: off */
    jmd_metrics_listen(out, sizeof out);
    assert_string_equal(out, "");
    unsetenv("PADDOCK_CLUSTER");
    jmd_metrics_listen(out, sizeof out);
    assert_string_equal(out, "");
}

static void test_families_of_an_empty_jm(void **state)
{
    (void)state;
    jmd_t *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->o.job_id = "j-000000000001";
    j->rm_dropped = 3; /* undecodable messages: counted where operators look */
    struct metrics m;
    metrics_init(&m);
    jmd_metrics_write(j, &m);
    assert_int_equal(metrics_error(&m), 0);
    const char *t = metrics_text(&m, NULL);
    assert_non_null(strstr(t, "paddock_jm_info{job_id=\"j-000000000001\",name=\"\"} 1\n"));
    assert_non_null(strstr(t, "paddock_jm_tasks{state=\"running\"} 0\n"));
    assert_non_null(strstr(t, "paddock_jm_tasks_started_total 0\n"));
    assert_non_null(strstr(t, "paddock_jm_deadline_seconds NaN\n"));
    assert_non_null(strstr(t, "paddock_jm_predicted_finish_seconds{estimate=\"p95\"} NaN\n"));
    assert_non_null(strstr(t, "# TYPE paddock_jm_corrections_total counter\n"));
    assert_non_null(strstr(t, "paddock_jm_messages_dropped_total{from=\"rm\"} 3\n"));
    assert_non_null(strstr(t, "paddock_jm_messages_dropped_total{from=\"pn\"} 0\n"));
    assert_null(jmd_metrics_url(j)); /* never started */
    jmd_metrics_stop(j);             /* a no-op then */
    metrics_close(&m);
    free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listen_sources, setup, teardown),
        cmocka_unit_test(test_families_of_an_empty_jm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
