/* cli_cluster.c - `paddock cluster up --dir DIR [--rm 3] [--pn 4] [--pn-cpus N] [--pn-mem-mb M]
 * [--racks R] [--tokens T]` and `paddock cluster down --dir DIR` (docs/architecture.md,
 * "The command line").
 *
 * `up` makes a local cluster on 127.0.0.1: CURVE keys (DIR/keys), one configuration file per
 * daemon (DIR/rm-ID.conf, DIR/pn-N.conf) on free ports, DIR/cluster.conf with the endpoints
 * `--cluster DIR` reads, then starts the daemons detached (setsid, logs in DIR/NAME.log, pid files
 * DIR/NAME.pid) and returns once an RM leader serves writes and every PN's record is complete
 * (registered, heard from, and with its metrics URL where metrics are on). Run on a
 * directory that already holds a cluster, it keeps the files and starts only the daemons that
 * are not running (a replica restarts from its data directory, without --bootstrap).
 * `down` stops exactly the pids in DIR/NAME.pid files (after checking each is still a paddock
 * daemon): SIGTERM, then SIGKILL after 5 s.
 * Metrics (docs/metrics.md): every replica and PN gets `[metrics] listen = 127.0.0.1:PORT` on a
 * free port (a PN only when its paddock-pn knows the section), DIR/jm.conf turns job managers'
 * metrics on (ephemeral ports, advertised to the RM), and `up` prints the URLs and the leader's
 * cluster page. */
#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/port.h"
#include "rm/arbiter.h"
#include "rm/rmclient.h"
#include "tools/cli.h"
#include "tools/spawn.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CLUSTER_MAX_PN      256
#define CLUSTER_PATH        (PATH_MAX + 128)
#define CLUSTER_UP_LEADER_S 20
#define CLUSTER_UP_PN_S     30

/* Daemons this invocation started: watched while waiting, so one that dies at start (a port
 * taken, a bad configuration) is reported at once instead of after the timeout. */
static struct {
    pid_t pid;
    char name[16];
} cluster_started[RMCLIENT_MAX_REPLICAS + 256];
static int cluster_nstarted;

/* The last lines of DIR/NAME.log on stderr: why a daemon that exited at start did (its log is
 * the only place that says, and a test's directory is gone by the time anyone reads it). */
static void cluster_log_tail(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.log", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char lines[5][512];
    int n = 0;
    while (fgets(lines[n % 5], sizeof lines[0], f))
        n++;
    fclose(f);
    for (int k = n > 5 ? n - 5 : 0; k < n; k++)
        fprintf(stderr, "  %s: %s%s", name, lines[k % 5], strchr(lines[k % 5], '\n') ? "" : "\n");
}

/* 0 while every started daemon runs; else 1 after saying which one exited. */
static int cluster_check_started(const char *dir)
{
    for (int i = 0; i < cluster_nstarted; i++) {
        int st = 0;
        if (cluster_started[i].pid > 0 && waitpid(cluster_started[i].pid, &st, WNOHANG) > 0) {
            fprintf(stderr, "paddock: %s exited at start (status %d): see %s/%s.log\n",
                    cluster_started[i].name, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
                    dir, cluster_started[i].name);
            cluster_log_tail(dir, cluster_started[i].name);
            cluster_started[i].pid = 0;
            return 1;
        }
    }
    return 0;
}

struct cluster_opts {
    const char *dir;
    int rm, pn, racks;
    double pn_cpus;
    long pn_mem_mb;
    long tokens;
    double token_cpu; /* a token's cores; 0: the RM's default (ARBITER_TOKEN_CPU_DEFAULT) */
    bool json;
};

/* Sockets holding the ports handed out so far: the kernel may hand out a port again once its
 * socket is closed, so all of them stay bound until the configuration is written. */
static int cluster_port_fds[4 * RMCLIENT_MAX_REPLICAS + 256 + 8];
static int cluster_nport_fds;

static int cluster_free_port(void)
{
    if (cluster_nport_fds == (int)(sizeof cluster_port_fds / sizeof cluster_port_fds[0]))
        return -1;
    int fd, port = port_reserve(&fd);
    if (port >= 0)
        cluster_port_fds[cluster_nport_fds++] = fd;
    return port;
}

