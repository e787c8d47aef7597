/* test_rm_raft_transport.c - the Raft port between RM replicas (rm/raft_curve.c) against three
 * real replicas on 127.0.0.1 with CURVE on (`paddock cluster up`):
 *   - the replicas talk Raft over CURVE (each reports it, with handshakes and connections);
 *   - the Raft port probed with raw bytes, with a ZeroMQ client that does not speak CURVE, with
 *     a client holding a key that is not on the allow-list, and with the replayed capture of a
 *     real session (a client with the cluster's key, recorded through a TCP proxy in this
 *     process, then its bytes sent again verbatim): each is refused, nothing reaches raft, and
 *     each is counted under its reason in `rm status` (raft_transport.rejected);
 *   - an authenticated peer's malformed OPEN and data for a connection never opened: refused
 *     with a CLOSE, counted;
 *   - the same counts in each replica's Prometheus metrics
 *     (paddock_rm_raft_transport_rejected_total{reason});
 *   - the replicas are unharmed: same leader, same term, a write commits on all three;
 *   - a stopped follower (SIGSTOP) shows up as timed-out connections, and catches up after
 *     SIGCONT;
 *   - a replica added with `paddock rm add` talks Raft over CURVE too;
 *   - a killed leader is replaced in under a second, and restarted it catches up.
 * The test stops exactly the daemons it started (pid files), also after a crash. */
#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "rm/rmclient.h"
#include "tests/rm/rm_harness.h"

#include <arpa/inet.h>
#include <czmq.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
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

#define FAILOVER_MS 1000

static rmclient_t *g_c;
static int g_leader = -1; /* index of the leader in g_c */
static uint64_t g_term;
static int g_port[3]; /* Raft ports, by index */
static char g_keys[512];
static char g_stranger[512]; /* a key directory the cluster never heard of */

static json_t *status(int i)
{
    return rm_harness_admin(g_c, i, "rm_status", 1000);
}

static json_int_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* raft_transport.rejected.REASON of replica i (-1 when it does not answer). */
static long long rejected(int i, const char *reason)
{
    json_t *st = status(i);
    json_t *r =
        json_object_get(json_object_get(json_object_get(st, "raft_transport"), "rejected"), reason);
    long long v = json_is_integer(r) ? (long long)json_integer_value(r) : -1;
    json_decref(st);
    return v;
}

/* Polls until replica i counts more than `above` refusals for `reason` (5 s at most). */
static bool counted(int i, const char *reason, long long above)
{
    for (uint64_t end = clock_mono_ms() + 5000; clock_mono_ms() < end;) {
        if (rejected(i, reason) > above)
            return true;
        usleep(50 * 1000);
    }
    return false;
}

static int register_job(const char *name)
{
    return rm_harness_register_job(g_c, name);
}

/* Every replica of g_c answers with the same last_applied, at least `min` (10 s at most). */
static bool converged(json_int_t min)
{
    for (uint64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end;) {
        json_int_t v[8];
        size_t n = rmclient_count(g_c), ok = 0;
        for (size_t i = 0; i < n && i < 8; i++) {
            json_t *st = status((int)i);
            v[i] = st != NULL ? jint(st, "last_applied") : -1;
            json_decref(st);
            ok += v[i] >= min && v[i] == v[0];
        }
        if (ok == n)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

static int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads until the peer closes; true when it did within `ms` (what it sent is discarded). */
static bool closed_by_peer(int fd, int ms)
{
    char buf[4096];
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
    }
    return false;
}

/* A DEALER to replica i's Raft port: CURVE with `keys` (the cluster's) or `stranger` (a
 * certificate from g_stranger, trusting the cluster's server key), or none. */
static zsock_t *dealer(int i, bool with_curve, bool stranger)
{
    zsock_t *z = zsock_new(ZMQ_DEALER);
    assert_non_null(z);
    zsock_set_linger(z, 0);
    zsock_set_rcvtimeo(z, 0);
    char msg[256];
    if (with_curve) {
        curve_t *cluster = NULL, *mine = NULL;
        assert_int_equal(curve_load(&cluster, g_keys, "paddock", NULL, msg, sizeof msg), 0);
        if (stranger)
            assert_int_equal(curve_load(&mine, g_stranger, "stranger", NULL, msg, sizeof msg), 0);
        assert_int_equal(curve_apply(z, stranger ? mine : cluster, CURVE_CLIENT,
                                     curve_server_key(cluster), msg, sizeof msg),
                         0);
        curve_destroy(&cluster);
        curve_destroy(&mine);
    }
    assert_int_equal(zsock_connect(z, "tcp://127.0.0.1:%d", g_port[i]), 0);
    return z;
}

/* An OPEN frame (raft_curve.c) claiming raft id 99 at 127.0.0.1:1. */
static void send_open(zsock_t *z)
{
    uint8_t open[10 + 11] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 99};
    memcpy(open + 10, "127.0.0.1:1", 11);
    zmq_send(zsock_resolve(z), open, sizeof open, ZMQ_DONTWAIT);
}

