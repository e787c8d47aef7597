/* test_e2e_submit.c - `paddock submit` and `paddock job` against a real local cluster (3 RM
 * replicas, 3 PNs, real paddock-jm):
 *   - every malformed spec of tests/specs/bad/ is refused by `paddock submit` with the reason
 *     EXPECTED.tsv names (exit 1, nothing on stdout, nothing registered with the RM), while a
 *     valid job submitted first on the same cluster runs unharmed to success;
 *   - `submit --wait --json` prints exactly one JSON object with the documented fields (no real
 *     with more than 15 significant digits), the job directory holds the spec with
 *     --name/--deadline applied, and its JM opened its RM sockets before it was told its job;
 *     `paddock jobs` keeps its columns aligned under a name longer than the NAME column;
 *   - `submit --wait` prints plain lines when stdout is not a terminal and exits 1 when a task
 *     runs out of attempts, naming it;
 *   - with --rm/--keys/--pub/--jobs-dir instead of a cluster directory, the same works;
 *   - `job deadline` moves the RM's deadline, `job cancel` ends a running job as cancelled;
 *   - a submit refused after its JM was started early (tools/submit_jm.h: a task larger than the
 *     cluster's largest node, an impossible deadline) leaves no JM behind and registers nothing.
 * Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>
#include <dirent.h>

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 3 --pn 3 --pn-cpus 2 --pn-mem-mb 2048");
}

static void skip_without_jm(void)
{
    e2e_skip_without_jm();
}

/* The job id `paddock submit` printed (its only stdout line). */
static void job_id_of(const char *out, char id[64])
{
    size_t n = strcspn(out, "\n");
    assert_true(n > 2 && n < 64);
    memcpy(id, out, n);
    id[n] = '\0';
    assert_memory_equal(id, "j-", 2);
}

static void test_bad_specs_refused_valid_job_unharmed(void **state)
{
    (void)state;
    skip_without_jm();
    struct e2e_run r;
    char good[64];
    e2e_paddock(&r, 30, "submit '%s/tests/specs/valid/diamond_barriers.json'", e2e_src());
    if (r.status != 0)
        fprintf(stderr, "submit: %s\n", r.err);
    assert_int_equal(r.status, 0);
    job_id_of(r.out, good);
    e2e_run_close(&r);

    char path[1200];
    snprintf(path, sizeof path, "%s/tests/specs/bad/EXPECTED.tsv", e2e_src());
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int refused = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || tab == NULL)
            continue;
        *tab = '\0';
        const char *file = line, *fragment = tab + 1;
        e2e_paddock(&r, 30, "submit '%s/tests/specs/bad/%s'", e2e_src(), file);
        if (r.status != 1 || strstr(r.err, fragment) == NULL || r.out[0] != '\0')
            fprintf(stderr, "%s: exit %d, stdout '%s', stderr '%s', expected '%s'\n", file,
                    r.status, r.out, r.err, fragment);
        assert_int_equal(r.status, 1);
        assert_non_null(strstr(r.err, fragment));
        assert_string_equal(r.out, "");
        e2e_run_close(&r);
        refused++;
    }
    fclose(f);
    assert_true(refused >= 40);

    /* none of them reached the RM: the valid job is the only one it knows */
    e2e_paddock(&r, 30, "jobs --json");
    assert_int_equal(r.status, 0);
    json_t *jobs = json_loads(r.out, 0, NULL);
    assert_non_null(jobs);
    assert_int_equal(json_array_size(json_object_get(jobs, "jobs")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(jobs, "jobs"), 0), "job_id")),
                        good);
    json_decref(jobs);
    e2e_run_close(&r);

    json_t *st = e2e_job_wait(good, 90);
    if (st == NULL || strcmp(json_string_value(json_object_get(st, "state")), "succeeded") != 0)
        e2e_job_dump(good);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    assert_int_equal(json_integer_value(json_object_get(st, "tasks_total")), 7);
    assert_int_equal(json_integer_value(json_object_get(st, "tasks_succeeded")), 7);
    json_decref(st);
    json_t *rep = e2e_job_file(good, "report.json");
    assert_non_null(rep);
    assert_true(json_array_size(json_object_get(rep, "attempts")) >= 7);
    json_decref(rep);
}

