/* rm_harness.c - see rm_harness.h. */
#include "tests/rm/rm_harness.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/port.h"
#include "proto/proto.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RM_HARNESS_MAX_ID 9 /* pid files rm-1..9, pn-1..9 */
#define RM_HARNESS_PORTS  16

static char rm_harness__dir[256], rm_harness__bin[1024];
static volatile pid_t rm_harness__pid;
static int rm_harness__port_fds[RM_HARNESS_PORTS];
static int rm_harness__nports;

/* Async-signal-safe: DIR/KIND-ID.pid into PATH (at least 320 bytes). */
static void rm_harness__pidfile(char *path, const char *kind, int id)
{
    size_t n = 0;
    for (const char *p = rm_harness__dir; *p != '\0' && n < 250; p++)
        path[n++] = *p;
    path[n++] = '/';
    path[n++] = kind[0];
    path[n++] = kind[1];
    path[n++] = '-';
    path[n++] = (char)('0' + id);
    memcpy(path + n, ".pid", 5);
}

/* Async-signal-safe: the pid in PATH, or 0. */
static long rm_harness__read_pidfile(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    char buf[24];
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    long pid = 0;
    for (ssize_t k = 0; k < len && buf[k] >= '0' && buf[k] <= '9'; k++)
        pid = pid * 10 + (buf[k] - '0');
    return pid;
}