/* The first byte of the next frame within `ms`, or -1. */
static int recv_type(zsock_t *z, int ms)
{
    uint8_t b[64];
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end;) {
        int n = zmq_recv(zsock_resolve(z), b, sizeof b, ZMQ_DONTWAIT);
        if (n > 0)
            return b[0];
        usleep(5 * 1000);
    }
    return -1;
}

static int group_setup(void **state)
{
    (void)state;
    if (rm_harness_init("rafttp") != 0)
        return -1;
    zsys_init();
    signal(SIGPIPE, SIG_IGN);
    snprintf(g_keys, sizeof g_keys, "%s/keys", rm_harness_dir());
    snprintf(g_stranger, sizeof g_stranger, "%s/stranger-keys", rm_harness_dir());
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rmclient_destroy(&g_c);
    rm_harness_fini();
    return 0;
}

static void test_replicas_talk_curve(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(rm_harness_cluster("up --rm 3 --pn 0 --tokens 100"), 0);
    assert_int_equal(rmclient_open(&g_c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(g_c), 3);
    json_t *lst = rm_harness_wait_leader(g_c, 15000);
    assert_non_null(lst);
    g_term = (uint64_t)jint(lst, "term");
    uint64_t lid = (uint64_t)jint(lst, "id");
    json_decref(lst);
    assert_int_equal(register_job("first"), 0);
    for (int i = 0; i < 3; i++) {
        json_t *st = status(i);
        assert_non_null(st);
        if ((uint64_t)jint(st, "id") == lid)
            g_leader = i;
        const char *addr = json_string_value(json_object_get(st, "address"));
        assert_non_null(addr);
        const char *colon = strrchr(addr, ':');
        assert_non_null(colon);
        g_port[i] = atoi(colon + 1);
        json_t *rt = json_object_get(st, "raft_transport");
        assert_true(json_is_true(json_object_get(rt, "curve")));
        /* every replica has connections both ways: the leader sends, followers answer */
        assert_true(jint(rt, "handshakes") >= 1);
        assert_true(jint(rt, "accepted") >= 1);
        assert_true(jint(rt, "connected") >= 1);
        assert_int_equal(jint(json_object_get(rt, "rejected"), "total"), 0);
        json_decref(st);
    }
    assert_true(g_leader >= 0);
    assert_true(converged(1));
}

static void test_raw_bytes_refused(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        long long before = rejected(i, "handshake");
        assert_true(before >= 0);
        int fd = tcp_connect(g_port[i]);
        assert_true(fd >= 0);
        char junk[256]; /* an HTTP request, then bytes of no protocol */
        static const char http[] = "GET / HTTP/1.1\r\nHost: raft\r\n\r\n";
        for (size_t k = 0; k < sizeof junk; k++)
            junk[k] = (char)(k * 37 + 11);
        memcpy(junk, http, sizeof http - 1);
        send(fd, junk, sizeof junk, MSG_NOSIGNAL);
        assert_true(closed_by_peer(fd, 5000));
        close(fd);
        assert_true(counted(i, "handshake", before));
    }
}

