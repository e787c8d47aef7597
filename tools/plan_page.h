/* plan_page.h - the recurring-job documents of the RM (issue 13; the admin JSON that
 * docs/recurring.md describes) rendered for people: the text `paddock recurring`, `paddock history`
 * and `paddock plan` print, and the self-contained HTML page `paddock plan --html FILE` writes
 * (the plan as a stacked chart over time in inline SVG, one colour per recurring job, with the
 * capacity line; the recurring jobs and the recent runs as tables).
 *
 * Every renderer reads the documents as the RM sends them (borrowed) and tolerates what is
 * absent or null: such a field prints as "-". Times on the wire are seconds unless the key ends
 * in _ms (absolute wall-clock milliseconds); they print as durations ("3m10s") and UTC ISO 8601
 * times ("2026-11-21T05:55:12Z"). Nothing here reads a clock: callers pass `now_ms`.
 */
#ifndef PADDOCK_TOOLS_PLAN_PAGE_H
#define PADDOCK_TOOLS_PLAN_PAGE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A recurring job's record R in two lines: its schedule, deadline and state, then its counters
 * (what `recurring add`, `pause`, `resume` and `accept` print). */
void plan_page_record(FILE *out, const json_t *r, int64_t now_ms);

/* recurring_list's {"recurring": [R...]} as a table, one line per job. */
void plan_page_list(FILE *out, const json_t *doc, int64_t now_ms);

/* recurring_show's document: schedule; deadline and where it came from (the user, or inferred
 * with its evidence, advisory until accepted); the pending run and why it has not started; the
 * skyline R* and the reservation as ASCII sparklines; the last runs. */
void plan_page_show(FILE *out, const json_t *doc, int64_t now_ms);

/* An array of history records H as a sacct-like table, at most `limit` rows (0: all): job id,
 * name (the recurring job's for a recurring run, else the job's), period index, submit time (UTC),
 * start, end and deadline relative to submission, met/missed, token-seconds, outcome, reason. */
void plan_page_history(FILE *out, const json_t *runs, size_t limit);

/* plan's {"plans": [...]}: per virtual cluster its capacity, step, horizon and peak, and an
 * ASCII stacked view `width` columns wide (one letter per recurring job, legend below). */
void plan_page_text(FILE *out, const json_t *doc, int width);

/* The numbers of a JSON array as a sparkline `width` characters wide at most (downsampled by
 * the maximum of each column), levels " .:-=+*#%@" scaled to the array's maximum; "" for an
 * empty or absent array. Returns out (cap bytes, at least width + 1). */
char *plan_page_sparkline(const json_t *tokens, int width, char *out, size_t cap);

/* The HTML page: `plan` (required; the plan document), `recurring` (recurring_list's document
 * or NULL) and `history` (history's document or NULL). Returns 0, or ERR_PARSE with the reason
 * in msg when `plan` has no "plans" array (nothing written then), or ERR_IO. */
int plan_page_html(FILE *out, const json_t *plan, const json_t *recurring, const json_t *history,
                   int64_t now_ms, char *msg, size_t cap);

#endif
