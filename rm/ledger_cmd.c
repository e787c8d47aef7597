/* ledger_cmd.c - encoding of ledger command batches into Raft log entries. */
#include "rm/ledger_cmd.h"

#include "common/err.h"

#include <stdbool.h>
#include <string.h>

#define LEDGER_CMD__MAGIC 0x50444c45u /* "PDLE" */
#define LEDGER_CMD__VERSION                                                                        \
    10 /* 1: before the arbiter, 2: before recurring jobs, 3: before calibrated admission, 4:      \
          before tenants, 5: before the raw allocation, 6: before own spreads, 7: before the       \
          joint plan's admission, 8: before a job's own history in its bound, 9: before outcomes   \
          measured on the tokens held (all still read) */

/* An array into the iterator's scratch (LEDGER_VALS_MAX values). */
static uint32_t ledger_cmd__get_vals(struct enc_reader *r, uint32_t *out)
{
    uint32_t n = enc_get_u32s_count(r, LEDGER_VALS_MAX);
    for (uint32_t i = 0; i < n; i++)
        out[i] = enc_get_u32(r);
    return n;
}

static void ledger_cmd__encode_one(struct enc_buf *b, const struct ledger_cmd *c)
{
    enc_u8(b, c->type);
    enc_u64(b, c->key);
    switch (c->type) {
    case LEDGER_CMD_NODE_REGISTER:
        enc_str(b, c->name);
        enc_str(b, c->rack);
        enc_str(b, c->address);
        enc_u32(b, c->cpus_milli);
        enc_u32(b, c->mem_mb);
        enc_u64(b, c->boot_id);
        break;
    case LEDGER_CMD_NODE_LIVENESS:
        enc_str(b, c->name);
        enc_u8(b, c->state);
        break;
    case LEDGER_CMD_NODE_DRAIN:
        enc_str(b, c->name);
        enc_u32(b, c->count);
        break;
    case LEDGER_CMD_NODE_OUTCOME:
        enc_str(b, c->name);
        enc_u64(b, c->ok);
        enc_u64(b, c->failed);
        break;
    case LEDGER_CMD_VC_SET:
        enc_str(b, c->vc);
        enc_u32(b, c->count);
        enc_u32(b, c->cpus_milli);
        enc_u32(b, c->mem_mb);
        break;
    case LEDGER_CMD_JOB_REGISTER:
        enc_str(b, c->name);
        enc_str(b, c->vc);
        enc_i64(b, c->deadline_ms);
        enc_i64(b, c->lease_ms);
        enc_u8(b, c->flags);
        enc_u32(b, c->weight_milli);
        enc_u64(b, c->work_ms);
        enc_u64(b, c->work_sd_ms);
        enc_u64(b, c->path_ms);
        enc_u64(b, c->path_sd_ms);
        enc_u32(b, c->width);
        enc_u32(b, c->k_milli);
        enc_str(b, c->recurring);
        enc_i64(b, c->period);
        enc_blob(b, c->text, c->text_len);
        enc_blob(b, c->text2, c->text2_len);
        enc_str(b, c->address);
        enc_u64(b, c->boot_id);
        enc_u32(b, c->alpha_milli);
        enc_u32(b, c->spread_milli); /* version 7 */
        break;
    case LEDGER_CMD_JOB_END:
        enc_u64(b, c->job);
        enc_u8(b, c->state);
        enc_i64(b, c->started_ms);
        enc_u64(b, c->token_ms);
        enc_u32(b, c->step_ms);
        enc_u32s(b, c->vals, c->nvals);
        enc_blob(b, c->text, c->text_len);
        break;
    case LEDGER_CMD_JOB_DEADLINE:
        enc_u64(b, c->job);
        enc_i64(b, c->deadline_ms);
        enc_u32(b, c->k_milli);
        break;
    case LEDGER_CMD_TOKEN_REQUEST:
    case LEDGER_CMD_TOKEN_RELEASE:
        enc_u64(b, c->job);
        enc_u32(b, c->count);
        if (c->type == LEDGER_CMD_TOKEN_REQUEST)
            enc_u32(b, c->raw); /* version 6 */
        break;
    case LEDGER_CMD_LEASE_RENEW:
        enc_u64(b, c->job);
        enc_i64(b, c->lease_ms);
        enc_u32(b, c->done_permille);
        enc_i64(b, c->eta_ms);
        enc_i64(b, c->eta_p95_ms);
        enc_u32(b, c->count);
        enc_blob(b, c->text2, c->text2_len);
        enc_str(b, c->address);
        enc_u64(b, c->boot_id);
        enc_u32(b, c->epoch);
        break;
    case LEDGER_CMD_JOB_RESUME:
        enc_u64(b, c->job);
        enc_blob(b, c->text2, c->text2_len);
        enc_str(b, c->address);
        enc_u64(b, c->boot_id);
        enc_u32(b, c->count);
        break;
    case LEDGER_CMD_RECUR_ADD:
        enc_str(b, c->name);
        enc_str(b, c->vc);
        enc_i64(b, c->period_ms);
        enc_i64(b, c->offset_ms);
        enc_i64(b, c->deadline_ms);
        enc_u32(b, c->weight_milli);
        enc_blob(b, c->text, c->text_len);
        enc_blob(b, c->text2, c->text2_len);
        break;
    case LEDGER_CMD_RECUR_PAUSE:
        enc_str(b, c->name);
        enc_u32(b, c->count);
        break;
    case LEDGER_CMD_RECUR_REMOVE:
    case LEDGER_CMD_RECUR_ACCEPT:
        enc_str(b, c->name);
        break;
    case LEDGER_CMD_RECUR_FIRE:
        enc_str(b, c->name);
        enc_i64(b, c->period);
        break;
    case LEDGER_CMD_RECUR_NOTE:
        enc_str(b, c->name);
        enc_i64(b, c->period);
        enc_u8(b, c->state);
        enc_blob(b, c->text, c->text_len);
        break;
    case LEDGER_CMD_RECUR_MODEL:
        enc_str(b, c->name);
        enc_u32(b, c->count);
        enc_u32(b, c->width);
        enc_u32(b, c->cpus_milli);
        enc_u32(b, c->mem_mb);
        enc_u8(b, c->state);
        enc_u32s(b, c->vals, c->nvals);
        enc_u32s(b, c->vals2, c->nvals2);
        enc_blob(b, c->text, c->text_len);
        break;
    case LEDGER_CMD_ROLE_SET:
        enc_str(b, c->name);
        enc_u8(b, c->state);
        break;
    case LEDGER_CMD_GRANT_SET:
        enc_str(b, c->name);
        enc_str(b, c->vc);
        enc_u32(b, c->count);
        break;
    case LEDGER_CMD_QUOTA_SET:
        enc_str(b, c->name);
        enc_str(b, c->vc);
        enc_u32(b, c->count);
        enc_u64(b, c->token_ms);
        break;
    case LEDGER_CMD_AUDIT:
        enc_str(b, c->name);
        enc_str(b, c->address);
        enc_u8(b, c->state);
        enc_blob(b, c->text, c->text_len);
        break;
    default: /* TICK and unknown types carry no fields */
        break;
    }
    enc_str(b, c->user); /* version 5: who asked */
}

