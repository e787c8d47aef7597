/* test_shape.c - the job's shape for the RM's arbiter in sized tokens (jm/shape.h), on small
 * DAGs computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/profile.h"
#include "jm/shape.h"
#include "jm/spec.h"

static void near(double a, double b)
{
    if (!(fabs(a - b) < 1e-6 * (1 + fabs(b))))
        fail_msg("%.9g != %.9g", a, b);
}
#define NEAR(a, b) near((a), (b))

static struct spec *parse(const char *json)
{
    struct spec *s = NULL;
    char msg[256];
    int rc = spec_parse(json, strlen(json), NULL, &s, msg, sizeof msg);
    if (rc != 0)
        fail_msg("spec: %s", msg);
    return s;
}

/* map: 4 tasks of 16 cores, 10 s; reduce (barrier after map): 2 tasks of 2 cores and 8 GiB,
 * 30 s. */
static const char *TWO_STAGES =
    "{\"version\":1,\"stages\":[{\"name\":\"map\"},{\"name\":\"reduce\",\"after\":[\"map\"]}],"
    "\"tasks\":["
    "{\"id\":\"m0\",\"stage\":\"map\",\"cmd\":[\"true\"],\"cpu\":16,\"mem_mb\":1024,\"runtime_s\":"
    "10},"
    "{\"id\":\"m1\",\"stage\":\"map\",\"cmd\":[\"true\"],\"cpu\":16,\"mem_mb\":1024,\"runtime_s\":"
    "10},"
    "{\"id\":\"m2\",\"stage\":\"map\",\"cmd\":[\"true\"],\"cpu\":16,\"mem_mb\":1024,\"runtime_s\":"
    "10},"
    "{\"id\":\"m3\",\"stage\":\"map\",\"cmd\":[\"true\"],\"cpu\":16,\"mem_mb\":1024,\"runtime_s\":"
    "10},"
    "{\"id\":\"r0\",\"stage\":\"reduce\",\"cmd\":[\"true\"],\"cpu\":2,\"mem_mb\":8192,\"runtime_"
    "s\":30},"
    "{\"id\":\"r1\",\"stage\":\"reduce\",\"cmd\":[\"true\"],\"cpu\":2,\"mem_mb\":8192,\"runtime_"
    "s\":30}"
    "]}";

static void test_spec_only(void **state)
{
    (void)state;
    struct spec *s = parse(TWO_STAGES);
    struct arbiter_shape sh;
    char msg[256];
    /* 1-core / 4 GiB tokens: a map task takes 16, a reduce task 2 (by cpu and by memory). */
    assert_int_equal(shape_from_spec(s, NULL, 1.0, 4096, 0.25, &sh, msg, sizeof msg), 0);
    NEAR(sh.work, 4 * 10 * 16 + 2 * 30 * 2); /* 760 token-s */
    NEAR(sh.work_sd, 0.25 * 760);
    NEAR(sh.path, 40);
    NEAR(sh.path_sd, 0.25 * 40);
    assert_int_equal(sh.width, 64); /* the four maps at once */
    /* defaults (0) are the same token size */
    struct arbiter_shape d;
    assert_int_equal(shape_from_spec(s, NULL, 0, 0, 0.25, &d, msg, sizeof msg), 0);
    NEAR(d.work, sh.work);
    assert_int_equal(d.width, sh.width);
    /* 4-core / 16 GiB tokens: a map task takes 4, a reduce task 1 */
    assert_int_equal(shape_from_spec(s, NULL, 4.0, 16384, 0, &sh, msg, sizeof msg), 0);
    NEAR(sh.work, 4 * 10 * 4 + 2 * 30 * 1); /* 220 */
    NEAR(sh.work_sd, 0);
    NEAR(sh.path, 40);
    NEAR(sh.path_sd, 0);
    assert_int_equal(sh.width, 16);
    spec_destroy(&s);
}

/* Without "stages" every task is its own stage: independent tasks still overlap. a (1 token,
 * 5 s) and b (2 tokens, 10 s) start at 0; c (4 tokens, 5 s) after a runs [5, 10) beside b; d
 * (8 tokens) after b and c starts at 10 when they have ended (back to back, no overlap). */
