/* Job profiles: built from attempts, saved atomically, loaded back; missing and corrupt files
 * are refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/profile.h"

struct fixture {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/paddock-profile-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/job.profile", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char tmp[160];
    unlink(f->path);
    snprintf(tmp, sizeof tmp, "%s.tmp", f->path);
    unlink(tmp);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Stage "map": ten successful attempts running 1..10 s (queued 2 s, init 0.5 s) and one failure
 * after 3 s; stage "reduce": one attempt of 20 s. */
static void build(struct profile *p)
{
    struct profile_attempt a[12];
    for (int i = 0; i < 10; i++)
        a[i] = (struct profile_attempt){.stage = 0,
                                        .queue_s = 2,
                                        .init_s = 0.5,
                                        .run_s = i + 1,
                                        .input_bytes = 100.0 * (i + 1),
                                        .est_s = 0.5 * (i + 1),
                                        .ok = true};
    a[10] =
        (struct profile_attempt){.stage = 0, .queue_s = 1, .init_s = 0.5, .run_s = 3, .ok = false};
    a[11] =
        (struct profile_attempt){.stage = 1, .queue_s = 0, .init_s = 1, .run_s = 20, .ok = true};
    const char *names[2] = {"map", "reduce"};
    char msg[128];
    profile_init(p);
    assert_int_equal(profile_build(p, "wordcount", 2, names, a, 12, msg, sizeof msg), 0);
}

static void test_build_statistics(void **state)
{
    (void)state;
    struct profile p;
    build(&p);
    assert_string_equal(p.job, "wordcount");
    assert_int_equal(p.nstages, 2);
    const struct profile_stage *m = &p.stages[profile_find_stage(&p, "map")];
    assert_int_equal(m->tasks, 10);
    assert_int_equal(m->attempts, 11);
    assert_int_equal(m->failures, 1);
    assert_true(fabs(profile_stage_fail_prob(m) - 1.0 / 11) < 1e-12);
    assert_true(fabs(m->runtime_q[0] - 1) < 1e-12);
    assert_true(fabs(m->runtime_q[PROFILE_NQ - 1] - 10) < 1e-12);
    assert_true(fabs(m->runtime_q[(PROFILE_NQ - 1) / 2] - 5.5) < 1e-12);
    assert_true(fabs(profile_quantile(m->runtime_q, 0.5) - 5.5) < 1e-12);
    assert_true(fabs(m->runtime_total - 55) < 1e-12);
    /* Every task ran twice its estimate: the ratio distribution is a point at 2. */
    assert_int_equal(m->ratio_samples, 10);
    assert_true(fabs(m->ratio_q[0] - 2) < 1e-12 && fabs(m->ratio_q[PROFILE_NQ - 1] - 2) < 1e-12);
    const struct profile_stage *rd = &p.stages[profile_find_stage(&p, "reduce")];
    assert_int_equal(rd->ratio_samples, 0); /* no estimate given */
    assert_true(fabs(profile_stage_runtime_mean(m) - 5.5) < 1e-12);
    assert_true(fabs(m->queue_total - 21) < 1e-12);
    assert_true(fabs(m->fail_run_mean - 3) < 1e-12);
    assert_true(fabs(m->input_mean - 550) < 1e-12);
    assert_true(fabs(m->input_max - 1000) < 1e-12);
    assert_int_equal(profile_find_stage(&p, "nope"), -1);
    profile_close(&p);

    /* A bad stage index is refused and leaves the target untouched. */
    struct profile_attempt bad = {.stage = 5, .run_s = 1, .ok = true};
    const char *names[1] = {"x"};
    char msg[128];
    profile_init(&p);
    assert_int_equal(profile_build(&p, "j", 1, names, &bad, 1, msg, sizeof msg), ERR_INVAL);
    assert_non_null(strstr(msg, "stage 5"));
    assert_null(p.job);
}

