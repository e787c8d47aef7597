/* fsm.c - canonical/raft state machine over the ledger. */
#include "rm/fsm.h"

#include "common/err.h"
#include "common/mem.h"
#include "rm/ledger_cmd.h"

#include <string.h>

struct fsm {
    struct raft_fsm raft; /* first: raft hands this pointer back */
    ledger_t *ledger;
    fsm_applied_fn *hook;
    void *hook_arg;
    struct fsm_stats stats;
};

static int fsm__apply(struct raft_fsm *rf, const struct raft_buffer *buf, void **result)
{
    fsm_t *f = rf->data;
    char msg[128];
    struct ledger_cmd_iter it;
    struct ledger_cmd c;
    *result = NULL;
    f->stats.entries++;
    f->stats.since_entries++;
    f->stats.since_bytes += buf->len;
    /* Validate the whole entry first: a batch is applied entirely or not at all. */
    if (ledger_cmd_validate(buf->base, buf->len, msg, sizeof msg) != 0 ||
        ledger_cmd_iter_init(&it, buf->base, buf->len, msg, sizeof msg) != 0) {
        f->stats.malformed++;
        return 0;
    }
    while (ledger_cmd_next(&it, &c, msg, sizeof msg) == 1) {
        struct ledger_result res;
        ledger_apply(f->ledger, &c, it.now, &res);
        if (res.code == ERR_NOMEM)
            return RAFT_NOMEM;
        f->stats.commands++;
        if (res.code != 0)
            f->stats.refused++;
        if (f->hook != NULL)
            f->hook(f->hook_arg, &c, &res);
    }
    return 0;
}

static int fsm__snapshot(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    fsm_t *f = rf->data;
    struct enc_buf b;
    enc_buf_init(&b);
    b.realloc_fn = raft_realloc; /* raft frees the snapshot buffers with raft_free */
    ledger_snapshot(f->ledger, &b);
    size_t len = 0;
    uint8_t *data = enc_buf_take(&b, &len);
    if (data == NULL)
        return RAFT_NOMEM;
    *bufs = raft_malloc(sizeof **bufs);
    if (*bufs == NULL) {
        raft_free(data);
        return RAFT_NOMEM;
    }
    (*bufs)[0].base = data;
    (*bufs)[0].len = len;
    *n_bufs = 1;
    f->stats.snapshots++;
    f->stats.since_entries = 0;
    f->stats.since_bytes = 0;
    return 0;
}

static int fsm__restore(struct raft_fsm *rf, struct raft_buffer *buf)
{
    fsm_t *f = rf->data;
    char msg[160];
    ledger_t *l = NULL;
    int rc = ledger_restore(buf->base, buf->len, &l, msg, sizeof msg);
    if (rc != 0)
        return rc == ERR_NOMEM ? RAFT_NOMEM : RAFT_MALFORMED;
    ledger_destroy(&f->ledger);
    f->ledger = l;
    f->stats.restores++;
    f->stats.since_entries = 0;
    f->stats.since_bytes = 0;
    raft_free(buf->base); /* on success the fsm owns the snapshot data */
    return 0;
}

fsm_t *fsm_new(void)
{
    fsm_t *f = mem_calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->ledger = ledger_new();
    if (f->ledger == NULL) {
        mem_free(f);
        return NULL;
    }
    f->raft.version = 1;
    f->raft.data = f;
    f->raft.apply = fsm__apply;
    f->raft.snapshot = fsm__snapshot;
    f->raft.restore = fsm__restore;
    return f;
}

void fsm_destroy(fsm_t **fp)
{
    if (fp == NULL || *fp == NULL)
        return;
    ledger_destroy(&(*fp)->ledger);
    mem_free(*fp);
    *fp = NULL;
}

struct raft_fsm *fsm_raft(fsm_t *f)
{
    return &f->raft;
}

ledger_t *fsm_ledger(fsm_t *f)
{
    return f->ledger;
}

void fsm_set_hook(fsm_t *f, fsm_applied_fn *fn, void *arg)
{
    f->hook = fn;
    f->hook_arg = arg;
}

void fsm_stats(const fsm_t *f, struct fsm_stats *out)
{
    *out = f->stats;
}
