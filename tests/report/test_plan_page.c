/* test_plan_page.c - tools/plan_page's rendering of the RM's recurring-job documents, from canned
 * documents shaped as the admin contract says (docs/recurring.md):
 *   - a recurring record with a user deadline, and one whose deadline is inferred (advisory, with
 *     its evidence from consumers, a pending run that could not start, a skyline sparkline), and
 *     one inferred from completion times and accepted;
 *   - a history with met, missed and null values (a run that never started), a recurring run
 *     listed under its recurring job's name rather than its spec's;
 *   - a plan with two jobs: the ASCII stacked view, exactly, and the HTML page (one SVG area per
 *     job, the capacity line, names escaped, tables), opened in headless Chromium when installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "tests/common/capture.h"
#include "tools/plan_page.h"

#define NOW_MS 1790000000000LL /* 2026-09-21T14:13:20Z */

static const char rec_user[] =
    "{\"name\":\"clicklog\",\"virtual_cluster\":\"default\",\"period_s\":3600,\"offset_s\":300,"
    "\"deadline_s\":900,\"deadline_source\":\"user\",\"inferred_deadline_s\":null,"
    "\"accepted\":false,\"paused\":false,\"next_run_ms\":1790000720000,\"last_period\":41,"
    "\"runs\":12,\"met\":11,\"missed\":1,\"reserved\":true,\"reservation_peak_tokens\":4,"
    "\"last_error\":\"\",\"pending\":null}";

static const char rec_inferred[] =
    "{\"name\":\"etl\",\"virtual_cluster\":\"batch\",\"period_s\":60,\"offset_s\":0,"
    "\"deadline_s\":null,\"deadline_source\":\"inferred\",\"inferred_deadline_s\":42,"
    "\"accepted\":false,\"paused\":false,\"next_run_ms\":1789999990000,\"last_period\":6,"
    "\"runs\":6,\"met\":0,\"missed\":0,\"reserved\":false,\"reservation_peak_tokens\":0,"
    "\"last_error\":\"\",\"pending\":{\"period\":7,\"state\":\"starting\",\"job_id\":\"\","
    "\"launches\":2,\"reason\":\"paddock-jm exited with status 1\"},"
    "\"slo\":{\"source\":\"consumers\",\"deadline_s\":42,\"runs\":6,\"consumed\":5,"
    "\"read_cv\":0.08,\"slack_ratio\":1.1,\"read_median_s\":45,\"end_pct_s\":null},"
    "\"skyline\":{\"step_s\":5,\"tokens\":[1,2,4,4,2,1]},"
    "\"reservation\":{\"step_s\":5,\"tokens\":[]},"
    "\"history\":[{\"job_id\":\"j-0007\",\"name\":\"etl\",\"recurring\":\"etl\",\"period\":6,"
    "\"submit_ms\":1789999930000,\"start_ms\":1789999930400,\"end_ms\":1789999965000,"
    "\"deadline_ms\":null,\"met\":null,\"token_s\":88.5,\"outcome\":\"succeeded\","
    "\"reason\":\"\",\"skyline_step_s\":5,\"skyline\":[1,2]}]}";

static const char rec_accepted[] =
    "{\"name\":\"nightly\",\"virtual_cluster\":\"default\",\"period_s\":86400,\"offset_s\":7200,"
    "\"deadline_s\":50,\"deadline_source\":\"inferred\",\"inferred_deadline_s\":50,"
    "\"accepted\":true,\"paused\":true,\"next_run_ms\":null,\"last_period\":-1,\"runs\":5,"
    "\"met\":5,\"missed\":0,\"reserved\":false,\"last_error\":\"spec: no such file\","
    "\"pending\":null,\"slo\":{\"source\":\"completion\",\"deadline_s\":50,\"runs\":5,"
    "\"consumed\":0,\"read_cv\":null,\"slack_ratio\":1.2,\"read_median_s\":null,"
    "\"end_pct_s\":41.5},\"skyline\":{\"step_s\":5,\"tokens\":[]},\"reservation\":{\"step_s\":5,"
    "\"tokens\":[2,2,0]},\"history\":[]}";

