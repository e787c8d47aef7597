/* plan_page_cells.c - the RM's recurring-job documents read field by field and formatted for
 * the text and HTML renderers (plan_page_internal.h): durations, UTC times, deadlines, states,
 * the cells of the recurring-job and history tables, the plan's points. */
#include "tools/plan_page_internal.h"

#include "tools/jobdir.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

/* ---- fields ---- */

const char *plan_page__str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s != NULL && s[0] != '\0' ? s : "-";
}

bool plan_page__num(const json_t *o, const char *k, double *v)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_number(x))
        return false;
    *v = json_number_value(x);
    return isfinite(*v);
}

const char *plan_page__dur_s(double s, char *buf, size_t cap)
{
    if (s == 0) {
        snprintf(buf, cap, "0s");
        return buf;
    }
    return jobdir_format_duration(s, false, buf, cap);
}

/* A duration field in seconds, "-" when absent or null. */
const char *plan_page__dur(const json_t *o, const char *k, char *buf, size_t cap)
{
    double v;
    if (!plan_page__num(o, k, &v)) {
        snprintf(buf, cap, "-");
        return buf;
    }
    return plan_page__dur_s(v, buf, cap);
}

/* Wall-clock ms as UTC ISO 8601 to the second. */
const char *plan_page__iso(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "-");
    return buf;
}

/* An absolute time field (ms) as "ISO (in 3m)" / "ISO (3m ago)"; "-" when absent or null. */
const char *plan_page__when(const json_t *o, const char *k, int64_t now_ms, char *buf, size_t cap)
{
    double v;
    if (!plan_page__num(o, k, &v) || v <= 0) {
        snprintf(buf, cap, "-");
        return buf;
    }
    char iso[32], d[JOBDIR_DURATION_SIZE];
    double rel = (v - (double)now_ms) / 1000.0;
    plan_page__iso((int64_t)v, iso, sizeof iso);
    if (now_ms <= 0)
        snprintf(buf, cap, "%s", iso);
    else if (rel >= 0)
        snprintf(buf, cap, "%s (in %s)", iso, plan_page__dur_s(rel, d, sizeof d));
    else
        snprintf(buf, cap, "%s (%s ago)", iso, plan_page__dur_s(-rel, d, sizeof d));
    return buf;
}

/* "15m (user)", "20m (inferred, accepted)", "20m inferred, advisory", or "none". */
const char *plan_page__deadline(const json_t *r, char *buf, size_t cap)
{
    double d = 0, inf = 0;
    char a[JOBDIR_DURATION_SIZE];
    const char *src = plan_page__str(r, "deadline_source");
    if (plan_page__num(r, "deadline_s", &d) && d > 0)
        snprintf(buf, cap, "%s (%s)", plan_page__dur_s(d, a, sizeof a),
                 strcmp(src, "inferred") == 0 ? "inferred, accepted"
                 : strcmp(src, "-") == 0      ? "user"
                                              : src);
    else if (plan_page__num(r, "inferred_deadline_s", &inf) && inf > 0)
        snprintf(buf, cap, "%s inferred, advisory", plan_page__dur_s(inf, a, sizeof a));
    else
        snprintf(buf, cap, "none");
    return buf;
}

/* paused, "starting p12", "running p12", error (last_error set), or waiting. */
const char *plan_page__state(const json_t *r, char *buf, size_t cap)
{
    json_t *p = json_object_get(r, "pending");
    if (json_is_true(json_object_get(r, "paused")))
        snprintf(buf, cap, "paused");
    else if (json_is_object(p))
        snprintf(buf, cap, "%s p%lld", plan_page__str(p, "state"),
                 (long long)json_integer_value(json_object_get(p, "period")));
    else if (strcmp(plan_page__str(r, "last_error"), "-") != 0)
        snprintf(buf, cap, "error");
    else
        snprintf(buf, cap, "waiting");
    return buf;
}

long long plan_page__int(const json_t *o, const char *k)
{
    double v;
    return plan_page__num(o, k, &v) ? (long long)llround(v) : 0;
}

/* ---- the recurring jobs' table ---- */

const char *const plan_page__list_head[LC_N] = {"NAME",     "VC",     "PERIOD",         "OFFSET",
                                                "DEADLINE", "STATE",  "NEXT RUN (UTC)", "RUNS",
                                                "MET",      "MISSED", "RESERVED"};