static void test_plain_zeromq_refused(void **state)
{
    (void)state;
    int i = (g_leader + 1) % 3;
    long long before = rejected(i, "handshake");
    zsock_t *z = dealer(i, false, false);
    send_open(z);
    assert_int_equal(recv_type(z, 1000), -1);
    zsock_destroy(&z);
    assert_true(counted(i, "handshake", before));
}

static void test_unknown_key_refused(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(curve_keygen(g_stranger, "stranger", false, msg, sizeof msg), 0);
    for (int i = 0; i < 3; i++) {
        long long before = rejected(i, "auth"), accepted = -1;
        json_t *st = status(i);
        accepted = jint(json_object_get(st, "raft_transport"), "accepted");
        json_decref(st);
        zsock_t *z = dealer(i, true, true);
        send_open(z);
        assert_int_equal(recv_type(z, 1000), -1); /* no ACK, no CLOSE: nothing at all */
        zsock_destroy(&z);
        assert_true(counted(i, "auth", before));
        st = status(i);
        assert_int_equal(jint(json_object_get(st, "raft_transport"), "accepted"), accepted);
        json_decref(st);
    }
}

#define SEGS_MAX 64

/* Records what a real client with the cluster's key sends through a TCP proxy: the ZMTP
 * greeting, CURVE HELLO and INITIATE, an OPEN answered with ACK, a CLOSE. The bytes are cut
 * into turns (a new one each time the server has spoken in between): seg[k] is where turn k
 * starts, *nseg their number. Returns the length. */
