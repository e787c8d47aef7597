/* profile.c - job profiles: build from attempts, JSON text, atomic save, defensive load. */
#include "jm/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

void profile_init(struct profile *p)
{
    memset(p, 0, sizeof *p);
    p->version = PROFILE_VERSION;
}

static void profile__free_stages(struct profile_stage *st, int n)
{
    if (st == NULL)
        return;
    for (int i = 0; i < n; i++)
        mem_free(st[i].name);
    mem_free(st);
}

void profile_close(struct profile *p)
{
    if (p == NULL)
        return;
    mem_free(p->job);
    profile__free_stages(p->stages, p->nstages);
    profile_init(p);
}

int profile_find_stage(const struct profile *p, const char *name)
{
    for (int i = 0; i < p->nstages; i++)
        if (strcmp(p->stages[i].name, name) == 0)
            return i;
    return -1;
}

double profile_stage_runtime_mean(const struct profile_stage *st)
{
    return st->tasks > 0 ? st->runtime_total / st->tasks : 0;
}

double profile_stage_fail_prob(const struct profile_stage *st)
{
    return st->attempts > 0 ? (double)st->failures / st->attempts : 0;
}

double profile_quantile(const double *q, double u)
{
    if (!(u > 0))
        return q[0];
    if (u >= 1)
        return q[PROFILE_NQ - 1];
    double x = u * (PROFILE_NQ - 1);
    int i = (int)x;
    double w = x - i;
    return q[i] + w * (q[i + 1] - q[i]);
}

static int profile__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantiles of v[0..n) (sorted in place) into q; zeros when n == 0. */
static void profile__quantiles(double *v, size_t n, double *q)
{
    if (n == 0) {
        for (int k = 0; k < PROFILE_NQ; k++)
            q[k] = 0;
        return;
    }
    qsort(v, n, sizeof *v, profile__cmp);
    for (int k = 0; k < PROFILE_NQ; k++) {
        double x = (double)k / (PROFILE_NQ - 1) * (double)(n - 1);
        size_t i = (size_t)x;
        double w = x - (double)i;
        q[k] = i + 1 < n ? v[i] + w * (v[i + 1] - v[i]) : v[i];
    }
}

