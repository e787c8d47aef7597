/* wfcommons.c - WfFormat (WfCommons) to job spec v1 (see wfcommons.h). */
#include "tools/wfcommons.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/spec.h"

void wfcommons_options_default(struct wfcommons_options *o)
{
    o->name = NULL;
    o->time_scale = 1.0;
    o->min_runtime_s = 0.01;
    o->max_cpu = 0;
    o->max_mem_mb = 0;
}

struct wf__task {
    const json_t *spec; /* the task object (1.5 specification or flat task) */
    const json_t *exec; /* 1.5 execution entry, or the same flat task */
    char id[SPEC_MAX_ID_LEN + 1];
    const char *name;
    size_t *after;
    size_t nafter, capafter;
};

static const char *wf__str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static double wf__num(const json_t *o, const char *key, double dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) && isfinite(json_number_value(v)) ? json_number_value(v) : dflt;
}

/* Copies an id, replacing what the spec refuses (space, quote, backslash, control). */
static void wf__sanitize(char *dst, const char *src)
{
    size_t i = 0;
    for (; src[i] != '\0' && i < SPEC_MAX_ID_LEN; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c <= 0x20 || c == 0x7f || c == '"' || c == '\\') ? '_' : (char)c;
    }
    dst[i] = '\0';
}

/* A program name usable as a stage: one short word (Nextflow's "program" is a whole script). */
static const char *wf__program(const json_t *exec)
{
    const char *p = wf__str(json_object_get(exec, "command"), "program");
    if (p == NULL || p[0] == '\0' || strlen(p) > 64 || strpbrk(p, " \t\n\r\"\\") != NULL)
        return NULL;
    const char *slash = strrchr(p, '/');
    return slash != NULL && slash[1] != '\0' ? slash + 1 : p;
}

static void wf__stage(char *dst, const json_t *t, const json_t *exec, const char *name)
{
    const char *cat = wf__str(t, "category");
    if (cat == NULL || cat[0] == '\0')
        cat = wf__program(exec);
    const char *src = cat != NULL && cat[0] != '\0' ? cat : name;
    wf__sanitize(dst, src);
    if (cat != NULL && cat[0] != '\0')
        return;
    size_t n = strlen(dst);
    size_t d = n;
    while (d > 0 && dst[d - 1] >= '0' && dst[d - 1] <= '9')
        d--;
    if (d < n && d >= 3 && strncmp(dst + d - 3, "_ID", 3) == 0 && d > 3)
        dst[d - 3] = '\0';
}

static int wf__add_after(struct wf__task *t, size_t p)
{
    for (size_t i = 0; i < t->nafter; i++)
        if (t->after[i] == p)
            return 0;
    if (t->nafter == t->capafter) {
        size_t nc = t->capafter == 0 ? 4 : t->capafter * 2;
        size_t *na = mem_reallocarray(t->after, nc, sizeof *na);
        if (na == NULL)
            return ERR_NOMEM;
        t->after = na;
        t->capafter = nc;
    }
    t->after[t->nafter++] = p;
    return 0;
}

/* Resolves a parent/child reference (an id, or in old shapes a name) to a task index. */
static long wf__resolve(const json_t *ids, const json_t *names, const json_t *ref)
{
    if (!json_is_string(ref))
        return -1;
    const json_t *v = json_object_get(ids, json_string_value(ref));
    if (v == NULL)
        v = json_object_get(names, json_string_value(ref));
    return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

static int wf__u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x > y ? -1 : x < y;
}

/* Input sizes of task t: 1.5 inputFiles (ids into `files`), or flat files with link "input". */
static int wf__inputs(const struct wf__task *t, const json_t *files, json_t *task_out)
{
    uint64_t sizes[1024];
    size_t n = 0;
    uint64_t rest = 0;
    int have = 0;
    const json_t *in = json_object_get(t->spec, "inputFiles");
    const json_t *flat = json_object_get(t->spec, "files");
    size_t i;
    const json_t *f;
    if (json_is_array(in)) {
        json_array_foreach(in, i, f)
        {
            const json_t *sz =
                json_is_string(f) ? json_object_get(files, json_string_value(f)) : NULL;
            uint64_t b = json_is_integer(sz) && json_integer_value(sz) > 0
                             ? (uint64_t)json_integer_value(sz)
                             : 0;
            have = 1;
            if (n < sizeof sizes / sizeof sizes[0])
                sizes[n++] = b;
            else
                rest += b;
        }
    } else if (json_is_array(flat)) {
        json_array_foreach(flat, i, f)
        {
            const char *link = wf__str(f, "link");
            if (link == NULL || strcmp(link, "input") != 0)
                continue;
            double b = wf__num(f, "sizeInBytes", wf__num(f, "size", 0));
            have = 1;
            uint64_t ub = b > 0 && b < 1.8e19 ? (uint64_t)b : 0;
            if (n < sizeof sizes / sizeof sizes[0])
                sizes[n++] = ub;
            else
                rest += ub;
        }
    }
    if (!have)
        return 0;
    qsort(sizes, n, sizeof sizes[0], wf__u64_desc);
    size_t keep = n < SPEC_MAX_INPUTS - 1 ? n : SPEC_MAX_INPUTS - 1;
    for (size_t k = keep; k < n; k++)
        rest += sizes[k];
    json_t *arr = json_array();
    if (arr == NULL)
        return ERR_NOMEM;
    for (size_t k = 0; k < keep; k++)
        json_array_append_new(arr, json_pack("{s:I}", "bytes", (json_int_t)sizes[k]));
    if (rest > 0 || n > keep)
        json_array_append_new(arr, json_pack("{s:I}", "bytes", (json_int_t)rest));
    json_object_set_new(task_out, "inputs", arr);
    return 0;
}

