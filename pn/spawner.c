/* spawner.c - threads that start task processes for the PN's loop (spawner.h). */
#include "pn/spawner.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/mem.h"

#define SPAWNER_MAX_THREADS 64

/* One request; the same node carries its result back, so a thread never allocates. */
typedef struct spawner_req {
    struct spawner_req *next;
    exec_spec_t spec;
    char *out, *err; /* owned copies of the output paths */
    spawner_result_t r;
} spawner_req_t;

struct spawner {
    uv_loop_t *loop;
    uv_async_t *async;
    spawner_done_fn *done;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t work; /* a request queued, or stopping */
    pthread_cond_t idle; /* a result posted (spawner_flush waits on it) */
    spawner_req_t *head, *tail;
    spawner_req_t *dhead, *dtail;
    size_t pending;    /* submitted, result not yet delivered */
    size_t inflight;   /* submitted, result not yet posted */
    size_t queued;     /* in head..tail */
    unsigned sleeping; /* threads waiting on `work` */
    unsigned deferred; /* spawner_defer's depth: submits do not wake a thread */
    int unwoken;       /* a request submitted while deferred */
    int stopping;
    unsigned nthreads;
    pthread_t threads[SPAWNER_MAX_THREADS];
};

/* Results a thread holds before posting them: one wake-up of the loop for a batch, held no
 * longer than SPAWNER_POST_NS after the first, checked around each spawn (so a result waits at
 * most that or one more spawn: slow spawns do not hold back a RUNNING). */
#define SPAWNER_POST_BATCH 16
#define SPAWNER_POST_NS    2000000u
/* Requests left queued above which a thread that takes one wakes a sleeping peer. */
#define SPAWNER_PEER_QUEUE 4

