/* test_jmd_estimate.c - the JM tells a PN when a task's runtime estimate moved (TASK_ESTIMATE,
 * jm/daemon/jmd_pn.c jmd_pn_estimates), on a real local cluster (one RM, one PN of 2 cpus, real
 * paddock-jm). Two jobs of eight `sleep` tasks of 1.5 s and 2.5 s in turn, so that when the
 * first ends others are still in flight at the PN: one declaring 2 s a task (what they take:
 * the estimate moves less than the 1 s minimum, no message), then one declaring 12 s (the first
 * outcome moves it by about 10 s, past 25% and 1 s: the tasks in flight are told). Read from the
 * PN's own counters (paddock_pn_estimates_total and _ignored_total on its /metrics). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/common/capture.h"
#include "tests/jmd/jmd_fixture.h"

static struct jmf g_f;

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 1 --pn 1 --pn-cpus 2 --tokens 2");
}

static int teardown(void **state)
{
    (void)state;
    jmf_down(&g_f);
    return 0;
}

/* The PN's counter `name` from its /metrics ([metrics] listen in DIR/cluster/pn-1.conf). */
static long long pn_counter(const char *name)
{
    char path[512], line[512], addr[256] = "";
    snprintf(path, sizeof path, "%s/pn-1.conf", g_f.cluster);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    bool in = false;
    while (addr[0] == '\0' && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '[')
            in = strcmp(line, "[metrics]") == 0;
        else if (in && strncmp(line, "listen", 6) == 0 && strchr(line, '=') != NULL)
            snprintf(addr, sizeof addr, "%s",
                     strchr(line, '=') + 1 + strspn(strchr(line, '=') + 1, " "));
    }
    fclose(f);
    assert_true(addr[0] != '\0');
    static char out[1 << 18];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "curl -sf --max-time 10 'http://%s/metrics'", addr);
    assert_int_equal(capture_run(cmd, out, sizeof out), 0);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(out, key);
    assert_non_null(p);
    return atoll(p + strlen(key));
}

/* Runs one job NAME of eight tasks sleeping 1.5 s and 2.5 s in turn, each declaring declared_s,
 * to success. */
static void run_job(const char *name, double declared_s)
{
    json_t *tasks = json_array();
    for (int i = 0; i < 8; i++) {
        char id[16];
        snprintf(id, sizeof id, "t-%d", i);
        json_array_append_new(tasks, json_pack("{s:s, s:s, s:[s, s], s:f, s:f}", "id", id, "stage",
                                               "work", "cmd", "sleep", i % 2 ? "2.5" : "1.5",
                                               "runtime_s", declared_s, "cpu", 1.0));
    }
    json_t *spec = json_pack("{s:i, s:s, s:o}", "version", 1, "name", name, "tasks", tasks);
    assert_int_equal(jmf_new_job(&g_f, name), 0);
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    int rc = jmf_wait_jm(&g_f, 90);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
}

static void test_estimates_when_r_moves(void **state)
{
    (void)state;
    long long applied0 = pn_counter("paddock_pn_estimates_total");
    long long ignored0 = pn_counter("paddock_pn_estimates_ignored_total");
    run_job("declared-right", 2.0);
    long long applied1 = pn_counter("paddock_pn_estimates_total");
    long long ignored1 = pn_counter("paddock_pn_estimates_ignored_total");
    run_job("declared-12s", 12.0);
    long long applied2 = pn_counter("paddock_pn_estimates_total");
    long long ignored2 = pn_counter("paddock_pn_estimates_ignored_total");
    fprintf(stderr,
            "estimates applied / ignored at the PN: %lld / %lld before, %lld / %lld after the job "
            "declaring 2 s, %lld / %lld after the one declaring 12 s\n",
            applied0, ignored0, applied1, ignored1, applied2, ignored2);
    assert_int_equal(applied1, applied0); /* moved under 1 s: nothing sent */
    assert_int_equal(ignored1, ignored0);
    assert_true(applied2 >= applied1 + 1); /* moved by ~10 s: the tasks in flight were told */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimates_when_r_moves),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