static void test_width_overlap(void **state)
{
    (void)state;
    struct spec *s = parse(
        "{\"version\":1,\"tasks\":["
        "{\"id\":\"a\",\"cmd\":[\"true\"],\"cpu\":1,\"runtime_s\":5},"
        "{\"id\":\"b\",\"cmd\":[\"true\"],\"cpu\":2,\"runtime_s\":10},"
        "{\"id\":\"c\",\"cmd\":[\"true\"],\"cpu\":4,\"runtime_s\":5,\"after\":[\"a\"]},"
        "{\"id\":\"d\",\"cmd\":[\"true\"],\"cpu\":8,\"runtime_s\":1,\"after\":[\"b\",\"c\"]}]}");
    struct arbiter_shape sh;
    char msg[256];
    assert_int_equal(shape_from_spec(s, NULL, 1.0, 4096, 0.1, &sh, msg, sizeof msg), 0);
    NEAR(sh.work, 5 * 1 + 10 * 2 + 5 * 4 + 1 * 8);
    NEAR(sh.path, 11); /* a c d, or b d */
    NEAR(sh.path_sd, 1.1);
    assert_int_equal(sh.width, 8); /* d alone; b + c = 6 before it */
    /* a single task wider than the rest of the job is the width */
    spec_destroy(&s);
    s = parse("{\"version\":1,\"tasks\":[{\"id\":\"x\",\"cmd\":[\"true\"],\"cpu\":0.5,"
              "\"mem_mb\":10000,\"runtime_s\":2}]}");
    assert_int_equal(shape_from_spec(s, NULL, 1.0, 4096, 0.25, &sh, msg, sizeof msg), 0);
    assert_int_equal(sh.width, 3); /* ceil(10000 / 4096) */
    NEAR(sh.work, 6);
    NEAR(sh.path, 2);
    spec_destroy(&s);
}

static void load_profile_ratio(struct profile *p, double lo, double hi, double rlo, double rhi,
                               int ratio_samples);

static void load_profile(struct profile *p, double lo, double hi)
{
    load_profile_ratio(p, lo, hi, 0, 0, 0);
}

static void load_profile_ratio(struct profile *p, double lo, double hi, double rlo, double rhi,
                               int ratio_samples)
{
    char q[PROFILE_NQ * 24 + 8], *w = q;
    w += sprintf(w, "[");
    for (int k = 0; k < PROFILE_NQ; k++)
        w += sprintf(w, "%s%.17g", k ? "," : "", lo + (hi - lo) * k / (PROFILE_NQ - 1));
    sprintf(w, "]");
    char z[PROFILE_NQ * 2 + 4] = "[0";
    for (int k = 1; k < PROFILE_NQ; k++)
        strcat(z, ",0");
    strcat(z, "]");
    char r[PROFILE_NQ * 24 + 8];
    w = r;
    w += sprintf(w, "[");
    for (int k = 0; k < PROFILE_NQ; k++)
        w += sprintf(w, "%s%.17g", k ? "," : "", rlo + (rhi - rlo) * k / (PROFILE_NQ - 1));
    sprintf(w, "]");
    char buf[4096], msg[256];
    int tasks = ratio_samples > 4 ? ratio_samples : 4; /* 4 tasks, or one per ratio sample */
    snprintf(buf, sizeof buf,
             "{\"format\":\"paddock-profile\",\"version\":1,\"job\":\"job\",\"stages\":["
             "{\"name\":\"map\",\"tasks\":%d,\"attempts\":%d,\"failures\":0,\"runtime_q\":%s,"
             "\"ratio_q\":%s,\"ratio_samples\":%d,\"runtime_total_s\":%d,\"queue_total_s\":0,"
             "\"init_q\":%s,\"fail_run_mean_s\":0,\"input_bytes_mean\":0,"
             "\"input_bytes_max\":0}]}",
             tasks, tasks, q, ratio_samples > 0 ? r : z, ratio_samples, 12 * tasks, z);
    profile_init(p);
    int rc = profile_from_json(p, buf, strlen(buf), msg, sizeof msg);
    if (rc != 0)
        fail_msg("profile: %s", msg);
}

