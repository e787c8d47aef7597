/* plan_page.c - the recurring-job documents as text (tools/plan_page.h): a job's record, the
 * jobs' table, the history, a job's page with sparklines, and the plan as an ASCII chart. The
 * fields and table cells are read in plan_page_cells.c, the HTML page is plan_page_html.c. */
#include "tools/plan_page.h"
#include "tools/plan_page_internal.h"

#include "common/mem.h"
#include "tools/jobdir.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* ---- the recurring-job records ---- */

void plan_page_record(FILE *out, const json_t *r, int64_t now_ms)
{
    char per[PP_CELL], off[PP_CELL], dl[PP_CELL], st[PP_CELL], next[PP_CELL];
    fprintf(out, "recurring job %s (virtual cluster %s): every %s, offset %s; deadline %s; %s\n",
            plan_page__str(r, "name"), plan_page__str(r, "virtual_cluster"),
            plan_page__dur(r, "period_s", per, sizeof per),
            plan_page__dur(r, "offset_s", off, sizeof off), plan_page__deadline(r, dl, sizeof dl),
            plan_page__state(r, st, sizeof st));
    long long last = plan_page__int(r, "last_period");
    double peak = 0;
    fprintf(out, "  next run %s; ", plan_page__when(r, "next_run_ms", now_ms, next, sizeof next));
    if (json_is_integer(json_object_get(r, "last_period")) && last >= 0)
        fprintf(out, "last period %lld; ", last);
    fprintf(out, "runs %lld (%lld met, %lld missed); ", plan_page__int(r, "runs"),
            plan_page__int(r, "met"), plan_page__int(r, "missed"));
    if (json_is_true(json_object_get(r, "reserved")) &&
        plan_page__num(r, "reservation_peak_tokens", &peak))
        fprintf(out, "reservation peak %g tokens\n", peak);
    else
        fprintf(out, "no reservation\n");
    if (strcmp(plan_page__str(r, "last_error"), "-") != 0)
        fprintf(out, "  last error: %s\n", plan_page__str(r, "last_error"));
}

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
        plan_page__list_cells(json_array_get(list, i), &cells[i * LC_N]);
    pp__table(out, LC_N, plan_page__list_head, n, cells);
    mem_free(cells);
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
        plan_page__hist_cells(json_array_get(runs, i), &cells[i * HC_N]);
    pp__table(out, HC_N, plan_page__hist_head, n, cells);
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
    plan_page__num(sky, "step_s", &st);
    fprintf(out, "  %-12s step %s, %zu steps (%s), peak %g tokens\n", label,
            plan_page__dur_s(st, step, sizeof step), n,
            plan_page__dur_s(st * (double)n, span, sizeof span), pp__max(tok));
    fprintf(out, "  %-12s |%s|\n", "", plan_page_sparkline(tok, 60, line, sizeof line));
}

static void pp__evidence(FILE *out, const json_t *r, const json_t *slo)
{
    const char *src = plan_page__str(slo, "source");
    char a[JOBDIR_DURATION_SIZE], b[JOBDIR_DURATION_SIZE];
    double v;
    if (!json_is_object(slo) || strcmp(src, "none") == 0 || strcmp(src, "-") == 0) {
        fprintf(out, "  %-12s none yet: %lld runs recorded, no deadline inferred\n", "evidence",
                plan_page__int(slo, "runs"));
        return;
    }
    fprintf(out, "  %-12s from %s over %lld runs", "evidence",
            strcmp(src, "consumers") == 0 ? "when its outputs were first read" : "completion times",
            plan_page__int(slo, "runs"));
    if (strcmp(src, "consumers") == 0) {
        fprintf(out, ": read in %lld, median read %s after the period's start",
                plan_page__int(slo, "consumed"), plan_page__dur(slo, "read_median_s", a, sizeof a));
        if (plan_page__num(slo, "read_cv", &v))
            fprintf(out, ", CV %.2f", v);
    } else {
        fprintf(out, ": completion percentile %s", plan_page__dur(slo, "end_pct_s", b, sizeof b));
    }
    if (plan_page__num(slo, "slack_ratio", &v))
        fprintf(out, ", slack ratio %.2f", v);
    fprintf(out, "\n");
    if (!json_is_true(json_object_get(r, "accepted")) && plan_page__num(slo, "deadline_s", &v))
        fprintf(
            out,
            "  %-12s the inferred deadline %s is advisory until `paddock recurring accept %s`\n",
            "", plan_page__dur_s(v, a, sizeof a), plan_page__str(r, "name"));
}

