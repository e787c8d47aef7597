/* Tests of the process node's core (pn/node.h), its statuses caught by a fake send callback
 * (node_fixture.h): task directories emptied and given to the next task (or not, while an
 * escaped process still holds an output), and tasks started by spawner threads or by the loop.
 * Real processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pn/exec.h"
#include "tests/pn/node_fixture.h"

/* ---- task directories ---- */

/* Processes started, both classes. */
static uint64_t started(const fixture_t *f)
{
    node_counters_t c = counters(f);
    return c.starts[0] + c.starts[1];
}

static void create_argv(fixture_t *f, const char *job, const char *task, const char **argv,
                        uint32_t argc)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    proto_task_create_t *c = &m.task_create;
    c->job_id = (char *)job;
    c->task_id = (char *)task;
    c->attempt = 1;
    c->cpu = 0.1;
    c->mem_mb = 16;
    c->runtime_ms = 100;
    c->argv = (char **)argv;
    c->argc = argc;
    deliver(f, "A", &m);
}

/* The one directory under WORK/SUB whose name ends with `suffix` (or, suffix NULL, the number
 * of entries, into *count). */
static int find_entry(const fixture_t *f, const char *sub, const char *suffix, char *out,
                      size_t cap, size_t *count)
{
    char path[400];
    snprintf(path, sizeof path, "%s/work/%s", f->dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *de;
    size_t n = 0;
    int found = -1;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        n++;
        size_t ln = strlen(de->d_name), ls = suffix ? strlen(suffix) : 0;
        if (suffix && ln >= ls && strcmp(de->d_name + ln - ls, suffix) == 0) {
            snprintf(out, cap, "%.399s/%.100s", path, de->d_name);
            found = 0;
        }
    }
    closedir(d);
    if (count)
        *count = n;
    return suffix ? found : 0;
}

