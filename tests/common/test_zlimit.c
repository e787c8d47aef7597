/* test_zlimit.c - common/zlimit.h: after zlimit_raise a process opens more ZeroMQ sockets than
 * czmq's default 1,024 (a JM linked to more nodes than that), each connected to a listener, and
 * the soft open-file limit is the hard one. Skipped where the hard limit leaves no room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include <cmocka.h>
#include <czmq.h>

#include "common/mem.h"
#include "common/zlimit.h"

#define SOCKETS 1500 /* past czmq's default 1,024 */

static void test_more_sockets_than_default(void **state)
{
    (void)state;
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * SOCKETS + 64) {
        fprintf(stderr, "hard open-file limit %llu: no room for %d sockets\n",
                (unsigned long long)rl.rlim_max, SOCKETS);
        skip();
    }
    size_t limit = zlimit_raise();
    assert_true(limit > SOCKETS);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    assert_true(rl.rlim_cur == rl.rlim_max);

    zsock_t *server = zsock_new(ZMQ_ROUTER);
    assert_non_null(server);
    int port = zsock_bind(server, "tcp://127.0.0.1:*");
    assert_true(port > 0);
    zsock_t **socks = mem_calloc(SOCKETS, sizeof *socks);
    assert_non_null(socks);
    size_t opened = 0;
    for (size_t i = 0; i < SOCKETS; i++) {
        socks[i] = zsock_new(ZMQ_DEALER);
        if (!socks[i])
            break;
        if (zsock_connect(socks[i], "tcp://127.0.0.1:%d", port) != 0)
            break;
        opened++;
    }
    assert_int_equal(opened, SOCKETS);
    /* the last one really talks: a message through it reaches the listener */
    assert_int_equal(zstr_send(socks[SOCKETS - 1], "hello"), 0);
    zsock_set_rcvtimeo(server, 10000);
    zmsg_t *m = zmsg_recv(server);
    assert_non_null(m);
    assert_int_equal(zmsg_size(m), 2);
    zmsg_destroy(&m);
    for (size_t i = 0; i < SOCKETS; i++)
        zsock_destroy(&socks[i]);
    mem_free(socks);
    zsock_destroy(&server);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_more_sockets_than_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