void ledger_cmd_encode(struct enc_buf *b, const struct ledger_cmd *cmds, size_t n, int64_t now)
{
    enc_u32(b, LEDGER_CMD__MAGIC);
    enc_u8(b, LEDGER_CMD__VERSION);
    enc_i64(b, now);
    enc_u32(b, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        ledger_cmd__encode_one(b, &cmds[i]);
    /* raft_uv lays entries out on disk assuming lengths that are multiples of 8: an entry of
     * another length reads back shifted after a restart */
    while (b->len % 8 != 0 && enc_buf_err(b) == 0)
        enc_u8(b, 0);
}

int ledger_cmd_iter_init(struct ledger_cmd_iter *it, const void *data, size_t len, char *msg,
                         size_t cap)
{
    enc_reader_init(&it->r, data, len);
    uint32_t magic = enc_get_u32(&it->r);
    uint8_t version = enc_get_u8(&it->r);
    it->now = enc_get_i64(&it->r);
    it->count = enc_get_u32(&it->r);
    it->left = it->count;
    if (enc_reader_err(&it->r) != 0 || magic != LEDGER_CMD__MAGIC)
        return err_fmt(msg, cap, ERR_PARSE, "log entry: bad header");
    if (version < 1 || version > LEDGER_CMD__VERSION)
        return err_fmt(msg, cap, ERR_PARSE, "log entry: version %u unsupported", version);
    it->version = version;
    if (it->count > LEDGER_CMD_BATCH_MAX)
        return err_fmt(msg, cap, ERR_PARSE, "log entry: %u commands (max %d)", it->count,
                       LEDGER_CMD_BATCH_MAX);
    return 0;
}

int ledger_cmd_next(struct ledger_cmd_iter *it, struct ledger_cmd *c, char *msg, size_t cap)
{
    struct enc_reader *r = &it->r;
    if (it->left == 0) {
        /* raft_uv stores entries padded to 8 bytes and hands them back padded after a
         * restart: up to 7 zero bytes may follow the last command, nothing else */
        size_t left = enc_reader_left(r);
        bool padding = left < 8;
        for (size_t i = 0; padding && i < left; i++)
            padding = enc_get_u8(r) == 0;
        if (!padding)
            return err_fmt(msg, cap, ERR_PARSE, "log entry: %zu trailing bytes", left);
        return 0;
    }
    it->left--;
    ledger_cmd_init(c, LEDGER_CMD_TICK);
    c->type = enc_get_u8(r);
    c->key = enc_get_u64(r);
    switch (c->type) {
    case LEDGER_CMD_NODE_REGISTER:
        enc_get_str(r, c->name, sizeof c->name);
        enc_get_str(r, c->rack, sizeof c->rack);
        enc_get_str(r, c->address, sizeof c->address);
        c->cpus_milli = enc_get_u32(r);
        c->mem_mb = enc_get_u32(r);
        c->boot_id = enc_get_u64(r);
        break;
    case LEDGER_CMD_NODE_LIVENESS:
        enc_get_str(r, c->name, sizeof c->name);
        c->state = enc_get_u8(r);
        break;
    case LEDGER_CMD_NODE_DRAIN:
        enc_get_str(r, c->name, sizeof c->name);
        c->count = enc_get_u32(r);
        break;
    case LEDGER_CMD_NODE_OUTCOME:
        enc_get_str(r, c->name, sizeof c->name);
        c->ok = enc_get_u64(r);
        c->failed = enc_get_u64(r);
        break;
    case LEDGER_CMD_VC_SET:
        enc_get_str(r, c->vc, sizeof c->vc);
        c->count = enc_get_u32(r);
        if (it->version >= 2) {
            c->cpus_milli = enc_get_u32(r);
            c->mem_mb = enc_get_u32(r);
        }
        break;
    case LEDGER_CMD_JOB_REGISTER:
        enc_get_str(r, c->name, sizeof c->name);
        enc_get_str(r, c->vc, sizeof c->vc);
        c->deadline_ms = enc_get_i64(r);
        c->lease_ms = enc_get_i64(r);
        if (it->version >= 2) {
            c->flags = enc_get_u8(r);
            c->weight_milli = enc_get_u32(r);
            c->work_ms = enc_get_u64(r);
            c->work_sd_ms = enc_get_u64(r);
            c->path_ms = enc_get_u64(r);
            c->path_sd_ms = enc_get_u64(r);
            c->width = enc_get_u32(r);
            c->k_milli = enc_get_u32(r);
        }
        if (it->version >= 3) {
            enc_get_str(r, c->recurring, sizeof c->recurring);
            c->period = enc_get_i64(r);
            c->text = enc_get_blob(r, LEDGER_FILES_MAX, &c->text_len);
            c->text2 = enc_get_blob(r, LEDGER_JOB_DIR_MAX, &c->text2_len);
            enc_get_str(r, c->address, sizeof c->address);
            c->boot_id = enc_get_u64(r);
        }
        if (it->version >= 4)
            c->alpha_milli = enc_get_u32(r);
        if (it->version >= 7)
            c->spread_milli = enc_get_u32(r);
        break;
    case LEDGER_CMD_JOB_END:
        c->job = enc_get_u64(r);
        c->state = enc_get_u8(r);
        if (it->version >= 3) {
            c->started_ms = enc_get_i64(r);
            c->token_ms = enc_get_u64(r);
            c->step_ms = enc_get_u32(r);
            c->nvals = ledger_cmd__get_vals(r, it->vals);
            c->vals = it->vals;
            c->text = enc_get_blob(r, LEDGER_REASON_MAX, &c->text_len);
        }
        break;
    case LEDGER_CMD_JOB_DEADLINE:
        c->job = enc_get_u64(r);
        c->deadline_ms = enc_get_i64(r);
        if (it->version >= 5)
            c->k_milli = enc_get_u32(r);
        break;
    case LEDGER_CMD_TOKEN_REQUEST:
    case LEDGER_CMD_TOKEN_RELEASE:
        c->job = enc_get_u64(r);
        c->count = enc_get_u32(r);
        if (c->type == LEDGER_CMD_TOKEN_REQUEST && it->version >= 6)
            c->raw = enc_get_u32(r);
        break;
    case LEDGER_CMD_LEASE_RENEW:
        c->job = enc_get_u64(r);
        c->lease_ms = enc_get_i64(r);
        if (it->version >= 2) {
            c->done_permille = enc_get_u32(r);
            c->eta_ms = enc_get_i64(r);
            c->eta_p95_ms = enc_get_i64(r);
            c->count = enc_get_u32(r);
        }
        if (it->version >= 3) {
            c->text2 = enc_get_blob(r, LEDGER_JOB_DIR_MAX, &c->text2_len);
            enc_get_str(r, c->address, sizeof c->address);
            c->boot_id = enc_get_u64(r);
            c->epoch = enc_get_u32(r);
        }
        break;
    case LEDGER_CMD_JOB_RESUME:
        c->job = enc_get_u64(r);
        c->text2 = enc_get_blob(r, LEDGER_JOB_DIR_MAX, &c->text2_len);
        enc_get_str(r, c->address, sizeof c->address);
        c->boot_id = enc_get_u64(r);
        c->count = enc_get_u32(r);
        break;
    case LEDGER_CMD_TICK:
        break;
    case LEDGER_CMD_RECUR_ADD:
        enc_get_str(r, c->name, sizeof c->name);
        enc_get_str(r, c->vc, sizeof c->vc);
        c->period_ms = enc_get_i64(r);
        c->offset_ms = enc_get_i64(r);
        c->deadline_ms = enc_get_i64(r);
        c->weight_milli = enc_get_u32(r);
        c->text = enc_get_blob(r, LEDGER_SPEC_MAX, &c->text_len);
        c->text2 = enc_get_blob(r, LEDGER_FILES_MAX, &c->text2_len);
        break;
    case LEDGER_CMD_RECUR_PAUSE:
        enc_get_str(r, c->name, sizeof c->name);
        c->count = enc_get_u32(r);
        break;
    case LEDGER_CMD_RECUR_REMOVE:
    case LEDGER_CMD_RECUR_ACCEPT:
        enc_get_str(r, c->name, sizeof c->name);
        break;
    case LEDGER_CMD_RECUR_FIRE:
        enc_get_str(r, c->name, sizeof c->name);
        c->period = enc_get_i64(r);
        break;
    case LEDGER_CMD_RECUR_NOTE:
        enc_get_str(r, c->name, sizeof c->name);
        c->period = enc_get_i64(r);
        c->state = enc_get_u8(r);
        c->text = enc_get_blob(r, LEDGER_REASON_MAX, &c->text_len);
        break;
    case LEDGER_CMD_RECUR_MODEL:
        enc_get_str(r, c->name, sizeof c->name);
        c->count = enc_get_u32(r);
        c->width = enc_get_u32(r);
        c->cpus_milli = enc_get_u32(r);
        c->mem_mb = enc_get_u32(r);
        c->state = enc_get_u8(r);
        c->nvals = ledger_cmd__get_vals(r, it->vals);
        c->vals = it->vals;
        c->nvals2 = ledger_cmd__get_vals(r, it->vals2);
        c->vals2 = it->vals2;
        c->text = enc_get_blob(r, LEDGER_REASON_MAX, &c->text_len);
        break;
    case LEDGER_CMD_ROLE_SET:
    case LEDGER_CMD_GRANT_SET:
    case LEDGER_CMD_QUOTA_SET:
    case LEDGER_CMD_AUDIT:
        if (it->version < 5)
            return err_fmt(msg, cap, ERR_PARSE, "log entry: %s in a version %u entry",
                           ledger_cmd_name(c->type), it->version);
        enc_get_str(r, c->name, sizeof c->name);
        if (c->type == LEDGER_CMD_ROLE_SET) {
            c->state = enc_get_u8(r);
        } else if (c->type == LEDGER_CMD_AUDIT) {
            enc_get_str(r, c->address, sizeof c->address);
            c->state = enc_get_u8(r);
            c->text = enc_get_blob(r, LEDGER_REASON_MAX, &c->text_len);
        } else {
            enc_get_str(r, c->vc, sizeof c->vc);
            c->count = enc_get_u32(r);
            if (c->type == LEDGER_CMD_QUOTA_SET)
                c->token_ms = enc_get_u64(r);
        }
        break;
    default:
        return err_fmt(msg, cap, ERR_PARSE, "log entry: unknown command type %u", c->type);
    }
    if (it->version >= 5)
        enc_get_str(r, c->user, sizeof c->user);
    c->fluid_admission = it->version < 8; /* judged as it was when it was written */
    c->pooled_calib = it->version < 9;
    c->calib_at_p50 = it->version < 10;
    if (enc_reader_err(r) != 0)
        return err_fmt(msg, cap, ERR_PARSE, "log entry: truncated %s command",
                       ledger_cmd_name(c->type));
    return 1;
}

int ledger_cmd_validate(const void *data, size_t len, char *msg, size_t cap)
{
    struct ledger_cmd_iter it;
    struct ledger_cmd c;
    int rc = ledger_cmd_iter_init(&it, data, len, msg, cap);
    while (rc == 0 && (rc = ledger_cmd_next(&it, &c, msg, cap)) == 1)
        rc = 0;
    return rc;
}

const char *ledger_cmd_name(uint8_t type)
{
    static const char *const names[] = {"?",
                                        "node_register",
                                        "node_liveness",
                                        "node_drain",
                                        "node_outcome",
                                        "vc_set",
                                        "job_register",
                                        "job_end",
                                        "job_deadline",
                                        "token_request",
                                        "token_release",
                                        "lease_renew",
                                        "tick",
                                        "recur_add",
                                        "recur_pause",
                                        "recur_remove",
                                        "recur_accept",
                                        "recur_fire",
                                        "recur_note",
                                        "recur_model",
                                        "job_resume",
                                        "role_set",
                                        "grant_set",
                                        "quota_set",
                                        "audit"};
    return type <= LEDGER_CMD__MAX ? names[type] : "?";
}