/* The most digits of any number in text (a number: digits and one '.' between them): a real
 * printed as 43.978000000000002 has 17, one printed as 43.978 five. */
static int most_digits(const char *text)
{
    int most = 0, n = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p >= '0' && *p <= '9')
            n++;
        else if (!(*p == '.' && n > 0 && p[1] >= '0' && p[1] <= '9'))
            n = 0;
        most = n > most ? n : most;
    }
    return most;
}

/* The byte offset of `word` in the first line of text that contains `in`, or -1. */
static long column_of(const char *text, const char *in, const char *word)
{
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        const char *at = strstr(buf, in) != NULL ? strstr(buf, word) : NULL;
        if (at != NULL)
            return at - buf;
        line = end != NULL ? end + 1 : NULL;
    }
    return -1;
}

static void test_submit_wait_json_shape(void **state)
{
    (void)state;
    skip_without_jm();
    struct e2e_run r;
    e2e_paddock(&r, 120,
                "submit '%s/tests/specs/valid/diamond_barriers.json' --wait --json --deadline 2m "
                "--name shape-check",
                e2e_src());
    if (r.status != 0)
        fprintf(stderr, "submit --wait --json: exit %d\n%s\n%s\n", r.status, r.out, r.err);
    assert_int_equal(r.status, 0);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr); /* exactly one document: trailing text fails */
    if (doc == NULL)
        fprintf(stderr, "stdout is not one JSON document (%s):\n%s\n", jerr.text, r.out);
    assert_non_null(doc);
    assert_true(json_is_object(doc));
    const char *id = json_string_value(json_object_get(doc, "job_id"));
    assert_non_null(id);
    assert_memory_equal(id, "j-", 2);
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "succeeded");
    assert_true(json_is_integer(json_object_get(doc, "tasks_total")));
    assert_int_equal(json_integer_value(json_object_get(doc, "tasks_total")), 7);
    assert_int_equal(json_integer_value(json_object_get(doc, "tasks_succeeded")), 7);
    assert_true(json_is_number(json_object_get(doc, "makespan_s")));
    double makespan = json_number_value(json_object_get(doc, "makespan_s"));
    assert_true(makespan > 0.0 && makespan < 120.0);
    assert_true(json_is_number(json_object_get(doc, "deadline_s")));
    assert_true(json_number_value(json_object_get(doc, "deadline_s")) == 120.0);
    assert_true(json_is_boolean(json_object_get(doc, "deadline_met")));
    assert_true(json_is_true(json_object_get(doc, "deadline_met")) == (makespan <= 120.0));
    if (most_digits(r.out) > 15)
        fprintf(stderr, "a number with more than 15 digits:\n%s\n", r.out);
    assert_true(most_digits(r.out) <= 15); /* the ETA, the makespan: 15 significant digits */
    /* the job directory holds the spec as submitted, overrides applied */
    json_t *spec = e2e_job_file(id, "spec.json");
    assert_non_null(spec);
    assert_string_equal(json_string_value(json_object_get(spec, "name")), "shape-check");
    assert_true(json_number_value(json_object_get(spec, "deadline_s")) == 120.0);
    json_decref(spec);
    /* its JM was started before the registration and opened its RM sockets then, before it was
       told its job (jm/daemon/jmd.h jmd_early): the log says so */
    char log[1200];
    snprintf(log, sizeof log, "%s", json_string_value(json_object_get(doc, "job_dir")));
    strncat(log, "/jm.log", sizeof log - strlen(log) - 1);
    char *text = e2e_read_file(log, NULL);
    assert_non_null(text);
    if (!strstr(text, "opened before the job was known"))
        fprintf(stderr, "%s:\n%s\n", log, text);
    assert_non_null(strstr(text, "opened before the job was known"));
    free(text);
    /* and `job show` agrees */
    char jid[64];
    snprintf(jid, sizeof jid, "%s", id);
    e2e_run_close(&r);
    e2e_paddock(&r, 30, "job show %s --json", jid);
    assert_int_equal(r.status, 0);
    json_t *show = json_loads(r.out, 0, NULL);
    assert_non_null(show);
    assert_string_equal(json_string_value(json_object_get(show, "state")), "succeeded");
    assert_string_equal(json_string_value(json_object_get(json_object_get(show, "rm"), "name")),
                        "shape-check");
    json_decref(show);
    json_decref(doc);
    e2e_run_close(&r);
    /* `paddock jobs`: a name longer than the NAME column's 20 bytes widens it, so every row's
       VC, STATE and DEADLINE start where the header's do */
    const char *longname = "a-job-name-longer-than-the-name-column";
    e2e_paddock(&r, 120,
                "submit '%s/tests/specs/valid/minimal.json' --wait --deadline 2m --name %s",
                e2e_src(), longname);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
    e2e_paddock(&r, 30, "user list");
    assert_int_equal(r.status, 0); /* no rules: said, not an empty table */
    assert_non_null(strstr(r.out, "open to every user"));
    e2e_run_close(&r);
    e2e_paddock(&r, 30, "jobs");
    assert_int_equal(r.status, 0);
    /* VC and STATE are left-aligned: a row's value starts where the header's word does;
       DEADLINE is right-aligned: the row's "2m" ends where the header's word ends */
    const char *cols[][2] = {{"VC", "default"}, {"STATE", "done"}, {"DEADLINE", "2m"}};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
        long head = column_of(r.out, "ETA/P95", cols[k][0]);
        long row = column_of(r.out, longname, cols[k][1]);
        if (k == 2) {
            head += (long)strlen(cols[k][0]);
            row += (long)strlen(cols[k][1]);
        }
        if (head != row)
            fprintf(stderr, "%s: header at %ld, row at %ld\n%s\n", cols[k][0], head, row, r.out);
        assert_true(head > (long)strlen(longname));
        assert_int_equal(head, row);
    }
    e2e_run_close(&r);
}