static size_t file_size(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

/* A forgotten task's directory is emptied and given to the next task (its inodes reused):
 * the next task finds only an empty stdout and stderr, nothing the first one left. */
static void test_task_dir_recycled(void **state)
{
    fixture_t *f = *state;
    const char *messy[] = {"/bin/sh", "-c",
                           "echo out; echo err >&2; echo x > junk; mkdir -p sub/deep; "
                           "echo y > sub/deep/f; ln -s /etc/hostname link; chmod 700 ."};
    create_argv(f, "j", "a", messy, 3);
    wait_state(f, "j", "a", PROTO_TASK_SUCCEEDED);
    char a[512], b[512];
    assert_int_equal(find_entry(f, "tasks", "-j-a-1", a, sizeof a, NULL), 0);
    assert_int_equal(file_size(a, "stdout"), 4);
    struct stat sa, sb, oa, ob;
    assert_int_equal(stat(a, &sa), 0);
    char p[1024];
    snprintf(p, sizeof p, "%s/stdout", a);
    assert_int_equal(stat(p, &oa), 0);

    node_sweep(f->n); /* forgets it: its directory goes to the spares */
    settle(f);
    size_t spares = 0, tasks = 0;
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(spares, 1);
    assert_int_equal(tasks, 0);

    const char *look[] = {"/bin/sh", "-c", "ls -A; pwd"};
    create_argv(f, "j", "b", look, 3);
    wait_state(f, "j", "b", PROTO_TASK_SUCCEEDED);
    assert_int_equal(find_entry(f, "tasks", "-j-b-1", b, sizeof b, NULL), 0);
    assert_int_equal(stat(b, &sb), 0);
    snprintf(p, sizeof p, "%s/stdout", b);
    assert_int_equal(stat(p, &ob), 0);
    assert_true(sa.st_ino == sb.st_ino); /* the same directory and stdout, renamed */
    assert_true(oa.st_ino == ob.st_ino);
    mode_t mask = umask(022);
    umask(mask);
    assert_int_equal(sb.st_mode & 07777, 0755 & ~mask); /* the first task's chmod undone */
    char want[1200], got[1200] = "";
    snprintf(want, sizeof want, "stderr\nstdout\n%s\n", b);
    FILE *o = fopen(p, "r");
    assert_non_null(o);
    size_t len = fread(got, 1, sizeof got - 1, o);
    fclose(o);
    got[len] = 0;
    assert_string_equal(got, want);
    assert_int_equal(file_size(b, "stderr"), 0);
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(spares, 0);
}

/* A task that succeeded leaving nothing (empty stdout and stderr, no files) gives its
 * directory back at once, before [tasks] retain: the next task reuses it. One that wrote
 * something, or failed, keeps its directory for a reader. */
static void test_task_dir_given_back_when_empty(void **state)
{
    fixture_t *f = *state;
    const char *quiet[] = {"/bin/true"};
    create_argv(f, "j", "q", quiet, 1);
    wait_state(f, "j", "q", PROTO_TASK_SUCCEEDED);
    settle(f);
    uv_run(&f->loop, UV_RUN_NOWAIT); /* the end of the pass: kept for a start in it till then */
    size_t spares = 0, tasks = 0;
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(spares, 1); /* no sweep: given back at the end */
    assert_int_equal(tasks, 0);

    const char *talk[] = {"/bin/sh", "-c", "echo out"};
    create_argv(f, "j", "t", talk, 3);
    wait_state(f, "j", "t", PROTO_TASK_SUCCEEDED);
    const char *fail[] = {"/bin/false"};
    create_argv(f, "j", "f", fail, 1);
    wait_state(f, "j", "f", PROTO_TASK_FAILED);
    settle(f);
    char t[512];
    assert_int_equal(find_entry(f, "tasks", "-j-t-1", t, sizeof t, NULL), 0);
    assert_int_equal(file_size(t, "stdout"), 4);
    assert_int_equal(find_entry(f, "tasks", "-j-f-1", t, sizeof t, NULL), 0);
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(spares, 0); /* the quiet task's directory went to "t" */
}

/* A process that escaped its task (setsid) and still holds the task's stdout open: the
 * directory is reused, but not that file, so what it writes cannot land in the next task's
 * output. */
static void test_task_dir_recycled_not_shared_output(void **state)
{
    fixture_t *f = *state;
    char script[600];
    snprintf(script, sizeof script,
             "echo kept > marker; " /* leaves something: its directory waits for the sweep */
             "setsid sh -c 'echo $$ > %s/escaped.pid; exec sleep 30' & "
             "while [ ! -s %s/escaped.pid ]; do sleep 0.01; done",
             f->dir, f->dir);
    const char *leak[] = {"/bin/sh", "-c", script};
    create_argv(f, "j", "a", leak, 3);
    wait_state(f, "j", "a", PROTO_TASK_SUCCEEDED);
    char a[512], b[512], p[1024];
    assert_int_equal(find_entry(f, "tasks", "-j-a-1", a, sizeof a, NULL), 0);
    struct stat da, db, oa, ob, ea, eb;
    assert_int_equal(stat(a, &da), 0);
    snprintf(p, sizeof p, "%s/stdout", a);
    assert_int_equal(stat(p, &oa), 0);
    snprintf(p, sizeof p, "%s/stderr", a);
    assert_int_equal(stat(p, &ea), 0);
    node_sweep(f->n);
    settle(f);
    const char *say[] = {"/bin/sh", "-c", "echo b"}; /* output: its directory is kept */
    create_argv(f, "j", "b", say, 3);
    wait_state(f, "j", "b", PROTO_TASK_SUCCEEDED);
    assert_int_equal(find_entry(f, "tasks", "-j-b-1", b, sizeof b, NULL), 0);
    assert_int_equal(stat(b, &db), 0);
    snprintf(p, sizeof p, "%s/stdout", b);
    assert_int_equal(stat(p, &ob), 0);
    snprintf(p, sizeof p, "%s/stderr", b);
    assert_int_equal(stat(p, &eb), 0);
    assert_true(da.st_ino == db.st_ino); /* the directory is reused */
    assert_true(oa.st_ino != ob.st_ino); /* its files, held open by the escapee, are not */
    assert_true(ea.st_ino != eb.st_ino);
    snprintf(p, sizeof p, "%s/escaped.pid", f->dir);
    FILE *pf = fopen(p, "r");
    assert_non_null(pf);
    int pid = 0;
    assert_int_equal(fscanf(pf, "%d", &pid), 1);
    fclose(pf);
    assert_true(pid > 1);
    kill(pid, SIGKILL);
}

/* A task that succeeded leaving nothing while a process it started (setsid) still holds its
 * stdout: its directory is given back at once, but not reused as it is on the loop: the next
 * task writes into a new stdout, not into the one the escapee holds. */
static void test_task_dir_quiet_escapee(void **state)
{
    fixture_t *f = *state;
    char script[600];
    snprintf(script, sizeof script,
             "setsid sh -c 'echo $$ > %s/quiet.pid; exec sleep 30' & "
             "while [ ! -s %s/quiet.pid ]; do sleep 0.01; done",
             f->dir, f->dir);
    const char *leak[] = {"/bin/sh", "-c", script};
    create_argv(f, "j", "a", leak, 3);
    wait_state(f, "j", "a", PROTO_TASK_SUCCEEDED);
    settle(f);
    size_t tasks = 0;
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(tasks, 0); /* given back: it left nothing */
    char p[1024];
    snprintf(p, sizeof p, "%s/quiet.pid", f->dir);
    FILE *pf = fopen(p, "r");
    assert_non_null(pf);
    int pid = 0;
    assert_int_equal(fscanf(pf, "%d", &pid), 1);
    fclose(pf);
    assert_true(pid > 1);
    struct stat held, ob;
    snprintf(p, sizeof p, "/proc/%d/fd/1", pid);
    assert_int_equal(stat(p, &held), 0);
    const char *say[] = {"/bin/sh", "-c", "echo b"};
    create_argv(f, "j", "b", say, 3);
    wait_state(f, "j", "b", PROTO_TASK_SUCCEEDED);
    char b[512];
    assert_int_equal(find_entry(f, "tasks", "-j-b-1", b, sizeof b, NULL), 0);
    snprintf(p, sizeof p, "%s/stdout", b);
    assert_int_equal(stat(p, &ob), 0);
    assert_true(held.st_ino != ob.st_ino || held.st_dev != ob.st_dev);
    assert_int_equal(file_size(b, "stdout"), 2);
    kill(pid, SIGKILL);
}

/* A node's process survives a break of the lease it takes on a quiet task's output file:
 * another process opening the file meanwhile makes the kernel send the holder SIGIO, which
 * ended the whole PN (seen once in this test file, where the test reads outputs while the
 * pool recycles directories). */
static void test_lease_break_survived(void **state)
{
    fixture_t *f = *state;
    char p[1024];
    snprintf(p, sizeof p, "%s/leased", f->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_SETLEASE, F_WRLCK), 0);
    pid_t c = fork();
    if (c == 0) { /* breaks the lease; O_NONBLOCK: EWOULDBLOCK rather than waiting */
        int r = open(p, O_RDONLY | O_NONBLOCK);
        _exit(r < 0 && errno == EWOULDBLOCK ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(c, &st, 0), c);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* the break was started */
    for (int i = 0; i < 100; i++) /* the signal, if any, is delivered by now */
        pause_ms(1);
    close(fd); /* still here: SIGIO ignored */
    assert_non_null(f->n);
}

/* ---- spawner threads (issue 24) ---- */

static int setup_spawners(void **state)
{
    return setup_with(state, "tasks.spawn_threads=3");
}

/* Many short tasks through three spawner threads: most exit before their spawner's result
 * reaches the loop (their exits are parked until it does). Every task is reported RUNNING at
 * most once and then its true outcome, with its start time; none is lost. A task that ended in
 * the loop pass its start was seen in gets its terminal status alone (counted). */
static void test_spawners_short_tasks(void **state)
{
    fixture_t *f = *state;
    enum { N = 60 };
    const char *ok[] = {"/bin/true"};
    const char *bad[] = {"/bin/sh", "-c", "exit 3"};
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "t%d", i);
        if (i % 6 == 5)
            create_argv(f, "j", ids[i], bad, 3);
        else
            create_argv(f, "j", ids[i], ok, 1);
    }
    for (int i = 0; i < N; i++)
        wait_state(f, "j", ids[i], i % 6 == 5 ? PROTO_TASK_FAILED : PROTO_TASK_SUCCEEDED);
    size_t merged = 0;
    for (int i = 0; i < N; i++) {
        size_t running = 0, terminal = 0;
        for (size_t k = 0; k < f->nsent; k++) {
            const sent_t *st = &f->sent[k];
            if (st->type != PROTO_TASK_STATUS || strcmp(st->task, ids[i]) != 0)
                continue;
            running += st->state == PROTO_TASK_RUNNING;
            terminal += proto_task_state_terminal(st->state);
            if (st->state == PROTO_TASK_FAILED)
                assert_non_null(strstr(st->text, "exit code 3"));
            if (proto_task_state_terminal(st->state))
                assert_true(st->started_at > 0);
        }
        assert_true(running <= 1);
        assert_int_equal(terminal, 1);
        merged += running == 0;
    }
    node_counters_t c = counters(f);
    assert_int_equal(c.running_unsent, merged);
    assert_int_equal(started(f), N);
    assert_int_equal(c.spawn_failures, 0);
    assert_int_equal(node_spawning(f->n), 0);
}