static const char history_doc[] =
    "{\"runs\":["
    "{\"job_id\":\"j-0003\",\"name\":\"clicklog\",\"recurring\":\"clicklog\",\"period\":41,"
    "\"submit_ms\":1790000000000,\"start_ms\":1790000000500,\"end_ms\":1790000062000,"
    "\"deadline_ms\":1790000090000,\"met\":true,\"token_s\":123.45,\"outcome\":\"succeeded\","
    "\"reason\":\"\",\"skyline_step_s\":5,\"skyline\":[]},"
    "{\"job_id\":\"j-0002\",\"name\":\"clicklog-spec\",\"recurring\":\"clicklog\",\"period\":40,"
    "\"submit_ms\":1789996400000,\"start_ms\":1789996401000,\"end_ms\":1789996520000,"
    "\"deadline_ms\":1789996490000,\"met\":false,\"token_s\":300,\"outcome\":\"failed\","
    "\"reason\":\"task t3 failed 4 times\",\"skyline_step_s\":5,\"skyline\":[]},"
    "{\"job_id\":\"\",\"name\":\"clicklog\",\"recurring\":\"clicklog\",\"period\":null,"
    "\"submit_ms\":1789992800000,\"start_ms\":null,\"end_ms\":null,\"deadline_ms\":null,"
    "\"met\":null,\"token_s\":0,\"outcome\":\"not_started\",\"reason\":\"paused\","
    "\"skyline_step_s\":5,\"skyline\":[]}]}";

/* capacity 6, peak 5: the capacity line is the top row; one column per point. */
static const char plan_doc[] =
    "{\"plans\":[{\"virtual_cluster\":\"default\",\"capacity\":6,\"step_s\":5,\"horizon_s\":60,"
    "\"lcm_capped\":false,\"peak_tokens\":5,\"points\":12,\"point_s\":5,\"jobs\":["
    "{\"name\":\"a\",\"period_s\":30,\"offset_s\":0,\"tokens\":[2,2,2,2,2,2,0,0,0,0,0,0]},"
    "{\"name\":\"b<&>\",\"period_s\":60,\"offset_s\":10,\"tokens\":[0,0,3,3,3,0,0,0,0,1,1,0]}"
    "]}]}";

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    if (doc == NULL)
        fprintf(stderr, "canned document: %s\n", jerr.text);
    assert_non_null(doc);
    return doc;
}

