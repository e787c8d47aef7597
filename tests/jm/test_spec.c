/* test_spec.c - job spec v1: the malformed corpus (tests/specs/bad, each refused with its
 * expected reason), the valid examples, limits, field values and allocation failure. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/spec.h"

static const char *src_dir(void)
{
    const char *d = getenv("PADDOCK_SOURCE_DIR");
    return d != NULL ? d : ".";
}

static struct spec *parse_ok(const char *json)
{
    char msg[512] = "";
    struct spec *s = NULL;
    int rc = spec_parse(json, strlen(json), NULL, &s, msg, sizeof msg);
    if (rc != 0)
        fail_msg("unexpected rejection: %s", msg);
    assert_non_null(s);
    return s;
}

static int parse_bad(const char *json, const struct spec_limits *lim, char *msg, size_t cap)
{
    struct spec *s = NULL;
    int rc = spec_parse(json, strlen(json), lim, &s, msg, cap);
    assert_int_not_equal(rc, 0);
    assert_null(s);
    return rc;
}

static void test_corpus_bad(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/specs/bad/EXPECTED.tsv", src_dir());
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int checked = 0;
    char listed[128][1024];
    int nlisted = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = '\0';
        const char *file = line, *frag = tab + 1;
        assert_true(nlisted < 128);
        snprintf(listed[nlisted++], sizeof listed[0], "%s", file);
        char fp[4096], msg[512] = "";
        snprintf(fp, sizeof fp, "%s/tests/specs/bad/%s", src_dir(), file);
        struct spec *s = NULL;
        int rc = spec_load(fp, NULL, &s, msg, sizeof msg);
        if (rc == 0)
            fail_msg("%s: accepted, expected rejection with \"%s\"", file, frag);
        assert_null(s);
        if (strstr(msg, frag) == NULL)
            fail_msg("%s: message \"%s\" lacks \"%s\"", file, msg, frag);
        assert_true(rc == ERR_INVAL || rc == ERR_PARSE || rc == ERR_TOOBIG || rc == ERR_CAPACITY ||
                    rc == ERR_RANGE);
        checked++;
    }
    fclose(f);
    assert_true(checked >= 40);
    /* every corpus file is listed, so none is silently unchecked */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/specs/bad", src_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        int found = 0;
        for (int i = 0; i < nlisted; i++)
            found |= strcmp(listed[i], e->d_name) == 0;
        if (!found)
            fail_msg("%s is in the corpus but not in EXPECTED.tsv", e->d_name);
    }
    closedir(d);
}

static void test_corpus_valid(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/specs/valid", src_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char fp[8192], msg[512] = "";
        snprintf(fp, sizeof fp, "%s/%s", dir, e->d_name);
        struct spec *s = NULL;
        int rc = spec_load(fp, NULL, &s, msg, sizeof msg);
        if (rc != 0)
            fail_msg("%s rejected: %s", e->d_name, msg);
        assert_true(s->ntasks >= 1);
        spec_destroy(&s);
        assert_null(s);
        n++;
    }
    closedir(d);
    assert_true(n >= 3);
}