/* A task cancelled while a spawner thread starts it (its result not yet taken by the loop) is
 * killed when the result comes and reported cancelled, never left running. */
static void test_spawners_cancel_in_flight(void **state)
{
    fixture_t *f = *state;
    enum { N = 5, ROUNDS = 8 };
    uint64_t cancelled = 0;
    size_t in_flight = 0;
    /* one loop iteration takes the results (poll) before it hands out new spawns (check):
     * stop right after the iteration that handed some out, and they are still in flight. On a
     * loaded machine the loop thread can be held up between the two phases long enough for
     * every spawn to come back at once, leaving nothing in flight to cancel: another round */
    for (int round = 0; round < ROUNDS && in_flight == 0; round++) {
        char ids[N][16];
        for (int i = 0; i < N; i++) {
            snprintf(ids[i], sizeof ids[i], "s%d-%d", round, i);
            const char *sl[] = {"/bin/sleep", "30"};
            create_argv(f, "j", ids[i], sl, 2);
        }
        uint64_t before = started(f);
        for (int i = 0;
             i < 10000 && (in_flight = node_spawning(f->n)) == 0 && started(f) < before + N; i++) {
            uv_run(&f->loop, UV_RUN_NOWAIT);
            pause_ms(1);
        }
        uint64_t taken = started(f);
        for (int i = 0; i < N; i++)
            cancel(f, "A", "j", ids[i], 0);
        for (int i = 0; i < N; i++) {
            const sent_t *st = wait_state(f, "j", ids[i], PROTO_TASK_CANCELLED);
            assert_non_null(strstr(st->text, "cancelled"));
        }
        cancelled += N;
        /* those in flight started, then were killed and reaped; the rest never started (those
           whose results the loop had taken count as started already) */
        assert_int_equal(started(f), taken + in_flight);
        assert_int_equal(counters(f).cancelled, cancelled);
        assert_int_equal(node_spawning(f->n), 0);
    }
    assert_true(in_flight > 0);
}

