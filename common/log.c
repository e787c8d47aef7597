#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"

static char log__component[64] = "paddock";
static enum log_level log__level = LOG_LEVEL_INFO;
static int log__journal = -1; /* -1: not decided yet */
static int log__fd = 2;

static const char *const log__names[] = {"debug", "info", "warn", "error"};
/* syslog priorities: debug 7, info 6, warning 4, err 3 */
static const int log__prio[] = {7, 6, 4, 3};

void log_init(const char *component)
{
    if (component != NULL) {
        size_t n = strnlen(component, sizeof log__component - 1);
        memcpy(log__component, component, n);
        log__component[n] = '\0';
    }
    const char *js = getenv("JOURNAL_STREAM");
    log__journal = js != NULL && js[0] != '\0';
    enum log_level level;
    if (component != NULL && log_level_parse(getenv("PADDOCK_LOG_LEVEL"), &level) == 0)
        log__level = level;
}

void log_set_journal(bool journal)
{
    log__journal = journal;
}

void log_set_level(enum log_level level)
{
    if (level >= LOG_LEVEL_DEBUG && level <= LOG_LEVEL_ERROR)
        log__level = level;
}

enum log_level log_get_level(void)
{
    return log__level;
}

bool log_enabled(enum log_level level)
{
    return level >= log__level;
}

int log_level_parse(const char *text, enum log_level *out)
{
    if (text == NULL)
        return ERR_INVAL;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, log__names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    if (strcasecmp(text, "warning") == 0) {
        *out = LOG_LEVEL_WARN;
        return 0;
    }
    return ERR_INVAL;
}

const char *log_level_name(enum log_level level)
{
    if (level < LOG_LEVEL_DEBUG || level > LOG_LEVEL_ERROR)
        return "?";
    return log__names[level];
}

void log_set_fd(int fd)
{
    log__fd = fd;
}

/* One write(2) per line so concurrent writers sharing stderr do not interleave mid-line. */
static void log__write(const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(log__fd, buf, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += w;
        len -= (size_t)w;
    }
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level < log__level || level < LOG_LEVEL_DEBUG || level > LOG_LEVEL_ERROR)
        return;
    if (log__journal < 0)
        log_init(NULL);
    int saved_errno = errno; /* callers often log strerror(errno) after us */
    char line[LOG_LINE_MAX];
    const size_t cap = sizeof line - 1; /* room for the newline */
    int n;
    if (log__journal) {
        n = snprintf(line, cap, "<%d>%s: ", log__prio[level], log__component);
    } else {
        char ts[CLOCK_RFC3339_SIZE];
        clock_format_rfc3339(clock_wall_ms(), ts);
        n = snprintf(line, cap, "%s %s[%ld] %s: ", ts, log__component, (long)getpid(),
                     log__names[level]);
    }
    size_t len = n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(line + len, cap - len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        if ((size_t)n >= cap - len) {
            len = cap - 1;
            memcpy(line + len - 3, "...", 3);
        } else {
            len += (size_t)n;
        }
    }
    while (len > 0 && line[len - 1] == '\n')
        len--;
    line[len++] = '\n';
    log__write(line, len);
    errno = saved_errno;
}