static void test_fields(void **state)
{
    (void)state;
    char fp[4096], msg[512] = "";
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/full_example.json", src_dir());
    struct spec *s = NULL;
    assert_int_equal(spec_load(fp, NULL, &s, msg, sizeof msg), 0);
    assert_string_equal(s->name, "clicklog-hourly");
    assert_string_equal(s->virtual_cluster, "default");
    assert_true(s->has_deadline);
    assert_true(s->deadline_s == 900);
    assert_int_equal(s->nutility, 3);
    assert_true(spec_utility_at(s, 0) == 1.0);
    assert_true(spec_utility_at(s, 900) == 1.0);
    assert_true(spec_utility_at(s, 1200) == 0.0);
    assert_true(spec_utility_at(s, 5000) == -1.0);
    assert_int_equal(s->ntasks, 4);
    long e0 = spec_task_index(s, "extract-0");
    assert_int_equal(e0, 0);
    const struct spec_task *t = &s->tasks[e0];
    assert_int_equal(t->ncmd, 4);
    assert_string_equal(t->cmd[0], "/usr/bin/env");
    assert_true(t->cpu == 1.0);
    assert_int_equal(t->mem_mb, 512);
    assert_true(t->runtime_s == 12.5);
    assert_int_equal(t->ninputs, 1);
    assert_int_equal(t->inputs[0].bytes, 104857600);
    assert_int_equal(t->inputs[0].nnodes, 2);
    assert_string_equal(t->inputs[0].nodes[1], "pn-7");
    assert_int_equal(t->input_bytes, 104857600);
    assert_int_equal(t->nfiles, 1);
    assert_string_equal(t->files[0].path, "/opt/jobs/extract.sh");
    assert_int_equal(t->nenv, 1);
    assert_string_equal(t->env[0].key, "K");
    assert_string_equal(t->env[0].value, "V");
    /* stages: the declared one first, then by first use */
    assert_int_equal(s->nstages, 3);
    assert_string_equal(s->stages[0].name, "join");
    assert_true(s->stages[0].declared);
    assert_string_equal(s->stages[1].name, "extract");
    assert_false(s->stages[1].declared);
    assert_int_equal(s->stages[1].ntasks, 2);
    assert_int_equal(spec_stage_index(s, "dim"), 2);
    assert_int_equal(s->stages[0].nafter, 2);
    assert_int_equal(spec_task_index(s, "missing"), -1);
    /* topological order: join-0 last */
    assert_int_equal(s->topo[3], (size_t)spec_task_index(s, "join-0"));
    spec_destroy(&s);
}

static void test_defaults(void **state)
{
    (void)state;
    struct spec *s = parse_ok("{\"version\":1,\"tasks\":[{\"id\":\"x\",\"cmd\":[\"true\"]}]}");
    assert_string_equal(s->name, "job");
    assert_string_equal(s->virtual_cluster, "default");
    assert_false(s->has_deadline);
    assert_true(s->tasks[0].cpu == 1.0);
    assert_int_equal(s->tasks[0].mem_mb, 256);
    assert_true(s->tasks[0].runtime_s == 1.0);
    /* a task without a stage is a stage of its own, named after it */
    assert_int_equal(s->nstages, 1);
    assert_string_equal(s->stages[0].name, "x");
    assert_true(spec_utility_at(s, 1e9) == 1.0);
    spec_destroy(&s);
}

static void test_after_dedup_and_order(void **state)
{
    (void)state;
    struct spec *s = parse_ok("{\"version\":1,\"tasks\":["
                              "{\"id\":\"c\",\"cmd\":[\"t\"],\"after\":[\"b\",\"a\",\"b\"]},"
                              "{\"id\":\"b\",\"cmd\":[\"t\"],\"after\":[\"a\"]},"
                              "{\"id\":\"a\",\"cmd\":[\"t\"]}]}");
    assert_int_equal(s->tasks[0].nafter, 2);
    /* a before b before c */
    size_t pos[3];
    for (size_t i = 0; i < 3; i++)
        pos[s->topo[i]] = i;
    assert_true(pos[2] < pos[1]);
    assert_true(pos[1] < pos[0]);
    spec_destroy(&s);
}

static char *make_tasks(size_t n)
{
    size_t cap = 64 + n * 48;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t len = (size_t)snprintf(buf, cap, "{\"version\":1,\"tasks\":[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s{\"id\":\"t%zu\",\"cmd\":[\"true\"]}",
                                i ? "," : "", i);
    snprintf(buf + len, cap - len, "]}");
    return buf;
}

