/* chld.h - the PN's loop told of its tasks' exits (SIGCHLD).
 *
 * Through a signalfd where it can: the signal stays blocked in every thread, so a task's exit
 * interrupts nobody (no handler, no write to libuv's signal pipe, no read of it); the loop finds
 * the descriptor readable when it next polls, and exits that come meanwhile add nothing, as one
 * SIGCHLD is pending at a time. Otherwise libuv's signal handler. Either way `reap` is called,
 * and one reaping pass takes every exit. The loop's thread only.
 */
#ifndef PADDOCK_PN_CHLD_H
#define PADDOCK_PN_CHLD_H

#include <signal.h>
#include <uv.h>

typedef struct chld {
    int fd; /* signalfd of SIGCHLD, or -1 (then sig, libuv's handler) */
    uv_poll_t poll;
    uv_signal_t sig;
    void (*reap)(void *arg);
    void *arg;
} chld_t;

/* Starts watching on `loop`. blocked: SIGCHLD is blocked in the calling thread now, so a
 * signalfd can take it; then SIGCHLD is added to *keep, the mask the caller restores before
 * running the loop, to stay blocked. */
void chld_start(chld_t *c, uv_loop_t *loop, int blocked, sigset_t *keep, void (*reap)(void *arg),
                void *arg);
/* Closes its handles (cb for each, as uv_close). */
void chld_close(chld_t *c, uv_close_cb cb);
/* After the loop's last run: the signalfd closed and SIGCHLD unblocked in this thread again. */
void chld_release(chld_t *c);

#endif
