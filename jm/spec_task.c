/* spec_task.c - one entry of a spec's "tasks": its fields (cmd, inputs, files, outputs, env,
 * resources, speculate) checked and copied into a struct spec_task, and freed again. */
#include "jm/spec.h"
#include "jm/spec_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

void spec__free_strv(char **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        mem_free(v[i]);
    mem_free(v);
}

void spec__task_free(struct spec_task *t)
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
int spec__task(struct spec_task *t, const json_t *v, size_t idx, size_t array,
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