static void test_limits(void **state)
{
    (void)state;
    struct spec_limits lim;
    spec_limits_default(&lim);
    char msg[512];
    char *doc = make_tasks(50);
    lim.max_tasks = 49;
    assert_int_equal(parse_bad(doc, &lim, msg, sizeof msg), ERR_TOOBIG);
    assert_non_null(strstr(msg, "too many tasks: 50"));
    lim.max_tasks = 50;
    struct spec *s = NULL;
    assert_int_equal(spec_parse(doc, strlen(doc), &lim, &s, msg, sizeof msg), 0);
    spec_destroy(&s);
    lim.max_bytes = 100;
    assert_int_equal(parse_bad(doc, &lim, msg, sizeof msg), ERR_TOOBIG);
    assert_non_null(strstr(msg, "over the limit of 100"));
    free(doc);
    /* node capacity passed in */
    spec_limits_default(&lim);
    lim.max_cpu = 8;
    lim.max_mem_mb = 4096;
    const char *big = "{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"],\"cpu\":8.5}]}";
    assert_int_equal(parse_bad(big, &lim, msg, sizeof msg), ERR_CAPACITY);
    assert_non_null(strstr(msg, "task \"a\": cpu 8.5 is larger than any node could hold (max 8)"));
    const char *mem = "{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"],\"mem_mb\":4097}]}";
    assert_int_equal(parse_bad(mem, &lim, msg, sizeof msg), ERR_CAPACITY);
    const char *fits = "{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"],\"cpu\":8,"
                       "\"mem_mb\":4096}]}";
    assert_int_equal(spec_parse(fits, strlen(fits), &lim, &s, msg, sizeof msg), 0);
    spec_destroy(&s);
}

static void test_file_size_bound(void **state)
{
    (void)state;
    char fp[4096], msg[512];
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/full_example.json", src_dir());
    struct spec_limits lim;
    spec_limits_default(&lim);
    lim.max_bytes = 64;
    struct spec *s = NULL;
    assert_int_equal(spec_load(fp, &lim, &s, msg, sizeof msg), ERR_TOOBIG);
    assert_null(s);
    assert_non_null(strstr(msg, "over the limit of 64"));
    assert_int_equal(spec_load("/nonexistent/spec.json", NULL, &s, msg, sizeof msg), ERR_IO);
}

static void test_nul_and_control(void **state)
{
    (void)state;
    char msg[512];
    const char doc[] = "{\"version\":1,\"tasks\":[{\"id\":\"a\\u0000b\",\"cmd\":[\"t\"]}]}";
    parse_bad(doc, NULL, msg, sizeof msg);
    assert_non_null(strstr(msg, "NUL"));
    const char doc2[] = "{\"version\":1,\"tasks\":[{\"id\":\"a\\nb\",\"cmd\":[\"t\"]}]}";
    parse_bad(doc2, NULL, msg, sizeof msg);
    assert_non_null(strstr(msg, "control character"));
    /* a buffer that is not NUL-terminated and is cut short */
    const char *full = "{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"]}]}";
    struct spec *s = NULL;
    assert_int_equal(spec_parse(full, strlen(full) - 3, NULL, &s, msg, sizeof msg), ERR_PARSE);
    assert_null(s);
}

static void test_cycle_message_names_tasks(void **state)
{
    (void)state;
    char msg[512];
    parse_bad("{\"version\":1,\"tasks\":[{\"id\":\"root\",\"cmd\":[\"t\"]},"
              "{\"id\":\"p\",\"cmd\":[\"t\"],\"after\":[\"root\",\"q\"]},"
              "{\"id\":\"q\",\"cmd\":[\"t\"],\"after\":[\"p\"]}]}",
              NULL, msg, sizeof msg);
    assert_non_null(strstr(msg, "dependency cycle"));
    assert_non_null(strstr(msg, "task \"p\""));
    assert_non_null(strstr(msg, "task \"q\""));
    assert_null(strstr(msg, "root"));
}

/* "reads" and "writes": absolute paths, duplicates dropped; JOB_REGISTER's inputs add the tasks'
 * staged files, deduplicated and capped. */