static size_t capture_session(int i, uint8_t *rec, size_t cap, size_t *seg, size_t *nseg)
{
    bool server_spoke = true;
    *nseg = 0;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    int saved = g_port[i];
    g_port[i] = ntohs(a.sin_port); /* the client connects to the proxy */
    zsock_t *z = dealer(i, true, false);
    g_port[i] = saved;
    struct pollfd lp = {lfd, POLLIN, 0};
    assert_int_equal(poll(&lp, 1, 5000), 1);
    int cfd = accept(lfd, NULL, NULL);
    assert_true(cfd >= 0);
    int ufd = tcp_connect(g_port[i]);
    assert_true(ufd >= 0);
    send_open(z);
    size_t len = 0;
    bool acked = false, sent_close = false;
    uint64_t stop = clock_mono_ms() + 5000;
    while (clock_mono_ms() < stop) {
        struct pollfd p[2] = {{cfd, POLLIN, 0}, {ufd, POLLIN, 0}};
        poll(p, 2, 5);
        uint8_t buf[4096];
        if (p[0].revents & (POLLIN | POLLHUP)) {
            ssize_t n = recv(cfd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
            assert_true(len + (size_t)n <= cap);
            if (server_spoke && *nseg < SEGS_MAX)
                seg[(*nseg)++] = len;
            server_spoke = false;
            memcpy(rec + len, buf, (size_t)n);
            len += (size_t)n;
            send(ufd, buf, (size_t)n, MSG_NOSIGNAL);
        }
        if (p[1].revents & (POLLIN | POLLHUP)) {
            ssize_t n = recv(ufd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
            server_spoke = true;
            send(cfd, buf, (size_t)n, MSG_NOSIGNAL);
        }
        uint8_t f[16];
        if (!acked && zmq_recv(zsock_resolve(z), f, sizeof f, ZMQ_DONTWAIT) > 0 && f[0] == 2) {
            acked = true; /* the session was real: the replica handed it to raft */
            uint8_t close_frame = 4;
            zmq_send(zsock_resolve(z), &close_frame, 1, ZMQ_DONTWAIT);
            sent_close = true;
            stop = clock_mono_ms() + 300; /* let the CLOSE through the proxy */
        }
    }
    assert_true(acked && sent_close);
    zsock_destroy(&z);
    close(cfd);
    close(ufd);
    close(lfd);
    return len;
}

static void test_replayed_capture_refused(void **state)
{
    (void)state;
    static uint8_t rec[1 << 16];
    size_t seg[SEGS_MAX + 1], nseg = 0;
    int i = g_leader;
    size_t len = capture_session(i, rec, sizeof rec, seg, &nseg);
    assert_true(len > 64 + 200 + 200); /* greeting, HELLO, INITIATE at least */
    assert_true(nseg >= 3);
    seg[nseg] = len;
    for (int round = 0; round < 2; round++) {
        long long before = rejected(i, "crypto");
        json_t *st = status(i);
        json_int_t accepted = jint(json_object_get(st, "raft_transport"), "accepted");
        json_decref(st);
        int fd = tcp_connect(g_port[i]);
        assert_true(fd >= 0);
        /* the client's turns, each once the server has answered the one before, as the
         * recorded client did */
        for (size_t k = 0; k < nseg; k++) {
            send(fd, rec + seg[k], seg[k + 1] - seg[k], MSG_NOSIGNAL);
            struct pollfd p = {fd, POLLIN, 0};
            uint8_t buf[4096];
            if (k + 1 < nseg && poll(&p, 1, 1000) == 1 && recv(fd, buf, sizeof buf, 0) <= 0)
                break; /* closed already */
            usleep(20 * 1000);
        }
        assert_true(closed_by_peer(fd, 5000));
        close(fd);
        /* the replayed HELLO gets a fresh WELCOME; the old INITIATE's cookie does not open */
        assert_true(counted(i, "crypto", before));
        st = status(i);
        assert_int_equal(jint(json_object_get(st, "raft_transport"), "accepted"), accepted);
        json_decref(st);
    }
}

/* A key on the allow-list (a user's, a PN's) passes CURVE but is not a replica's: its OPEN is
 * refused, so only replicas speak Raft. */
static void test_allowed_user_key_refused(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(curve_keygen(g_keys, "raft-user", false, msg, sizeof msg), 0);
    int i = (g_leader + 1) % 3;
    long long before = rejected(i, "auth");
    json_t *st = status(i);
    long long accepted = jint(json_object_get(st, "raft_transport"), "accepted");
    json_decref(st);
    zsock_t *z = zsock_new(ZMQ_DEALER);
    assert_non_null(z);
    zsock_set_linger(z, 0);
    curve_t *cluster = NULL, *user = NULL;
    assert_int_equal(curve_load(&cluster, g_keys, "paddock", NULL, msg, sizeof msg), 0);
    assert_int_equal(curve_load(&user, g_keys, "raft-user", NULL, msg, sizeof msg), 0);
    assert_int_equal(curve_apply(z, user, CURVE_CLIENT, curve_server_key(cluster), msg, sizeof msg),
                     0);
    curve_destroy(&cluster);
    curve_destroy(&user);
    assert_int_equal(zsock_connect(z, "tcp://127.0.0.1:%d", g_port[i]), 0);
    send_open(z);
    assert_int_equal(recv_type(z, 2000), 4); /* CLOSE: the handshake passed, the OPEN did not */
    zsock_destroy(&z);
    assert_true(counted(i, "auth", before));
    st = status(i);
    assert_int_equal(jint(json_object_get(st, "raft_transport"), "accepted"), accepted);
    json_decref(st);
}

static void test_member_bad_frames_refused(void **state)
{
    (void)state;
    int i = (g_leader + 2) % 3;
    long long frame = rejected(i, "frame"), unknown = rejected(i, "unknown");
    zsock_t *z = dealer(i, true, false);
    uint8_t bad_open[3] = {1, 7, 0}; /* wrong protocol, no id */
    zmq_send(zsock_resolve(z), bad_open, sizeof bad_open, ZMQ_DONTWAIT);
    assert_int_equal(recv_type(z, 2000), 4); /* CLOSE */
    assert_true(counted(i, "frame", frame));
    uint8_t data[5] = {3, 'j', 'u', 'n', 'k'}; /* DATA on a connection never opened */
    zmq_send(zsock_resolve(z), data, sizeof data, ZMQ_DONTWAIT);
    assert_int_equal(recv_type(z, 2000), 4);
    assert_true(counted(i, "unknown", unknown));
    zsock_destroy(&z);
}

/* GET url ("http://127.0.0.1:PORT/PATH") into buf; the body's start, or NULL. */
static const char *http_get(const char *url, char *buf, size_t cap)
{
    int port = 0;
    char path[128] = "/";
    if (sscanf(url, "http://127.0.0.1:%d%127s", &port, path) < 1)
        return NULL;
    int fd = tcp_connect(port);
    if (fd < 0)
        return NULL;
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    send(fd, req, (size_t)n, MSG_NOSIGNAL);
    size_t len = 0;
    for (uint64_t end = clock_mono_ms() + 5000; len + 1 < cap && clock_mono_ms() < end;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    const char *body = strstr(buf, "\r\n\r\n");
    return body != NULL ? body + 4 : NULL;
}

/* The value of `name{reason="REASON"}` in an exposition, or -1. */
static double sample(const char *text, const char *reason)
{
    char key[160];
    snprintf(key, sizeof key, "paddock_rm_raft_transport_rejected_total{reason=\"%s\"} ", reason);
    const char *p = strstr(text, key);
    return p != NULL ? atof(p + strlen(key)) : -1;
}

static void test_counted_in_metrics(void **state)
{
    (void)state;
    static char buf[1 << 20];
    for (int i = 0; i < 3; i++) {
        json_t *st = status(i);
        const char *url = json_string_value(json_object_get(st, "metrics"));
        if (url == NULL) { /* metrics off in this build of `cluster up` */
            json_decref(st);
            skip();
        }
        const char *text = http_get(url, buf, sizeof buf);
        assert_non_null(text);
        json_t *rej = json_object_get(json_object_get(st, "raft_transport"), "rejected");
        const char *reasons[] = {"handshake", "auth", "crypto", "frame", "unknown"};
        for (size_t k = 0; k < 5; k++) {
            double v = sample(text, reasons[k]);
            assert_true(v >= 0); /* every reason is exported, zero or not */
            assert_true(v >= (double)jint(rej, reasons[k]));
        }
        assert_true(sample(text, "handshake") >= 1 && sample(text, "auth") >= 1);
        if (i == g_leader)
            assert_true(sample(text, "crypto") >= 2); /* the replayed capture, twice */
        json_decref(st);
    }
}

static void test_replicas_unharmed(void **state)
{
    (void)state;
    json_t *lst = rm_harness_wait_leader(g_c, 5000);
    assert_non_null(lst);
    assert_int_equal((uint64_t)jint(lst, "term"), g_term); /* no election was caused */
    json_t *st = status(g_leader);
    assert_int_equal(jint(st, "id"), jint(lst, "id"));
    json_decref(st);
    json_decref(lst);
    assert_int_equal(register_job("after-probes"), 0);
    lst = rm_harness_wait_leader(g_c, 5000);
    json_int_t ci = jint(lst, "commit_index");
    json_decref(lst);
    assert_true(converged(ci));
}

static void test_stopped_follower_times_out(void **state)
{
    (void)state;
    int f = (g_leader + 1) % 3;
    json_t *st = status(f);
    uint64_t fid = (uint64_t)jint(st, "id");
    json_decref(st);
    st = status(g_leader);
    json_int_t timed = jint(json_object_get(st, "raft_transport"), "timed_out");
    json_decref(st);
    long pid = rm_harness_rm_pid(fid);
    assert_true(pid > 0);
    assert_int_equal(kill((pid_t)pid, SIGSTOP), 0);
    bool seen = false;
    for (uint64_t end = clock_mono_ms() + 6000; !seen && clock_mono_ms() < end;) {
        usleep(100 * 1000);
        st = status(g_leader);
        seen = jint(json_object_get(st, "raft_transport"), "timed_out") > timed;
        json_decref(st);
    }
    assert_int_equal(register_job("while-stopped"), 0); /* two of three commit */
    kill((pid_t)pid, SIGCONT);
    assert_true(seen);
    assert_int_equal(register_job("after-cont"), 0);
    json_t *lst = rm_harness_wait_leader(g_c, 5000);
    assert_non_null(lst);
    json_int_t ci = jint(lst, "commit_index");
    json_decref(lst);
    assert_true(converged(ci));
}

static void test_added_replica_uses_curve(void **state)
{
    (void)state;
    char msg[256];
    int pr = rm_harness_free_port(), pa = rm_harness_free_port(), pp = rm_harness_free_port();
    assert_true(pr > 0 && pa > 0 && pp > 0);
    rm_harness_ports_release();
    assert_int_equal(rm_harness_run("rm add 4 127.0.0.1:%d tcp://127.0.0.1:%d tcp://127.0.0.1:%d "
                                    "--dir %s --start",
                                    pr, pa, pp, rm_harness_dir()),
                     0);
    rmclient_destroy(&g_c);
    assert_int_equal(rmclient_open(&g_c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(g_c), 4);
    assert_int_equal(register_job("with-four"), 0);
    json_t *lst = rm_harness_wait_leader(g_c, 5000);
    assert_non_null(lst);
    json_int_t ci = jint(lst, "commit_index");
    json_decref(lst);
    assert_true(converged(ci));
    for (int i = 0; i < 4; i++) {
        json_t *st = status(i);
        if (jint(st, "id") == 4) {
            json_t *rt = json_object_get(st, "raft_transport");
            assert_true(json_is_true(json_object_get(rt, "curve")));
            assert_true(jint(rt, "accepted") >= 1); /* the leader's log came over CURVE */
            assert_true(jint(rt, "bytes_in") > 0);
        }
        json_decref(st);
    }
}

static void test_failover_under_a_second(void **state)
{
    (void)state;
    json_t *lst = rm_harness_wait_leader(g_c, 5000);
    assert_non_null(lst);
    uint64_t lid = (uint64_t)jint(lst, "id");
    json_decref(lst);
    long pid = rm_harness_rm_pid(lid);
    assert_true(pid > 0);
    int dead = -1;
    for (int i = 0; i < (int)rmclient_count(g_c); i++) {
        json_t *st = status(i);
        if ((uint64_t)jint(st, "id") == lid)
            dead = i;
        json_decref(st);
    }
    assert_true(dead >= 0);
    uint64_t t0 = clock_mono_ms(), t1 = 0;
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    while (t1 == 0 && clock_mono_ms() - t0 < 10000) {
        for (int i = 0; i < (int)rmclient_count(g_c) && t1 == 0; i++) {
            if (i == dead)
                continue;
            json_t *st = rm_harness_admin(g_c, i, "rm_status", 100);
            if (json_is_true(json_object_get(st, "ready")))
                t1 = clock_mono_ms();
            json_decref(st);
        }
    }
    print_message("new leader %llu ms after the kill\n", (unsigned long long)(t1 - t0));
    assert_true(t1 != 0 && t1 - t0 < FAILOVER_MS);
    assert_int_equal(register_job("after-failover"), 0);
    /* the killed replica, started again on its data directory, catches up */
    for (uint64_t end = clock_mono_ms() + 5000; rm_harness_running(pid) && clock_mono_ms() < end;)
        usleep(20 * 1000);
    assert_int_equal(rm_harness_cluster("up"), 0);
    assert_int_equal(register_job("after-restart"), 0);
    lst = rm_harness_wait_leader(g_c, 5000);
    assert_non_null(lst);
    json_int_t ci = jint(lst, "commit_index");
    json_decref(lst);
    assert_true(converged(ci));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replicas_talk_curve),
        cmocka_unit_test(test_raw_bytes_refused),
        cmocka_unit_test(test_plain_zeromq_refused),
        cmocka_unit_test(test_unknown_key_refused),
        cmocka_unit_test(test_replayed_capture_refused),
        cmocka_unit_test(test_allowed_user_key_refused),
        cmocka_unit_test(test_member_bad_frames_refused),
        cmocka_unit_test(test_counted_in_metrics),
        cmocka_unit_test(test_replicas_unharmed),
        cmocka_unit_test(test_stopped_follower_times_out),
        cmocka_unit_test(test_added_replica_uses_curve),
        cmocka_unit_test(test_failover_under_a_second),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
