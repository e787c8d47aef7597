/* sd_notify without libsystemd: datagrams reach the socket named by NOTIFY_SOCKET (path and
 * abstract forms); without it every call is a no-op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/err.h"
#include "common/notify.h"

static int listen_at(const char *name, bool abstract)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t len = strlen(name);
    memcpy(sa.sun_path, name, len);
    if (abstract)
        sa.sun_path[0] = '\0';
    assert_int_equal(
        bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
        0);
    struct timeval tv = {5, 0}; /* a bounded wait, in case the datagram never comes */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void expect(int fd, const char *want)
{
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
    (void)state;
    char dir[] = "/tmp/paddock-notify-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/notify", dir);
    int fd = listen_at(path, false);
    setenv("NOTIFY_SOCKET", path, 1);
    assert_true(notify_enabled());
    assert_int_equal(notify_ready(), 0);
    char want[64];
    snprintf(want, sizeof want, "READY=1\nMAINPID=%ld", (long)getpid());
    expect(fd, want);
    assert_int_equal(notify_status("leader, %d nodes\nsecond line", 4), 0);
    expect(fd, "STATUS=leader, 4 nodes second line");
    assert_int_equal(notify_stopping(), 0);
    expect(fd, "STOPPING=1");
    close(fd);
    unlink(path);
    rmdir(dir);
    /* Nobody listening any more: the failure is reported, not hidden. */
    assert_int_equal(notify_ready(), ERR_SYS);
    unsetenv("NOTIFY_SOCKET");
}

static void test_abstract_socket(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof name, "@paddock-notify-test-%ld", (long)getpid());
    int fd = listen_at(name, true);
    setenv("NOTIFY_SOCKET", name, 1);
    assert_int_equal(notify_send("WATCHDOG=1"), 0);
    expect(fd, "WATCHDOG=1");
    close(fd);
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    assert_int_equal(notify_ready(), ERR_INVAL);
    unsetenv("NOTIFY_SOCKET");
    assert_false(notify_enabled());
    assert_int_equal(notify_ready(), 0); /* outside systemd: nothing to do */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_socket),
        cmocka_unit_test(test_abstract_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
