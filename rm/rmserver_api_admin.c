/* rmserver_api_admin.c - ADMIN_QUERY on paddock-rm: the read-only kinds answered from this
 * replica's ledger and view, the writes (replica changes, tenants, job cancel and deadline,
 * recurring jobs) checked, audited and sent through the log with an idempotency key of their
 * own. */
#include "rm/rmserver_api_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "rm/arbiter.h"
#include "rm/ledger_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool rmserver__u32(const char *v, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end != '\0' || v[0] == '-' || x > max)
        return false;
    *out = x;
    return true;
}

/* The idempotency key of an admin write, which comes without one: a random one, or 0 (no key:
 * the ledger then does not deduplicate it) when the OS's random source fails, which is logged. */
static uint64_t rmserver__nonce(void)
{
    uint64_t k = 0;
    if (id_random_u64(&k) != 0) {
        log_warn("no random source: an admin write goes without an idempotency key");
        k = 0;
    }
    return k;
}

/* Issue 27: role_set, grant_set and quota_set, admins only; false when q is another kind. */
static bool rmserver__tenant_admin(struct rmserver *s, zuv_sock_t *sock, const void *peer,
                                   size_t peer_len, const proto_msg_t *m)
{
    const proto_admin_query_t *q = &m->admin_query;
    bool role = strcmp(q->kind, RMSERVER_ADMIN_ROLE_SET) == 0;
    bool grant = strcmp(q->kind, RMSERVER_ADMIN_GRANT_SET) == 0;
    bool quota = strcmp(q->kind, RMSERVER_ADMIN_QUOTA_SET) == 0;
    if (!role && !grant && !quota)
        return false;
    const char *target = q->nargs > 0 ? q->args[0] : "";
    if (!s->caller.admin) {
        char why[256];
        snprintf(why, sizeof why, "%s may not change roles, grants or quotas (admins only)",
                 s->caller.user);
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_TENANTS, q->kind, target, why);
        return true;
    }
    struct ledger_cmd c;
    uint64_t a = 0, b = 0;
    bool ok = q->nargs == (role    ? 2u
                           : grant ? 3u
                                   : 4u) &&
              strlen(q->args[0]) > 0 && strlen(q->args[0]) < LEDGER_NAME_MAX &&
              (role || strlen(q->args[1]) < LEDGER_NAME_MAX);
    if (ok && role) {
        ledger_cmd_init(&c, LEDGER_CMD_ROLE_SET);
        c.state = strcmp(q->args[1], "admin") == 0  ? LEDGER_ROLE_ADMIN
                  : strcmp(q->args[1], "user") == 0 ? LEDGER_ROLE_USER
                                                    : 0;
        ok = c.state != 0 || strcmp(q->args[1], "none") == 0;
    } else if (ok && grant) {
        ledger_cmd_init(&c, LEDGER_CMD_GRANT_SET);
        ok = rmserver__u32(q->args[2], 1, &a);
        c.count = (uint32_t)a;
    } else if (ok) {
        ledger_cmd_init(&c, LEDGER_CMD_QUOTA_SET);
        ok = rmserver__u32(q->args[2], LEDGER_MAX_TOKENS, &a) &&
             rmserver__u32(q->args[3], (1ull << 52) / 1000, &b);
        c.count = (uint32_t)a;
        c.token_ms = b * 1000;
    }
    if (!ok) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_INVAL,
                         role    ? "usage: role_set USER admin|user|none"
                         : grant ? "usage: grant_set USER VC 1|0"
                                 : "usage: quota_set USER|* VC TOKENS TOKEN_S_PER_DAY (0: none)");
        return true;
    }
    snprintf(c.name, sizeof c.name, "%s", q->args[0]);
    if (!role)
        snprintf(c.vc, sizeof c.vc, "%s", q->args[1]);
    c.key = rmserver__nonce();
    rmserver__write(s, sock, peer, peer_len, m, &c, "", q->kind);
    return true;
}