static void rm_harness__on_crash(int sig)
{
    if (rm_harness__pid > 0)
        kill(rm_harness__pid, SIGKILL);
    static const char *const kinds[] = {"rm", "pn"};
    for (int k = 0; k < 2; k++) {
        for (int id = 1; id <= RM_HARNESS_MAX_ID; id++) {
            char path[320];
            rm_harness__pidfile(path, kinds[k], id);
            long pid = rm_harness__read_pidfile(path);
            if (pid > 0)
                kill((pid_t)pid, SIGKILL);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int rm_harness_init(const char *tag)
{
    const char *bin = getenv("PADDOCK_BIN_DIR");
    snprintf(rm_harness__bin, sizeof rm_harness__bin, "%s", bin != NULL ? bin : "./bin");
    snprintf(rm_harness__dir, sizeof rm_harness__dir, "/tmp/paddock-%s-XXXXXX", tag);
    if (mkdtemp(rm_harness__dir) == NULL) {
        rm_harness__dir[0] = '\0';
        return -1;
    }
    port_claim_for(rm_harness__dir); /* a replica stopped and started again keeps its ports */
    signal(SIGABRT, rm_harness__on_crash);
    signal(SIGSEGV, rm_harness__on_crash);
    signal(SIGTERM, rm_harness__on_crash); /* ctest's timeout */
    signal(SIGBUS, rm_harness__on_crash);
    return 0;
}

const char *rm_harness_dir(void)
{
    return rm_harness__dir;
}

const char *rm_harness_bin(void)
{
    return rm_harness__bin;
}

void rm_harness_child(pid_t pid)
{
    rm_harness__pid = pid;
}

/* The first CAP-1 bytes of /proc/PID/FILE into BUF (NUL-terminated); false when unreadable. */
static bool rm_harness__proc(long pid, const char *file, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", pid, file);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return true;
}

bool rm_harness_running(long pid)
{
    char st[512];
    if (pid <= 0 || !rm_harness__proc(pid, "stat", st, sizeof st))
        return false;
    const char *paren = strrchr(st, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z';
}

/* True when PID runs and is a paddock daemon (guards against a recycled pid). */
static bool rm_harness__is_daemon(long pid)
{
    char cmd[512];
    return rm_harness_running(pid) && rm_harness__proc(pid, "cmdline", cmd, sizeof cmd) &&
           strstr(cmd, "paddock-") != NULL;
}

static int rm_harness__rm_tree(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void rm_harness_fini(void)
{
    pid_t child = rm_harness__pid;
    if (child > 0) {
        kill(child, SIGTERM);
        bool gone = false;
        for (uint64_t end = clock_mono_ms() + 5000; !gone && clock_mono_ms() < end;) {
            gone = waitpid(child, NULL, WNOHANG) == child;
            if (!gone)
                usleep(10 * 1000);
        }
        if (!gone) {
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
        }
        rm_harness__pid = 0;
    }
    if (rm_harness__dir[0] == '\0')
        return;
    char path[512];
    snprintf(path, sizeof path, "%s/cluster.conf", rm_harness__dir);
    if (access(path, F_OK) == 0)
        rm_harness_cluster("down");
    static const char *const kinds[] = {"rm", "pn"};
    for (int k = 0; k < 2; k++) {
        for (int id = 1; id <= RM_HARNESS_MAX_ID; id++) {
            char pidfile[320];
            rm_harness__pidfile(pidfile, kinds[k], id);
            long pid = rm_harness__read_pidfile(pidfile);
            if (pid > 0 && rm_harness__is_daemon(pid))
                kill((pid_t)pid, SIGKILL);
        }
    }
    rm_harness_ports_release();
    if (getenv("PADDOCK_TEST_KEEP") == NULL) /* keep logs and data for a post-mortem */
        nftw(rm_harness__dir, rm_harness__rm_tree, 16, FTW_DEPTH | FTW_PHYS);
}

static int rm_harness__system(const char *args)
{
    char cmd[2800];
    snprintf(cmd, sizeof cmd, "%s/paddock %s >>%s/cli.out", rm_harness__bin, args, rm_harness__dir);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int rm_harness_run(const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return rm_harness__system(args);
}

int rm_harness_cluster(const char *fmt, ...)
{
    char verb[1024], args[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(verb, sizeof verb, fmt, ap);
    va_end(ap);
    snprintf(args, sizeof args, "cluster %s --dir %s", verb, rm_harness__dir);
    return rm_harness__system(args);
}

json_t *rm_harness_json(const char *fmt, ...)
{
    char args[1024], cmd[2200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/paddock %s", rm_harness__bin, args);
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

long rm_harness_pid(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.pid", rm_harness__dir, name);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

long rm_harness_rm_pid(uint64_t id)
{
    char name[32];
    snprintf(name, sizeof name, "rm-%llu", (unsigned long long)id);
    return rm_harness_pid(name);
}

json_t *rm_harness_admin(rmclient_t *c, int replica, const char *kind, int timeout_ms)
{
    char *text = NULL, msg[256];
    if (rmclient_admin(c, replica, kind, NULL, 0, timeout_ms, &text, msg, sizeof msg) != 0)
        return NULL;
    json_t *doc = json_loads(text, 0, NULL);
    mem_free(text);
    return doc;
}

json_t *rm_harness_wait_leader(rmclient_t *c, int ms)
{
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end;) {
        for (size_t i = 0; i < rmclient_count(c); i++) {
            json_t *st = rm_harness_admin(c, (int)i, "rm_status", 1000);
            const char *role = json_string_value(json_object_get(st, "role"));
            if (role != NULL && strcmp(role, "leader") == 0 &&
                json_is_true(json_object_get(st, "ready")))
                return st;
            json_decref(st);
        }
        usleep(50 * 1000);
    }
    return NULL;
}

int rm_harness_free_port(void)
{
    int fd, port = port_reserve(&fd);
    if (port < 0)
        return -1;
    if (rm_harness__nports < RM_HARNESS_PORTS)
        rm_harness__port_fds[rm_harness__nports++] = fd;
    else
        close(fd);
    return port;
}

void rm_harness_ports_release(void)
{
    while (rm_harness__nports > 0)
        close(rm_harness__port_fds[--rm_harness__nports]);
}

int rm_harness_register_job(rmclient_t *c, const char *name)
{
    char key[64], msg[256];
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = (char *)name;
    req.job_register.virtual_cluster = "default";
    int rc = rmclient_call(c, &req, &rep, 500, 10000, msg, sizeof msg);
    if (rc != 0)
        return rc;
    if (rep.type != PROTO_JOB_REGISTER_REPLY || rep.job_register_reply.code != 0)
        rc = ERR_STATE;
    proto_msg_close(&rep);
    return rc;
}

void rm_harness_tcp_links(long pid, const unsigned *ports, size_t n, long *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    unsigned long inodes[256];
    size_t ni = 0;
    char path[64], link[64];
    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && ni < 256) {
        char fd[320];
        snprintf(fd, sizeof fd, "%s/%s", path, de->d_name);
        ssize_t len = readlink(fd, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = 0;
        unsigned long ino;
        if (sscanf(link, "socket:[%lu]", &ino) == 1)
            inodes[ni++] = ino;
    }
    closedir(d);
    FILE *t = fopen("/proc/net/tcp", "r");
    if (t == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, t) != NULL) {
        unsigned rport = 0, st = 0;
        unsigned long ino = 0;
        if (sscanf(line, " %*d: %*x:%*x %*x:%x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", &rport, &st,
                   &ino) != 3 ||
            st != 1) /* TCP_ESTABLISHED */
            continue;
        for (size_t i = 0; i < ni; i++)
            for (size_t k = 0; k < n; k++)
                out[k] += inodes[i] == ino && rport == ports[k];
    }
    fclose(t);
}

void rm_harness_ports(const char *kind, unsigned ports[4])
{
    memset(ports, 0, 4 * sizeof *ports);
    struct rmclient_cluster cl;
    char msg[256];
    if (rmclient_cluster_load(rm_harness_dir(), &cl, msg, sizeof msg) != 0)
        return;
    for (size_t i = 0; i < cl.n && i < 3; i++) {
        const char *ep = strcmp(kind, "pub") == 0 ? cl.pub[i] : cl.api[i];
        const char *colon = ep != NULL ? strrchr(ep, ':') : NULL;
        ports[i + 1] = colon != NULL ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
    }
    rmclient_cluster_close(&cl);
}

void rm_harness_sleep_spec(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s.json", rm_harness_dir(), name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    fprintf(f,
            "{\"version\": 1, \"name\": \"%s\", \"tasks\": [{\"id\": \"s\", \"cmd\": "
            "[\"sleep\", \"60\"], \"cpu\": 0.1, \"mem_mb\": 16, \"runtime_s\": 60}]}\n",
            name);
    fclose(f);
}
