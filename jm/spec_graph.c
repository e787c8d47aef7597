/* spec_graph.c - job spec v1: name resolution, stage barriers, cycle detection, topological order.
 *
 * Barriers are checked without expanding them into task-to-task edges: each stage j has a gate
 * node G_j (open when every stage in j.after is done) and a done node S_j (every task of j has
 * succeeded and G_j is open). Edges: after-task -> task, G_stage(t) -> t, t -> S_stage(t),
 * G_j -> S_j, S_k -> G_j for k in j.after. The graph has O(tasks + edges + stages) edges, and a
 * cycle in it is exactly a cycle of the job. */
#include "jm/spec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

struct spec__named {
    const char *name;
    size_t key;
};

static int spec__named_cmp(const void *a, const void *b)
{
    const struct spec__named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    return x->key < y->key ? -1 : x->key > y->key;
}

static int spec__key_cmp(const void *a, const void *b)
{
    const struct spec__named *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static int spec__size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts and deduplicates v[0..*n). */
static void spec__uniq(size_t *v, size_t *n)
{
    if (*n < 2)
        return;
    qsort(v, *n, sizeof *v, spec__size_cmp);
    size_t w = 1;
    for (size_t i = 1; i < *n; i++)
        if (v[i] != v[w - 1])
            v[w++] = v[i];
    *n = w;
}

long spec_task_index(const struct spec *spec, const char *id)
{
    if (spec == NULL || id == NULL || spec->by_id__ == NULL)
        return -1;
    size_t lo = 0, hi = spec->ntasks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(spec->tasks[spec->by_id__[mid]].id, id);
        if (c == 0)
            return (long)spec->by_id__[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

long spec_stage_index(const struct spec *spec, const char *name)
{
    if (spec == NULL || name == NULL || spec->by_name__ == NULL)
        return -1;
    size_t lo = 0, hi = spec->nstages;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(spec->stages[spec->by_name__[mid]].name, name);
        if (c == 0)
            return (long)spec->by_name__[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Builds s->stages from the declared stages and the tasks' stage names. */
static int spec__stages(struct spec *s, const json_t *decl, const char **stage_names, char *msg,
                        size_t cap)
{
    static const char *const keys[] = {"name", "after", "speculate", NULL};
    size_t ndecl = 0;
    if (decl != NULL) {
        if (!json_is_array(decl))
            return err_fmt(msg, cap, ERR_INVAL, "\"stages\" must be an array");
        ndecl = json_array_size(decl);
        if (ndecl > SPEC_MAX_STAGES)
            return err_fmt(msg, cap, ERR_TOOBIG, "\"stages\" has %zu entries, over the limit of %d",
                           ndecl, SPEC_MAX_STAGES);
        for (size_t i = 0; i < ndecl; i++) {
            const json_t *st = json_array_get(decl, i);
            char ctx[48];
            snprintf(ctx, sizeof ctx, "stages[%zu]: ", i);
            if (!json_is_object(st))
                return err_fmt(msg, cap, ERR_INVAL, "%smust be an object", ctx);
            const char *key;
            const json_t *val;
            json_object_foreach((json_t *)st, key, val)
            {
                (void)val;
                if (strcmp(key, keys[0]) != 0 && strcmp(key, keys[1]) != 0 &&
                    strcmp(key, keys[2]) != 0)
                    return err_fmt(msg, cap, ERR_INVAL, "%sunknown key \"%.64s\"", ctx, key);
            }
            const json_t *name = json_object_get(st, "name");
            if (name == NULL)
                return err_fmt(msg, cap, ERR_INVAL, "%smissing \"name\"", ctx);
            char *tmp;
            int rc = spec__string(name, SPEC_MAX_ID_LEN, 1, ctx, "\"name\"", &tmp, msg, cap);
            if (rc != 0)
                return rc;
            mem_free(tmp);
            const json_t *spec = json_object_get(st, "speculate");
            if (spec != NULL && !json_is_boolean(spec))
                return err_fmt(msg, cap, ERR_INVAL,
                               "stage \"%s\": \"speculate\" must be true or false",
                               json_string_value(name));
            const json_t *after = json_object_get(st, "after");
            if (after != NULL) {
                if (!json_is_array(after))
                    return err_fmt(msg, cap, ERR_INVAL,
                                   "stage \"%s\": \"after\" must be an array of stage names",
                                   json_string_value(name));
                if (json_array_size(after) > SPEC_MAX_STAGE_AFTER)
                    return err_fmt(msg, cap, ERR_TOOBIG,
                                   "stage \"%s\": \"after\" has %zu entries, over the limit of %d",
                                   json_string_value(name), json_array_size(after),
                                   SPEC_MAX_STAGE_AFTER);
                for (size_t k = 0; k < json_array_size(after); k++)
                    if (!json_is_string(json_array_get(after, k)))
                        return err_fmt(msg, cap, ERR_INVAL,
                                       "stage \"%s\": \"after\"[%zu] must be a stage name",
                                       json_string_value(name), k);
            }
        }
    }
    size_t total = ndecl + s->ntasks;
    struct spec__named *all = mem_calloc(total, sizeof *all);
    if (all == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < ndecl; i++)
        all[i] = (struct spec__named){
            json_string_value(json_object_get(json_array_get(decl, i), "name")), i};
    for (size_t i = 0; i < s->ntasks; i++)
        all[ndecl + i] = (struct spec__named){stage_names[i], ndecl + i};
    qsort(all, total, sizeof *all, spec__named_cmp);
    size_t nuniq = 0;
    for (size_t i = 0; i < total; i++) {
        if (i > 0 && strcmp(all[i].name, all[nuniq - 1].name) == 0) {
            if (all[i].key < ndecl) { /* both declared (sorted by key within a name) */
                int rc =
                    err_fmt(msg, cap, ERR_INVAL, "stage \"%s\" is declared twice", all[i].name);
                mem_free(all);
                return rc;
            }
            continue;
        }
        all[nuniq++] = all[i];
    }
    if (nuniq > SPEC_MAX_STAGES) {
        mem_free(all);
        return err_fmt(msg, cap, ERR_TOOBIG, "%zu stages, over the limit of %d", nuniq,
                       SPEC_MAX_STAGES);
    }
    qsort(all, nuniq, sizeof *all, spec__key_cmp);
    s->stages = mem_calloc(nuniq, sizeof *s->stages);
    s->by_name__ = mem_calloc(nuniq, sizeof *s->by_name__);
    if (s->stages == NULL || s->by_name__ == NULL) {
        mem_free(all);
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < nuniq; i++) {
        s->stages[i].name = mem_strdup(all[i].name);
        s->nstages = i + 1;
        s->stages[i].declared = all[i].key < ndecl;
        s->stages[i].speculate = 1;
        if (all[i].key < ndecl) {
            const json_t *sp = json_object_get(json_array_get(decl, all[i].key), "speculate");
            s->stages[i].speculate = sp == NULL || json_is_true(sp);
        }
        if (s->stages[i].name == NULL) {
            mem_free(all);
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        }
        all[i].name = s->stages[i].name;
        all[i].key = i;
    }
    qsort(all, nuniq, sizeof *all, spec__named_cmp);
    for (size_t i = 0; i < nuniq; i++)
        s->by_name__[i] = all[i].key;
    mem_free(all);

    /* stage membership */
    size_t *count = mem_calloc(nuniq, sizeof *count);
    if (count == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < s->ntasks; i++) {
        long st = spec_stage_index(s, stage_names[i]);
        s->tasks[i].stage = (size_t)st; /* always found: every name was inserted */
        count[st]++;
    }
    for (size_t j = 0; j < nuniq; j++) {
        if (count[j] == 0)
            continue;
        s->stages[j].tasks = mem_calloc(count[j], sizeof(size_t));
        if (s->stages[j].tasks == NULL) {
            mem_free(count);
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        }
    }
    mem_free(count);
    for (size_t i = 0; i < s->ntasks; i++) {
        struct spec_stage *st = &s->stages[s->tasks[i].stage];
        st->tasks[st->ntasks++] = i;
        if (!st->speculate)
            s->tasks[i].speculate = 0; /* the stage's false wins over the task's default */
    }

    /* barriers */
    for (size_t i = 0; i < ndecl; i++) {
        const json_t *st = json_array_get(decl, i);
        const json_t *after = json_object_get(st, "after");
        size_t na = after != NULL ? json_array_size(after) : 0;
        if (na == 0)
            continue;
        size_t j = (size_t)spec_stage_index(s, json_string_value(json_object_get(st, "name")));
        struct spec_stage *sj = &s->stages[j];
        sj->after = mem_calloc(na, sizeof *sj->after);
        if (sj->after == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < na; k++) {
            const char *nm = json_string_value(json_array_get(after, k));
            long a = spec_stage_index(s, nm);
            if (a < 0)
                return err_fmt(msg, cap, ERR_INVAL,
                               "stage \"%s\": \"after\" names unknown stage \"%.*s\"", sj->name,
                               SPEC_MAX_ID_LEN, nm);
            if ((size_t)a == j)
                return err_fmt(msg, cap, ERR_INVAL, "stage \"%s\": waits for itself", sj->name);
            sj->after[sj->nafter++] = (size_t)a;
        }
        spec__uniq(sj->after, &sj->nafter);
    }
    return 0;
}

/* "tasks[3]" or "tasks[3] element 12": where task `i` was written. */
static void spec__origin(const struct spec__src *src, size_t i, char *buf, size_t cap)
{
    if (src[i].elem == SPEC__NOT_ARRAY)
        snprintf(buf, cap, "tasks[%zu]", src[i].entry);
    else
        snprintf(buf, cap, "tasks[%zu] element %zu", src[i].entry, src[i].elem);
}

static int spec__ids(struct spec *s, const struct spec__src *src, char *msg, size_t cap)
{
    struct spec__named *all = mem_calloc(s->ntasks, sizeof *all);
    s->by_id__ = mem_calloc(s->ntasks, sizeof *s->by_id__);
    if (all == NULL || s->by_id__ == NULL) {
        mem_free(all);
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->ntasks; i++)
        all[i] = (struct spec__named){s->tasks[i].id, i};
    qsort(all, s->ntasks, sizeof *all, spec__named_cmp);
    for (size_t i = 0; i < s->ntasks; i++) {
        if (i > 0 && strcmp(all[i].name, all[i - 1].name) == 0) {
            char a[64], b[64];
            spec__origin(src, all[i - 1].key, a, sizeof a);
            spec__origin(src, all[i].key, b, sizeof b);
            int rc = err_fmt(msg, cap, ERR_INVAL, "duplicate task id \"%s\" (%s and %s)",
                             all[i].name, a, b);
            mem_free(all);
            return rc;
        }
        s->by_id__[i] = all[i].key;
    }
    mem_free(all);
    return 0;
}

/* Resolves one "after" entry of task i: for an array element, "{i}" is its index first. */
static int spec__after_one(const struct spec *s, size_t i, const struct spec__src *src,
                           const char *id, long *out, char *msg, size_t cap)
{
    const struct spec_task *t = &s->tasks[i];
    char buf[SPEC_MAX_ID_LEN + 1];
    const char *name = id;
    if (src[i].elem != SPEC__NOT_ARRAY && strstr(id, SPEC_ARRAY_INDEX) != NULL) {
        /* element-wise: "extract-{i}" is extract-7 for element 7 */
        char num[24];
        int nl = snprintf(num, sizeof num, "%zu", src[i].elem);
        size_t w = 0;
        const char *p = id, *q;
        while ((q = strstr(p, SPEC_ARRAY_INDEX)) != NULL && w != SIZE_MAX) {
            size_t seg = (size_t)(q - p);
            if (w + seg + (size_t)nl > SPEC_MAX_ID_LEN)
                w = SIZE_MAX;
            else {
                memcpy(buf + w, p, seg);
                memcpy(buf + w + seg, num, (size_t)nl);
                w += seg + (size_t)nl;
                p = q + sizeof SPEC_ARRAY_INDEX - 1;
            }
        }
        if (w != SIZE_MAX && w + strlen(p) <= SPEC_MAX_ID_LEN) {
            strcpy(buf + w, p);
            name = buf;
        } else {
            name = NULL; /* longer than any id: unknown */
        }
    }
    long a = name != NULL ? spec_task_index(s, name) : -1;
    if (a < 0 && src[i].elem == SPEC__NOT_ARRAY && strstr(id, SPEC_ARRAY_INDEX) != NULL)
        return err_fmt(msg, cap, ERR_INVAL,
                       "task \"%s\": \"after\" names \"%.*s\", an array: a task waits for a whole "
                       "array through its stage (\"stages\": [{\"name\": \"%s\", \"after\": "
                       "[\"<the array's stage>\"]}])",
                       t->id, SPEC_MAX_ID_LEN, id, s->stages[t->stage].name);
    if (a < 0)
        return err_fmt(msg, cap, ERR_INVAL, "task \"%s\": \"after\" names unknown task \"%.*s\"",
                       t->id, SPEC_MAX_ID_LEN, name != NULL ? name : id);
    if ((size_t)a == i)
        return err_fmt(msg, cap, ERR_INVAL, "task \"%s\": depends on itself", t->id);
    *out = a;
    return 0;
}

static int spec__after(struct spec *s, const json_t *tasks, const struct spec__src *src, char *msg,
                       size_t cap)
{
    size_t edges = 0;
    for (size_t i = 0; i < s->ntasks; i++) {
        const json_t *after = json_object_get(json_array_get(tasks, src[i].entry), "after");
        size_t na = after != NULL ? json_array_size(after) : 0;
        edges += na;
        if (edges > SPEC_MAX_EDGES)
            return err_fmt(msg, cap, ERR_TOOBIG, "more than %d dependencies in total",
                           SPEC_MAX_EDGES);
        if (na == 0)
            continue;
        struct spec_task *t = &s->tasks[i];
        t->after = mem_calloc(na, sizeof *t->after);
        if (t->after == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < na; k++) {
            long a = -1;
            int rc = spec__after_one(s, i, src, json_string_value(json_array_get(after, k)), &a,
                                     msg, cap);
            if (rc != 0)
                return rc;
            t->after[t->nafter++] = (size_t)a;
        }
        spec__uniq(t->after, &t->nafter);
    }
    return 0;
}

/* Appends one node's name to the cycle message. Gate nodes are not named. */
static void spec__cycle_name(const struct spec *s, size_t v, char *buf, size_t cap, size_t *len,
                             int *first)
{
    size_t n = s->ntasks, ns = s->nstages;
    if (v >= n && v < n + ns)
        return;
    if (*len + 1 >= cap)
        return;
    int w;
    if (v < n)
        w = snprintf(buf + *len, cap - *len, "%stask \"%s\"", *first ? "" : " -> ", s->tasks[v].id);
    else
        w = snprintf(buf + *len, cap - *len, "%sstage \"%s\"", *first ? "" : " -> ",
                     s->stages[v - n - ns].name);
    *first = 0;
    if (w > 0)
        *len += (size_t)w < cap - *len ? (size_t)w : cap - *len - 1;
}

/* Picks an unprocessed predecessor of v (one exists for every node Kahn left behind). */
static size_t spec__pred(const struct spec *s, size_t v, const size_t *indeg)
{
    size_t n = s->ntasks, ns = s->nstages;
    if (v < n) {
        const struct spec_task *t = &s->tasks[v];
        for (size_t k = 0; k < t->nafter; k++)
            if (indeg[t->after[k]] > 0)
                return t->after[k];
        return n + t->stage;
    }
    if (v < n + ns) {
        const struct spec_stage *st = &s->stages[v - n];
        for (size_t k = 0; k < st->nafter; k++)
            if (indeg[n + ns + st->after[k]] > 0)
                return n + ns + st->after[k];
        return v; /* unreachable for a left-behind gate */
    }
    const struct spec_stage *st = &s->stages[v - n - ns];
    for (size_t k = 0; k < st->ntasks; k++)
        if (indeg[st->tasks[k]] > 0)
            return st->tasks[k];
    return v - ns;
}

static int spec__cycle(const struct spec *s, const size_t *indeg, size_t total, char *msg,
                       size_t cap)
{
    size_t start = 0;
    while (start < total && indeg[start] == 0)
        start++;
    size_t *step = mem_calloc(total, sizeof *step); /* 0 = unvisited, else 1 + position */
    size_t *path = mem_calloc(total, sizeof *path);
    if (step == NULL || path == NULL) {
        mem_free(step);
        mem_free(path);
        return err_fmt(msg, cap, ERR_INVAL, "dependency cycle (out of memory naming it)");
    }
    size_t len = 0, v = start;
    while (step[v] == 0 && len < total) {
        step[v] = len + 1;
        path[len++] = v;
        v = spec__pred(s, v, indeg);
    }
    /* path[step[v]-1 .. len) is the cycle in predecessor order; print it forwards. */
    char buf[512];
    size_t blen = 0;
    int first = 1;
    size_t from = step[v] - 1, close = len;
    for (size_t i = len; i > from; i--) {
        if (close == len && !(path[i - 1] >= s->ntasks && path[i - 1] < s->ntasks + s->nstages))
            close = i - 1;
        spec__cycle_name(s, path[i - 1], buf, sizeof buf, &blen, &first);
    }
    if (close < len)
        spec__cycle_name(s, path[close], buf, sizeof buf, &blen, &first);
    buf[blen < sizeof buf ? blen : sizeof buf - 1] = '\0';
    mem_free(step);
    mem_free(path);
    return err_fmt(msg, cap, ERR_INVAL, "dependency cycle: %s", buf);
}

/* Kahn's algorithm over tasks, gates and stage-done nodes. */
static int spec__topo(struct spec *s, char *msg, size_t cap)
{
    size_t n = s->ntasks, ns = s->nstages, total = n + 2 * ns;
    size_t *indeg = mem_calloc(total, sizeof *indeg);
    size_t *queue = mem_calloc(total, sizeof *queue);
    size_t *doff = mem_calloc(n + 1, sizeof *doff);  /* task dependents, CSR */
    size_t *soff = mem_calloc(ns + 1, sizeof *soff); /* stage dependents, CSR */
    size_t *dep = NULL, *sdep = NULL;
    int rc = 0;
    s->topo = mem_calloc(n, sizeof *s->topo);
    s->stage_topo = mem_calloc(ns, sizeof *s->stage_topo);
    if (indeg == NULL || queue == NULL || doff == NULL || soff == NULL || s->topo == NULL ||
        s->stage_topo == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s->tasks[i].nafter; k++)
            doff[s->tasks[i].after[k] + 1]++;
    for (size_t j = 0; j < ns; j++)
        for (size_t k = 0; k < s->stages[j].nafter; k++)
            soff[s->stages[j].after[k] + 1]++;
    for (size_t i = 0; i < n; i++)
        doff[i + 1] += doff[i];
    for (size_t j = 0; j < ns; j++)
        soff[j + 1] += soff[j];
    dep = mem_calloc(doff[n] + 1, sizeof *dep);
    sdep = mem_calloc(soff[ns] + 1, sizeof *sdep);
    if (dep == NULL || sdep == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto out;
    }
    {
        size_t *fill = queue; /* reuse as cursors before the queue is needed */
        memcpy(fill, doff, n * sizeof *fill);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < s->tasks[i].nafter; k++)
                dep[fill[s->tasks[i].after[k]]++] = i;
        memcpy(fill, soff, ns * sizeof *fill);
        for (size_t j = 0; j < ns; j++)
            for (size_t k = 0; k < s->stages[j].nafter; k++)
                sdep[fill[s->stages[j].after[k]]++] = j;
    }
    for (size_t i = 0; i < n; i++)
        indeg[i] = s->tasks[i].nafter + 1;
    for (size_t j = 0; j < ns; j++) {
        indeg[n + j] = s->stages[j].nafter;
        indeg[n + ns + j] = s->stages[j].ntasks + 1;
    }
    size_t head = 0, tail = 0, nt = 0, nst = 0;
    for (size_t j = 0; j < ns; j++)
        if (indeg[n + j] == 0)
            queue[tail++] = n + j;
    while (head < tail) {
        size_t v = queue[head++];
        if (v < n) {
            s->topo[nt++] = v;
            for (size_t k = doff[v]; k < doff[v + 1]; k++)
                if (--indeg[dep[k]] == 0)
                    queue[tail++] = dep[k];
            size_t sd = n + ns + s->tasks[v].stage;
            if (--indeg[sd] == 0)
                queue[tail++] = sd;
        } else if (v < n + ns) {
            const struct spec_stage *st = &s->stages[v - n];
            for (size_t k = 0; k < st->ntasks; k++)
                if (--indeg[st->tasks[k]] == 0)
                    queue[tail++] = st->tasks[k];
            if (--indeg[v + ns] == 0)
                queue[tail++] = v + ns;
        } else {
            size_t j = v - n - ns;
            s->stage_topo[nst++] = j;
            for (size_t k = soff[j]; k < soff[j + 1]; k++)
                if (--indeg[n + sdep[k]] == 0)
                    queue[tail++] = n + sdep[k];
        }
    }
    if (tail < total)
        rc = spec__cycle(s, indeg, total, msg, cap);
out:
    mem_free(indeg);
    mem_free(queue);
    mem_free(doff);
    mem_free(soff);
    mem_free(dep);
    mem_free(sdep);
    return rc;
}

int spec__graph(struct spec *s, const json_t *root, const char **stage_names,
                const struct spec__src *src, char *msg, size_t cap)
{
    int rc = spec__ids(s, src, msg, cap);
    if (rc == 0)
        rc = spec__stages(s, json_object_get(root, "stages"), stage_names, msg, cap);
    if (rc == 0)
        rc = spec__after(s, json_object_get(root, "tasks"), src, msg, cap);
    if (rc == 0)
        rc = spec__topo(s, msg, cap);
    return rc;
}
