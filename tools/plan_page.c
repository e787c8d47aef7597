#include "tools/plan_page.h"

#include "common/err.h"
#include "common/mem.h"
#include "tools/jobdir.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define PP_CELL 96 /* one table cell's text */

/* ---- fields ---- */

static const char *pp__str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s != NULL && s[0] != '\0' ? s : "-";
}

static bool pp__num(const json_t *o, const char *k, double *v)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_number(x))
        return false;
    *v = json_number_value(x);
    return isfinite(*v);
}

static const char *pp__dur_s(double s, char *buf, size_t cap)
{
    if (s == 0) {
        snprintf(buf, cap, "0s");
        return buf;
    }
    return jobdir_format_duration(s, false, buf, cap);
}

/* A duration field in seconds, "-" when absent or null. */
static const char *pp__dur(const json_t *o, const char *k, char *buf, size_t cap)
{
    double v;
    if (!pp__num(o, k, &v)) {
        snprintf(buf, cap, "-");
        return buf;
    }
    return pp__dur_s(v, buf, cap);
}

/* Wall-clock ms as UTC ISO 8601 to the second. */
static const char *pp__iso(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "-");
    return buf;
}

/* An absolute time field (ms) as "ISO (in 3m)" / "ISO (3m ago)"; "-" when absent or null. */
static const char *pp__when(const json_t *o, const char *k, int64_t now_ms, char *buf, size_t cap)
{
    double v;
    if (!pp__num(o, k, &v) || v <= 0) {
        snprintf(buf, cap, "-");
        return buf;
    }
    char iso[32], d[JOBDIR_DURATION_SIZE];
    double rel = (v - (double)now_ms) / 1000.0;
    pp__iso((int64_t)v, iso, sizeof iso);
    if (now_ms <= 0)
        snprintf(buf, cap, "%s", iso);
    else if (rel >= 0)
        snprintf(buf, cap, "%s (in %s)", iso, pp__dur_s(rel, d, sizeof d));
    else
        snprintf(buf, cap, "%s (%s ago)", iso, pp__dur_s(-rel, d, sizeof d));
    return buf;
}

/* "15m (user)", "20m (inferred, accepted)", "20m inferred, advisory", or "none". */
static const char *pp__deadline(const json_t *r, char *buf, size_t cap)
{
    double d = 0, inf = 0;
    char a[JOBDIR_DURATION_SIZE];
    const char *src = pp__str(r, "deadline_source");
    if (pp__num(r, "deadline_s", &d) && d > 0)
        snprintf(buf, cap, "%s (%s)", pp__dur_s(d, a, sizeof a),
                 strcmp(src, "inferred") == 0 ? "inferred, accepted"
                 : strcmp(src, "-") == 0      ? "user"
                                              : src);
    else if (pp__num(r, "inferred_deadline_s", &inf) && inf > 0)
        snprintf(buf, cap, "%s inferred, advisory", pp__dur_s(inf, a, sizeof a));
    else
        snprintf(buf, cap, "none");
    return buf;
}

/* paused, "starting p12", "running p12", error (last_error set), or waiting. */
static const char *pp__state(const json_t *r, char *buf, size_t cap)
{
    json_t *p = json_object_get(r, "pending");
    if (json_is_true(json_object_get(r, "paused")))
        snprintf(buf, cap, "paused");
    else if (json_is_object(p))
        snprintf(buf, cap, "%s p%lld", pp__str(p, "state"),
                 (long long)json_integer_value(json_object_get(p, "period")));
    else if (strcmp(pp__str(r, "last_error"), "-") != 0)
        snprintf(buf, cap, "error");
    else
        snprintf(buf, cap, "waiting");
    return buf;
}

static long long pp__int(const json_t *o, const char *k)
{
    double v;
    return pp__num(o, k, &v) ? (long long)llround(v) : 0;
}

/* ---- the recurring-job records ---- */

