/* plan_page_internal.h - what tools/plan_page.c (the text renderers) and plan_page_html.c (the
 * HTML page) share, defined in plan_page_cells.c: fields read from the RM's documents and
 * formatted (a missing or null field as "-"), the cells of the recurring-job and history tables,
 * and the plan's points. Not part of tools/plan_page.h. */
#ifndef PADDOCK_TOOLS_PLAN_PAGE_INTERNAL_H
#define PADDOCK_TOOLS_PLAN_PAGE_INTERNAL_H

#include "tools/plan_page.h"

#include <stdbool.h>

#define PP_CELL 96 /* one table cell's text */

/* A string field, "-" when absent, null or empty (borrowed from o). */
const char *plan_page__str(const json_t *o, const char *k);
/* A number field into *v; false when absent or not a number. */
bool plan_page__num(const json_t *o, const char *k, double *v);
/* s seconds as a duration ("3m10s") in buf (cap bytes); returns buf. */
const char *plan_page__dur_s(double s, char *buf, size_t cap);
/* A duration field in seconds, "-" when absent or null; returns buf or a constant. */
const char *plan_page__dur(const json_t *o, const char *k, char *buf, size_t cap);
/* Wall-clock ms as UTC ISO 8601 to the second, in buf; returns buf. */
const char *plan_page__iso(int64_t ms, char *buf, size_t cap);
/* An absolute time field (ms) as "ISO (in 3m)" / "ISO (3m ago)"; "-" when absent or null. */
const char *plan_page__when(const json_t *o, const char *k, int64_t now_ms, char *buf, size_t cap);
/* A number field rounded to an integer, 0 when absent or not a number. */
long long plan_page__int(const json_t *o, const char *k);
/* "15m (user)", "20m (inferred, accepted)", "20m inferred, advisory", or "none". */
const char *plan_page__deadline(const json_t *r, char *buf, size_t cap);
/* paused, "starting p12", "running p12", error (last_error set), or waiting. */
const char *plan_page__state(const json_t *r, char *buf, size_t cap);

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
extern const char *const plan_page__list_head[LC_N];
/* The cells of recurring job r's row in the list table. */
void plan_page__list_cells(const json_t *r, char c[LC_N][PP_CELL]);

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
extern const char *const plan_page__hist_head[HC_N];
/* The cells of history record h's row. */
void plan_page__hist_cells(const json_t *h, char c[HC_N][PP_CELL]);

/* The plan's points: how many (the longest "tokens" array of its jobs), each job's value at
 * point i (0 past its array) and the jobs' total at point i. */
size_t plan_page__points(const json_t *jobs);
double plan_page__at(const json_t *job, size_t i);
double plan_page__total(const json_t *jobs, size_t i);

#endif
