#include "pn/exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

#define EXEC__DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

int exec_resolve(const char *name, char *const *envp, char *out, size_t cap)
{
    if (!name || !*name)
        return ERR_NOTFOUND;
    if (strchr(name, '/')) {
        /* a relative path ("./run.sh") is the task's, resolved in its working directory by
         * exec itself; only an absolute one can be checked here */
        if (strlen(name) >= cap || (name[0] == '/' && access(name, X_OK) != 0))
            return ERR_NOTFOUND;
        memcpy(out, name, strlen(name) + 1);
        return 0;
    }
    const char *path = EXEC__DEFAULT_PATH;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    size_t nlen = strlen(name);
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t dlen = colon ? (size_t)(colon - path) : strlen(path);
        if (dlen > 0 && dlen + 1 + nlen < cap) {
            memcpy(out, path, dlen);
            out[dlen] = '/';
            memcpy(out + dlen + 1, name, nlen + 1);
            struct stat st;
            if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
                return 0;
        }
        if (!colon)
            break;
        path = colon + 1;
    }
    return ERR_NOTFOUND;
}

/* argv[0] resolved once (issue 24): a burst of tasks running one command searched PATH for
 * every task (access and stat per directory tried: three calls for `true` here). A few
 * resolutions are remembered, keyed by the name and the PATH it was searched in, for
 * EXEC__CACHE_MS: a command installed meanwhile earlier in PATH is found within that time.
 * A remembered path whose exec fails (removed, no longer executable) is forgotten and the
 * name searched again (exec_spawn_timed), so a command that is gone still reads "command
 * not found". Shared by the spawner threads, under a mutex. */
#define EXEC__CACHE      16
#define EXEC__CACHE_MS   1000
#define EXEC__CACHE_NAME 128
#define EXEC__CACHE_PATH 512

typedef struct exec__cached {
    char name[EXEC__CACHE_NAME];
    char path_env[EXEC__CACHE_PATH]; /* the PATH searched ("" for a name with a '/') */
    char out[EXEC__CACHE_PATH];
    uint64_t at_ms; /* 0: empty */
} exec__cached_t;

static exec__cached_t exec__cache[EXEC__CACHE];
static unsigned exec__cache_next;
static pthread_mutex_t exec__cache_mu = PTHREAD_MUTEX_INITIALIZER;
static exec_cache_stats_t exec__cache_stats;

static uint64_t exec__coarse_ms(void)
{
    struct timespec ts; /* the coarse clock is read without a system call (vDSO) */
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *exec__path_env(const char *name, char *const *envp)
{
    if (strchr(name, '/'))
        return "";
    const char *path = EXEC__DEFAULT_PATH;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    return path;
}

/* The slot remembering (name, PATH), or NULL; called under exec__cache_mu. */
static exec__cached_t *exec__cache_find(const char *name, const char *path_env)
{
    for (size_t i = 0; i < EXEC__CACHE; i++) {
        exec__cached_t *c = &exec__cache[i];
        if (c->at_ms != 0 && strcmp(c->name, name) == 0 && strcmp(c->path_env, path_env) == 0)
            return c;
    }
    return NULL;
}

int exec_resolve_cached(const char *name, char *const *envp, char *out, size_t cap, int *hit)
{
    *hit = 0;
    if (!name || !*name)
        return ERR_NOTFOUND;
    const char *path_env = exec__path_env(name, envp);
    int keep = strlen(name) < EXEC__CACHE_NAME && strlen(path_env) < EXEC__CACHE_PATH &&
               name[0] != '.'; /* "./run.sh" is the task directory's, not ours to remember */
    uint64_t now = exec__coarse_ms();
    if (keep && now != 0) {
        pthread_mutex_lock(&exec__cache_mu);
        exec__cached_t *c = exec__cache_find(name, path_env);
        if (c && now - c->at_ms < EXEC__CACHE_MS && strlen(c->out) < cap) {
            memcpy(out, c->out, strlen(c->out) + 1);
            exec__cache_stats.hits++;
            pthread_mutex_unlock(&exec__cache_mu);
            *hit = 1;
            return 0;
        }
        exec__cache_stats.misses++;
        pthread_mutex_unlock(&exec__cache_mu);
    }
    int rc = exec_resolve(name, envp, out, cap);
    if (rc != 0 || !keep || now == 0 || strlen(out) >= EXEC__CACHE_PATH || out[0] != '/')
        return rc;
    pthread_mutex_lock(&exec__cache_mu);
    exec__cached_t *c = exec__cache_find(name, path_env);
    if (!c)
        c = &exec__cache[exec__cache_next++ % EXEC__CACHE];
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->path_env, sizeof c->path_env, "%s", path_env);
    snprintf(c->out, sizeof c->out, "%s", out);
    c->at_ms = now;
    pthread_mutex_unlock(&exec__cache_mu);
    return 0;
}

