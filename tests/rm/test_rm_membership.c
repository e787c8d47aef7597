/* test_rm_membership.c - changing the replica set of a running cluster: three replicas up,
 * `paddock rm add` of a fourth under a new id (it starts with an empty data directory and
 * --join, catches up and becomes a voter), `paddock rm remove` of the leader itself, a leader
 * again and writes commit, `paddock rm status --json` shows the new configuration, and the
 * removed id is refused when added again; shrunk to one voter, removing it is refused, and so
 * is a change while another is in progress. The test stops exactly the daemons it started (pid
 * files), also after a crash. */
#include "common/clock.h"
#include "common/err.h"
#include "common/mem.h"
#include "rm/rmclient.h"

#include <arpa/inet.h>
#include <czmq.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define NREP 4

static char g_dir[256], g_bin[1024];

static int paddock_run(const char *fmt, ...)
{
    char args[1500], cmd[3000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/paddock %s >>%s/cli.out 2>&1", g_bin, args, g_dir);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Async-signal-safe: SIGKILL the pids of DIR/rm-1..NREP.pid. */
static void kill_daemons(void)
{
    for (int id = 1; id <= NREP; id++) {
        char path[320];
        size_t n = 0;
        for (const char *p = g_dir; *p != '\0' && n < 250; p++)
            path[n++] = *p;
        memcpy(path + n, "/rm-", 4);
        path[n + 4] = (char)('0' + id);
        memcpy(path + n + 5, ".pid", 5);
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
}

static void kill_daemons_on_crash(int sig)
{
    kill_daemons();
    signal(sig, SIG_DFL);
    raise(sig);
}

static long read_pid(uint64_t id)
{
    char path[512];
    snprintf(path, sizeof path, "%s/rm-%llu.pid", g_dir, (unsigned long long)id);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

static int rm_tree(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A port free right now on 127.0.0.1 (the kernel's pick). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static int group_setup(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    snprintf(g_bin, sizeof g_bin, "%s", bin != NULL ? bin : "./bin");
    snprintf(g_dir, sizeof g_dir, "/tmp/paddock-rmmember-XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    signal(SIGABRT, kill_daemons_on_crash);
    signal(SIGSEGV, kill_daemons_on_crash);
    signal(SIGTERM, kill_daemons_on_crash); /* ctest's timeout */
    zsys_init();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    paddock_run("cluster down --dir %s", g_dir);
    kill_daemons(); /* whatever `down` did not stop */
    if (getenv("PADDOCK_TEST_KEEP") == NULL)
        nftw(g_dir, rm_tree, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static json_t *admin(rmclient_t *c, int replica, const char *kind)
{
    char *text = NULL, msg[256];
    if (rmclient_admin(c, replica, kind, NULL, 0, 1000, &text, msg, sizeof msg) != 0)
        return NULL;
    json_t *doc = json_loads(text, 0, NULL);
    mem_free(text);
    return doc;
}

static json_int_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* The index of replica `id` among the client's endpoints (cluster.conf order), or -1. */
static int index_of(rmclient_t *c, uint64_t id)
{
    for (size_t i = 0; i < rmclient_count(c); i++) {
        json_t *st = admin(c, (int)i, "rm_status");
        bool hit = st != NULL && (uint64_t)jint(st, "id") == id;
        json_decref(st);
        if (hit)
            return (int)i;
    }
    return -1;
}

/* Polls every replica until one is a ready leader; its status, or NULL after 15 s. */
static json_t *wait_leader(rmclient_t *c)
{
    for (uint64_t end = clock_mono_ms() + 15000; clock_mono_ms() < end;) {
        for (size_t i = 0; i < rmclient_count(c); i++) {
            json_t *st = admin(c, (int)i, "rm_status");
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

static int register_job(rmclient_t *c, const char *name)
{
    char key[64], msg[256];
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = (char *)name;
    req.job_register.virtual_cluster = "default";
    int rc = rmclient_call(c, &req, &rep, 500, 10000, msg, sizeof msg);
    if (rc == 0 && rep.type != PROTO_JOB_REGISTER_REPLY)
        rc = ERR_STATE;
    if (rc == 0)
        proto_msg_close(&rep);
    return rc;
}

static bool conf_has(json_t *conf, uint64_t id, const char *role)
{
    size_t i;
    json_t *r;
    json_array_foreach(conf, i, r)
    {
        if ((uint64_t)jint(r, "id") == id)
            return role == NULL || strcmp(json_string_value(json_object_get(r, "role")), role) == 0;
    }
    return false;
}

static void test_add_catch_up_remove_leader(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(paddock_run("cluster up --dir %s --rm 3 --pn 0 --tokens 100", g_dir), 0);
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, g_dir, NULL, NULL, msg, sizeof msg), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(register_job(c, "before"), 0);
    rmclient_destroy(&c);

    /* a fourth replica under a new id, from an empty data directory */
    int pr = free_port(), pa = free_port(), pp = free_port();
    assert_true(pr > 0 && pa > 0 && pp > 0);
    assert_int_equal(paddock_run("rm add 4 127.0.0.1:%d tcp://127.0.0.1:%d tcp://127.0.0.1:%d "
                                 "--dir %s --start",
                                 pr, pa, pp, g_dir),
                     0);
    assert_true(read_pid(4) > 0);
    /* cluster.conf now lists four replicas */
    assert_int_equal(rmclient_open(&c, g_dir, NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(c), 4);
    int four = index_of(c, 4);
    assert_true(four >= 0);
    /* it catches up: its commit index reaches the leader's */
    json_t *lst = wait_leader(c);
    assert_non_null(lst);
    json_int_t commit = jint(lst, "commit_index");
    uint64_t old_leader = (uint64_t)jint(lst, "id");
    assert_true(conf_has(json_object_get(lst, "configuration"), 4, "voter"));
    json_decref(lst);
    bool caught = false;
    json_t *st = NULL;
    for (uint64_t end = clock_mono_ms() + 15000; !caught && clock_mono_ms() < end;) {
        json_decref(st);
        st = admin(c, four, "rm_status");
        caught =
            st != NULL && jint(st, "commit_index") >= commit && jint(st, "last_applied") >= commit;
        if (!caught)
            usleep(50 * 1000);
    }
    assert_true(caught);
    json_decref(st);
    /* the leader's view of it: match_index reached what was committed before */
    lst = wait_leader(c);
    assert_non_null(lst);
    size_t k;
    json_t *r, *four_conf = NULL;
    json_array_foreach(json_object_get(lst, "configuration"), k, r)
    {
        if (jint(r, "id") == 4)
            four_conf = r;
    }
    assert_non_null(four_conf);
    assert_true(jint(four_conf, "match_index") >= commit);
    json_decref(lst);
    json_t *a = admin(c, four, "jobs"), *b = admin(c, index_of(c, old_leader), "jobs");
    assert_non_null(a);
    assert_int_equal(json_array_size(json_object_get(a, "jobs")), 20);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    rmclient_destroy(&c);

    /* remove the leader itself: it hands leadership over first */
    assert_int_equal(paddock_run("rm remove %llu --dir %s", (unsigned long long)old_leader, g_dir),
                     0);
    long pid = read_pid(old_leader);
    assert_true(pid > 0);
    kill((pid_t)pid, SIGTERM); /* a removed replica is stopped (docs/deploy.md) */
    assert_int_equal(rmclient_open(&c, g_dir, NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(c), 3);
    lst = wait_leader(c);
    assert_non_null(lst);
    assert_true((uint64_t)jint(lst, "id") != old_leader);
    json_decref(lst);
    assert_int_equal(register_job(c, "after"), 0);

    /* rm status --json shows the configuration: three voters, the new one in, the old out */
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "%s/paddock rm status --cluster %s --json", g_bin, g_dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t jerr;
    json_t *doc = json_loadf(p, 0, &jerr);
    pclose(p);
    assert_non_null(doc);
    json_t *conf = json_object_get(doc, "configuration");
    assert_int_equal(json_array_size(conf), 3);
    assert_true(conf_has(conf, 4, "voter"));
    assert_false(conf_has(conf, old_leader, NULL));
    json_decref(doc);

    /* the removed id is refused, by the RM and by the CLI */
    char *text = NULL;
    char idtext[24], raft[64], api[64], pub[64];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)old_leader);
    snprintf(raft, sizeof raft, "127.0.0.1:%d", free_port());
    snprintf(api, sizeof api, "tcp://127.0.0.1:%d", free_port());
    snprintf(pub, sizeof pub, "tcp://127.0.0.1:%d", free_port());
    const char *args[5] = {idtext, raft, api, "", pub};
    assert_int_equal(rmclient_admin(c, -1, "replica_add", args, 5, 5000, &text, msg, sizeof msg),
                     ERR_EXISTS);
    assert_non_null(strstr(msg, "never reused"));
    assert_int_not_equal(
        paddock_run("rm add %s %s %s %s --cluster %s", idtext, raft, api, pub, g_dir), 0);
    /* an id never seen is not a member to remove */
    assert_int_not_equal(paddock_run("rm remove 9 --cluster %s", g_dir), 0);
    rmclient_destroy(&c);

    /* shrink to one voter: removing the last one is refused */
    for (uint64_t id = 1; id <= 3; id++) {
        if (id == old_leader)
            continue;
        assert_int_equal(paddock_run("rm remove %llu --dir %s", (unsigned long long)id, g_dir), 0);
        pid = read_pid(id);
        assert_true(pid > 0);
        kill((pid_t)pid, SIGTERM);
    }
    assert_int_equal(rmclient_open(&c, g_dir, NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(c), 1);
    lst = wait_leader(c);
    assert_non_null(lst);
    assert_int_equal(jint(lst, "id"), 4);
    json_decref(lst);
    assert_int_equal(register_job(c, "alone"), 0);
    const char *four_arg[1] = {"4"};
    assert_int_equal(
        rmclient_admin(c, 0, "replica_remove", four_arg, 1, 5000, &text, msg, sizeof msg),
        ERR_STATE);
    assert_non_null(strstr(msg, "last voter"));
    /* a change while another is in progress: replica 5 is added but never started, so its
     * promotion waits for a catch-up that does not come */
    snprintf(raft, sizeof raft, "127.0.0.1:%d", free_port());
    const char *five[5] = {"5", raft, api, "", pub};
    assert_int_equal(rmclient_admin(c, 0, "replica_add", five, 5, 300, &text, msg, sizeof msg),
                     ERR_TIMEOUT);
    assert_int_equal(
        rmclient_admin(c, 0, "replica_remove", four_arg, 1, 5000, &text, msg, sizeof msg),
        ERR_STATE);
    assert_non_null(strstr(msg, "in progress"));
    rmclient_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_catch_up_remove_leader),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