void plan_page_record(FILE *out, const json_t *r, int64_t now_ms)
{
    char per[PP_CELL], off[PP_CELL], dl[PP_CELL], st[PP_CELL], next[PP_CELL];
    fprintf(out, "recurring job %s (virtual cluster %s): every %s, offset %s; deadline %s; %s\n",
            pp__str(r, "name"), pp__str(r, "virtual_cluster"),
            pp__dur(r, "period_s", per, sizeof per), pp__dur(r, "offset_s", off, sizeof off),
            pp__deadline(r, dl, sizeof dl), pp__state(r, st, sizeof st));
    long long last = pp__int(r, "last_period");
    double peak = 0;
    fprintf(out, "  next run %s; ", pp__when(r, "next_run_ms", now_ms, next, sizeof next));
    if (json_is_integer(json_object_get(r, "last_period")) && last >= 0)
        fprintf(out, "last period %lld; ", last);
    fprintf(out, "runs %lld (%lld met, %lld missed); ", pp__int(r, "runs"), pp__int(r, "met"),
            pp__int(r, "missed"));
    if (json_is_true(json_object_get(r, "reserved")) &&
        pp__num(r, "reservation_peak_tokens", &peak))
        fprintf(out, "reservation peak %g tokens\n", peak);
    else
        fprintf(out, "no reservation\n");
    if (strcmp(pp__str(r, "last_error"), "-") != 0)
        fprintf(out, "  last error: %s\n", pp__str(r, "last_error"));
}

enum {
    LC_NAME,
    LC_VC,
    LC_PERIOD,
    LC_OFFSET,
    LC_DEADLINE,
    LC_STATE,
    LC_NEXT,
    LC_RUNS,
    LC_MET,
    LC_MISSED,
    LC_PEAK,
    LC_N
};
static const char *const pp__list_head[LC_N] = {"NAME",     "VC",     "PERIOD",         "OFFSET",
                                                "DEADLINE", "STATE",  "NEXT RUN (UTC)", "RUNS",
                                                "MET",      "MISSED", "RESERVED"};

static void pp__list_cells(const json_t *r, char c[LC_N][PP_CELL])
{
    double peak = 0, next = 0;
    snprintf(c[LC_NAME], PP_CELL, "%s", pp__str(r, "name"));
    snprintf(c[LC_VC], PP_CELL, "%s", pp__str(r, "virtual_cluster"));
    pp__dur(r, "period_s", c[LC_PERIOD], PP_CELL);
    pp__dur(r, "offset_s", c[LC_OFFSET], PP_CELL);
    pp__deadline(r, c[LC_DEADLINE], PP_CELL);
    pp__state(r, c[LC_STATE], PP_CELL);
    if (pp__num(r, "next_run_ms", &next) && next > 0)
        pp__iso((int64_t)next, c[LC_NEXT], PP_CELL);
    else
        snprintf(c[LC_NEXT], PP_CELL, "-");
    snprintf(c[LC_RUNS], PP_CELL, "%lld", pp__int(r, "runs"));
    snprintf(c[LC_MET], PP_CELL, "%lld", pp__int(r, "met"));
    snprintf(c[LC_MISSED], PP_CELL, "%lld", pp__int(r, "missed"));
    if (json_is_true(json_object_get(r, "reserved")) &&
        pp__num(r, "reservation_peak_tokens", &peak))
        snprintf(c[LC_PEAK], PP_CELL, "%g", peak);
    else
        snprintf(c[LC_PEAK], PP_CELL, "-");
}

/* Prints rows of cells with columns as wide as their widest cell, two spaces apart. */
static void pp__table(FILE *out, size_t ncols, const char *const *head, size_t nrows,
                      char (*cells)[PP_CELL])
{
    int w[16] = {0};
    for (size_t j = 0; j < ncols && j < 16; j++) {
        w[j] = (int)strlen(head[j]);
        for (size_t i = 0; i < nrows; i++) {
            int l = (int)strlen(cells[i * ncols + j]);
            w[j] = l > w[j] ? l : w[j];
        }
    }
    for (size_t i = 0; i <= nrows; i++) {
        for (size_t j = 0; j < ncols && j < 16; j++) {
            const char *s = i == 0 ? head[j] : cells[(i - 1) * ncols + j];
            if (j + 1 == ncols)
                fprintf(out, "%s\n", s);
            else
                fprintf(out, "%-*s  ", w[j], s);
        }
    }
}

