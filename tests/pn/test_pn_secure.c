/* Integration tests of paddock-pn's edges: heartbeats and registration to every RM replica
 * (two fake replicas in this test), tasks run as pn.run_as, CURVE authentication, and the
 * refusal to listen beyond loopback without keys. Only 127.0.0.1 is used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/curve.h"
#include "pn_client.h"

static struct fixture {
    pnc_daemon_t d;
    curve_t *c1, *c2;
    char scratch[64]; /* a temporary directory of the test, removed by teardown */
} fx;

static int teardown(void **state)
{
    (void)state;
    pnc_close_all();
    int rc = pnc_stop(&fx.d);
    curve_destroy(&fx.c1);
    curve_destroy(&fx.c2);
    if (fx.scratch[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.scratch);
        if (system(cmd) != 0)
            return -1;
        fx.scratch[0] = 0;
    }
    return rc;
}

static int recv_type(zsock_t *s, proto_msg_t *m, int timeout_ms)
{
    return pnc_recv(s, m, timeout_ms) == 0 ? (int)m->type : 0;
}

/* Receives from a fake RM replica (ROUTER): the routing id into peer. */
static int rm_recv(zsock_t *r, zframe_t **peer, proto_msg_t *m, int timeout_ms)
{
    zsock_set_rcvtimeo(r, timeout_ms);
    zmsg_t *msg = zmsg_recv(r);
    if (!msg)
        return 0;
    int type = 0;
    if (zmsg_size(msg) == 2) {
        zframe_t *id = zmsg_pop(msg);
        zframe_t *body = zmsg_pop(msg);
        if (proto_decode(zframe_data(body), zframe_size(body), m, NULL, NULL, 0) == 0)
            type = (int)m->type;
        zframe_destroy(&body);
        if (peer) {
            zframe_destroy(peer);
            *peer = id;
        } else {
            zframe_destroy(&id);
        }
    }
    zmsg_destroy(&msg);
    return type;
}

static void rm_send(zsock_t *r, zframe_t *peer, const proto_msg_t *m)
{
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(m, &b, NULL, 0), 0);
    zmsg_t *msg = zmsg_new();
    zmsg_append(msg, &(zframe_t *){zframe_dup(peer)});
    zmsg_addmem(msg, b.data, b.len);
    assert_int_equal(zmsg_send(&msg, r), 0);
    proto_buf_close(&b);
}

