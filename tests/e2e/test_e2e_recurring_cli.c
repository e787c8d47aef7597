/* test_e2e_recurring_cli.c - `paddock recurring`, `history` and `plan` against a real local
 * cluster (one RM, two PNs, real paddock-jm), as a user runs them:
 *   - `recurring add` of a job every 3 s with a user deadline; adding the name again is refused
 *     with the RM's reason;
 *   - its runs appear in `history` (text and --json, --limit), one per period: periods distinct
 *     and consecutive;
 *   - `recurring show` states the skyline R* and the reservation once runs have ended, and
 *     `plan` (text, --json, --html) draws the job;
 *   - pause stops new runs, resume starts them again;
 *   - a job without a deadline gets one inferred, advisory until `recurring accept`;
 *   - remove leaves no recurring job and keeps the history.
 * Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char spec_path[1200];

static const char spec_text[] =
    "{\"version\": 1, \"name\": \"e2e-tick\",\n"
    " \"writes\": [\"/data/e2e/tick\"],\n"
    " \"tasks\": [\n"
    "  {\"id\": \"a\", \"cmd\": [\"sleep\", \"0.3\"], \"cpu\": 1},\n"
    "  {\"id\": \"b\", \"cmd\": [\"sleep\", \"0.3\"], \"cpu\": 1},\n"
    "  {\"id\": \"c\", \"cmd\": [\"sleep\", \"0.2\"], \"cpu\": 1, \"after\": [\"a\", \"b\"]}]}\n";

static int group_setup(void **state)
{
    (void)state;
    if (!e2e_have_jm())
        return 0;
    if (e2e_cluster_up("--rm 1 --pn 2 --pn-cpus 2 --pn-mem-mb 2048") != 0)
        return -1;
    snprintf(spec_path, sizeof spec_path, "%s/tick.json", e2e_dir());
    FILE *f = fopen(spec_path, "w");
    if (f == NULL)
        return -1;
    fputs(spec_text, f);
    return fclose(f) == 0 ? 0 : -1;
}

/* `paddock ARGS` expected to exit 0 with JSON on stdout: the document (caller decrefs). */
static json_t *paddock_json(const char *args)
{
    struct e2e_run r;
    e2e_paddock(&r, 30, "%s --json", args);
    if (r.status != 0)
        fprintf(stderr, "paddock %s --json: exit %d\n%s\n%s\n", args, r.status, r.out, r.err);
    assert_int_equal(r.status, 0);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    if (doc == NULL)
        fprintf(stderr, "paddock %s --json: not JSON (%s):\n%s\n", args, jerr.text, r.out);
    assert_non_null(doc);
    e2e_run_close(&r);
    return doc;
}

/* `paddock ARGS` expected to exit `want`: its stdout (caller frees). */
static char *paddock_text(const char *args, int want)
{
    struct e2e_run r;
    e2e_paddock(&r, 30, "%s", args);
    if (r.status != want)
        fprintf(stderr, "paddock %s: exit %d (want %d)\n%s\n%s\n", args, r.status, want, r.out,
                r.err);
    assert_int_equal(r.status, want);
    char *out = want == 0 ? r.out : r.err;
    if (want == 0)
        r.out = NULL;
    else
        r.err = NULL;
    e2e_run_close(&r);
    return out;
}

static void expect(const char *text, const char *want)
{
    if (strstr(text, want) == NULL)
        fprintf(stderr, "--- output ---\n%s--- lacks ---\n%s\n", text, want);
    assert_non_null(strstr(text, want));
}

/* The runs of `name` that succeeded, from `history NAME --json`. */
static size_t succeeded_runs(const char *name, json_t **runs_out)
{
    char args[256];
    snprintf(args, sizeof args, "history %s", name);
    json_t *doc = paddock_json(args);
    json_t *runs = json_object_get(doc, "runs");
    size_t n = 0, i;
    json_t *h;
    json_array_foreach(runs, i, h)
    {
        const char *o = json_string_value(json_object_get(h, "outcome"));
        if (o != NULL && strcmp(o, "succeeded") == 0)
            n++;
    }
    if (runs_out != NULL)
        *runs_out = json_incref(runs);
    json_decref(doc);
    return n;
}