int wfcommons_convert(const char *buf, size_t len, const struct wfcommons_options *o, json_t **out,
                      struct wfcommons_stats *st, char *msg, size_t cap)
{
    struct wfcommons_options def;
    if (o == NULL) {
        wfcommons_options_default(&def);
        o = &def;
    }
    *out = NULL;
    if (!(o->time_scale > 0) || !(o->min_runtime_s > 0) || o->max_cpu < 0)
        return err_fmt(msg, cap, ERR_INVAL, "time scale and minimum runtime must be positive");
    if (len > WFCOMMONS_MAX_BYTES)
        return err_fmt(msg, cap, ERR_TOOBIG, "instance is %zu bytes, over the limit of %zu", len,
                       WFCOMMONS_MAX_BYTES);
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, 0, &jerr);
    if (root == NULL)
        return err_fmt(msg, cap, ERR_PARSE, "not valid JSON (line %d, column %d): %s", jerr.line,
                       jerr.column, jerr.text);
    int rc = 0;
    struct wf__task *tasks = NULL;
    size_t n = 0;
    json_t *ids = json_object(), *names = json_object(), *files = json_object(), *doc = NULL;
    if (ids == NULL || names == NULL || files == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto out;
    }
    const json_t *wf = json_object_get(root, "workflow");
    if (!json_is_object(wf)) {
        rc = err_fmt(msg, cap, ERR_INVAL, "no \"workflow\" object: not a WfFormat instance");
        goto out;
    }
    const char *schema = wf__str(root, "schemaVersion");
    const json_t *spec_tasks = json_object_get(json_object_get(wf, "specification"), "tasks");
    const json_t *exec_tasks = json_object_get(json_object_get(wf, "execution"), "tasks");
    const json_t *list = spec_tasks;
    if (!json_is_array(list))
        list = json_object_get(wf, "tasks");
    if (!json_is_array(list))
        list = json_object_get(wf, "jobs");
    if (!json_is_array(list)) {
        rc = err_fmt(msg, cap, ERR_INVAL,
                     "no task list (workflow.specification.tasks, workflow.tasks or "
                     "workflow.jobs)");
        goto out;
    }
    n = json_array_size(list);
    if (n == 0 || n > WFCOMMONS_MAX_TASKS) {
        rc = err_fmt(msg, cap, n == 0 ? ERR_INVAL : ERR_TOOBIG, "%zu tasks (1..%d accepted)", n,
                     WFCOMMONS_MAX_TASKS);
        goto out;
    }
    /* 1.5: execution entries by id, files by id */
    json_t *exec_by_id = json_object();
    if (exec_by_id == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t i;
    const json_t *e;
    if (json_is_array(exec_tasks))
        json_array_foreach(exec_tasks, i, e)
        {
            const char *id = wf__str(e, "id");
            if (id != NULL)
                json_object_set(exec_by_id, id, (json_t *)e);
        }
    const json_t *spec_files = json_object_get(json_object_get(wf, "specification"), "files");
    if (json_is_array(spec_files))
        json_array_foreach(spec_files, i, e)
        {
            const char *id = wf__str(e, "id");
            if (id != NULL)
                json_object_set_new(files, id,
                                    json_integer((json_int_t)wf__num(e, "sizeInBytes", 0)));
        }
    tasks = mem_calloc(n, sizeof *tasks);
    if (tasks == NULL) {
        json_decref(exec_by_id);
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (i = 0; i < n; i++) {
        struct wf__task *t = &tasks[i];
        t->spec = json_array_get(list, i);
        if (!json_is_object(t->spec)) {
            rc = err_fmt(msg, cap, ERR_INVAL, "task %zu is not an object", i);
            break;
        }
        const char *id = wf__str(t->spec, "id");
        t->name = wf__str(t->spec, "name");
        if (id == NULL)
            id = t->name;
        if (id == NULL || id[0] == '\0') {
            rc = err_fmt(msg, cap, ERR_INVAL, "task %zu has neither id nor name", i);
            break;
        }
        if (t->name == NULL)
            t->name = id;
        wf__sanitize(t->id, id);
        if (json_object_get(ids, t->id) != NULL) {
            rc = err_fmt(msg, cap, ERR_INVAL, "duplicate task id \"%s\"", t->id);
            break;
        }
        json_object_set_new(ids, id, json_integer((json_int_t)i));
        if (strcmp(id, t->id) != 0)
            json_object_set_new(ids, t->id, json_integer((json_int_t)i));
        /* names resolve old-style parent references; ambiguous names resolve nowhere */
        if (json_object_get(names, t->name) != NULL)
            json_object_set_new(names, t->name, json_integer(-1));
        else
            json_object_set_new(names, t->name, json_integer((json_int_t)i));
        t->exec = json_object_get(exec_by_id, id);
        if (t->exec == NULL)
            t->exec = t->spec;
    }
    if (rc != 0) {
        json_decref(exec_by_id);
        goto out;
    }
    /* edges: parents of t, and t for each child of t */
    size_t edges = 0;
    for (i = 0; i < n && rc == 0; i++) {
        const json_t *par = json_object_get(tasks[i].spec, "parents");
        const json_t *chi = json_object_get(tasks[i].spec, "children");
        size_t k;
        const json_t *r;
        if (json_is_array(par))
            json_array_foreach(par, k, r)
            {
                long p = wf__resolve(ids, names, r);
                if (p < 0 || (size_t)p == i) {
                    rc = err_fmt(msg, cap, ERR_INVAL, "task \"%s\": unknown parent %s%.64s%s",
                                 tasks[i].id, json_is_string(r) ? "\"" : "",
                                 json_is_string(r) ? json_string_value(r) : "(not a string)",
                                 json_is_string(r) ? "\"" : "");
                    break;
                }
                if (wf__add_after(&tasks[i], (size_t)p) != 0)
                    rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
            }
        if (rc == 0 && json_is_array(chi))
            json_array_foreach(chi, k, r)
            {
                long c = wf__resolve(ids, names, r);
                if (c < 0 || (size_t)c == i) {
                    rc = err_fmt(msg, cap, ERR_INVAL, "task \"%s\": unknown child", tasks[i].id);
                    break;
                }
                if (wf__add_after(&tasks[c], i) != 0)
                    rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
            }
    }
    json_decref(exec_by_id);
    if (rc != 0)
        goto out;
    doc = json_object();
    json_t *jtasks = json_array();
    if (doc == NULL || jtasks == NULL) {
        json_decref(jtasks);
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        goto out;
    }
    json_object_set_new(doc, "version", json_integer(1));
    json_object_set_new(doc, "name", json_string(o->name != NULL ? o->name : "wfcommons"));
    json_object_set_new(doc, "tasks", jtasks);
    double total = 0;
    for (i = 0; i < n; i++) {
        struct wf__task *t = &tasks[i];
        double rt = wf__num(t->exec, "runtimeInSeconds", wf__num(t->exec, "runtime", 0));
        if (rt < 0)
            rt = 0;
        double s = rt * o->time_scale;
        if (s < o->min_runtime_s)
            s = o->min_runtime_s;
        s = ceil(s * 1000.0) / 1000.0; /* whole milliseconds, as the command says */
        total += s;
        char secs[32], stage[SPEC_MAX_ID_LEN + 1];
        snprintf(secs, sizeof secs, "%.3f", s);
        wf__stage(stage, t->spec, t->exec, t->name);
        double cpu = wf__num(t->exec, "coreCount", wf__num(t->exec, "cores", 1));
        if (!(cpu > 0))
            cpu = 1;
        if (o->max_cpu > 0 && cpu > o->max_cpu)
            cpu = o->max_cpu;
        json_t *jt = json_pack("{s:s, s:s, s:[s,s], s:f, s:f}", "id", t->id, "stage", stage, "cmd",
                               "sleep", secs, "runtime_s", s, "cpu", cpu);
        if (jt == NULL) {
            rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
            goto out;
        }
        double membytes = wf__num(t->exec, "memoryInBytes", -1);
        if (membytes < 0 && wf__num(t->exec, "memory", -1) > 0)
            membytes = wf__num(t->exec, "memory", 0) * 1024.0; /* 1.4: KiB */
        if (membytes > 0) {
            double mb = ceil(membytes / 1048576.0);
            if (o->max_mem_mb > 0 && mb > (double)o->max_mem_mb)
                mb = (double)o->max_mem_mb;
            json_object_set_new(jt, "mem_mb", json_integer((json_int_t)mb));
        }
        if (t->nafter > 0) {
            json_t *a = json_array();
            for (size_t k = 0; k < t->nafter; k++)
                json_array_append_new(a, json_string(tasks[t->after[k]].id));
            json_object_set_new(jt, "after", a);
            edges += t->nafter;
        }
        if ((rc = wf__inputs(t, files, jt)) != 0) {
            json_decref(jt);
            rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
            goto out;
        }
        json_array_append_new(jtasks, jt);
    }
    if (st != NULL) {
        snprintf(st->schema, sizeof st->schema, "%s", schema != NULL ? schema : "?");
        st->tasks = n;
        st->edges = edges;
        st->total_runtime_s = total;
    }
    *out = doc;
    doc = NULL;
out:
    if (tasks != NULL)
        for (i = 0; i < n; i++)
            mem_free(tasks[i].after);
    mem_free(tasks);
    json_decref(doc);
    json_decref(ids);
    json_decref(names);
    json_decref(files);
    json_decref(root);
    return rc;
}