/* ---- directories taken or made at the start (issue 24) ---- */

static char *read_all(const char *dir, const char *name)
{
    static char buf[256];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fh = fopen(path, "r");
    if (!fh)
        return NULL;
    size_t k = fread(buf, 1, sizeof buf - 1, fh);
    buf[k] = 0;
    fclose(fh);
    return buf;
}

/* A burst of creates with nothing to stage and no spare directory: no directory is made at
 * the create; each task takes a spare or has its directory made by its spawn when it starts.
 * The burst makes about as many directories as run at once, not one per task (before: one
 * each, 40 here); what tasks write is in their own stdout and stderr. */
static void test_task_dir_at_start(void **state)
{
    fixture_t *f = *state;
    enum { QUIET = 30, LOUD = 10, N = QUIET + LOUD };
    const char *ok[] = {"/bin/true"};
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "d%d", i);
        if (i < QUIET) {
            create_argv(f, "j", ids[i], ok, 1);
        } else {
            const char *loud[] = {"/bin/sh", "-c", "echo out-$0; echo err-$0 >&2", ids[i]};
            create_argv(f, "j", ids[i], loud, 4);
        }
    }
    node_counters_t c = counters(f);
    assert_int_equal(c.dirs_lazy, N); /* none made yet, none at hand */
    size_t tasks = 0, spares = 0;
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(tasks, 0);
    for (int i = 0; i < N; i++)
        wait_state(f, "j", ids[i], PROTO_TASK_SUCCEEDED);
    settle(f);
    for (int i = QUIET; i < N; i++) {
        char dir[600], suffix[32], want[32];
        snprintf(suffix, sizeof suffix, "-j-%s-1", ids[i]);
        assert_int_equal(find_entry(f, "tasks", suffix, dir, sizeof dir, NULL), 0);
        snprintf(want, sizeof want, "out-%s\n", ids[i]);
        assert_string_equal(read_all(dir, "stdout"), want);
        snprintf(want, sizeof want, "err-%s\n", ids[i]);
        assert_string_equal(read_all(dir, "stderr"), want);
        struct stat st;
        assert_int_equal(stat(dir, &st), 0);
        mode_t mask = umask(0);
        umask(mask);
        assert_int_equal(st.st_mode & 0777, 0755 & ~mask); /* as a set-up's mkdir made it */
    }
    assert_int_equal(find_entry(f, "tasks", NULL, NULL, 0, &tasks), 0);
    assert_int_equal(find_entry(f, "spare", NULL, NULL, 0, &spares), 0);
    assert_int_equal(tasks, LOUD);               /* the quiet ones gave theirs back */
    assert_true(tasks + spares < N - QUIET / 2); /* 40 before: one per task */
    c = counters(f);
    assert_int_equal(started(f), N);
    assert_int_equal(c.spawn_failures, 0);
    /* a quiet task's end and the next start in one loop pass: its directory, renamed once */
    assert_true(c.dirs_handed > 0);
    assert_true(c.dirs_handed <= c.dirs_lazy);
}