/* What a renderer wrote into a tmpfile, as a malloc'd string. */
static char *slurp(FILE *f)
{
    long n = ftell(f);
    assert_true(n >= 0);
    char *buf = malloc((size_t)n + 1);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void expect(const char *text, const char *want)
{
    if (strstr(text, want) == NULL)
        fprintf(stderr, "--- output ---\n%s--- lacks ---\n%s\n", text, want);
    assert_non_null(strstr(text, want));
}

static void expect_not(const char *text, const char *unwanted)
{
    if (strstr(text, unwanted) != NULL)
        fprintf(stderr, "--- output ---\n%s--- has ---\n%s\n", text, unwanted);
    assert_null(strstr(text, unwanted));
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_record_user_deadline(void **state)
{
    (void)state;
    json_t *r = load(rec_user);
    FILE *f = tmpfile();
    plan_page_record(f, r, NOW_MS);
    char *out = slurp(f);
    expect(out, "recurring job clicklog (virtual cluster default): every 1h, offset 5m; "
                "deadline 15m (user); waiting\n");
    expect(out, "next run 2026-09-21T14:25:20Z (in 12m); last period 41; runs 12 (11 met, 1 "
                "missed); reservation peak 4 tokens\n");
    expect_not(out, "last error");
    free(out);

    /* the list: one header and one row, columns aligned */
    json_t *list = json_pack("{s:[O]}", "recurring", r);
    f = tmpfile();
    plan_page_list(f, list, NOW_MS);
    out = slurp(f);
    assert_int_equal(count(out, "\n"), 2);
    expect(
        out,
        "NAME      VC       PERIOD  OFFSET  DEADLINE    STATE    NEXT RUN (UTC)        RUNS  MET  "
        "MISSED  RESERVED\n");
    expect(
        out,
        "clicklog  default  1h      5m      15m (user)  waiting  2026-09-21T14:25:20Z  12    11   "
        "1       4\n");
    free(out);
    json_decref(list);
    json_decref(r);
}

static void test_show_inferred_advisory(void **state)
{
    (void)state;
    json_t *r = load(rec_inferred);
    FILE *f = tmpfile();
    plan_page_show(f, r, NOW_MS);
    char *out = slurp(f);
    expect(out, "recurring job etl (virtual cluster batch)\n");
    expect(out, "every 1m at offset 0s into each UTC period");
    expect(out, "next run     2026-09-21T14:13:10Z (10s ago); last period fired 6\n");
    expect(out, "deadline     none in force; inferred 42s (advisory until `paddock recurring "
                "accept etl`)\n");
    expect(out, "evidence     from when its outputs were first read over 6 runs: read in 5, "
                "median read 45s after the period's start, CV 0.08, slack ratio 1.10\n");
    expect(out, "the inferred deadline 42s is advisory until `paddock recurring accept etl`");
    expect(out, "pending      period 7 starting (2 launches): paddock-jm exited with status 1\n");
    /* 1,2,4,4,2,1 against a peak of 4 on levels " .:-=+*#%@" */
    expect(out, "skyline R*   step 5s, 6 steps (30s), peak 4 tokens\n");
    expect(out, "|-+@@+-|\n");
    expect(out, "reservation  none\n");
    expect(out, "last runs:\n");
    expect(out, "j-0007");
    free(out);

    /* as a record: the advisory deadline and the pending run's state */
    f = tmpfile();
    plan_page_record(f, r, NOW_MS);
    out = slurp(f);
    expect(out, "deadline 42s inferred, advisory; starting p7\n");
    expect(out, "no reservation\n");
    free(out);
    json_decref(r);
}

static void test_show_inferred_accepted(void **state)
{
    (void)state;
    json_t *r = load(rec_accepted);
    FILE *f = tmpfile();
    plan_page_show(f, r, NOW_MS);
    char *out = slurp(f);
    expect(out, "recurring job nightly (virtual cluster default): PAUSED\n");
    expect(out, "every 24h at offset 2h");
    expect(out, "next run     -\n");
    expect_not(out, "last period fired");
    expect(out, "deadline     50s, inferred from history and accepted\n");
    expect(out, "evidence     from completion times over 5 runs: completion percentile 42s, "
                "slack ratio 1.20\n");
    expect_not(out, "advisory");
    expect(out, "last error   spec: no such file\n");
    expect(out, "skyline R*   no model yet");
    expect(out, "reservation  step 5s, 3 steps (15s), peak 2 tokens\n");
    expect(out, "|@@ |\n");
    expect_not(out, "last runs");
    free(out);
    json_decref(r);
}

static void test_history_met_missed_null(void **state)
{
    (void)state;
    json_t *doc = load(history_doc);
    json_t *runs = json_object_get(doc, "runs");
    FILE *f = tmpfile();
    plan_page_history(f, runs, 0);
    char *out = slurp(f);
    assert_int_equal(count(out, "\n"), 4);
    expect(out, "JOBID   NAME      PERIOD  SUBMIT (UTC)          START   END    DEADLINE  MET     "
                "TOKEN-S  OUTCOME      REASON\n");
    expect(out, "j-0003  clicklog  41      2026-09-21T14:13:20Z  +500ms  +1m2s  +1m30s    met     "
                "123.5    succeeded    -\n");
    expect(out, "j-0002  clicklog  40      2026-09-21T13:13:20Z  +1s     +2m    +1m30s    MISSED  "
                "300.0    failed       task t3 failed 4 times\n");
    expect(out, "-       clicklog  -       2026-09-21T12:13:20Z  -       -      -         -       "
                "0.0      not_started  paused\n");
    free(out);

    f = tmpfile();
    plan_page_history(f, runs, 2); /* --limit 2: the newest two */
    out = slurp(f);
    assert_int_equal(count(out, "\n"), 3);
    expect_not(out, "not_started");
    free(out);

    f = tmpfile();
    json_t *none = json_array();
    plan_page_history(f, none, 0);
    json_decref(none);
    out = slurp(f);
    expect(out, "no runs recorded\n");
    free(out);
    json_decref(doc);
}

static void test_plan_text_two_jobs(void **state)
{
    (void)state;
    json_t *doc = load(plan_doc);
    FILE *f = tmpfile();
    plan_page_text(f, doc, 12);
    char *out = slurp(f);
    expect(out, "virtual cluster default: capacity 6 tokens, step 5s, horizon 1m, peak 5 tokens, "
                "2 recurring jobs\n");
    /* rows from the top (6 tokens, the capacity) down; row midpoints 5.6, 4.9, ... 0.4 */
    expect(out, "       6 |------------| capacity\n"
                "         |  BBB       |\n"
                "         |  BBB       |\n"
                "         |  BBB       |\n"
                "         |  BBB       |\n"
                "         |AAAAAA      |\n"
                "         |AAAAAA      |\n"
                "         |AAAAAA   BB |\n"
                "       0 +------------+\n"
                "         0           1m\n");
    expect(out, "  A  a: every 30s at offset 0s, peak 2 tokens\n");
    expect(out, "  B  b<&>: every 1m at offset 10s, peak 3 tokens\n");
    free(out);

    f = tmpfile();
    json_t *empty = json_pack("{s:[]}", "plans");
    plan_page_text(f, empty, 72);
    out = slurp(f);
    expect(out, "no plan");
    free(out);
    json_decref(empty);
    json_decref(doc);
}

static void test_sparkline(void **state)
{
    (void)state;
    char buf[64];
    json_t *a = json_pack("[i,i,i,i,i,i,i,i]", 0, 1, 2, 3, 4, 5, 6, 9);
    assert_string_equal(plan_page_sparkline(a, 60, buf, sizeof buf), " .:-=+*@");
    /* downsampled by the maximum of each column */
    assert_string_equal(plan_page_sparkline(a, 4, buf, sizeof buf), ".-+@");
    json_decref(a);
    a = json_array();
    assert_string_equal(plan_page_sparkline(a, 60, buf, sizeof buf), "");
    json_decref(a);
}

static char *html_of(const json_t *plan, const json_t *rec, const json_t *hist)
{
    char msg[256] = "";
    FILE *f = tmpfile();
    int rc = plan_page_html(f, plan, rec, hist, NOW_MS, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "plan_page_html: %s\n", msg);
    assert_int_equal(rc, 0);
    return slurp(f);
}

static void test_plan_html(void **state)
{
    (void)state;
    json_t *plan = load(plan_doc), *hist = load(history_doc), *r = load(rec_user);
    json_t *rec = json_pack("{s:[O]}", "recurring", r);
    char *out = html_of(plan, rec, hist);
    assert_int_equal(count(out, "<path class=\"area\""), 2);
    expect(out, "data-jobs=\"2\" data-points=\"12\"");
    expect(out, "data-job=\"b&lt;&amp;&gt;\"");
    expect_not(out, "b<&>");
    expect(out, "<line class=\"capacity\"");
    expect(out, "<table id=\"recurring\">");
    expect(out, "<td>clicklog</td><td>default</td><td>1h</td>");
    expect(out, "<table id=\"history\">");
    expect(out, "<td class=\"ok\">met</td>");
    expect(out, "<td class=\"bad\">MISSED</td>");
    expect(out, "</svg>");
    expect(out, "</html>\n");
    free(out);

    /* without the tables */
    out = html_of(plan, NULL, NULL);
    expect_not(out, "<table");
    assert_int_equal(count(out, "<path class=\"area\""), 2);
    free(out);

    /* a document that is not a plan: refused, nothing written */
    char msg[256] = "";
    FILE *f = tmpfile();
    json_t *bad = json_pack("{s:i}", "capacity", 3);
    assert_int_equal(plan_page_html(f, bad, NULL, NULL, NOW_MS, msg, sizeof msg), ERR_PARSE);
    assert_int_equal(ftell(f), 0);
    expect(msg, "plans");
    fclose(f);
    json_decref(bad);
    json_decref(rec);
    json_decref(r);
    json_decref(hist);
    json_decref(plan);
}

/* The page opened in headless Chromium: the browser parses the inline SVG into the DOM, one
 * area per job. Skipped where no Chromium is installed. */
static void test_plan_html_in_chromium(void **state)
{
    (void)state;
    const char *browser = access("/usr/bin/chromium", X_OK) == 0 ? "/usr/bin/chromium" : NULL;
    if (browser == NULL) {
        fprintf(stderr, "skipped: /usr/bin/chromium not installed (tools/install-deps.sh)\n");
        skip();
    }
    char dir[] = "/tmp/paddock-plan-XXXXXX", path[128], cmd[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/plan.html", dir);
    json_t *plan = load(plan_doc), *hist = load(history_doc);
    char *html = html_of(plan, NULL, hist);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(html, f);
    fclose(f);
    free(html);
    snprintf(cmd, sizeof cmd,
             "%s --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--user-data-dir='%s/profile' --dump-dom 'file://%s' 2>/dev/null",
             browser, dir, path);
    static char dom[1 << 20];
    int rc = capture_run(cmd, dom, sizeof dom);
    assert_int_equal(rc, 0);
    assert_int_equal(count(dom, "class=\"area\""), 2);
    expect(dom, "class=\"capacity\"");
    expect(dom, "<table id=\"history\">");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    json_decref(hist);
    json_decref(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_user_deadline),
        cmocka_unit_test(test_show_inferred_advisory),
        cmocka_unit_test(test_show_inferred_accepted),
        cmocka_unit_test(test_history_met_missed_null),
        cmocka_unit_test(test_plan_text_two_jobs),
        cmocka_unit_test(test_sparkline),
        cmocka_unit_test(test_plan_html),
        cmocka_unit_test(test_plan_html_in_chromium),
    };
    return cmocka_run_group_tests_name("plan_page", tests, NULL, NULL);
}
