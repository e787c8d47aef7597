/* Tests of pn/exec (real processes) and pn/stage (a real cache directory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "pn/exec.h"
#include "pn/stage.h"
#include "pn/taskcg.h"
#include <sys/vfs.h>

static char tmpdir[256];

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/paddock-test-exec-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    return exec_become_subreaper();
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Reaps until `pid` exits (bounded: 10 s); other reaped pids (grandchildren) are skipped. */
static exec_exit_t wait_for(pid_t pid)
{
    exec_exit_t e;
    for (int i = 0; i < 10000; i++) {
        while (exec_reap(&e))
            if (e.pid == pid)
                return e;
        pause_ms(1);
    }
    fail_msg("pid %d did not exit", (int)pid);
    return e;
}

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static pid_t spawn(const char *script, int nice)
{
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/stdout", tmpdir);
    snprintf(err, sizeof err, "%s/stderr", tmpdir);
    unlink(out);
    unlink(err);
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", "FOO=bar baz", NULL};
    exec_spec_t sp = {.argv = argv,
                      .envp = envp,
                      .cwd = tmpdir,
                      .stdout_path = out,
                      .stderr_path = err,
                      .nice = nice,
                      .uid = (uid_t)-1,
                      .gid = (gid_t)-1};
    pid_t pid;
    char msg[256];
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), 0);
    return pid;
}

static void test_exit_code_output_env_cwd(void **state)
{
    (void)state;
    pid_t pid = spawn("echo \"$FOO\"; pwd; echo oops >&2; exit 3", 0);
    assert_int_equal(getpgid(pid) == pid || getpgid(pid) < 0, 1);
    exec_exit_t e = wait_for(pid);
    assert_int_equal(e.exit_code, 3);
    assert_int_equal(e.signal, 0);
    char path[512], want[600];
    snprintf(path, sizeof path, "%s/stdout", tmpdir);
    snprintf(want, sizeof want, "bar baz\n%s\n", tmpdir);
    assert_string_equal(slurp(path), want);
    snprintf(path, sizeof path, "%s/stderr", tmpdir);
    assert_string_equal(slurp(path), "oops\n");
    assert_true(e.maxrss_kb > 0);
}

/* With at_fd, the directory to make and the output files are relative to that directory
 * (the PN's WORK/tasks held open), not to the spawner's working directory. */
static void test_paths_relative_to_dir(void **state)
{
    (void)state;
    int dfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd > 0);
    char *argv[] = {"sh", "-c", "echo rel; echo err >&2", NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    exec_spec_t sp = {.argv = argv,
                      .envp = envp,
                      .cwd = "/",
                      .stdout_path = "made/stdout",
                      .stderr_path = "made/stderr",
                      .make_dir = "made",
                      .at_fd = dfd,
                      .uid = (uid_t)-1,
                      .gid = (gid_t)-1};
    pid_t pid;
    char msg[256];
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), 0);
    assert_int_equal(wait_for(pid).exit_code, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/made/stdout", tmpdir);
    assert_string_equal(slurp(path), "rel\n");
    snprintf(path, sizeof path, "%s/made/stderr", tmpdir);
    assert_string_equal(slurp(path), "err\n");
    assert_int_equal(access("made", F_OK), -1); /* not in the working directory */
    close(dfd);
}

static void test_cpu_time_measured(void **state)
{
    (void)state;
    pid_t pid = spawn("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done", 0);
    exec_exit_t e = wait_for(pid);
    assert_int_equal(e.exit_code, 0);
    assert_true(e.cpu_time_ms > 20);
}

static void test_not_found(void **state)
{
    (void)state;
    char *argv[] = {"no-such-command-here", NULL};
    char *envp[] = {NULL};
    exec_spec_t sp = {.argv = argv,
                      .envp = envp,
                      .cwd = tmpdir,
                      .stdout_path = "/dev/null",
                      .stderr_path = "/dev/null",
                      .uid = (uid_t)-1,
                      .gid = (gid_t)-1};
    pid_t pid;
    char msg[256];
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), ERR_NOTFOUND);
    assert_non_null(strstr(msg, "not found"));
}

/* Writes an executable script at dir/name that exits with `code`. */
static void write_cmd(const char *dir, const char *name, int code)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nexit %d\n", code);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

/* argv[0] is searched in PATH once and remembered: the second spawn of a name is a hit (no
 * search); a remembered command that was removed reads "command not found", not a failed
 * exec, and is forgotten; put back, it runs again. */