int profile_build(struct profile *p, const char *job, int nstages, const char *const *stage_names,
                  const struct profile_attempt *att, size_t n, char *msg, size_t cap)
{
    if (p == NULL || job == NULL || nstages < 1 || nstages > PROFILE_MAX_STAGES ||
        stage_names == NULL || (n > 0 && att == NULL))
        return err_fmt(msg, cap, ERR_INVAL, "profile: bad arguments");
    for (size_t i = 0; i < n; i++) {
        const struct profile_attempt *a = &att[i];
        if (a->stage < 0 || a->stage >= nstages)
            return err_fmt(msg, cap, ERR_INVAL, "profile: attempt %zu: stage %d out of range", i,
                           a->stage);
        if (!isfinite(a->queue_s) || !isfinite(a->init_s) || !isfinite(a->run_s) ||
            !isfinite(a->input_bytes) || !isfinite(a->est_s) || a->queue_s < 0 || a->init_s < 0 ||
            a->run_s < 0 || a->input_bytes < 0 || a->est_s < 0)
            return err_fmt(msg, cap, ERR_INVAL, "profile: attempt %zu: negative or non-finite time",
                           i);
    }
    for (int s = 0; s < nstages; s++)
        if (stage_names[s] == NULL)
            return err_fmt(msg, cap, ERR_INVAL, "profile: stage %d has no name", s);

    struct profile np;
    profile_init(&np);
    np.job = mem_strdup(job);
    np.stages = mem_calloc((size_t)nstages, sizeof *np.stages);
    double *run = mem_calloc(n > 0 ? n : 1, sizeof *run);
    double *init = mem_calloc(n > 0 ? n : 1, sizeof *init);
    double *ratio = mem_calloc(n > 0 ? n : 1, sizeof *ratio);
    size_t *order = mem_calloc(n > 0 ? n : 1, sizeof *order);
    size_t *start = mem_calloc((size_t)nstages + 1, sizeof *start);
    int rc = 0;
    if (np.job == NULL || np.stages == NULL || run == NULL || init == NULL || ratio == NULL ||
        order == NULL || start == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
        goto out;
    }
    np.nstages = nstages;
    for (int s = 0; s < nstages; s++) {
        np.stages[s].name = mem_strdup(stage_names[s]);
        if (np.stages[s].name == NULL) {
            rc = err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
            goto out;
        }
    }
    /* Bucket attempts by stage (counting sort) so each stage's samples are contiguous. */
    for (size_t i = 0; i < n; i++)
        start[att[i].stage + 1]++;
    for (int s = 0; s < nstages; s++)
        start[s + 1] += start[s];
    {
        size_t *fill = mem_calloc((size_t)nstages, sizeof *fill);
        if (fill == NULL) {
            rc = err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            order[start[att[i].stage] + fill[att[i].stage]++] = i;
        mem_free(fill);
    }
    for (int s = 0; s < nstages; s++) {
        struct profile_stage *st = &np.stages[s];
        size_t nrun = 0, ninit = 0, nratio = 0;
        double fail_run = 0, in_sum = 0;
        for (size_t k = start[s]; k < start[s + 1]; k++) {
            const struct profile_attempt *a = &att[order[k]];
            st->attempts++;
            init[ninit++] = a->init_s;
            st->queue_total += a->queue_s;
            if (a->ok) {
                st->tasks++;
                run[nrun++] = a->run_s;
                if (a->est_s > 0)
                    ratio[nratio++] = a->run_s / a->est_s;
                st->runtime_total += a->run_s;
                in_sum += a->input_bytes;
                if (a->input_bytes > st->input_max)
                    st->input_max = a->input_bytes;
            } else {
                st->failures++;
                fail_run += a->run_s;
            }
        }
        st->fail_run_mean = st->failures > 0 ? fail_run / st->failures : 0;
        st->input_mean = st->tasks > 0 ? in_sum / st->tasks : 0;
        profile__quantiles(run, nrun, st->runtime_q);
        profile__quantiles(init, ninit, st->init_q);
        profile__quantiles(ratio, nratio, st->ratio_q);
        st->ratio_samples = (int)nratio;
    }
    profile_close(p);
    *p = np;
    np.job = NULL;
    np.stages = NULL;
    np.nstages = 0;
out:
    profile_close(&np);
    mem_free(run);
    mem_free(init);
    mem_free(ratio);
    mem_free(order);
    mem_free(start);
    return rc;
}

/* ---- JSON ---- */

static json_t *profile__qarray(const double *q)
{
    json_t *a = json_array();
    for (int k = 0; a != NULL && k < PROFILE_NQ; k++)
        if (json_array_append_new(a, json_real(q[k])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

char *profile_to_json(const struct profile *p)
{
    json_t *root = json_object();
    json_t *stages = json_array();
    char *out = NULL;
    if (root == NULL || stages == NULL)
        goto done;
    json_object_set_new(root, "format", json_string("paddock-profile"));
    json_object_set_new(root, "version", json_integer(PROFILE_VERSION));
    json_object_set_new(root, "job", json_string(p->job != NULL ? p->job : ""));
    for (int s = 0; s < p->nstages; s++) {
        const struct profile_stage *st = &p->stages[s];
        json_t *o =
            json_pack("{s:s, s:i, s:i, s:i, s:o, s:o, s:i, s:f, s:f, s:o, s:f, s:f, s:f}", "name",
                      st->name, "tasks", st->tasks, "attempts", st->attempts, "failures",
                      st->failures, "runtime_q", profile__qarray(st->runtime_q), "ratio_q",
                      profile__qarray(st->ratio_q), "ratio_samples", st->ratio_samples,
                      "runtime_total_s", st->runtime_total, "queue_total_s", st->queue_total,
                      "init_q", profile__qarray(st->init_q), "fail_run_mean_s", st->fail_run_mean,
                      "input_bytes_mean", st->input_mean, "input_bytes_max", st->input_max);
        if (o == NULL || json_array_append_new(stages, o) != 0)
            goto done;
    }
    json_object_set(root, "stages", stages);
    /* jansson allocates with malloc; copy into mem_ storage so callers free with mem_free. */
    char *tmp = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    if (tmp != NULL) {
        out = mem_strdup(tmp);
        free(tmp);
    }
done:
    json_decref(stages);
    json_decref(root);
    return out;
}

static int profile__num(json_t *o, const char *key, double *out, int s, char *msg, size_t cap)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || !json_is_number(v))
        return err_fmt(msg, cap, ERR_PARSE, "profile: stage %d: \"%s\" missing or not a number", s,
                       key);
    double d = json_number_value(v);
    if (!isfinite(d) || d < 0)
        return err_fmt(msg, cap, ERR_PARSE, "profile: stage %d: \"%s\" is negative or not finite",
                       s, key);
    *out = d;
    return 0;
}

static int profile__int(json_t *o, const char *key, int *out, int s, char *msg, size_t cap)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || !json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > 1000000000)
        return err_fmt(msg, cap, ERR_PARSE,
                       "profile: stage %d: \"%s\" missing or not a count in 0..1e9", s, key);
    *out = (int)json_integer_value(v);
    return 0;
}

