/* rm_page_token.c - the cluster page's web token file (rm/rm_page.h): read and made. Apart from
 * rm_page.c so that a client making a cluster's keys (`paddock keygen`) links this alone, not the
 * RM server the page reads (Raft, GLPK and their libraries loaded at every CLI start). */
#include "rm/rm_page.h"

#include "common/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define RM_PAGE__PATH_MAX 4200

static bool rm_page__token_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           strchr("._~+/=-", c) != NULL;
}

static void rm_page__token_path(const char *keys_dir, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", keys_dir, RM_PAGE_TOKEN_FILE);
}

int rm_page_token_load(const char *keys_dir, char *out, size_t cap, char *msg, size_t mcap)
{
    char path[RM_PAGE__PATH_MAX];
    rm_page__token_path(keys_dir, path, sizeof path);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return err_fmt(msg, mcap, errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "%s: %s", path,
                       strerror(errno));
    char line[RM_PAGE_TOKEN_MAX + 8];
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got)
        return err_fmt(msg, mcap, ERR_PARSE, "%s: empty", path);
    size_t a = 0, b = strlen(line);
    while (a < b && (line[a] == ' ' || line[a] == '\t'))
        a++;
    while (b > a && strchr(" \t\r\n", line[b - 1]) != NULL)
        b--;
    size_t n = b - a;
    if (n < RM_PAGE_TOKEN_MIN || n > RM_PAGE_TOKEN_MAX || n + 1 > cap)
        return err_fmt(msg, mcap, ERR_PARSE, "%s: a token has %d to %d characters", path,
                       RM_PAGE_TOKEN_MIN, RM_PAGE_TOKEN_MAX);
    for (size_t i = a; i < b; i++)
        if (!rm_page__token_char(line[i]))
            return err_fmt(msg, mcap, ERR_PARSE, "%s: character %zu is not allowed in a token",
                           path, i - a + 1);
    memcpy(out, line + a, n);
    out[n] = '\0';
    return 0;
}

int rm_page_token_create(const char *keys_dir, bool force, char *msg, size_t cap)
{
    char path[RM_PAGE__PATH_MAX], tmp[RM_PAGE__PATH_MAX + 32];
    rm_page__token_path(keys_dir, path, sizeof path);
    if (!force && access(path, F_OK) == 0)
        return 0;
    unsigned char raw[32];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return err_fmt(msg, cap, ERR_SYS, "getrandom: %s", strerror(errno));
        got += (size_t)r;
    }
    char text[2 * sizeof raw + 2];
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(text + 2 * i, 3, "%02x", raw[i]);
    text[2 * sizeof raw] = '\n';
    text[2 * sizeof raw + 1] = '\0';
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_fmt(msg, cap, ERR_IO, "%s: %s", tmp, strerror(errno));
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    int e = errno;
    ok = close(fd) == 0 && ok;
    /* without force, link() keeps a token another process made meanwhile (EEXIST is fine);
     * with force, rename() replaces it atomically */
    int rc = 0;
    if (!ok)
        rc = err_fmt(msg, cap, ERR_IO, "%s: %s", tmp, strerror(e));
    else if (force ? rename(tmp, path) != 0 : (link(tmp, path) != 0 && errno != EEXIST))
        rc = err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno));
    unlink(tmp);
    return rc;
}