static void test_heartbeats_registration_run_as(void **state)
{
    (void)state;
    zsock_t *rm[2];
    char eps[2][64];
    for (int i = 0; i < 2; i++) {
        rm[i] = pnc_track(zsock_new(ZMQ_ROUTER));
        zsock_set_linger(rm[i], 0);
        int port = zsock_bind(rm[i], "tcp://127.0.0.1:*");
        assert_true(port > 0);
        snprintf(eps[i], sizeof eps[i], "tcp://127.0.0.1:%d", port);
    }
    char extra[512];
    snprintf(extra, sizeof extra,
             "[rm]\nendpoints = %s, %s\nheartbeat = 50ms\n[node]\ncpus = 2\nmemory = 1GiB\n"
             "%s",
             eps[0], eps[1], geteuid() == 0 ? "[pn]\nrun_as = nobody\n" : "");
    /* pnc_start writes [pn] first; a second [pn] header is a new section occurrence */
    assert_int_equal(pnc_start(&fx.d, extra), 0);

    /* both replicas get a registration and heartbeats with one boot id and rising seq */
    uint64_t boot = 0;
    for (int i = 0; i < 2; i++) {
        int regs = 0, hbs = 0;
        uint64_t last_seq = 0;
        zframe_t *peer = NULL;
        for (int k = 0; k < 200 && (regs < 1 || hbs < 3); k++) {
            proto_msg_t m;
            int type = rm_recv(rm[i], &peer, &m, 100);
            if (type == PROTO_NODE_REGISTER) {
                regs++;
                assert_string_equal(m.node_register.name, "test-pn");
                assert_string_equal(m.node_register.rack, "r1");
                assert_true(m.node_register.cpu == 2);
                assert_int_equal(m.node_register.mem_mb, 1024);
                assert_string_equal(m.node_register.endpoint, fx.d.endpoint);
            } else if (type == PROTO_HEARTBEAT) {
                hbs++;
                assert_true(m.heartbeat.seq > last_seq);
                last_seq = m.heartbeat.seq;
                if (!boot)
                    boot = m.heartbeat.boot_id;
                assert_int_equal(m.heartbeat.boot_id, boot);
                assert_true(m.heartbeat.matrix.ncpu > 0);
                assert_true(m.heartbeat.cpu == 2);
            }
            if (type)
                proto_msg_close(&m);
        }
        assert_true(regs >= 1);
        assert_true(hbs >= 3);
        if (i == 0) { /* replica 0 accepts the registration */
            proto_msg_t ack;
            proto_msg_init(&ack, PROTO_NODE_REGISTER_ACK);
            ack.node_register_ack.key = "k";
            ack.node_register_ack.name = "test-pn";
            ack.node_register_ack.boot_id = boot;
            ack.node_register_ack.verdict = PROTO_VERDICT_ACCEPTED;
            ack.node_register_ack.rm_id = 1;
            rm_send(rm[0], peer, &ack);
        }
        zframe_destroy(&peer);
    }
    int registered = 0;
    for (int k = 0; k < 100 && !registered; k++) {
        proto_msg_t m;
        if (rm_recv(rm[0], NULL, &m, 20))
            proto_msg_close(&m);
        registered = pnc_status_field(&fx.d, "registered") == 1;
    }
    assert_true(registered);

    if (geteuid() == 0) { /* tasks run as nobody */
        zsock_t *s = pnc_connect(&fx.d);
        const char *argv[] = {"sh", "-c", "test \"$(id -u)\" = 65534 && touch mine", NULL};
        pnc_task_t t = {
            .job = "j-0000000000aa", .task = "who", .cpu = 0.5, .mem_mb = 64, .argv = argv};
        assert_int_equal(pnc_create(s, &t), 0);
        int tstate = -1;
        for (int k = 0; k < 100 && !proto_task_state_terminal((proto_task_state_t)tstate); k++) {
            proto_msg_t m;
            if (recv_type(s, &m, 100) == PROTO_TASK_STATUS) {
                tstate = (int)m.task_status.state;
                proto_msg_close(&m);
            }
        }
        assert_int_equal(tstate, PROTO_TASK_SUCCEEDED);
    }
}