static void test_profile(void **state)
{
    (void)state;
    struct spec *s = parse(TWO_STAGES);
    struct profile p;
    struct arbiter_shape sh;
    char msg[256];
    /* map ran 12 s each, no spread: the profile's mean replaces the estimate; reduce is not in
     * the profile and keeps its estimate and cv. */
    load_profile(&p, 12, 12);
    assert_int_equal(shape_from_spec(s, &p, 1.0, 4096, 0.25, &sh, msg, sizeof msg), 0);
    NEAR(sh.work, 4 * 12 * 16 + 2 * 30 * 2); /* 888 */
    NEAR(sh.work_sd, 0.25 * 120);
    NEAR(sh.path, 42);
    NEAR(sh.path_sd, 7.5); /* reduce's 30 x 0.25 */
    profile_close(&p);
    /* map uniform on [8, 16]: mean 12, sd 8 / sqrt(12) */
    load_profile(&p, 8, 16);
    double sd = 8 / sqrt(12.0);
    NEAR(shape_quantile_sd(p.stages[0].runtime_q), sd);
    assert_int_equal(shape_from_spec(s, &p, 1.0, 4096, 0.25, &sh, msg, sizeof msg), 0);
    NEAR(sh.work, 888);
    /* four independent tasks of 16 tokens, plus the stage mean's standard error over 64 tokens
     * from 4 samples, plus reduce's spec-only part */
    double var_tasks = 4 * sd * sd * 16 * 16, se = 64 * sd / 2;
    NEAR(sh.work_sd, sqrt(var_tasks + se * se) + 30);
    NEAR(sh.path, 42);
    NEAR(sh.path_sd, sd + 7.5);
    assert_int_equal(sh.width, 64);
    profile_close(&p);
    /* The same run times, with the estimates compared: ratios uniform on [1.1, 1.3] (mean 1.2,
     * sd 0.2 / sqrt(12)). Each map task is its own 10 s estimate times 1.2, spread by 10 x the
     * ratio's sd: the spread is the estimate's error, not the difference between tasks. */
    load_profile_ratio(&p, 8, 16, 1.1, 1.3, 4);
    assert_int_equal(shape_from_spec(s, &p, 1.0, 4096, 0.25, &sh, msg, sizeof msg), 0);
    double rsd = 0.2 / sqrt(12.0);
    NEAR(sh.work, 4 * 12 * 16 + 2 * 30 * 2);
    var_tasks = 4 * (10 * rsd) * (10 * rsd) * 16 * 16;
    se = 4 * 10 * rsd * 16 / 2;
    NEAR(sh.work_sd, sqrt(var_tasks + se * se) + 30);
    NEAR(sh.path, 42);
    NEAR(sh.path_sd, 10 * rsd + 7.5);
    profile_close(&p);
    spec_destroy(&s);
}

/* 64 one-core tasks of 10 s in stage "map" (no barrier, no edges). */
static struct spec *wide_stage(void)
{
    char buf[16384], *w = buf;
    w += sprintf(w, "{\"version\":1,\"stages\":[{\"name\":\"map\"}],\"tasks\":[");
    for (int i = 0; i < 64; i++)
        w += sprintf(w,
                     "%s{\"id\":\"m%d\",\"stage\":\"map\",\"cmd\":[\"true\"],\"cpu\":1,"
                     "\"mem_mb\":100,\"runtime_s\":10}",
                     i ? "," : "", i);
    sprintf(w, "]}");
    return parse(buf);
}

/* Issue 22: the JM's simulator with a profile's spread places a wide stage at its slowest task,
 * which Graham's bounds at the mean run times cannot hold: the path under the spread replaces
 * the path of the means, and the list schedule's median is that path. Without a profile the
 * estimates are one deterministic run and nothing changes. */
static void test_alpha_spread(void **state)
{
    (void)state;
    struct spec *s = wide_stage();
    struct arbiter_shape sh;
    double S = 0;
    char msg[256];
    assert_int_equal(shape_from_spec(s, NULL, 1.0, 4096, 0, &sh, msg, sizeof msg), 0);
    NEAR(sh.work, 640);
    NEAR(sh.path, 10);
    assert_int_equal(sh.width, 64);
    struct arbiter_shape at32 = sh;
    assert_int_equal(shape_alpha(s, NULL, 1.0, 4096, 64, &sh, &S, msg, sizeof msg), 0);
    NEAR(S, 10);
    NEAR(sh.path, 10);
    assert_true(sh.has_alpha);
    NEAR(sh.alpha, 0);
    assert_int_equal(shape_alpha(s, NULL, 1.0, 4096, 32, &at32, &S, msg, sizeof msg), 0);
    NEAR(S, 20); /* two waves */
    NEAR(at32.alpha, 0);
    /* each task 10 s x a ratio uniform on [0.5, 1.5]: the slowest of 64 is near 15 s */
    struct profile p;
    load_profile_ratio(&p, 5, 15, 0.5, 1.5, 4);
    assert_int_equal(shape_from_spec(s, &p, 1.0, 4096, 0, &sh, msg, sizeof msg), 0);
    NEAR(sh.work, 640); /* the mean ratio is 1 */
    NEAR(sh.path, 10);
    assert_int_equal(shape_alpha(s, &p, 1.0, 4096, 64, &sh, &S, msg, sizeof msg), 0);
    assert_true(sh.path > 13.5 && sh.path <= 15 + 1e-9);
    /* 64 tokens: nothing waits for a token, so the list schedule is that path too (a median of
     * fewer runs: within a few percent), at the lower bound */
    assert_true(S > 13.5 && S <= 15 + 1e-9);
    assert_true(fabs(S - sh.path) < 0.05 * sh.path);
    assert_true(sh.alpha >= 0 && sh.alpha < 0.05);
    /* the same job and profile twice: the same place (seeded runs) */
    struct arbiter_shape again;
    assert_int_equal(shape_from_spec(s, &p, 1.0, 4096, 0, &again, msg, sizeof msg), 0);
    assert_int_equal(shape_alpha(s, &p, 1.0, 4096, 64, &again, NULL, msg, sizeof msg), 0);
    NEAR(again.path, sh.path);
    profile_close(&p);
    /* run times as estimated, but the tasks' dispatch-to-running latency has a queueing tail
     * (median 20 ms, the top quarter 1-3 s: tasks that sat at a busy node, as real profiles
     * show): the path and the list schedule take each task's initialization at the median, not
     * the tail, which the free units of the path's runs would otherwise all draw */
    load_profile_ratio(&p, 10, 10, 1, 1, 4);
    for (int k = 0; k < PROFILE_NQ; k++)
        p.stages[0].init_q[k] = k < 10 ? 0.002 * k : k == 10 ? 0.02 : 1 + 0.2 * (k - 10);
    assert_int_equal(shape_from_spec(s, &p, 1.0, 4096, 0, &sh, msg, sizeof msg), 0);
    assert_int_equal(shape_alpha(s, &p, 1.0, 4096, 64, &sh, &S, msg, sizeof msg), 0);
    NEAR(sh.path, 10.02);
    NEAR(S, 10.02);
    profile_close(&p);
    spec_destroy(&s);
}

