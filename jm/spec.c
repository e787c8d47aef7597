/* spec.c - job spec v1 parsing: the document, its top-level keys (utility, reads and writes,
 * open), loading from a file and the queries on a parsed spec. A task entry's fields are checked
 * in spec_task.c, array entries expanded in spec_array.c, JSON values read in spec_json.c, and
 * the graph (id resolution, barriers, cycles, topological order) built in spec_graph.c. */
#include "jm/spec.h"
#include "jm/spec_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/mem.h"

void spec_limits_default(struct spec_limits *lim)
{
    lim->max_bytes = (size_t)64 << 20;
    lim->max_tasks = 1000000;
    lim->max_cpu = 1024.0;
    lim->max_mem_mb = (uint64_t)16 << 20;
}

void spec_destroy(struct spec **p)
{
    if (p == NULL || *p == NULL)
        return;
    struct spec *s = *p;
    for (size_t i = 0; i < s->ntasks; i++)
        spec__task_free(&s->tasks[i]);
    mem_free(s->tasks);
    for (size_t i = 0; i < s->narrays__; i++) /* after the elements sharing their strings */
        spec__task_free(&s->arrays__[i]);
    mem_free(s->arrays__);
    for (size_t i = 0; i < s->nstages; i++) {
        mem_free(s->stages[i].name);
        mem_free(s->stages[i].after);
        mem_free(s->stages[i].tasks);
    }
    mem_free(s->stages);
    mem_free(s->utility);
    spec__free_strv(s->reads, s->nreads);
    spec__free_strv(s->writes, s->nwrites);
    mem_free(s->name);
    mem_free(s->virtual_cluster);
    mem_free(s->open_spool);
    mem_free(s->topo);
    mem_free(s->stage_topo);
    mem_free(s->by_id__);
    mem_free(s->by_name__);
    mem_free(s);
    *p = NULL;
}

static int spec__utility(struct spec *s, const json_t *v, char *msg, size_t cap)
{
    if (!json_is_array(v))
        return err_fmt(msg, cap, ERR_INVAL, "\"utility\" must be an array of [time_s, utility]");
    size_t n = json_array_size(v);
    if (n == 0 || n > SPEC_MAX_UTILITY)
        return err_fmt(msg, cap, n == 0 ? ERR_INVAL : ERR_TOOBIG,
                       "\"utility\" must have 1..%d points (got %zu)", SPEC_MAX_UTILITY, n);
    s->utility = mem_calloc(n, sizeof *s->utility);
    if (s->utility == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(v, i);
        char ctx[48];
        snprintf(ctx, sizeof ctx, "\"utility\"[%zu]", i);
        if (!json_is_array(p) || json_array_size(p) != 2)
            return err_fmt(msg, cap, ERR_INVAL, "%s must be a pair [time_s, utility]", ctx);
        int rc;
        if ((rc = spec__number(json_array_get(p, 0), ctx, " time", &s->utility[i].t_s, msg, cap)) !=
                0 ||
            (rc = spec__number(json_array_get(p, 1), ctx, " utility", &s->utility[i].u, msg,
                               cap)) != 0)
            return rc;
        if (s->utility[i].t_s < 0)
            return err_fmt(msg, cap, ERR_INVAL, "%s time must not be negative", ctx);
        if (i > 0 && s->utility[i].t_s <= s->utility[i - 1].t_s)
            return err_fmt(msg, cap, ERR_INVAL, "%s time must be greater than the previous one",
                           ctx);
        s->nutility = i + 1;
    }
    return 0;
}

/* "reads" / "writes": absolute paths, duplicates dropped (the RM keys consumption on them). */
static int spec__paths(const json_t *v, const char *key, char ***out, size_t *nout, char *msg,
                       size_t cap)
{
    if (!json_is_array(v))
        return err_fmt(msg, cap, ERR_INVAL, "\"%s\" must be an array of paths", key);
    size_t n = json_array_size(v);
    if (n > SPEC_MAX_DECLARED)
        return err_fmt(msg, cap, ERR_TOOBIG, "\"%s\" has %zu entries, over the limit of %d", key, n,
                       SPEC_MAX_DECLARED);
    if (n == 0)
        return 0;
    *out = mem_calloc(n, sizeof **out);
    if (*out == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char what[48];
        snprintf(what, sizeof what, "\"%s\"[%zu]", key, i);
        char *path = NULL;
        int rc =
            spec__string(json_array_get(v, i), SPEC_MAX_PATH_LEN, 1, "", what, &path, msg, cap);
        if (rc != 0)
            return rc;
        if (path[0] != '/') {
            rc = err_fmt(msg, cap, ERR_INVAL, "%s must be an absolute path (got \"%.64s\")", what,
                         path);
            mem_free(path);
            return rc;
        }
        int dup = 0;
        for (size_t k = 0; k < *nout && !dup; k++)
            dup = strcmp((*out)[k], path) == 0;
        if (dup)
            mem_free(path);
        else
            (*out)[(*nout)++] = path;
    }
    return 0;
}