/* A task cancelled while it waits for its start, its directory never made, is reported
 * cancelled and leaves no directory; the running one is killed and reported cancelled. */
static void test_task_dir_at_start_cancel(void **state)
{
    fixture_t *f = *state;
    create(f, "A", "j", "s1", 0, 1); /* 1 cpu each on a 1-cpu node: s2 waits */
    create(f, "A", "j", "s2", 0, 2);
    wait_state(f, "j", "s1", PROTO_TASK_RUNNING);
    assert_int_equal(counters(f).dirs_lazy, 2);
    cancel(f, "A", "j", "s2", 0);
    wait_state(f, "j", "s2", PROTO_TASK_CANCELLED);
    char dir[600];
    assert_int_not_equal(find_entry(f, "tasks", "-j-s2-1", dir, sizeof dir, NULL), 0);
    assert_int_equal(find_entry(f, "tasks", "-j-s1-1", dir, sizeof dir, NULL), 0);
    cancel(f, "A", "j", "s1", 0);
    const sent_t *st = wait_state(f, "j", "s1", PROTO_TASK_CANCELLED);
    assert_non_null(strstr(st->text, "cancelled"));
    node_counters_t c = counters(f);
    assert_int_equal(started(f), 1);
    assert_int_equal(c.cancelled, 2);
}

