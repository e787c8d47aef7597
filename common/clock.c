#include "common/clock.h"

#include <stdio.h>
#include <time.h>

static struct timespec clock__read(clockid_t id)
{
    struct timespec ts;
    /* Cannot fail for these clock ids on Linux; a zero time is a safe fallback. */
    if (clock_gettime(id, &ts) != 0) {
        ts.tv_sec = 0;
        ts.tv_nsec = 0;
    }
    return ts;
}

uint64_t clock_mono_ns(void)
{
    struct timespec ts = clock__read(CLOCK_MONOTONIC);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_ms(void)
{
    return clock_mono_ns() / 1000000u;
}

int64_t clock_wall_ns(void)
{
    struct timespec ts = clock__read(CLOCK_REALTIME);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

int64_t clock_wall_ms(void)
{
    struct timespec ts = clock__read(CLOCK_REALTIME);
    return (int64_t)ts.tv_sec * 1000 + (int64_t)ts.tv_nsec / 1000000;
}

char *clock_format_rfc3339(int64_t wall_ms, char *out)
{
    int64_t sec = wall_ms / 1000;
    int64_t ms = wall_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        sec -= 1;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL) {
        snprintf(out, CLOCK_RFC3339_SIZE, "?");
        return out;
    }
    /* The compiler cannot know tm's fields are small: format wide, then copy. */
    char buf[128];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms);
    snprintf(out, CLOCK_RFC3339_SIZE, "%.*s", CLOCK_RFC3339_SIZE - 1, buf);
    return out;
}