/* "open": {"spool": "/abs/dir", "idle_s": N} (docs/snakemake.md): the job's tasks are held until
 * a client binds them through the spool. */
static int spec__open(struct spec *s, const json_t *v, char *msg, size_t cap)
{
    static const char *const keys[] = {"spool", "idle_s", NULL};
    if (!json_is_object(v))
        return err_fmt(msg, cap, ERR_INVAL, "\"open\" must be an object");
    int rc = spec__keys(v, keys, "\"open\": ", msg, cap);
    if (rc != 0)
        return rc;
    const json_t *p = json_object_get(v, "spool");
    if (p == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "\"open\" needs \"spool\" (an absolute directory)");
    rc = spec__string(p, SPEC_MAX_PATH_LEN, 1, "\"open\": ", "\"spool\"", &s->open_spool, msg, cap);
    if (rc != 0)
        return rc == ERR_NOMEM ? err_fmt(msg, cap, rc, "out of memory") : rc;
    if (s->open_spool[0] != '/')
        return err_fmt(msg, cap, ERR_INVAL,
                       "\"open\": \"spool\" must be an absolute path (got \"%s\")", s->open_spool);
    for (const char *c = s->open_spool; *c; c++)
        if ((unsigned char)*c < 0x20)
            return err_fmt(msg, cap, ERR_INVAL, "\"open\": \"spool\" has a control character");
    s->open_idle_s = 300;
    if ((p = json_object_get(v, "idle_s")) != NULL) {
        if ((rc = spec__number(p, "\"open\": ", "\"idle_s\"", &s->open_idle_s, msg, cap)) != 0)
            return rc;
        if (s->open_idle_s <= 0 || s->open_idle_s > SPEC_MAX_DEADLINE_S)
            return err_fmt(msg, cap, ERR_INVAL,
                           "\"open\": \"idle_s\" must be in (0, one year] (got %g)",
                           s->open_idle_s);
    }
    s->open = 1;
    return 0;
}

static int spec__top(struct spec *s, const json_t *root, char *msg, size_t cap)
{
    static const char *const keys[] = {
        "version", "name",   "virtual_cluster", "deadline_s", "utility", "reads",
        "writes",  "stages", "tasks",           "open",       NULL};
    if (!json_is_object(root))
        return err_fmt(msg, cap, ERR_INVAL, "spec must be a JSON object");
    int rc = spec__keys(root, keys, "", msg, cap);
    if (rc != 0)
        return rc;
    const json_t *v = json_object_get(root, "version");
    if (v == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "missing \"version\" (must be 1)");
    if (!json_is_integer(v))
        return err_fmt(msg, cap, ERR_INVAL, "\"version\" must be the integer 1");
    if (json_integer_value(v) != 1)
        return err_fmt(msg, cap, ERR_INVAL, "unsupported \"version\" %lld (only 1 is known)",
                       (long long)json_integer_value(v));
    s->version = 1;
    v = json_object_get(root, "name");
    rc = v != NULL ? spec__string(v, SPEC_MAX_NAME_LEN, 1, "", "\"name\"", &s->name, msg, cap)
                   : ((s->name = mem_strdup("job")) == NULL ? ERR_NOMEM : 0);
    if (rc != 0)
        return rc == ERR_NOMEM ? err_fmt(msg, cap, rc, "out of memory") : rc;
    v = json_object_get(root, "virtual_cluster");
    rc = v != NULL ? spec__string(v, SPEC_MAX_NAME_LEN, 1, "", "\"virtual_cluster\"",
                                  &s->virtual_cluster, msg, cap)
                   : ((s->virtual_cluster = mem_strdup("default")) == NULL ? ERR_NOMEM : 0);
    if (rc != 0)
        return rc == ERR_NOMEM ? err_fmt(msg, cap, rc, "out of memory") : rc;
    if ((v = json_object_get(root, "deadline_s")) != NULL) {
        if ((rc = spec__number(v, "", "\"deadline_s\"", &s->deadline_s, msg, cap)) != 0)
            return rc;
        if (s->deadline_s <= 0 || s->deadline_s > SPEC_MAX_DEADLINE_S)
            return err_fmt(msg, cap, ERR_INVAL, "\"deadline_s\" must be in (0, one year] (got %g)",
                           s->deadline_s);
        s->has_deadline = 1;
    }
    if ((v = json_object_get(root, "utility")) != NULL && (rc = spec__utility(s, v, msg, cap)) != 0)
        return rc;
    if ((v = json_object_get(root, "reads")) != NULL &&
        (rc = spec__paths(v, "reads", &s->reads, &s->nreads, msg, cap)) != 0)
        return rc;
    if ((v = json_object_get(root, "writes")) != NULL &&
        (rc = spec__paths(v, "writes", &s->writes, &s->nwrites, msg, cap)) != 0)
        return rc;
    if ((v = json_object_get(root, "open")) != NULL && (rc = spec__open(s, v, msg, cap)) != 0)
        return rc;
    return 0;
}

