/* test_rm_local_cluster.c - `paddock cluster up` with real PNs: it returns with every PN
 * registered (racks, capacities as asked), heartbeats reach the view, a PN killed with SIGKILL
 * turns suspect through the log, `cluster up` on the same directory restarts just that PN and
 * it is up again, and `cluster down` leaves none of the daemons running. Skipped when
 * paddock-pn is not built. Kills only pids from the cluster's own pid files. */
#include "common/clock.h"

#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char g_dir[256], g_bin[1024];

static json_t *paddock_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *paddock_json(const char *fmt, ...)
{
    char cmd[2200], args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/paddock %s", g_bin, args);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return NULL;
    json_t *doc = json_loadf(p, 0, NULL);
    if (pclose(p) != 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

static int paddock_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int paddock_run(const char *fmt, ...)
{
    char cmd[2200], args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/paddock %s >/dev/null", g_bin, args);
    return system(cmd);
}

static long read_pid(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.pid", g_dir, name);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

/* True while the process runs (a zombie no longer counts). */
static bool running(long pid)
{
    char path[64], st[512] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[n] = '\0';
    const char *paren = strrchr(st, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z';
}

static int rm_tree(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* If the test process dies of a signal (an assertion inside a library aborts, say), the
 * teardown never runs: kill the cluster's daemons from their pid files, with async-signal-safe
 * calls only. */
static void kill_daemons_on_crash(int sig)
{
    static const char *const names[] = {"rm-1", "rm-2", "rm-3", "pn-1", "pn-2", "pn-3"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[320];
        size_t n = 0;
        for (const char *p = g_dir; *p != '\0' && n < 250; p++)
            path[n++] = *p;
        path[n++] = '/';
        for (const char *p = names[i]; *p != '\0'; p++)
            path[n++] = *p;
        memcpy(path + n, ".pid", 5);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        char buf[24];
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        long pid = 0;
        for (ssize_t k = 0; k < len && buf[k] >= '0' && buf[k] <= '9'; k++)
            pid = pid * 10 + (buf[k] - '0');
        if (pid > 0)
            kill((pid_t)pid, SIGKILL);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_crash_cleanup(void)
{
    signal(SIGABRT, kill_daemons_on_crash);
    signal(SIGSEGV, kill_daemons_on_crash);
    signal(SIGTERM, kill_daemons_on_crash); /* ctest's timeout */
    signal(SIGBUS, kill_daemons_on_crash);
}

static int group_setup(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    snprintf(g_bin, sizeof g_bin, "%s", bin != NULL ? bin : "./bin");
    snprintf(g_dir, sizeof g_dir, "/tmp/paddock-rmlocal-XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    install_crash_cleanup();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    paddock_run("cluster down --dir %s", g_dir);
    if (getenv("PADDOCK_TEST_KEEP") == NULL)
        nftw(g_dir, rm_tree, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static json_t *node_named(json_t *nodes, const char *name)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(nodes, "nodes"), i, n)
    {
        if (strcmp(json_string_value(json_object_get(n, "name")), name) == 0)
            return n;
    }
    return NULL;
}

/* Polls `paddock nodes --json` until pred holds (bounded). */
static bool until_nodes(bool (*pred)(json_t *), int ms)
{
    uint64_t end = clock_mono_ms() + (uint64_t)ms;
    while (clock_mono_ms() < end) {
        json_t *nodes = paddock_json("nodes --cluster %s --json", g_dir);
        bool ok = nodes != NULL && pred(nodes);
        json_decref(nodes);
        if (ok)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

static bool all_heard(json_t *nodes)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(nodes, "nodes"), i, n)
    {
        if (!json_is_integer(json_object_get(n, "age_ms")))
            return false;
    }
    return json_array_size(json_object_get(nodes, "nodes")) == 3;
}

static bool pn2_suspect(json_t *nodes)
{
    const char *s = json_string_value(json_object_get(node_named(nodes, "pn-2"), "state"));
    return s != NULL && strcmp(s, "suspect") == 0;
}

static bool pn2_up_again(json_t *nodes)
{
    json_t *n = node_named(nodes, "pn-2");
    const char *s = json_string_value(json_object_get(n, "state"));
    return s != NULL && strcmp(s, "up") == 0 && json_is_integer(json_object_get(n, "age_ms")) &&
           json_integer_value(json_object_get(n, "age_ms")) < 2000;
}

static void test_local_cluster(void **state)
{
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/paddock-pn", g_bin);
    if (access(path, X_OK) != 0)
        skip();
    assert_int_equal(paddock_run("cluster up --dir %s --rm 3 --pn 3 --racks 2 --pn-cpus 1.5 "
                                 "--pn-mem-mb 1000",
                                 g_dir),
                     0);
    /* registered as asked, at once */
    json_t *nodes = paddock_json("nodes --cluster %s --json", g_dir);
    assert_non_null(nodes);
    assert_int_equal(json_array_size(json_object_get(nodes, "nodes")), 3);
    const char *racks[] = {"rack-1", "rack-2", "rack-1"};
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "pn-%d", i + 1);
        json_t *n = node_named(nodes, name);
        assert_non_null(n);
        assert_string_equal(json_string_value(json_object_get(n, "state")), "up");
        assert_string_equal(json_string_value(json_object_get(n, "rack")), racks[i]);
        assert_true(json_real_value(json_object_get(n, "cpus")) == 1.5);
        assert_int_equal(json_integer_value(json_object_get(n, "mem_mb")), 1000);
    }
    json_decref(nodes);
    assert_true(until_nodes(all_heard, 5000));
    /* SIGKILL one PN: suspect after liveness.suspect_after (3 s), through the log */
    long pn2 = read_pid("pn-2");
    assert_true(pn2 > 0 && running(pn2));
    assert_int_equal(kill((pid_t)pn2, SIGKILL), 0);
    assert_true(until_nodes(pn2_suspect, 8000));
    /* cluster up on the same directory restarts just that PN */
    long rm1 = read_pid("rm-1"), pn1 = read_pid("pn-1");
    assert_int_equal(paddock_run("cluster up --dir %s", g_dir), 0);
    assert_int_equal(read_pid("rm-1"), rm1);
    assert_int_equal(read_pid("pn-1"), pn1);
    assert_true(read_pid("pn-2") != pn2);
    assert_true(until_nodes(pn2_up_again, 8000));
    /* down: none of the daemons runs any more */
    long pids[6];
    const char *names[] = {"rm-1", "rm-2", "rm-3", "pn-1", "pn-2", "pn-3"};
    for (int i = 0; i < 6; i++) {
        pids[i] = read_pid(names[i]);
        assert_true(pids[i] > 0 && running(pids[i]));
    }
    assert_int_equal(paddock_run("cluster down --dir %s", g_dir), 0);
    for (int i = 0; i < 6; i++)
        assert_false(running(pids[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_cluster),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
