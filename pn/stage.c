#include "pn/stage.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

#define STAGE__MEMO_MAX 4096

typedef struct stage__memo {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    mode_t mode;
    char digest[48];
} stage__memo_t;

struct stage {
    char *dir;
    char **allow;
    size_t nallow;
    uint64_t max_bytes;
    pthread_mutex_t lock; /* guards memo, stats and cache_bytes */
    pthread_mutex_t trim; /* one trimming pass at a time */
    uint64_t cache_max, cache_bytes;
    stage__memo_t *memo;
    size_t nmemo, next_evict;
    uint64_t gen; /* bumped by every stage__memo_put (stage_generation) */
    stage_stats_t stats;
};

stage_t *stage_new(const char *dir, const char *const *allow, size_t n, uint64_t max_bytes,
                   char *msg, size_t cap)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        err_fmt(msg, cap, ERR_IO, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    stage_t *s = mem_calloc(1, sizeof *s);
    if (!s || !(s->dir = mem_strdup(dir)) ||
        !(s->memo = mem_calloc(STAGE__MEMO_MAX, sizeof *s->memo)) ||
        (n && !(s->allow = mem_calloc(n, sizeof *s->allow)))) {
        stage_destroy(&s);
        err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(s->allow[i] = mem_strdup(allow[i]))) {
            s->nallow = i;
            stage_destroy(&s);
            err_fmt(msg, cap, ERR_NOMEM, "out of memory");
            return NULL;
        }
    }
    s->nallow = n;
    s->max_bytes = max_bytes ? max_bytes : (1ull << 30);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->trim, NULL);
    return s;
}

void stage_destroy(stage_t **sp)
{
    if (!sp || !*sp)
        return;
    stage_t *s = *sp;
    if (s->memo) {
        for (size_t i = 0; i < s->nmemo; i++)
            mem_free(s->memo[i].path);
        pthread_mutex_destroy(&s->lock);
        pthread_mutex_destroy(&s->trim);
    }
    for (size_t i = 0; i < s->nallow; i++)
        mem_free(s->allow[i]);
    mem_free(s->allow);
    mem_free(s->memo);
    mem_free(s->dir);
    mem_free(s);
    *sp = NULL;
}

void stage_stats(stage_t *s, stage_stats_t *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    pthread_mutex_unlock(&s->lock);
}

static int stage__allowed(const stage_t *s, const char *src)
{
    if (src[0] != '/' || strstr(src, "/../") || strstr(src, "/./") ||
        (strlen(src) >= 3 && strcmp(src + strlen(src) - 3, "/..") == 0))
        return 0;
    if (!s->nallow)
        return 1;
    for (size_t i = 0; i < s->nallow; i++) {
        size_t n = strlen(s->allow[i]);
        while (n > 1 && s->allow[i][n - 1] == '/')
            n--;
        if (strncmp(src, s->allow[i], n) == 0 && (src[n] == '/' || n == 1))
            return 1;
    }
    return 0;
}

static int stage__memo_find(stage_t *s, const char *src, const struct stat *st, char *digest)
{
    for (size_t i = 0; i < s->nmemo; i++) {
        stage__memo_t *m = &s->memo[i];
        if (m->dev == st->st_dev && m->ino == st->st_ino && m->size == st->st_size &&
            m->mode == st->st_mode && m->mtime.tv_sec == st->st_mtim.tv_sec &&
            m->mtime.tv_nsec == st->st_mtim.tv_nsec && strcmp(m->path, src) == 0) {
            memcpy(digest, m->digest, sizeof m->digest);
            return 1;
        }
    }
    return 0;
}

static void stage__memo_put(stage_t *s, const char *src, const struct stat *st, const char *digest)
{
    char *path = mem_strdup(src);
    if (!path)
        return; /* the memo is an optimisation only */
    size_t i;
    if (s->nmemo < STAGE__MEMO_MAX) {
        i = s->nmemo++;
    } else {
        i = s->next_evict++ % STAGE__MEMO_MAX;
        mem_free(s->memo[i].path);
    }
    s->memo[i] = (stage__memo_t){.path = path,
                                 .dev = st->st_dev,
                                 .ino = st->st_ino,
                                 .size = st->st_size,
                                 .mtime = st->st_mtim,
                                 .mode = st->st_mode};
    snprintf(s->memo[i].digest, sizeof s->memo[i].digest, "%s", digest);
    s->gen++;
}