static void test_declared_files(void **state)
{
    (void)state;
    char fp[4096], msg[512] = "";
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/declared_files.json", src_dir());
    struct spec *s = NULL;
    assert_int_equal(spec_load(fp, NULL, &s, msg, sizeof msg), 0);
    assert_int_equal(s->nreads, 2);
    assert_string_equal(s->reads[0], "/data/clicklog/2026-11-25");
    assert_string_equal(s->reads[1], "/data/dims/users");
    assert_int_equal(s->nwrites, 1);
    assert_string_equal(s->writes[0], "/data/sessions/2026-11-25");
    const char *in[8];
    assert_int_equal(spec_declared_inputs(s, 0, in, 8), 3);
    assert_string_equal(in[0], "/data/clicklog/2026-11-25");
    assert_string_equal(in[1], "/data/dims/users");
    assert_string_equal(in[2], "/opt/jobs/sessions.sh");
    assert_int_equal(spec_declared_inputs(s, 0, in, 2), 2);
    assert_string_equal(in[1], "/data/dims/users");
    assert_int_equal(spec_declared_inputs(s, 20, in, 8), 1); /* the longer ones passed over */
    assert_string_equal(in[0], "/data/dims/users");
    spec_destroy(&s);

    s = parse_ok("{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"]}]}");
    assert_int_equal(s->nreads, 0);
    assert_int_equal(s->nwrites, 0);
    assert_int_equal(spec_declared_inputs(s, 0, in, 8), 0);
    spec_destroy(&s);

    /* 64 entries are accepted, 65 are not */
    char buf[8192];
    for (int n = 64; n <= 65; n++) {
        size_t off = (size_t)snprintf(buf, sizeof buf, "{\"version\":1,\"writes\":[");
        for (int i = 0; i < n; i++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s\"/out/%d\"", i ? "," : "", i);
        snprintf(buf + off, sizeof buf - off, "],\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"]}]}");
        if (n == 64) {
            s = parse_ok(buf);
            assert_int_equal(s->nwrites, 64);
            spec_destroy(&s);
        } else {
            assert_int_equal(parse_bad(buf, NULL, msg, sizeof msg), ERR_TOOBIG);
            assert_non_null(strstr(msg, "\"writes\" has 65 entries"));
        }
    }
    assert_int_equal(parse_bad("{\"version\":1,\"reads\":[\"\"],\"tasks\":[{\"id\":\"a\","
                               "\"cmd\":[\"t\"]}]}",
                               NULL, msg, sizeof msg),
                     ERR_INVAL);
    assert_non_null(strstr(msg, "\"reads\"[0] must not be empty"));
    /* failed allocations while copying the paths leak nothing and leave no spec */
    int failures = 0;
    for (long n = 0; n < 400; n++) {
        mem_fail_after(n);
        int rc = spec_load(fp, NULL, &s, msg, sizeof msg);
        long refused = mem_fail_count();
        mem_fail_reset();
        if (rc == 0) {
            spec_destroy(&s);
            if (refused == 0)
                break;
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            assert_null(s);
            failures++;
        }
    }
    assert_true(failures > 10);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    char fp[4096], msg[512];
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/full_example.json", src_dir());
    int failures = 0;
    for (long n = 0; n < 400; n++) {
        struct spec *s = NULL;
        mem_fail_after(n);
        int rc = spec_load(fp, NULL, &s, msg, sizeof msg);
        long refused = mem_fail_count();
        mem_fail_reset();
        if (rc == 0) {
            assert_non_null(s);
            spec_destroy(&s);
            if (refused == 0)
                break; /* every allocation succeeded: all failure points covered */
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            assert_null(s);
            failures++;
        }
    }
    assert_true(failures > 20);
}

/* The array form: ids, commands and the other "{i}" fields of each element, one stage per array,
 * element-wise "after", a stage barrier on a whole array. */