static void test_resolve_remembered(void **state)
{
    (void)state;
    char bin[300], env_path[400];
    snprintf(bin, sizeof bin, "%s/rbin", tmpdir);
    assert_int_equal(mkdir(bin, 0755), 0);
    snprintf(env_path, sizeof env_path, "PATH=%s:/usr/bin:/bin", bin);
    write_cmd(bin, "paddock-resolve-probe", 3);
    char *argv[] = {"paddock-resolve-probe", NULL};
    char *envp[] = {env_path, NULL};
    exec_spec_t sp = {.argv = argv,
                      .envp = envp,
                      .cwd = tmpdir,
                      .stdout_path = "/dev/null",
                      .stderr_path = "/dev/null",
                      .uid = (uid_t)-1,
                      .gid = (gid_t)-1};
    pid_t pid;
    char msg[256];
    exec_cache_stats_t s0 = exec_resolve_stats();
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), 0);
    assert_int_equal(wait_for(pid).exit_code, 3);
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), 0);
    assert_int_equal(wait_for(pid).exit_code, 3);
    exec_cache_stats_t s1 = exec_resolve_stats();
    assert_true(s1.hits >= s0.hits + 1); /* the second within a second of the first */

    char probe[400];
    snprintf(probe, sizeof probe, "%s/paddock-resolve-probe", bin);
    assert_int_equal(unlink(probe), 0);
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), ERR_NOTFOUND);
    assert_non_null(strstr(msg, "command not found"));
    exec_cache_stats_t s2 = exec_resolve_stats();
    assert_int_equal(s2.forgotten, s1.forgotten + 1);

    write_cmd(bin, "paddock-resolve-probe", 4);
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), 0);
    assert_int_equal(wait_for(pid).exit_code, 4);

    /* another PATH is another search: the same name found in another directory */
    char bin2[300], env_path2[700];
    snprintf(bin2, sizeof bin2, "%s/rbin2", tmpdir);
    assert_int_equal(mkdir(bin2, 0755), 0);
    write_cmd(bin2, "paddock-resolve-probe", 5);
    snprintf(env_path2, sizeof env_path2, "PATH=%s:%s", bin2, bin);
    envp[0] = env_path2;
    assert_int_equal(exec_spawn(&sp, &pid, msg, sizeof msg), 0);
    assert_int_equal(wait_for(pid).exit_code, 5);
}

/* Killing the group kills grandchildren too; nice applies to the whole group; RSS is seen. */
static void test_group_kill_nice_rss(void **state)
{
    (void)state;
    char script[512];
    snprintf(script, sizeof script, "sleep 100 & echo $! > %s/gc.pid; wait", tmpdir);
    pid_t pid = spawn(script, 19);
    char path[512];
    snprintf(path, sizeof path, "%s/gc.pid", tmpdir);
    pid_t gc = 0;
    for (int i = 0; i < 5000 && gc <= 0; i++) {
        char *s = slurp(path);
        if (s && strchr(s, '\n'))
            gc = (pid_t)atoi(s);
        else
            pause_ms(1);
    }
    assert_true(gc > 0);
    assert_int_equal(getpgid(gc), pid);
    errno = 0;
    assert_int_equal(getpriority(PRIO_PROCESS, (id_t)pid), 19);
    uint64_t rss = 0;
    assert_int_equal(exec_rss_scan(&pid, &rss, 1), 0);
    assert_true(rss > 100); /* sh and sleep: several hundred KiB */
    assert_int_equal(exec_kill_group(pid, SIGKILL), 0);
    exec_exit_t e = wait_for(pid);
    assert_int_equal(e.signal, SIGKILL);
    assert_int_equal(e.exit_code, -1);
    /* the grandchild is gone (reaped by us, the subreaper) */
    int gone = 0;
    for (int i = 0; i < 5000 && !gone; i++) {
        exec_exit_t x;
        while (exec_reap(&x))
            ;
        gone = kill(gc, 0) != 0 && errno == ESRCH;
        if (!gone)
            pause_ms(1);
    }
    assert_true(gone);
    assert_int_equal(exec_kill_group(pid, SIGKILL), ERR_NOTFOUND);
}

