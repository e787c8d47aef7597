/* The job report page: rendered by the real `paddock report`, then opened in headless Chromium,
 * which must run the page's drawing code and produce the three charts with one Gantt bar per
 * attempt. Skipped with a message where no Chromium is installed. */
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
#include "tools/report_page.h"

static const char *sample_path;

struct fixture {
    char dir[64];
    char html[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/paddock-report-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->html, sizeof f->html, "%s/report.html", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* Reads a command's whole stdout into a malloc'd string. */
static char *run_capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 4096) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = '\0';
    pclose(p);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_cli_renders_page(void **state)
{
    struct fixture *f = *state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/paddock report '%s' -o '%s'", getenv("PADDOCK_BIN_DIR"),
             sample_path, f->html);
    assert_int_equal(system(cmd), 0);
    char *html =
        run_capture(f->html[0] ? (snprintf(cmd, sizeof cmd, "cat '%s'", f->html), cmd) : "true");
    assert_non_null(html);
    /* The job name holds markup; it must not end the embedded script element. */
    assert_null(strstr(html, "<b>&</script>"));
    assert_non_null(strstr(html, "<\\/script>"));
    free(html);

    const char *browser = access("/usr/bin/chromium", X_OK) == 0 ? "/usr/bin/chromium" : NULL;
    if (browser == NULL) {
        fprintf(stderr, "skipped: /usr/bin/chromium not installed (tools/install-deps.sh)\n");
        skip();
    }
    snprintf(cmd, sizeof cmd,
             "%s --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--user-data-dir='%s/profile' --virtual-time-budget=5000 --dump-dom 'file://%s' "
             "2>/dev/null",
             browser, f->dir, f->html);
    char *dom = run_capture(cmd);
    assert_non_null(dom);
    assert_non_null(strstr(dom, "data-charts=\"3\""));
    /* 25 attempts in the sample, each one bar. */
    assert_int_equal(count(dom, "class=\"bar\""), 25);
    assert_non_null(strstr(dom, "id=\"tokens-chart\""));
    assert_non_null(strstr(dom, "data-marks=\"26\"")); /* progress samples */
    /* every attempt listed with the command that prints its output, those that did not
       succeed first and with --stderr */
    assert_int_equal(count(dom, "class=\"logs\""), 25);
    const char *first = strstr(dom, "class=\"logs\">");
    assert_non_null(first);
    static const char want[] = "paddock logs j-0123456789ab extract-5 --attempt 1 --stderr<";
    assert_memory_equal(first + strlen("class=\"logs\">"), want, strlen(want));
    free(dom);
}

static void test_rejects_bad_reports(void **state)
{
    struct fixture *f = *state;
    char path[256], msg[256];
    snprintf(path, sizeof path, "%s/bad.json", f->dir);
    const char *bad[] = {"{\"version\": 2}", "[1,2]", "{\"version\":1,\"attempts\":{}}",
                         "{\"version\":1,", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *fp = fopen(path, "w");
        fputs(bad[i], fp);
        fclose(fp);
        FILE *out = tmpfile();
        int rc = report_page_render(path, out, msg, sizeof msg);
        assert_true(rc < 0);
        assert_true(strlen(msg) > 0);
        assert_int_equal(ftell(out), 0); /* nothing written for a rejected report */
        fclose(out);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_report SAMPLE.json\n");
        return 2;
    }
    sample_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cli_renders_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejects_bad_reports, setup, teardown),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
