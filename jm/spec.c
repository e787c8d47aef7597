/* spec.c - job spec v1 parsing: JSON shape and field validation. The graph checks (id
 * resolution, barriers, cycles, topological order) are in spec_graph.c. */
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

static void spec__free_strv(char **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        mem_free(v[i]);
    mem_free(v);
}

static void spec__task_free(struct spec_task *t)
{
    if (t->block__ != NULL) { /* an array element: id, cmd and env in one block */
        mem_free(t->block__);
        t->id = NULL;
        t->cmd = NULL;
        t->ncmd = 0;
        t->env = NULL;
        t->nenv = 0;
    }
    mem_free(t->id);
    spec__free_strv(t->cmd, t->ncmd);
    mem_free(t->after);
    for (size_t k = 0; k < t->ninputs; k++)
        spec__free_strv(t->inputs[k].nodes, t->inputs[k].nnodes);
    mem_free(t->inputs);
    for (size_t k = 0; k < t->nfiles; k++)
        mem_free(t->files[k].path);
    mem_free(t->files);
    for (size_t k = 0; k < t->noutputs; k++)
        mem_free(t->outputs[k].path);
    mem_free(t->outputs);
    for (size_t k = 0; k < t->nenv; k++) {
        mem_free(t->env[k].key);
        mem_free(t->env[k].value);
    }
    mem_free(t->env);
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

/* Copies a JSON string that must be 1..maxlen bytes with no NUL or control characters (when
 * `printable`), or reports why not. `what` names the field for the message. */
int spec__string(const json_t *v, size_t maxlen, int printable, const char *ctx, const char *what,
                 char **out, char *msg, size_t cap)
{
    *out = NULL;
    if (!json_is_string(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be a string", ctx, what);
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    if (len == 0)
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must not be empty", ctx, what);
    if (len > maxlen)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s%s is %zu bytes, over the limit of %zu", ctx, what,
                       len, maxlen);
    if (strlen(s) != len)
        return err_fmt(msg, cap, ERR_INVAL, "%s%s contains a NUL character", ctx, what);
    if (printable) {
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c < 0x20 || c == 0x7f)
                return err_fmt(msg, cap, ERR_INVAL, "%s%s contains a control character", ctx, what);
        }
    }
    *out = mem_strndup(s, len);
    return *out == NULL ? err_fmt(msg, cap, ERR_NOMEM, "out of memory") : 0;
}

/* Checks an object's keys against a NULL-terminated allow list. */
static int spec__keys(const json_t *obj, const char *const *allowed, const char *ctx, char *msg,
                      size_t cap)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        (void)val;
        int ok = 0;
        for (size_t i = 0; allowed[i] != NULL; i++)
            if (strcmp(key, allowed[i]) == 0)
                ok = 1;
        if (!ok)
            return err_fmt(msg, cap, ERR_INVAL, "%sunknown key \"%.64s\"", ctx, key);
    }
    return 0;
}