static void test_curve_only_allowed_clients(void **state)
{
    (void)state;
    snprintf(fx.scratch, sizeof fx.scratch, "/tmp/paddock-pn-keys-XXXXXX");
    assert_non_null(mkdtemp(fx.scratch));
    const char *keys = fx.scratch;
    char msg[256], kdir[300], sdir[300];
    snprintf(kdir, sizeof kdir, "%s/cluster", keys);
    snprintf(sdir, sizeof sdir, "%s/stranger", keys);
    assert_int_equal(curve_keygen(kdir, "paddock", false, msg, sizeof msg), 0);
    assert_int_equal(curve_keygen(sdir, "paddock", false, msg, sizeof msg), 0);
    char extra[600];
    snprintf(extra, sizeof extra, "[security]\nkeys_dir = %s\n", kdir);
    assert_int_equal(pnc_start(&fx.d, extra), 0);
    char marker[400];
    snprintf(marker, sizeof marker, "%s/pwned", keys);
    const char *evil[] = {"touch", marker, NULL};
    const char *fine[] = {"true", NULL};

    /* a client with a key that is not allowed, and a plaintext client: nothing reaches exec */
    assert_int_equal(curve_load(&fx.c1, sdir, "paddock", NULL, msg, sizeof msg), 0);
    assert_int_equal(curve_load(&fx.c2, kdir, "paddock", NULL, msg, sizeof msg), 0);
    zsock_t *bad = pnc_track(zsock_new(ZMQ_DEALER));
    zsock_set_linger(bad, 0);
    assert_int_equal(
        curve_apply(bad, fx.c1, CURVE_CLIENT, curve_server_key(fx.c2), msg, sizeof msg), 0);
    assert_int_equal(zsock_connect(bad, "%s", fx.d.endpoint), 0);
    zsock_t *plain = pnc_connect(&fx.d);
    pnc_task_t t = {
        .job = "j-0000000000bb", .task = "evil", .cpu = 0.5, .mem_mb = 64, .argv = evil};
    assert_int_equal(pnc_create(bad, &t), 0);
    t.task = "evil2";
    assert_int_equal(pnc_create(plain, &t), 0);

    /* an allowed client is served */
    zsock_t *good = pnc_track(zsock_new(ZMQ_DEALER));
    zsock_set_linger(good, 0);
    assert_int_equal(curve_apply(good, fx.c2, CURVE_CLIENT, NULL, msg, sizeof msg), 0);
    assert_int_equal(zsock_connect(good, "%s", fx.d.endpoint), 0);
    t.task = "ok";
    t.argv = fine;
    assert_int_equal(pnc_create(good, &t), 0);
    int tstate = -1;
    for (int k = 0; k < 100 && tstate != PROTO_TASK_SUCCEEDED; k++) {
        proto_msg_t m;
        if (recv_type(good, &m, 100) == PROTO_TASK_STATUS) {
            tstate = (int)m.task_status.state;
            proto_msg_close(&m);
        }
    }
    assert_int_equal(tstate, PROTO_TASK_SUCCEEDED);
    proto_msg_t m;
    assert_int_equal(recv_type(bad, &m, 300), 0);
    assert_int_equal(recv_type(plain, &m, 300), 0);
    struct stat st;
    assert_int_equal(stat(marker, &st), -1);
    long long created = 0;
    for (int k = 0; k < 150 && created < 1; k++) { /* status.json: every heartbeat (1 s) */
        if (recv_type(good, &m, 20))
            proto_msg_close(&m);
        created = pnc_status_field(&fx.d, "created");
    }
    assert_int_equal(created, 1);
    long long refused = 0;
    for (int k = 0; k < 150 && refused < 2; k++) {
        if (recv_type(good, &m, 20))
            proto_msg_close(&m);
        refused = pnc_status_field(&fx.d, "auth_failures");
    }
    assert_true(refused >= 2); /* the stranger's key and the plaintext client, counted */
}

/* A full queue, or too many bytes of task specs held, refuses with ERR_FULL and says why. */
static void test_queue_full_refused(void **state)
{
    (void)state;
    assert_int_equal(pnc_start(&fx.d, "[node]\ncpus = 1\nmemory = 1GiB\n[queue]\n"
                                      "max_regular = 1\nmax_spec_bytes = 8KiB\n"),
                     0);
    zsock_t *s = pnc_connect(&fx.d);
    const char *sleepy[] = {"sleep", "300", NULL};
    pnc_task_t t = {.job = "j-0000000000cc", .task = "a", .cpu = 1, .mem_mb = 64, .argv = sleepy};
    assert_int_equal(pnc_create(s, &t), 0); /* runs */
    t.task = "b";
    assert_int_equal(pnc_create(s, &t), 0); /* waits: the queue is now full */
    t.task = "c";
    assert_int_equal(pnc_create(s, &t), 0); /* refused: queue */
    static char big[4000]; /* three of them: over 8 KiB, each under the protocol's limit */
    memset(big, 'x', sizeof big - 1);
    const char *huge[] = {"echo", big, big, big, NULL};
    t.task = "d";
    t.argv = huge;
    assert_int_equal(pnc_create(s, &t), 0); /* refused: too many bytes held */
    int queue_full = 0, specs_full = 0;
    for (int k = 0; k < 100 && !(queue_full && specs_full); k++) {
        proto_msg_t m;
        int type = recv_type(s, &m, 50);
        if (type == PROTO_ERROR) {
            assert_int_equal(m.error.code, -11); /* ERR_FULL */
            assert_int_equal(m.error.in_reply_to, PROTO_TASK_CREATE);
            queue_full |= strstr(m.error.text, "regular queue full") != NULL;
            specs_full |= strstr(m.error.text, "task specs") != NULL;
        }
        if (type)
            proto_msg_close(&m);
    }
    assert_true(queue_full);
    assert_true(specs_full);
}

/* Jobs with live tasks hear from the PN regularly (Apollo 3.2: the matrix goes to every JM
 * with running or queued tasks), as repeated statuses of an unchanged state. */
