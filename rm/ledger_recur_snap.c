/* ledger_recur_snap.c - the recurring jobs' and the history's part of a ledger snapshot: written
 * with rm/enc.h's primitives and read back with every count and length bounded. */
#include "rm/ledger_recur_internal.h"

#include "common/err.h"
#include "common/mem.h"

#include <string.h>

/* ---- snapshots ---- */

static int ledger__dec_vals(struct enc_reader *r, uint32_t max, uint32_t **out, uint32_t *n)
{
    *out = NULL;
    *n = enc_get_u32s_count(r, max);
    if (*n == 0)
        return enc_reader_err(r) != 0 ? ERR_PARSE : 0;
    if ((*out = mem_alloc(*n * sizeof **out)) == NULL)
        return ERR_NOMEM;
    for (uint32_t i = 0; i < *n; i++)
        (*out)[i] = enc_get_u32(r);
    return 0;
}

static void ledger__enc_double(struct enc_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    enc_u64(b, u);
}

static double ledger__dec_double(struct enc_reader *r)
{
    uint64_t u = enc_get_u64(r);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

void ledger__recur_snap(const ledger_t *l, struct enc_buf *b)
{
    enc_u32(b, l->next_recur_id);
    enc_u32(b, (uint32_t)l->nrecs);
    for (size_t i = 0; i < l->nrecs; i++) {
        const struct ledger_recurring *r = &l->recs[i];
        enc_u32(b, r->id);
        enc_str(b, r->name);
        enc_u32(b, r->vc);
        enc_i64(b, r->period_ms);
        enc_i64(b, r->offset_ms);
        enc_i64(b, r->deadline_ms);
        enc_u8(b, r->deadline_source);
        enc_u8(b, r->paused ? 1 : 0);
        enc_i64(b, r->created_ms);
        enc_i64(b, r->last_fired);
        enc_blob(b, r->spec, (uint32_t)strlen(r->spec));
        enc_blob(b, r->outputs, (uint32_t)strlen(r->outputs));
        enc_i64(b, r->pend_period);
        enc_u64(b, r->pend_job);
        enc_i64(b, r->pend_fired_ms);
        enc_i64(b, r->pend_launch_ms);
        enc_u32(b, r->pend_launches);
        enc_str(b, r->pend_reason);
        enc_u32(b, r->runs);
        enc_u32(b, r->met);
        enc_u32(b, r->missed);
        enc_u8(b, r->slo_source);
        enc_i64(b, r->slo_deadline_ms);
        enc_u32(b, r->slo_runs);
        enc_u32(b, r->slo_consumed);
        ledger__enc_double(b, r->slo_read_cv);
        ledger__enc_double(b, r->slo_slack_ratio);
        enc_i64(b, r->slo_read_median_ms);
        enc_i64(b, r->slo_end_pct_ms);
        enc_u32(b, r->generation);
        enc_u32(b, r->model_gen);
        enc_u32(b, r->sky_step_ms);
        enc_u32s(b, r->sky_milli, r->nsky);
        enc_u32(b, r->plan_step_ms);
        enc_u32(b, r->resv_first);
        enc_u32s(b, r->resv_milli, r->nresv);
        enc_u32(b, r->rho_milli);
        enc_str(b, r->model_note);
        enc_str(b, r->last_error);
    }
    enc_u32(b, (uint32_t)l->hist_n);
    for (size_t k = 0; k < l->hist_n; k++) {
        const struct ledger_run *h = ledger_history_at(l, k);
        if (h == NULL)
            continue;
        enc_u64(b, h->job);
        enc_str(b, h->name);
        enc_str(b, h->recurring);
        enc_i64(b, h->period);
        enc_u8(b, h->outcome);
        enc_u32(b, h->vc);
        enc_i64(b, h->submit_ms);
        enc_i64(b, h->start_ms);
        enc_i64(b, h->end_ms);
        enc_i64(b, h->deadline_ms);
        enc_i64(b, h->period_start_ms);
        enc_u64(b, h->token_ms);
        enc_i64(b, h->out_read_ms);
        enc_u32(b, h->reprovisioned);
        enc_u32(b, h->sky_step_ms);
        enc_u32s(b, h->sky_milli, h->nsky);
        enc_str(b, h->reason);
    }
}

int ledger__recur_restore(ledger_t *l, struct enc_reader *rd, char *msg, size_t cap)
{
    l->next_recur_id = enc_get_u32(rd);
    uint32_t n = enc_get_u32(rd);
    if (n > LEDGER_MAX_RECURRING || (size_t)n * 64 > enc_reader_left(rd))
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad recurring count");
    if (n > 0 && (l->recs = mem_calloc(LEDGER_MAX_RECURRING, sizeof *l->recs)) == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
    for (uint32_t i = 0; i < n && enc_reader_err(rd) == 0; i++) {
        struct ledger_recurring *r = &l->recs[i];
        l->nrecs++; /* so that a failure below frees what it holds */
        r->id = enc_get_u32(rd);
        enc_get_str(rd, r->name, sizeof r->name);
        r->vc = enc_get_u32(rd);
        r->period_ms = enc_get_i64(rd);
        r->offset_ms = enc_get_i64(rd);
        r->deadline_ms = enc_get_i64(rd);
        r->deadline_source = enc_get_u8(rd);
        r->paused = enc_get_u8(rd) != 0;
        r->created_ms = enc_get_i64(rd);
        r->last_fired = enc_get_i64(rd);
        uint32_t len = 0;
        const char *spec = enc_get_blob(rd, LEDGER_SPEC_MAX, &len);
        r->spec = ledger__dup_text(spec, len);
        const char *outs = enc_get_blob(rd, LEDGER_FILES_MAX, &len);
        r->outputs = ledger__dup_text(outs, len);
        r->pend_period = enc_get_i64(rd);
        r->pend_job = enc_get_u64(rd);
        r->pend_fired_ms = enc_get_i64(rd);
        r->pend_launch_ms = enc_get_i64(rd);
        r->pend_launches = enc_get_u32(rd);
        enc_get_str(rd, r->pend_reason, sizeof r->pend_reason);
        r->runs = enc_get_u32(rd);
        r->met = enc_get_u32(rd);
        r->missed = enc_get_u32(rd);
        r->slo_source = enc_get_u8(rd);
        r->slo_deadline_ms = enc_get_i64(rd);
        r->slo_runs = enc_get_u32(rd);
        r->slo_consumed = enc_get_u32(rd);
        r->slo_read_cv = ledger__dec_double(rd);
        r->slo_slack_ratio = ledger__dec_double(rd);
        r->slo_read_median_ms = enc_get_i64(rd);
        r->slo_end_pct_ms = enc_get_i64(rd);
        r->generation = enc_get_u32(rd);
        r->model_gen = enc_get_u32(rd);
        r->sky_step_ms = enc_get_u32(rd);
        int rc = ledger__dec_vals(rd, LEDGER_VALS_MAX, &r->sky_milli, &r->nsky);
        r->plan_step_ms = enc_get_u32(rd);
        r->resv_first = enc_get_u32(rd);
        if (rc == 0)
            rc = ledger__dec_vals(rd, LEDGER_VALS_MAX, &r->resv_milli, &r->nresv);
        r->rho_milli = enc_get_u32(rd);
        enc_get_str(rd, r->model_note, sizeof r->model_note);
        enc_get_str(rd, r->last_error, sizeof r->last_error);
        if (rc == ERR_NOMEM || r->spec == NULL || r->outputs == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
        if (enc_reader_err(rd) != 0)
            break;
        if (r->id == 0 || r->id > l->next_recur_id || r->name[0] == '\0' || r->vc >= l->nvcs ||
            r->period_ms < 1000 || r->deadline_source > LEDGER_DEADLINE_INFERRED ||
            (r->nresv > 0 && r->plan_step_ms == 0) ||
            (i > 0 && strcmp(l->recs[i - 1].name, r->name) >= 0))
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad recurring job %u", i);
    }
    uint32_t nh = enc_get_u32(rd);
    if (nh > LEDGER_HISTORY_CAP || (size_t)nh * 80 > enc_reader_left(rd))
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad history count");
    for (uint32_t k = 0; k < nh && enc_reader_err(rd) == 0; k++) {
        struct ledger_run *h = ledger__history_push(l);
        if (h == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
        h->job = enc_get_u64(rd);
        enc_get_str(rd, h->name, sizeof h->name);
        enc_get_str(rd, h->recurring, sizeof h->recurring);
        h->period = enc_get_i64(rd);
        h->outcome = enc_get_u8(rd);
        h->vc = enc_get_u32(rd);
        h->submit_ms = enc_get_i64(rd);
        h->start_ms = enc_get_i64(rd);
        h->end_ms = enc_get_i64(rd);
        h->deadline_ms = enc_get_i64(rd);
        h->period_start_ms = enc_get_i64(rd);
        h->token_ms = enc_get_u64(rd);
        h->out_read_ms = enc_get_i64(rd);
        h->reprovisioned = enc_get_u32(rd);
        h->sky_step_ms = enc_get_u32(rd);
        if (ledger__dec_vals(rd, LEDGER_VALS_MAX, &h->sky_milli, &h->nsky) == ERR_NOMEM)
            return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
        enc_get_str(rd, h->reason, sizeof h->reason);
        if (enc_reader_err(rd) == 0 &&
            (h->outcome < LEDGER_RUN_SUCCEEDED || h->outcome > LEDGER_RUN_SKIPPED))
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad history record %u", k);
    }
    return 0;
}
