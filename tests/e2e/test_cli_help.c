/* test_cli_help.c - the CLI's help conventions (tools/cli.h), for every command, table-driven:
 *   - `--help`, `-h` and `help CMD` print the command's usage on stdout, nothing on stderr, and
 *     exit 0, without running it (no cluster is needed, nothing is written);
 *   - a usage error (an unknown option) prints the usage on stderr, nothing on stdout, exit 2;
 *   - a command group alone lists its subcommands on stderr and exits 2; with --help, on
 *     stdout with exit 0; an unknown subcommand is named;
 *   - the daemons (paddock-rm, paddock-pn, paddock-jm) follow the same rules;
 *   - paddock-jm --job-from-fd (how `paddock submit` starts it early): the end of the stream
 *     exits 0 having done nothing, a malformed line or a job directory given twice exits 2.
 * The commands are read from `paddock help` and `paddock-sim help`, so a command added later is
 * checked too; the table below lists those that must be there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/capture.h"

static char out_buf[1 << 16];
static char err_buf[1 << 16];
static char err_path[256];

/* The run's stderr, from err_path into err_buf; removes the file. */
static void read_err(void)
{
    FILE *f = fopen(err_path, "r");
    size_t n = f != NULL ? fread(err_buf, 1, sizeof err_buf - 1, f) : 0;
    err_buf[n] = '\0';
    if (f != NULL)
        fclose(f);
    unlink(err_path);
}

/* Runs `BIN ARGS` from the source directory without a cluster in the environment: stdout into
 * out_buf, stderr into err_buf; returns the exit code. */
static int run(const char *bin, const char *args)
{
    const char *dir = getenv("PADDOCK_BIN_DIR");
    assert_non_null(dir);
    snprintf(err_path, sizeof err_path, "/tmp/paddock-test-cli-help-%ld.err", (long)getpid());
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && env -u PADDOCK_CLUSTER HOME=/nonexistent timeout 20 '%s/%s' %s "
             "2>'%s' </dev/null",
             getenv("PADDOCK_SOURCE_DIR"), dir, bin, args, err_path);
    int rc = capture_run(cmd, out_buf, sizeof out_buf);
    read_err();
    return rc;
}

/* Checks the last run against what help must look like: exit 0, `want` at the start of stdout,
 * stderr empty. */
static void expect_help(int rc, const char *bin, const char *args, const char *want)
{
    if (rc != 0 || strncmp(out_buf, want, strlen(want)) != 0 || err_buf[0] != '\0')
        fprintf(stderr, "%s %s: exit %d, want 0 and stdout starting '%s'\nstdout: %s\nstderr: %s\n",
                bin, args, rc, want, out_buf, err_buf);
    assert_int_equal(rc, 0);
    assert_memory_equal(out_buf, want, strlen(want));
    assert_string_equal(err_buf, "");
}

/* Checks the last run against a usage error: exit 2, stdout empty, "usage:" on stderr. */
static void expect_usage_error(int rc, const char *bin, const char *args)
{
    if (rc != 2 || out_buf[0] != '\0' || strstr(err_buf, "usage:") == NULL)
        fprintf(stderr, "%s %s: exit %d, want 2 and the usage on stderr\nstdout: %s\nstderr: %s\n",
                bin, args, rc, out_buf, err_buf);
    assert_int_equal(rc, 2);
    assert_string_equal(out_buf, "");
    assert_non_null(strstr(err_buf, "usage:"));
}

#define MAX_CMDS 128

/* The commands `BIN help` lists ("  NAME<spaces>summary", the name in a 22-column field). */
static int list_commands(const char *bin, char names[MAX_CMDS][32])
{
    expect_help(run(bin, "help"), bin, "help", "usage: ");
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(out_buf, "\n", &save); line != NULL && n < MAX_CMDS;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "  ", 2) != 0 || line[2] == ' ')
            continue;
        snprintf(names[n], sizeof names[n], "%.22s", line + 2);
        size_t len = strlen(names[n]);
        while (len > 0 && names[n][len - 1] == ' ')
            names[n][--len] = '\0';
        n++;
    }
    return n;
}

