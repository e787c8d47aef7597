/* test_wfcommons.c - the WfCommons importer: every shipped instance converts and validates with
 * jm/spec (tasks, dependencies, scaled runtimes checked against the instance itself), the older
 * flat schema, bad input, and the `paddock import wfcommons` command end to end.
 *
 * The shipped instances are read from PADDOCK_WORKLOADS_DIR, else from the shared directory beside
 * the repository (../shared/workloads/wfcommons, a CMake define); the test skips with a message
 * when neither exists. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/err.h"
#include "jm/spec.h"
#include "tools/wfcommons.h"

#ifndef PADDOCK_SHARED_WORKLOADS
#define PADDOCK_SHARED_WORKLOADS ""
#endif

static const char *workloads_dir(void)
{
    const char *e = getenv("PADDOCK_WORKLOADS_DIR");
    struct stat st;
    if (e != NULL && e[0] != '\0' && stat(e, &st) == 0 && S_ISDIR(st.st_mode))
        return e;
    if (stat(PADDOCK_SHARED_WORKLOADS, &st) == 0 && S_ISDIR(st.st_mode))
        return PADDOCK_SHARED_WORKLOADS;
    return NULL;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static struct spec *validate(json_t *doc)
{
    char *text = json_dumps(doc, 0);
    assert_non_null(text);
    char msg[512] = "";
    struct spec *s = NULL;
    int rc = spec_parse(text, strlen(text), NULL, &s, msg, sizeof msg);
    free(text);
    if (rc != 0)
        fail_msg("converted spec rejected: %s", msg);
    return s;
}

/* Independent count of the instance's distinct (parent, child) pairs and its runtimes. */
static size_t count_edges(const json_t *root, json_t *runtimes)
{
    const json_t *tasks = json_object_get(
        json_object_get(json_object_get(root, "workflow"), "specification"), "tasks");
    const json_t *exec =
        json_object_get(json_object_get(json_object_get(root, "workflow"), "execution"), "tasks");
    json_t *pairs = json_object();
    size_t i, k;
    const json_t *t, *r;
    char key[600];
    json_array_foreach(tasks, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        json_array_foreach(json_object_get(t, "parents"), k, r)
        {
            snprintf(key, sizeof key, "%s>%s", json_string_value(r), id);
            json_object_set_new(pairs, key, json_true());
        }
        json_array_foreach(json_object_get(t, "children"), k, r)
        {
            snprintf(key, sizeof key, "%s>%s", id, json_string_value(r));
            json_object_set_new(pairs, key, json_true());
        }
    }
    json_array_foreach(exec, i, t)
        json_object_set(runtimes, json_string_value(json_object_get(t, "id")),
                        json_object_get(t, "runtimeInSeconds"));
    size_t n = json_object_size(pairs);
    json_decref(pairs);
    return n;
}

static void test_every_shipped_instance(void **state)
{
    (void)state;
    const char *dir = workloads_dir();
    if (dir == NULL) {
        print_message("SKIP: no WfCommons instances (set PADDOCK_WORKLOADS_DIR or keep "
                      "tests/data/wfcommons in the repository)\n");
        skip();
    }
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int count = 0;
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (nl < 5 || strcmp(e->d_name + nl - 5, ".json") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *buf = slurp(path, &len);
        struct wfcommons_options o;
        wfcommons_options_default(&o);
        o.time_scale = 0.001;
        o.name = e->d_name;
        json_t *doc = NULL;
        struct wfcommons_stats st;
        char msg[512] = "";
        int rc = wfcommons_convert(buf, len, &o, &doc, &st, msg, sizeof msg);
        if (rc != 0)
            fail_msg("%s: %s", e->d_name, msg);
        struct spec *s = validate(doc);
        json_t *root = json_loads(buf, 0, NULL);
        json_t *runtimes = json_object();
        size_t edges = count_edges(root, runtimes);
        size_t spec_edges = 0;
        for (size_t i = 0; i < s->ntasks; i++) {
            spec_edges += s->tasks[i].nafter;
            const struct spec_task *t = &s->tasks[i];
            double rt = json_number_value(json_object_get(runtimes, t->id));
            double want = fmax(rt * 0.001, 0.01);
            assert_true(t->runtime_s >= want - 1e-9 && t->runtime_s < want + 0.001 + 1e-9);
            assert_int_equal(t->ncmd, 2);
            assert_string_equal(t->cmd[0], "sleep");
            assert_true(fabs(strtod(t->cmd[1], NULL) - t->runtime_s) < 1e-9);
        }
        size_t ninst = json_array_size(json_object_get(
            json_object_get(json_object_get(root, "workflow"), "specification"), "tasks"));
        if (s->ntasks != ninst || spec_edges != edges)
            fail_msg("%s: %zu tasks / %zu edges, instance has %zu / %zu", e->d_name, s->ntasks,
                     spec_edges, ninst, edges);
        assert_int_equal(st.tasks, ninst);
        assert_int_equal(st.edges, edges);
        assert_true(s->nstages < s->ntasks || s->ntasks < 3); /* stages group tasks */
        json_decref(runtimes);
        json_decref(root);
        json_decref(doc);
        spec_destroy(&s);
        free(buf);
        count++;
    }
    closedir(d);
    assert_true(count >= 1);
    print_message("converted and validated %d instances from %s\n", count, dir);
}