static void test_array_expand(void **state)
{
    (void)state;
    char fp[4096], msg[512] = "";
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/array.json", src_dir());
    struct spec *s = NULL;
    assert_int_equal(spec_load(fp, NULL, &s, msg, sizeof msg), 0);
    assert_int_equal(s->ntasks, 8);
    /* elements in spec order, indices 0..N-1, in place of the array entry */
    static const char *const ids[8] = {"split-0", "split-1", "split-2", "map-0",
                                       "map-1",   "map-2",   "setup",   "merge"};
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(s->tasks[i].id, ids[i]);
    const struct spec_task *sp = &s->tasks[spec_task_index(s, "split-2")];
    assert_int_equal(sp->ncmd, 3);
    assert_string_equal(sp->cmd[2], "split part 2");
    assert_true(sp->runtime_s == 2.0);
    assert_int_equal(sp->noutputs, 1);
    assert_string_equal(sp->outputs[0].path, "part-2");
    assert_int_equal(sp->local_outputs, 1);
    const struct spec_task *m = &s->tasks[spec_task_index(s, "map-1")];
    assert_string_equal(m->cmd[2], "part-1");
    assert_int_equal(m->nenv, 2);
    for (size_t k = 0; k < m->nenv; k++)
        assert_string_equal(m->env[k].value, strcmp(m->env[k].key, "PART") == 0 ? "1" : "V");
    assert_string_equal(m->files[0].path, "/opt/jobs/map-1.cfg");
    assert_int_equal(m->file_bytes, 10);
    assert_string_equal(m->inputs[0].nodes[0], "pn-1");
    /* element-wise: map-1 waits for split-1 (not split-0 or split-2) and for setup */
    assert_int_equal(m->nafter, 2);
    assert_int_equal(m->after[0], (size_t)spec_task_index(s, "split-1"));
    assert_int_equal(m->after[1], (size_t)spec_task_index(s, "setup"));
    /* an array without "stage" is one stage named as its id is written */
    long st = spec_stage_index(s, "split-{i}");
    assert_true(st >= 0);
    assert_int_equal(s->stages[st].ntasks, 3);
    assert_int_equal(spec_stage_index(s, "split-0"), -1);
    long map = spec_stage_index(s, "map");
    assert_int_equal(s->stages[map].ntasks, 3);
    /* the whole array: merge's stage waits for the map stage */
    long merge = spec_stage_index(s, "merge");
    assert_int_equal(s->stages[merge].nafter, 1);
    assert_int_equal(s->stages[merge].after[0], (size_t)map);
    size_t pos[8];
    for (size_t i = 0; i < 8; i++)
        pos[s->topo[i]] = i;
    for (size_t i = 3; i < 6; i++)
        assert_true(pos[i] < pos[spec_task_index(s, "merge")]);
    spec_destroy(&s);
}

