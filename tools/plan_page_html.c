/* plan_page_html.c - `paddock plan --html FILE`: a self-contained page with the plan as a
 * stacked chart in inline SVG per virtual cluster, and the recurring jobs and recent runs as
 * tables (tools/plan_page.h, plan_page_html). */
#include "tools/plan_page.h"
#include "tools/plan_page_internal.h"

#include "common/err.h"
#include "common/mem.h"
#include "tools/jobdir.h"

#include <stdbool.h>
#include <string.h>

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
    size_t n = plan_page__points(jobs), nj = json_array_size(jobs);
    double ps = 0, cap = (double)plan_page__int(p, "capacity"), peak = 0;
    if (!plan_page__num(p, "point_s", &ps) || ps <= 0)
        plan_page__num(p, "step_s", &ps);
    for (size_t i = 0; i < n; i++) {
        double t = plan_page__total(jobs, i);
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
            hi[i] = lo[i] + plan_page__at(job, i);
        fprintf(out, "<path class=\"area\" data-job=\"");
        pp__esc(out, plan_page__str(job, "name"));
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
        pp__esc(out, plan_page__str(job, "name"));
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
                plan_page__dur_s(ps * (double)n * k / 6, d, sizeof d));
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
        pp__esc(out, plan_page__str(job, "name"));
        fprintf(out, " (every %s)</span>", plan_page__dur(job, "period_s", per, sizeof per));
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
            now_ms > 0 ? plan_page__iso(now_ms, iso, sizeof iso) : "-");
    if (json_array_size(plans) == 0)
        fprintf(out, "<p>No plan: no virtual cluster has an accepted recurring job.</p>\n");
    size_t i;
    json_t *p;
    json_array_foreach(plans, i, p)
    {
        char st[PP_CELL], hz[PP_CELL];
        fprintf(out, "<h2>Virtual cluster ");
        pp__esc(out, plan_page__str(p, "virtual_cluster"));
        fprintf(out,
                "</h2>\n<div class=\"sub\">capacity %lld tokens, step %s, horizon %s%s, peak %g "
                "tokens</div>\n",
                plan_page__int(p, "capacity"), plan_page__dur(p, "step_s", st, sizeof st),
                plan_page__dur(p, "horizon_s", hz, sizeof hz),
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
                plan_page__list_cells(json_array_get(list, k), &cells[k * LC_N]);
            pp__html_table(out, "recurring", LC_N, plan_page__list_head, n, cells, -1);
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
                plan_page__hist_cells(json_array_get(runs, k), &cells[k * HC_N]);
            pp__html_table(out, "history", HC_N, plan_page__hist_head, n, cells, HC_MET);
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