/* Without --json: the plain lines (stdout is not a terminal) and the exit code follow the job's
 * outcome: a job whose task always fails makes `submit --wait` exit 1 and name the task. */
static void test_submit_wait_text_and_failure(void **state)
{
    (void)state;
    skip_without_jm();
    struct e2e_run r;
    e2e_paddock(&r, 120, "submit '%s/tests/specs/valid/diamond_barriers.json' --wait", e2e_src());
    assert_int_equal(r.status, 0);
    assert_memory_equal(r.out, "submitted j-", 12);
    assert_non_null(strstr(r.out, " succeeded: 7/7 tasks in "));
    assert_non_null(strstr(r.out, "deadline 60s met"));
    e2e_run_close(&r);

    char spec[600];
    snprintf(spec, sizeof spec, "%s/failing.json", e2e_dir());
    FILE *f = fopen(spec, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\":1,\"name\":\"failing\",\"tasks\":["
               "{\"id\":\"ok\",\"cmd\":[\"true\"]},"
               "{\"id\":\"broken\",\"cmd\":[\"sh\",\"-c\",\"exit 3\"],\"after\":[\"ok\"]}]}\n");
    fclose(f);
    e2e_paddock(&r, 120, "submit '%s' --wait --json", spec);
    if (r.status != 1)
        fprintf(stderr, "failing job: exit %d\n%s\n%s\n", r.status, r.out, r.err);
    assert_int_equal(r.status, 1);
    json_t *doc = json_loads(r.out, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "failed");
    assert_int_equal(json_integer_value(json_object_get(doc, "tasks_succeeded")), 1);
    const char *reason = json_string_value(json_object_get(doc, "reason"));
    assert_non_null(reason);
    assert_non_null(strstr(reason, "broken"));
    json_decref(doc);
    e2e_run_close(&r);
}

