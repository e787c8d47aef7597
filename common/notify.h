/* notify.h - the systemd notification protocol (sd_notify), without libsystemd.
 *
 * A daemon run as a systemd service with Type=notify tells systemd when it is ready to serve,
 * when it is reloading or stopping, and a one-line status shown by `systemctl status`.
 * systemd passes the socket in the NOTIFY_SOCKET environment variable (a path, or an abstract
 * socket name starting with '@'); outside systemd the variable is unset and every call here
 * does nothing and returns 0. Each call sends one datagram and never blocks.
 */
#ifndef PADDOCK_COMMON_NOTIFY_H
#define PADDOCK_COMMON_NOTIFY_H

#include <stdbool.h>

/* Sends `state` verbatim ("READY=1", "STATUS=...", newline-separated assignments). Returns 0
 * (sent, or no NOTIFY_SOCKET), ERR_INVAL (state too long or socket name malformed) or
 * ERR_SYS (the send failed). */
int notify_send(const char *state);

/* READY=1 with MAINPID: the daemon listens and serves. */
int notify_ready(void);

/* STOPPING=1: the daemon began shutting down. */
int notify_stopping(void);

/* STATUS=<text> (printf-style; one line, longer text is truncated). */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* True when NOTIFY_SOCKET is set. */
bool notify_enabled(void);

#endif
