/* capture.h - runs a shell command line for a CLI test: its stdout into a caller's buffer
 * (truncated to cap - 1 bytes, NUL-terminated), its exit code as the result (-1 when it did not
 * exit normally or could not start); capture_tool runs one of the build's executables. Header-only,
 * so any test can use it without a library. */
#ifndef PADDOCK_TESTS_COMMON_CAPTURE_H
#define PADDOCK_TESTS_COMMON_CAPTURE_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static inline int capture_run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (p == NULL || cap == 0)
        return -1;
    size_t n = 0, r;
    while (n + 1 < cap && (r = fread(out + n, 1, cap - 1 - n, p)) > 0)
        n += r;
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs PADDOCK_BIN_DIR/tool with `args` (a shell fragment) from PADDOCK_SOURCE_DIR, so relative
 * paths name the repository's files, its stderr dropped: capture_run's result, or -1 when
 * either variable is unset (ctest sets both). */
static inline int capture_tool(const char *tool, const char *args, char *out, size_t cap)
{
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    if (bin == NULL || src == NULL)
        return -1;
    char cmd[4096];
    int n = snprintf(cmd, sizeof cmd, "cd '%s' && '%s/%s' %s 2>/dev/null", src, bin, tool, args);
    if (n < 0 || (size_t)n >= sizeof cmd)
        return -1;
    return capture_run(cmd, out, cap);
}

#endif