void plan_page_list(FILE *out, const json_t *doc, int64_t now_ms)
{
    (void)now_ms;
    json_t *list = json_object_get(doc, "recurring");
    size_t n = json_array_size(list);
    if (n == 0) {
        fprintf(out, "no recurring jobs (add one with `paddock recurring add`)\n");
        return;
    }
    char(*cells)[PP_CELL] = mem_calloc(n * LC_N, PP_CELL);
    if (cells == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        pp__list_cells(json_array_get(list, i), &cells[i * LC_N]);
    pp__table(out, LC_N, pp__list_head, n, cells);
    mem_free(cells);
}

/* ---- history ---- */

enum {
    HC_JOB,
    HC_NAME,
    HC_PERIOD,
    HC_SUBMIT,
    HC_START,
    HC_END,
    HC_DEADLINE,
    HC_MET,
    HC_TOKENS,
    HC_OUTCOME,
    HC_REASON,
    HC_N
};
static const char *const pp__hist_head[HC_N] = {"JOBID",   "NAME",    "PERIOD",   "SUBMIT (UTC)",
                                                "START",   "END",     "DEADLINE", "MET",
                                                "TOKEN-S", "OUTCOME", "REASON"};

/* A time field relative to submission: "+3m10s", "-" when absent or null. */
static void pp__since(const json_t *h, const char *k, double submit, bool has_submit, char *buf)
{
    double v;
    char d[JOBDIR_DURATION_SIZE];
    if (!pp__num(h, k, &v) || !has_submit)
        snprintf(buf, PP_CELL, "-");
    else if (v >= submit)
        snprintf(buf, PP_CELL, "+%s", pp__dur_s((v - submit) / 1000.0, d, sizeof d));
    else
        snprintf(buf, PP_CELL, "-%s", pp__dur_s((submit - v) / 1000.0, d, sizeof d));
}

static void pp__hist_cells(const json_t *h, char c[HC_N][PP_CELL])
{
    double submit = 0, tok = 0;
    bool has_submit = pp__num(h, "submit_ms", &submit) && submit > 0;
    json_t *period = json_object_get(h, "period"), *met = json_object_get(h, "met");
    snprintf(c[HC_JOB], PP_CELL, "%s", pp__str(h, "job_id"));
    /* a recurring run under its recurring job's name: the spec's name may differ */
    const char *rec = pp__str(h, "recurring");
    snprintf(c[HC_NAME], PP_CELL, "%s", strcmp(rec, "-") != 0 ? rec : pp__str(h, "name"));
    if (json_is_integer(period))
        snprintf(c[HC_PERIOD], PP_CELL, "%lld", (long long)json_integer_value(period));
    else
        snprintf(c[HC_PERIOD], PP_CELL, "-");
    if (has_submit)
        pp__iso((int64_t)submit, c[HC_SUBMIT], PP_CELL);
    else
        snprintf(c[HC_SUBMIT], PP_CELL, "-");
    pp__since(h, "start_ms", submit, has_submit, c[HC_START]);
    pp__since(h, "end_ms", submit, has_submit, c[HC_END]);
    pp__since(h, "deadline_ms", submit, has_submit, c[HC_DEADLINE]);
    snprintf(c[HC_MET], PP_CELL, "%s",
             json_is_true(met)    ? "met"
             : json_is_false(met) ? "MISSED"
                                  : "-");
    if (pp__num(h, "token_s", &tok))
        snprintf(c[HC_TOKENS], PP_CELL, "%.1f", tok);
    else
        snprintf(c[HC_TOKENS], PP_CELL, "-");
    snprintf(c[HC_OUTCOME], PP_CELL, "%s", pp__str(h, "outcome"));
    snprintf(c[HC_REASON], PP_CELL, "%s", pp__str(h, "reason"));
}

void plan_page_history(FILE *out, const json_t *runs, size_t limit)
{
    size_t n = json_array_size(runs);
    if (limit > 0 && n > limit)
        n = limit;
    if (n == 0) {
        fprintf(out, "no runs recorded\n");
        return;
    }
    char(*cells)[PP_CELL] = mem_calloc(n * HC_N, PP_CELL);
    if (cells == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        pp__hist_cells(json_array_get(runs, i), &cells[i * HC_N]);
    pp__table(out, HC_N, pp__hist_head, n, cells);
    mem_free(cells);
}

/* ---- sparklines and the recurring_show page ---- */

char *plan_page_sparkline(const json_t *tokens, int width, char *out, size_t cap)
{
    static const char levels[] = " .:-=+*#%@";
    size_t n = json_array_size(tokens);
    out[0] = '\0';
    if (n == 0 || width <= 0 || cap < 2)
        return out;
    size_t cols = n < (size_t)width ? n : (size_t)width;
    if (cols > cap - 1)
        cols = cap - 1;
    double max = 0;
    for (size_t i = 0; i < n; i++) {
        double v = json_number_value(json_array_get(tokens, i));
        max = v > max ? v : max;
    }
    for (size_t c = 0; c < cols; c++) {
        double v = 0;
        for (size_t i = c * n / cols; i < (c + 1) * n / cols; i++) {
            double x = json_number_value(json_array_get(tokens, i));
            v = x > v ? x : v;
        }
        int l = max > 0 ? (int)ceil(v / max * 9.0 - 1e-9) : 0;
        out[c] = levels[l < 0 ? 0 : l > 9 ? 9 : l];
    }
    out[cols] = '\0';
    return out;
}

static double pp__max(const json_t *a)
{
    double m = 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        double x = json_number_value(v);
        m = x > m ? x : m;
    }
    return m;
}

/* "R*          step 5s, 24 steps (2m), peak 4 tokens\n              |..:=#| " */
static void pp__skyline(FILE *out, const char *label, const json_t *sky, const char *none)
{
    json_t *tok = json_object_get(sky, "tokens");
    size_t n = json_array_size(tok);
    if (n == 0) {
        fprintf(out, "  %-12s %s\n", label, none);
        return;
    }
    char step[JOBDIR_DURATION_SIZE], span[JOBDIR_DURATION_SIZE], line[80];
    double st = 0;
    pp__num(sky, "step_s", &st);
    fprintf(out, "  %-12s step %s, %zu steps (%s), peak %g tokens\n", label,
            pp__dur_s(st, step, sizeof step), n, pp__dur_s(st * (double)n, span, sizeof span),
            pp__max(tok));
    fprintf(out, "  %-12s |%s|\n", "", plan_page_sparkline(tok, 60, line, sizeof line));
}

static void pp__evidence(FILE *out, const json_t *r, const json_t *slo)
{
    const char *src = pp__str(slo, "source");
    char a[JOBDIR_DURATION_SIZE], b[JOBDIR_DURATION_SIZE];
    double v;
    if (!json_is_object(slo) || strcmp(src, "none") == 0 || strcmp(src, "-") == 0) {
        fprintf(out, "  %-12s none yet: %lld runs recorded, no deadline inferred\n", "evidence",
                pp__int(slo, "runs"));
        return;
    }
    fprintf(out, "  %-12s from %s over %lld runs", "evidence",
            strcmp(src, "consumers") == 0 ? "when its outputs were first read" : "completion times",
            pp__int(slo, "runs"));
    if (strcmp(src, "consumers") == 0) {
        fprintf(out, ": read in %lld, median read %s after the period's start",
                pp__int(slo, "consumed"), pp__dur(slo, "read_median_s", a, sizeof a));
        if (pp__num(slo, "read_cv", &v))
            fprintf(out, ", CV %.2f", v);
    } else {
        fprintf(out, ": completion percentile %s", pp__dur(slo, "end_pct_s", b, sizeof b));
    }
    if (pp__num(slo, "slack_ratio", &v))
        fprintf(out, ", slack ratio %.2f", v);
    fprintf(out, "\n");
    if (!json_is_true(json_object_get(r, "accepted")) && pp__num(slo, "deadline_s", &v))
        fprintf(
            out,
            "  %-12s the inferred deadline %s is advisory until `paddock recurring accept %s`\n",
            "", pp__dur_s(v, a, sizeof a), pp__str(r, "name"));
}

void plan_page_show(FILE *out, const json_t *doc, int64_t now_ms)
{
    char a[PP_CELL], b[PP_CELL];
    double v = 0;
    fprintf(out, "recurring job %s (virtual cluster %s)%s\n", pp__str(doc, "name"),
            pp__str(doc, "virtual_cluster"),
            json_is_true(json_object_get(doc, "paused")) ? ": PAUSED" : "");
    fprintf(out, "  %-12s every %s at offset %s into each UTC period\n", "schedule",
            pp__dur(doc, "period_s", a, sizeof a), pp__dur(doc, "offset_s", b, sizeof b));
    fprintf(out, "  %-12s %s", "next run", pp__when(doc, "next_run_ms", now_ms, a, sizeof a));
    if (json_is_integer(json_object_get(doc, "last_period")) && pp__int(doc, "last_period") >= 0)
        fprintf(out, "; last period fired %lld", pp__int(doc, "last_period"));
    fprintf(out, "\n");

    const char *src = pp__str(doc, "deadline_source");
    fprintf(out, "  %-12s ", "deadline");
    if (pp__num(doc, "deadline_s", &v) && v > 0)
        fprintf(out, "%s, %s\n", pp__dur_s(v, a, sizeof a),
                strcmp(src, "inferred") == 0 ? "inferred from history and accepted"
                                             : "given by the user");
    else if (pp__num(doc, "inferred_deadline_s", &v) && v > 0)
        fprintf(out, "none in force; inferred %s (advisory until `paddock recurring accept %s`)\n",
                pp__dur_s(v, a, sizeof a), pp__str(doc, "name"));
    else
        fprintf(out, "none\n");
    if (strcmp(src, "user") != 0)
        pp__evidence(out, doc, json_object_get(doc, "slo"));

    fprintf(out, "  %-12s %lld (%lld met, %lld missed)\n", "runs", pp__int(doc, "runs"),
            pp__int(doc, "met"), pp__int(doc, "missed"));
    json_t *p = json_object_get(doc, "pending");
    if (json_is_object(p)) {
        fprintf(out, "  %-12s period %lld %s", "pending", pp__int(p, "period"),
                pp__str(p, "state"));
        if (strcmp(pp__str(p, "job_id"), "-") != 0)
            fprintf(out, " as %s", pp__str(p, "job_id"));
        fprintf(out, " (%lld launch%s)", pp__int(p, "launches"),
                pp__int(p, "launches") == 1 ? "" : "es");
        if (strcmp(pp__str(p, "reason"), "-") != 0)
            fprintf(out, ": %s", pp__str(p, "reason"));
        fprintf(out, "\n");
    }
    if (strcmp(pp__str(doc, "last_error"), "-") != 0)
        fprintf(out, "  %-12s %s\n", "last error", pp__str(doc, "last_error"));
    pp__skyline(out, "skyline R*", json_object_get(doc, "skyline"),
                "no model yet (needs a finished run)");
    pp__skyline(out, "reservation", json_object_get(doc, "reservation"),
                json_is_true(json_object_get(doc, "paused")) ? "none (paused)" : "none");
    json_t *hist = json_object_get(doc, "history");
    if (json_array_size(hist) > 0) {
        fprintf(out, "last runs:\n");
        plan_page_history(out, hist, 10);
    }
}

/* ---- the plan ---- */

/* The plan's points: how many, and each job's value at point i (0 past its array). */
static size_t pp__points(const json_t *jobs)
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

static double pp__at(const json_t *job, size_t i)
{
    return json_number_value(json_array_get(json_object_get(job, "tokens"), i));
}

static double pp__total(const json_t *jobs, size_t i)
{
    double t = 0;
    for (size_t j = 0; j < json_array_size(jobs); j++)
        t += pp__at(json_array_get(jobs, j), i);
    return t;
}

static char pp__letter(size_t j)
{
    return j < 26 ? (char)('A' + j) : j < 52 ? (char)('a' + j - 26) : '?';
}

static void pp__plan_header(FILE *out, const json_t *p)
{
    char st[PP_CELL], hz[PP_CELL];
    fprintf(out,
            "virtual cluster %s: capacity %lld tokens, step %s, horizon %s%s, peak %g tokens, %zu "
            "recurring job%s\n",
            pp__str(p, "virtual_cluster"), pp__int(p, "capacity"),
            pp__dur(p, "step_s", st, sizeof st), pp__dur(p, "horizon_s", hz, sizeof hz),
            json_is_true(json_object_get(p, "lcm_capped")) ? " (the periods' LCM, capped)" : "",
            json_number_value(json_object_get(p, "peak_tokens")),
            json_array_size(json_object_get(p, "jobs")),
            json_array_size(json_object_get(p, "jobs")) == 1 ? "" : "s");
}

#define PP_ROWS 8

static void pp__plan_chart(FILE *out, const json_t *p, int width)
{
    json_t *jobs = json_object_get(p, "jobs");
    size_t n = pp__points(jobs), nj = json_array_size(jobs);
    if (n == 0 || nj == 0) {
        fprintf(out, "  no reservations\n");
        return;
    }
    size_t cols = width > 8 ? (size_t)width : 8;
    double peak = 0;
    for (size_t i = 0; i < n; i++) {
        double t = pp__total(jobs, i);
        peak = t > peak ? t : peak;
    }
    double cap = (double)pp__int(p, "capacity"), top = peak > 0 ? peak : 1;
    bool draw_cap = cap > 0 && cap <= 1.5 * top;
    if (draw_cap && cap > top)
        top = cap;
    /* each column shows the point of its span with the largest total, so the stack is one
     * instant's and its height the span's peak */
    size_t *pick = mem_calloc(cols, sizeof *pick);
    if (pick == NULL)
        return;
    for (size_t c = 0; c < cols; c++) {
        size_t lo = c * n / cols, hi = (c + 1) * n / cols;
        if (hi <= lo)
            hi = lo + 1;
        pick[c] = lo;
        for (size_t i = lo; i < hi && i < n; i++)
            if (pp__total(jobs, i) > pp__total(jobs, pick[c]))
                pick[c] = i;
    }
    int cap_row = draw_cap ? PP_ROWS - (int)ceil(cap / top * PP_ROWS - 1e-9) : -1;
    for (int r = 0; r < PP_ROWS; r++) {
        double mid = ((double)(PP_ROWS - 1 - r) + 0.5) * top / PP_ROWS;
        if (r == 0)
            fprintf(out, "  %6g |", top);
        else if (r == cap_row)
            fprintf(out, "  %6g |", cap);
        else
            fprintf(out, "  %6s |", "");
        for (size_t c = 0; c < cols; c++) {
            double cum = 0;
            char ch = r == cap_row ? '-' : ' ';
            for (size_t j = 0; j < nj; j++) {
                cum += pp__at(json_array_get(jobs, j), pick[c]);
                if (mid < cum) {
                    ch = pp__letter(j);
                    break;
                }
            }
            fputc(ch, out);
        }
        fprintf(out, "|%s\n", r == cap_row ? " capacity" : "");
    }
    mem_free(pick);
    char b[JOBDIR_DURATION_SIZE];
    double ps = 0;
    if (!pp__num(p, "point_s", &ps) || ps <= 0)
        pp__num(p, "step_s", &ps);
    fprintf(out, "  %6d +", 0);
    for (size_t c = 0; c < cols; c++)
        fputc('-', out);
    fprintf(out, "+\n  %6s 0%*s\n", "", (int)cols + 1, pp__dur_s(ps * (double)n, b, sizeof b));
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        char per[PP_CELL], off[PP_CELL];
        fprintf(out, "  %c  %s: every %s at offset %s, peak %g tokens\n", pp__letter(i),
                pp__str(j, "name"), pp__dur(j, "period_s", per, sizeof per),
                pp__dur(j, "offset_s", off, sizeof off), pp__max(json_object_get(j, "tokens")));
    }
}

