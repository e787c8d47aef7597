#include "pn/orphan.h"

#include "common/err.h"
#include "common/map.h"
#include "common/mem.h"

typedef struct orphan__job {
    uint32_t state;
    uint64_t inactive_since; /* first answer that said not active */
    uint64_t ended_since;    /* first answer that said ended; valid when ended */
    int ended;
} orphan__job_t;

struct orphan {
    orphan_config_t cfg;
    struct map jobs; /* job id -> orphan__job_t */
};

orphan_t *orphan_new(const orphan_config_t *cfg)
{
    orphan_t *o = mem_calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->cfg = *cfg;
    map_init(&o->jobs);
    return o;
}

void orphan_destroy(orphan_t **op)
{
    if (!op || !*op)
        return;
    orphan_t *o = *op;
    size_t it = 0;
    void *v;
    while (map_next(&o->jobs, &it, NULL, NULL, &v))
        mem_free(v);
    map_close(&o->jobs);
    mem_free(o);
    *op = NULL;
}

static int orphan__is_ended(uint32_t state)
{
    return state == ORPHAN_DONE || state == ORPHAN_FAILED || state == ORPHAN_CANCELLED;
}

void orphan_forget(orphan_t *o, const char *job_id)
{
    void *v;
    if (map_del(&o->jobs, job_id, &v))
        mem_free(v);
}

int orphan_note(orphan_t *o, const char *job_id, uint32_t state, uint64_t now_ms)
{
    if (state > ORPHAN_EXPIRED)
        return ERR_INVAL;
    if (state == ORPHAN_ACTIVE) {
        orphan_forget(o, job_id);
        return 0;
    }
    orphan__job_t *j = map_get(&o->jobs, job_id);
    if (!j) {
        j = mem_calloc(1, sizeof *j);
        if (!j || map_put(&o->jobs, job_id, j, NULL) != 0) {
            mem_free(j);
            return ERR_NOMEM;
        }
        j->inactive_since = now_ms;
    }
    if (orphan__is_ended(state) && !j->ended) {
        j->ended = 1;
        j->ended_since = now_ms;
    }
    j->state = state;
    return 0;
}

static uint64_t orphan__since(uint64_t now, uint64_t since)
{
    return now > since ? now - since : 0;
}

size_t orphan_due(orphan_t *o, uint64_t now_ms, orphan_reap_fn *fn, void *arg)
{
    size_t due = 0, it = 0;
    const char *k;
    void *v;
    while (map_next(&o->jobs, &it, &k, NULL, &v)) { /* deleting the current entry is allowed */
        orphan__job_t *j = v;
        uint64_t ended_for = j->ended ? orphan__since(now_ms, j->ended_since) : 0;
        uint64_t inactive_for = orphan__since(now_ms, j->inactive_since);
        orphan_verdict_t vd = {.job_id = k, .state = j->state};
        if (j->ended && ended_for >= o->cfg.ended_grace_ms) {
            vd.ended = 1;
            vd.waited_ms = ended_for;
        } else if (inactive_for >= o->cfg.orphan_grace_ms) {
            vd.waited_ms = inactive_for;
        } else {
            continue;
        }
        char *id = mem_strdup(k); /* forgotten before fn runs: fn may forget other jobs */
        if (!id)
            continue; /* due again at the next call */
        map_del(&o->jobs, id, NULL);
        mem_free(j);
        vd.job_id = id;
        due++;
        if (fn)
            fn(arg, &vd);
        mem_free(id);
    }
    return due;
}

size_t orphan_len(const orphan_t *o)
{
    return o->jobs.len;
}