/* Every running task's process group is in WORK/tasks.pgids once its start is reported (the
 * lines of one loop pass's starts are written together at the pass's end), for a later boot
 * to kill should this one die uncleanly: one line per task, each a live group of a task. */
static void test_pgids_noted(void **state)
{
    fixture_t *f = *state;
    enum { N = 6 };
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "p%d", i);
        const char *sl[] = {"/bin/sleep", "30"};
        create_argv(f, "j", ids[i], sl, 2);
    }
    for (int i = 0; i < N; i++)
        wait_state(f, "j", ids[i], PROTO_TASK_RUNNING);
    char path[600];
    snprintf(path, sizeof path, "%s/work/tasks.pgids", f->dir);
    FILE *fh = fopen(path, "r");
    assert_non_null(fh);
    int pids[N + 1], n = 0, pid;
    unsigned long long lo, hi;
    while (n <= N && fscanf(fh, "%d %llu %llu", &pid, &lo, &hi) == 3) {
        assert_true(pid > 1 && lo <= hi);
        assert_int_equal(kill(-pid, 0), 0); /* a live group: the task's */
        char cmd[64] = "", p[64];
        snprintf(p, sizeof p, "/proc/%d/comm", pid);
        FILE *c = fopen(p, "r");
        assert_non_null(c);
        assert_non_null(fgets(cmd, sizeof cmd, c));
        fclose(c);
        assert_string_equal(cmd, "sleep\n");
        for (int k = 0; k < n; k++)
            assert_int_not_equal(pids[k], pid);
        pids[n++] = pid;
    }
    fclose(fh);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++)
        cancel(f, "A", "j", ids[i], 0);
    for (int i = 0; i < N; i++)
        wait_state(f, "j", ids[i], PROTO_TASK_CANCELLED);
}

/* With the loop thread spawning (spawn_threads=0), the same tasks behave the same. */
static int setup_inline(void **state)
{
    return setup_with(state, "tasks.spawn_threads=0");
}

int main(void)
{
    if (exec_become_subreaper() != 0)
        return 1;
    const struct CMUnitTest dirs[] = {
        cmocka_unit_test_setup_teardown(test_task_dir_recycled, setup_forget, teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_given_back_when_empty, setup_forget,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_recycled_not_shared_output, setup_forget,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_quiet_escapee, setup_forget, teardown),
        cmocka_unit_test_setup_teardown(test_lease_break_survived, setup_forget, teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_at_start, setup_spawners, teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_at_start, setup_inline, teardown),
        cmocka_unit_test_setup_teardown(test_task_dir_at_start_cancel, setup_spawners, teardown),
    };
    const struct CMUnitTest spawners[] = {
        cmocka_unit_test_setup_teardown(test_spawners_short_tasks, setup_spawners, teardown),
        cmocka_unit_test_setup_teardown(test_spawners_cancel_in_flight, setup_spawners, teardown),
        cmocka_unit_test_setup_teardown(test_spawners_short_tasks, setup_inline, teardown),
        cmocka_unit_test_setup_teardown(test_pgids_noted, setup_spawners, teardown),
        cmocka_unit_test_setup_teardown(test_pgids_noted, setup_inline, teardown),
    };
    int rc = cmocka_run_group_tests_name("node spawner threads", spawners, NULL, NULL);
    return rc | cmocka_run_group_tests_name("node task directories", dirs, NULL, NULL);
}