/* The value of `key = ...` in the cluster's cluster.conf, commas without spaces. */
static void conf_value(const char *key, char *out, size_t cap)
{
    char path[600], line[2048];
    snprintf(path, sizeof path, "%s/cluster.conf", e2e_dir());
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    out[0] = '\0';
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, kl) != 0 || line[kl] != ' ')
            continue;
        const char *v = strchr(line, '=');
        size_t n = 0;
        for (v = v != NULL ? v + 1 : line; *v != '\0' && *v != '\n' && n + 1 < cap; v++)
            if (*v != ' ')
                out[n++] = *v;
        out[n] = '\0';
    }
    fclose(f);
    assert_true(out[0] != '\0');
}

/* Outside a local cluster: --rm ENDPOINTS --keys DIR --pub ENDPOINTS and --jobs-dir, with
 * PADDOCK_CLUSTER set (the helper sets it) but overridden by --rm. */
static void test_submit_with_rm_endpoints(void **state)
{
    (void)state;
    skip_without_jm();
    char api[1024], pub[1024];
    conf_value("api", api, sizeof api);
    conf_value("pub", pub, sizeof pub);
    struct e2e_run r;
    e2e_paddock(&r, 120,
                "submit '%s/tests/specs/valid/minimal.json' --rm '%s' --keys '%s/keys' --pub '%s' "
                "--jobs-dir '%s/elsewhere/jobs' --name by-endpoints --wait --json",
                e2e_src(), api, e2e_dir(), pub, e2e_dir());
    if (r.status != 0)
        fprintf(stderr, "submit --rm: exit %d\n%s\n%s\n", r.status, r.out, r.err);
    assert_int_equal(r.status, 0);
    json_t *doc = json_loads(r.out, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "succeeded");
    const char *dir = json_string_value(json_object_get(doc, "job_dir"));
    assert_non_null(dir);
    assert_non_null(strstr(dir, "/elsewhere/jobs/j-"));
    char id[64];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(doc, "job_id")));
    json_decref(doc);
    e2e_run_close(&r);
    /* not in the cluster's own jobs directory; `job show` finds it with the same options */
    json_t *st = e2e_job_file(id, "state.json");
    assert_null(st);
    e2e_paddock(&r, 30,
                "job show %s --rm '%s' --keys '%s/keys' --jobs-dir '%s/elsewhere/jobs' --json", id,
                api, e2e_dir(), e2e_dir());
    assert_int_equal(r.status, 0);
    json_t *show = json_loads(r.out, 0, NULL);
    assert_non_null(show);
    assert_string_equal(json_string_value(json_object_get(show, "state")), "succeeded");
    assert_string_equal(json_string_value(json_object_get(json_object_get(show, "rm"), "name")),
                        "by-endpoints");
    json_decref(show);
    e2e_run_close(&r);
}

/* Processes whose command line holds both `a` and `b` (from /proc/PID/cmdline). */
static int processes_with(const char *a, const char *b)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], buf[8192];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < len; i++)
            buf[i] = buf[i] == '\0' ? ' ' : buf[i];
        buf[len] = '\0';
        n += strstr(buf, a) != NULL && strstr(buf, b) != NULL;
    }
    closedir(d);
    return n;
}

/* Entries of a directory but . and .. (0 when it cannot be read). */
static size_t entries(const char *path)
{
    DIR *d = opendir(path);
    size_t n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d != NULL)
        closedir(d);
    return n;
}

/* Submits a one-task job NAME whose task is `{"id":"a",TASK}` with ARGS: exit `status` with
 * `why` on stderr, and no JM left waiting for it. */