/* A process that calls setsid leaves the process group but not the task's cgroup. */
static void test_cgroup_kill_catches_setsid(void **state)
{
    (void)state;
    struct statfs fs;
    if (geteuid() != 0 || statfs("/sys/fs/cgroup/unified", &fs) != 0 || fs.f_type != 0x63677270) {
        skip(); /* needs root and a cgroup v2 mount there */
        return;
    }
    char base[128], msg[256], cgpath[512];
    snprintf(base, sizeof base, "/sys/fs/cgroup/unified/paddock-test-exec-%d", (int)getpid());
    taskcg_t *cg = taskcg_new(base, msg, sizeof msg);
    assert_non_null(cg);
    assert_int_equal(taskcg_create(cg, 1, cgpath, sizeof cgpath), 0);
    char script[2048], path[300];
    snprintf(path, sizeof path, "%s/esc.pid", tmpdir);
    unlink(path);
    snprintf(script, sizeof script,
             "sleep 0.05; setsid sleep 300 & echo $! > %s.t; mv %s.t %s; wait", path, path, path);
    pid_t pid = spawn(script, 0);
    assert_int_equal(taskcg_attach(cgpath, pid), 0);
    pid_t esc = 0;
    for (int i = 0; i < 5000 && esc <= 0; i++) {
        char *s = slurp(path);
        if (s && strchr(s, '\n'))
            esc = (pid_t)atoi(s);
        else
            pause_ms(1);
    }
    assert_true(esc > 0);
    /* wait until setsid has run: the escapee leads its own session */
    for (int i = 0; i < 5000 && getsid(esc) != esc; i++)
        pause_ms(1);
    assert_int_equal(getsid(esc), esc);
    assert_int_equal(exec_kill_group(pid, SIGKILL), 0);
    exec_exit_t e = wait_for(pid);
    assert_int_equal(e.signal, SIGKILL);
    assert_int_equal(kill(esc, 0), 0); /* escaped the process group kill */
    assert_int_equal(taskcg_kill(cgpath), 0);
    int gone = 0;
    for (int i = 0; i < 5000 && !gone; i++) {
        exec_exit_t x;
        while (exec_reap(&x))
            ;
        gone = kill(esc, 0) != 0 && errno == ESRCH;
        if (!gone)
            pause_ms(1);
    }
    assert_true(gone);
    assert_int_equal(taskcg_remove(cgpath), 0);
    taskcg_destroy(&cg);
    struct stat st;
    assert_int_equal(stat(base, &st), -1);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_stage_cache(void **state)
{
    (void)state;
    char cache[512], src[512], dst[512], got[600];
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    snprintf(src, sizeof src, "%s/input.txt", tmpdir);
    snprintf(dst, sizeof dst, "%s/task1", tmpdir);
    assert_int_equal(mkdir(dst, 0755), 0);
    write_file(src, "hello cache\n");
    char msg[256];
    stage_t *s = stage_new(cache, NULL, 0, 0, msg, sizeof msg);
    assert_non_null(s);
    int hit = -1;
    assert_int_equal(stage_file(s, src, dst, &hit, msg, sizeof msg), 0);
    assert_int_equal(hit, 0);
    snprintf(got, sizeof got, "%s/input.txt", dst);
    assert_string_equal(slurp(got), "hello cache\n");
    assert_int_equal(stage_file(s, src, dst, &hit, msg, sizeof msg), 0);
    assert_int_equal(hit, 1);
    assert_string_equal(slurp(got), "hello cache\n");
    /* changed content: a miss, and the new content */
    write_file(src, "changed content, longer\n");
    assert_int_equal(stage_file(s, src, dst, &hit, msg, sizeof msg), 0);
    assert_int_equal(hit, 0);
    assert_string_equal(slurp(got), "changed content, longer\n");
    stage_stats_t st;
    stage_stats(s, &st);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 2);
    assert_int_equal(stage_file(s, "relative/path", dst, &hit, msg, sizeof msg), ERR_INVAL);
    assert_int_equal(stage_file(s, "/etc/../etc/passwd", dst, &hit, msg, sizeof msg), ERR_INVAL);
    snprintf(got, sizeof got, "%s/missing", tmpdir);
    assert_int_equal(stage_file(s, got, dst, &hit, msg, sizeof msg), ERR_NOTFOUND);
    assert_int_equal(stage_file(s, tmpdir, dst, &hit, msg, sizeof msg), ERR_NOTFOUND);
    /* a FIFO is refused at once instead of blocking in open() */
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(stage_file(s, fifo, dst, &hit, msg, sizeof msg), ERR_NOTFOUND);
    stage_destroy(&s);
    assert_null(s);
    /* an allow-list keeps other paths out */
    const char *allow[] = {"/nonexistent-root/"};
    s = stage_new(cache, allow, 1, 0, msg, sizeof msg);
    assert_non_null(s);
    assert_int_equal(stage_file(s, src, dst, &hit, msg, sizeof msg), ERR_INVAL);
    stage_destroy(&s);
}