static void test_status_refresh(void **state)
{
    (void)state;
    assert_int_equal(pnc_start(&fx.d, "[tasks]\nstatus_refresh = 50ms\n"), 0);
    zsock_t *s = pnc_connect(&fx.d);
    const char *sleepy[] = {"sleep", "300", NULL};
    pnc_task_t t = {.job = "j-0000000000ff", .task = "r", .cpu = 0.5, .mem_mb = 64, .argv = sleepy};
    assert_int_equal(pnc_create(s, &t), 0);
    int running = 0;
    for (int k = 0; k < 200 && running < 4; k++) {
        proto_msg_t m;
        if (recv_type(s, &m, 50) == PROTO_TASK_STATUS) {
            running += m.task_status.state == PROTO_TASK_RUNNING;
            assert_true(m.task_status.matrix.ncpu > 0);
            proto_msg_close(&m);
        }
    }
    assert_true(running >= 4); /* the first one and at least three refreshes */
    assert_int_equal(pnc_cancel(s, "j-0000000000ff", "r", 0), 0);
    int cancelled = 0;
    for (int k = 0; k < 100 && !cancelled; k++) {
        proto_msg_t m;
        if (recv_type(s, &m, 50) == PROTO_TASK_STATUS) {
            cancelled = m.task_status.state == PROTO_TASK_CANCELLED;
            proto_msg_close(&m);
        }
    }
    assert_true(cancelled);
    proto_msg_t m; /* a finished task is not refreshed */
    assert_int_equal(recv_type(s, &m, 300), 0);
}

/* With no retention a finished task is forgotten at the next sweep: its directory removed,
 * its job dropped, and a late cancel answered "not found". */
static void test_forgetting(void **state)
{
    (void)state;
    assert_int_equal(pnc_start(&fx.d, "[rm]\nheartbeat = 50ms\n[tasks]\nretain = 0s\n"), 0);
    zsock_t *s = pnc_connect(&fx.d);
    const char *argv[] = {"sh", "-c", "echo out; echo err >&2", NULL};
    pnc_task_t t = {
        .job = "j-0000000000dd", .task = "gone", .cpu = 0.5, .mem_mb = 64, .argv = argv};
    assert_int_equal(pnc_create(s, &t), 0);
    int done = 0;
    for (int k = 0; k < 100 && !done; k++) {
        proto_msg_t m;
        if (recv_type(s, &m, 50) == PROTO_TASK_STATUS) {
            done = m.task_status.state == PROTO_TASK_SUCCEEDED;
            proto_msg_close(&m);
        }
    }
    assert_true(done);
    char tasks_dir[400];
    snprintf(tasks_dir, sizeof tasks_dir, "%s/work/tasks", fx.d.dir);
    int forgotten = 0;
    for (int k = 0; k < 500 && !forgotten; k++) {
        int entries = 0;
        DIR *dh = opendir(tasks_dir);
        struct dirent *e;
        while (dh && (e = readdir(dh)))
            entries += e->d_name[0] != '.';
        if (dh)
            closedir(dh);
        forgotten = entries == 0 && pnc_status_field(&fx.d, "remembered") == 0 &&
                    pnc_status_field(&fx.d, "jobs") == 0;
        if (!forgotten)
            usleep(10000);
    }
    assert_true(forgotten);
    assert_int_equal(pnc_cancel(s, "j-0000000000dd", "gone", 0), 0);
    proto_msg_t m;
    assert_int_equal(recv_type(s, &m, 2000), PROTO_ERROR);
    assert_int_equal(m.error.code, -9); /* ERR_NOTFOUND */
    proto_msg_close(&m);
}

/* Issue 14 against the daemon: a stale JM's create is refused (ERR_FENCED); the heartbeat
 * names the job with a live task; the leader's HEARTBEAT_ACK saying it is done gets its task
 * killed after pn.ended_grace and reported cancelled; TASK_QUERY answers on the socket. */
