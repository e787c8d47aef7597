/* node_dir.c - the PN's task directories: setting one up on the thread pool (its output
 * files and staged files), and removing or recycling finished tasks' directories and cgroups
 * off the loop, an emptied directory becoming a spare for the next task. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "pn/node_internal.h"

static int node__rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void node__remove_dir(const char *dir)
{
    nftw(dir, node__rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *node__at(const node_t *n, const char *path, int *dfd)
{
    size_t k = strlen(n->tasks_dir);
    if (n->tasks_dfd >= 0 && strncmp(path, n->tasks_dir, k) == 0 && path[k] == '/' && path[k + 1] &&
        !strchr(path + k + 1, '/')) {
        *dfd = n->tasks_dfd;
        return path + k + 1;
    }
    *dfd = AT_FDCWD;
    return path;
}

/* A spare's path as (directory fd, name) for the *at calls: WORK/spare held open and the
 * number; sp (cap bytes) receives the name, or the whole path when WORK/spare is not open. */
static int node__spare_at(const node_t *n, uint64_t seq, char *sp, size_t cap)
{
    if (n->spare_dfd >= 0) {
        snprintf(sp, cap, "%llu", (unsigned long long)seq);
        return n->spare_dfd;
    }
    snprintf(sp, cap, "%s/%llu", n->spare_dir, (unsigned long long)seq);
    return AT_FDCWD;
}

/* Renames between task directories and spares, through the held directories. */
static int node__dir_to_spare(const node_t *n, const char *dir, uint64_t seq)
{
    int fd, sd;
    char sp[4200];
    const char *d = node__at(n, dir, &fd);
    sd = node__spare_at(n, seq, sp, sizeof sp);
    return renameat(fd, d, sd, sp);
}

static int node__dir_to_dir(const node_t *n, const char *from, const char *to)
{
    int fd, td;
    const char *f = node__at(n, from, &fd), *t = node__at(n, to, &td);
    return renameat(fd, f, td, t);
}

static int node__spare_to_dir(const node_t *n, uint64_t seq, const char *to)
{
    int sd, td;
    char sp[4200];
    sd = node__spare_at(n, seq, sp, sizeof sp);
    const char *t = node__at(n, to, &td);
    return renameat(sd, sp, td, t);
}

/* Setting a task up on the thread pool, off the loop: its directory, its output files and
 * its staged files (creating inodes is what costs most per small task on ext4). The work
 * function touches only the request it owns. */
typedef struct node__setup_req {
    uv_work_t work;
    node_t *n;
    node__task_t *t;
    char **paths;
    uint32_t npaths;
    char *dir;
    char *spare; /* an emptied directory to rename into place, or NULL: make one */
    uid_t uid;
    gid_t gid;
    uint32_t hits, misses;
    int rc;
    char msg[512];
} node__setup_req_t;

