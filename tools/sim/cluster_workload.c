/* cluster_workload.c - the jobs of `paddock-sim cluster`: WfCommons instances imported in-process
 * (tools/wfcommons.h), Paddock specs as they are, or synthetic map-reduce jobs; per job, input
 * replicas on the simulated nodes. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "tools/sim/cluster.h"
#include "tools/sim/engine.h"
#include "tools/wfcommons.h"

#define CLW_MAX_FILES 4096

struct cluster_workloads {
    json_t **docs;
    char **names;
    size_t n;
};

size_t cluster_workloads_count(const struct cluster_workloads *w)
{
    return w->n;
}

const char *cluster_workloads_name(const struct cluster_workloads *w, size_t i)
{
    return i < w->n ? w->names[i] : NULL;
}

void cluster_workloads_destroy(struct cluster_workloads **p)
{
    if (p == NULL || *p == NULL)
        return;
    struct cluster_workloads *w = *p;
    for (size_t i = 0; i < w->n; i++) {
        json_decref(w->docs[i]);
        mem_free(w->names[i]);
    }
    mem_free(w->docs);
    mem_free(w->names);
    mem_free(w);
    *p = NULL;
}

static int clw__new(size_t cap, struct cluster_workloads **out)
{
    struct cluster_workloads *w = mem_calloc(1, sizeof *w);
    if (w == NULL)
        return ERR_NOMEM;
    w->docs = mem_calloc(cap ? cap : 1, sizeof *w->docs);
    w->names = mem_calloc(cap ? cap : 1, sizeof *w->names);
    if (w->docs == NULL || w->names == NULL) {
        cluster_workloads_destroy(&w);
        return ERR_NOMEM;
    }
    *out = w;
    return 0;
}

static int clw__cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *clw__read(const char *path, size_t *len, char *msg, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        err_fmt(msg, cap, ERR_IO, "%s: cannot open", path);
        return NULL;
    }
    size_t have = 0, alloc = 1 << 16;
    char *buf = mem_alloc(alloc);
    while (buf != NULL) {
        if (have == alloc) {
            if (alloc >= WFCOMMONS_MAX_BYTES) {
                err_fmt(msg, cap, ERR_TOOBIG, "%s: larger than %zu bytes", path,
                        (size_t)WFCOMMONS_MAX_BYTES);
                mem_free(buf);
                buf = NULL;
                break;
            }
            char *nb = mem_realloc(buf, alloc * 2);
            if (nb == NULL) {
                mem_free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            alloc *= 2;
        }
        size_t r = fread(buf + have, 1, alloc - have, f);
        have += r;
        if (r == 0)
            break;
    }
    if (buf != NULL && ferror(f)) {
        err_fmt(msg, cap, ERR_IO, "%s: read error", path);
        mem_free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = have;
    return buf;
}

int cluster_workloads_load(const char *dir, double time_scale, double max_cpu, uint64_t max_mem_mb,
                           struct cluster_workloads **out, char *msg, size_t cap)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (d == NULL)
        return err_fmt(msg, cap, ERR_IO, "%s: cannot open directory", dir);
    char **files = mem_calloc(CLW_MAX_FILES, sizeof *files);
    size_t nf = 0;
    struct dirent *de;
    int rc = files != NULL ? 0 : ERR_NOMEM;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        if (nf == CLW_MAX_FILES)
            rc = err_fmt(msg, cap, ERR_TOOBIG, "%s: more than %d workloads", dir, CLW_MAX_FILES);
        else if ((files[nf++] = mem_strdup(de->d_name)) == NULL)
            rc = ERR_NOMEM;
    }
    closedir(d);
    struct cluster_workloads *w = NULL;
    if (rc == 0 && nf == 0)
        rc = err_fmt(msg, cap, ERR_NOTFOUND, "%s: no *.json workload", dir);
    if (rc == 0)
        rc = clw__new(nf, &w);
    if (rc == 0)
        qsort(files, nf, sizeof *files, clw__cmp);
    for (size_t i = 0; rc == 0 && i < nf; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        size_t len = 0;
        char *buf = clw__read(path, &len, msg, cap);
        if (buf == NULL) {
            rc = msg[0] ? ERR_IO : ERR_NOMEM;
            break;
        }
        json_error_t je;
        json_t *doc = json_loadb(buf, len, 0, &je);
        if (doc == NULL) {
            rc = err_fmt(msg, cap, ERR_PARSE, "%s: %s", files[i], je.text);
        } else if (json_object_get(doc, "workflow") != NULL) {
            struct wfcommons_options o;
            wfcommons_options_default(&o);
            o.time_scale = time_scale;
            o.max_cpu = max_cpu;
            o.max_mem_mb = max_mem_mb;
            char base[256];
            snprintf(base, sizeof base, "%.*s", (int)(strlen(files[i]) - 5), files[i]);
            o.name = base;
            json_t *spec = NULL;
            char m2[512] = "";
            rc = wfcommons_convert(buf, len, &o, &spec, NULL, m2, sizeof m2);
            if (rc != 0)
                err_fmt(msg, cap, rc, "%s: %s", files[i], m2);
            json_decref(doc);
            doc = spec;
        }
        mem_free(buf);
        if (rc == 0) {
            w->docs[w->n] = doc;
            w->names[w->n] = files[i];
            files[i] = NULL;
            w->n++;
        } else {
            json_decref(doc);
        }
    }
    for (size_t i = 0; files != NULL && i < nf; i++)
        mem_free(files[i]);
    mem_free(files);
    if (rc != 0) {
        cluster_workloads_destroy(&w);
        return rc;
    }
    *out = w;
    return 0;
}

int cluster_workloads_synthetic(size_t count, uint64_t seed, struct cluster_workloads **out)
{
    *out = NULL;
    struct cluster_workloads *w = NULL;
    int rc = clw__new(count, &w);
    if (rc != 0)
        return rc;
    struct rng r;
    rng_seed_stream(&r, seed, 0x300000000ull);
    for (size_t i = 0; i < count; i++) {
        size_t maps = 20 + (size_t)rng_below(&r, 100);
        size_t reds = maps / 5 + 1;
        json_t *tasks = json_array();
        json_t *doc =
            json_pack("{s:i, s:s, s:o, s:[{s:s, s:[s]}]}", "version", 1, "name", "mapreduce",
                      "tasks", tasks, "stages", "name", "reduce", "after", "map");
        if (doc == NULL) {
            cluster_workloads_destroy(&w);
            return ERR_NOMEM;
        }
        for (size_t t = 0; t < maps + reds; t++) {
            int is_map = t < maps;
            char id[64];
            snprintf(id, sizeof id, "%s-%zu", is_map ? "map" : "reduce", is_map ? t : t - maps);
            double rt = rng_lognormal(&r, is_map ? 2.0 : 2.5, 0.5);
            json_int_t bytes = (json_int_t)(is_map ? 256e6 : 128e6);
            json_t *task = json_pack("{s:s, s:s, s:[s], s:f, s:i, s:f, s:[{s:I}]}", "id", id,
                                     "stage", is_map ? "map" : "reduce", "cmd", "true", "cpu", 1.0,
                                     "mem_mb", 1024, "runtime_s", rt, "inputs", "bytes", bytes);
            if (task == NULL || json_array_append_new(tasks, task) != 0) {
                json_decref(doc);
                cluster_workloads_destroy(&w);
                return ERR_NOMEM;
            }
        }
        char name[32];
        snprintf(name, sizeof name, "synthetic-%zu", i);
        w->docs[w->n] = doc;
        w->names[w->n] = mem_strdup(name);
        w->n++;
        if (w->names[w->n - 1] == NULL) {
            cluster_workloads_destroy(&w);
            return ERR_NOMEM;
        }
    }
    *out = w;
    return 0;
}

/* Three replicas as a distributed file system places them: one node anywhere, two more on one
 * other rack. */
