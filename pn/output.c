/* output.c - a task's output files read back (output.h). */
#include "pn/output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/limits.h"

/* How much of stderr's end a reason is built from: enough for a few lines. */
#define OUTPUT__TAIL_READ 4096u

/* Opens DIR/stdout or DIR/stderr for reading, without following a link; its size in *size. */
static int output__open(const char *dir, uint32_t stream, uint64_t *size, char *msg, size_t cap)
{
    const char *name = stream == OUTPUT_STDOUT ? "stdout" : "stderr";
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return err_fmt(msg, cap, ERR_INVAL, "task directory path too long");
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR
                   ? err_fmt(msg, cap, ERR_NOTFOUND, "the task's %s is gone", name)
                   : err_fmt(msg, cap, ERR_IO, "%s: %s", name, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_fmt(msg, cap, ERR_IO, "%s: not a regular file", name);
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Reads len bytes at off into buf (fewer at the end of the file); the count, or -1. */
static ssize_t output__pread(int fd, uint8_t *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int output_read(const char *dir, uint32_t stream, uint64_t offset, uint64_t tail, uint32_t max,
                uint8_t **data, uint32_t *len, uint64_t *start, uint64_t *size, char *msg,
                size_t cap)
{
    *data = NULL;
    *len = 0;
    *start = 0;
    *size = 0;
    if (stream != OUTPUT_STDOUT && stream != OUTPUT_STDERR)
        return err_fmt(msg, cap, ERR_INVAL, "stream %u: 0 (stdout) or 1 (stderr)", stream);
    if (dir == NULL) {
        *start = offset;
        return 0; /* the task left nothing: its directory went back at once */
    }
    if (max == 0 || max > PROTO_MAX_OUTPUT_CHUNK)
        max = PROTO_MAX_OUTPUT_CHUNK;
    int fd = output__open(dir, stream, size, msg, cap);
    if (fd < 0)
        return fd;
    uint64_t from = offset;
    if (offset == 0 && tail > 0)
        from = *size > tail ? *size - tail : 0;
    if (from > *size)
        from = *size; /* asked past the end (a file cut shorter): nothing yet */
    *start = from;
    uint64_t want = *size - from < max ? *size - from : max;
    int rc = 0;
    if (want > 0) {
        uint8_t *buf = mem_alloc((size_t)want);
        ssize_t got = buf != NULL ? output__pread(fd, buf, (size_t)want, from) : -1;
        if (buf == NULL)
            rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        else if (got < 0)
            rc = err_fmt(msg, cap, ERR_IO, "read: %s", strerror(errno));
        if (rc != 0 || got == 0) {
            mem_free(buf);
        } else {
            *data = buf;
            *len = (uint32_t)got;
        }
    }
    close(fd);
    return rc;
}

size_t output_tail_line(const uint8_t *raw, size_t n, size_t max, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    out[0] = '\0';
    if (raw == NULL || n == 0 || max == 0)
        return 0;
    /* Lines from the end, non-empty ones, until `max` is reached; the first line may be a
       fragment when the read began mid-file. */
    char *join = mem_alloc(n * 2 + 8);
    if (join == NULL)
        return 0;
    size_t jl = 0;
    size_t end = n;
    while (end > 0 && jl <= max) {
        size_t s = end;
        while (s > 0 && raw[s - 1] != '\n')
            s--;
        size_t e = end;
        while (e > s && (raw[e - 1] == ' ' || raw[e - 1] == '\t' || raw[e - 1] == '\r' ||
                         raw[e - 1] == '\n'))
            e--;
        if (e > s) {
            /* prepend: line, then " | " if something follows */
            size_t add = e - s + (jl > 0 ? 3 : 0);
            memmove(join + add, join, jl);
            for (size_t k = s; k < e; k++) {
                uint8_t c = raw[k];
                join[k - s] = c >= 0x20 && c < 0x7f ? (char)c : c == '\t' ? ' ' : '?';
            }
            if (jl > 0)
                memcpy(join + (e - s), " | ", 3);
            jl += add;
        }
        end = s > 0 ? s - 1 : 0;
    }
    const char *from = join;
    size_t len = jl;
    bool cut = false;
    if (len > max) {
        cut = max > 3; /* marked "..." when there is room for more than the mark */
        size_t keep = cut ? max - 3 : max;
        from = join + (len - keep);
        len = keep;
    }
    int w = snprintf(out, cap, "%s%.*s", cut ? "..." : "", (int)len, from);
    mem_free(join);
    return w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap - 1;
}

size_t output_stderr_tail(const char *dir, size_t max, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    out[0] = '\0';
    if (dir == NULL || max == 0)
        return 0;
    uint8_t *raw = NULL;
    uint32_t n = 0;
    uint64_t start = 0, size = 0;
    char msg[128];
    if (output_read(dir, OUTPUT_STDERR, 0, OUTPUT__TAIL_READ, OUTPUT__TAIL_READ, &raw, &n, &start,
                    &size, msg, sizeof msg) != 0) {
        mem_free(raw);
        return 0;
    }
    size_t w = output_tail_line(raw, n, max, out, cap);
    mem_free(raw);
    return w;
}

void output_reason_append(const char *dir, char *reason, size_t cap)
{
    char tail[OUTPUT_REASON_TAIL + 1];
    if (output_stderr_tail(dir, OUTPUT_REASON_TAIL, tail, sizeof tail) == 0)
        return;
    size_t l = strlen(reason);
    if (l + 1 < cap)
        snprintf(reason + l, cap - l, "; stderr: %s", tail);
}

void output_safe_name(const char *in, char *out, size_t cap)
{
    /* the rule of the node's directory names (pn/node_run.c node__safe) */
    size_t k = 0;
    for (; *in && k + 1 < cap && k < 48; in++) {
        char c = *in;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || (c == '.' && k > 0);
        out[k] = ok ? c : '_';
        k++;
    }
    if (cap > 0)
        out[k] = '\0';
}

int output_find_dir(const char *tasks_dir, const char *job, const char *task, uint32_t attempt,
                    char *out, size_t cap, uint32_t *found)
{
    char sj[64], st[64], mid[140];
    output_safe_name(job, sj, sizeof sj);
    output_safe_name(task, st, sizeof st);
    int ml = snprintf(mid, sizeof mid, "-%s-%s-", sj, st);
    DIR *d = opendir(tasks_dir);
    if (d == NULL)
        return ERR_NOTFOUND;
    unsigned long long best_id = 0;
    uint32_t best_att = 0;
    bool have = false;
    struct dirent *e;
    char name[256] = "";
    while ((e = readdir(d)) != NULL) {
        const char *p = e->d_name;
        if (*p < '0' || *p > '9')
            continue;
        char *q;
        errno = 0;
        unsigned long long id = strtoull(p, &q, 10);
        if (errno != 0 || strncmp(q, mid, (size_t)ml) != 0)
            continue;
        const char *a = q + ml;
        if (*a < '0' || *a > '9')
            continue;
        unsigned long att = strtoul(a, &q, 10);
        if (*q != '\0' || att > UINT32_MAX || (attempt != 0 && att != attempt))
            continue;
        if (!have || att > best_att || (att == best_att && id > best_id)) {
            have = true;
            best_id = id;
            best_att = (uint32_t)att;
            snprintf(name, sizeof name, "%s", e->d_name);
        }
    }
    closedir(d);
    if (!have)
        return ERR_NOTFOUND;
    if ((size_t)snprintf(out, cap, "%s/%s", tasks_dir, name) >= cap)
        return ERR_NOTFOUND;
    *found = best_att;
    return 0;
}