static void test_errors(void **state)
{
    (void)state;
    struct spec *s = parse(TWO_STAGES);
    struct arbiter_shape sh = {.work = -1};
    char msg[256];
    assert_int_equal(shape_from_spec(NULL, NULL, 1, 4096, 0.25, &sh, msg, sizeof msg), ERR_INVAL);
    assert_int_equal(shape_from_spec(s, NULL, 1, 4096, NAN, &sh, msg, sizeof msg), ERR_INVAL);
    assert_true(sh.work == -1); /* untouched */
    /* a negative cv is 0 */
    assert_int_equal(shape_from_spec(s, NULL, 1, 4096, -3, &sh, msg, sizeof msg), 0);
    NEAR(sh.work_sd, 0);
    spec_destroy(&s);
}

/* Issue 22: the job's own spread, the q95 of its simulated finish over the median S the ledger is
 * told (spread x S is the job's own q95). One task of ratio uniform on [0.5, 1.5] x 10 s: its
 * q95 near 14.5 s, whatever S five runs gave. A stage of 64 such tasks ends with its slowest,
 * whose tail a profile of a few tasks has not seen (sampled log-normal to its 1 - 1/128
 * quantile): its q95 lies past the profile's longest run, 15 s. Without a profile: no spread. */
static void test_own_spread(void **state)
{
    (void)state;
    char msg[256];
    struct spec *wide = wide_stage();
    struct spec *one = parse("{\"version\":1,\"stages\":[{\"name\":\"map\"}],\"tasks\":[{\"id\":"
                             "\"m0\",\"stage\":\"map\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":"
                             "100,\"runtime_s\":10}]}");
    struct arbiter_shape sw, so;
    double Sw = 0, So = 0;
    assert_int_equal(shape_from_spec(wide, NULL, 1.0, 4096, 0, &sw, msg, sizeof msg), 0);
    assert_int_equal(shape_alpha(wide, NULL, 1.0, 4096, 64, &sw, &Sw, msg, sizeof msg), 0);
    NEAR(sw.spread, 0);
    struct profile p;
    load_profile_ratio(&p, 5, 15, 0.5, 1.5, 100);
    assert_int_equal(shape_from_spec(wide, &p, 1.0, 4096, 0, &sw, msg, sizeof msg), 0);
    assert_int_equal(shape_alpha(wide, &p, 1.0, 4096, 64, &sw, &Sw, msg, sizeof msg), 0);
    assert_int_equal(shape_from_spec(one, &p, 1.0, 4096, 0, &so, msg, sizeof msg), 0);
    assert_int_equal(shape_alpha(one, &p, 1.0, 4096, 64, &so, &So, msg, sizeof msg), 0);
    assert_true(sw.spread >= 1 && sw.spread * Sw > 15.0 + 1e-6 && sw.spread * Sw < 16.5);
    assert_true(so.spread >= 1 && so.spread * So > 13.5 && so.spread * So <= 15.0 + 1e-9);
    /* the same job twice: the same spread (seeded runs) */
    struct arbiter_shape again;
    assert_int_equal(shape_from_spec(one, &p, 1.0, 4096, 0, &again, msg, sizeof msg), 0);
    assert_int_equal(shape_alpha(one, &p, 1.0, 4096, 64, &again, NULL, msg, sizeof msg), 0);
    NEAR(again.spread, so.spread);
    profile_close(&p);
    spec_destroy(&wide);
    spec_destroy(&one);
}