void rmserver__admin(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                     const proto_msg_t *m)
{
    const proto_admin_query_t *q = &m->admin_query;
    bool member = strcmp(q->kind, RMSERVER_ADMIN_REPLICA_ADD) == 0 ||
                  strcmp(q->kind, RMSERVER_ADMIN_REPLICA_REMOVE) == 0;
    const char *target = q->nargs > 0 ? q->args[0] : "";
    if (member && !s->caller.admin) {
        char why[256];
        snprintf(why, sizeof why, "%s may not change the replica set (admins only)",
                 s->caller.user);
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_MEMBERSHIP, q->kind, target, why);
        return;
    }
    if (member && s->ready)
        rmserver__audit(s, LEDGER_AUDIT_DONE, q->kind, target, "requested");
    if (rmserver_member_admin(s, sock, peer, peer_len, m))
        return;
    if (rmserver__tenant_admin(s, sock, peer, peer_len, m))
        return;
    bool cancel = strcmp(q->kind, PROTO_ADMIN_JOB_CANCEL) == 0;
    if (cancel || strcmp(q->kind, PROTO_ADMIN_JOB_DEADLINE) == 0) {
        struct ledger_cmd c;
        ledger_cmd_init(&c, cancel ? LEDGER_CMD_JOB_END : LEDGER_CMD_JOB_DEADLINE);
        c.state = LEDGER_JOB_CANCELLED;
        char *end = NULL;
        long long ms = !cancel && q->nargs >= 2 ? strtoll(q->args[1], &end, 10) : 0;
        if (q->nargs < (cancel ? 1u : 2u) || rmserver__parse_job(q->args[0], &c.job) != 0 ||
            (!cancel && (end == q->args[1] || *end != '\0' || ms < 0 ||
                         ms > (long long)LEDGER_LEASE_MAX_MS * 3650))) {
            rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_INVAL,
                             cancel ? "usage: job_cancel JOB_ID"
                                    : "usage: job_deadline JOB_ID MS (from submission)");
            return;
        }
        if (!rmserver__owns(s, c.job)) {
            char why[256];
            rmserver__owner_text(s, c.job, cancel ? "cancel" : "change the deadline of", why,
                                 sizeof why);
            rmserver__deny(s, sock, peer, peer_len, m,
                           cancel ? RMSERVER_DENY_CANCEL : RMSERVER_DENY_DEADLINE,
                           cancel ? "cancel" : "deadline", q->args[0], why);
            return;
        }
        char by[LEDGER_REASON_MAX];
        if (cancel) { /* the reason in the history, and what the audit trail knows it by */
            snprintf(by, sizeof by, "cancelled by %s", s->caller.user);
            c.text = by;
            c.text_len = (uint32_t)strlen(by);
        }
        if (!cancel) {
            const struct ledger_job *j = ledger_job_find(fsm_ledger(s->fsm), c.job);
            c.deadline_ms = ms == 0 ? 0 : (j != NULL ? j->submitted_ms : clock_wall_ms()) + ms;
            /* issue 25: a tighter deadline goes through admission with this k (entry v5) */
            c.k_milli =
                (uint32_t)((s->cfg->admission_sd > 0 ? s->cfg->admission_sd : ARBITER_K_DEFAULT) *
                               1000.0 +
                           0.5);
        }
        c.key = rmserver__nonce(); /* admin writes carry no key: one of our own */
        rmserver__write(s, sock, peer, peer_len, m, &c, "", q->kind);
        return;
    }
    struct ledger_cmd rc_cmd;
    char outs[LEDGER_FILES_MAX], rwhy[256];
    int rrc = rmserver_recur_write(s, q, &rc_cmd, outs, sizeof outs, rwhy, sizeof rwhy);
    if (rrc == 0 && !s->caller.admin) {
        char why[256];
        snprintf(why, sizeof why, "%s may not change recurring jobs (admins only)", s->caller.user);
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_RECURRING, q->kind, target, why);
        return;
    }
    if (rrc < 0) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, rrc, rwhy);
        return;
    }
    if (rrc == 0) {
        rc_cmd.key = rmserver__nonce();
        rmserver__write(s, sock, peer, peer_len, m, &rc_cmd, "", q->kind);
        return;
    }
    int code = 0;
    char why[256] = "";
    char *json = rmserver_admin_json(s, q, &code, why, sizeof why);
    if (json == NULL) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, code, why);
        return;
    }
    proto_msg_t r;
    proto_msg_init(&r, PROTO_ADMIN_REPLY);
    r.req_id = m->req_id;
    r.admin_reply.json = json;
    rmserver_send(s, sock, peer, peer_len, &r);
    free(json);
}