static void test_fencing_and_reaping(void **state)
{
    (void)state;
    zsock_t *rm = pnc_track(zsock_new(ZMQ_ROUTER));
    zsock_set_linger(rm, 0);
    int port = zsock_bind(rm, "tcp://127.0.0.1:*");
    assert_true(port > 0);
    char extra[512];
    snprintf(extra, sizeof extra,
             "ended_grace = 300ms\n[rm]\nendpoints = tcp://127.0.0.1:%d\nheartbeat = 50ms\n"
             "[node]\ncpus = 2\nmemory = 1GiB\n",
             port);
    assert_int_equal(pnc_start(&fx.d, extra), 0); /* the first line lands in [pn] */
    zsock_t *jm = pnc_connect(&fx.d);
    const char *argv[] = {"sleep", "60", NULL};
    pnc_task_t t = {
        .job = "j-fence", .task = "t", .cpu = 1, .mem_mb = 64, .argv = argv, .epoch = 2};
    assert_int_equal(pnc_create(jm, &t), 0);
    int running = 0;
    for (int k = 0; k < 100 && !running; k++) {
        proto_msg_t m;
        if (recv_type(jm, &m, 50) == PROTO_TASK_STATUS) {
            running = m.task_status.state == PROTO_TASK_RUNNING;
            proto_msg_close(&m);
        }
    }
    assert_true(running);
    zsock_t *stale = pnc_connect(&fx.d);
    pnc_task_t old = t;
    old.task = "t2";
    old.epoch = 1;
    assert_int_equal(pnc_create(stale, &old), 0);
    proto_msg_t m;
    assert_int_equal(recv_type(stale, &m, 2000), PROTO_ERROR);
    assert_int_equal(m.error.code, -22); /* ERR_FENCED */
    assert_string_equal(m.error.text, "job j-fence: epoch 1 is older than 2");
    proto_msg_close(&m);

    proto_msg_t q;
    proto_msg_init(&q, PROTO_TASK_QUERY);
    q.task_query.job_id = "j-fence";
    q.task_query.epoch = 2;
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(&q, &b, NULL, 0), 0);
    assert_int_equal(pnc_send_raw(jm, b.data, b.len), 0);
    proto_buf_close(&b);
    int statuses = 0, replied = 0;
    for (int k = 0; k < 100 && !replied; k++) {
        int type = recv_type(jm, &m, 50);
        if (type == PROTO_TASK_STATUS)
            statuses++;
        if (type == PROTO_TASK_QUERY_REPLY) {
            replied = 1;
            assert_int_equal(m.task_query_reply.tasks, 1);
            assert_string_equal(m.task_query_reply.node, "test-pn");
        }
        if (type)
            proto_msg_close(&m);
    }
    assert_true(replied);
    assert_int_equal(statuses, 1);

    /* the leader answers every heartbeat that names the job: done */
    int named = 0, cancelled = 0;
    zframe_t *peer = NULL;
    for (int k = 0; k < 300 && !cancelled; k++) {
        int type = rm_recv(rm, &peer, &m, 20);
        if (type == PROTO_HEARTBEAT) {
            int has = 0;
            for (uint32_t i = 0; i < m.heartbeat.njobs; i++)
                has |= strcmp(m.heartbeat.jobs[i], "j-fence") == 0;
            named += has;
            if (has) {
                proto_job_info_t ji = {.job_id = "j-fence", .state = 2, .epoch = 2};
                proto_msg_t a;
                proto_msg_init(&a, PROTO_HEARTBEAT_ACK);
                a.heartbeat_ack.jobs = &ji;
                a.heartbeat_ack.njobs = 1;
                a.heartbeat_ack.rm_id = 1;
                rm_send(rm, peer, &a);
            }
        }
        if (type)
            proto_msg_close(&m);
        if (recv_type(jm, &m, 1) == PROTO_TASK_STATUS) {
            if (m.task_status.state == PROTO_TASK_CANCELLED) {
                cancelled = 1;
                assert_non_null(strstr(m.task_status.reason, "job j-fence ended (done)"));
            }
            proto_msg_close(&m);
        }
    }
    zframe_destroy(&peer);
    assert_true(named > 0);
    assert_true(cancelled);
    int counted = 0;
    for (int k = 0; k < 200 && !counted; k++) {
        counted = pnc_status_field(&fx.d, "reaped") == 1 &&
                  pnc_status_field(&fx.d, "refused_fenced") == 1 &&
                  pnc_status_field(&fx.d, "running") == 0;
        if (!counted)
            usleep(10000);
    }
    assert_true(counted);
}