static bool listed(char names[MAX_CMDS][32], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* Every listed command of `bin`: help three ways, and a usage error. `must` names commands
 * that have to be listed. */
static void check_tool(const char *bin, const char *const *must, size_t nmust)
{
    static char names[MAX_CMDS][32];
    int n = list_commands(bin, names);
    for (size_t i = 0; i < nmust; i++) {
        if (!listed(names, n, must[i]))
            fprintf(stderr, "%s help does not list '%s'\n", bin, must[i]);
        assert_true(listed(names, n, must[i]));
    }
    for (int i = 0; i < n; i++) {
        /* the usage starts with the command's first word and names its last one (a group's
           subcommands may share one usage: "usage: paddock user whoami|list ...") */
        char args[128], want[128], first[32];
        snprintf(first, sizeof first, "%.31s", names[i]);
        first[strcspn(first, " ")] = '\0';
        const char *last = strrchr(names[i], ' ') != NULL ? strrchr(names[i], ' ') + 1 : names[i];
        snprintf(want, sizeof want, "usage: %.40s %.31s", bin, first);
        static const char *const forms[] = {"%.31s --help", "%.31s -h", "help %.31s",
                                            "%.31s --json --help"};
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(args, sizeof args, forms[f], names[i]);
#pragma GCC diagnostic pop
            expect_help(run(bin, args), bin, args, want);
            assert_non_null(strstr(out_buf, last));
        }
        snprintf(args, sizeof args, "%.31s --no-such-option", names[i]);
        expect_usage_error(run(bin, args), bin, args);
    }
    /* the tool alone: a usage error; an unknown command: exit 2, named */
    expect_usage_error(run(bin, ""), bin, "");
    assert_int_equal(run(bin, "no-such-command"), 2);
    assert_string_equal(out_buf, "");
    assert_non_null(strstr(err_buf, "unknown command 'no-such-command'"));
}

static void test_paddock_commands(void **state)
{
    (void)state;
    static const char *const must[] = {"submit",
                                       "quote",
                                       "history",
                                       "report",
                                       "job show",
                                       "job cancel",
                                       "job deadline",
                                       "keygen",
                                       "import wfcommons",
                                       "import chainfan",
                                       "recurring",
                                       "cluster up",
                                       "cluster down",
                                       "greedy",
                                       "plan",
                                       "rm status",
                                       "rm add",
                                       "rm remove",
                                       "nodes",
                                       "node show",
                                       "tokens",
                                       "jobs",
                                       "logs"};
    check_tool("paddock", must, sizeof must / sizeof must[0]);
    /* a subcommand of a command that parses its own: the command's usage */
    expect_help(run("paddock", "recurring add --help"), "paddock", "recurring add --help",
                "usage: paddock recurring add");
    expect_help(run("paddock", "help recurring"), "paddock", "help recurring",
                "usage: paddock recurring");
}

static void test_sim_commands(void **state)
{
    (void)state;
    static const char *const must[] = {"arbiter",    "recurring", "cluster",     "match",
                                       "stragglers", "jockey",    "jockey-table"};
    check_tool("paddock-sim", must, sizeof must / sizeof must[0]);
}

