/* log.h - leveled logging to stderr, readable on a terminal and under journald.
 *
 * One line per call: "2026-11-21T05:55:12.123Z paddock-pn[1234] info: text" on a terminal or a
 * file; when JOURNAL_STREAM is set (stderr connected to journald by systemd) the line is
 * "<6>paddock-pn: text" instead: a syslog priority prefix journald understands and no
 * timestamp (journald keeps its own). Lines are written with one write(2) each, so lines
 * from several threads or processes sharing stderr do not interleave; a line longer than
 * LOG_LINE_MAX bytes is truncated and ends with "...".
 *
 * Logging never fails visibly and never allocates: a write error is ignored.
 * The level and component name are process-wide; set them once at start-up.
 */
#ifndef PADDOCK_COMMON_LOG_H
#define PADDOCK_COMMON_LOG_H

#include <stdbool.h>
#include <stdio.h>

/* Names avoid <syslog.h>'s LOG_DEBUG/LOG_INFO macros. */
enum log_level {
    LOG_LEVEL_DEBUG = 0,
    LOG_LEVEL_INFO = 1,
    LOG_LEVEL_WARN = 2,
    LOG_LEVEL_ERROR = 3,
};

#define LOG_LINE_MAX 2048

/* Sets the component name shown on every line ("paddock-rm"; copied, at most 63 bytes) and
 * decides the output form: journald form when the environment variable JOURNAL_STREAM is set,
 * terminal form otherwise. When PADDOCK_LOG_LEVEL is set to a level name it becomes the level
 * (a later log_set_level, e.g. from a configuration file, still wins). Without a call the name
 * is "paddock" and the form is decided from the environment on the first line logged. */
void log_init(const char *component);

/* Forces the journald form (true) or the terminal form (false), e.g. for tests. */
void log_set_journal(bool journal);

/* Lines below `level` are discarded. The default is LOG_LEVEL_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* True when a line at `level` would be written (to skip building expensive arguments). */
bool log_enabled(enum log_level level);

/* Parses "debug", "info", "warn"/"warning", "error" (case-insensitive). Returns 0 or ERR_INVAL. */
int log_level_parse(const char *text, enum log_level *out);
/* "debug", "info", "warn", "error"; "?" for a value outside the enum. */
const char *log_level_name(enum log_level level);

/* Redirects output to a file descriptor (default 2, stderr); borrowed, never closed. For tests
 * that capture lines through a pipe or a temporary file. */
void log_set_fd(int fd);

/* Writes one line at `level` (a trailing newline in `fmt` is not needed and is dropped). */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