/* Refusals of bad arrays, each with its code and reason. */
static void test_array_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *tasks; /* the "tasks" array */
        int rc;
        const char *frag;
    } cases[] = {
        {"[{\"id\":\"a-{i}\",\"array\":0,\"cmd\":[\"t\"]}]", ERR_INVAL,
         "task \"a-{i}\": \"array\" must be a positive integer (got 0)"},
        {"[{\"id\":\"a-{i}\",\"array\":-5,\"cmd\":[\"t\"]}]", ERR_INVAL,
         "\"array\" must be a positive integer (got -5)"},
        {"[{\"id\":\"a-{i}\",\"array\":2.5,\"cmd\":[\"t\"]}]", ERR_INVAL,
         "\"array\" must be a positive integer"},
        {"[{\"id\":\"a-{i}\",\"array\":true,\"cmd\":[\"t\"]}]", ERR_INVAL,
         "\"array\" must be a positive integer"},
        {"[{\"id\":\"a-{i}\",\"array\":101,\"cmd\":[\"t\"]}]", ERR_TOOBIG,
         "\"array\" of 101 tasks is over the limit of 100"},
        {"[{\"id\":\"a-{i}\",\"array\":9223372036854775807,\"cmd\":[\"t\"]}]", ERR_TOOBIG,
         "is over the limit of 100"},
        {"[{\"id\":\"a-{i}\",\"array\":60,\"cmd\":[\"t\"]},{\"id\":\"b-{i}\",\"array\":41,"
         "\"cmd\":[\"t\"]}]",
         ERR_TOOBIG, "too many tasks: 101 with arrays expanded, over the limit of 100"},
        {"[{\"id\":\"a\",\"array\":3,\"cmd\":[\"t\"]}]", ERR_INVAL,
         "\"array\" needs \"{i}\" in \"id\" (got \"a\")"},
        {"[{\"id\":\"a-{i}\",\"cmd\":[\"t\"]}]", ERR_INVAL,
         "\"id\" \"a-{i}\" has \"{i}\" but the task has no \"array\""},
        {"[{\"id\":\"a{i}\",\"array\":11,\"cmd\":[\"t\"]},{\"id\":\"a1{i}\",\"array\":2,"
         "\"cmd\":[\"t\"]}]",
         ERR_INVAL, "duplicate task id \"a10\" (tasks[0] element 10 and tasks[1] element 0)"},
        {"[{\"id\":\"a-{i}\",\"array\":2,\"cmd\":[\"t\"]},{\"id\":\"a-1\",\"cmd\":[\"t\"]}]",
         ERR_INVAL, "duplicate task id \"a-1\" (tasks[0] element 1 and tasks[1])"},
        {"[{\"id\":\"a-{i}\",\"array\":2,\"cmd\":[\"t\"]},{\"id\":\"b-{i}\",\"array\":3,"
         "\"cmd\":[\"t\"],\"after\":[\"a-{i}\"]}]",
         ERR_INVAL, "task \"b-2\": \"after\" names unknown task \"a-2\""},
        {"[{\"id\":\"a-{i}\",\"array\":2,\"cmd\":[\"t\"],\"after\":[\"a-{i}\"]}]", ERR_INVAL,
         "task \"a-0\": depends on itself"},
        {"[{\"id\":\"a-{i}\",\"array\":2,\"cmd\":[\"t\"]},{\"id\":\"r\",\"cmd\":[\"t\"],"
         "\"after\":[\"a-{i}\"]}]",
         ERR_INVAL, "task \"r\": \"after\" names \"a-{i}\", an array"},
        /* the cycle closes element-wise: a-1 after b-1 after a-1 */
        {"[{\"id\":\"a-{i}\",\"array\":2,\"cmd\":[\"t\"],\"after\":[\"b-{i}\"]},"
         "{\"id\":\"b-{i}\",\"array\":2,\"cmd\":[\"t\"],\"after\":[\"a-{i}\"]}]",
         ERR_INVAL, "dependency cycle: task \""},
        {"[{\"id\":\"a-{i}\",\"array\":2,\"cmd\":[\"t\"],\"arrray\":1}]", ERR_INVAL,
         "unknown key \"arrray\""},
    };
    struct spec_limits lim;
    spec_limits_default(&lim);
    lim.max_tasks = 100;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char doc[1024], msg[512] = "";
        snprintf(doc, sizeof doc, "{\"version\":1,\"tasks\":%s}", cases[i].tasks);
        int rc = parse_bad(doc, &lim, msg, sizeof msg);
        if (rc != cases[i].rc || strstr(msg, cases[i].frag) == NULL)
            fail_msg("case %zu: rc %d msg \"%s\", expected %d with \"%s\"", i, rc, msg, cases[i].rc,
                     cases[i].frag);
    }
    /* an element's id past the length bound once its index is in it: 125 bytes and "{i}" */
    char longid[1024], lmsg[512] = "";
    snprintf(longid, sizeof longid,
             "{\"version\":1,\"tasks\":[{\"id\":\"%0125d{i}\",\"array\":1001,"
             "\"cmd\":[\"t\"]}]}",
             0);
    lim.max_tasks = 2000;
    assert_int_equal(parse_bad(longid, &lim, lmsg, sizeof lmsg), ERR_TOOBIG);
    assert_non_null(strstr(lmsg, "element 1000: \"id\" is over 128 bytes"));
    lim.max_tasks = 100;
    /* the bound itself is accepted */
    const char *full = "{\"version\":1,\"tasks\":[{\"id\":\"a-{i}\",\"array\":60,\"cmd\":[\"t\"]},"
                       "{\"id\":\"b-{i}\",\"array\":40,\"cmd\":[\"t\"]}]}";
    char msg[512] = "";
    struct spec *s = NULL;
    assert_int_equal(spec_parse(full, strlen(full), &lim, &s, msg, sizeof msg), 0);
    assert_int_equal(s->ntasks, 100);
    assert_string_equal(s->tasks[99].id, "b-39");
    spec_destroy(&s);
}

