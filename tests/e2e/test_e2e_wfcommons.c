/* test_e2e_wfcommons.c - every WfCommons instance shipped in tests/data/wfcommons imports,
 * validates and runs to success on a real local cluster (3 RM replicas, 4 PNs of 2 cores), its
 * recorded runtimes scaled down so the eleven take a minute or two, and each gets a rendered
 * report. One cmocka test per instance, all on one cluster; the list of instances is read from
 * the directory, so a file added there is run too. Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#define E2E_TIME_SCALE  "0.0002" /* recorded seconds -> 0.2 ms each */
#define E2E_MIN_RUNTIME "0.005"
#define E2E_MAX_FILES   32

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 3 --pn 4 --pn-cpus 2 --pn-mem-mb 2048 --racks 2");
}

static void test_instance(void **state)
{
    const char *file = *state;
    e2e_skip_without_jm();
    char name[256], spec[1024];
    snprintf(name, sizeof name, "%s", file);
    name[strlen(name) - 5] = '\0'; /* without .json */
    snprintf(spec, sizeof spec, "%s/%s.spec.json", e2e_dir(), name);
    struct e2e_run r;
    e2e_paddock(&r, 60,
                "import wfcommons '%s/tests/data/wfcommons/%s' -o '%s' --time-scale %s "
                "--min-runtime %s --max-cpu 1 --max-mem-mb 512 --name wf-%.40s",
                e2e_src(), file, spec, E2E_TIME_SCALE, E2E_MIN_RUNTIME, name);
    if (r.status != 0)
        fprintf(stderr, "import: %s\n", r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
    json_t *doc = json_load_file(spec, 0, NULL);
    assert_non_null(doc);
    size_t ntasks = json_array_size(json_object_get(doc, "tasks"));
    assert_true(ntasks > 0);
    json_decref(doc);

    e2e_paddock(&r, 60, "submit '%s' --deadline 2m --wait --json", spec);
    json_t *res = json_loads(r.out, 0, NULL);
    const char *id = json_string_value(json_object_get(res, "job_id"));
    if (r.status != 0 || res == NULL) {
        fprintf(stderr, "%s: submit exit %d\n%s\n%s\n", file, r.status, r.out, r.err);
        if (id != NULL)
            e2e_job_dump(id);
        e2e_jobs_stop();
    }
    assert_int_equal(r.status, 0);
    assert_non_null(res);
    assert_string_equal(json_string_value(json_object_get(res, "state")), "succeeded");
    assert_int_equal(json_integer_value(json_object_get(res, "tasks_total")), (long long)ntasks);
    assert_int_equal(json_integer_value(json_object_get(res, "tasks_succeeded")),
                     (long long)ntasks);
    e2e_run_close(&r);
    fprintf(stderr, "%-48s %5zu tasks  makespan %6.2f s  deadline %s\n", file, ntasks,
            json_number_value(json_object_get(res, "makespan_s")),
            json_is_true(json_object_get(res, "deadline_met")) ? "met" : "missed");

    /* every task succeeded once in the report, and the page renders */
    char jid[64], html[1100];
    snprintf(jid, sizeof jid, "%s", id);
    json_t *rep = e2e_job_file(jid, "report.json");
    assert_non_null(rep);
    size_t ok = 0, i;
    json_t *a;
    json_array_foreach(json_object_get(rep, "attempts"), i, a)
    {
        const char *s = json_string_value(json_object_get(a, "state"));
        ok += s != NULL && strcmp(s, "succeeded") == 0;
    }
    assert_int_equal(ok, ntasks);
    json_decref(rep);
    snprintf(html, sizeof html, "%s/%s.html", e2e_dir(), name);
    e2e_paddock(&r, 60, "report %s -o '%s'", jid, html);
    if (r.status != 0)
        fprintf(stderr, "report: %s\n", r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
    FILE *f = fopen(html, "r");
    assert_non_null(f);
    static char page[1 << 20];
    size_t n = fread(page, 1, sizeof page - 1, f);
    fclose(f);
    page[n] = '\0';
    assert_non_null(strstr(page, "<svg") != NULL ? strstr(page, "<svg") : strstr(page, "svg"));
    assert_non_null(strstr(page, jid)); /* the page embeds this job's report */
    json_decref(res);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    if (!e2e_have_jm()) {
        fprintf(stderr, "paddock-jm is not built: skipped\n");
        return 77; /* ctest: SKIP_RETURN_CODE */
    }
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/tests/data/wfcommons", e2e_src());
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "%s: no such directory\n", dir);
        return 1;
    }
    static char names[E2E_MAX_FILES][256];
    char *files[E2E_MAX_FILES];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < E2E_MAX_FILES) {
        size_t len = strlen(e->d_name);
        if (len > 5 && len < 200 && strcmp(e->d_name + len - 5, ".json") == 0) {
            snprintf(names[n], sizeof names[n], "%s", e->d_name);
            files[n] = names[n];
            n++;
        }
    }
    closedir(d);
    qsort(files, n, sizeof files[0], by_name);
    static struct CMUnitTest tests[E2E_MAX_FILES];
    for (size_t i = 0; i < n; i++) {
        tests[i] = (struct CMUnitTest){files[i], test_instance, NULL, NULL, files[i]};
    }
    if (n < 11) {
        fprintf(stderr, "expected the 11 shipped instances in %s, found %zu\n", dir, n);
        return 1;
    }
    return _cmocka_run_group_tests("e2e_wfcommons", tests, n, group_setup, e2e_group_teardown);
}