static size_t wait_runs(const char *name, size_t want, int timeout_s)
{
    size_t n = 0;
    for (int i = 0; i < timeout_s * 4 && (n = succeeded_runs(name, NULL)) < want; i++)
        e2e_sleep_ms(250);
    return n;
}

static void test_recurring_lifecycle(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char args[1600];
    snprintf(args, sizeof args, "recurring add e2e-tick --every 3s --deadline 2500ms '%s'",
             spec_path);
    char *out = paddock_text(args, 0);
    expect(out, "recurring job e2e-tick (virtual cluster default): every 3s, offset 0s; "
                "deadline 2.5s (user)");
    free(out);
    /* the same name again: the RM refuses it and says why */
    out = paddock_text(args, 1);
    expect(out, "paddock recurring add: the RM: ");
    free(out);

    size_t n = wait_runs("e2e-tick", 4, 90);
    if (n < 4)
        e2e_jobs_stop();
    assert_true(n >= 4);

    /* one run per period: distinct, consecutive period indexes */
    json_t *runs = NULL;
    succeeded_runs("e2e-tick", &runs);
    long long prev = -1;
    size_t i;
    json_t *h;
    json_array_foreach(runs, i, h)
    {
        json_t *p = json_object_get(h, "period");
        assert_true(json_is_integer(p));
        long long period = (long long)json_integer_value(p);
        if (prev >= 0 && period != prev - 1)
            fprintf(stderr, "periods not consecutive: %lld after %lld (newest first)\n", period,
                    prev);
        if (prev >= 0)
            assert_int_equal(period, prev - 1);
        prev = period;
        assert_string_equal(json_string_value(json_object_get(h, "recurring")), "e2e-tick");
        assert_true(json_is_boolean(json_object_get(h, "met")));
        assert_true(json_number_value(json_object_get(h, "token_s")) > 0);
    }
    json_decref(runs);

    out = paddock_text("history e2e-tick", 0);
    expect(out, "JOBID");
    expect(out, "SUBMIT (UTC)");
    expect(out, "succeeded");
    free(out);
    json_t *doc = paddock_json("history e2e-tick --limit 2");
    assert_int_equal(json_array_size(json_object_get(doc, "runs")), 2);
    json_decref(doc);

    /* the model and the reservation, once runs have ended */
    json_t *show = NULL;
    for (int k = 0; k < 120; k++) {
        show = paddock_json("recurring show e2e-tick");
        if (json_array_size(json_object_get(json_object_get(show, "reservation"), "tokens")) > 0)
            break;
        json_decref(show);
        show = NULL;
        e2e_sleep_ms(250);
    }
    assert_non_null(show);
    assert_true(json_array_size(json_object_get(json_object_get(show, "skyline"), "tokens")) > 0);
    assert_true(json_is_true(json_object_get(show, "reserved")));
    assert_string_equal(json_string_value(json_object_get(show, "deadline_source")), "user");
    assert_true(json_array_size(json_object_get(show, "history")) >= 4);
    json_decref(show);
    out = paddock_text("recurring show e2e-tick", 0);
    expect(out, "deadline     2.5s, given by the user");
    expect(out, "skyline R*   step ");
    expect(out, "reservation  step ");
    expect(out, "last runs:");
    free(out);
    out = paddock_text("recurring list", 0);
    expect(out, "e2e-tick  default  3s");
    free(out);

    /* the plan draws it */
    doc = paddock_json("plan");
    json_t *plan0 = json_array_get(json_object_get(doc, "plans"), 0);
    assert_non_null(plan0);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(plan0, "jobs"), 0), "name")),
                        "e2e-tick");
    assert_true(json_integer_value(json_object_get(plan0, "peak_tokens")) > 0);
    json_decref(doc);
    out = paddock_text("plan", 0);
    expect(out, "virtual cluster default: capacity ");
    expect(out, "  A  e2e-tick: every 3s at offset 0s");
    free(out);
    char html[1300];
    snprintf(html, sizeof html, "%s/plan.html", e2e_dir());
    snprintf(args, sizeof args, "plan --html '%s'", html);
    free(paddock_text(args, 0));
    FILE *f = fopen(html, "r");
    assert_non_null(f);
    static char page[1 << 20];
    size_t len = fread(page, 1, sizeof page - 1, f);
    page[len] = '\0';
    fclose(f);
    expect(page, "<path class=\"area\" data-job=\"e2e-tick\"");
    expect(page, "<table id=\"recurring\">");
    expect(page, "<table id=\"history\">");

    /* pause: no new period fires; resume: they do again */
    out = paddock_text("recurring pause e2e-tick", 0);
    expect(out, "; paused\n");
    free(out);
    e2e_sleep_ms(1000); /* a run already launched may still register */
    doc = paddock_json("recurring show e2e-tick");
    long long fired = (long long)json_integer_value(json_object_get(doc, "last_period"));
    assert_true(json_is_true(json_object_get(doc, "paused")));
    json_decref(doc);
    e2e_sleep_ms(7000); /* two periods and more */
    doc = paddock_json("recurring show e2e-tick");
    assert_int_equal(json_integer_value(json_object_get(doc, "last_period")), fired);
    json_decref(doc);
    out = paddock_text("recurring resume e2e-tick", 0);
    expect(out, "e2e-tick");
    free(out);
    long long later = fired;
    for (int k = 0; k < 40 && later == fired; k++) {
        e2e_sleep_ms(250);
        doc = paddock_json("recurring show e2e-tick");
        later = (long long)json_integer_value(json_object_get(doc, "last_period"));
        json_decref(doc);
    }
    assert_true(later > fired);

    out = paddock_text("recurring remove e2e-tick", 0);
    expect(out, "removed recurring job e2e-tick\n");
    free(out);
    out = paddock_text("recurring show e2e-tick", 1);
    expect(out, "e2e-tick");
    free(out);
    /* the history stays */
    assert_true(succeeded_runs("e2e-tick", NULL) >= 4);
}