static int profile__qvec(json_t *o, const char *key, double *q, int s, char *msg, size_t cap)
{
    json_t *a = json_object_get(o, key);
    if (a == NULL || !json_is_array(a) || json_array_size(a) != PROFILE_NQ)
        return err_fmt(msg, cap, ERR_PARSE, "profile: stage %d: \"%s\" must be %d numbers", s, key,
                       PROFILE_NQ);
    for (int k = 0; k < PROFILE_NQ; k++) {
        json_t *v = json_array_get(a, (size_t)k);
        if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
            return err_fmt(msg, cap, ERR_PARSE, "profile: stage %d: \"%s\"[%d] is not a time", s,
                           key, k);
        q[k] = json_number_value(v);
        if (k > 0 && q[k] < q[k - 1])
            return err_fmt(msg, cap, ERR_PARSE, "profile: stage %d: \"%s\" is not sorted", s, key);
    }
    return 0;
}

int profile_from_json(struct profile *p, const char *buf, size_t len, char *msg, size_t cap)
{
    if (len > PROFILE_MAX_BYTES)
        return err_fmt(msg, cap, ERR_TOOBIG, "profile: %zu bytes (limit %u)", len,
                       PROFILE_MAX_BYTES);
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return err_fmt(msg, cap, ERR_PARSE, "profile: line %d: %s", jerr.line, jerr.text);
    int rc = 0;
    struct profile np;
    profile_init(&np);
    json_t *fmt = json_object_get(root, "format");
    json_t *ver = json_object_get(root, "version");
    json_t *job = json_object_get(root, "job");
    json_t *stages = json_object_get(root, "stages");
    if (!json_is_object(root) || !json_is_string(fmt) ||
        strcmp(json_string_value(fmt), "paddock-profile") != 0) {
        rc = err_fmt(msg, cap, ERR_PARSE, "profile: not a paddock profile");
        goto out;
    }
    if (!json_is_integer(ver)) {
        rc = err_fmt(msg, cap, ERR_PARSE, "profile: \"version\" missing");
        goto out;
    }
    if (json_integer_value(ver) != PROFILE_VERSION) {
        rc = err_fmt(msg, cap, ERR_VERSION, "profile: version %lld (this build reads %d)",
                     (long long)json_integer_value(ver), PROFILE_VERSION);
        goto out;
    }
    if (!json_is_string(job) || strlen(json_string_value(job)) > PROFILE_MAX_NAME ||
        !json_is_array(stages) || json_array_size(stages) < 1) {
        rc = err_fmt(msg, cap, ERR_PARSE, "profile: \"job\" or \"stages\" missing or malformed");
        goto out;
    }
    size_t ns = json_array_size(stages);
    if (ns > PROFILE_MAX_STAGES) {
        rc =
            err_fmt(msg, cap, ERR_TOOBIG, "profile: %zu stages (limit %d)", ns, PROFILE_MAX_STAGES);
        goto out;
    }
    np.job = mem_strdup(json_string_value(job));
    np.stages = mem_calloc(ns, sizeof *np.stages);
    if (np.job == NULL || np.stages == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
        goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        json_t *o = json_array_get(stages, i);
        struct profile_stage *st = &np.stages[i];
        int s = (int)i;
        json_t *name = json_object_get(o, "name");
        if (!json_is_object(o) || !json_is_string(name) ||
            strlen(json_string_value(name)) > PROFILE_MAX_NAME) {
            rc = err_fmt(msg, cap, ERR_PARSE, "profile: stage %d: no name", s);
            goto out;
        }
        st->name = mem_strdup(json_string_value(name));
        np.nstages = s + 1;
        if (st->name == NULL) {
            rc = err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
            goto out;
        }
        if ((rc = profile__int(o, "tasks", &st->tasks, s, msg, cap)) != 0 ||
            (rc = profile__int(o, "attempts", &st->attempts, s, msg, cap)) != 0 ||
            (rc = profile__int(o, "failures", &st->failures, s, msg, cap)) != 0 ||
            (rc = profile__qvec(o, "runtime_q", st->runtime_q, s, msg, cap)) != 0 ||
            (rc = profile__qvec(o, "ratio_q", st->ratio_q, s, msg, cap)) != 0 ||
            (rc = profile__int(o, "ratio_samples", &st->ratio_samples, s, msg, cap)) != 0 ||
            (rc = profile__num(o, "runtime_total_s", &st->runtime_total, s, msg, cap)) != 0 ||
            (rc = profile__num(o, "queue_total_s", &st->queue_total, s, msg, cap)) != 0 ||
            (rc = profile__qvec(o, "init_q", st->init_q, s, msg, cap)) != 0 ||
            (rc = profile__num(o, "fail_run_mean_s", &st->fail_run_mean, s, msg, cap)) != 0 ||
            (rc = profile__num(o, "input_bytes_mean", &st->input_mean, s, msg, cap)) != 0 ||
            (rc = profile__num(o, "input_bytes_max", &st->input_max, s, msg, cap)) != 0)
            goto out;
        if (st->failures > st->attempts || st->tasks > st->attempts ||
            st->ratio_samples > st->tasks) {
            rc = err_fmt(msg, cap, ERR_PARSE, "profile: stage %d: counts inconsistent", s);
            goto out;
        }
    }
    profile_close(p);
    *p = np;
    profile_init(&np);
out:
    profile_close(&np);
    json_decref(root);
    return rc;
}