int spec_parse(const char *buf, size_t len, const struct spec_limits *lim, struct spec **out,
               char *msg, size_t cap)
{
    struct spec_limits def;
    if (lim == NULL) {
        spec_limits_default(&def);
        lim = &def;
    }
    if (out == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "no output");
    *out = NULL;
    if (buf == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "no input");
    if (len > lim->max_bytes)
        return err_fmt(msg, cap, ERR_TOOBIG, "spec is %zu bytes, over the limit of %zu", len,
                       lim->max_bytes);
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return err_fmt(msg, cap, ERR_PARSE, "not valid JSON (line %d, column %d): %s", jerr.line,
                       jerr.column, jerr.text);
    struct spec *s = mem_calloc(1, sizeof *s);
    const char **stage_names = NULL;
    struct spec__src *src = NULL;
    int rc;
    if (s == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = spec__top(s, root, msg, cap)) != 0)
        goto fail;
    const json_t *tasks = json_object_get(root, "tasks");
    if (tasks == NULL) {
        rc = err_fmt(msg, cap, ERR_INVAL, "missing \"tasks\"");
        goto fail;
    }
    if (!json_is_array(tasks)) {
        rc = err_fmt(msg, cap, ERR_INVAL, "\"tasks\" must be an array");
        goto fail;
    }
    size_t nentries = json_array_size(tasks), n = 0;
    if (nentries == 0) {
        rc = err_fmt(msg, cap, ERR_INVAL, "\"tasks\" is empty: a job needs at least one task");
        goto fail;
    }
    /* arrays are expanded at load: count first, so the total is bounded before allocation */
    int arrays = 0;
    size_t narrays = 0;
    for (size_t e = 0; e < nentries; e++) {
        size_t alen;
        const json_t *v = json_array_get(tasks, e);
        if ((rc = spec__array_len(v, e, lim, &alen, msg, cap)) != 0)
            goto fail;
        arrays |= alen > 1;
        narrays += json_is_object(v) && json_object_get(v, "array") != NULL;
        n = alen > SIZE_MAX - n ? SIZE_MAX : n + alen;
    }
    if (n > lim->max_tasks) {
        rc = err_fmt(msg, cap, ERR_TOOBIG, "too many tasks: %zu%s, over the limit of %zu", n,
                     arrays ? " with arrays expanded" : "", lim->max_tasks);
        goto fail;
    }
    s->tasks = mem_calloc(n, sizeof *s->tasks);
    stage_names = mem_calloc(n, sizeof *stage_names);
    src = mem_calloc(n, sizeof *src);
    s->arrays__ = narrays > 0 ? mem_calloc(narrays, sizeof *s->arrays__) : NULL;
    if (s->tasks == NULL || stage_names == NULL || src == NULL ||
        (narrays > 0 && s->arrays__ == NULL)) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t e = 0; e < nentries; e++) {
        const json_t *v = json_array_get(tasks, e);
        size_t alen;
        if ((rc = spec__array_len(v, e, lim, &alen, msg, cap)) != 0) /* passed above */
            goto fail;
        const json_t *a = json_is_object(v) ? json_object_get(v, "array") : NULL;
        size_t first = s->ntasks;
        if (a == NULL) {
            s->ntasks++;
            src[first] = (struct spec__src){e, SPEC__NOT_ARRAY};
            if ((rc = spec__task(&s->tasks[first], v, e, 0, lim, &stage_names[first], msg, cap)) !=
                0)
                goto fail;
            continue;
        }
        /* the template stays with the spec: its elements share its strings */
        struct spec_task *tpl = &s->arrays__[s->narrays__++];
        const char *stage = NULL;
        rc = spec__task(tpl, v, e, alen, lim, &stage, msg, cap);
        for (size_t k = 0; k < alen && rc == 0; k++) {
            s->ntasks++;
            src[first + k] = (struct spec__src){e, k};
            stage_names[first + k] = stage;
            rc = spec__elem(tpl, k, &s->tasks[first + k], msg, cap);
        }
        if (rc != 0)
            goto fail;
    }
    if ((rc = spec__graph(s, root, stage_names, src, msg, cap)) != 0)
        goto fail;
    mem_free(stage_names);
    mem_free(src);
    json_decref(root);
    *out = s;
    return 0;
