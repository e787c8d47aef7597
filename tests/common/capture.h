/* capture.h - runs a shell command line for a CLI test: its stdout into a caller's buffer
 * (truncated to cap - 1 bytes, NUL-terminated), its exit code as the result (-1 when it did not
 * exit normally or could not start). Header-only, so any test can use it without a library. */
#ifndef PADDOCK_TESTS_COMMON_CAPTURE_H
#define PADDOCK_TESTS_COMMON_CAPTURE_H

#include <stddef.h>
#include <stdio.h>
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

#endif