void plan_page_text(FILE *out, const json_t *doc, int width)
{
    json_t *plans = json_object_get(doc, "plans");
    if (json_array_size(plans) == 0) {
        fprintf(out, "no plan: no virtual cluster has an accepted recurring job\n");
        return;
    }
    size_t i;
    json_t *p;
    json_array_foreach(plans, i, p)
    {
        if (i > 0)
            fprintf(out, "\n");
        pp__plan_header(out, p);
        pp__plan_chart(out, p, width);
    }
}

/* ---- the HTML page ---- */

static void pp__esc(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

static const char *const pp__colours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define PP_NCOLOURS (sizeof pp__colours / sizeof pp__colours[0])

static const char pp__head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>Paddock plan</title>\n<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}\n"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}\n"
    "svg.chart{background:#fff;border:1px solid #dde2ea;border-radius:6px;display:block}\n"
    "svg text{font:11px system-ui,sans-serif;fill:#4a5263}\n"
    ".legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;"
    "height:12px;margin-right:4px;vertical-align:-1px}\n"
    "table{border-collapse:collapse;background:#fff}td,th{border:1px solid #dde2ea;"
    "padding:3px 8px;text-align:left;font-size:13px;white-space:nowrap}th{background:#f0f2f5}\n"
    ".ok{color:#17803d}.bad{color:#c0262d}.sub{color:#4a5263}\n"
    "</style></head><body>\n<h1>Paddock plan: periodic reservations</h1>\n";

