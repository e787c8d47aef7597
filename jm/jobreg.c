/* jobreg.c - one JOB_REGISTER builder (see jobreg.h). */
#include "jm/jobreg.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "jm/profile.h"
#include "jm/shape.h"

static double jobreg__num(const json_t *o, const char *k, double dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

void jobreg_cluster(const char *tokens_json, const char *vc, double *token_cpu,
                    uint64_t *token_mem_mb, uint32_t *capacity)
{
    *token_cpu = ARBITER_TOKEN_CPU_DEFAULT;
    *token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
    *capacity = 0;
    json_t *doc = tokens_json != NULL ? json_loads(tokens_json, 0, NULL) : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(doc, "virtual_clusters"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (name == NULL || vc == NULL || strcmp(name, vc) != 0)
            continue;
        double c = jobreg__num(v, "token_cpu", 0), m = jobreg__num(v, "token_mem_mb", 0);
        double k = jobreg__num(v, "capacity", 0);
        if (c > 0 && isfinite(c))
            *token_cpu = c;
        if (m >= 1 && m < 1.8e19)
            *token_mem_mb = (uint64_t)m;
        if (k >= 1 && k <= UINT32_MAX)
            *capacity = (uint32_t)k;
    }
    json_decref(doc);
}

int jobreg_shape(const struct spec *spec, const char *profile_dir, double token_cpu,
                 uint64_t token_mem_mb, uint32_t capacity, struct jobreg_shape *out, char *msg,
                 size_t cap)
{
    if (spec == NULL || out == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "jobreg_shape: NULL argument");
    struct jobreg_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.token_cpu = token_cpu;
    sh.token_mem_mb = token_mem_mb;
    sh.capacity = capacity;
    char why[512];
    struct profile prof;
    profile_init(&prof);
    /* the merge of the last successful runs, as the JM reads it (jm/profile.h, "History") */
    if (profile_dir != NULL &&
        profile_load_job(&prof, profile_dir, spec->name, PROFILE_KEEP, NULL, why, sizeof why) == 0)
        sh.has_profile = true;
    int rc = shape_from_spec(spec, sh.has_profile ? &prof : NULL, token_cpu, token_mem_mb, 0, &sh.s,
                             msg, cap);
    if (rc == 0 && capacity > 0)
        rc = shape_alpha(spec, sh.has_profile ? &prof : NULL, token_cpu, token_mem_mb, capacity,
                         &sh.s, &sh.list_s, msg, cap);
    profile_close(&prof);
    if (rc != 0)
        return rc;
    *out = sh;
    return 0;
}

uint64_t jobreg_ms(double s)
{
    double ms = ceil(s * 1000.0 - 1e-6);
    return isfinite(ms) && ms > 0 ? (ms < 1.8e19 ? (uint64_t)ms : UINT64_MAX) : 0;
}

void jobreg_build(struct jobreg *r, proto_msg_t *req)
{
    const struct spec *spec = r->spec;
    proto_msg_init(req, PROTO_JOB_REGISTER);
    proto_job_register_t *m = &req->job_register;
    m->key = (char *)r->key;
    m->name = spec->name;
    m->virtual_cluster = spec->virtual_cluster;
    m->deadline_ms = r->deadline_ms > 0   ? r->deadline_ms
                     : spec->has_deadline ? (uint64_t)(spec->deadline_s * 1000.0 + 0.5)
                                          : 0;
    m->tasks_total = (uint32_t)spec->ntasks;
    m->submitter = (char *)r->submitter;
    m->submit_ms = r->submit_ms;
    if (r->shape != NULL) {
        const struct arbiter_shape *s = &r->shape->s;
        m->work_ms = jobreg_ms(s->work);
        m->work_sd_ms = jobreg_ms(s->work_sd);
        m->path_ms = jobreg_ms(s->path);
        m->path_sd_ms = jobreg_ms(s->path_sd);
        m->width = s->width;
        m->has_profile = r->shape->has_profile;
        m->has_alpha = s->has_alpha;
        m->alpha_milli = s->has_alpha ? (uint32_t)lround(s->alpha * 1000.0) : 0;
        /* its own spread (jm/shape.h), from its profile; capped as the RM takes it */
        if (s->has_alpha && s->spread >= 1)
            m->spread_milli = (uint32_t)lround((s->spread < 20 ? s->spread : 20) * 1000.0);
    }
    m->best_effort = r->best_effort;
    if (r->recurring != NULL && r->recurring[0] != '\0') {
        m->recurring = (char *)r->recurring;
        m->period = r->period;
    }
    /* the files it declares (the spec's "reads" and staged files, and "writes"): the RM learns
       from them when a recurring job's output is first consumed (Morpheus §4) */
    size_t nin = spec_declared_inputs(spec, PROTO_MAX_ARG, r->inputs, PROTO_MAX_JOB_FILES);
    m->inputs = nin > 0 ? (char **)r->inputs : NULL;
    m->ninputs = (uint32_t)nin;
    m->outputs = spec->nwrites > 0 ? spec->writes : NULL;
    m->noutputs = (uint32_t)spec->nwrites;
    m->job_dir = (char *)r->job_dir;
    m->host = (char *)r->host;
    m->jm_pid = r->jm_pid;
}
