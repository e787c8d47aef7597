/* err.h - Paddock's error codes: one X-macro table (enum, name, message).
 *
 * Every fallible function returns 0 or a negative ERR_* code. Parsers and decoders also fill
 * a caller-owned message buffer with the reason, so a rejection is one line a caller can
 * prefix with its own context ("spec.json: task extract-0: cpu must be positive").
 */
#ifndef PADDOCK_COMMON_ERR_H
#define PADDOCK_COMMON_ERR_H

#include <stddef.h>

#define ERR_TABLE(X)                                                                               \
    X(ERR_OK, 0, "ok")                                                                             \
    X(ERR_NOMEM, -1, "out of memory")                                                              \
    X(ERR_INVAL, -2, "invalid argument")                                                           \
    X(ERR_PARSE, -3, "malformed input")                                                            \
    X(ERR_RANGE, -4, "value out of range")                                                         \
    X(ERR_TOOBIG, -5, "size limit exceeded")                                                       \
    X(ERR_UNKNOWN_TYPE, -6, "unknown message type")                                                \
    X(ERR_VERSION, -7, "unsupported protocol version")                                             \
    X(ERR_IO, -8, "input/output error")                                                            \
    X(ERR_NOTFOUND, -9, "not found")                                                               \
    X(ERR_EXISTS, -10, "already exists")                                                           \
    X(ERR_FULL, -11, "queue full")                                                                 \
    X(ERR_AUTH, -12, "not authenticated")                                                          \
    X(ERR_NOTLEADER, -13, "not the leader")                                                        \
    X(ERR_TIMEOUT, -14, "timed out")                                                               \
    X(ERR_STATE, -15, "invalid state for this operation")                                          \
    X(ERR_CAPACITY, -16, "not enough capacity")                                                    \
    X(ERR_CONFIG, -17, "bad configuration")                                                        \
    X(ERR_SYS, -18, "system call failed")                                                          \
    X(ERR_UNAVAILABLE, -19, "service unavailable")                                                 \
    X(ERR_CANCELLED, -20, "cancelled")                                                             \
    X(ERR_ADMISSION, -21, "admission refused: the deadline cannot be met")                         \
    X(ERR_FENCED, -22, "a newer job manager holds this job (stale epoch)")                         \
    X(ERR_DENIED, -23, "permission denied")                                                        \
    X(ERR_QUOTA, -24, "quota exceeded")

enum err_code {
#define ERR__ENUM(name, value, text) name = value,
    ERR_TABLE(ERR__ENUM)
#undef ERR__ENUM
};

/* Symbolic name of a code ("ERR_NOMEM"); "ERR_?" for a code not in the table. */
const char *err_name(int code);

/* Human-readable text of a code ("out of memory"). */
const char *err_text(int code);

/* Formats into a caller-owned buffer of `cap` bytes (truncating, always NUL-terminated when
 * cap > 0) and returns `code`, so a parser can write `return err_fmt(msg, cap, ERR_PARSE, ...)`. */
int err_fmt(char *msg, size_t cap, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
