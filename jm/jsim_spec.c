/* jsim_spec.c - the job simulator's view of a parsed job spec (jm/spec.h). */
#include "common/err.h"
#include "jm/jsim.h"
#include "jm/spec.h"

int jsim_job_from_spec(const struct spec *spec, jsim_job_t **out, char *msg, size_t cap)
{
    *out = NULL;
    if (spec == NULL || spec->ntasks == 0 || spec->nstages == 0)
        return err_fmt(msg, cap, ERR_INVAL, "jsim: empty spec");
    if (spec->ntasks > JSIM_MAX_TASKS || spec->nstages > JSIM_MAX_TASKS)
        return err_fmt(msg, cap, ERR_TOOBIG, "jsim: %zu tasks (limit %d)", spec->ntasks,
                       JSIM_MAX_TASKS);
    jsim_job_t *j = jsim_job_new((int)spec->nstages, (int)spec->ntasks);
    if (j == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < spec->ntasks; i++) {
        const struct spec_task *t = &spec->tasks[i];
        rc = jsim_job_set_task(j, (int)i, (int)t->stage, t->runtime_s);
        for (size_t k = 0; rc == 0 && k < t->nafter; k++)
            rc = jsim_job_add_edge(j, (int)t->after[k], (int)i);
        if (rc != 0)
            err_fmt(msg, cap, rc, "jsim: task \"%s\": %s", t->id, err_text(rc));
    }
    for (size_t s = 0; rc == 0 && s < spec->nstages; s++) {
        const struct spec_stage *st = &spec->stages[s];
        for (size_t k = 0; rc == 0 && k < st->nafter; k++)
            rc = jsim_job_add_barrier(j, (int)st->after[k], (int)s);
        if (rc != 0)
            err_fmt(msg, cap, rc, "jsim: stage \"%s\": %s", st->name, err_text(rc));
    }
    if (rc == 0)
        rc = jsim_job_finalize(j, msg, cap);
    if (rc != 0) {
        jsim_job_destroy(&j);
        return rc;
    }
    *out = j;
    return 0;
}