static int node__touch(const char *dir, const char *name, uid_t uid, gid_t gid)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (uid != (uid_t)-1 && fchown(fd, uid, gid) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

static void node__setup_work(uv_work_t *w)
{
    node__setup_req_t *r = w->data;
    if (r->spare && rename(r->spare, r->dir) != 0) {
        node__remove_dir(r->spare); /* should not happen: make a new one */
        mem_free(r->spare);
        r->spare = NULL;
    }
    if (r->spare) {
        /* an emptied directory of an earlier task, with its stdout and stderr (node__recycle) */
    } else if (mkdir(r->dir, 0755) != 0 ||
               (r->uid != (uid_t)-1 && chown(r->dir, r->uid, r->gid) != 0) ||
               node__touch(r->dir, "stdout", r->uid, r->gid) != 0 ||
               node__touch(r->dir, "stderr", r->uid, r->gid) != 0) {
        r->rc = err_fmt(r->msg, sizeof r->msg, ERR_IO, "task directory %s: %s", r->dir,
                        strerror(errno));
        return;
    }
    for (uint32_t i = 0; i < r->npaths && !r->rc; i++) {
        int hit = 0;
        r->rc = stage_file(r->n->stage, r->paths[i], r->dir, &hit, r->msg, sizeof r->msg);
        if (!r->rc) {
            r->hits += hit ? 1 : 0;
            r->misses += hit ? 0 : 1;
        }
    }
}

static void node__setup_free(node__setup_req_t *r)
{
    for (uint32_t i = 0; i < r->npaths; i++)
        mem_free(r->paths[i]);
    mem_free(r->paths);
    mem_free(r->dir);
    mem_free(r->spare);
    mem_free(r);
}

static void node__setup_done(uv_work_t *w, int status)
{
    node__setup_req_t *r = w->data;
    node_t *n = r->n;
    node__task_t *t = r->t;
    n->busy--;
    t->staging = 0;
    if (t->forgotten) {
        node__trash_task(n, t->dir);
        node__task_free(t);
    } else if (t->state == PROTO_TASK_STAGING || t->state == PROTO_TASK_QUEUED) {
        t->cache_hits = r->hits;
        t->cache_misses = r->misses;
        if (status != 0 && !r->rc)
            r->rc = err_fmt(r->msg, sizeof r->msg, ERR_CANCELLED, "set-up cancelled");
        if (r->rc) {
            char reason[600];
            snprintf(reason, sizeof reason, "%s%s", t->nfiles ? "staging: " : "", r->msg);
            queue_cancel(n->queue, t->id);
            node__set_state(n, t, PROTO_TASK_FAILED, reason);
            node__finish(n, t);
        } else {
            queue_hold(n->queue, t->id, 0);
            if (t->unsent)
                node__note_unsent(n, t);
        }
        node__schedule_soon(n);
    }
    node__setup_free(r);
}

static void node__spare_push(node_t *n, uint64_t seq);

void node__handoffs_flush(node_t *n)
{
    while (n->nhandoff > 0) {
        char *h = n->handoff[--n->nhandoff];
        if (!n->stopping && n->nspares + n->spares_pending < NODE__SPARE_MAX &&
            node__dir_to_spare(n, h, n->spare_seq + 1) == 0)
            node__spare_push(n, ++n->spare_seq);
        else
            node__remove_dir(h); /* stopping, or more than the spares keep */
        mem_free(h);
    }
}

int node__spare_take(node_t *n, const char *dir, uid_t uid)
{
    if (uid != n->uid) /* spares are the run_as user's */
        return -1;
    while (n->nhandoff > 0) { /* a quiet directory of this pass: one rename */
        char *h = n->handoff[--n->nhandoff];
        int ok = node__dir_to_dir(n, h, dir) == 0;
        if (!ok)
            node__remove_dir(h);
        mem_free(h);
        if (ok) {
            n->c.dirs_handed++;
            return 0;
        }
    }
    if (n->nspares == 0 || node__spare_to_dir(n, n->spares[n->nspares - 1], dir) != 0)
        return -1;
    n->nspares--;
    return 0;
}

int node__dir_at_start(node_t *n, node__task_t *t)
{
    if (t->nfiles != 0 || (n->nspares > 0 && t->uid == n->uid))
        return 0;
    t->dir_lazy = 1;
    n->c.dirs_lazy++;
    node__schedule_soon(n);
    return 1;
}

int node__setup_start(node_t *n, node__task_t *t)
{
    node__setup_req_t *r = mem_calloc(1, sizeof *r);
    if (!r)
        return ERR_NOMEM;
    r->n = n;
    r->t = t;
    r->uid = t->uid;
    r->gid = t->gid;
    r->work.data = r;
    r->dir = mem_strdup(t->dir);
    r->paths = t->nfiles ? mem_calloc(t->nfiles, sizeof *r->paths) : NULL;
    int ok = r->dir && (r->paths || !t->nfiles);
    for (uint32_t i = 0; ok && i < t->nfiles; i++, r->npaths++)
        ok = (r->paths[i] = mem_strdup(t->files[i].path)) != NULL;
    if (ok && n->nspares > 0 && t->uid == n->uid && t->nfiles == 0 &&
        node__spare_to_dir(n, n->spares[n->nspares - 1], r->dir) == 0) {
        /* Nothing to stage and an emptied directory at hand: one rename, here. The round trip
           through the thread pool (a wake-up of a worker, an async wake-up of this loop, one
           more pass of it) cost more of the PN's CPU per task than the rename. */
        n->nspares--;
        node__setup_free(r);
        queue_hold(n->queue, t->id, 0);
        node__schedule_soon(n);
        return 0;
    }
    if (ok && n->nspares > 0 && t->uid == n->uid) { /* spares are the run_as user's */
        char sp[4200];
        snprintf(sp, sizeof sp, "%s/%llu", n->spare_dir,
                 (unsigned long long)n->spares[n->nspares - 1]);
        if ((r->spare = mem_strdup(sp)) != NULL)
            n->nspares--;
    }
    /* a spare that could not be renamed above: left to the pool (node__setup_work) */
    if (!ok || uv_queue_work(n->loop, &r->work, node__setup_work, node__setup_done) != 0) {
        if (r->spare)
            n->nspares++; /* still there */
        node__setup_free(r);
        return ERR_NOMEM;
    }
    t->staging = 1;
    n->busy++;
    return 0;
}

/* Removing finished tasks' directories, also on the thread pool. */
typedef struct node__trash_req {
    uv_work_t work;
    node_t *n;
    node__trash_item_t *items;
    size_t nitems;
} node__trash_req_t;

static void node__trash_one(const node_t *n, node__trash_item_t *e);

static void node__trash_work(uv_work_t *w)
{
    node__trash_req_t *r = w->data;
    for (size_t i = 0; i < r->nitems; i++)
        node__trash_one(r->n, &r->items[i]);
}

/* SPARE/<seq> is ready for a new task. */
static void node__spare_push(node_t *n, uint64_t seq)
{
    if (n->nspares == n->capspares) {
        size_t cap = n->capspares ? n->capspares * 2 : 64;
        uint64_t *v = mem_reallocarray(n->spares, cap, sizeof *v);
        if (!v) {
            char sp[4200];
            snprintf(sp, sizeof sp, "%s/%llu", n->spare_dir, (unsigned long long)seq);
            node__remove_dir(sp); /* out of memory: not worth keeping */
            return;
        }
        n->spares = v;
        n->capspares = cap;
    }
    n->spares[n->nspares++] = seq;
}

/* A recycled directory is a spare now; one that could not be was removed. */
static void node__spare_back(node_t *n, const node__trash_item_t *e)
{
    if (e->kind != 'r')
        return;
    n->spares_pending--;
    if (e->ok)
        node__spare_push(n, e->seq);
}

/* One of a quiet directory's two output files, reusable as it is: a regular file of `want`,
 * one link, empty, its mode the PN's, and nobody else holding it open (a write lease is
 * granted; see node__recycle). */
static int node__quiet_file(const node_t *n, int dfd, const char *name, uid_t want)
{
    int fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat fs;
    int ok = fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_nlink == 1 && fs.st_size == 0 &&
             fs.st_uid == want && (fs.st_mode & 07777) == n->file_mode &&
             fcntl(fd, F_SETLEASE, F_WRLCK) == 0;
    close(fd); /* which removes the lease: no F_UNLCK call first */
    return ok;
}

int node__give_back_quiet(node_t *n, const char *dir)
{
    int at;
    const char *name = node__at(n, dir, &at);
    int dfd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return NODE__DIR_KEEP;
    /* what is in it: "stdout" and "stderr", nothing else (read without libc's DIR, whose
       fdopendir costs three more system calls per task) */
    char buf[512] __attribute__((aligned(8)));
    int seen = 0, other = 0;
    for (;;) {
        long got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        if (got <= 0) {
            other |= got < 0;
            break;
        }
        for (long off = 0; off < got;) {
            struct node__dirent {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *de = (struct node__dirent *)(buf + off);
            off += de->reclen;
            if (strcmp(de->name, ".") == 0 || strcmp(de->name, "..") == 0)
                continue;
            if (strcmp(de->name, "stdout") == 0 || strcmp(de->name, "stderr") == 0)
                seen++;
            else
                other = 1;
        }
        if (other)
            break;
    }
    struct stat st;
    uid_t want = n->dir_uid;
    int rc = NODE__DIR_KEEP;
    if (!other && seen == 2) {
        /* left nothing: reused here, one rename, when everything is as a new directory's */
        int reuse = !n->stopping && n->nspares + n->spares_pending < NODE__SPARE_MAX &&
                    fstat(dfd, &st) == 0 && st.st_uid == want &&
                    (st.st_mode & 07777) == n->dir_mode;
        int out = reuse && node__quiet_file(n, dfd, "stdout", want);
        int err = out && node__quiet_file(n, dfd, "stderr", want);
        if (err && n->nhandoff < NODE__HANDOFF_MAX &&
            (n->handoff[n->nhandoff] = mem_strdup(dir)) != NULL) {
            n->nhandoff++; /* for a start in this pass, else to the spares at its end */
            node__pass_end_arm(n);
            if (!n->pass_end_armed)
                node__handoffs_flush(n);
            rc = NODE__DIR_REUSED;
        } else if (err && node__dir_to_spare(n, dir, n->spare_seq + 1) == 0) {
            node__spare_push(n, ++n->spare_seq);
            rc = NODE__DIR_REUSED;
        } else if (!out || !err) {
            /* empty but not as expected: the pool's full recycling decides (node__recycle) */
            struct stat a, b;
            if (fstatat(dfd, "stdout", &a, AT_SYMLINK_NOFOLLOW) == 0 &&
                fstatat(dfd, "stderr", &b, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(a.st_mode) &&
                S_ISREG(b.st_mode) && a.st_size == 0 && b.st_size == 0)
                rc = NODE__DIR_EMPTY;
        }
    }
    close(dfd);
    return rc;
}

static void node__trash_done(uv_work_t *w, int status)
{
    node__trash_req_t *r = w->data;
    (void)status;
    r->n->busy--;
    for (size_t i = 0; i < r->nitems; i++) {
        node__spare_back(r->n, &r->items[i]);
        mem_free(r->items[i].path);
    }
    mem_free(r->items);
    mem_free(r);
}

/* Empties the directory of a task that has ended and been forgotten, for another task: its
 * stdout and stderr are kept (truncated; their inodes are what a new task would allocate) and
 * anything else is removed; then it is renamed to SPARE/<seq>. The task's user owns what is
 * in it, so nothing is followed and anything unexpected (a file not owned by that user, a
 * link, a FIFO) is removed rather than reused. 0, or -1 when the directory cannot be reused
 * (the caller removes it). */
static int node__recycle(const node_t *n, const char *dir, uint64_t seq)
{
    uid_t want = n->dir_uid;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    struct stat st;
    int dup_fd = -1, rc = 0, have = 0; /* have: 1 stdout, 2 stderr kept */
    DIR *d = NULL;
    if (fstat(dfd, &st) != 0 || st.st_uid != want || (dup_fd = dup(dfd)) < 0 ||
        !(d = fdopendir(dup_fd))) {
        if (dup_fd >= 0 && !d)
            close(dup_fd);
        close(dfd);
        return -1;
    }
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        int bit = strcmp(nm, "stdout") == 0 ? 1 : strcmp(nm, "stderr") == 0 ? 2 : 0;
        if (bit) {
            int fd = openat(dfd, nm, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            struct stat fs;
            /* a write lease is granted only when nobody else has the file open: a process
               that escaped its task (setsid) and still writes there must not write into the
               next task's output, so such a file is replaced, not reused */
            int keep = fd >= 0 && fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_nlink == 1 &&
                       fs.st_uid == want && fcntl(fd, F_SETLEASE, F_WRLCK) == 0;
            if (keep)
                fcntl(fd, F_SETLEASE, F_UNLCK);
            keep = keep && (fs.st_size == 0 || ftruncate(fd, 0) == 0) &&
                   ((fs.st_mode & 07777) == n->file_mode || fchmod(fd, n->file_mode) == 0);
            if (fd >= 0)
                close(fd);
            if (keep) {
                have |= bit;
                continue;
            }
        }
        if (unlinkat(dfd, nm, 0) == 0)
            continue;
        if (errno != EISDIR) {
            rc = -1;
            break;
        }
        char sub[4400];
        snprintf(sub, sizeof sub, "%s/%s", dir, nm);
        node__remove_dir(sub); /* not followed (FTW_PHYS), itself included */
        if (faccessat(dfd, nm, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            rc = -1;
    }
    closedir(d);
    for (int bit = 1; !rc && bit <= 2; bit++) { /* the task removed one: make it again */
        if (have & bit)
            continue;
        int fd = openat(dfd, bit == 1 ? "stdout" : "stderr",
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || (n->uid != (uid_t)-1 && fchown(fd, n->uid, n->gid) != 0))
            rc = -1;
        if (fd >= 0)
            close(fd);
    }
    if (!rc && (st.st_mode & 07777) != n->dir_mode && fchmod(dfd, n->dir_mode) != 0)
        rc = -1;
    close(dfd);
    char sp[4200];
    snprintf(sp, sizeof sp, "%s/%llu", n->spare_dir, (unsigned long long)seq);
    return !rc && rename(dir, sp) == 0 ? 0 : -1;
}

static void node__trash_one(const node_t *n, node__trash_item_t *e)
{
    if (e->kind == 'c') {
        taskcg_remove(e->path);
    } else if (e->kind == 'r' && node__recycle(n, e->path, e->seq) == 0) {
        e->ok = 1;
    } else {
        node__remove_dir(e->path);
    }
}

static void node__trash_add(node_t *n, char kind, const char *path)
{
    if (n->ntrash == n->captrash) {
        size_t cap = n->captrash ? n->captrash * 2 : 64;
        node__trash_item_t *v = mem_reallocarray(n->trash, cap, sizeof *v);
        if (v) {
            n->trash = v;
            n->captrash = cap;
        }
    }
    node__trash_item_t e = {.kind = kind};
    if (kind == 'r') {
        e.seq = ++n->spare_seq;
        n->spares_pending++;
    }
    e.path = n->ntrash < n->captrash ? mem_strdup(path) : NULL;
    if (!e.path) { /* no memory to defer it: do it now */
        e.path = (char *)path;
        node__trash_one(n, &e);
        node__spare_back(n, &e);
        return;
    }
    n->trash[n->ntrash++] = e;
}

void node__trash(node_t *n, const char *dir)
{
    if (dir && !n->cfg->keep_task_dirs)
        node__trash_add(n, 'd', dir);
}

void node__trash_task(node_t *n, const char *dir)
{
    if (!dir || n->cfg->keep_task_dirs)
        return;
    int reuse = !n->stopping && n->nspares + n->spares_pending < NODE__SPARE_MAX;
    node__trash_add(n, reuse ? 'r' : 'd', dir);
}

void node__trash_cg(node_t *n, const char *path)
{
    if (path)
        node__trash_add(n, 'c', path);
}

void node__trash_flush(node_t *n, int sync)
{
    if (!n->ntrash)
        return;
    node__trash_req_t *r = sync ? NULL : mem_calloc(1, sizeof *r);
    if (r) {
        r->n = n;
        r->work.data = r;
        r->items = n->trash;
        r->nitems = n->ntrash;
        if (uv_queue_work(n->loop, &r->work, node__trash_work, node__trash_done) == 0) {
            n->busy++;
            n->trash = NULL;
            n->ntrash = n->captrash = 0;
            return;
        }
        mem_free(r);
    }
    for (size_t i = 0; i < n->ntrash; i++) {
        node__trash_one(n, &n->trash[i]);
        node__spare_back(n, &n->trash[i]);
        mem_free(n->trash[i].path);
    }
    n->ntrash = 0;
}
