/* chld.c - the PN's loop told of its tasks' exits (see chld.h). */
#include "pn/chld.h"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/log.h"

static void chld__on_sig(uv_signal_t *h, int sig)
{
    chld_t *c = h->data;
    (void)sig;
    c->reap(c->arg);
}

static void chld__on_fd(uv_poll_t *h, int status, int events)
{
    chld_t *c = h->data;
    (void)status;
    (void)events;
    struct signalfd_siginfo si[8];
    while (read(c->fd, si, sizeof si) == (ssize_t)sizeof si)
        ;
    c->reap(c->arg);
}

static void chld__set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
}

void chld_start(chld_t *c, uv_loop_t *loop, int blocked, sigset_t *keep, void (*reap)(void *arg),
                void *arg)
{
    c->reap = reap;
    c->arg = arg;
    c->poll.data = c->sig.data = c;
    uv_signal_init(loop, &c->sig);
    sigset_t set;
    chld__set(&set);
    c->fd = blocked ? signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC) : -1;
    if (c->fd >= 0 && uv_poll_init(loop, &c->poll, c->fd) != 0) {
        log_warn("SIGCHLD: no poll on its signalfd, using a handler");
        close(c->fd);
        c->fd = -1;
    }
    if (c->fd >= 0) {
        uv_poll_start(&c->poll, UV_READABLE, chld__on_fd);
        sigaddset(keep, SIGCHLD); /* kept blocked: the signalfd takes it */
    } else {
        uv_signal_start(&c->sig, chld__on_sig, SIGCHLD);
    }
}

void chld_close(chld_t *c, uv_close_cb cb)
{
    uv_close((uv_handle_t *)&c->sig, cb);
    if (c->fd >= 0)
        uv_close((uv_handle_t *)&c->poll, cb);
}

void chld_release(chld_t *c)
{
    if (c->fd < 0)
        return;
    close(c->fd);
    c->fd = -1;
    sigset_t set;
    chld__set(&set);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}