static void spawner__post(spawner_t *s, spawner_req_t *h, spawner_req_t *t, size_t k)
{
    pthread_mutex_lock(&s->mu);
    if (s->dtail)
        s->dtail->next = h;
    else
        s->dhead = h;
    s->dtail = t;
    s->inflight -= k;
    if (s->inflight == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
    uv_async_send(s->async); /* coalesced by libuv: one wake-up for a burst */
}

static void *spawner__thread(void *arg)
{
    spawner_t *s = arg;
    pthread_setname_np(pthread_self(), "pn-spawn"); /* bench_pn finds its CPU time by name */
    spawner_req_t *rh = NULL, *rt = NULL;           /* results not posted yet */
    size_t nr = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (!s->head && nr > 0) { /* nothing more to spawn: the batch's results go out */
            pthread_mutex_unlock(&s->mu);
            spawner__post(s, rh, rt, nr);
            rh = rt = NULL;
            nr = 0;
            pthread_mutex_lock(&s->mu);
            continue;
        }
        while (!s->head && !s->stopping) {
            s->sleeping++;
            pthread_cond_wait(&s->work, &s->mu);
            s->sleeping--;
        }
        spawner_req_t *q = s->head;
        if (!q)
            break; /* stopping and nothing left */
        s->head = q->next;
        if (!s->head)
            s->tail = NULL;
        s->queued--;
        /* a long queue is shared: a peer woken by this thread, not by the loop for each */
        int peer = s->queued >= SPAWNER_PEER_QUEUE && s->sleeping > 0;
        pthread_mutex_unlock(&s->mu);
        if (peer)
            pthread_cond_signal(&s->work);

        spawner_result_t *r = &q->r;
        r->t0_ns = clock_mono_ns();
        if (nr > 0 && r->t0_ns - rh->r.t1_ns >= SPAWNER_POST_NS) { /* held long enough */
            spawner__post(s, rh, rt, nr);
            rh = rt = NULL;
            nr = 0;
        }
        r->rc = exec_spawn_timed(&q->spec, &r->pid, &r->at, r->msg, sizeof r->msg);
        r->t1_ns = clock_mono_ns();
        q->next = NULL;
        if (rt)
            rt->next = q;
        else
            rh = q;
        rt = q;
        if (++nr >= SPAWNER_POST_BATCH || r->t1_ns - rh->r.t1_ns >= SPAWNER_POST_NS) {
            spawner__post(s, rh, rt, nr);
            rh = rt = NULL;
            nr = 0;
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void spawner__on_async(uv_async_t *h)
{
    spawner_t *s = h->data;
    if (s)
        spawner_drain(s);
}

static void spawner__close_cb(uv_handle_t *h)
{
    mem_free(h);
}

spawner_t *spawner_new(uv_loop_t *loop, unsigned threads, spawner_done_fn *done, void *arg,
                       char *msg, size_t cap)
{
    if (threads < 1 || threads > SPAWNER_MAX_THREADS || !done) {
        err_fmt(msg, cap, ERR_INVAL, "spawner threads must be 1..%d", SPAWNER_MAX_THREADS);
        return NULL;
    }
    spawner_t *s = mem_calloc(1, sizeof *s);
    uv_async_t *a = mem_calloc(1, sizeof *a);
    if (!s || !a || uv_async_init(loop, a, spawner__on_async) != 0) {
        mem_free(s);
        mem_free(a);
        err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        return NULL;
    }
    a->data = s;
    s->loop = loop;
    s->async = a;
    s->done = done;
    s->arg = arg;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    /* Every signal blocked in the threads (they inherit the mask): SIGCHLD and the stop
     * signals belong to the loop thread, and a spawn blocks them anyway. A small stack: the
     * thread's deepest frame is exec_spawn_timed's 4 KiB path. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int rc = 0;
    for (unsigned i = 0; i < threads; i++) {
        rc = pthread_create(&s->threads[i], &attr, spawner__thread, s);
        if (rc != 0)
            break;
        s->nthreads++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        err_fmt(msg, cap, ERR_SYS, "spawner thread: %s", strerror(rc));
        spawner_free(&s);
        return NULL;
    }
    return s;
}

int spawner_submit(spawner_t *s, uint64_t id, const exec_spec_t *spec)
{
    if (!s || !spec || !spec->stdout_path || !spec->stderr_path)
        return ERR_INVAL;
    spawner_req_t *q = mem_calloc(1, sizeof *q);
    char *out = mem_strdup(spec->stdout_path), *err = mem_strdup(spec->stderr_path);
    if (!q || !out || !err) {
        mem_free(q);
        mem_free(out);
        mem_free(err);
        return ERR_NOMEM;
    }
    q->r.id = id;
    q->spec = *spec;
    q->out = out;
    q->err = err;
    q->spec.stdout_path = out;
    q->spec.stderr_path = err;
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    s->pending++;
    s->inflight++;
    s->queued++;
    int wake = !s->deferred && s->sleeping > 0;
    s->unwoken |= s->deferred > 0;
    pthread_mutex_unlock(&s->mu);
    if (wake)
        pthread_cond_signal(&s->work);
    return 0;
}

void spawner_defer(spawner_t *s)
{
    if (s)
        s->deferred++; /* only the loop thread changes it */
}

void spawner_kick(spawner_t *s)
{
    if (!s || s->deferred == 0 || --s->deferred > 0)
        return;
    pthread_mutex_lock(&s->mu);
    int wake = s->unwoken && s->sleeping > 0;
    s->unwoken = 0;
    pthread_mutex_unlock(&s->mu);
    if (wake) /* one thread for the batch; it wakes a peer when the queue is long */
        pthread_cond_signal(&s->work);
}

size_t spawner_pending(const spawner_t *s)
{
    return s ? s->pending : 0; /* only the loop thread changes it downwards and reads it */
}

size_t spawner_drain(spawner_t *s)
{
    size_t k = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        spawner_req_t *d = s->dhead;
        s->dhead = s->dtail = NULL;
        pthread_mutex_unlock(&s->mu);
        if (!d)
            break;
        while (d) {
            spawner_req_t *next = d->next;
            s->pending--; /* only the loop thread changes and reads it */
            s->done(s->arg, &d->r);
            mem_free(d->out);
            mem_free(d->err);
            mem_free(d);
            d = next;
            k++;
        }
    }
    return k;
}

void spawner_flush(spawner_t *s)
{
    if (!s)
        return;
    while (s->deferred > 0) /* what was deferred cannot wait */
        spawner_kick(s);
    pthread_mutex_lock(&s->mu);
    while (s->inflight > 0)
        pthread_cond_wait(&s->idle, &s->mu);
    pthread_mutex_unlock(&s->mu);
    spawner_drain(s);
}

uint64_t spawner_cpu_us(const spawner_t *s)
{
    uint64_t us = 0;
    for (unsigned i = 0; s && i < s->nthreads; i++) {
        clockid_t c;
        struct timespec ts;
        if (pthread_getcpuclockid(s->threads[i], &c) == 0 && clock_gettime(c, &ts) == 0)
            us += (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    }
    return us;
}

void spawner_free(spawner_t **sp)
{
    if (!sp || !*sp)
        return;
    spawner_t *s = *sp;
    *sp = NULL;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    for (unsigned i = 0; i < s->nthreads; i++)
        pthread_join(s->threads[i], NULL);
    /* results nobody will hear of: their processes are killed, not left untracked */
    for (spawner_req_t *d = s->dhead, *next; d; d = next) {
        next = d->next;
        if (d->r.rc == 0)
            exec_kill_group(d->r.pid, SIGKILL);
        mem_free(d->out);
        mem_free(d->err);
        mem_free(d);
    }
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->mu);
    s->async->data = NULL;
    uv_close((uv_handle_t *)s->async, spawner__close_cb);
    mem_free(s);
}
