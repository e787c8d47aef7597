/* profile_history.c - a job's profiles per successful run, and their pooled merge
 * (jm/profile.h, "History"). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/profile.h"

#define PROFILE__MAX_LISTED 4096 /* run files looked at in one history directory */
#define PROFILE__TS_DIGITS  13

/* ---- the merge (pure) ---- */

/* The CDF a quantile vector describes, at x: right-continuous (`left` 0) or its left limit. */
static double profile__cdf(const double *q, double x, int left)
{
    int cnt = 0;
    while (cnt < PROFILE_NQ && (left ? q[cnt] < x : q[cnt] <= x))
        cnt++;
    if (cnt == 0)
        return 0;
    if (cnt == PROFILE_NQ)
        return 1;
    int k = cnt - 1;
    double span = q[k + 1] - q[k];
    double frac = span > 0 ? (x - q[k]) / span : 0;
    return (k + frac) / (PROFILE_NQ - 1);
}

static int profile__dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantiles of the mixture of n distributions (quantile vectors q[i], weights w[i] >= 0) into
 * out. Between two consecutive points of the union of all quantiles every run's CDF is linear,
 * so the mixture's is too: it is inverted exactly there. `pts`, `fr`, `fl` have room for
 * n * PROFILE_NQ values. */
static void profile__mix(double *out, const double *const *q, const double *w, size_t n,
                         double *pts, double *fr, double *fl)
{
    double wsum = 0;
    size_t used = 0, last = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] > 0) {
            wsum += w[i];
            used++;
            last = i;
        }
    if (used == 0) {
        memset(out, 0, PROFILE_NQ * sizeof *out);
        return;
    }
    if (used == 1) {
        memcpy(out, q[last], PROFILE_NQ * sizeof *out);
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] > 0)
            for (int k = 0; k < PROFILE_NQ; k++)
                pts[m++] = q[i][k];
    qsort(pts, m, sizeof *pts, profile__dcmp);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (u == 0 || pts[i] != pts[u - 1])
            pts[u++] = pts[i];
    for (size_t j = 0; j < u; j++) {
        double r = 0, l = 0;
        for (size_t i = 0; i < n; i++)
            if (w[i] > 0) {
                r += w[i] * profile__cdf(q[i], pts[j], 0);
                l += w[i] * profile__cdf(q[i], pts[j], 1);
            }
        fr[j] = r / wsum;
        fl[j] = l / wsum;
    }
    out[0] = pts[0];
    out[PROFILE_NQ - 1] = pts[u - 1];
    size_t j = 0;
    for (int k = 1; k < PROFILE_NQ - 1; k++) {
        double target = (double)k / (PROFILE_NQ - 1);
        const double eps = 1e-12;
        while (j + 1 < u && fr[j] < target - eps)
            j++;
        double x = pts[j];
        if (j > 0 && fl[j] >= target - eps) { /* on the slope from pts[j-1] up to pts[j] */
            double d = fl[j] - fr[j - 1];
            if (d > 0) {
                x = pts[j - 1] + (target - fr[j - 1]) / d * (pts[j] - pts[j - 1]);
                if (x < pts[j - 1])
                    x = pts[j - 1];
                if (x > pts[j])
                    x = pts[j];
            }
        }
        out[k] = x;
    }
    for (int k = 1; k < PROFILE_NQ; k++)
        if (out[k] < out[k - 1])
            out[k] = out[k - 1];
}

static int profile__add_count(int a, int b)
{
    long long s = (long long)a + b;
    return s > 1000000000 ? 1000000000 : (int)s;
}