static json_t *clw__replicas(struct rng *r, size_t nodes, size_t rack_size)
{
    size_t racks = (nodes + rack_size - 1) / rack_size;
    size_t a = (size_t)rng_below(r, nodes);
    size_t ra = a / rack_size, rb = ra;
    if (racks > 1)
        while (rb == ra)
            rb = (size_t)rng_below(r, racks);
    size_t lo = rb * rack_size, n = rb + 1 == racks ? nodes - lo : rack_size;
    size_t b = lo + (size_t)rng_below(r, n), c = lo + (size_t)rng_below(r, n);
    json_t *arr = json_array();
    size_t pick[3] = {a, b, c};
    for (int i = 0; arr != NULL && i < 3; i++) {
        int dup = 0;
        for (int k = 0; k < i; k++)
            dup |= pick[k] == pick[i];
        if (dup)
            continue;
        char name[32];
        snprintf(name, sizeof name, "pn-%zu", pick[i]);
        if (json_array_append_new(arr, json_string(name)) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

int cluster_workloads_make(const struct cluster_workloads *w, size_t i, uint64_t seed, size_t nodes,
                           size_t rack_size, struct spec **out, char *msg, size_t cap)
{
    *out = NULL;
    if (w->n == 0 || nodes == 0 || rack_size == 0)
        return err_fmt(msg, cap, ERR_INVAL, "no workload or no nodes");
    json_t *doc = json_deep_copy(w->docs[i % w->n]);
    if (doc == NULL)
        return ERR_NOMEM;
    struct rng r;
    rng_seed_stream(&r, seed, 0x400000000ull + i);
    char name[300];
    snprintf(name, sizeof name, "%s-%zu", w->names[i % w->n], i);
    json_object_set_new(doc, "name", json_string(name));
    json_t *tasks = json_object_get(doc, "tasks");
    size_t ti;
    json_t *task;
    int rc = 0;
    json_array_foreach(tasks, ti, task)
    {
        json_t *inputs = json_object_get(task, "inputs");
        size_t k;
        json_t *in;
        double total = 0;
        json_array_foreach(inputs, k, in) total +=
            (double)json_integer_value(json_object_get(in, "bytes"));
        json_array_foreach(inputs, k, in)
        {
            double b = (double)json_integer_value(json_object_get(in, "bytes"));
            if (total <= 0 || b < 0.1 * total)
                continue;
            json_t *rep = clw__replicas(&r, nodes, rack_size);
            if (rep == NULL || json_object_set_new(in, "nodes", rep) != 0) {
                rc = ERR_NOMEM;
                break;
            }
        }
        if (rc != 0)
            break;
    }
    char *text = rc == 0 ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (text == NULL)
        return rc != 0 ? rc : ERR_NOMEM;
    rc = spec_parse(text, strlen(text), NULL, out, msg, cap);
    free(text);
    return rc;
}