static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Over its bound the cache drops entries no task links any more, oldest first; entries in
 * use stay. */
static void test_stage_cache_bound(void **state)
{
    (void)state;
    char cache[512], dst[512], src[3][600], msg[256];
    snprintf(cache, sizeof cache, "%s/bounded", tmpdir);
    snprintf(dst, sizeof dst, "%s/task-b", tmpdir);
    assert_int_equal(mkdir(dst, 0755), 0);
    stage_t *s = stage_new(cache, NULL, 0, 0, msg, sizeof msg);
    assert_non_null(s);
    assert_int_equal(stage_set_limit(s, 100), 0);
    assert_int_equal(stage_cache_bytes(s), 0);
    char text[61];
    for (int i = 0; i < 3; i++) {
        snprintf(src[i], sizeof src[i], "%s/blob%d", tmpdir, i);
        memset(text, 'a' + i, 60);
        text[60] = 0;
        write_file(src[i], text);
    }
    int hit;
    char link0[700];
    snprintf(link0, sizeof link0, "%s/blob0", dst);
    assert_int_equal(stage_file(s, src[0], dst, &hit, msg, sizeof msg), 0);
    assert_int_equal(unlink(link0), 0); /* the task that used blob0 is gone */
    assert_int_equal(stage_file(s, src[1], dst, &hit, msg, sizeof msg), 0);
    /* 120 bytes > 100: blob0 (unlinked) went, blob1 (linked) stayed */
    assert_int_equal(count_entries(cache), 1);
    assert_int_equal(stage_cache_bytes(s), 60);
    assert_int_equal(stage_file(s, src[2], dst, &hit, msg, sizeof msg), 0);
    assert_int_equal(count_entries(cache), 2); /* both in use: over the bound, kept */
    /* blob0 again: its memo entry points at a deleted file, so it is copied in again */
    assert_int_equal(stage_file(s, src[0], dst, &hit, msg, sizeof msg), 0);
    assert_int_equal(hit, 0);
    assert_string_equal(slurp(link0),
                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    stage_destroy(&s);
}

/* The start time of a spawned leader lies within the bounds read from the clock around the
 * vfork, and exec_kill_stale kills the group of a "PID LO HI" line whose leader is still
 * that process (and of an older "PID START" line), never a pid whose start time is outside. */
static void test_start_bounds_and_stale_kill(void **state)
{
    (void)state;
    char out[512];
    snprintf(out, sizeof out, "%s/stdout", tmpdir);
    char *argv[] = {"sleep", "30", NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    exec_spec_t sp = {.argv = argv,
                      .envp = envp,
                      .cwd = tmpdir,
                      .stdout_path = out,
                      .stderr_path = out,
                      .uid = (uid_t)-1,
                      .gid = (gid_t)-1};
    char msg[256], path[512];
    snprintf(path, sizeof path, "%s/pgids", tmpdir);
    for (int form = 0; form < 3; form++) { /* 0: LO HI, 1: START, 2: a later start: spared */
        pid_t pid;
        exec_started_t at;
        assert_int_equal(exec_spawn_timed(&sp, &pid, &at, msg, sizeof msg), 0);
        unsigned long long start = exec_start_time(pid);
        assert_true(start > 0);
        assert_true(at.lo <= start && start <= at.hi);
        assert_true(at.hi - at.lo < 100); /* within a second, on any machine */
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        if (form == 0)
            fprintf(f, "%d %llu %llu\n", (int)pid, at.lo, at.hi);
        else if (form == 1)
            fprintf(f, "%d %llu\n", (int)pid, start);
        else
            fprintf(f, "%d %llu %llu\n", (int)pid, start + 1, start + 5);
        fclose(f);
        size_t killed = 99;
        assert_int_equal(exec_kill_stale(path, &killed), 0);
        assert_int_equal(killed, form == 2 ? 0 : 1);
        if (form == 2)
            exec_kill_group(pid, SIGKILL);
        exec_exit_t e = wait_for(pid);
        assert_int_equal(e.signal, SIGKILL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_output_env_cwd),
        cmocka_unit_test(test_cpu_time_measured),
        cmocka_unit_test(test_paths_relative_to_dir),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_start_bounds_and_stale_kill),
        cmocka_unit_test(test_group_kill_nice_rss),
        cmocka_unit_test(test_stage_cache),
        cmocka_unit_test(test_stage_cache_bound),
        cmocka_unit_test(test_cgroup_kill_catches_setsid),
        cmocka_unit_test(test_resolve_remembered),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
