/* rmserver_reply.c - the answers of paddock-rm once a command is applied (or refused) by the
 * ledger: the reply each waiting request gets, token grants included. */
#include "rm/rmserver_api_internal.h"

#include "common/err.h"
#include "common/id.h"
#include "common/mem.h"
#include "rm/calib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rmserver__format_job(uint64_t id, char out[ID_JOB_SIZE])
{
    snprintf(out, ID_JOB_SIZE, ID_JOB_PREFIX "%012llx",
             (unsigned long long)(id & 0xffffffffffffull));
}

/* ---- replies once a command is applied ---- */

static void rmserver__grant(struct rmserver *s, const struct rmserver_cmd *c, uint64_t granted)
{
    ledger_t *l = fsm_ledger(s->fsm);
    const struct ledger_job *j = ledger_job_find(l, c->cmd.job);
    char jid[ID_JOB_SIZE];
    rmserver__format_job(c->cmd.job, jid);
    proto_msg_t m;
    if (c->w.type == PROTO_LEASE_RENEW) {
        proto_msg_init(&m, PROTO_LEASE_ACK);
        m.lease_ack.key = (char *)c->w.key;
        m.lease_ack.job_id = jid;
        m.lease_ack.lease_ms = j != NULL ? (uint32_t)j->lease_ms : 0;
        m.lease_ack.granted = (uint32_t)granted;
        m.lease_ack.cancel = j != NULL && j->state == LEDGER_JOB_CANCELLED;
        if (j != NULL && j->deadline_ms > j->submitted_ms)
            m.lease_ack.deadline_ms = (uint64_t)(j->deadline_ms - j->submitted_ms);
        if (j != NULL) {
            const struct ledger_vc *vc = ledger_vc_at(l, j->vc);
            m.lease_ack.minimum = j->minimum;
            m.lease_ack.token_cpu = vc != NULL ? vc->token_cpu_milli / 1000.0 : 0;
            m.lease_ack.token_mem_mb = vc != NULL ? vc->token_mem_mb : 0;
            m.lease_ack.epoch = j->epoch;
            /* admission's model of the job for its ETA (issue 22): its own spread and what the
               cluster learned such spreads miss (rm/calib.h) */
            struct calib_factors f;
            ledger_calibration(l, &f);
            m.lease_ack.spread_milli = j->spread_milli;
            m.lease_ack.own_factor_milli =
                f.hi_own > 0 && f.hi_own < 1000.0 ? (uint32_t)(f.hi_own * 1000.0 + 0.5) : 0;
        }
    } else {
        proto_msg_init(&m, PROTO_TOKEN_GRANT);
        m.token_grant.key = (char *)c->w.key;
        m.token_grant.job_id = jid;
        m.token_grant.granted = (uint32_t)granted;
        if (j != NULL) {
            const struct ledger_vc *vc = ledger_vc_at(l, j->vc);
            m.token_grant.requested = j->wanted;
            m.token_grant.capacity = vc != NULL ? vc->capacity : 0;
            m.token_grant.lease_ms = (uint32_t)j->lease_ms;
            m.token_grant.minimum = j->minimum;
            m.token_grant.token_cpu = vc != NULL ? vc->token_cpu_milli / 1000.0 : 0;
            m.token_grant.token_mem_mb = vc != NULL ? vc->token_mem_mb : 0;
            m.token_grant.epoch = j->epoch;
        }
        m.token_grant.ledger_index = raft_last_applied(&s->raft);
    }
    m.req_id = c->w.req_id;
    rmserver_send(s, c->w.sock, c->w.peer, c->w.peer_len, &m);
}