int profile_save(const struct profile *p, const char *path, char *msg, size_t cap)
{
    char *text = profile_to_json(p);
    if (text == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
    size_t plen = strlen(path);
    char *tmp = mem_alloc(plen + 5);
    if (tmp == NULL) {
        mem_free(text);
        return err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = err_fmt(msg, cap, ERR_IO, "profile: %s: %s", tmp, strerror(errno));
        goto out;
    }
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = err_fmt(msg, cap, ERR_IO, "profile: %s: %s", tmp, strerror(errno));
            break;
        }
        off += (size_t)w;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = err_fmt(msg, cap, ERR_IO, "profile: %s: fsync: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == 0)
        rc = err_fmt(msg, cap, ERR_IO, "profile: %s: close: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = err_fmt(msg, cap, ERR_IO, "profile: rename to %s: %s", path, strerror(errno));
    if (rc != 0)
        unlink(tmp);
out:
    mem_free(tmp);
    mem_free(text);
    return rc;
}

int profile_load(struct profile *p, const char *path, char *msg, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return err_fmt(msg, cap, e == ENOENT ? ERR_NOTFOUND : ERR_IO, "profile: %s: %s", path,
                       strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return err_fmt(msg, cap, ERR_IO, "profile: %s: not a regular file", path);
    }
    if ((unsigned long long)sb.st_size > PROFILE_MAX_BYTES) {
        close(fd);
        return err_fmt(msg, cap, ERR_TOOBIG, "profile: %s: %lld bytes (limit %u)", path,
                       (long long)sb.st_size, PROFILE_MAX_BYTES);
    }
    size_t want = (size_t)sb.st_size;
    char *buf = mem_alloc(want + 1);
    if (buf == NULL) {
        close(fd);
        return err_fmt(msg, cap, ERR_NOMEM, "profile: out of memory");
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            mem_free(buf);
            return err_fmt(msg, cap, ERR_IO, "profile: %s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    int rc = profile_from_json(p, buf, got, msg, cap);
    mem_free(buf);
    return rc;
}

int profile_path(char *buf, size_t cap, const char *dir, const char *job)
{
    if (buf == NULL || dir == NULL || job == NULL || job[0] == '\0')
        return ERR_INVAL;
    size_t dl = strlen(dir), jl = strlen(job);
    static const char suffix[] = ".profile.json";
    if (jl > PROFILE_MAX_NAME || dl + 1 + jl + sizeof suffix > cap)
        return ERR_TOOBIG;
    memcpy(buf, dir, dl);
    buf[dl] = '/';
    for (size_t i = 0; i < jl; i++) {
        char c = job[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || (c == '.' && i > 0);
        buf[dl + 1 + i] = ok ? c : '_';
    }
    memcpy(buf + dl + 1 + jl, suffix, sizeof suffix);
    return 0;
}