void plan_page_show(FILE *out, const json_t *doc, int64_t now_ms)
{
    char a[PP_CELL], b[PP_CELL];
    double v = 0;
    fprintf(out, "recurring job %s (virtual cluster %s)%s\n", plan_page__str(doc, "name"),
            plan_page__str(doc, "virtual_cluster"),
            json_is_true(json_object_get(doc, "paused")) ? ": PAUSED" : "");
    fprintf(out, "  %-12s every %s at offset %s into each UTC period\n", "schedule",
            plan_page__dur(doc, "period_s", a, sizeof a),
            plan_page__dur(doc, "offset_s", b, sizeof b));
    fprintf(out, "  %-12s %s", "next run",
            plan_page__when(doc, "next_run_ms", now_ms, a, sizeof a));
    if (json_is_integer(json_object_get(doc, "last_period")) &&
        plan_page__int(doc, "last_period") >= 0)
        fprintf(out, "; last period fired %lld", plan_page__int(doc, "last_period"));
    fprintf(out, "\n");

    const char *src = plan_page__str(doc, "deadline_source");
    fprintf(out, "  %-12s ", "deadline");
    if (plan_page__num(doc, "deadline_s", &v) && v > 0)
        fprintf(out, "%s, %s\n", plan_page__dur_s(v, a, sizeof a),
                strcmp(src, "inferred") == 0 ? "inferred from history and accepted"
                                             : "given by the user");
    else if (plan_page__num(doc, "inferred_deadline_s", &v) && v > 0)
        fprintf(out, "none in force; inferred %s (advisory until `paddock recurring accept %s`)\n",
                plan_page__dur_s(v, a, sizeof a), plan_page__str(doc, "name"));
    else
        fprintf(out, "none\n");
    if (strcmp(src, "user") != 0)
        pp__evidence(out, doc, json_object_get(doc, "slo"));

    fprintf(out, "  %-12s %lld (%lld met, %lld missed)\n", "runs", plan_page__int(doc, "runs"),
            plan_page__int(doc, "met"), plan_page__int(doc, "missed"));
    json_t *p = json_object_get(doc, "pending");
    if (json_is_object(p)) {
        fprintf(out, "  %-12s period %lld %s", "pending", plan_page__int(p, "period"),
                plan_page__str(p, "state"));
        if (strcmp(plan_page__str(p, "job_id"), "-") != 0)
            fprintf(out, " as %s", plan_page__str(p, "job_id"));
        fprintf(out, " (%lld launch%s)", plan_page__int(p, "launches"),
                plan_page__int(p, "launches") == 1 ? "" : "es");
        if (strcmp(plan_page__str(p, "reason"), "-") != 0)
            fprintf(out, ": %s", plan_page__str(p, "reason"));
        fprintf(out, "\n");
    }
    if (strcmp(plan_page__str(doc, "last_error"), "-") != 0)
        fprintf(out, "  %-12s %s\n", "last error", plan_page__str(doc, "last_error"));
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
            plan_page__str(p, "virtual_cluster"), plan_page__int(p, "capacity"),
            plan_page__dur(p, "step_s", st, sizeof st),
            plan_page__dur(p, "horizon_s", hz, sizeof hz),
            json_is_true(json_object_get(p, "lcm_capped")) ? " (the periods' LCM, capped)" : "",
            json_number_value(json_object_get(p, "peak_tokens")),
            json_array_size(json_object_get(p, "jobs")),
            json_array_size(json_object_get(p, "jobs")) == 1 ? "" : "s");
}

#define PP_ROWS 8

static void pp__plan_chart(FILE *out, const json_t *p, int width)
{
    json_t *jobs = json_object_get(p, "jobs");
    size_t n = plan_page__points(jobs), nj = json_array_size(jobs);
    if (n == 0 || nj == 0) {
        fprintf(out, "  no reservations\n");
        return;
    }
    size_t cols = width > 8 ? (size_t)width : 8;
    double peak = 0;
    for (size_t i = 0; i < n; i++) {
        double t = plan_page__total(jobs, i);
        peak = t > peak ? t : peak;
    }
    double cap = (double)plan_page__int(p, "capacity"), top = peak > 0 ? peak : 1;
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
            if (plan_page__total(jobs, i) > plan_page__total(jobs, pick[c]))
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
                cum += plan_page__at(json_array_get(jobs, j), pick[c]);
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
    if (!plan_page__num(p, "point_s", &ps) || ps <= 0)
        plan_page__num(p, "step_s", &ps);
    fprintf(out, "  %6d +", 0);
    for (size_t c = 0; c < cols; c++)
        fputc('-', out);
    fprintf(out, "+\n  %6s 0%*s\n", "", (int)cols + 1,
            plan_page__dur_s(ps * (double)n, b, sizeof b));
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        char per[PP_CELL], off[PP_CELL];
        fprintf(out, "  %c  %s: every %s at offset %s, peak %g tokens\n", pp__letter(i),
                plan_page__str(j, "name"), plan_page__dur(j, "period_s", per, sizeof per),
                plan_page__dur(j, "offset_s", off, sizeof off),
                pp__max(json_object_get(j, "tokens")));
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