void rmserver_reply(struct rmserver *s, const struct rmserver_cmd *c, int code,
                    const struct ledger_result *res)
{
    const struct rmserver_waiter *w = &c->w;
    if (code != 0) {
        rmserver_send_error(s, w->sock, w->peer, w->peer_len, w->req_id, w->type, code, NULL);
        return;
    }
    proto_msg_t m;
    char jid[ID_JOB_SIZE];
    switch (w->type) {
    case PROTO_NODE_REGISTER:
        proto_msg_init(&m, PROTO_NODE_REGISTER_ACK);
        m.req_id = w->req_id;
        m.node_register_ack.key = (char *)w->key;
        m.node_register_ack.name = (char *)c->cmd.name;
        m.node_register_ack.boot_id = c->cmd.boot_id;
        m.node_register_ack.verdict =
            res->code == 0 ? PROTO_VERDICT_ACCEPTED : PROTO_VERDICT_REJECTED;
        m.node_register_ack.code = res->code;
        m.node_register_ack.reason = res->code != 0 ? (char *)err_text(res->code) : NULL;
        m.node_register_ack.heartbeat_ms = (uint32_t)s->cfg->pn_heartbeat_ms;
        m.node_register_ack.rm_id = s->id;
        rmserver_send(s, w->sock, w->peer, w->peer_len, &m);
        return;
    case PROTO_JOB_REGISTER:
    case PROTO_JOB_RESUME:
        proto_msg_init(&m, PROTO_JOB_REGISTER_REPLY);
        m.req_id = w->req_id;
        jid[0] = '\0';
        if (res->code == 0)
            rmserver__format_job(w->type == PROTO_JOB_RESUME ? c->cmd.job : res->value, jid);
        else if (w->type == PROTO_JOB_RESUME)
            rmserver__format_job(c->cmd.job, jid);
        if (res->code == 0)
            m.job_register_reply.epoch = w->type == PROTO_JOB_RESUME ? (uint32_t)res->value : 1;
        m.job_register_reply.key = (char *)w->key;
        m.job_register_reply.job_id = jid;
        m.job_register_reply.code = res->code;
        m.job_register_reply.reason = res->code != 0 ? (char *)err_text(res->code) : NULL;
        char qwhy[256];
        if (res->code == ERR_QUOTA) { /* issue 27: name the quota */
            snprintf(qwhy, sizeof qwhy, "quota exceeded: %s's %s in virtual cluster %s is %llu%s",
                     c->cmd.user, ledger_quota_name(res->value), c->cmd.vc,
                     (unsigned long long)(res->value == LEDGER_QUOTA_TOKEN_S_DAY ? res->aux / 1000
                                                                                 : res->aux),
                     res->value == LEDGER_QUOTA_TOKEN_S_DAY ? " (used up in the last 24 h)" : "");
            m.job_register_reply.reason = qwhy;
        }
        if (res->code == ERR_ADMISSION) { /* MRM: the earliest feasible finish, from submission */
            m.job_register_reply.eff_ms = res->value;
            m.job_register_reply.eff_p50_ms = res->aux;
        }
        rmserver_send(s, w->sock, w->peer, w->peer_len, &m);
        return;
    case PROTO_TOKEN_REQUEST:
    case PROTO_TOKEN_RELEASE:
    case PROTO_LEASE_RENEW: {
        const struct ledger_job *j = ledger_job_find(fsm_ledger(s->fsm), c->cmd.job);
        bool cancelled = j != NULL && j->state == LEDGER_JOB_CANCELLED;
        if (res->code == 0 || (w->type == PROTO_LEASE_RENEW && cancelled)) {
            rmserver__grant(s, c, res->value);
            return;
        }
        char why[128];
        rmserver__format_job(c->cmd.job, jid);
        snprintf(why, sizeof why, "job %s: %s%s%s", jid, err_text(res->code),
                 j != NULL ? ", job is " : "", j != NULL ? ledger_job_state_name(j->state) : "");
        rmserver_send_error(s, w->sock, w->peer, w->peer_len, w->req_id, w->type, res->code, why);
        return;
    }
    case PROTO_ADMIN_QUERY: {
        if (res->code == ERR_ADMISSION && c->cmd.type == LEDGER_CMD_JOB_DEADLINE) {
            /* issue 25: the earliest feasible finish, from submission, and the old deadline */
            ledger_t *l = fsm_ledger(s->fsm);
            const struct ledger_job *j = ledger_job_find(l, c->cmd.job);
            char why[320];
            if (j != NULL && res->value > 0)
                snprintf(why, sizeof why,
                         "admission refused: the deadline cannot be met; earliest feasible "
                         "finish %.1fs after submission; the deadline stays %s%.1fs",
                         (double)(ledger_now(l) - j->submitted_ms + (int64_t)res->value) / 1000.0,
                         j->deadline_ms != 0 ? "" : "none, ",
                         j->deadline_ms != 0 ? (double)(j->deadline_ms - j->submitted_ms) / 1000.0
                                             : 0.0);
            else
                snprintf(why, sizeof why,
                         "admission refused: no deadline is feasible now; the "
                         "deadline stays as it was");
            rmserver_send_error(s, w->sock, w->peer, w->peer_len, w->req_id, w->type, res->code,
                                why);
            return;
        }
        if (res->code != 0) {
            rmserver_send_error(s, w->sock, w->peer, w->peer_len, w->req_id, w->type, res->code,
                                NULL);
            return;
        }
        char *json = rmserver_admin_write_json(s, c, res);
        proto_msg_init(&m, PROTO_ADMIN_REPLY);
        m.req_id = w->req_id;
        m.admin_reply.json = json != NULL ? json : (char *)"{}";
        rmserver_send(s, w->sock, w->peer, w->peer_len, &m);
        free(json);
        return;
    }
    default:
        return;
    }
}