static void cluster_release_ports(void)
{
    while (cluster_nport_fds > 0)
        close(cluster_port_fds[--cluster_nport_fds]);
}

/* The pid in PATH when that process is alive and is a paddock daemon, else 0. */
static pid_t cluster_live_pid(const char *pidfile)
{
    FILE *f = fopen(pidfile, "r");
    if (f == NULL)
        return 0;
    long pid = 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    if (pid <= 0 || kill((pid_t)pid, 0) != 0)
        return 0;
    char path[64], cmd[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(cmd, 1, sizeof cmd - 1, f);
    fclose(f);
    cmd[n] = '\0';
    /* guard against a recycled pid: it must still be one of ours */
    return strstr(cmd, "paddock-") != NULL ? (pid_t)pid : 0;
}

static int cluster_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return ERR_IO;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : ERR_IO;
}

/* Appends printf output to a growing string. */
static void cluster_cat(char **s, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cluster_cat(char **s, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *piece = NULL;
    int n = vasprintf(&piece, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *grown = realloc(*s, *len + (size_t)n + 1);
    if (grown != NULL) {
        memcpy(grown + *len, piece, (size_t)n + 1);
        *s = grown;
        *len += (size_t)n;
    }
    free(piece);
}

/* Whether daemon `exe` has a [metrics] section in its schema (--print-schema). */
static bool cluster_knows_metrics(const char *exe)
{
    char cmd[CLUSTER_PATH + 64];
    if (strchr(exe, '\'') != NULL)
        return false;
    snprintf(cmd, sizeof cmd, "'%s' --print-schema 2>/dev/null", exe);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return false;
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, p) != NULL)
        found |= strncmp(line, "[metrics]", 9) == 0;
    pclose(p);
    return found;
}

/* The URL of /metrics that DIR/KIND-I.conf configures ([metrics] listen), into out; false when
 * it configures none. */
static bool cluster_metrics_url(const char *dir, const char *kind, int i, char *out, size_t cap)
{
    char path[CLUSTER_PATH], line[512];
    snprintf(path, sizeof path, "%s/%s-%d.conf", dir, kind, i);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool in = false, found = false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '[')
            in = strcmp(line, "[metrics]") == 0;
        else if (in && strncmp(line, "listen", 6) == 0) {
            const char *v = strchr(line, '=');
            if (v == NULL)
                continue;
            for (v++; *v == ' ' || *v == '\t'; v++)
                ;
            if (*v != '\0') {
                snprintf(out, cap, "http://%s/metrics", v);
                found = true;
            }
        }
    }
    fclose(f);
    return found;
}

