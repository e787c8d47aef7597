/* test_rm_view_backlog.c - one real paddock-rm replica on 127.0.0.1: its view socket takes a
 * thousand JMs connecting at once. Its listen backlog was ZeroMQ's default of 100: in bench_rm's
 * thousand-subscriber join the kernel dropped thousands of handshakes past a full accept queue,
 * and those JMs, waiting in TCP's retransmission backoff, took nothing for tens of seconds. The
 * replica is stopped (SIGSTOP: it accepts nothing) while 400 plain TCP connections are opened to
 * its view port; each completes its handshake only if the accept queue holds it. The test stops
 * exactly the pid it started (SIGCONT first). */
#include "common/clock.h"
#include "rm/rmclient.h"
#include "rm/rmview_xpub.h"
#include "tests/rm/rm_harness.h"
#include "tests/rm/rm_replica.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define CONNS 400 /* over ZeroMQ's default backlog of 100, under RMVIEW_XPUB_BACKLOG */

static struct rm_replica g_rm;

static int group_setup(void **state)
{
    (void)state;
    zsys_handler_set(NULL);
    return rm_replica_setup(&g_rm, "rmvbl", "", "");
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini(); /* stops the one child it was handed */
    return 0;
}

/* Non-blocking connects to port; how many complete their handshake within ms. */
static int handshakes(int port, int *fds, int n, int ms)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        assert_true(fds[i] >= 0);
        int rc = connect(fds[i], (struct sockaddr *)&a, sizeof a);
        assert_true(rc == 0 || errno == EINPROGRESS);
    }
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    assert_non_null(p);
    int done = 0;
    bool *ok = calloc((size_t)n, sizeof *ok);
    assert_non_null(ok);
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end && done < n;) {
        for (int i = 0; i < n; i++)
            p[i] = (struct pollfd){.fd = ok[i] ? -1 : fds[i], .events = POLLOUT};
        if (poll(p, (nfds_t)n, 100) <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            if (ok[i] || !(p[i].revents & (POLLOUT | POLLERR | POLLHUP)))
                continue;
            int e = 0;
            socklen_t el = sizeof e;
            getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &e, &el);
            assert_int_equal(e, 0);
            ok[i] = true;
            done++;
        }
    }
    free(p);
    free(ok);
    return done;
}

static void test_view_socket_takes_a_crowd(void **state)
{
    (void)state;
    pid_t pid = -1;
    rmclient_t *c = rm_replica_boot(&g_rm, &pid); /* leading: the view socket is bound */
    assert_non_null(c);
    const char *colon = strrchr(g_rm.pub, ':');
    assert_non_null(colon);
    int port = atoi(colon + 1);

    assert_int_equal(kill(pid, SIGSTOP), 0);
    int *fds = calloc(CONNS, sizeof *fds);
    assert_non_null(fds);
    int done = handshakes(port, fds, CONNS, 3000);
    assert_int_equal(kill(pid, SIGCONT), 0);
    fprintf(stderr,
            "%d of %d connections to a stopped replica's view socket completed their "
            "handshake (backlog %d)\n",
            done, CONNS, RMVIEW_XPUB_BACKLOG);
    for (int i = 0; i < CONNS; i++)
        close(fds[i]);
    free(fds);
    assert_int_equal(done, CONNS);
    rmclient_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_socket_takes_a_crowd),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
