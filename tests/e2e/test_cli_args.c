/* test_cli_args.c - the CLI's side of admission and ETA, without a cluster:
 *   - tools/jobdir's helpers: durations printed the way --deadline reads them back ("3m10s"),
 *     rounded up where a deadline is suggested; the ETA text and the live line with it; the
 *     token size read from the RM's "tokens" document (defaults when absent); where profiles
 *     are looked up;
 *   - `paddock quote` and `paddock submit --best-effort` as a user runs them: usage errors exit
 *     2, a bad spec is refused (exit 1, the reason named) before any cluster is needed, a
 *     compound --deadline is accepted, and no cluster is an error that says so. */
#include "tools/jobdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/capture.h"
#include <jansson.h>

/* ---- jobdir helpers ---- */

static void check_format(double s, bool up, const char *want)
{
    char out[JOBDIR_DURATION_SIZE];
    jobdir_format_duration(s, up, out, sizeof out);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "format(%g, %d) = '%s', want '%s'\n", s, up, out, want);
    assert_string_equal(out, want);
}

static void test_format_duration(void **state)
{
    (void)state;
    check_format(0.85, false, "850ms");
    check_format(4.5, false, "4.5s");
    check_format(4.0, false, "4s");
    check_format(45, false, "45s");
    check_format(120, false, "2m");
    check_format(190, false, "3m10s");
    check_format(432, false, "7m12s");
    check_format(3725, false, "1h2m5s");
    check_format(3600, false, "1h");
    check_format(0, false, "0ms");
    check_format(-1, false, "-");
    /* rounded up: a suggested deadline never falls short of the value */
    check_format(189.2, true, "3m10s");
    check_format(189.2, false, "3m9s");
    check_format(4.51, true, "4.6s");
    check_format(0.2, true, "0.2s");
    check_format(9.99, true, "10s");
}