/* A stage's quantiles, evenly from lo to hi, as JSON. */
static void quantiles(char *out, double lo, double hi)
{
    char *w = out;
    w += sprintf(w, "[");
    for (int k = 0; k < PROFILE_NQ; k++)
        w += sprintf(w, "%s%.17g", k ? "," : "", lo + (hi - lo) * k / (PROFILE_NQ - 1));
    sprintf(w, "]");
}

/* Issue 22: a one-task stage borrows its job's pooled dispersion, but scaled to its length. Its
 * job's 16 tasks of 10-110 ms ran 1-11x their estimates (a fixed cost per task, as on a loaded
 * node), its one 10 s task at its estimate: counted by tasks, the pooled tail gave the 10 s task
 * a q95 near 1.7x (taxprofiler's own spread was 1.67 from one run's profile and it ran within
 * 1.08x); a 10 s task varies by about sqrt(0.06 / 10) of what 0.06 s tasks do. */
static void test_borrowed_spread_by_length(void **state)
{
    (void)state;
    char buf[8192], w[8192], msg[256];
    char *x = w;
    x += sprintf(x, "{\"version\":1,\"stages\":[{\"name\":\"tiny\"},{\"name\":\"long\"}],"
                    "\"tasks\":[{\"id\":\"l\",\"stage\":\"long\",\"cmd\":[\"true\"],\"cpu\":1,"
                    "\"mem_mb\":100,\"runtime_s\":10}");
    for (int i = 0; i < 16; i++)
        x += sprintf(x,
                     ",{\"id\":\"t%d\",\"stage\":\"tiny\",\"cmd\":[\"true\"],\"cpu\":1,"
                     "\"mem_mb\":100,\"runtime_s\":0.01}",
                     i);
    sprintf(x, "]}");
    struct spec *s = parse(w);
    char tq[PROFILE_NQ * 24 + 8], tr[PROFILE_NQ * 24 + 8], lq[PROFILE_NQ * 24 + 8],
        lr[PROFILE_NQ * 24 + 8], z[PROFILE_NQ * 24 + 8];
    quantiles(tq, 0.01, 0.11);
    quantiles(tr, 1, 11);
    quantiles(lq, 10, 10);
    quantiles(lr, 1, 1);
    quantiles(z, 0, 0);
    snprintf(buf, sizeof buf,
             "{\"format\":\"paddock-profile\",\"version\":1,\"job\":\"job\",\"stages\":["
             "{\"name\":\"tiny\",\"tasks\":16,\"attempts\":16,\"failures\":0,\"runtime_q\":%s,"
             "\"ratio_q\":%s,\"ratio_samples\":16,\"runtime_total_s\":1,\"queue_total_s\":0,"
             "\"init_q\":%s,\"fail_run_mean_s\":0,\"input_bytes_mean\":0,\"input_bytes_max\":0},"
             "{\"name\":\"long\",\"tasks\":1,\"attempts\":1,\"failures\":0,\"runtime_q\":%s,"
             "\"ratio_q\":%s,\"ratio_samples\":1,\"runtime_total_s\":10,\"queue_total_s\":0,"
             "\"init_q\":%s,\"fail_run_mean_s\":0,\"input_bytes_mean\":0,\"input_bytes_max\":0}]}",
             tq, tr, z, lq, lr, z);
    struct profile p;
    profile_init(&p);
    if (profile_from_json(&p, buf, strlen(buf), msg, sizeof msg) != 0)
        fail_msg("profile: %s", msg);
    struct arbiter_shape sh;
    double S = 0;
    assert_int_equal(shape_from_spec(s, &p, 1.0, 4096, 0, &sh, msg, sizeof msg), 0);
    assert_int_equal(shape_alpha(s, &p, 1.0, 4096, 8, &sh, &S, msg, sizeof msg), 0);
    assert_true(S > 9.5 && S < 10.6); /* the long task at about its estimate */
    assert_true(sh.spread >= 1 && sh.spread < 1.1);
    profile_close(&p);
    spec_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_only),
        cmocka_unit_test(test_width_overlap),
        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_alpha_spread),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_own_spread),
        cmocka_unit_test(test_borrowed_spread_by_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