int profile_merge(struct profile *out, const struct profile *runs, size_t n, char *msg, size_t cap)
{
    if (out == NULL || runs == NULL || n == 0)
        return err_fmt(msg, cap, ERR_INVAL, "profile: nothing to merge");
    size_t total = 0;
    for (size_t r = 0; r < n; r++)
        total += (size_t)(runs[r].nstages > 0 ? runs[r].nstages : 0);
    struct profile np;
    profile_init(&np);
    np.job = mem_strdup(runs[0].job != NULL ? runs[0].job : "");
    np.stages = mem_calloc(total > 0 ? total : 1, sizeof *np.stages);
    const double **q = mem_calloc(n, sizeof *q);
    double *w = mem_calloc(n, sizeof *w);
    double *pts = mem_calloc(n * PROFILE_NQ, sizeof *pts);
    double *fr = mem_calloc(n * PROFILE_NQ, sizeof *fr);
    double *fl = mem_calloc(n * PROFILE_NQ, sizeof *fl);
    int *idx = mem_calloc(n, sizeof *idx);
    int rc = 0;
    if (np.job == NULL || np.stages == NULL || q == NULL || w == NULL || pts == NULL ||
        fr == NULL || fl == NULL || idx == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
        goto out;
    }
    for (size_t r = 0; r < n; r++)
        for (int s = 0; s < runs[r].nstages; s++) {
            const char *name = runs[r].stages[s].name;
            if (profile_find_stage(&np, name) >= 0)
                continue;
            struct profile_stage *st = &np.stages[np.nstages];
            st->name = mem_strdup(name);
            if (st->name == NULL) {
                rc = err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
                goto out;
            }
            np.nstages++;
            double fail_run = 0, in_sum = 0;
            for (size_t i = r; i < n; i++) {
                idx[i] = profile_find_stage(&runs[i], name);
                if (idx[i] < 0)
                    continue;
                const struct profile_stage *x = &runs[i].stages[idx[i]];
                st->tasks = profile__add_count(st->tasks, x->tasks);
                st->attempts = profile__add_count(st->attempts, x->attempts);
                st->failures = profile__add_count(st->failures, x->failures);
                st->ratio_samples = profile__add_count(st->ratio_samples, x->ratio_samples);
                st->runtime_total += x->runtime_total;
                st->queue_total += x->queue_total;
                fail_run += x->fail_run_mean * x->failures;
                in_sum += x->input_mean * x->tasks;
                if (x->input_max > st->input_max)
                    st->input_max = x->input_max;
            }
            st->fail_run_mean = st->failures > 0 ? fail_run / st->failures : 0;
            st->input_mean = st->tasks > 0 ? in_sum / st->tasks : 0;
            /* runs before r do not have the stage (else it would exist already) */
            for (size_t i = 0; i < n; i++) {
                const struct profile_stage *x =
                    i >= r && idx[i] >= 0 ? &runs[i].stages[idx[i]] : NULL;
                q[i] = x != NULL ? x->runtime_q : NULL;
                w[i] = x != NULL ? x->tasks : 0;
            }
            profile__mix(st->runtime_q, q, w, n, pts, fr, fl);
            for (size_t i = 0; i < n; i++) {
                const struct profile_stage *x =
                    i >= r && idx[i] >= 0 ? &runs[i].stages[idx[i]] : NULL;
                q[i] = x != NULL ? x->ratio_q : NULL;
                w[i] = x != NULL ? x->ratio_samples : 0;
            }
            profile__mix(st->ratio_q, q, w, n, pts, fr, fl);
            for (size_t i = 0; i < n; i++) {
                const struct profile_stage *x =
                    i >= r && idx[i] >= 0 ? &runs[i].stages[idx[i]] : NULL;
                q[i] = x != NULL ? x->init_q : NULL;
                w[i] = x != NULL ? x->attempts : 0;
            }
            profile__mix(st->init_q, q, w, n, pts, fr, fl);
        }
    profile_close(out);
    *out = np;
    profile_init(&np);
out:
    profile_close(&np);
    mem_free(q);
    mem_free(w);
    mem_free(pts);
    mem_free(fr);
    mem_free(fl);
    mem_free(idx);
    return rc;
}

/* ---- the history directory ---- */

/* Copies `name` into buf with every byte outside [A-Za-z0-9._-] (and a leading '.') as '_'. */
static void profile__sanitize(char *buf, const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || (c == '.' && i > 0);
        buf[i] = ok ? c : '_';
    }
    buf[len] = '\0';
}

int profile_history_dir(char *buf, size_t cap, const char *dir, const char *job)
{
    if (buf == NULL || dir == NULL || job == NULL || job[0] == '\0')
        return ERR_INVAL;
    size_t dl = strlen(dir), jl = strlen(job);
    if (jl > PROFILE_MAX_NAME || dl + 1 + jl + 1 > cap)
        return ERR_TOOBIG;
    memcpy(buf, dir, dl);
    buf[dl] = '/';
    profile__sanitize(buf + dl + 1, job, jl);
    return 0;
}

/* A run file's name: 13 digits, '-', an id, ".json". */
static int profile__is_run(const char *name)
{
    size_t len = strlen(name);
    if (len < PROFILE__TS_DIGITS + 1 + 5 || strcmp(name + len - 5, ".json") != 0 ||
        name[PROFILE__TS_DIGITS] != '-')
        return 0;
    for (int i = 0; i < PROFILE__TS_DIGITS; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

static int profile__scmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void profile__free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mem_free(v[i]);
    mem_free(v);
}

/* The run files in hist, oldest first (their names sort by time). *names NULL and *n 0 when the
 * directory does not exist. */
static int profile__list(const char *hist, char ***names, size_t *n, char *msg, size_t cap)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(hist);
    if (d == NULL) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return err_fmt(msg, cap, ERR_IO, "profile: %s: %s", hist, strerror(errno));
    }
    char **v = mem_calloc(PROFILE__MAX_LISTED, sizeof *v);
    if (v == NULL) {
        closedir(d);
        return err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
    }
    size_t k = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < PROFILE__MAX_LISTED) {
        if (!profile__is_run(e->d_name))
            continue;
        if ((v[k] = mem_strdup(e->d_name)) == NULL) {
            closedir(d);
            profile__free_names(v, k);
            return err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
        }
        k++;
    }
    closedir(d);
    qsort(v, k, sizeof *v, profile__scmp);
    *names = v;
    *n = k;
    return 0;
}