static void test_flat_schema(void **state)
{
    (void)state;
    const char *src = getenv("PADDOCK_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/jm/data/wfformat-1.4-sample.json",
             src != NULL ? src : ".");
    size_t len;
    char *buf = slurp(path, &len);
    struct wfcommons_options o;
    wfcommons_options_default(&o);
    o.time_scale = 0.1;
    o.max_cpu = 1.5;
    json_t *doc = NULL;
    struct wfcommons_stats st;
    char msg[512] = "";
    assert_int_equal(wfcommons_convert(buf, len, &o, &doc, &st, msg, sizeof msg), 0);
    struct spec *s = validate(doc);
    assert_string_equal(st.schema, "1.4");
    assert_int_equal(s->ntasks, 4);
    assert_int_equal(st.edges, 4);
    long split = spec_task_index(s, "ID0000001"), w3 = spec_task_index(s, "ID0000003");
    long merge = spec_task_index(s, "ID0000004");
    assert_true(split >= 0 && w3 >= 0 && merge >= 0);
    assert_true(fabs(s->tasks[split].runtime_s - 1.0) < 1e-9);
    assert_true(fabs(s->tasks[w3].runtime_s - 0.01) < 1e-9); /* zero runtime: the minimum */
    assert_int_equal(s->tasks[split].mem_mb, 2);             /* 2048 KiB */
    assert_true(s->tasks[w3].cpu == 1.5);                    /* capped */
    assert_int_equal(s->tasks[merge].nafter, 2);             /* by id and by name */
    assert_int_equal(s->tasks[split].input_bytes, 1000000);  /* outputs not counted */
    assert_string_equal(s->stages[s->tasks[split].stage].name, "split");
    assert_string_equal(s->stages[s->tasks[w3].stage].name, "work");
    json_decref(doc);
    spec_destroy(&s);
    free(buf);
}

static void test_bad_instances(void **state)
{
    (void)state;
    char msg[512];
    json_t *doc = NULL;
    const char *cases[][2] = {
        {"{\"workflow\": 3}", "no \"workflow\""},
        {"{\"workflow\": {}}", "no task list"},
        {"{\"workflow\": {\"tasks\": []}}", "0 tasks"},
        {"{\"workflow\": {\"tasks\": [{\"name\": \"a\", \"parents\": [\"zz\"]}]}}",
         "task \"a\": unknown parent \"zz\""},
        {"{\"workflow\": {\"tasks\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}}",
         "duplicate task id \"a\""},
        {"{\"workflow\": {\"tasks\": [{\"runtime\": 1}]}}", "neither id nor name"},
        {"{\"workflow\": ", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc =
            wfcommons_convert(cases[i][0], strlen(cases[i][0]), NULL, &doc, NULL, msg, sizeof msg);
        assert_int_not_equal(rc, 0);
        assert_null(doc);
        if (strstr(msg, cases[i][1]) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, msg, cases[i][1]);
    }
    /* a cycle converts but is refused by the spec validator, naming the tasks */
    const char *cyc = "{\"workflow\": {\"tasks\": [{\"name\": \"a\", \"parents\": [\"b\"]},"
                      "{\"name\": \"b\", \"parents\": [\"a\"]}]}}";
    assert_int_equal(wfcommons_convert(cyc, strlen(cyc), NULL, &doc, NULL, msg, sizeof msg), 0);
    char *text = json_dumps(doc, 0);
    struct spec *s = NULL;
    assert_int_equal(spec_parse(text, strlen(text), NULL, &s, msg, sizeof msg), ERR_INVAL);
    assert_non_null(strstr(msg, "dependency cycle"));
    free(text);
    json_decref(doc);
}

/* `paddock import wfcommons` as a user runs it. */
static void test_cli(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    if (bin == NULL || src == NULL)
        skip();
    char prog[4096], in[4096], out[4096];
    snprintf(prog, sizeof prog, "%s/paddock", bin);
    snprintf(in, sizeof in, "%s/tests/jm/data/wfformat-1.4-sample.json", src);
    char tmpl[] = "/tmp/paddock-import-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    snprintf(out, sizeof out, "%s/out.json", tmpl);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(prog, prog, "import", "wfcommons", in, "-o", out, "--time-scale", "0.01",
              (char *)NULL);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct spec *s = NULL;
    char msg[512] = "";
    assert_int_equal(spec_load(out, NULL, &s, msg, sizeof msg), 0);
    assert_int_equal(s->ntasks, 4);
    assert_string_equal(s->name, "wfformat-1.4-sample");
    spec_destroy(&s);
    unlink(out);
    /* a missing -o is a usage error */
    pid = fork();
    if (pid == 0) {
        execl(prog, prog, "import", "wfcommons", in, (char *)NULL);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    rmdir(tmpl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_shipped_instance),
        cmocka_unit_test(test_flat_schema),
        cmocka_unit_test(test_bad_instances),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