#define PP_W  960.0
#define PP_H  300.0
#define PP_X0 56.0
#define PP_Y0 16.0
#define PP_PW (PP_W - PP_X0 - 20.0)
#define PP_PH (PP_H - PP_Y0 - 40.0)

static void pp__svg(FILE *out, const json_t *p, size_t vc_index)
{
    json_t *jobs = json_object_get(p, "jobs");
    size_t n = pp__points(jobs), nj = json_array_size(jobs);
    double ps = 0, cap = (double)pp__int(p, "capacity"), peak = 0;
    if (!pp__num(p, "point_s", &ps) || ps <= 0)
        pp__num(p, "step_s", &ps);
    for (size_t i = 0; i < n; i++) {
        double t = pp__total(jobs, i);
        peak = t > peak ? t : peak;
    }
    double top = (cap > peak ? cap : peak) * 1.08;
    if (top <= 0)
        top = 1;
    fprintf(
        out,
        "<svg class=\"chart\" id=\"plan-%zu\" data-jobs=\"%zu\" data-points=\"%zu\" width=\"%g\" "
        "height=\"%g\" viewBox=\"0 0 %g %g\" xmlns=\"http://www.w3.org/2000/svg\">\n",
        vc_index, nj, n, PP_W, PP_H, PP_W, PP_H);
    /* grid and the token axis */
    for (int k = 0; k <= 4; k++) {
        double v = top / 1.08 * k / 4, y = PP_Y0 + PP_PH - PP_PH * v / top;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n",
                PP_X0, y, PP_X0 + PP_PW, y, PP_X0 - 6, y + 4, v);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">tokens</text>\n", 4.0,
            PP_Y0 - 4 > 10 ? PP_Y0 - 4 : 10.0);
    /* one stacked step area per job, from the bottom */
    double *lo = mem_calloc(n + 1, sizeof *lo), *hi = mem_calloc(n + 1, sizeof *hi);
    if (n > 0 && (lo == NULL || hi == NULL)) {
        mem_free(lo);
        mem_free(hi);
        fprintf(out, "</svg>\n");
        return;
    }
    for (size_t j = 0; j < nj && n > 0; j++) {
        json_t *job = json_array_get(jobs, j);
        for (size_t i = 0; i < n; i++)
            hi[i] = lo[i] + pp__at(job, i);
        fprintf(out, "<path class=\"area\" data-job=\"");
        pp__esc(out, pp__str(job, "name"));
        fprintf(out, "\" fill=\"%s\" fill-opacity=\"0.85\" d=\"", pp__colours[j % PP_NCOLOURS]);
#define PP_XS(i) (PP_X0 + PP_PW * (double)(i) / (double)n)
#define PP_YS(v) (PP_Y0 + PP_PH - PP_PH * (v) / top)
        fprintf(out, "M%.2f %.2f", PP_XS(0), PP_YS(hi[0]));
        for (size_t i = 0; i < n; i++) {
            fprintf(out, "H%.2f", PP_XS(i + 1));
            if (i + 1 < n && hi[i + 1] != hi[i])
                fprintf(out, "V%.2f", PP_YS(hi[i + 1]));
        }
        fprintf(out, "V%.2f", PP_YS(lo[n - 1]));
        for (size_t i = n; i-- > 0;) {
            fprintf(out, "H%.2f", PP_XS(i));
            if (i > 0 && lo[i - 1] != lo[i])
                fprintf(out, "V%.2f", PP_YS(lo[i - 1]));
        }
        fprintf(out, "Z\"><title>");
        pp__esc(out, pp__str(job, "name"));
        fprintf(out, "</title></path>\n");
        memcpy(lo, hi, n * sizeof *lo);
    }
    mem_free(lo);
    mem_free(hi);
    if (cap > 0)
        fprintf(out,
                "<line class=\"capacity\" x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" "
                "stroke=\"#c0262d\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>"
                "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\" style=\"fill:#c0262d\">capacity "
                "%g</text>\n",
                PP_X0, PP_YS(cap), PP_X0 + PP_PW, PP_YS(cap), PP_X0 + PP_PW - 4, PP_YS(cap) - 4,
                cap);
    /* the time axis, from the start of the plan's horizon */
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>\n",
            PP_X0, PP_Y0 + PP_PH, PP_X0 + PP_PW, PP_Y0 + PP_PH, PP_X0, PP_Y0, PP_X0, PP_Y0 + PP_PH);
    for (int k = 0; k <= 6; k++) {
        char d[JOBDIR_DURATION_SIZE];
        double x = PP_X0 + PP_PW * k / 6;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, PP_Y0 + PP_PH, x, PP_Y0 + PP_PH + 4, x, PP_Y0 + PP_PH + 17,
                pp__dur_s(ps * (double)n * k / 6, d, sizeof d));
    }
    fprintf(
        out,
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time into the plan's horizon</text>\n",
        PP_X0 + PP_PW / 2, PP_H - 6);
    fprintf(out, "</svg>\n<div class=\"legend\">");
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job)
    {
        char per[PP_CELL];
        fprintf(out, "<span><i class=\"sw\" style=\"background:%s\"></i>",
                pp__colours[i % PP_NCOLOURS]);
        pp__esc(out, pp__str(job, "name"));
        fprintf(out, " (every %s)</span>", pp__dur(job, "period_s", per, sizeof per));
    }
    if (cap > 0)
        fprintf(out, "<span><i class=\"sw\" style=\"background:#c0262d\"></i>capacity</span>");
    fprintf(out, "</div>\n");
}