static void submit_refused(const char *name, const char *task, const char *args, int status,
                           const char *why)
{
    char spec[1200], text[1024];
    snprintf(spec, sizeof spec, "%s/%s.json", e2e_dir(), name);
    snprintf(text, sizeof text, "{\"version\":1,\"name\":\"%s\",\"tasks\":[{\"id\":\"a\",%s}]}\n",
             name, task);
    e2e_write_file(spec, text);
    struct e2e_run r;
    e2e_paddock(&r, 30, "submit '%s' %s", spec, args);
    if (r.status != status || strstr(r.err, why) == NULL)
        fprintf(stderr, "%s: exit %d\n%s\n%s\n", name, r.status, r.out, r.err);
    assert_int_equal(r.status, status);
    assert_non_null(strstr(r.err, why));
    e2e_run_close(&r);
    assert_int_equal(processes_with("--job-from-fd", e2e_dir()), 0);
}

/* `paddock submit` starts the JM before asking the RM anything (tools/submit_jm.h); a submit
 * the RM's answers refuse calls it off: exit 1 or 3 with the reason, no JM left waiting, no job
 * registered, no job directory made. */
/* The JM `paddock submit` starts is forked from the submit's own image (no second load of
 * ZeroMQ), yet ps and the job tools see paddock-jm: its short name and its command line. */
static void test_jm_forked_titled(void **state)
{
    (void)state;
    skip_without_jm();
    char spec[1200], id[64], path[1400];
    snprintf(spec, sizeof spec, "%s/forked.json", e2e_dir());
    e2e_write_file(spec, "{\"version\": 1, \"name\": \"forked\", \"tasks\": [{\"id\": \"t\", "
                         "\"cmd\": [\"sleep\", \"30\"], \"runtime_s\": 30}]}");
    e2e_submit(spec, id);
    snprintf(path, sizeof path, "%s/jobs/%s/jm.pid", e2e_dir(), id);
    char *text = NULL;
    for (int i = 0; i < 100 && (text = e2e_read_file(path, NULL)) == NULL; i++)
        e2e_sleep_ms(50);
    assert_non_null(text);
    long pid = strtol(text, NULL, 10);
    free(text);
    assert_true(pid > 0);
    char proc[64], exe[1200] = "";
    snprintf(proc, sizeof proc, "/proc/%ld/exe", pid);
    ssize_t n = readlink(proc, exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    assert_non_null(strstr(exe, "/paddock")); /* the submit's binary, not paddock-jm's */
    assert_null(strstr(exe, "paddock-jm"));
    snprintf(proc, sizeof proc, "/proc/%ld/comm", pid);
    text = e2e_read_file(proc, NULL);
    assert_non_null(text);
    assert_string_equal(text, "paddock-jm\n");
    free(text);
    size_t len = 0;
    snprintf(proc, sizeof proc, "/proc/%ld/cmdline", pid);
    text = e2e_read_file(proc, &len);
    assert_non_null(text);
    assert_true(len > 25);
    assert_memory_equal(text, "paddock-jm\0--job-from-fd\0", 25);
    for (size_t i = 0; i + 1 < len; i++)
        text[i] = text[i] == '\0' ? ' ' : text[i];
    assert_non_null(strstr(text, e2e_dir()));
    free(text);
    struct e2e_run r;
    e2e_paddock(&r, 30, "job cancel %s", id);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
    json_t *st = e2e_job_wait(id, 60);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "cancelled");
    json_decref(st);
}

static void test_refused_after_jm_start(void **state)
{
    (void)state;
    skip_without_jm();
    e2e_jobs_stop(); /* the earlier tests' JMs, started the same way */
    assert_int_equal(processes_with("--job-from-fd", e2e_dir()), 0);
    struct e2e_run r;
    e2e_paddock(&r, 30, "jobs --json");
    assert_int_equal(r.status, 0);
    json_t *jobs = json_loads(r.out, 0, NULL);
    assert_non_null(jobs);
    size_t known = json_array_size(json_object_get(jobs, "jobs"));
    json_decref(jobs);
    e2e_run_close(&r);
    char root[1200];
    snprintf(root, sizeof root, "%s/jobs", e2e_dir());
    size_t dirs_before = entries(root);
    assert_true(dirs_before > 0); /* the earlier tests' job directories */
    /* larger than any node of this cluster (2,048 MiB each): known only from the RM's limits */
    submit_refused("too-big", "\"cmd\":[\"true\"],\"mem_mb\":4096", "", 1,
                   "larger than any node could hold");
    /* an hour of work on the cluster's 6 cpus against a one-second deadline: admission refuses */
    submit_refused("too-late", "\"cmd\":[\"sleep\",\"3600\"],\"runtime_s\":3600", "--deadline 1s",
                   3, "");
    e2e_paddock(&r, 30, "jobs --json");
    jobs = json_loads(r.out, 0, NULL);
    assert_non_null(jobs);
    assert_int_equal(json_array_size(json_object_get(jobs, "jobs")), known);
    json_decref(jobs);
    e2e_run_close(&r);
    assert_int_equal(entries(root), dirs_before);
}