size_t stage_paths(stage_t *s, void (*fn)(void *arg, const char *path), void *arg)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->nmemo;
    for (size_t i = 0; i < n; i++)
        fn(arg, s->memo[i].path);
    pthread_mutex_unlock(&s->lock);
    return n;
}

uint64_t stage_generation(stage_t *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t g = s->gen;
    pthread_mutex_unlock(&s->lock);
    return g;
}

/* Copies src into the cache while hashing it; writes the cache name: the hex digest, with
 * "-x" for an executable source (kept 0555, others 0444), so "./run.sh" works when staged. */
static int stage__copy_in(stage_t *s, int in, int exec, char *digest, size_t dcap, uint64_t *copied,
                          char *msg, size_t cap)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/.tmp.XXXXXX", s->dir);
    int out = mkostemp(tmp, O_CLOEXEC);
    if (out < 0)
        return err_fmt(msg, cap, ERR_IO, "%s: %s", s->dir, strerror(errno));
    zdigest_t *dg = zdigest_new();
    char buf[65536];
    ssize_t n;
    int rc = 0;
    *copied = 0;
    while (dg && (n = read(in, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = err_fmt(msg, cap, ERR_IO, "read: %s", strerror(errno));
            break;
        }
        zdigest_update(dg, (const byte *)buf, (size_t)n);
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rc = err_fmt(msg, cap, ERR_IO, "write cache: %s", strerror(errno));
                break;
            }
            off += w;
        }
        if (rc)
            break;
        *copied += (uint64_t)n;
        if (*copied > s->max_bytes) {
            rc = err_fmt(msg, cap, ERR_TOOBIG, "file larger than %llu bytes",
                         (unsigned long long)s->max_bytes);
            break;
        }
    }
    if (!dg)
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    close(out);
    if (!rc) {
        snprintf(digest, dcap, "%s%s", zdigest_string(dg), exec ? "-x" : "");
        char final[4096];
        snprintf(final, sizeof final, "%s/%s", s->dir, digest);
        chmod(tmp, exec ? 0555 : 0444);
        if (rename(tmp, final) != 0)
            rc = err_fmt(msg, cap, ERR_IO, "rename into cache: %s", strerror(errno));
    }
    if (rc)
        unlink(tmp);
    zdigest_destroy(&dg);
    return rc;
}

typedef struct stage__entry {
    struct timespec mtime;
    off_t size;
    char name[64];
} stage__entry_t;