static void test_inferred_deadline_accepted(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char args[1600];
    /* the spec has no deadline_s and none is given: the RM infers one */
    snprintf(args, sizeof args, "recurring add e2e-infer --every 3s '%s'", spec_path);
    char *out = paddock_text(args, 0);
    expect(out, "deadline none");
    free(out);
    json_t *doc = NULL;
    bool inferred = false;
    for (int k = 0; k < 360 && !inferred; k++) {
        json_decref(doc);
        doc = paddock_json("recurring show e2e-infer");
        inferred = json_is_number(json_object_get(doc, "inferred_deadline_s"));
        if (!inferred)
            e2e_sleep_ms(250);
    }
    if (!inferred) {
        char *slo_text = json_dumps(json_object_get(doc, "slo"), JSON_COMPACT);
        fprintf(stderr, "no deadline inferred after %lld runs; slo %s\n",
                (long long)json_integer_value(json_object_get(doc, "runs")),
                slo_text != NULL ? slo_text : "-");
        free(slo_text);
        e2e_jobs_stop();
    }
    assert_true(inferred);
    json_t *slo = json_object_get(doc, "slo");
    assert_string_not_equal(json_string_value(json_object_get(slo, "source")), "none");
    assert_false(json_is_true(json_object_get(doc, "accepted")));
    json_decref(doc);
    out = paddock_text("recurring show e2e-infer", 0);
    expect(out, "advisory until `paddock recurring accept e2e-infer`");
    expect(out, "evidence     from ");
    free(out);

    out = paddock_text("recurring accept e2e-infer", 0);
    expect(out, "(inferred, accepted)");
    free(out);
    doc = paddock_json("recurring show e2e-infer");
    assert_string_equal(json_string_value(json_object_get(doc, "deadline_source")), "inferred");
    assert_true(json_is_number(json_object_get(doc, "deadline_s")));
    json_decref(doc);
    free(paddock_text("recurring remove e2e-infer", 0));
    out = paddock_text("recurring list", 0);
    expect(out, "no recurring jobs");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recurring_lifecycle),
        cmocka_unit_test(test_inferred_deadline_accepted),
    };
    return cmocka_run_group_tests_name("e2e_recurring_cli", tests, group_setup, e2e_group_teardown);
}