static void pp__html_table(FILE *out, const char *id, size_t ncols, const char *const *head,
                           size_t nrows, char (*cells)[PP_CELL], int met_col)
{
    fprintf(out, "<table id=\"%s\"><tr>", id);
    for (size_t j = 0; j < ncols; j++) {
        fprintf(out, "<th>");
        pp__esc(out, head[j]);
        fprintf(out, "</th>");
    }
    fprintf(out, "</tr>\n");
    for (size_t i = 0; i < nrows; i++) {
        fprintf(out, "<tr>");
        for (size_t j = 0; j < ncols; j++) {
            const char *s = cells[i * ncols + j];
            if ((int)j == met_col && strcmp(s, "met") == 0)
                fprintf(out, "<td class=\"ok\">");
            else if ((int)j == met_col && strcmp(s, "MISSED") == 0)
                fprintf(out, "<td class=\"bad\">");
            else
                fprintf(out, "<td>");
            pp__esc(out, s);
            fprintf(out, "</td>");
        }
        fprintf(out, "</tr>\n");
    }
    fprintf(out, "</table>\n");
}

int plan_page_html(FILE *out, const json_t *plan, const json_t *recurring, const json_t *history,
                   int64_t now_ms, char *msg, size_t cap)
{
    json_t *plans = json_object_get(plan, "plans");
    if (!json_is_array(plans))
        return err_fmt(msg, cap, ERR_PARSE, "plan: no \"plans\" array");
    char iso[32];
    fputs(pp__head, out);
    fprintf(out, "<div class=\"sub\">as of %s</div>\n",
            now_ms > 0 ? pp__iso(now_ms, iso, sizeof iso) : "-");
    if (json_array_size(plans) == 0)
        fprintf(out, "<p>No plan: no virtual cluster has an accepted recurring job.</p>\n");
    size_t i;
    json_t *p;
    json_array_foreach(plans, i, p)
    {
        char st[PP_CELL], hz[PP_CELL];
        fprintf(out, "<h2>Virtual cluster ");
        pp__esc(out, pp__str(p, "virtual_cluster"));
        fprintf(out,
                "</h2>\n<div class=\"sub\">capacity %lld tokens, step %s, horizon %s%s, peak %g "
                "tokens</div>\n",
                pp__int(p, "capacity"), pp__dur(p, "step_s", st, sizeof st),
                pp__dur(p, "horizon_s", hz, sizeof hz),
                json_is_true(json_object_get(p, "lcm_capped")) ? " (the periods' LCM, capped)" : "",
                json_number_value(json_object_get(p, "peak_tokens")));
        pp__svg(out, p, i);
    }
    json_t *list = json_object_get(recurring, "recurring");
    if (recurring != NULL) {
        size_t n = json_array_size(list);
        fprintf(out, "<h2>Recurring jobs</h2>\n");
        char(*cells)[PP_CELL] = n > 0 ? mem_calloc(n * LC_N, PP_CELL) : NULL;
        if (cells != NULL) {
            for (size_t k = 0; k < n; k++)
                pp__list_cells(json_array_get(list, k), &cells[k * LC_N]);
            pp__html_table(out, "recurring", LC_N, pp__list_head, n, cells, -1);
            mem_free(cells);
        } else {
            fprintf(out, "<p>None.</p>\n");
        }
    }
    json_t *runs = json_object_get(history, "runs");
    if (history != NULL) {
        size_t n = json_array_size(runs);
        n = n > 50 ? 50 : n;
        fprintf(out, "<h2>Recent runs</h2>\n");
        char(*cells)[PP_CELL] = n > 0 ? mem_calloc(n * HC_N, PP_CELL) : NULL;
        if (cells != NULL) {
            for (size_t k = 0; k < n; k++)
                pp__hist_cells(json_array_get(runs, k), &cells[k * HC_N]);
            pp__html_table(out, "history", HC_N, pp__hist_head, n, cells, HC_MET);
            mem_free(cells);
        } else {
            fprintf(out, "<p>None.</p>\n");
        }
    }
    fprintf(out, "</body></html>\n");
    if (ferror(out))
        return err_fmt(msg, cap, ERR_IO, "plan page: write failed");
    return 0;
}