static int stage__older(const void *a, const void *b)
{
    const stage__entry_t *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

/* Counts the cache and, when `trim`, deletes unlinked entries, oldest first, down to 90% of
 * the bound. */
static int stage__scan(stage_t *s, int trim)
{
    DIR *d = opendir(s->dir);
    if (!d)
        return ERR_IO;
    stage__entry_t *v = NULL;
    size_t n = 0, capv = 0;
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (de->d_name[0] == '.' || strlen(de->d_name) >= 64 ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        total += (uint64_t)st.st_size;
        if (!trim || st.st_nlink != 1)
            continue;
        if (n == capv) {
            size_t c = capv ? capv * 2 : 64;
            stage__entry_t *nv = mem_reallocarray(v, c, sizeof *nv);
            if (!nv)
                break;
            v = nv;
            capv = c;
        }
        v[n].mtime = st.st_mtim;
        v[n].size = st.st_size;
        memcpy(v[n].name, de->d_name, strlen(de->d_name) + 1); /* < 64: checked above */
        n++;
    }
    if (trim && n) {
        qsort(v, n, sizeof *v, stage__older);
        uint64_t goal = s->cache_max / 10 * 9;
        for (size_t i = 0; i < n && total > goal; i++) {
            struct stat st; /* still unlinked? a task may have linked it meanwhile */
            if (fstatat(dirfd(d), v[i].name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_nlink != 1 ||
                unlinkat(dirfd(d), v[i].name, 0) != 0)
                continue;
            total -= (uint64_t)v[i].size;
        }
    }
    closedir(d);
    mem_free(v);
    pthread_mutex_lock(&s->lock);
    s->cache_bytes = total;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int stage_set_limit(stage_t *s, uint64_t bytes)
{
    s->cache_max = bytes;
    return stage__scan(s, 0);
}

uint64_t stage_cache_bytes(stage_t *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t b = s->cache_bytes;
    pthread_mutex_unlock(&s->lock);
    return b;
}

int stage_file(stage_t *s, const char *src, const char *dst_dir, int *hit, char *msg, size_t cap)
{
    *hit = 0;
    if (!stage__allowed(s, src))
        return err_fmt(msg, cap, ERR_INVAL, "%s: not an allowed absolute path", src);
    const char *base = strrchr(src, '/') + 1;
    if (!*base)
        return err_fmt(msg, cap, ERR_INVAL, "%s: no file name", src);
    /* O_NONBLOCK: a FIFO named as a task's file must not hang a staging thread in open() */
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        if (in >= 0)
            close(in);
        return err_fmt(msg, cap, ERR_NOTFOUND, "%s: %s", src,
                       in >= 0 && e == 0 ? "not a regular file" : strerror(e));
    }
    fcntl(in, F_SETFL, fcntl(in, F_GETFL) & ~O_NONBLOCK);
    if ((uint64_t)st.st_size > s->max_bytes) {
        close(in);
        return err_fmt(msg, cap, ERR_TOOBIG, "%s: larger than %llu bytes", src,
                       (unsigned long long)s->max_bytes);
    }
    char digest[48], cached[4096];
    pthread_mutex_lock(&s->lock);
    int known = stage__memo_find(s, src, &st, digest);
    pthread_mutex_unlock(&s->lock);
    if (known) {
        snprintf(cached, sizeof cached, "%s/%s", s->dir, digest);
        known = access(cached, R_OK) == 0;
    }
    int rc = 0;
    uint64_t copied = 0;
    char dst[4096];
    snprintf(dst, sizeof dst, "%s/%s", dst_dir, base);
    for (int tries = 0;; tries++) {
        if (!known) {
            if (tries && lseek(in, 0, SEEK_SET) != 0) {
                rc = err_fmt(msg, cap, ERR_IO, "%s: %s", src, strerror(errno));
                break;
            }
            rc = stage__copy_in(s, in, (st.st_mode & S_IXUSR) != 0, digest, sizeof digest, &copied,
                                msg, cap);
            if (rc)
                break;
            snprintf(cached, sizeof cached, "%s/%s", s->dir, digest);
        }
        unlink(dst);
        if (link(cached, dst) == 0)
            break;
        if (errno == ENOENT && tries < 2) { /* trimmed before we linked it: copy it in again */
            known = 0;
            continue;
        }
        if (symlink(cached, dst) != 0)
            rc = err_fmt(msg, cap, ERR_IO, "%s: %s", dst, strerror(errno));
        break;
    }
    if (!rc && known)
        utimensat(AT_FDCWD, cached, NULL, 0); /* recently used */
    close(in);
    pthread_mutex_lock(&s->lock);
    if (rc) {
        s->stats.errors++;
    } else if (known) {
        s->stats.hits++;
        *hit = 1;
    } else {
        s->stats.misses++;
        s->stats.bytes_copied += copied;
        s->cache_bytes += copied;
        stage__memo_put(s, src, &st, digest);
    }
    int over = !rc && !known && s->cache_max && s->cache_bytes > s->cache_max;
    pthread_mutex_unlock(&s->lock);
    if (over && pthread_mutex_trylock(&s->trim) == 0) {
        stage__scan(s, 1);
        pthread_mutex_unlock(&s->trim);
    }
    return rc;
}