int profile_save_run(const struct profile *p, const char *dir, const char *job_id, int64_t ts_ms,
                     int keep, char *path_out, size_t path_cap, char *msg, size_t cap)
{
    if (p == NULL || dir == NULL || p->job == NULL || keep < 1 || ts_ms < 0)
        return err_fmt(msg, cap, ERR_INVAL, "profile: bad arguments");
    char hist[4096], path[4096 + 400], id[129];
    int rc = profile_history_dir(hist, sizeof hist, dir, p->job);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "profile: no directory for job \"%.64s\"", p->job);
    if (job_id == NULL || job_id[0] == '\0')
        job_id = "run";
    size_t il = strlen(job_id);
    if (il > sizeof id - 1)
        il = sizeof id - 1;
    profile__sanitize(id, job_id, il);
    snprintf(path, sizeof path, "%s/%0*" PRId64 "-%s.json", hist, PROFILE__TS_DIGITS, ts_ms, id);
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mkdir(hist, 0755) != 0 && errno != EEXIST))
        return err_fmt(msg, cap, ERR_IO, "profile: cannot make %s: %s", hist, strerror(errno));
    if ((rc = profile_save(p, path, msg, cap)) != 0)
        return rc;
    if (path_out != NULL && path_cap > 0)
        snprintf(path_out, path_cap, "%s", path);
    char **names;
    size_t n;
    if (profile__list(hist, &names, &n, msg, cap) != 0)
        return 0; /* written; pruning waits for the next run */
    for (size_t i = 0; i + (size_t)keep < n; i++) {
        char old[4096 + 300];
        snprintf(old, sizeof old, "%s/%s", hist, names[i]);
        unlink(old);
    }
    profile__free_names(names, n);
    return 0;
}

int profile_load_job(struct profile *p, const char *dir, const char *job, int max_runs, int *runs,
                     char *msg, size_t cap)
{
    if (runs != NULL)
        *runs = 0;
    if (p == NULL || dir == NULL || job == NULL || max_runs < 1)
        return err_fmt(msg, cap, ERR_INVAL, "profile: bad arguments");
    char hist[4096];
    int rc = profile_history_dir(hist, sizeof hist, dir, job);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "profile: no directory for job \"%.64s\"", job);
    char **names;
    size_t n;
    if ((rc = profile__list(hist, &names, &n, msg, cap)) != 0)
        return rc;
    struct profile *got = mem_calloc((size_t)max_runs, sizeof *got);
    if (got == NULL) {
        profile__free_names(names, n);
        return err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
    }
    size_t k = 0;
    int last_rc = 0;
    char why[512] = "";
    for (size_t i = n; i > 0 && k < (size_t)max_runs; i--) { /* newest first */
        char path[4096 + 300];
        snprintf(path, sizeof path, "%s/%s", hist, names[i - 1]);
        profile_init(&got[k]);
        int lrc = profile_load(&got[k], path, why, sizeof why);
        if (lrc == 0)
            k++;
        else
            last_rc = lrc;
    }
    profile__free_names(names, n);
    if (k > 0) {
        rc = k == 1 ? 0 : profile_merge(p, got, k, msg, cap);
        if (k == 1) { /* the one run as it is */
            profile_close(p);
            *p = got[0];
            profile_init(&got[0]);
        }
        if (rc == 0 && runs != NULL)
            *runs = (int)k;
    } else {
        char old[4096 + 64];
        rc = profile_path(old, sizeof old, dir, job);
        if (rc != 0)
            rc = err_fmt(msg, cap, rc, "profile: no file name for job \"%.64s\"", job);
        else
            rc = profile_load(p, old, msg, cap);
        if (rc == 0 && runs != NULL)
            *runs = 1;
        else if (rc == ERR_NOTFOUND && last_rc != 0)
            rc = err_fmt(msg, cap, last_rc, "no readable run in %s (%s)", hist, why);
        else if (rc == ERR_NOTFOUND)
            rc = err_fmt(msg, cap, ERR_NOTFOUND, "profile: none in %s or %s", hist, old);
    }
    for (size_t i = 0; i < k; i++)
        profile_close(&got[i]);
    mem_free(got);
    return rc;
}