static int cluster_make_files(const struct cluster_opts *o, bool pn_metrics)
{
    char path[CLUSTER_PATH], msg[512];
    port_claim_for(o->dir); /* its ports stay this cluster's while a daemon is down */
    snprintf(path, sizeof path, "%s/keys", o->dir);
    struct stat st;
    if (stat(path, &st) != 0 &&
        curve_keygen(path, CURVE_DEFAULT_NAME, false, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock: keys: %s\n", msg);
        return 1;
    }
    char *ids = NULL, *raft = NULL, *api = NULL, *pub = NULL, *hb = NULL;
    size_t li = 0, lr = 0, la = 0, lp = 0, lh = 0;
    for (int i = 0; i < o->rm; i++) {
        int pr = cluster_free_port(), pa = cluster_free_port(), pp = cluster_free_port(),
            ph = cluster_free_port();
        if (pr < 0 || pa < 0 || pp < 0 || ph < 0) {
            fprintf(stderr, "paddock: no free port on 127.0.0.1\n");
            return 1;
        }
        const char *sep = i > 0 ? ", " : "";
        cluster_cat(&ids, &li, "%s%d", sep, i + 1);
        cluster_cat(&raft, &lr, "%s127.0.0.1:%d", sep, pr);
        cluster_cat(&api, &la, "%stcp://127.0.0.1:%d", sep, pa);
        cluster_cat(&pub, &lp, "%stcp://127.0.0.1:%d", sep, pp);
        cluster_cat(&hb, &lh, "%stcp://127.0.0.1:%d", sep, ph);
    }
    char *text = NULL;
    size_t tl = 0;
    cluster_cat(&text, &tl,
                "# written by paddock cluster up: where the RM replicas listen\n[cluster]\n"
                "ids = %s\napi = %s\nheartbeat = %s\npub = %s\n\n[security]\nkeys_dir = keys\n"
                "key_name = %s\n",
                ids, api, hb, pub, CURVE_DEFAULT_NAME);
    snprintf(path, sizeof path, "%s/%s", o->dir, RMCLIENT_CLUSTER_FILE);
    int rc = cluster_write(path, text);
    free(text);
    /* A resized token is written as "tokens/CPU/MEM_MB" (rm/rmconf.c), MEM the default */
    char vc_size[64] = "";
    if (o->token_cpu > 0)
        snprintf(vc_size, sizeof vc_size, "/%g/%d", o->token_cpu, ARBITER_TOKEN_MEM_MB_DEFAULT);
    for (int i = 0; rc == 0 && i < o->rm; i++) {
        text = NULL;
        tl = 0;
        cluster_cat(&text, &tl,
                    "[rm]\nid = %d\ndata_dir = %s/rm-%d\n\n[cluster]\nids = %s\nraft = %s\n"
                    "api = %s\nheartbeat = %s\npub = %s\n\n[ledger]\n"
                    "virtual_clusters = default=%ld%s\n\n[recurring]\njobs_dir = %s/jobs\n"
                    "cluster_dir = %s\nplan_step = 1s\n\n[jobs]\nrelaunch = true\n\n"
                    "[security]\nkeys_dir = %s/keys\n",
                    i + 1, o->dir, i + 1, ids, raft, api, hb, pub, o->tokens, vc_size, o->dir,
                    o->dir, o->dir);
        /* "listen=" without spaces: scripts that read the [pn] "listen = " line stay unambiguous */
        int mp = cluster_free_port();
        if (mp > 0)
            cluster_cat(&text, &tl, "\n[metrics]\nlisten=127.0.0.1:%d\n", mp);
        snprintf(path, sizeof path, "%s/rm-%d.conf", o->dir, i + 1);
        rc = cluster_write(path, text);
        free(text);
    }
    for (int j = 0; rc == 0 && j < o->pn; j++) {
        int port = cluster_free_port();
        text = NULL;
        tl = 0;
        cluster_cat(&text, &tl,
                    "[node]\nname = pn-%d\nrack = rack-%d\ncpus = %g\nmemory = %ldMiB\n\n"
                    "[pn]\nlisten = tcp://127.0.0.1:%d\nwork_dir = %s/pn-%d\n\n"
                    "[rm]\nendpoints = %s\nheartbeat_endpoints = %s\n\n"
                    "[security]\nkeys_dir = %s/keys\n",
                    j + 1, o->racks > 0 ? j % o->racks + 1 : 1, o->pn_cpus, o->pn_mem_mb, port,
                    o->dir, j + 1, api, hb, o->dir);
        int mp = pn_metrics ? cluster_free_port() : -1;
        if (mp > 0)
            cluster_cat(&text, &tl, "\n[metrics]\nlisten=127.0.0.1:%d\n", mp);
        snprintf(path, sizeof path, "%s/pn-%d.conf", o->dir, j + 1);
        rc = cluster_write(path, text);
        free(text);
        snprintf(path, sizeof path, "%s/pn-%d", o->dir, j + 1);
        mkdir(path, 0700);
    }
    if (rc == 0) {
        /* job managers (jm/daemon/jmd_metrics.h): each on a free port of its own */
        snprintf(path, sizeof path, "%s/jm.conf", o->dir);
        rc = cluster_write(path, "# written by paddock cluster up: job managers' metrics\n"
                                 "[metrics]\nlisten = 127.0.0.1:0\n");
    }
    cluster_release_ports();
    free(ids);
    free(raft);
    free(api);
    free(pub);
    free(hb);
    if (rc != 0)
        fprintf(stderr, "paddock: cannot write the configuration in %s\n", o->dir);
    return rc != 0 ? 1 : 0;
}

/* Starts daemon `kind` number i unless it runs. */
static int cluster_start(const struct cluster_opts *o, const char bin[PATH_MAX], const char *kind,
                         int i)
{
    char conf[CLUSTER_PATH], log[CLUSTER_PATH], pidf[CLUSTER_PATH], exe[CLUSTER_PATH + 16],
        data[CLUSTER_PATH];
    snprintf(pidf, sizeof pidf, "%s/%s-%d.pid", o->dir, kind, i);
    if (cluster_live_pid(pidf) != 0)
        return 0;
    snprintf(conf, sizeof conf, "%s/%s-%d.conf", o->dir, kind, i);
    snprintf(log, sizeof log, "%s/%s-%d.log", o->dir, kind, i);
    snprintf(exe, sizeof exe, "%s/paddock-%s", bin, kind);
    snprintf(data, sizeof data, "%s/rm-%d", o->dir, i);
    struct stat st;
    bool fresh = strcmp(kind, "rm") == 0 && stat(data, &st) != 0;
    char *argv[] = {exe, "--config", conf, fresh ? "--bootstrap" : NULL, NULL};
    pid_t pid = spawn_detached(argv, log);
    if (pid < 0 || spawn_write_pid(pidf, pid) != 0) {
        fprintf(stderr, "paddock: cannot start %s\n", exe);
        return 1;
    }
    if (cluster_nstarted < (int)(sizeof cluster_started / sizeof cluster_started[0])) {
        cluster_started[cluster_nstarted].pid = pid;
        snprintf(cluster_started[cluster_nstarted].name, sizeof cluster_started[0].name, "%s-%d",
                 kind, i);
        cluster_nstarted++;
    }
    return 0;
}

static int cluster_count_files(const char *dir, const char *prefix)
{
    int n = 0;
    char path[CLUSTER_PATH];
    for (int i = 1; i <= CLUSTER_MAX_PN; i++) {
        snprintf(path, sizeof path, "%s/%s-%d.conf", dir, prefix, i);
        if (access(path, F_OK) != 0)
            break;
        n = i;
    }
    return n;
}

/* Whether a node's record in the RM's "nodes" document is complete: registered and up, heard
 * from (its first heartbeat carries the load and the metrics URL), and with its metrics URL
 * when its configuration turns metrics on. Registration alone leaves `paddock nodes` without
 * the URL until the first heartbeat. */
static bool cluster_node_complete(const struct cluster_opts *o, const json_t *n)
{
    const char *state = json_string_value(json_object_get(n, "state"));
    const char *name = json_string_value(json_object_get(n, "name"));
    if (state == NULL || strcmp(state, "up") != 0 || json_is_null(json_object_get(n, "age_ms")))
        return false;
    int idx = 0;
    char url[600], tail;
    if (name != NULL && sscanf(name, "pn-%d%c", &idx, &tail) == 1 && idx >= 1 &&
        cluster_metrics_url(o->dir, "pn", idx, url, sizeof url))
        return json_is_string(json_object_get(n, "metrics"));
    return true;
}

/* Polls until a ready leader and `pn` registered nodes whose records are complete; bounded. */
static int cluster_wait(const struct cluster_opts *o, json_t **status)
{
    char msg[512];
    rmclient_t *c = NULL;
    if (rmclient_open(&c, o->dir, NULL, NULL, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock: %s\n", msg);
        return 1;
    }
    int64_t end = (int64_t)clock_mono_ms() + 1000 * CLUSTER_UP_LEADER_S;
    int leader = -1;
    while (leader < 0 && (int64_t)clock_mono_ms() < end) {
        if (cluster_check_started(o->dir) != 0) {
            rmclient_destroy(&c);
            return 1;
        }
        for (size_t i = 0; i < rmclient_count(c) && leader < 0; i++) {
            char *text = NULL;
            if (rmclient_admin(c, (int)i, "rm_status", NULL, 0, 300, &text, msg, sizeof msg) != 0)
                continue;
            json_t *st = json_loads(text, 0, NULL);
            mem_free(text);
            if (json_is_true(json_object_get(st, "ready")))
                leader = (int)i;
            json_decref(st);
        }
        if (leader < 0)
            usleep(50 * 1000);
    }
    if (leader < 0) {
        fprintf(stderr, "paddock: no RM leader within %d s (see %s/rm-*.log)\n",
                CLUSTER_UP_LEADER_S, o->dir);
        rmclient_destroy(&c);
        return 1;
    }
    rmclient_set_leader(c, (size_t)leader); /* the first submit connects to it alone */
    end = (int64_t)clock_mono_ms() + 1000 * CLUSTER_UP_PN_S;
    int up = -1;
    json_t *nodes = NULL;
    while ((int64_t)clock_mono_ms() < end) {
        char *text = NULL;
        if (cluster_check_started(o->dir) != 0)
            break;
        json_decref(nodes);
        nodes = NULL;
        if (rmclient_admin(c, -1, "nodes", NULL, 0, 1000, &text, msg, sizeof msg) == 0) {
            nodes = json_loads(text, 0, NULL);
            mem_free(text);
            up = 0;
            size_t i;
            json_t *n;
            json_array_foreach(json_object_get(nodes, "nodes"), i, n)
            {
                up += cluster_node_complete(o, n);
            }
            if (up >= o->pn)
                break;
        }
        usleep(50 * 1000);
    }
    if (up < o->pn) {
        fprintf(stderr,
                "paddock: %d of %d PNs registered and heard from within %d s (see %s/pn-*.log)\n",
                up < 0 ? 0 : up, o->pn, CLUSTER_UP_PN_S, o->dir);
        json_decref(nodes);
        rmclient_destroy(&c);
        return 1;
    }
    *status = json_object();
    json_object_set_new(*status, "dir", json_string(o->dir));
    json_object_set_new(*status, "leader_api", json_string(rmclient_endpoint(c, (size_t)leader)));
    json_object_set_new(*status, "leader_index", json_integer(leader));
    json_object_set_new(*status, "rm", json_integer(o->rm));
    json_object_set_new(*status, "pn", json_integer(o->pn));
    json_object_set_new(*status, "nodes", json_incref(json_object_get(nodes, "nodes")));
    json_decref(nodes);
    rmclient_destroy(&c);
    return 0;
}

static int cluster_up_usage(void)
{
    fprintf(
        cli_usage_out(),
        "usage: paddock cluster up --dir DIR [--rm 3] [--pn 4] [--pn-cpus N] [--pn-mem-mb M]\n"
        "                          [--racks R] [--tokens T] [--json]\n"
        "  Starts a local cluster on 127.0.0.1 in DIR (keys, configuration files, logs);\n"
        "  returns once an RM leader serves writes and every PN's record is complete.\n"
        "  --rm N       RM replicas (1..%d, default 3)\n"
        "  --pn N       process nodes (0..%d, default 4)\n"
        "  --pn-cpus N  cpus per PN (default 2); --pn-mem-mb M memory per PN (default 2048)\n"
        "  --racks R    racks the PNs are spread over (default 2)\n"
        "  --tokens T   tokens of the default virtual cluster (default: the PNs' cpus; PNs under\n"
        "               1 cpu: one token of the PN's size per PN)\n",
        RMCLIENT_MAX_REPLICAS, CLUSTER_MAX_PN);
    return 2;
}

static int cluster_down_usage(void)
{
    fprintf(cli_usage_out(), "usage: paddock cluster down --dir DIR\n"
                             "  Stops the job managers and daemons of the local cluster in DIR.\n");
    return 2;
}

static int cluster_up_main(int argc, char **argv)
{
    struct cluster_opts o = {NULL, 3, 4, 2, 2.0, 2048, -1, 0, false};
    bool pn_given = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--dir") == 0 && v != NULL)
            o.dir = argv[++i];
        else if (strcmp(a, "--rm") == 0 && v != NULL)
            o.rm = atoi(argv[++i]);
        else if (strcmp(a, "--pn") == 0 && v != NULL) {
            o.pn = atoi(argv[++i]);
            pn_given = true;
        } else if (strcmp(a, "--pn-cpus") == 0 && v != NULL)
            o.pn_cpus = atof(argv[++i]);
        else if (strcmp(a, "--pn-mem-mb") == 0 && v != NULL)
            o.pn_mem_mb = atol(argv[++i]);
        else if (strcmp(a, "--racks") == 0 && v != NULL)
            o.racks = atoi(argv[++i]);
        else if (strcmp(a, "--tokens") == 0 && v != NULL)
            o.tokens = atol(argv[++i]);
        else if (strcmp(a, "--json") == 0)
            o.json = true;
        else
            return cluster_up_usage();
    }
    /* Tokens default to what the PNs can run: admission's promises hold only if tokens are
     * slots (1-core tokens; --tokens over-subscribes on purpose). PNs smaller than a 1-core
     * token would sum to 0 tokens (2 x 0.25 cpu) and no job could ever be granted one: the
     * token is then the PN's size, one token per PN, and a task of c cores takes c/PN-size
     * tokens (arbiter_task_tokens). */
    if (o.pn > 0 && o.pn_cpus > 0 && o.pn_cpus < ARBITER_TOKEN_CPU_DEFAULT)
        o.token_cpu = o.pn_cpus;
    if (o.tokens < 0 && o.pn > 0 && o.pn_cpus > 0)
        o.tokens =
            (long)(o.pn * o.pn_cpus / (o.token_cpu > 0 ? o.token_cpu : ARBITER_TOKEN_CPU_DEFAULT) +
                   1e-9);
    if (o.tokens < 0)
        o.tokens = 1;
    if (o.dir == NULL || o.rm < 1 || o.rm > RMCLIENT_MAX_REPLICAS || o.pn < 0 ||
        o.pn > CLUSTER_MAX_PN || o.pn_cpus <= 0 || o.pn_mem_mb <= 0 || o.racks < 1 ||
        o.tokens < 0 || o.tokens > 1000000) {
        fprintf(stderr,
                "paddock: cluster up needs --dir, 1..%d RM replicas, 0..%d PNs and "
                "positive sizes\n",
                RMCLIENT_MAX_REPLICAS, CLUSTER_MAX_PN);
        return 2;
    }
    char bin[PATH_MAX], path[CLUSTER_PATH], absdir[PATH_MAX];
    if (mkdir(o.dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "paddock: %s: %s\n", o.dir, strerror(errno));
        return 1;
    }
    if (realpath(o.dir, absdir) == NULL || spawn_bin_dir(bin, sizeof bin) != 0) {
        fprintf(stderr, "paddock: %s: %s\n", o.dir, strerror(errno));
        return 1;
    }
    o.dir = absdir;
    char pnexe[CLUSTER_PATH];
    snprintf(pnexe, sizeof pnexe, "%s/paddock-pn", bin);
    snprintf(path, sizeof path, "%s", pnexe);
    bool have_pn = access(path, X_OK) == 0;
    if (!have_pn && o.pn > 0) {
        if (pn_given)
            fprintf(stderr, "paddock: %s not found: starting no PN\n", path);
        o.pn = 0;
    }
    snprintf(path, sizeof path, "%s/%s", o.dir, RMCLIENT_CLUSTER_FILE);
    if (access(path, F_OK) == 0) {
        /* an existing cluster: keep its files, start what is not running */
        o.rm = cluster_count_files(o.dir, "rm");
        o.pn = have_pn ? cluster_count_files(o.dir, "pn") : 0;
    } else if (cluster_make_files(&o, have_pn && cluster_knows_metrics(pnexe)) != 0) {
        return 1;
    }
    /* JMs the RM leader starts again (issue 14) inherit this: metrics on, a free port each */
    setenv("PADDOCK_JM_METRICS", "127.0.0.1:0", 0);
    for (int i = 1; i <= o.rm; i++) {
        if (cluster_start(&o, bin, "rm", i) != 0)
            return 1;
    }
    for (int j = 1; j <= o.pn; j++) {
        if (cluster_start(&o, bin, "pn", j) != 0)
            return 1;
    }
    json_t *st = NULL;
    if (cluster_wait(&o, &st) != 0)
        return 1;
    json_t *urls = json_object();
    char url[600], name[32];
    for (int k = 0; k < 2; k++) {
        const char *kind = k == 0 ? "rm" : "pn";
        for (int i = 1; i <= (k == 0 ? o.rm : o.pn); i++) {
            snprintf(name, sizeof name, "%s-%d", kind, i);
            if (cluster_metrics_url(o.dir, kind, i, url, sizeof url))
                json_object_set_new(urls, name, json_string(url));
        }
    }
    json_object_set_new(st, "metrics", urls);
    int li = (int)json_integer_value(json_object_get(st, "leader_index"));
    if (cluster_metrics_url(o.dir, "rm", li + 1, url, sizeof url)) {
        url[strlen(url) - strlen("metrics")] = '\0'; /* the page is "/" on the same server */
        json_object_set_new(st, "page", json_string(url));
    }
    if (o.json) {
        char *t = json_dumps(st, JSON_INDENT(2) | CLI_JSON_REALS);
        printf("%s\n", t != NULL ? t : "{}");
        free(t);
    } else {
        printf("cluster up in %s: %d RM replicas (leader at %s), %d PNs registered\n"
               "use it with: export PADDOCK_CLUSTER=%s\n",
               o.dir, o.rm, json_string_value(json_object_get(st, "leader_api")), o.pn, o.dir);
        const char *k;
        json_t *v;
        json_object_foreach(urls, k, v)
        {
            printf("metrics %-8s %s\n", k, json_string_value(v));
        }
        if (json_is_string(json_object_get(st, "page")))
            printf("cluster page (leader): %s\n", json_string_value(json_object_get(st, "page")));
    }
    json_decref(st);
    return 0;
}

/* Job managers still running on the cluster (DIR/jobs/ID/jm.pid) are stopped first: they would
 * otherwise outlive the cluster, retrying RMs and PNs that no longer exist. Returns how many. */
static int cluster_stop_jms(const char *dir)
{
    char jobs[CLUSTER_PATH];
    snprintf(jobs, sizeof jobs, "%s/jobs", dir);
    DIR *d = opendir(jobs);
    if (d == NULL)
        return 0;
    pid_t pids[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < (int)(sizeof pids / sizeof pids[0])) {
        if (e->d_name[0] == '.')
            continue;
        char file[CLUSTER_PATH + 300];
        snprintf(file, sizeof file, "%s/%s/jm.pid", jobs, e->d_name);
        pid_t pid = cluster_live_pid(file);
        if (pid != 0 && kill(pid, SIGTERM) == 0)
            pids[n++] = pid;
    }
    closedir(d);
    int64_t end = (int64_t)clock_mono_ms() + 5000;
    for (int i = 0; i < n; i++) {
        while (kill(pids[i], 0) == 0 && (int64_t)clock_mono_ms() < end)
            usleep(10 * 1000);
        if (kill(pids[i], 0) == 0)
            kill(pids[i], SIGKILL);
    }
    return n;
}

static int cluster_down_main(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else
            return cluster_down_usage();
    }
    if (dir == NULL)
        return cluster_down_usage();
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "paddock: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int jms = cluster_stop_jms(dir);
    pid_t pids[2 * CLUSTER_MAX_PN];
    char files[2 * CLUSTER_MAX_PN][CLUSTER_PATH];
    int n = 0;
    /* PNs first, then the RM replicas */
    for (int pass = 0; pass < 2; pass++) {
        rewinddir(d);
        struct dirent *e;
        while ((e = readdir(d)) != NULL && n < 2 * CLUSTER_MAX_PN) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".pid") != 0 ||
                strncmp(e->d_name, pass == 0 ? "pn-" : "rm-", 3) != 0)
                continue;
            snprintf(files[n], CLUSTER_PATH, "%s/%s", dir, e->d_name);
            pids[n] = cluster_live_pid(files[n]);
            if (pids[n] != 0)
                kill(pids[n], SIGTERM);
            n++;
        }
    }
    closedir(d);
    int64_t end = (int64_t)clock_mono_ms() + 5000;
    int stopped = 0;
    for (int i = 0; i < n; i++) {
        while (pids[i] != 0 && kill(pids[i], 0) == 0 && (int64_t)clock_mono_ms() < end)
            usleep(10 * 1000);
        if (pids[i] != 0 && kill(pids[i], 0) == 0) {
            fprintf(stderr, "paddock: pid %ld ignored SIGTERM: killing it\n", (long)pids[i]);
            kill(pids[i], SIGKILL);
        }
        stopped += pids[i] != 0;
        unlink(files[i]);
    }
    if (jms > 0)
        printf("cluster down in %s: %d daemons and %d job managers stopped\n", dir, stopped, jms);
    else
        printf("cluster down in %s: %d daemons stopped\n", dir, stopped);
    return 0;
}

CLI_COMMAND("cluster up", "start a local cluster on 127.0.0.1 (RM replicas and PNs)",
            cluster_up_main, cluster_up_usage)
CLI_COMMAND("cluster down", "stop the daemons of a local cluster", cluster_down_main,
            cluster_down_usage)