static void test_round_trip(void **state)
{
    struct fixture *f = *state;
    struct profile p, q;
    char msg[256];
    build(&p);
    assert_int_equal(profile_save(&p, f->path, msg, sizeof msg), 0);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", f->path);
    assert_int_equal(access(tmp, F_OK), -1); /* renamed away */
    profile_init(&q);
    assert_int_equal(profile_load(&q, f->path, msg, sizeof msg), 0);
    assert_string_equal(q.job, p.job);
    assert_int_equal(q.nstages, p.nstages);
    for (int s = 0; s < p.nstages; s++) {
        assert_string_equal(q.stages[s].name, p.stages[s].name);
        assert_int_equal(q.stages[s].tasks, p.stages[s].tasks);
        assert_int_equal(q.stages[s].attempts, p.stages[s].attempts);
        assert_int_equal(q.stages[s].failures, p.stages[s].failures);
        assert_int_equal(q.stages[s].ratio_samples, p.stages[s].ratio_samples);
        for (int k = 0; k < PROFILE_NQ; k++) {
            assert_true(q.stages[s].runtime_q[k] == p.stages[s].runtime_q[k]);
            assert_true(q.stages[s].init_q[k] == p.stages[s].init_q[k]);
            assert_true(q.stages[s].ratio_q[k] == p.stages[s].ratio_q[k]);
        }
        assert_true(q.stages[s].queue_total == p.stages[s].queue_total);
        assert_true(q.stages[s].runtime_total == p.stages[s].runtime_total);
        assert_true(q.stages[s].input_max == p.stages[s].input_max);
    }
    profile_close(&q);
    profile_close(&p);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_missing_and_corrupt(void **state)
{
    struct fixture *f = *state;
    struct profile p, good;
    char msg[256];
    build(&good);
    profile_init(&p);
    assert_int_equal(profile_load(&p, f->path, msg, sizeof msg), ERR_NOTFOUND);
    assert_non_null(strstr(msg, f->path));

    /* A truncated copy of a valid profile. */
    char *text = profile_to_json(&good);
    assert_non_null(text);
    text[strlen(text) / 2] = '\0';
    write_file(f->path, text);
    mem_free(text);
    assert_int_equal(profile_load(&p, f->path, msg, sizeof msg), ERR_PARSE);
    assert_true(strlen(msg) > 0);
    assert_null(p.job);

    write_file(f->path,
               "{\"format\":\"paddock-profile\",\"version\":2,\"job\":\"x\",\"stages\":[]}");
    assert_int_equal(profile_load(&p, f->path, msg, sizeof msg), ERR_VERSION);
    assert_non_null(strstr(msg, "version 2"));

    write_file(f->path, "[1,2,3]");
    assert_int_equal(profile_load(&p, f->path, msg, sizeof msg), ERR_PARSE);

    /* A negative run time inside an otherwise well-formed profile. */
    text = profile_to_json(&good);
    char *at = strstr(text, "\"runtime_total_s\": ");
    assert_non_null(at);
    at += strlen("\"runtime_total_s\": ");
    *at = '-';
    write_file(f->path, text);
    mem_free(text);
    assert_int_equal(profile_load(&p, f->path, msg, sizeof msg), ERR_PARSE);
    assert_non_null(strstr(msg, "runtime_total_s"));
    assert_null(p.job);

    /* An empty file. */
    write_file(f->path, "");
    assert_int_equal(profile_load(&p, f->path, msg, sizeof msg), ERR_PARSE);

    /* Saving into a directory that does not exist fails with the reason and leaves nothing. */
    char bad[192];
    snprintf(bad, sizeof bad, "%s/no/such/dir/p.json", f->dir);
    assert_int_equal(profile_save(&good, bad, msg, sizeof msg), ERR_IO);
    assert_true(strlen(msg) > 0);
    profile_close(&good);
}

static void test_load_under_allocation_failure(void **state)
{
    (void)state;
    struct profile good, p;
    build(&good);
    char *text = profile_to_json(&good);
    assert_non_null(text);
    char msg[128];
    int ok = 0;
    for (long n = 0; n < 200 && !ok; n++) {
        profile_init(&p);
        mem_fail_after(n);
        int rc = profile_from_json(&p, text, strlen(text), msg, sizeof msg);
        mem_fail_reset();
        if (rc == 0) {
            ok = 1;
            assert_int_equal(p.nstages, 2);
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            assert_null(p.job);
        }
        profile_close(&p);
    }
    assert_true(ok);
    mem_free(text);
    profile_close(&good);
}

static void test_path_by_job_name(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(profile_path(buf, sizeof buf, "/var/lib/paddock", "clicklog-hourly"), 0);
    assert_string_equal(buf, "/var/lib/paddock/clicklog-hourly.profile.json");
    assert_int_equal(profile_path(buf, sizeof buf, "d", "../etc/pass wd"), 0);
    assert_string_equal(buf, "d/_._etc_pass_wd.profile.json");
    assert_int_equal(profile_path(buf, sizeof buf, "d", ""), ERR_INVAL);
    assert_int_equal(profile_path(buf, 20, "d", "a-rather-long-job-name"), ERR_TOOBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_statistics),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_and_corrupt, setup, teardown),
        cmocka_unit_test(test_load_under_allocation_failure),
        cmocka_unit_test(test_path_by_job_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
