/* report_page.h - renders a job's report.json (docs/job-directory.md) as one self-contained HTML
 * page: a summary, a Gantt chart of task attempts by node, token allocation against the Jockey
 * target and the oracle, and progress against the deadline. The charts are drawn in the browser
 * from the report embedded in the page, so the page needs no network and no other file.
 */
#ifndef PADDOCK_TOOLS_REPORT_PAGE_H
#define PADDOCK_TOOLS_REPORT_PAGE_H

#include <stddef.h>
#include <stdio.h>

/* Reads the report at `json_path`, checks its shape (version 1, the arrays it draws) and writes
 * the page to `out`. Returns 0, or a negative ERR_* code with the reason in msg (caller owns
 * msg, `cap` bytes). Nothing is written to `out` when the report is rejected. */
int report_page_render(const char *json_path, FILE *out, char *msg, size_t cap);

#endif