/* A finite JSON number (integer or real). */
static int spec__number(const json_t *v, const char *ctx, const char *what, double *out, char *msg,
                        size_t cap)
{
    if (!json_is_number(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be a number", ctx, what);
    double d = json_number_value(v);
    if (!isfinite(d))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be finite", ctx, what);
    *out = d;
    return 0;
}

/* A non-negative JSON integer. */
static int spec__uint(const json_t *v, const char *ctx, const char *what, uint64_t *out, char *msg,
                      size_t cap)
{
    if (!json_is_integer(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be an integer", ctx, what);
    json_int_t i = json_integer_value(v);
    if (i < 0)
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must not be negative (got %lld)", ctx, what,
                       (long long)i);
    *out = (uint64_t)i;
    return 0;
}

static uint64_t spec__sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int spec__cmd(struct spec_task *t, const json_t *v, const char *ctx, char *msg, size_t cap)
{
    if (v == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "%smissing command (\"cmd\")", ctx);
    if (!json_is_array(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s\"cmd\" must be an array of strings", ctx);
    size_t n = json_array_size(v);
    if (n == 0)
        return err_fmt(msg, cap, ERR_INVAL, "%sempty command (\"cmd\" is [])", ctx);
    if (n > SPEC_MAX_ARGS)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s\"cmd\" has %zu elements, over the limit of %d",
                       ctx, n, SPEC_MAX_ARGS);
    t->cmd = mem_calloc(n, sizeof *t->cmd);
    if (t->cmd == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(v, i);
        if (!json_is_string(a))
            return err_fmt(msg, cap, ERR_INVAL, "%s\"cmd\"[%zu] must be a string", ctx, i);
        if (i == 0 && json_string_length(a) == 0)
            return err_fmt(msg, cap, ERR_INVAL, "%sempty command (\"cmd\"[0] is \"\")", ctx);
        size_t len = json_string_length(a);
        if (len > SPEC_MAX_ARG_LEN)
            return err_fmt(msg, cap, ERR_TOOBIG, "%s\"cmd\"[%zu] is over %d bytes", ctx, i,
                           SPEC_MAX_ARG_LEN);
        if (strlen(json_string_value(a)) != len)
            return err_fmt(msg, cap, ERR_INVAL, "%s\"cmd\"[%zu] contains a NUL character", ctx, i);
        t->cmd[i] = mem_strndup(json_string_value(a), len);
        if (t->cmd[i] == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        t->ncmd = i + 1;
    }
    return 0;
}

static int spec__inputs(struct spec_task *t, const json_t *v, const char *ctx, char *msg,
                        size_t cap)
{
    static const char *const keys[] = {"bytes", "nodes", NULL};
    if (!json_is_array(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s\"inputs\" must be an array", ctx);
    size_t n = json_array_size(v);
    if (n > SPEC_MAX_INPUTS)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s\"inputs\" has %zu entries, over the limit of %d",
                       ctx, n, SPEC_MAX_INPUTS);
    if (n == 0)
        return 0;
    t->inputs = mem_calloc(n, sizeof *t->inputs);
    if (t->inputs == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *in = json_array_get(v, i);
        struct spec_input *si = &t->inputs[i];
        t->ninputs = i + 1;
        char sub[SPEC_MAX_ID_LEN + 160];
        snprintf(sub, sizeof sub, "%sinputs[%zu]: ", ctx, i);
        if (!json_is_object(in))
            return err_fmt(msg, cap, ERR_INVAL, "%smust be an object", sub);
        int rc = spec__keys(in, keys, sub, msg, cap);
        if (rc != 0)
            return rc;
        const json_t *b = json_object_get(in, "bytes");
        if (b == NULL)
            return err_fmt(msg, cap, ERR_INVAL, "%smissing \"bytes\"", sub);
        if ((rc = spec__uint(b, sub, "\"bytes\"", &si->bytes, msg, cap)) != 0)
            return rc;
        t->input_bytes = spec__sat_add(t->input_bytes, si->bytes);
        const json_t *nodes = json_object_get(in, "nodes");
        if (nodes == NULL)
            continue;
        if (!json_is_array(nodes))
            return err_fmt(msg, cap, ERR_INVAL, "%s\"nodes\" must be an array of node names", sub);
        size_t nn = json_array_size(nodes);
        if (nn > SPEC_MAX_INPUT_NODES)
            return err_fmt(msg, cap, ERR_TOOBIG,
                           "%s\"nodes\" has %zu entries, over the limit of %d", sub, nn,
                           SPEC_MAX_INPUT_NODES);
        if (nn == 0)
            continue;
        si->nodes = mem_calloc(nn, sizeof *si->nodes);
        if (si->nodes == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < nn; k++) {
            rc = spec__string(json_array_get(nodes, k), SPEC_MAX_ID_LEN, 1, sub, "node name",
                              &si->nodes[k], msg, cap);
            if (rc != 0)
                return rc;
            si->nnodes = k + 1;
        }
    }
    return 0;
}

static int spec__files(struct spec_task *t, const json_t *v, const char *ctx, char *msg, size_t cap)
{
    static const char *const keys[] = {"path", "bytes", NULL};
    if (!json_is_array(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s\"files\" must be an array", ctx);
    size_t n = json_array_size(v);
    if (n > SPEC_MAX_FILES)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s\"files\" has %zu entries, over the limit of %d",
                       ctx, n, SPEC_MAX_FILES);
    if (n == 0)
        return 0;
    t->files = mem_calloc(n, sizeof *t->files);
    if (t->files == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(v, i);
        char sub[SPEC_MAX_ID_LEN + 160];
        snprintf(sub, sizeof sub, "%sfiles[%zu]: ", ctx, i);
        if (!json_is_object(f))
            return err_fmt(msg, cap, ERR_INVAL, "%smust be an object", sub);
        int rc = spec__keys(f, keys, sub, msg, cap);
        if (rc != 0)
            return rc;
        const json_t *p = json_object_get(f, "path");
        if (p == NULL)
            return err_fmt(msg, cap, ERR_INVAL, "%smissing \"path\"", sub);
        if ((rc = spec__string(p, SPEC_MAX_ARG_LEN, 1, sub, "\"path\"", &t->files[i].path, msg,
                               cap)) != 0)
            return rc;
        t->nfiles = i + 1;
        const json_t *b = json_object_get(f, "bytes");
        if (b != NULL && (rc = spec__uint(b, sub, "\"bytes\"", &t->files[i].bytes, msg, cap)) != 0)
            return rc;
        t->file_bytes = spec__sat_add(t->file_bytes, t->files[i].bytes);
    }
    return 0;
}

/* "outputs": [{"path": "...", "bytes": N, "local": true}]: what the task writes; "local" ones
 * stay on the node that ran it (a child reads them from there), so losing that node before every
 * child has run loses them (docs/stragglers.md, "Lost outputs"). */
static int spec__outputs(struct spec_task *t, const json_t *v, const char *ctx, char *msg,
                         size_t cap)
{
    static const char *const keys[] = {"path", "bytes", "local", NULL};
    if (!json_is_array(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s\"outputs\" must be an array", ctx);
    size_t n = json_array_size(v);
    if (n > SPEC_MAX_OUTPUTS)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s\"outputs\" has %zu entries, over the limit of %d",
                       ctx, n, SPEC_MAX_OUTPUTS);
    if (n == 0)
        return 0;
    t->outputs = mem_calloc(n, sizeof *t->outputs);
    if (t->outputs == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(v, i);
        char sub[SPEC_MAX_ID_LEN + 160];
        snprintf(sub, sizeof sub, "%soutputs[%zu]: ", ctx, i);
        if (!json_is_object(f))
            return err_fmt(msg, cap, ERR_INVAL, "%smust be an object", sub);
        int rc = spec__keys(f, keys, sub, msg, cap);
        if (rc != 0)
            return rc;
        const json_t *p = json_object_get(f, "path");
        if (p == NULL)
            return err_fmt(msg, cap, ERR_INVAL, "%smissing \"path\"", sub);
        if ((rc = spec__string(p, SPEC_MAX_PATH_LEN, 1, sub, "\"path\"", &t->outputs[i].path, msg,
                               cap)) != 0)
            return rc;
        t->noutputs = i + 1;
        for (const char *c = t->outputs[i].path; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return err_fmt(msg, cap, ERR_INVAL, "%s\"path\" contains a control character", sub);
        const json_t *b = json_object_get(f, "bytes");
        if (b != NULL &&
            (rc = spec__uint(b, sub, "\"bytes\"", &t->outputs[i].bytes, msg, cap)) != 0)
            return rc;
        const json_t *l = json_object_get(f, "local");
        if (l != NULL && !json_is_boolean(l))
            return err_fmt(msg, cap, ERR_INVAL, "%s\"local\" must be true or false", sub);
        t->outputs[i].local = l != NULL && json_is_true(l);
        if (t->outputs[i].local)
            t->local_outputs++;
    }
    return 0;
}

static int spec__env(struct spec_task *t, const json_t *v, const char *ctx, char *msg, size_t cap)
{
    if (!json_is_object(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s\"env\" must be an object of strings", ctx);
    size_t n = json_object_size(v);
    if (n > SPEC_MAX_ENV)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s\"env\" has %zu entries, over the limit of %d", ctx,
                       n, SPEC_MAX_ENV);
    if (n == 0)
        return 0;
    t->env = mem_calloc(n, sizeof *t->env);
    if (t->env == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        size_t klen = strlen(key);
        if (klen == 0 || klen > SPEC_MAX_ID_LEN || strchr(key, '=') != NULL)
            return err_fmt(msg, cap, ERR_INVAL,
                           "%s\"env\" key \"%.64s\" must be 1..%d bytes without '='", ctx, key,
                           SPEC_MAX_ID_LEN);
        if (!json_is_string(val))
            return err_fmt(msg, cap, ERR_INVAL, "%s\"env\".%.64s must be a string", ctx, key);
        size_t vlen = json_string_length(val);
        if (vlen > SPEC_MAX_ARG_LEN || strlen(json_string_value(val)) != vlen)
            return err_fmt(msg, cap, ERR_INVAL, "%s\"env\".%.64s is too long or contains NUL", ctx,
                           key);
        struct spec_env *e = &t->env[t->nenv];
        e->key = mem_strdup(key);
        e->value = mem_strndup(json_string_value(val), vlen);
        t->nenv++;
        if (e->key == NULL || e->value == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* Fields of one task that need no other task: everything but "after" (read again by
 * spec__graph) and the stage (its name kept in `stage_name`, borrowed from `v` or t->id). An
 * "array" entry (`array` > 0) is parsed once as a template, "{i}" still in it. */
static int spec__task(struct spec_task *t, const json_t *v, size_t idx, size_t array,
                      const struct spec_limits *lim, const char **stage_name, char *msg, size_t cap)
{
    static const char *const keys[] = {"id",        "stage",     "cmd",    "cpu",   "mem_mb",
                                       "runtime_s", "after",     "inputs", "files", "env",
                                       "outputs",   "speculate", "array",  NULL};
    char ctx[SPEC_MAX_ID_LEN + 64];
    snprintf(ctx, sizeof ctx, "tasks[%zu]: ", idx);
    if (!json_is_object(v))
        return err_fmt(msg, cap, ERR_INVAL, "%smust be an object", ctx);
    const json_t *id = json_object_get(v, "id");
    if (id == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "%smissing \"id\"", ctx);
    int rc = spec__string(id, SPEC_MAX_ID_LEN, 1, ctx, "\"id\"", &t->id, msg, cap);
    if (rc != 0)
        return rc;
    for (const char *c = t->id; *c != '\0'; c++)
        if (*c == ' ' || *c == '"' || *c == '\\')
            return err_fmt(msg, cap, ERR_INVAL,
                           "%s\"id\" \"%s\" contains a space, quote or backslash", ctx, t->id);
    int has_i = strstr(t->id, SPEC_ARRAY_INDEX) != NULL;
    if (array > 0 && !has_i)
        return err_fmt(msg, cap, ERR_INVAL,
                       "%s\"array\" needs \"" SPEC_ARRAY_INDEX "\" in \"id\" (got \"%s\")", ctx,
                       t->id);
    if (array == 0 && has_i)
        return err_fmt(msg, cap, ERR_INVAL,
                       "%s\"id\" \"%s\" has \"" SPEC_ARRAY_INDEX "\" but the task has no \"array\"",
                       ctx, t->id);
    snprintf(ctx, sizeof ctx, "task \"%s\": ", t->id);
    if ((rc = spec__keys(v, keys, ctx, msg, cap)) != 0)
        return rc;
    if ((rc = spec__cmd(t, json_object_get(v, "cmd"), ctx, msg, cap)) != 0)
        return rc;

    const json_t *f;
    t->cpu = 1.0;
    if ((f = json_object_get(v, "cpu")) != NULL) {
        if ((rc = spec__number(f, ctx, "cpu", &t->cpu, msg, cap)) != 0)
            return rc;
        if (t->cpu <= 0)
            return err_fmt(msg, cap, ERR_INVAL, "%scpu must be positive (got %g)", ctx, t->cpu);
        if (t->cpu > lim->max_cpu)
            return err_fmt(msg, cap, ERR_CAPACITY,
                           "%scpu %g is larger than any node could hold (max %g)", ctx, t->cpu,
                           lim->max_cpu);
    }
    t->mem_mb = 256;
    if ((f = json_object_get(v, "mem_mb")) != NULL) {
        double d;
        if ((rc = spec__number(f, ctx, "mem_mb", &d, msg, cap)) != 0)
            return rc;
        if (d <= 0)
            return err_fmt(msg, cap, ERR_INVAL, "%smem_mb must be positive (got %g)", ctx, d);
        if (d > (double)lim->max_mem_mb)
            return err_fmt(msg, cap, ERR_CAPACITY,
                           "%smem_mb %g is larger than any node could hold (max %llu)", ctx, d,
                           (unsigned long long)lim->max_mem_mb);
        t->mem_mb = (uint64_t)ceil(d);
    }
    t->runtime_s = 1.0;
    if ((f = json_object_get(v, "runtime_s")) != NULL) {
        if ((rc = spec__number(f, ctx, "runtime_s", &t->runtime_s, msg, cap)) != 0)
            return rc;
        if (t->runtime_s <= 0)
            return err_fmt(msg, cap, ERR_INVAL, "%sruntime_s must be positive (got %g)", ctx,
                           t->runtime_s);
        if (t->runtime_s > SPEC_MAX_RUNTIME_S)
            return err_fmt(msg, cap, ERR_RANGE, "%sruntime_s %g is over one year", ctx,
                           t->runtime_s);
    }
    /* an array's elements are one stage, named by default as the array's id is written */
    *stage_name = array > 0 ? json_string_value(id) : t->id;
    if ((f = json_object_get(v, "stage")) != NULL) {
        char *tmp;
        if ((rc = spec__string(f, SPEC_MAX_ID_LEN, 1, ctx, "\"stage\"", &tmp, msg, cap)) != 0)
            return rc;
        mem_free(tmp);
        *stage_name = json_string_value(f);
    }
    if ((f = json_object_get(v, "after")) != NULL) {
        if (!json_is_array(f))
            return err_fmt(msg, cap, ERR_INVAL, "%s\"after\" must be an array of task ids", ctx);
        if (json_array_size(f) > SPEC_MAX_AFTER)
            return err_fmt(msg, cap, ERR_TOOBIG,
                           "%s\"after\" has %zu entries, over the limit of %d", ctx,
                           json_array_size(f), SPEC_MAX_AFTER);
        for (size_t i = 0; i < json_array_size(f); i++)
            if (!json_is_string(json_array_get(f, i)))
                return err_fmt(msg, cap, ERR_INVAL, "%s\"after\"[%zu] must be a task id string",
                               ctx, i);
    }
    if ((f = json_object_get(v, "inputs")) != NULL && (rc = spec__inputs(t, f, ctx, msg, cap)) != 0)
        return rc;
    if ((f = json_object_get(v, "files")) != NULL && (rc = spec__files(t, f, ctx, msg, cap)) != 0)
        return rc;
    if ((f = json_object_get(v, "env")) != NULL && (rc = spec__env(t, f, ctx, msg, cap)) != 0)
        return rc;
    if ((f = json_object_get(v, "outputs")) != NULL &&
        (rc = spec__outputs(t, f, ctx, msg, cap)) != 0)
        return rc;
    t->speculate = 1;
    if ((f = json_object_get(v, "speculate")) != NULL) {
        if (!json_is_boolean(f))
            return err_fmt(msg, cap, ERR_INVAL, "%s\"speculate\" must be true or false", ctx);
        t->speculate = json_is_true(f);
    }
    return 0;
}

/* The length of `s` with every "{i}" replaced by a number of `nlen` digits. */
static size_t spec__subst_len(const char *s, size_t nlen)
{
    static const size_t tlen = sizeof SPEC_ARRAY_INDEX - 1;
    size_t len = 0;
    const char *p = s, *q;
    while ((q = strstr(p, SPEC_ARRAY_INDEX)) != NULL) {
        len += (size_t)(q - p) + nlen;
        p = q + tlen;
    }
    return len + strlen(p);
}

/* Writes `s` with "{i}" replaced by `num` (and a NUL) at w; returns the byte after the NUL. */
static char *spec__subst_into(char *w, const char *s, const char *num, size_t nlen)
{
    static const size_t tlen = sizeof SPEC_ARRAY_INDEX - 1;
    const char *p, *q;
    for (p = s; (q = strstr(p, SPEC_ARRAY_INDEX)) != NULL; p = q + tlen) {
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, num, nlen);
        w += nlen;
    }
    size_t rest = strlen(p) + 1;
    memcpy(w, p, rest);
    return w + rest;
}

/* A copy of `s` with every "{i}" replaced by `num` (caller owns), or NULL when out of memory or
 * when the result would be over `maxlen` bytes (*toolong set). */
static char *spec__subst(const char *s, const char *num, size_t maxlen, int *toolong)
{
    size_t nlen = strlen(num), len = spec__subst_len(s, nlen);
    *toolong = len > maxlen;
    if (*toolong)
        return NULL;
    char *out = mem_alloc(len + 1);
    if (out != NULL)
        spec__subst_into(out, s, num, nlen);
    return out;
}

/* One string of an array element: "{i}" replaced, or the reason it cannot be. */
static int spec__elem_str(const char *tpl, const char *num, size_t maxlen, const char *ctx,
                          const char *what, char **out, char *msg, size_t cap)
{
    int toolong = 0;
    *out = spec__subst(tpl, num, maxlen, &toolong);
    if (toolong)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s%s is over %zu bytes", ctx, what, maxlen);
    return *out == NULL ? err_fmt(msg, cap, ERR_NOMEM, "out of memory") : 0;
}

/* Element `elem` of an array task: a deep copy of the template `tpl` with "{i}" replaced by the
 * element's index in the id, the command, env values and the paths of files and outputs. On
 * failure `out` holds what was copied so far (spec__task_free frees it). */
static int spec__elem(const struct spec_task *tpl, size_t elem, struct spec_task *out, char *msg,
                      size_t cap)
{
    char num[24], ctx[SPEC_MAX_ID_LEN + 64];
    snprintf(num, sizeof num, "%zu", elem);
    *out = *tpl;
    out->block__ = NULL;
    out->id = NULL;
    out->cmd = NULL;
    out->ncmd = 0;
    out->after = NULL;
    out->nafter = 0;
    out->inputs = NULL;
    out->ninputs = 0;
    out->files = NULL;
    out->nfiles = 0;
    out->env = NULL;
    out->nenv = 0;
    out->outputs = NULL;
    out->noutputs = 0;
    /* id, cmd and env in one allocation: the pointer arrays, then the strings "{i}" changes;
       the others point into the template, which the spec keeps (arrays__) */
    size_t nlen = strlen(num),
           sz = tpl->ncmd * sizeof(char *) + tpl->nenv * sizeof(struct spec_env);
    size_t idlen = spec__subst_len(tpl->id, nlen);
    if (idlen > SPEC_MAX_ID_LEN)
        return err_fmt(msg, cap, ERR_TOOBIG, "task \"%s\" element %zu: \"id\" is over %d bytes",
                       tpl->id, elem, SPEC_MAX_ID_LEN);
    sz += idlen + 1;
    for (size_t k = 0; k < tpl->ncmd; k++) {
        size_t l = spec__subst_len(tpl->cmd[k], nlen);
        if (l > SPEC_MAX_ARG_LEN)
            return err_fmt(msg, cap, ERR_TOOBIG,
                           "task \"%s\" element %zu: \"cmd\" element is over %d bytes", tpl->id,
                           elem, SPEC_MAX_ARG_LEN);
        sz += strstr(tpl->cmd[k], SPEC_ARRAY_INDEX) != NULL ? l + 1 : 0;
    }
    for (size_t k = 0; k < tpl->nenv; k++) {
        size_t l = spec__subst_len(tpl->env[k].value, nlen);
        if (l > SPEC_MAX_ARG_LEN)
            return err_fmt(msg, cap, ERR_TOOBIG,
                           "task \"%s\" element %zu: \"env\" value is over %d bytes", tpl->id, elem,
                           SPEC_MAX_ARG_LEN);
        sz += strstr(tpl->env[k].value, SPEC_ARRAY_INDEX) != NULL ? l + 1 : 0;
    }
    char *b = mem_alloc(sz);
    if (b == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    out->block__ = b;
    out->cmd = (char **)(void *)b;
    out->ncmd = tpl->ncmd;
    out->env = tpl->nenv > 0 ? (struct spec_env *)(void *)(b + tpl->ncmd * sizeof(char *)) : NULL;
    out->nenv = tpl->nenv;
    char *w = b + tpl->ncmd * sizeof(char *) + tpl->nenv * sizeof(struct spec_env);
    out->id = w;
    w = spec__subst_into(w, tpl->id, num, nlen);
    for (size_t k = 0; k < tpl->ncmd; k++) {
        if (strstr(tpl->cmd[k], SPEC_ARRAY_INDEX) == NULL) {
            out->cmd[k] = tpl->cmd[k];
            continue;
        }
        out->cmd[k] = w;
        w = spec__subst_into(w, tpl->cmd[k], num, nlen);
    }
    for (size_t k = 0; k < tpl->nenv; k++) {
        out->env[k].key = tpl->env[k].key;
        if (strstr(tpl->env[k].value, SPEC_ARRAY_INDEX) == NULL) {
            out->env[k].value = tpl->env[k].value;
            continue;
        }
        out->env[k].value = w;
        w = spec__subst_into(w, tpl->env[k].value, num, nlen);
    }
    int rc;
    if (tpl->nfiles > 0 || tpl->noutputs > 0) /* only these name the element in a message */
        snprintf(ctx, sizeof ctx, "task \"%s\" element %zu: ", tpl->id, elem);
    if (tpl->ninputs > 0) {
        if ((out->inputs = mem_calloc(tpl->ninputs, sizeof *out->inputs)) == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < tpl->ninputs; k++) {
            const struct spec_input *in = &tpl->inputs[k];
            out->ninputs = k + 1; /* counted before its nodes, so a failure frees them */
            out->inputs[k].bytes = in->bytes;
            if (in->nnodes == 0)
                continue;
            if ((out->inputs[k].nodes = mem_calloc(in->nnodes, sizeof(char *))) == NULL)
                return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
            for (size_t m = 0; m < in->nnodes; m++, out->inputs[k].nnodes++)
                if ((out->inputs[k].nodes[m] = mem_strdup(in->nodes[m])) == NULL)
                    return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        }
    }
    if (tpl->nfiles > 0) {
        if ((out->files = mem_calloc(tpl->nfiles, sizeof *out->files)) == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < tpl->nfiles; k++, out->nfiles++) {
            out->files[k].bytes = tpl->files[k].bytes;
            if ((rc = spec__elem_str(tpl->files[k].path, num, SPEC_MAX_ARG_LEN, ctx,
                                     "\"files\" path", &out->files[k].path, msg, cap)) != 0)
                return rc;
        }
    }
    if (tpl->noutputs > 0) {
        if ((out->outputs = mem_calloc(tpl->noutputs, sizeof *out->outputs)) == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < tpl->noutputs; k++, out->noutputs++) {
            out->outputs[k].bytes = tpl->outputs[k].bytes;
            out->outputs[k].local = tpl->outputs[k].local;
            if ((rc = spec__elem_str(tpl->outputs[k].path, num, SPEC_MAX_PATH_LEN, ctx,
                                     "\"outputs\" path", &out->outputs[k].path, msg, cap)) != 0)
                return rc;
        }
    }
    return 0;
}

/* How many tasks entry `idx` of "tasks" stands for: its "array" length, else 1. The length is
 * checked here, before anything is allocated in proportion to it. */
static int spec__array_len(const json_t *v, size_t idx, const struct spec_limits *lim, size_t *out,
                           char *msg, size_t cap)
{
    const json_t *a = json_is_object(v) ? json_object_get(v, "array") : NULL;
    *out = 1;
    if (a == NULL)
        return 0;
    const json_t *id = json_object_get(v, "id");
    char ctx[SPEC_MAX_ID_LEN + 64];
    if (json_is_string(id) && json_string_length(id) <= SPEC_MAX_ID_LEN &&
        strlen(json_string_value(id)) == json_string_length(id))
        snprintf(ctx, sizeof ctx, "task \"%s\": ", json_string_value(id));
    else
        snprintf(ctx, sizeof ctx, "tasks[%zu]: ", idx);
    if (!json_is_integer(a))
        return err_fmt(msg, cap, ERR_INVAL, "%s\"array\" must be a positive integer", ctx);
    json_int_t n = json_integer_value(a);
    if (n <= 0)
        return err_fmt(msg, cap, ERR_INVAL, "%s\"array\" must be a positive integer (got %lld)",
                       ctx, (long long)n);
    if ((unsigned long long)n > lim->max_tasks)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s\"array\" of %lld tasks is over the limit of %zu",
                       ctx, (long long)n, lim->max_tasks);
    *out = (size_t)n;
    return 0;
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
        spec__array_len(v, e, lim, &alen, msg, cap); /* checked above */
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