void exec_resolve_forget(const char *name, char *const *envp)
{
    if (!name || !*name)
        return;
    const char *path_env = exec__path_env(name, envp);
    pthread_mutex_lock(&exec__cache_mu);
    exec__cached_t *c = exec__cache_find(name, path_env);
    if (c) {
        c->at_ms = 0;
        exec__cache_stats.forgotten++;
    }
    pthread_mutex_unlock(&exec__cache_mu);
}

exec_cache_stats_t exec_resolve_stats(void)
{
    pthread_mutex_lock(&exec__cache_mu);
    exec_cache_stats_t s = exec__cache_stats;
    pthread_mutex_unlock(&exec__cache_mu);
    return s;
}

/* Clock ticks since boot (the unit of /proc/PID/stat's start time), rounded down. */
/* Set once (pthread_once): spawner threads (pn/spawner.h) call exec_spawn_timed at once. */
static long exec__hz = 100;
static int exec__null = -1;
static pthread_once_t exec__once = PTHREAD_ONCE_INIT;

static void exec__init(void)
{
    long hz = sysconf(_SC_CLK_TCK);
    if (hz > 0)
        exec__hz = hz;
    exec__null = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static unsigned long long exec__boot_ticks(void)
{
    struct timespec ts;
    pthread_once(&exec__once, exec__init);
    long hz = exec__hz;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
        return 0;
    unsigned long long ns =
        (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
    return ns / (1000000000ull / (unsigned long long)hz);
}

/* /dev/null, opened once (close-on-exec): the stdin of every task */
static int exec__devnull(void)
{
    pthread_once(&exec__once, exec__init);
    return exec__null;
}

int exec_spawn(const exec_spec_t *spec, pid_t *pid, char *msg, size_t cap)
{
    return exec_spawn_timed(spec, pid, NULL, msg, cap);
}

/* The spawn of spec at the resolved `path`; *exec_errno is the child's errno when its exec
 * (or its set-up) failed, else 0. */
static int exec__spawn_at(const exec_spec_t *spec, char *path, pid_t *pid, exec_started_t *started,
                          int *exec_errno, char *msg, size_t cap);

int exec_spawn_timed(const exec_spec_t *spec, pid_t *pid, exec_started_t *started, char *msg,
                     size_t cap)
{
    if (!spec->argv || !spec->argv[0] || !spec->cwd || !spec->stdout_path || !spec->stderr_path)
        return err_fmt(msg, cap, ERR_INVAL, "incomplete spawn request");
    char path[4096];
    int hit = 0, exec_errno = 0;
    if (exec_resolve_cached(spec->argv[0], spec->envp, path, sizeof path, &hit))
        return err_fmt(msg, cap, ERR_NOTFOUND, "%s: command not found", spec->argv[0]);
    int rc = exec__spawn_at(spec, path, pid, started, &exec_errno, msg, cap);
    if (rc == 0 || !hit ||
        (exec_errno != ENOENT && exec_errno != EACCES && exec_errno != ENOTDIR &&
         exec_errno != ENOEXEC))
        return rc;
    /* the remembered path is gone or changed: search again, as an uncached spawn would */
    exec_resolve_forget(spec->argv[0], spec->envp);
    if (exec_resolve(spec->argv[0], spec->envp, path, sizeof path))
        return err_fmt(msg, cap, ERR_NOTFOUND, "%s: command not found", spec->argv[0]);
    return exec__spawn_at(spec, path, pid, started, &exec_errno, msg, cap);
}

static int exec__spawn_at(const exec_spec_t *spec, char *resolved, pid_t *pid,
                          exec_started_t *started, int *exec_errno, char *msg, size_t cap)
{
    char *volatile path = resolved; /* lives across the vfork */
    volatile int as_user = spec->uid != (uid_t)-1 && spec->gid != (gid_t)-1;
    /* volatile: both live across the vfork */
    char **volatile argv = (char **)spec->argv;
    char **volatile shim_argv = NULL;
    char ubuf[24], gbuf[24];
    if (as_user) {
        if (!spec->shim)
            return err_fmt(msg, cap, ERR_INVAL, "no exec shim to change user");
        size_t argc = 0;
        while (spec->argv[argc])
            argc++;
        shim_argv = mem_calloc(argc + 8, sizeof *shim_argv);
        if (!shim_argv)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        snprintf(ubuf, sizeof ubuf, "%u", (unsigned)spec->uid);
        snprintf(gbuf, sizeof gbuf, "%u", (unsigned)spec->gid);
        size_t k = 0;
        shim_argv[k++] = (char *)spec->shim;
        shim_argv[k++] = ubuf;
        shim_argv[k++] = gbuf;
        shim_argv[k++] = path;
        for (size_t i = 0; i < argc; i++)
            shim_argv[k++] = spec->argv[i];
        shim_argv[k] = NULL;
        argv = shim_argv;
    }

    /* vfork + exec rather than posix_spawn, for one thing posix_spawn cannot do: the task gets
     * PR_SET_PDEATHSIG, so it dies with its PN. A task outliving a PN killed with SIGKILL would
     * finish its work unrecorded while its JM runs it again elsewhere (issue 14; the next boot
     * also kills what is left of its group: exec_kill_stale). The child makes only system calls
     * between vfork and exec, all signals blocked in the parent meanwhile, as glibc's own
     * posix_spawn does. */
    const char *file = as_user ? spec->shim : path;
    int devnull = exec__devnull();
    int at = spec->at_fd > 0 ? spec->at_fd : AT_FDCWD;
    if (spec->make_dir && ((mkdirat(at, spec->make_dir, 0755) != 0 && errno != EEXIST) ||
                           (as_user && fchownat(at, spec->make_dir, spec->uid, spec->gid,
                                                AT_SYMLINK_NOFOLLOW) != 0))) {
        int e = errno;
        mem_free(shim_argv);
        return err_fmt(msg, cap, ERR_SYS, "task directory %s: %s", spec->make_dir, strerror(e));
    }
    int out = openat(at, spec->stdout_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int err = openat(at, spec->stderr_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (devnull >= 0 && out >= 0 && err >= 0 && spec->make_dir && as_user &&
        (fchown(out, spec->uid, spec->gid) != 0 || fchown(err, spec->uid, spec->gid) != 0)) {
        close(out); /* the files a directory set up at start makes are the task user's */
        out = -1;
    }
    if (devnull < 0 || out < 0 || err < 0) {
        int e = errno;
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        mem_free(shim_argv);
        return err_fmt(msg, cap, ERR_SYS, "spawn %s: %s", spec->argv[0], strerror(e));
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    volatile int child_errno = 0;
    pid_t parent = getpid();
    unsigned long long lo = started ? exec__boot_ticks() : 0;
    pid_t child = vfork();
    if (child == 0) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                sigaction(sig, &dfl, NULL);
        if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent ||
            dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || chdir(spec->cwd) != 0) {
            child_errno = errno != 0 ? errno : ECHILD;
            _exit(127);
        }
        /* nothing of the PN beyond 0-2 reaches a task, whatever the PN itself inherited */
        if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
            for (int fd = 3; fd < 1024; fd++)
                close(fd);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(file, as_user ? argv : (char *const *)argv, spec->envp);
        child_errno = errno;
        _exit(127);
    }
    int e = errno;
    if (started) {
        started->lo = lo;
        started->hi = exec__boot_ticks();
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(out);
    close(err);
    mem_free(shim_argv);
    if (child < 0)
        return err_fmt(msg, cap, ERR_SYS, "spawn %s: %s", spec->argv[0], strerror(e));
    if (child_errno != 0) {
        *exec_errno = child_errno;
        int st;
        while (waitpid(child, &st, 0) < 0 && errno == EINTR)
            ;
        return err_fmt(msg, cap, ERR_SYS, "spawn %s: %s", spec->argv[0], strerror(child_errno));
    }
    *pid = child;
    if (spec->nice > 0)
        (void)exec_renice_group(*pid, spec->nice);
    return 0;
}

int exec_reap(exec_exit_t *out)
{
    int status;
    struct rusage ru;
    pid_t pid;
    do {
        pid = wait4(-1, &status, WNOHANG, &ru);
    } while (pid < 0 && errno == EINTR);
    if (pid <= 0)
        return 0;
    memset(out, 0, sizeof *out);
    out->pid = pid;
    if (WIFEXITED(status)) {
        out->exit_code = WEXITSTATUS(status);
    } else {
        out->exit_code = -1;
        out->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    out->cpu_time_ms = (uint64_t)ru.ru_utime.tv_sec * 1000 + (uint64_t)ru.ru_utime.tv_usec / 1000 +
                       (uint64_t)ru.ru_stime.tv_sec * 1000 + (uint64_t)ru.ru_stime.tv_usec / 1000;
    out->maxrss_kb = ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss : 0;
    return 1;
}

int exec_kill_group(pid_t pgid, int sig)
{
    if (pgid <= 1)
        return ERR_INVAL;
    return kill(-pgid, sig) == 0 ? 0 : ERR_NOTFOUND;
}

int exec_renice_group(pid_t pgid, int nice)
{
    if (pgid <= 1)
        return ERR_INVAL;
    return setpriority(PRIO_PGRP, (id_t)pgid, nice) == 0 ? 0 : ERR_SYS;
}

typedef struct exec__slot {
    pid_t pgid;
    size_t idx;
} exec__slot_t;

static int exec__cmp(const void *a, const void *b)
{
    pid_t x = ((const exec__slot_t *)a)->pgid, y = ((const exec__slot_t *)b)->pgid;
    return (x > y) - (x < y);
}

/* rchar and read_bytes of one process from /proc/PID/io (left as they are when unreadable). */
static void exec__io(const char *pid, uint64_t *rchar, uint64_t *read_bytes)
{
    char path[300], buf[512];
    if (snprintf(path, sizeof path, "/proc/%s/io", pid) >= (int)sizeof path)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return;
    buf[len] = 0;
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        unsigned long long v;
        if (sscanf(line, "rchar: %llu", &v) == 1)
            *rchar += v;
        else if (sscanf(line, "read_bytes: %llu", &v) == 1)
            *read_bytes += v;
        line = nl ? nl + 1 : NULL;
    }
}

int exec_usage_scan(const pid_t *pgids, exec_usage_t *out, size_t n, int with_io)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (exec_usage_t){0};
    if (n == 0)
        return 0;
    exec__slot_t *slots = mem_calloc(n, sizeof *slots);
    if (!slots)
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        slots[i] = (exec__slot_t){pgids[i], i};
    qsort(slots, n, sizeof *slots, exec__cmp);
    DIR *d = opendir("/proc");
    if (!d) {
        mem_free(slots);
        return ERR_IO;
    }
    long page_kb = sysconf(_SC_PAGESIZE) / 1024;
    long hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    struct dirent *de;
    char path[300], buf[1024];
    while ((de = readdir(d))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        if (snprintf(path, sizeof path, "/proc/%s/stat", de->d_name) >= (int)sizeof path)
            continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = 0;
        /* fields after "(comm)": state ppid pgrp ... utime stime cutime cstime are the 14th to
         * 17th fields overall, rss the 24th */
        char *p = strrchr(buf, ')');
        if (!p)
            continue;
        p++;
        long fields[22];
        int nf = 0;
        char *save = NULL;
        for (char *tok = strtok_r(p, " ", &save); tok && nf < 22; tok = strtok_r(NULL, " ", &save))
            fields[nf++] = (tok[0] >= '0' && tok[0] <= '9') || tok[0] == '-' ? atol(tok) : 0;
        if (nf < 22)
            continue;
        exec__slot_t key = {(pid_t)fields[2], 0};
        exec__slot_t *hit = bsearch(&key, slots, n, sizeof *slots, exec__cmp);
        if (!hit)
            continue;
        exec_usage_t *u = &out[hit->idx];
        if (fields[21] > 0)
            u->rss_kb += (uint64_t)fields[21] * (uint64_t)page_kb;
        long ticks = 0;
        for (int f = 11; f <= 14; f++)
            ticks += fields[f] > 0 ? fields[f] : 0;
        u->cpu_ms += (uint64_t)ticks * 1000u / (uint64_t)hz;
        if (with_io)
            exec__io(de->d_name, &u->rchar, &u->read_bytes);
    }
    closedir(d);
    mem_free(slots);
    return 0;
}

int exec_rss_scan(const pid_t *pgids, uint64_t *rss_kb, size_t n)
{
    exec_usage_t *u = mem_calloc(n ? n : 1, sizeof *u);
    if (!u)
        return ERR_NOMEM;
    int rc = exec_usage_scan(pgids, u, n, 0);
    for (size_t i = 0; i < n; i++)
        rss_kb[i] = rc == 0 ? u[i].rss_kb : 0;
    mem_free(u);
    return rc;
}

unsigned long long exec_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    if (p == NULL)
        return 0;
    /* after ")": state (3), then fields 4..22; starttime is field 22 */
    unsigned long long v = 0;
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok != NULL; tok = strtok(NULL, " ")) {
        if (++field == 22) {
            v = strtoull(tok, NULL, 10);
            break;
        }
    }
    return v;
}

int exec_kill_stale(const char *path, size_t *killed)
{
    *killed = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[128];
    while (fgets(line, sizeof line, f)) {
        int pid;
        unsigned long long lo, hi;
        int k = sscanf(line, "%d %llu %llu", &pid, &lo, &hi);
        if (k < 2 || pid <= 1 || lo == 0)
            continue;
        if (k == 2)
            hi = lo;
        /* the group's leader, if it is still the process we started; its group either way
         * when the leader is gone but the group's id is not reused by a live leader */
        unsigned long long now = exec_start_time(pid);
        if (now != 0 && (now < lo || now > hi))
            continue; /* the pid is another process now */
        if (kill(-pid, SIGKILL) == 0)
            (*killed)++;
    }
    fclose(f);
    return 0;
}

int exec_become_subreaper(void)
{
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : ERR_SYS;
}