void plan_page__list_cells(const json_t *r, char c[LC_N][PP_CELL])
{
    double peak = 0, next = 0;
    snprintf(c[LC_NAME], PP_CELL, "%s", plan_page__str(r, "name"));
    snprintf(c[LC_VC], PP_CELL, "%s", plan_page__str(r, "virtual_cluster"));
    plan_page__dur(r, "period_s", c[LC_PERIOD], PP_CELL);
    plan_page__dur(r, "offset_s", c[LC_OFFSET], PP_CELL);
    plan_page__deadline(r, c[LC_DEADLINE], PP_CELL);
    plan_page__state(r, c[LC_STATE], PP_CELL);
    if (plan_page__num(r, "next_run_ms", &next) && next > 0)
        plan_page__iso((int64_t)next, c[LC_NEXT], PP_CELL);
    else
        snprintf(c[LC_NEXT], PP_CELL, "-");
    snprintf(c[LC_RUNS], PP_CELL, "%lld", plan_page__int(r, "runs"));
    snprintf(c[LC_MET], PP_CELL, "%lld", plan_page__int(r, "met"));
    snprintf(c[LC_MISSED], PP_CELL, "%lld", plan_page__int(r, "missed"));
    if (json_is_true(json_object_get(r, "reserved")) &&
        plan_page__num(r, "reservation_peak_tokens", &peak))
        snprintf(c[LC_PEAK], PP_CELL, "%g", peak);
    else
        snprintf(c[LC_PEAK], PP_CELL, "-");
}

/* Prints rows of cells with columns as wide as their widest cell, two spaces apart. */

/* ---- history ---- */

const char *const plan_page__hist_head[HC_N] = {"JOBID",   "NAME",    "PERIOD",   "SUBMIT (UTC)",
                                                "START",   "END",     "DEADLINE", "MET",
                                                "TOKEN-S", "OUTCOME", "REASON"};

/* A time field relative to submission: "+3m10s", "-" when absent or null. */
static void pp__since(const json_t *h, const char *k, double submit, bool has_submit, char *buf)
{
    double v;
    char d[JOBDIR_DURATION_SIZE];
    if (!plan_page__num(h, k, &v) || !has_submit)
        snprintf(buf, PP_CELL, "-");
    else if (v >= submit)
        snprintf(buf, PP_CELL, "+%s", plan_page__dur_s((v - submit) / 1000.0, d, sizeof d));
    else
        snprintf(buf, PP_CELL, "-%s", plan_page__dur_s((submit - v) / 1000.0, d, sizeof d));
}

void plan_page__hist_cells(const json_t *h, char c[HC_N][PP_CELL])
{
    double submit = 0, tok = 0;
    bool has_submit = plan_page__num(h, "submit_ms", &submit) && submit > 0;
    json_t *period = json_object_get(h, "period"), *met = json_object_get(h, "met");
    snprintf(c[HC_JOB], PP_CELL, "%s", plan_page__str(h, "job_id"));
    /* a recurring run under its recurring job's name: the spec's name may differ */
    const char *rec = plan_page__str(h, "recurring");
    snprintf(c[HC_NAME], PP_CELL, "%s", strcmp(rec, "-") != 0 ? rec : plan_page__str(h, "name"));
    if (json_is_integer(period))
        snprintf(c[HC_PERIOD], PP_CELL, "%lld", (long long)json_integer_value(period));
    else
        snprintf(c[HC_PERIOD], PP_CELL, "-");
    if (has_submit)
        plan_page__iso((int64_t)submit, c[HC_SUBMIT], PP_CELL);
    else
        snprintf(c[HC_SUBMIT], PP_CELL, "-");
    pp__since(h, "start_ms", submit, has_submit, c[HC_START]);
    pp__since(h, "end_ms", submit, has_submit, c[HC_END]);
    pp__since(h, "deadline_ms", submit, has_submit, c[HC_DEADLINE]);
    snprintf(c[HC_MET], PP_CELL, "%s",
             json_is_true(met)    ? "met"
             : json_is_false(met) ? "MISSED"
                                  : "-");
    if (plan_page__num(h, "token_s", &tok))
        snprintf(c[HC_TOKENS], PP_CELL, "%.1f", tok);
    else
        snprintf(c[HC_TOKENS], PP_CELL, "-");
    snprintf(c[HC_OUTCOME], PP_CELL, "%s", plan_page__str(h, "outcome"));
    snprintf(c[HC_REASON], PP_CELL, "%s", plan_page__str(h, "reason"));
}

/* ---- the plan ---- */

/* The plan's points: how many, and each job's value at point i (0 past its array). */
size_t plan_page__points(const json_t *jobs)
{
    size_t n = 0, i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        size_t m = json_array_size(json_object_get(j, "tokens"));
        n = m > n ? m : n;
    }
    return n;
}

double plan_page__at(const json_t *job, size_t i)
{
    return json_number_value(json_array_get(json_object_get(job, "tokens"), i));
}

double plan_page__total(const json_t *jobs, size_t i)
{
    double t = 0;
    for (size_t j = 0; j < json_array_size(jobs); j++)
        t += plan_page__at(json_array_get(jobs, j), i);
    return t;
}