/* A million-task array is a few lines: parsed within the default limits. */
static void test_array_million(void **state)
{
    (void)state;
    const char *doc = "{\"version\":1,\"tasks\":[{\"id\":\"t{i}\",\"array\":1000000,"
                      "\"cmd\":[\"sh\",\"-c\",\"echo {i}\"],\"stage\":\"all\"}]}";
    struct spec *s = parse_ok(doc);
    assert_int_equal(s->ntasks, 1000000);
    assert_int_equal(s->nstages, 1);
    assert_string_equal(s->tasks[999999].cmd[2], "echo 999999");
    assert_int_equal(spec_task_index(s, "t123456"), 123456);
    spec_destroy(&s);
}

static void test_array_alloc_failure(void **state)
{
    (void)state;
    char fp[4096], msg[512];
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/array.json", src_dir());
    int failures = 0, done = 0;
    for (long n = 0; n < 1000 && !done; n++) {
        struct spec *s = NULL;
        mem_fail_after(n);
        int rc = spec_load(fp, NULL, &s, msg, sizeof msg);
        long refused = mem_fail_count();
        mem_fail_reset();
        if (rc == 0) {
            assert_non_null(s);
            spec_destroy(&s);
            done = refused == 0;
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            assert_null(s);
            failures++;
        }
    }
    assert_true(done);
    assert_true(failures > 50);
}

/* Limits known after parsing (the cluster's largest node): the same codes and reasons as a
 * parse with those limits, without parsing again. */
static void test_check_limits(void **state)
{
    (void)state;
    struct spec *s = parse_ok("{\"version\":1,\"tasks\":[{\"id\":\"a-{i}\",\"array\":3,"
                              "\"cmd\":[\"t\"],\"cpu\":2,\"mem_mb\":1000}]}");
    struct spec_limits lim;
    spec_limits_default(&lim);
    char msg[512] = "";
    assert_int_equal(spec_check_limits(s, &lim, msg, sizeof msg), 0);
    lim.max_cpu = 1.5;
    assert_int_equal(spec_check_limits(s, &lim, msg, sizeof msg), ERR_CAPACITY);
    assert_non_null(
        strstr(msg, "task \"a-0\": cpu 2 is larger than any node could hold (max 1.5)"));
    lim.max_cpu = 2;
    lim.max_mem_mb = 999;
    assert_int_equal(spec_check_limits(s, &lim, msg, sizeof msg), ERR_CAPACITY);
    assert_non_null(strstr(msg, "task \"a-0\": mem_mb 1000 is larger than any node could hold"));
    lim.max_mem_mb = 1000;
    lim.max_tasks = 2;
    assert_int_equal(spec_check_limits(s, &lim, msg, sizeof msg), ERR_TOOBIG);
    assert_non_null(strstr(msg, "too many tasks: 3, over the limit of 2"));
    lim.max_tasks = 3;
    assert_int_equal(spec_check_limits(s, &lim, msg, sizeof msg), 0);
    spec_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_bad),
        cmocka_unit_test(test_corpus_valid),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_after_dedup_and_order),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_file_size_bound),
        cmocka_unit_test(test_nul_and_control),
        cmocka_unit_test(test_cycle_message_names_tasks),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_declared_files),
        cmocka_unit_test(test_array_expand),
        cmocka_unit_test(test_array_refusals),
        cmocka_unit_test(test_array_million),
        cmocka_unit_test(test_array_alloc_failure),
        cmocka_unit_test(test_check_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