static void test_groups(void **state)
{
    (void)state;
    static const struct {
        const char *group;
        const char *subs[3];
    } groups[] = {
        {"cluster", {"up", "down"}},
        {"job", {"show", "cancel", "deadline"}},
        {"import", {"wfcommons", "chainfan"}},
        {"rm", {"status", "add", "remove"}},
        {"node", {"show"}},
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        char args[128], want[128];
        /* alone: nothing was asked, a usage error that lists the subcommands */
        expect_usage_error(run("paddock", groups[g].group), "paddock", groups[g].group);
        for (size_t k = 0; k < 3 && groups[g].subs[k] != NULL; k++) {
            snprintf(want, sizeof want, "\n  %s ", groups[g].subs[k]);
            assert_non_null(strstr(err_buf, want));
        }
        /* asked: the same list on stdout */
        snprintf(want, sizeof want, "usage: paddock %s SUBCOMMAND", groups[g].group);
        static const char *const forms[] = {"%s --help", "%s -h", "%s help", "help %s"};
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(args, sizeof args, forms[f], groups[g].group);
#pragma GCC diagnostic pop
            expect_help(run("paddock", args), "paddock", args, want);
            for (size_t k = 0; k < 3 && groups[g].subs[k] != NULL; k++) {
                char sub[64];
                snprintf(sub, sizeof sub, "\n  %s ", groups[g].subs[k]);
                assert_non_null(strstr(out_buf, sub));
            }
        }
        /* an unknown subcommand is named */
        snprintf(args, sizeof args, "%s frobnicate", groups[g].group);
        expect_usage_error(run("paddock", args), "paddock", args);
        assert_non_null(strstr(err_buf, "unknown subcommand 'frobnicate'"));
    }
    /* `recurring` parses its own subcommands: alone, its usage on stderr */
    expect_usage_error(run("paddock", "recurring"), "paddock", "recurring");
    assert_non_null(strstr(err_buf, "paddock recurring list"));
}

static void test_daemons(void **state)
{
    (void)state;
    static const char *const daemons[] = {"paddock-rm", "paddock-pn", "paddock-jm"};
    for (size_t i = 0; i < sizeof daemons / sizeof daemons[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: %s", daemons[i]);
        expect_help(run(daemons[i], "--help"), daemons[i], "--help", want);
        expect_help(run(daemons[i], "-h"), daemons[i], "-h", want);
        expect_usage_error(run(daemons[i], "--no-such-option"), daemons[i], "--no-such-option");
    }
}

/* `printf LINE | paddock-jm --job-from-fd 0 ARGS`: exit code, stdout and stderr as run(). */
static int run_jm_from(const char *line, const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "--job-from-fd 0 --cluster /nonexistent/cluster %s", args);
    const char *dir = getenv("PADDOCK_BIN_DIR");
    assert_non_null(dir);
    snprintf(err_path, sizeof err_path, "/tmp/paddock-test-cli-help-%ld.err", (long)getpid());
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "printf '%s' | timeout 20 '%s/paddock-jm' %s 2>'%s'", line, dir, a,
             err_path);
    int rc = capture_run(cmd, out_buf, sizeof out_buf);
    read_err();
    return rc;
}

static void test_jm_job_from_fd(void **state)
{
    (void)state;
    assert_int_equal(run_jm_from("", ""), 0); /* the submit gave up: nothing done, nothing said */
    assert_string_equal(out_buf, "");
    assert_string_equal(err_buf, "");
    assert_int_equal(run_jm_from("no-tab-here\\n", ""), 2);
    assert_non_null(strstr(err_buf, "expected \"ID<TAB>DIR\" on one line"));
    assert_int_equal(run_jm_from("j-1\\t/nonexistent/job\\n", ""), 2); /* no such directory */
    assert_non_null(strstr(err_buf, "cannot open /nonexistent/job/jm.log"));
    /* the replica that registered the job, after a third tab: not part of the directory */
    assert_int_equal(run_jm_from("j-1\\t/nonexistent/job\\t2\\n", ""), 2);
    assert_non_null(strstr(err_buf, "cannot open /nonexistent/job/jm.log"));
    assert_int_equal(run_jm_from("j-1\\t/nonexistent/job\\tx2\\n", ""), 2); /* not a replica */
    assert_non_null(strstr(err_buf, "cannot open /nonexistent/job\tx2/jm.log"));
    assert_int_equal(run_jm_from("", "--job-dir /tmp"), 2);
    assert_non_null(strstr(err_buf, "--job-from-fd replaces --job-dir and --job-id"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paddock_commands), cmocka_unit_test(test_sim_commands),
        cmocka_unit_test(test_groups),           cmocka_unit_test(test_daemons),
        cmocka_unit_test(test_jm_job_from_fd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
