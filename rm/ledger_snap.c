/* ledger_snap.c - the ledger's canonical snapshot encoding and its bounded, checked restore. */
#include "rm/ledger.h"
#include "rm/ledger_internal.h"

#include "common/err.h"
#include "common/mem.h"

#include <stdio.h>
#include <string.h>

/* ---- snapshots ---- */

#define LEDGER__SNAP_MAGIC 0x50444c53u /* "PDLS" */
#define LEDGER__SNAP_VERSION                                                                       \
    7 /* 1: before the arbiter, 2: before recurring jobs, 3: before calibrated admission, 4:       \
         before tenants, 5: before the raw allocation, 6: before own spreads (all read) */

void ledger_snapshot(const ledger_t *l, struct enc_buf *b)
{
    enc_u32(b, LEDGER__SNAP_MAGIC);
    enc_u8(b, LEDGER__SNAP_VERSION);
    enc_i64(b, l->now);
    enc_u64(b, l->applied);
    enc_u64(b, l->next_job_id);
    enc_u32(b, (uint32_t)l->nvcs);
    for (size_t i = 0; i < l->nvcs; i++) {
        enc_str(b, l->vcs[i].name);
        enc_u32(b, l->vcs[i].capacity);
        enc_u32(b, l->vcs[i].granted);
        enc_u32(b, l->vcs[i].token_cpu_milli);
        enc_u32(b, l->vcs[i].token_mem_mb);
        enc_u32(b, l->vcs[i].spare);
        enc_u64(b, l->vcs[i].spare_grants);
        enc_u64(b, l->vcs[i].spare_reclaims);
        enc_i64(b, l->vcs[i].arbitrated_ms);
    }
    enc_u32(b, (uint32_t)l->nnodes);
    for (size_t i = 0; i < l->nnodes; i++) {
        const struct ledger_node *n = &l->nodes[i];
        enc_str(b, n->name);
        enc_str(b, n->rack);
        enc_str(b, n->address);
        enc_u32(b, n->cpus_milli);
        enc_u32(b, n->mem_mb);
        enc_u64(b, n->boot_id);
        enc_u8(b, n->liveness);
        enc_u8(b, n->draining ? 1 : 0);
        enc_i64(b, n->registered_ms);
        enc_i64(b, n->since_ms);
        enc_u32(b, n->down_count);
        enc_u64(b, n->tasks_ok);
        enc_u64(b, n->tasks_failed);
    }
    enc_u32(b, (uint32_t)l->njobs);
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        enc_u64(b, j->id);
        enc_str(b, j->name);
        enc_u32(b, j->vc);
        enc_u8(b, j->state);
        enc_i64(b, j->submitted_ms);
        enc_i64(b, j->deadline_ms);
        enc_i64(b, j->lease_ms);
        enc_i64(b, j->lease_expiry_ms);
        enc_i64(b, j->finished_ms);
        enc_u32(b, j->tokens);
        enc_u32(b, j->wanted);
        enc_u32(b, j->minimum);
        enc_u8(b, (uint8_t)((j->asked ? 4 : 0) | (j->has_profile ? LEDGER_JOB_HAS_PROFILE : 0) |
                            (j->best_effort ? LEDGER_JOB_BEST_EFFORT : 0)));
        enc_u32(b, j->weight_milli);
        enc_u64(b, j->work_ms);
        enc_u64(b, j->work_sd_ms);
        enc_u64(b, j->path_ms);
        enc_u64(b, j->path_sd_ms);
        enc_u32(b, j->width);
        enc_u32(b, j->done_permille);
        enc_i64(b, j->eta_ms);
        enc_i64(b, j->eta_p95_ms);
        enc_u32(b, j->demand);
        enc_u32(b, j->recur);
        enc_i64(b, j->period);
        enc_u8(b, j->reserved_run ? 1 : 0);
        enc_i64(b, j->started_ms);
        enc_u32(b, j->reprovisioned);
        enc_u32(b, j->epoch);
        enc_u32(b, j->restarts);
        enc_u32(b, j->jm_pid);
        enc_str(b, j->host);
        enc_str(b, j->job_dir);
        enc_u8(b, (uint8_t)((j->has_alpha ? 1 : 0) | (j->shared ? 2 : 0)));
        enc_u32(b, j->alpha_milli);
        enc_i64(b, j->pred_p50_ms);
        enc_i64(b, j->pred_bound_ms);
        enc_u32(b, j->raw);          /* version 6 */
        enc_u32(b, j->spread_milli); /* version 7 */
    }
    enc_u32(b, (uint32_t)l->idem_n);
    for (size_t k = 0; k < l->idem_n; k++) {
        const struct ledger__idem *e = &l->idem[(l->idem_head + k) % LEDGER_IDEM_CAP];
        enc_u64(b, e->key);
        enc_i64(b, e->res.code);
        enc_u64(b, e->res.value);
        enc_u64(b, e->res.aux);
    }
    ledger__recur_snap(l, b);
    enc_u32(b, l->calib.n);
    enc_u32(b, l->calib.head);
    enc_u64(b, l->calib.total);
    for (uint32_t i = 0; i < l->calib.n; i++)
        enc_u32(b, l->calib.ratio_milli[i]);
    ledger__tenant_snap(l, b);
    enc_u32(b, l->calib.own_n); /* version 7: the own spreads' ring */
    enc_u32(b, l->calib.own_head);
    for (uint32_t i = 0; i < l->calib.own_n; i++)
        enc_u32(b, l->calib.own_milli[i]);
    while (b->len % 8 != 0 && enc_buf_err(b) == 0) /* 8-byte multiples, as raft_uv likes */
        enc_u8(b, 0);
}

