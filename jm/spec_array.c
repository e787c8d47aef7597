/* spec_array.c - array entries of a spec ("array": N): the length checked before anything is
 * allocated for it, and each element made from the template with "{i}" replaced by its index. */
#include "jm/spec.h"
#include "jm/spec_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

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
int spec__elem(const struct spec_task *tpl, size_t elem, struct spec_task *out, char *msg,
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
int spec__array_len(const json_t *v, size_t idx, const struct spec_limits *lim, size_t *out,
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