fail:
    mem_free(stage_names);
    mem_free(src);
    spec_destroy(&s);
    json_decref(root);
    return rc;
}

int spec_check_limits(const struct spec *spec, const struct spec_limits *lim, char *msg, size_t cap)
{
    if (spec->ntasks > lim->max_tasks)
        return err_fmt(msg, cap, ERR_TOOBIG, "too many tasks: %zu, over the limit of %zu",
                       spec->ntasks, lim->max_tasks);
    for (size_t i = 0; i < spec->ntasks; i++) {
        const struct spec_task *t = &spec->tasks[i];
        if (t->cpu > lim->max_cpu)
            return err_fmt(msg, cap, ERR_CAPACITY,
                           "task \"%s\": cpu %g is larger than any node could hold (max %g)", t->id,
                           t->cpu, lim->max_cpu);
        if (t->mem_mb > lim->max_mem_mb)
            return err_fmt(msg, cap, ERR_CAPACITY,
                           "task \"%s\": mem_mb %llu is larger than any node could hold (max %llu)",
                           t->id, (unsigned long long)t->mem_mb,
                           (unsigned long long)lim->max_mem_mb);
    }
    return 0;
}

int spec_load(const char *path, const struct spec_limits *lim, struct spec **out, char *msg,
              size_t cap)
{
    struct spec_limits def;
    if (lim == NULL) {
        spec_limits_default(&def);
        lim = &def;
    }
    if (out != NULL)
        *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size > lim->max_bytes) {
        fclose(f);
        return err_fmt(msg, cap, ERR_TOOBIG, "%s: %lld bytes, over the limit of %zu", path,
                       (long long)st.st_size, lim->max_bytes);
    }
    size_t want = lim->max_bytes < SIZE_MAX ? lim->max_bytes + 1 : lim->max_bytes;
    size_t have = 0, alloc = 0;
    char *buf = NULL;
    for (;;) {
        if (have == alloc) {
            size_t na = alloc == 0 ? 65536 : alloc * 2;
            if (na > want)
                na = want;
            if (na == alloc)
                break;
            char *nb = mem_realloc(buf, na);
            if (nb == NULL) {
                mem_free(buf);
                fclose(f);
                return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
            }
            buf = nb;
            alloc = na;
        }
        size_t r = fread(buf + have, 1, alloc - have, f);
        have += r;
        if (r == 0)
            break;
    }
    int ioerr = ferror(f);
    fclose(f);
    if (ioerr) {
        mem_free(buf);
        return err_fmt(msg, cap, ERR_IO, "%s: read error", path);
    }
    if (have > lim->max_bytes) {
        mem_free(buf);
        return err_fmt(msg, cap, ERR_TOOBIG, "%s: over the limit of %zu bytes", path,
                       lim->max_bytes);
    }
    int rc = spec_parse(buf != NULL ? buf : "", have, lim, out, msg, cap);
    mem_free(buf);
    return rc;
}

static size_t spec__add_unique(const char **out, size_t n, size_t cap, size_t max_len,
                               const char *path)
{
    if (max_len > 0 && strlen(path) > max_len)
        return n;
    for (size_t k = 0; k < n; k++)
        if (strcmp(out[k], path) == 0)
            return n;
    if (n < cap)
        out[n++] = path;
    return n;
}

size_t spec_declared_inputs(const struct spec *spec, size_t max_len, const char **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < spec->nreads && n < cap; i++)
        n = spec__add_unique(out, n, cap, max_len, spec->reads[i]);
    for (size_t t = 0; t < spec->ntasks && n < cap; t++)
        for (size_t f = 0; f < spec->tasks[t].nfiles && n < cap; f++)
            n = spec__add_unique(out, n, cap, max_len, spec->tasks[t].files[f].path);
    return n;
}

double spec_utility_at(const struct spec *spec, double t_s)
{
    if (spec->nutility == 0) {
        if (spec->has_deadline)
            return t_s <= spec->deadline_s ? 1.0 : -1.0;
        return 1.0;
    }
    const struct spec_point *p = spec->utility;
    size_t n = spec->nutility;
    if (t_s <= p[0].t_s)
        return p[0].u;
    for (size_t i = 1; i < n; i++) {
        if (t_s <= p[i].t_s) {
            double f = (t_s - p[i - 1].t_s) / (p[i].t_s - p[i - 1].t_s);
            return p[i - 1].u + f * (p[i].u - p[i - 1].u);
        }
    }
    return p[n - 1].u;
}
