/* CURVE over TCP on 127.0.0.1: an allow-listed client is served; a client with an unknown key,
 * a client without keys and a client trusting the wrong server key are refused. Plus key
 * files, the listen check and the endpoint classifier. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/curve.h"
#include "common/err.h"
#include "common/zuv.h"

#define WAIT_MS 5000

/* snprintf into an array, failing the test on truncation. */
#define FMT(buf, ...) assert_true(snprintf(buf, sizeof buf, __VA_ARGS__) < (int)sizeof buf)

struct fixture {
    char root[64];
    char server_dir[128], client_dir[128], stranger_dir[128];
    curve_t *server, *client, *stranger;
    zsock_t *router;
    zsock_t *monitor; /* PAIR receiving the server socket's monitor events */
    int port;
    char msg[512];
};

static void rm_rf(const char *path)
{
    char cmd[256];
    FMT(cmd, "rm -rf '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    FILE *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

static int setup(void **state)
{
    static struct fixture fx;
    struct fixture *f = &fx;
    memset(f, 0, sizeof *f);
    assert_int_equal(zuv_global_init(), 0);
    FMT(f->root, "/tmp/paddock-curve-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    FMT(f->server_dir, "%s/server", f->root);
    FMT(f->client_dir, "%s/client", f->root);
    FMT(f->stranger_dir, "%s/stranger", f->root);
    assert_int_equal(curve_keygen(f->server_dir, "rm", false, f->msg, sizeof f->msg), 0);
    assert_int_equal(curve_keygen(f->client_dir, "jm", false, f->msg, sizeof f->msg), 0);
    assert_int_equal(curve_keygen(f->stranger_dir, "jm", false, f->msg, sizeof f->msg), 0);
    /* The client learns the server's public key; the server allow-lists the client. */
    char from[256], to[256];
    FMT(from, "%s/rm.pub", f->server_dir);
    FMT(to, "%s/rm.pub", f->client_dir);
    copy_file(from, to);
    FMT(to, "%s/rm.pub", f->stranger_dir);
    copy_file(from, to);
    FMT(from, "%s/jm.pub", f->client_dir);
    FMT(to, "%s/allow/jm.pub", f->server_dir);
    copy_file(from, to);

    assert_int_equal(curve_load(&f->server, f->server_dir, "rm", NULL, f->msg, sizeof f->msg), 0);
    assert_int_equal(curve_load(&f->client, f->client_dir, "jm", "rm", f->msg, sizeof f->msg), 0);
    assert_int_equal(curve_load(&f->stranger, f->stranger_dir, "jm", "rm", f->msg, sizeof f->msg),
                     0);

    char allow[256];
    FMT(allow, "%s/allow", f->server_dir);
    assert_int_equal(curve_auth_start(allow, f->msg, sizeof f->msg), 0);
    assert_int_equal(curve_auth_start(allow, f->msg, sizeof f->msg), ERR_EXISTS);

    f->router = zuv_socket(ZMQ_ROUTER, 1 << 16);
    assert_non_null(f->router);
    assert_int_equal(curve_apply(f->router, f->server, CURVE_SERVER, NULL, f->msg, sizeof f->msg),
                     0);
    zsock_set_rcvtimeo(f->router, WAIT_MS);
    assert_int_equal(zmq_socket_monitor(zsock_resolve(f->router), "inproc://curve-test-monitor",
                                        ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                                            ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                            ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL),
                     0);
    f->monitor = zsock_new_pair(">inproc://curve-test-monitor");
    assert_non_null(f->monitor);
    zsock_set_rcvtimeo(f->monitor, WAIT_MS);
    f->port = zsock_bind(f->router, "tcp://127.0.0.1:*");
    assert_true(f->port > 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    zmq_socket_monitor(zsock_resolve(f->router), NULL, 0);
    zsock_destroy(&f->monitor);
    zsock_destroy(&f->router);
    curve_auth_stop();
    assert_false(curve_auth_running());
    curve_destroy(&f->server);
    curve_destroy(&f->client);
    curve_destroy(&f->stranger);
    rm_rf(f->root);
    return 0;
}

/* The next handshake event of the server socket (bounded wait), or -1. */
static int next_event(struct fixture *f)
{
    zmsg_t *m = zmsg_recv(f->monitor);
    if (m == NULL)
        return -1;
    zframe_t *fr = zmsg_first(m);
    int ev = -1;
    if (fr != NULL && zframe_size(fr) >= 2) {
        uint16_t e;
        memcpy(&e, zframe_data(fr), 2);
        ev = e;
    }
    zmsg_destroy(&m);
    return ev;
}

static zsock_t *client_socket(struct fixture *f, const curve_t *c, const char *server_key)
{
    zsock_t *d = zuv_socket(ZMQ_DEALER, 1 << 16);
    assert_non_null(d);
    assert_int_equal(curve_apply(d, c, CURVE_CLIENT, server_key, f->msg, sizeof f->msg), 0);
    assert_int_equal(zsock_connect(d, "tcp://127.0.0.1:%d", f->port), 0);
    zsock_set_rcvtimeo(d, WAIT_MS);
    return d;
}

static void test_allowed_client_is_served(void **state)
{
    struct fixture *f = *state;
    zsock_t *d = client_socket(f, f->client, NULL);
    assert_int_equal(zstr_send(d, "ping"), 0);
    zmsg_t *m = zmsg_recv(f->router);
    assert_non_null(m);
    assert_int_equal(zmsg_size(m), 2);
    zframe_t *body = zmsg_last(m);
    assert_true(zframe_streq(body, "ping"));
    /* Reply through the same routing id. */
    zframe_reset(body, "pong", 4);
    assert_int_equal(zmsg_send(&m, f->router), 0);
    char *reply = zstr_recv(d);
    assert_non_null(reply);
    assert_string_equal(reply, "pong");
    zstr_free(&reply);
    assert_int_equal(next_event(f), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    zsock_destroy(&d);
}

/* The server's monitor reports the refused handshake, and nothing reaches the application. */
static void expect_refused(struct fixture *f, zsock_t *d, int want_event)
{
    assert_int_equal(zstr_send(d, "ping"), 0);
    int ev = next_event(f);
    assert_int_equal(ev, want_event);
    zsock_set_rcvtimeo(f->router, 0);
    zmsg_t *m = zmsg_recv(f->router);
    assert_null(m);
    zsock_set_rcvtimeo(f->router, WAIT_MS);
    zsock_destroy(&d);
}

static void test_unknown_key_is_refused(void **state)
{
    struct fixture *f = *state;
    expect_refused(f, client_socket(f, f->stranger, NULL), ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
}

static void test_no_key_is_refused(void **state)
{
    struct fixture *f = *state;
    zsock_t *d = zuv_socket(ZMQ_DEALER, 0);
    assert_int_equal(curve_apply(d, NULL, CURVE_CLIENT, NULL, f->msg, sizeof f->msg), 0);
    assert_int_equal(zsock_connect(d, "tcp://127.0.0.1:%d", f->port), 0);
    expect_refused(f, d, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL);
}

static void test_wrong_server_key_is_refused(void **state)
{
    struct fixture *f = *state;
    /* The client trusts its own key as the server's: the real server cannot prove it. */
    zsock_t *d = client_socket(f, f->client, curve_public_key(f->client));
    expect_refused(f, d, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL);
}

static void test_server_needs_zauth(void **state)
{
    struct fixture *f = *state;
    curve_auth_stop();
    zsock_t *s = zuv_socket(ZMQ_ROUTER, 0);
    assert_int_equal(curve_apply(s, f->server, CURVE_SERVER, NULL, f->msg, sizeof f->msg),
                     ERR_STATE);
    assert_int_equal(curve_apply(s, f->client, CURVE_CLIENT, "short", f->msg, sizeof f->msg),
                     ERR_INVAL);
    zsock_destroy(&s);
}

static void test_key_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/paddock-keys-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char msg[512], path[256];
    assert_int_equal(curve_keygen(dir, NULL, false, msg, sizeof msg), 0);
    struct stat st;
    FMT(path, "%s/paddock.secret", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    FMT(path, "%s/allow/paddock.pub", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(curve_keygen(dir, NULL, false, msg, sizeof msg), ERR_EXISTS);
    assert_non_null(strstr(msg, "--force"));
    curve_t *a = NULL, *b = NULL;
    assert_int_equal(curve_load(&a, dir, "paddock", NULL, msg, sizeof msg), 0);
    /* One shared identity: the trusted server key is the own public key. */
    assert_string_equal(curve_public_key(a), curve_server_key(a));
    assert_int_equal(strlen(curve_public_key(a)), CURVE_KEY_Z85_LEN);
    assert_int_equal(curve_keygen(dir, NULL, true, msg, sizeof msg), 0);
    assert_int_equal(curve_load(&b, dir, "paddock", NULL, msg, sizeof msg), 0);
    assert_string_not_equal(curve_public_key(a), curve_public_key(b));
    curve_destroy(&a);
    curve_destroy(&b);
    assert_null(b);
    assert_int_equal(curve_keygen(dir, "../evil", false, msg, sizeof msg), ERR_INVAL);
    assert_int_equal(curve_keygen(dir, ".hidden", false, msg, sizeof msg), ERR_INVAL);
    assert_int_equal(curve_load(&a, dir, "missing", NULL, msg, sizeof msg), ERR_IO);
    /* A public certificate is not an identity. */
    FMT(path, "%s/paddock.pub", dir);
    char copy[256];
    FMT(copy, "%s/pubonly.secret", dir);
    copy_file(path, copy);
    assert_int_equal(curve_load(&a, dir, "pubonly", "paddock", msg, sizeof msg), ERR_PARSE);
    assert_non_null(strstr(msg, "no secret key"));
    /* Garbage is not a certificate. */
    FILE *g = fopen(copy, "w");
    fputs("hello\n", g);
    fclose(g);
    assert_int_equal(curve_load(&a, dir, "pubonly", "paddock", msg, sizeof msg), ERR_PARSE);
    assert_null(a);
    rm_rf(dir);
}

static void test_listen_policy(void **state)
{
    (void)state;
    char msg[256];
    static const char *const local[] = {"tcp://127.0.0.1:5555", "tcp://127.3.4.5:1",
                                        "tcp://localhost:9",    "tcp://[::1]:5555",
                                        "ipc:///tmp/x.sock",    "inproc://x"};
    static const char *const remote[] = {
        "tcp://*:5555",    "tcp://0.0.0.0:5555", "tcp://10.0.0.1:5555",
        "tcp://[::]:1",    "tcp://eth0:5555",    "tcp://128.0.0.1:1",
        "tcp://127.0.0.1", "udp://127.0.0.1:5",  "tcp://lo;127.0.0.1:1"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        assert_true(curve_endpoint_is_local(local[i]));
        assert_int_equal(curve_check_listen(local[i], NULL, false, msg, sizeof msg), 0);
    }
    for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
        if (curve_endpoint_is_local(remote[i]))
            fail_msg("%s classified as local", remote[i]);
        assert_int_equal(curve_check_listen(remote[i], NULL, false, msg, sizeof msg), ERR_AUTH);
        assert_int_equal(curve_check_listen(remote[i], NULL, true, msg, sizeof msg), 0);
    }
    assert_int_equal(curve_check_listen("tcp://*:1", NULL, false, msg, sizeof msg), ERR_AUTH);
    assert_string_equal(msg, "refusing to listen on tcp://*:1 without CURVE keys (make keys with "
                             "'paddock keygen' or pass --insecure)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_allowed_client_is_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_key_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_key_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_server_key_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_needs_zauth, setup, teardown),
        cmocka_unit_test(test_key_files),
        cmocka_unit_test(test_listen_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