static void test_job_deadline_and_cancel(void **state)
{
    (void)state;
    skip_without_jm();
    char spec[600];
    snprintf(spec, sizeof spec, "%s/long.json", e2e_dir());
    FILE *f = fopen(spec, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\":1,\"name\":\"long\",\"tasks\":["
               "{\"id\":\"a\",\"cmd\":[\"sleep\",\"60\"],\"runtime_s\":60},"
               "{\"id\":\"b\",\"cmd\":[\"sleep\",\"60\"],\"runtime_s\":60,\"after\":[\"a\"]}]}\n");
    fclose(f);
    struct e2e_run r;
    char id[64];
    e2e_paddock(&r, 30, "submit '%s'", spec);
    assert_int_equal(r.status, 0);
    job_id_of(r.out, id);
    e2e_run_close(&r);

    /* a first deadline goes through admission (issue 25): 10 minutes fits 2 of work */
    e2e_paddock(&r, 30, "job deadline %s 10m", id);
    if (r.status != 0)
        fprintf(stderr, "job deadline: %s\n", r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
    e2e_paddock(&r, 30, "job show %s --json", id);
    assert_int_equal(r.status, 0);
    json_t *show = json_loads(r.out, 0, NULL);
    json_t *rm = json_object_get(show, "rm");
    assert_non_null(rm);
    assert_int_equal(json_integer_value(json_object_get(rm, "deadline_ms")) -
                         json_integer_value(json_object_get(rm, "submitted_ms")),
                     600000);
    json_decref(show);
    e2e_run_close(&r);

    /* the job manager learns it at a lease renewal: its state.json shows the new deadline */
    double seen = 0;
    for (int i = 0; i < 600 && seen != 600.0; i++) {
        json_t *st = e2e_job_file(id, "state.json");
        seen = json_number_value(json_object_get(st, "deadline_s"));
        json_decref(st);
        if (seen != 600.0) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(seen == 600.0);

    /* `job deadline` refuses what is not a duration */
    e2e_paddock(&r, 30, "job deadline %s soon", id);
    assert_int_equal(r.status, 2);
    e2e_run_close(&r);

    e2e_paddock(&r, 30, "job cancel %s", id);
    if (r.status != 0)
        fprintf(stderr, "job cancel: %s\n", r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
    json_t *st = e2e_job_wait(id, 45);
    if (st == NULL)
        e2e_job_dump(id);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "cancelled");
    assert_int_equal(json_integer_value(json_object_get(st, "tasks_succeeded")), 0);
    json_decref(st);
}

int main(void)
{
    if (!e2e_have_jm()) {
        fprintf(stderr, "paddock-jm is not built: skipped\n");
        return 77; /* ctest: SKIP_RETURN_CODE */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_specs_refused_valid_job_unharmed),
        cmocka_unit_test(test_submit_wait_json_shape),
        cmocka_unit_test(test_submit_wait_text_and_failure),
        cmocka_unit_test(test_submit_with_rm_endpoints),
        cmocka_unit_test(test_job_deadline_and_cancel),
        cmocka_unit_test(test_jm_forked_titled),
        cmocka_unit_test(test_refused_after_jm_start),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