/* Reads a count and checks it against a hard limit and against the bytes left (each record
 * takes at least `min_size`), so a short input cannot make us allocate much. */
static size_t ledger__get_count(struct enc_reader *r, size_t limit, size_t min_size)
{
    uint32_t n = enc_get_u32(r);
    if (n > limit || (size_t)n * min_size > enc_reader_left(r)) {
        enc_reader_fail(r);
        return 0;
    }
    return n;
}

static int ledger__restore_body(ledger_t *l, struct enc_reader *r, char *msg, size_t cap)
{
    uint32_t magic = enc_get_u32(r);
    uint8_t version = enc_get_u8(r);
    if (magic != LEDGER__SNAP_MAGIC || version < 1 || version > LEDGER__SNAP_VERSION)
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad magic or version");
    l->now = enc_get_i64(r);
    l->applied = enc_get_u64(r);
    l->next_job_id = enc_get_u64(r);
    if (l->next_job_id == 0 || l->next_job_id > (1ull << 48))
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: next job id out of range");
    size_t nvcs = ledger__get_count(r, LEDGER_MAX_VCS, 10);
    if (nvcs > 0) {
        l->vcs = mem_calloc(nvcs, sizeof *l->vcs);
        if (l->vcs == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
        l->capvcs = nvcs;
    }
    for (size_t i = 0; i < nvcs && enc_reader_err(r) == 0; i++) {
        struct ledger_vc *vc = &l->vcs[i];
        enc_get_str(r, vc->name, sizeof vc->name);
        vc->capacity = enc_get_u32(r);
        vc->granted = enc_get_u32(r);
        vc->token_cpu_milli = 1000;
        vc->token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
        if (version >= 2) {
            vc->token_cpu_milli = enc_get_u32(r);
            vc->token_mem_mb = enc_get_u32(r);
            vc->spare = enc_get_u32(r);
            vc->spare_grants = enc_get_u64(r);
            vc->spare_reclaims = enc_get_u64(r);
        }
        if (version >= 3)
            vc->arbitrated_ms = enc_get_i64(r);
        if (vc->token_cpu_milli == 0 || vc->token_mem_mb == 0 || vc->spare > vc->granted)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad vc %zu", i);
        if (vc->name[0] == '\0' || ledger__vc_find(l, vc->name, NULL) != NULL)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad or duplicate vc name");
        l->nvcs++;
    }
    size_t nnodes = ledger__get_count(r, LEDGER_MAX_NODES, 60);
    for (size_t i = 0; i < nnodes && enc_reader_err(r) == 0; i++) {
        struct ledger_node n;
        memset(&n, 0, sizeof n);
        enc_get_str(r, n.name, sizeof n.name);
        enc_get_str(r, n.rack, sizeof n.rack);
        enc_get_str(r, n.address, sizeof n.address);
        n.cpus_milli = enc_get_u32(r);
        n.mem_mb = enc_get_u32(r);
        n.boot_id = enc_get_u64(r);
        n.liveness = enc_get_u8(r);
        uint8_t draining = enc_get_u8(r);
        n.draining = draining != 0;
        n.registered_ms = enc_get_i64(r);
        n.since_ms = enc_get_i64(r);
        n.down_count = enc_get_u32(r);
        n.tasks_ok = enc_get_u64(r);
        n.tasks_failed = enc_get_u64(r);
        if (enc_reader_err(r) != 0)
            break;
        if (n.name[0] == '\0' || n.liveness < LEDGER_NODE_UP || n.liveness > LEDGER_NODE_DOWN ||
            draining > 1 || ledger__node_find(l, n.name) != NULL)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad node %zu", i);
        int rc = ledger__node_reserve(l);
        if (rc != 0)
            return err_fmt(msg, cap, rc, "snapshot: %s", err_text(rc));
        l->nodes[l->nnodes] = n;
        ledger__nidx_insert(l->nidx, l->nidx_cap, n.name, (uint32_t)++l->nnodes);
    }
    size_t njobs = ledger__get_count(r, LEDGER_MAX_JOBS, 60);
    if (njobs > 0) {
        int rc = ledger__jobs_reserve(l, njobs);
        if (rc != 0)
            return err_fmt(msg, cap, rc, "snapshot: out of memory");
    }
    for (size_t i = 0; i < njobs && enc_reader_err(r) == 0; i++) {
        struct ledger_job *j = &l->jobs[i];
        memset(j, 0, sizeof *j);
        j->id = enc_get_u64(r);
        enc_get_str(r, j->name, sizeof j->name);
        j->vc = enc_get_u32(r);
        j->state = enc_get_u8(r);
        j->submitted_ms = enc_get_i64(r);
        j->deadline_ms = enc_get_i64(r);
        j->lease_ms = enc_get_i64(r);
        j->lease_expiry_ms = enc_get_i64(r);
        j->finished_ms = enc_get_i64(r);
        j->tokens = enc_get_u32(r);
        j->wanted = enc_get_u32(r);
        uint8_t flags = 0;
        if (version >= 2) {
            j->minimum = enc_get_u32(r);
            flags = enc_get_u8(r);
            j->asked = (flags & 4) != 0;
            j->has_profile = (flags & LEDGER_JOB_HAS_PROFILE) != 0;
            j->best_effort = (flags & LEDGER_JOB_BEST_EFFORT) != 0;
            j->weight_milli = enc_get_u32(r);
            j->work_ms = enc_get_u64(r);
            j->work_sd_ms = enc_get_u64(r);
            j->path_ms = enc_get_u64(r);
            j->path_sd_ms = enc_get_u64(r);
            j->width = enc_get_u32(r);
            j->done_permille = enc_get_u32(r);
            j->eta_ms = enc_get_i64(r);
            j->eta_p95_ms = enc_get_i64(r);
            j->demand = enc_get_u32(r);
        } else {
            j->period = -1;
            j->minimum = j->tokens;
            j->asked = j->wanted != 0;
        }
        if (version >= 3) {
            j->recur = enc_get_u32(r);
            j->period = enc_get_i64(r);
            j->reserved_run = enc_get_u8(r) != 0;
            j->started_ms = enc_get_i64(r);
            j->reprovisioned = enc_get_u32(r);
            j->epoch = enc_get_u32(r);
            j->restarts = enc_get_u32(r);
            j->jm_pid = enc_get_u32(r);
            enc_get_str(r, j->host, sizeof j->host);
            enc_get_str(r, j->job_dir, sizeof j->job_dir);
        } else if (version == 2) {
            j->period = -1;
        }
        if (version >= 4) {
            uint8_t bits = enc_get_u8(r);
            j->has_alpha = (bits & 1) != 0;
            j->shared = (bits & 2) != 0;
            j->alpha_milli = enc_get_u32(r);
            j->pred_p50_ms = enc_get_i64(r);
            j->pred_bound_ms = enc_get_i64(r);
            if (bits > 3 || j->alpha_milli > 1000 || j->pred_p50_ms < 0 || j->pred_bound_ms < 0)
                return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad job %zu", i);
        }
        if (version >= 6)
            j->raw = enc_get_u32(r);
        if (version >= 7)
            j->spread_milli = enc_get_u32(r);
        if (flags > 7 || j->minimum > j->tokens || j->done_permille > 1000 ||
            j->raw > LEDGER_MAX_TOKENS)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad job %zu", i);
        if (j->id == 0 || j->id >= l->next_job_id || j->vc >= l->nvcs ||
            j->state < LEDGER_JOB_ACTIVE || j->state > LEDGER_JOB_EXPIRED ||
            j->lease_ms < LEDGER_LEASE_MIN_MS || j->lease_ms > LEDGER_LEASE_MAX_MS)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad job %zu", i);
        if (j->state != LEDGER_JOB_ACTIVE)
            l->nfinished++;
        l->njobs++;
    }
    size_t nidem = ledger__get_count(r, LEDGER_IDEM_CAP, version >= 2 ? 32 : 24);
    for (size_t k = 0; k < nidem && enc_reader_err(r) == 0; k++) {
        struct ledger_result res;
        uint64_t key = enc_get_u64(r);
        int64_t code = enc_get_i64(r);
        res.value = enc_get_u64(r);
        res.aux = version >= 2 ? enc_get_u64(r) : 0;
        if (key == 0 || code > 0 || code < -1000 || ledger_idem_lookup(l, key, NULL))
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad idempotency entry %zu", k);
        res.code = (int)code;
        ledger__idem_put(l, key, &res);
    }
    if (version >= 3 && enc_reader_err(r) == 0) {
        int rc = ledger__recur_restore(l, r, msg, cap);
        if (rc != 0)
            return rc;
    }
    if (version >= 4 && enc_reader_err(r) == 0) {
        l->calib.n = enc_get_u32(r);
        l->calib.head = enc_get_u32(r);
        l->calib.total = enc_get_u64(r);
        if (l->calib.n > CALIB_WINDOW || (size_t)l->calib.n * 4 > enc_reader_left(r))
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad calibration");
        for (uint32_t i = 0; i < l->calib.n; i++)
            l->calib.ratio_milli[i] = enc_get_u32(r);
        if (enc_reader_err(r) == 0 && calib_check(&l->calib) != 0)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad calibration");
    }
    if (version >= 5 && enc_reader_err(r) == 0) {
        int rc = ledger__tenant_restore(l, r, msg, cap);
        if (rc != 0)
            return rc;
    }
    if (version >= 7 && enc_reader_err(r) == 0) {
        l->calib.own_n = enc_get_u32(r);
        l->calib.own_head = enc_get_u32(r);
        if (l->calib.own_n > CALIB_WINDOW || (size_t)l->calib.own_n * 4 > enc_reader_left(r))
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad calibration");
        for (uint32_t i = 0; i < l->calib.own_n; i++)
            l->calib.own_milli[i] = enc_get_u32(r);
        if (enc_reader_err(r) == 0 && calib_check(&l->calib) != 0)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad calibration");
    }
    if (enc_reader_err(r) != 0)
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: truncated or malformed");
    size_t left = enc_reader_left(r);
    bool padding = left < 8; /* ledger_snapshot pads to 8 bytes */
    for (size_t i = 0; padding && i < left; i++)
        padding = enc_get_u8(r) == 0;
    if (!padding)
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: %zu trailing bytes", left);
    char why[160];
    if (ledger_check(l, why, sizeof why) != 0)
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: inconsistent: %s", why);
    return 0;
}

int ledger_restore(const void *data, size_t len, ledger_t **out, char *msg, size_t cap)
{
    *out = NULL;
    ledger_t *l = ledger_new();
    if (l == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
    struct enc_reader r;
    enc_reader_init(&r, data, len);
    int rc = ledger__restore_body(l, &r, msg, cap);
    if (rc != 0) {
        ledger_destroy(&l);
        return rc;
    }
    *out = l;
    return 0;
}