/* With per-task cgroups, cancel also kills what left the process group with setsid. */
static void test_cgroup_cancel_catches_setsid(void **state)
{
    (void)state;
    struct statfs fs;
    if (geteuid() != 0 || statfs("/sys/fs/cgroup/unified", &fs) != 0 || fs.f_type != 0x63677270) {
        skip(); /* needs root and a cgroup v2 mount there */
        return;
    }
    char base[128], extra[256];
    snprintf(base, sizeof base, "/sys/fs/cgroup/unified/paddock-pn-test-%d", (int)getpid());
    snprintf(extra, sizeof extra, "[tasks]\ncgroup_base = %s\n", base);
    assert_int_equal(pnc_start(&fx.d, extra), 0);
    zsock_t *s = pnc_connect(&fx.d);
    char script[1024], path[300];
    snprintf(path, sizeof path, "%s/esc.pid", fx.d.dir);
    snprintf(script, sizeof script,
             "sleep 0.05; setsid sleep 300 & echo $! > %s.t; mv %s.t %s; wait", path, path, path);
    const char *argv[] = {"sh", "-c", script, NULL};
    pnc_task_t t = {.job = "j-0000000000ee", .task = "esc", .cpu = 0.5, .mem_mb = 64, .argv = argv};
    assert_int_equal(pnc_create(s, &t), 0);
    pid_t esc = 0;
    for (int k = 0; k < 500 && (esc <= 0 || getsid(esc) != esc); k++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%d", &esc) != 1)
                esc = 0;
            fclose(f);
        }
        proto_msg_t m;
        if (recv_type(s, &m, 10))
            proto_msg_close(&m);
    }
    assert_true(esc > 0);
    assert_int_equal(getsid(esc), esc); /* it left the task's process group */
    assert_int_equal(pnc_cancel(s, "j-0000000000ee", "esc", 0), 0);
    int cancelled = 0, gone = 0;
    for (int k = 0; k < 200 && !(cancelled && gone); k++) {
        proto_msg_t m;
        if (recv_type(s, &m, 20) == PROTO_TASK_STATUS) {
            cancelled |= m.task_status.state == PROTO_TASK_CANCELLED;
            proto_msg_close(&m);
        }
        gone = kill(esc, 0) != 0 && errno == ESRCH;
    }
    assert_true(cancelled);
    assert_true(gone);
    pnc_close_all();
    assert_int_equal(pnc_stop(&fx.d), 0);
    struct stat st;
    assert_int_equal(stat(base, &st), -1); /* the PN removed its cgroups and the base */
}

/* Without keys, a non-loopback listen address is refused (nothing is bound). */
static void test_refuses_open_listen_without_keys(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    char exe[512];
    snprintf(exe, sizeof exe, "%s/paddock-pn", bin ? bin : ".");
    snprintf(fx.scratch, sizeof fx.scratch, "/tmp/paddock-pn-open-XXXXXX");
    assert_non_null(mkdtemp(fx.scratch));
    const char *dir = fx.scratch;
    char wd[128];
    snprintf(wd, sizeof wd, "pn.work_dir=%s", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", 1);
        if (null >= 0)
            dup2(null, 2);
        execl(exe, "paddock-pn", "--set", "pn.listen=tcp://0.0.0.0:0", "--set", wd, (char *)NULL);
        _exit(127);
    }
    int wst = 0, done = 0;
    for (int i = 0; i < 5000 && !done; i++) {
        done = waitpid(pid, &wst, WNOHANG) == pid;
        if (!done)
            usleep(1000);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &wst, 0);
    }
    assert_true(done);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 1);
}

int main(void)
{
    zsys_handler_set(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_heartbeats_registration_run_as, teardown),
        cmocka_unit_test_teardown(test_curve_only_allowed_clients, teardown),
        cmocka_unit_test_teardown(test_queue_full_refused, teardown),
        cmocka_unit_test_teardown(test_forgetting, teardown),
        cmocka_unit_test_teardown(test_status_refresh, teardown),
        cmocka_unit_test_teardown(test_fencing_and_reaping, teardown),
        cmocka_unit_test_teardown(test_cgroup_cancel_catches_setsid, teardown),
        cmocka_unit_test_teardown(test_refuses_open_listen_without_keys, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curve_auth_stop();
    return rc;
}