static void test_parse_duration(void **state)
{
    (void)state;
    char msg[256];
    int64_t ms = 0;
    assert_int_equal(jobdir_parse_duration("3m10s", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 190000);
    assert_int_equal(jobdir_parse_duration("1h 2m", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 3720000);
    assert_int_equal(jobdir_parse_duration("90s", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(jobdir_parse_duration("1.5m", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(jobdir_parse_duration("250ms", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 250);
    assert_true(jobdir_parse_duration("soon", &ms, msg, sizeof msg) < 0);
    assert_true(jobdir_parse_duration("3x", &ms, msg, sizeof msg) < 0);
    assert_non_null(strstr(msg, "unknown unit"));
    assert_true(jobdir_parse_duration("", &ms, msg, sizeof msg) < 0);
    assert_true(jobdir_parse_duration("5", &ms, msg, sizeof msg) < 0); /* needs a unit */
    /* what the formatter prints reads back to the value (whole seconds from 10 s on) */
    static const double vals[] = {12, 59, 61, 190, 432, 3599, 3725, 86461};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char out[JOBDIR_DURATION_SIZE];
        jobdir_format_duration(vals[i], true, out, sizeof out);
        assert_int_equal(jobdir_parse_duration(out, &ms, msg, sizeof msg), 0);
        assert_int_equal(ms, (int64_t)(vals[i] * 1000));
    }
}

static void test_eta_text_and_live_line(void **state)
{
    (void)state;
    char eta[160], line[512];
    json_t *st = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:i, s:i}", "state", "running",
                           "tasks_total", 120, "tasks_succeeded", 40, "tasks_running", 8,
                           "elapsed_s", 12.5, "deadline_s", 600.0, "eta_s", 432.0, "eta_p95_s",
                           520.0, "tokens_granted", 4, "tokens_target", 4);
    assert_non_null(st);
    assert_string_equal(jobdir_eta_text(st, eta, sizeof eta), "ETA 7m12s, p95 8m40s, deadline 10m");
    jobdir_progress_line(st, line, sizeof line);
    assert_non_null(strstr(line, "40/120 done"));
    assert_non_null(strstr(line, "12.5s elapsed  ETA 7m12s, p95 8m40s, deadline 10m"));
    assert_non_null(strstr(line, "tokens 4/4"));
    /* p95 unknown: the median alone */
    json_object_set_new(st, "eta_p95_s", json_null());
    assert_string_equal(jobdir_eta_text(st, eta, sizeof eta), "ETA 7m12s, deadline 10m");
    /* ETA unknown: no ETA, the line as before */
    json_object_set_new(st, "eta_s", json_null());
    assert_string_equal(jobdir_eta_text(st, eta, sizeof eta), "");
    jobdir_progress_line(st, line, sizeof line);
    assert_null(strstr(line, "ETA"));
    assert_non_null(strstr(line, "12.5s of 600s deadline (2%)"));
    json_decref(st);
}

static void test_token_size(void **state)
{
    (void)state;
    double cpu = 0;
    uint64_t mem = 0;
    json_t *doc = json_loads("{\"virtual_clusters\": ["
                             "{\"name\": \"default\", \"capacity\": 8},"
                             "{\"name\": \"big\", \"token_cpu\": 4, \"token_mem_mb\": 16384}]}",
                             0, NULL);
    assert_non_null(doc);
    jobdir_token_size(doc, "big", &cpu, &mem);
    assert_true(cpu == 4.0);
    assert_int_equal(mem, 16384);
    jobdir_token_size(doc, "default", &cpu, &mem); /* an older RM: no token size */
    assert_true(cpu == 1.0);
    assert_int_equal(mem, 4096);
    jobdir_token_size(doc, "nosuch", &cpu, &mem);
    assert_true(cpu == 1.0);
    assert_int_equal(mem, 4096);
    jobdir_token_size(NULL, "big", &cpu, &mem); /* the RM did not answer */
    assert_true(cpu == 1.0);
    assert_int_equal(mem, 4096);
    json_decref(doc);
}

static void test_profile_dir(void **state)
{
    (void)state;
    char out[JOBDIR_PATH];
    struct jobdir_opts o = {.cluster = "/c"};
    assert_int_equal(jobdir_profile_dir(&o, "/c/jobs", out, sizeof out), 0);
    assert_string_equal(out, "/c/profiles"); /* paddock-jm's own default */
    o.jobs_dir = "/x/myjobs";
    assert_int_equal(jobdir_profile_dir(&o, "/x/myjobs", out, sizeof out), 0);
    assert_string_equal(out, "/x/profiles");
    struct jobdir_opts r = {.rm = "tcp://h:1", .keys = "/k"};
    assert_int_equal(jobdir_profile_dir(&r, "/home/u/.paddock/jobs", out, sizeof out), 0);
    assert_string_equal(out, "/home/u/.paddock/profiles");
    char tiny[8];
    assert_true(jobdir_profile_dir(&r, "/home/u/.paddock/jobs", tiny, sizeof tiny) < 0);
}

/* ---- the binary ---- */

static char out_buf[1 << 15], err_path[256];

/* Runs `paddock ARGS` without a cluster in the environment; stdout into out_buf, stderr into
 * err_path; returns the exit code. */
static int paddock(const char *args)
{
    const char *bin = getenv("PADDOCK_BIN_DIR");
    assert_non_null(bin);
    snprintf(err_path, sizeof err_path, "/tmp/paddock-test-cli-args-%ld.err", (long)getpid());
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && env -u PADDOCK_CLUSTER HOME=/nonexistent '%s/paddock' %s 2>'%s'",
             getenv("PADDOCK_SOURCE_DIR"), bin, args, err_path);
    return capture_run(cmd, out_buf, sizeof out_buf);
}

/* Whether the last run's stderr holds `s`. */
static bool err_has(const char *s)
{
    static char buf[1 << 15];
    FILE *f = fopen(err_path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    bool ok = strstr(buf, s) != NULL;
    if (!ok)
        fprintf(stderr, "stderr has no '%s':\n%s\n", s, buf);
    return ok;
}

#define VALID "tests/specs/valid/diamond_barriers.json"

static void test_quote_usage(void **state)
{
    (void)state;
    assert_int_equal(paddock("quote"), 2);
    assert_true(err_has("usage: paddock quote SPEC.json"));
    assert_int_equal(paddock("quote " VALID " --bogus"), 2);
    assert_int_equal(paddock("quote " VALID " " VALID), 2);
    assert_int_equal(paddock("quote " VALID " --deadline"), 2);
    assert_int_equal(paddock("quote " VALID " --deadline soon"), 2);
    assert_true(err_has("--deadline 'soon'"));
    assert_int_equal(paddock("quote " VALID " --deadline 0s"), 2);
    assert_true(err_has("must be positive"));
    assert_string_equal(out_buf, "");
    /* `help` lists it */
    assert_int_equal(paddock("help"), 0);
    assert_non_null(strstr(out_buf, "quote"));
}

static void test_quote_bad_spec_before_cluster(void **state)
{
    (void)state;
    /* refused with the parser's reason, though no cluster is given */
    assert_int_equal(paddock("quote tests/specs/bad/cycle.json --deadline 3m10s"), 1);
    assert_true(err_has("dependency cycle"));
    assert_int_equal(paddock("quote tests/specs/no-such-spec.json"), 1);
    assert_true(err_has("no-such-spec.json"));
    /* a good spec and a compound deadline get as far as the missing cluster */
    assert_int_equal(paddock("quote " VALID " --deadline 3m10s --json"), 1);
    assert_true(err_has("no cluster"));
    assert_string_equal(out_buf, "");
}

static void test_submit_best_effort_args(void **state)
{
    (void)state;
    assert_int_equal(paddock("submit --best-effort"), 2);
    assert_true(err_has("--best-effort"));
    assert_int_equal(paddock("submit " VALID " --best-effort --bogus"), 2);
    assert_int_equal(paddock("submit " VALID " --best-effort --deadline 3x"), 1);
    assert_true(err_has("--deadline '3x'"));
    assert_int_equal(paddock("submit tests/specs/bad/cycle.json --best-effort"), 1);
    assert_true(err_has("dependency cycle"));
    /* accepted as far as the missing cluster: the compound deadline parses */
    assert_int_equal(paddock("submit " VALID " --best-effort --deadline 3m10s"), 1);
    assert_true(err_has("no cluster"));
    assert_string_equal(out_buf, "");
    unlink(err_path);
}

/* `job show` right after `submit`: the job's directory is there before its JM writes state.json
 * (and before the RM's record can be read back): "starting", not "no such job"; a directory
 * that is not there is still an error. */
static void test_job_show_starting(void **state)
{
    (void)state;
    char root[128], dir[160], args[512];
    snprintf(root, sizeof root, "/tmp/paddock-test-cli-args-%ld", (long)getpid());
    snprintf(dir, sizeof dir, "%s/jobs", root);
    assert_int_equal(mkdir(root, 0700), 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof dir, "%s/jobs/j-fresh", root);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(args, sizeof args,
             "job show j-fresh --jobs-dir %s/jobs --rm tcp://127.0.0.1:1 --keys %s", root, root);
    assert_int_equal(paddock(args), 0);
    assert_non_null(strstr(out_buf, "starting"));
    snprintf(args, sizeof args,
             "job show j-fresh --json --jobs-dir %s/jobs --rm tcp://127.0.0.1:1 --keys %s", root,
             root);
    assert_int_equal(paddock(args), 0);
    json_t *doc = json_loads(out_buf, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "starting");
    json_decref(doc);
    snprintf(args, sizeof args,
             "job show j-gone --jobs-dir %s/jobs --rm tcp://127.0.0.1:1 --keys %s", root, root);
    assert_int_equal(paddock(args), 1);
    assert_true(err_has("no job directory"));
    rmdir(dir);
    snprintf(dir, sizeof dir, "%s/jobs", root);
    rmdir(dir);
    rmdir(root);
    unlink(err_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_duration),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_eta_text_and_live_line),
        cmocka_unit_test(test_token_size),
        cmocka_unit_test(test_profile_dir),
        cmocka_unit_test(test_quote_usage),
        cmocka_unit_test(test_quote_bad_spec_before_cluster),
        cmocka_unit_test(test_submit_best_effort_args),
        cmocka_unit_test(test_job_show_starting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
