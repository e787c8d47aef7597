/* jmd_grow.c - an open job's binds, skips and status files (jm/daemon/jmd_grow.h). */
#include "jm/daemon/jmd_grow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/bindlog.h"
#include "jm/daemon/jmd.h"

#define JMD_GROW__READ     65536 /* bytes of DIR/binds read per tick at most */
#define JMD_GROW__LOG_BAD  10    /* bad lines logged one by one, then counted */
#define JMD_GROW__PATH_MAX 4352

struct jmd_grow {
    struct jmd_grow_stats st;
    int fd;                   /* DIR/binds, -1 until it exists */
    struct bindlog log;       /* DIR/binds read so far */
    unsigned char *bound;     /* per task */
    unsigned char *want_skip; /* per task: skip once its dependencies are done */
    size_t nwant;
    size_t *open; /* bound tasks whose status file is not written yet */
    size_t nopen;
    size_t *stack;     /* ancestors' walk */
    int64_t idle_mono; /* when the job last bound, skipped or finished a task */
    size_t done_seen;  /* succeeded tasks when last looked */
};

static int jmd_grow__safe_id(const char *id)
{
    if (!id[0] || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return 0;
    for (const char *c = id; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-'))
            return 0;
    return 1;
}

/* DIR/status/ID, written whole (tmp file, rename) so a reader sees all of it or nothing. */
static void jmd_grow__status(jmd_t *j, size_t task, const char *text)
{
    struct jmd_grow *g = j->grow;
    const char *id = j->spec->tasks[task].id;
    if (!jmd_grow__safe_id(id)) {
        log_warn("open job: task id \"%s\" cannot name a status file", id);
        return;
    }
    char path[JMD_GROW__PATH_MAX], tmp[JMD_GROW__PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/status/%s", j->spec->open_spool, id);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        log_warn("open job: cannot write %s: %s", tmp, strerror(errno));
        return;
    }
    int ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        log_warn("open job: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return;
    }
    g->st.statuses++;
}

/* Marks the never-bound ancestors of `task` to be skipped (iterative: a DAG may be deep). */
static void jmd_grow__mark_ancestors(jmd_t *j, size_t task)
{
    struct jmd_grow *g = j->grow;
    size_t top = 0;
    g->stack[top++] = task;
    while (top > 0) {
        const struct spec_task *t = &j->spec->tasks[g->stack[--top]];
        for (size_t k = 0; k < t->nafter; k++) {
            size_t p = t->after[k];
            if (g->bound[p] || g->want_skip[p] || !dag_held(j->core.dag, p))
                continue;
            g->want_skip[p] = 1;
            g->nwant++;
            g->stack[top++] = p; /* each task pushed at most once: top < ntasks */
        }
    }
}

static void jmd_grow__bind(jmd_t *j, const char *id)
{
    struct jmd_grow *g = j->grow;
    long ti = spec_task_index(j->spec, id);
    if (ti < 0 || g->bound[ti]) {
        if (g->st.bad_binds++ < JMD_GROW__LOG_BAD)
            log_warn("open job: bind of \"%s\" ignored (%s)", id,
                     ti < 0 ? "no such task" : "bound already");
        return;
    }
    g->bound[ti] = 1;
    g->st.bound++;
    if (g->want_skip[ti]) { /* a descendant was bound first: it runs after all */
        g->want_skip[ti] = 0;
        g->nwant--;
    }
    if (dag_release(j->core.dag, (size_t)ti) != 0)
        log_warn("open job: task \"%s\" was not held", id);
    g->open[g->nopen++] = (size_t)ti;
    jmd_grow__mark_ancestors(j, (size_t)ti);
    log_debug("open job: bound %s", id);
}

static void jmd_grow__bind_cb(void *ctx, const char *id)
{
    jmd_grow__bind(ctx, id);
}

/* The new bytes of DIR/binds: one id per line; a line without its newline yet waits. */
static int jmd_grow__read(jmd_t *j)
{
    struct jmd_grow *g = j->grow;
    if (g->fd < 0) {
        char path[JMD_GROW__PATH_MAX];
        snprintf(path, sizeof path, "%s/binds", j->spec->open_spool);
        g->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (g->fd < 0)
            return 0;
    }
    char buf[4096];
    size_t total = 0, before = g->st.bound, bad = g->log.bad;
    while (total < JMD_GROW__READ) {
        ssize_t r = read(g->fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        total += (size_t)r;
        bindlog_feed(&g->log, buf, (size_t)r, jmd_grow__bind_cb, j);
    }
    for (; bad < g->log.bad; bad++)
        if (g->st.bad_binds++ < JMD_GROW__LOG_BAD)
            log_warn("open job: a bind line over %d bytes, or with a NUL, ignored",
                     BINDLOG_LINE_MAX);
    return g->st.bound > before;
}

/* Skips, in topological order, the marked tasks whose dependencies are done. */
static int jmd_grow__skips(jmd_t *j)
{
    struct jmd_grow *g = j->grow;
    if (g->nwant == 0)
        return 0;
    size_t nt, skipped = 0;
    const size_t *topo = dag_topo(j->core.dag, &nt);
    for (size_t k = 0; k < nt && g->nwant > 0; k++) {
        size_t t = topo[k];
        if (!g->want_skip[t] || dag_pending(j->core.dag, t) != 1)
            continue;
        if (dag_skip(j->core.dag, t, NULL) != 0)
            continue;
        g->want_skip[t] = 0;
        g->nwant--;
        g->st.skipped++;
        skipped++;
        log_info("open job: %s skipped (never bound; a bound task came after it)",
                 j->spec->tasks[t].id);
    }
    return skipped > 0;
}

/* Status files of the bound tasks whose fate is known. */
static void jmd_grow__statuses(jmd_t *j)
{
    struct jmd_grow *g = j->grow;
    size_t w = 0;
    for (size_t i = 0; i < g->nopen; i++) {
        size_t t = g->open[i];
        enum dag_state st = dag_state(j->core.dag, t);
        char text[700];
        if (st == DAG_SUCCEEDED) {
            jmd_grow__status(j, t, "success\n");
        } else if (st == DAG_FAILED || j->outcome != JMD_RUNNING) {
            snprintf(text, sizeof text, "failed\n%s (the job %s)%s%.500s\n",
                     st == DAG_FAILED ? "the task ran out of attempts" : "the job ended before it",
                     j->outcome != JMD_RUNNING ? jmd_outcome_name(j->outcome) : "failed",
                     j->reason[0] ? ": " : "", j->reason);
            jmd_grow__status(j, t, text);
        } else {
            g->open[w++] = t;
        }
    }
    g->nopen = w;
}

int jmd_grow_init(jmd_t *j, char *msg, size_t cap)
{
    if (!j->spec->open)
        return 0;
    size_t n = j->spec->ntasks;
    struct jmd_grow *g = mem_calloc(1, sizeof *g);
    if (!g)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    j->grow = g;
    g->fd = -1;
    bindlog_init(&g->log);
    g->bound = mem_calloc(n, 1);
    g->want_skip = mem_calloc(n, 1);
    g->open = mem_calloc(n, sizeof *g->open);
    g->stack = mem_calloc(n, sizeof *g->stack);
    if (!g->bound || !g->want_skip || !g->open || !g->stack)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory for an open job of %zu tasks", n);
    char path[JMD_GROW__PATH_MAX];
    snprintf(path, sizeof path, "%s/status", j->spec->open_spool);
    if ((mkdir(j->spec->open_spool, 0700) != 0 && errno != EEXIST) ||
        (mkdir(path, 0700) != 0 && errno != EEXIST))
        return err_fmt(msg, cap, ERR_IO, "open job: cannot make %s: %s", path, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        int rc = dag_hold(j->core.dag, i);
        if (rc != 0)
            return err_fmt(msg, cap, rc, "open job: cannot hold task \"%s\": %s",
                           j->spec->tasks[i].id, err_text(rc));
    }
    readyq_clear(j->core.rq); /* nothing is ready until it is bound */
    jmd_grow__read(j);
    jmd_grow__skips(j);
    g->idle_mono = jmd_now(j);
    log_info("open job: %zu tasks held, %zu bound, spool %s", n, g->st.bound, j->spec->open_spool);
    return 0;
}

void jmd_grow_tick(jmd_t *j)
{
    struct jmd_grow *g = j->grow;
    if (!g)
        return;
    int64_t now = jmd_now(j);
    if (j->outcome == JMD_RUNNING) {
        int changed = jmd_grow__read(j);
        changed |= jmd_grow__skips(j);
        size_t done = dag_count(j->core.dag, DAG_SUCCEEDED);
        if (changed || done != g->done_seen || dag_count(j->core.dag, DAG_RUNNING) > 0) {
            g->idle_mono = now;
            g->done_seen = done;
        }
        if (changed)
            jmd_sched_request(j);
        if (dag_done(j->core.dag)) { /* the last tasks were skipped: nothing else will end it */
            jmd_grow__statuses(j);
            jmd_end(j, JMD_SUCCEEDED, "");
        } else if (dag_nheld(j->core.dag) > 0 && dag_count(j->core.dag, DAG_READY) == 0 &&
                   dag_count(j->core.dag, DAG_RUNNING) == 0 &&
                   (double)(now - g->idle_mono) >= j->spec->open_idle_s * 1000.0) {
            char why[200];
            snprintf(why, sizeof why,
                     "open job idle for %.0f s with %zu tasks never bound: the workflow stopped "
                     "submitting",
                     j->spec->open_idle_s, dag_nheld(j->core.dag));
            jmd_end(j, JMD_CANCELLED, why);
        }
    }
    jmd_grow__statuses(j);
}

void jmd_grow_close(jmd_t *j)
{
    struct jmd_grow *g = j->grow;
    if (!g)
        return;
    if (g->open && j->core.dag)
        jmd_grow__statuses(j);
    log_info("open job: %zu tasks bound, %zu skipped, %zu bad bind lines, %zu statuses written",
             g->st.bound, g->st.skipped, g->st.bad_binds, g->st.statuses);
    if (g->fd >= 0)
        close(g->fd);
    mem_free(g->bound);
    mem_free(g->want_skip);
    mem_free(g->open);
    mem_free(g->stack);
    mem_free(g);
    j->grow = NULL;
}

const struct jmd_grow_stats *jmd_grow_stats(const jmd_t *j)
{
    return j->grow ? &j->grow->st : NULL;
}
