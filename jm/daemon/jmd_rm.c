/* jmd_rm.c - the JM's link to the resource monitor: the view from every replica's PUB, token
 * requests, lease renewals and the final release over one DEALER per replica. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/grain.h"
#include "jm/grant.h"
#include "jm/daemon/jmd.h"
#include "jm/daemon/jmd_metrics.h"
#include "jm/view_proto.h"
#include "proto/pack.h"
#include "proto/view_cells.h"
#include "rm/rmclient.h"

#define JMD_RM__TRY_MS 1000 /* an unanswered request moves to the next replica after this */
#define JMD_RM__SNAP_RETRY_MS                                                                      \
    5000 /* a snapshot asked for, no part of it come for this long: asked again */
/* The replica whose view the JM follows said nothing for this long (a replica publishes at least
 * an empty delta a second, rm/rmview.h RMVIEW_KEEPALIVE_MS): the JM follows the next one. */
#define JMD_RM__VIEW_SILENT_MS 3500

static void jmd_rm__send(jmd_t *j, struct jmd_call *c);

static int jmd_rm__new_key(char *out, size_t cap)
{
    uint8_t b[16];
    if (id_random_bytes(b, sizeof b) != 0)
        return ERR_SYS;
    char hex[33];
    id_hex(hex, b, sizeof b);
    snprintf(out, cap, "k-%s", hex);
    return 0;
}

/* Keeps the RM's own state of a node: the view says only "takes new tasks or not", and a
   draining node keeps running what it has while a down one has lost it. */
static void jmd_rm__note_state(jmd_t *j, const proto_view_node_t *n)
{
    long i = view_find(j->view, n->name);
    if (i < 0)
        return;
    if ((size_t)i >= j->nrm_state) {
        size_t cap = view_count(j->view);
        uint8_t *p = mem_realloc(j->rm_state, cap);
        if (!p)
            return;
        memset(p + j->nrm_state, PROTO_NODE_UP, cap - j->nrm_state);
        j->rm_state = p;
        j->nrm_state = cap;
    }
    j->rm_state[i] = (uint8_t)n->state;
}

/* Decodes one message from the RM. One that does not decode is dropped and counted
 * (j->rm_dropped, in state.json), logged the first time and every 100th after. */
static int jmd_rm__decode(jmd_t *j, zframe_t *f, proto_msg_t *m, const char *from)
{
    char why[160] = "";
    int rc = proto_decode(zframe_data(f), zframe_size(f), m, NULL, why, sizeof why);
    if (rc == 0)
        return 0;
    if (j->rm_dropped++ % 100 == 0)
        log_warn("dropped an undecodable message on the RM %s link (%zu so far): %s", from,
                 j->rm_dropped, why[0] ? why : err_text(rc));
    return rc;
}

/* Snapshots on replica i's view socket, or not (proto/README.md "View subscriptions"): a JM
 * takes them until it holds that replica's whole view, and again after it missed a delta; the
 * deltas, always. The plain topics serve an RM from before the packed form. */
static void jmd_rm__want_snapshots(jmd_t *j, size_t i, int want)
{
    if (!j->sub[i] || j->vsnap[i] == want)
        return;
    void *z = zsock_resolve(zuv_sock_zsock(j->sub[i]));
    int opt = want ? ZMQ_SUBSCRIBE : ZMQ_UNSUBSCRIBE;
    zmq_setsockopt(z, opt, PROTO_VIEW_TOPIC_SNAPSHOT, PROTO_VIEW_TOPIC_LEN);
    zmq_setsockopt(z, opt, PROTO_VIEW_TOPIC_PLAIN_SNAPSHOT, PROTO_VIEW_TOPIC_PLAIN_LEN);
    j->vsnap[i] = want;
    j->vsnap_ms[i] = jmd_now(j);
    zuv_kick(j->sub[i]);
}

/* Replica i's view taken (deltas, and snapshots until whole) or no longer. A JM follows one
 * replica's view, not all of them: a thousand JMs on three replicas would otherwise take three
 * views each, and each replica serve all thousand (docs/jm-daemon.md). */
static void jmd_rm__follow(jmd_t *j, size_t i, int on)
{
    if (!j->sub[i])
        return;
    /* a replica's view socket is connected when first followed: a JM takes one view, and each
       connection it never uses would cost a CURVE handshake at its start (on its first task's
       path) and the replica a connection to keep */
    if (on && !j->sub_linked[i]) {
        if (zsock_connect(zuv_sock_zsock(j->sub[i]), "%s", j->o.rm_pub[i]) != 0) {
            log_warn("view of RM replica %zu: cannot connect to %s", i, j->o.rm_pub[i]);
            return;
        }
        j->sub_linked[i] = 1;
    }
    void *z = zsock_resolve(zuv_sock_zsock(j->sub[i]));
    int opt = on ? ZMQ_SUBSCRIBE : ZMQ_UNSUBSCRIBE;
    zmq_setsockopt(z, opt, PROTO_VIEW_TOPIC_DELTA, PROTO_VIEW_TOPIC_LEN);
    zmq_setsockopt(z, opt, PROTO_VIEW_TOPIC_CELLS, PROTO_VIEW_TOPIC_LEN); /* compact deltas */
    zmq_setsockopt(z, opt, PROTO_VIEW_TOPIC_PLAIN_DELTA, PROTO_VIEW_TOPIC_PLAIN_LEN);
    j->vstream[i].synced = 0;
    j->vstream[i].building = 0;
    j->vheard_ms[i] = jmd_now(j);
    jmd_rm__want_snapshots(j, i, on);
    zuv_kick(j->sub[i]);
}

/* The followed replica silent past JMD_RM__VIEW_SILENT_MS (stopped, or cut off): the next
 * replica that publishes a view is followed, from a snapshot. */
static void jmd_rm__follow_check(jmd_t *j)
{
    size_t f = j->vfollow, n = j->o.nrm;
    if (n < 2 || !j->sub[f] || jmd_now(j) - j->vheard_ms[f] < JMD_RM__VIEW_SILENT_MS)
        return;
    size_t next = (f + 1) % n;
    while (next != f && !j->sub[next])
        next = (next + 1) % n;
    if (next == f)
        return;
    log_info("view of RM replica %zu: nothing for %d ms, following replica %zu", f,
             JMD_RM__VIEW_SILENT_MS, next);
    jmd_rm__follow(j, f, 0);
    j->vfollow = next;
    jmd_rm__follow(j, next, 1);
}

/* A replica publishes a snapshot when asked (a subscription to the snapshot topic), not on a
 * period: one that did not make the view whole (parts lost past the high-water mark, or asked
 * of a replica that was down) is asked for again once no part has come for a while (a thousand
 * JMs joining at once take their parts slowly: asking again then would only add to it). */
static void jmd_rm__snapshot_retry(jmd_t *j)
{
    int64_t now = jmd_now(j);
    for (size_t i = 0; i < j->o.nrm; i++) {
        if (!j->sub[i] || !j->vsnap[i] || j->vstream[i].synced ||
            now - j->vsnap_ms[i] < JMD_RM__SNAP_RETRY_MS)
            continue;
        jmd_rm__want_snapshots(j, i, 0);
        jmd_rm__want_snapshots(j, i, 1);
    }
}

/* Whether a live node of the view can hold (cpu, mem_mb): one whose capacity and wait-time
 * matrix do (a PN's matrix says "never" for what it cannot hold, also for a request under its
 * capacity when its smallest bin is over it, as older PNs smaller than their bins said). */
static int jmd_rm__fits(const view_t *v, double cpu, uint64_t mem_mb)
{
    for (uint32_t i = 0; i < view_count(v); i++) {
        const struct view_node *vn = view_node(v, i);
        if (vn != NULL && vn->up && view_wait(vn, cpu, (double)mem_mb, 0) >= 0)
            return 1;
    }
    return 0;
}

/* The view's nodes in one word: their count, the live ones and their capacities. */
static uint64_t jmd_rm__fit_sig(const view_t *v)
{
    uint64_t h = 1469598103934665603ull ^ view_count(v);
    for (uint32_t i = 0; i < view_count(v); i++) {
        const struct view_node *vn = view_node(v, i);
        if (vn == NULL || !vn->up)
            continue;
        uint64_t k = (uint64_t)llround(vn->cpu * 1000) * 31 + vn->mem_mb * 7 + vn->ncpu + i;
        h = (h ^ k) * 1099511628211ull;
    }
    return h;
}

/* A job whose tasks no live node can hold says so (state.json "unplaceable", the log) rather
 * than wait silently; checked when the whole view's nodes change (which nodes live, their
 * capacities), over the tasks not yet handed out, each run of tasks of one size once. */
static void jmd_rm__check_fit(jmd_t *j)
{
    uint64_t sig = jmd_rm__fit_sig(j->view);
    if (sig == j->unfit_sig)
        return;
    j->unfit_sig = sig;
    size_t unfit = 0, first = SIZE_MAX;
    double cpu = -1;
    uint64_t mem = 0;
    int fits = 1;
    for (size_t i = 0; i < j->spec->ntasks; i++) {
        enum dag_state st = dag_state(j->core.dag, i);
        if (st != DAG_WAITING && st != DAG_READY)
            continue;
        const struct spec_task *t = &j->spec->tasks[i];
        if (t->cpu != cpu || t->mem_mb != mem) {
            cpu = t->cpu;
            mem = t->mem_mb;
            fits = jmd_rm__fits(j->view, cpu, mem);
        }
        if (!fits && unfit++ == 0)
            first = i;
    }
    size_t had = j->unfit;
    j->unfit = unfit;
    if (unfit == 0) {
        j->unfit_why[0] = '\0';
        if (had > 0)
            log_info("every task left fits a live node again");
        return;
    }
    double big_cpu = 0;
    uint64_t big_mem = 0;
    size_t live = 0;
    for (uint32_t i = 0; i < view_count(j->view); i++) {
        const struct view_node *vn = view_node(j->view, i);
        if (vn == NULL || !vn->up)
            continue;
        live++;
        big_cpu = vn->cpu > big_cpu ? vn->cpu : big_cpu;
        big_mem = vn->mem_mb > big_mem ? vn->mem_mb : big_mem;
    }
    const struct spec_task *t = &j->spec->tasks[first];
    snprintf(j->unfit_why, sizeof j->unfit_why,
             "%zu task%s no live node: task \"%.64s\" needs %g cpu and %llu MiB; of %zu live "
             "node%s the largest has %g cpu and %llu MiB",
             unfit, unfit == 1 ? " fits" : "s fit", t->id, t->cpu, (unsigned long long)t->mem_mb,
             live, live == 1 ? "" : "s", big_cpu, (unsigned long long)big_mem);
    log_warn("%s (the job waits for such a node)", j->unfit_why);
}

/* A compact delta (proto/view_cells.h) from replica r: a link of its delta chain whose nodes'
 * cells alone moved. One that does not decode is dropped and counted as any RM message. */
static void jmd_rm__on_cells(jmd_t *j, zframe_t *f, size_t r)
{
    struct proto_view_cells c;
    char why[160] = "";
    if (proto_view_cells_decode(zframe_data(f), zframe_size(f), &c, why, sizeof why) != 0) {
        if (j->rm_dropped++ % 100 == 0)
            log_warn("dropped an undecodable message on the RM view link (%zu so far): %s",
                     j->rm_dropped, why);
        return;
    }
    int64_t now = jmd_now(j);
    if (r < j->o.nrm) {
        j->vheard_ms[r] = now;
        int flow = view_stream_take_cells(&j->vstream[r], &c);
        if (flow & VIEW_STREAM_GAP) {
            log_info("view of RM replica %zu: a delta missed, asking for a snapshot", r);
            jmd_rm__want_snapshots(j, r, 1);
        } else if ((flow & VIEW_STREAM_NEXT) &&
                   view_confirm(j->view, (uint8_t)(r + 1), now - PROTO_VIEW_LIVE_MS / 2) > 0) {
            j->view_dirty = 1;
        }
        if (view_update_cells_from_replica(j->view, &c, now, (uint32_t)r, NULL) > 0)
            j->view_dirty = 1;
    }
    proto_view_cells_close(&c);
    if (j->view_dirty)
        jmd_sched_view_changed(j);
}

static void jmd_rm__on_view(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    jmd_t *j = arg;
    zframe_t *f = zmsg_first(*msg);
    if (!f)
        return;
    if (proto_view_cells_is(zframe_data(f), zframe_size(f))) {
        size_t r = 0;
        while (r < j->o.nrm && j->sub[r] != zs)
            r++;
        jmd_rm__on_cells(j, f, r);
        return;
    }
    proto_msg_t m;
    if (jmd_rm__decode(j, f, &m, "view") != 0)
        return;
    size_t r = 0;
    while (r < j->o.nrm && j->sub[r] != zs)
        r++;
    int64_t now = jmd_now(j);
    size_t before = view_count(j->view);
    if (r < j->o.nrm)
        j->vheard_ms[r] = now;
    int flow = r < j->o.nrm ? view_stream_take(&j->vstream[r], &m) : 0;
    if (m.type == PROTO_VIEW_SNAPSHOT && r < j->o.nrm)
        j->vsnap_ms[r] = now; /* a snapshot under way: asked again only when it stalls */
    if (flow & VIEW_STREAM_WHOLE) {
        jmd_rm__want_snapshots(j, r, 0);
        if (j->view_whole) /* a replica followed anew: its deltas confirm every node from here */
            view_adopt(j->view, (uint8_t)(r + 1));
    } else if (flow & VIEW_STREAM_GAP) {
        log_info("view of RM replica %zu: a delta missed, asking for a snapshot", r);
        jmd_rm__want_snapshots(j, r, 1);
    } else if (flow & VIEW_STREAM_NEXT) {
        /* the live nodes this replica does not name are as they were, as of its last heartbeat
           from them at worst */
        if (view_confirm(j->view, (uint8_t)(r + 1), now - PROTO_VIEW_LIVE_MS / 2) > 0)
            j->view_dirty = 1;
    }
    if (m.type == PROTO_VIEW_SNAPSHOT) {
        for (uint32_t i = 0; i < m.view_snapshot.nnodes; i++)
            if (view_update_from_replica(j->view, &m.view_snapshot.nodes[i], now, (uint32_t)r) >
                0) {
                j->view_dirty = 1;
                jmd_rm__note_state(j, &m.view_snapshot.nodes[i]);
            }
        if (!j->view_whole && (flow & VIEW_STREAM_WHOLE)) {
            /* every part of one snapshot, in order: the whole cluster */
            j->view_whole = 1;
            j->view_dirty = 1;
            log_info("cluster view: %zu nodes", view_count(j->view));
        }
    } else if (m.type == PROTO_VIEW_DELTA) {
        for (uint32_t i = 0; i < m.view_delta.nchanged; i++)
            if (view_update_from_replica(j->view, &m.view_delta.changed[i], now, (uint32_t)r) > 0) {
                j->view_dirty = 1;
                jmd_rm__note_state(j, &m.view_delta.changed[i]);
            }
        for (uint32_t i = 0; i < m.view_delta.nremoved; i++) {
            long n = view_find(j->view, m.view_delta.removed[i]);
            if (n >= 0) {
                view_set_up(j->view, (uint32_t)n, 0);
                if ((size_t)n < j->nrm_state)
                    j->rm_state[n] = PROTO_NODE_DOWN;
                j->view_dirty = 1;
            }
        }
    }
    proto_msg_close(&m);
    if (view_count(j->view) != before)
        j->view_dirty = 1;
    if (j->view_dirty && j->view_whole)
        jmd_rm__check_fit(j);
    if (j->view_dirty)
        jmd_sched_view_changed(j);
}

static int jmd_rm__replica_of(const jmd_t *j, const char *endpoint)
{
    for (size_t i = 0; endpoint && i < j->o.nrm; i++)
        if (strcmp(j->o.rm_api[i], endpoint) == 0)
            return (int)i;
    return -1;
}

static struct jmd_call *jmd_rm__call_of(jmd_t *j, uint64_t req_id)
{
    struct jmd_call *calls[] = {&j->call_tok, &j->call_lease, &j->call_rel};
    for (size_t i = 0; i < 3; i++)
        if (calls[i]->active && calls[i]->req_id == req_id)
            return calls[i];
    return NULL;
}

static void jmd_rm__on_api(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    jmd_t *j = arg;
    zframe_t *f = zmsg_last(*msg);
    if (!f)
        return;
    proto_msg_t m;
    if (jmd_rm__decode(j, f, &m, "API") != 0)
        return;
    j->rm_heard_mono = jmd_now(j);
    uint32_t epoch = m.type == PROTO_TOKEN_GRANT ? m.token_grant.epoch
                     : m.type == PROTO_LEASE_ACK ? m.lease_ack.epoch
                                                 : 0;
    if (epoch > j->epoch || j->fenced) { /* a newer JM holds the job: stop, touch nothing */
        if (!j->fenced)
            jmd_fenced(j, epoch);
        proto_msg_close(&m);
        return;
    }
    struct jmd_call *c = jmd_rm__call_of(j, m.req_id);
    if (!c) {
        proto_msg_close(&m);
        return;
    }
    for (size_t i = 0; i < j->o.nrm; i++)
        if (j->api[i] == zs) {
            j->leader = (int)i;
            j->api_answered[i] = 1;
        }
    switch (m.type) {
    case PROTO_ERROR:
        if (m.error.code == ERR_NOTLEADER) {
            int l = jmd_rm__replica_of(j, m.error.leader_endpoint);
            j->leader = l >= 0 ? l : (j->leader + 1) % (int)j->o.nrm;
            if (l >= 0)
                jmd_rm__send(j, c); /* straight to the leader; else retried on the tick */
        } else if (m.error.code == ERR_UNAVAILABLE) {
            j->leader = (j->leader + 1) % (int)j->o.nrm;
        } else {
            /* A release after the job ended is refused (nothing held); a refusal repeated every
               renewal is logged once. */
            const char *text = m.error.text ? m.error.text : "";
            if (c != &j->call_rel && strncmp(text, j->last_refusal, sizeof j->last_refusal - 1)) {
                log_warn("RM refused %s: %s", proto_type_name((proto_type_t)c->type), text);
                snprintf(j->last_refusal, sizeof j->last_refusal, "%s", text);
            }
            c->active = 0;
            if (c == &j->call_rel)
                j->end_acked |= 2;
            else if (c == &j->call_lease && j->outcome != JMD_RUNNING)
                j->end_acked |= 1;
            if (c == &j->call_lease && m.error.code == ERR_FENCED) {
                log_error("a newer job manager holds job %s: %s", j->o.job_id, text);
                jmd_fenced(j, 0);
            } else if (c == &j->call_lease && m.error.code == ERR_STATE &&
                       j->outcome == JMD_RUNNING) {
                /* The RM holds the job as ended or expired while this JM runs it: it was paused
                   or cut off, and another JM takes (or took) the job over. */
                log_error("the RM no longer holds job %s active (%s): stopping", j->o.job_id, text);
                jmd_fenced(j, 0);
            } else if (c == &j->call_lease && m.error.code == ERR_NOTFOUND) {
                jmd_sched_cancel(j, "the RM does not know the job");
            }
        }
        break;
    case PROTO_TOKEN_GRANT:
        c->active = 0;
        j->capacity = m.token_grant.capacity;
        if (c == &j->call_rel) {
            j->end_acked |= 2;
        } else {
            jmd_sched_token_size(j, m.token_grant.token_cpu, m.token_grant.token_mem_mb,
                                 m.token_grant.minimum);
        }
        if (c != &j->call_rel && m.token_grant.granted != j->granted) {
            log_info("tokens granted %u (asked %u, capacity %u)", m.token_grant.granted,
                     m.token_grant.requested, m.token_grant.capacity);
            jmd_sched_tokens(j, m.token_grant.granted);
        }
        break;
    case PROTO_LEASE_ACK:
        c->active = 0;
        if (j->resync && c == &j->call_lease) { /* still ours: the nodes were not silent */
            j->resync = 0;
            log_info("the RM still holds the job under epoch %u: going on", j->epoch);
            for (size_t i = 0; i < j->nlinks; i++) {
                j->links[i].heard_mono = jmd_now(j);
                j->links[i].queried = 0;
            }
            j->query_phase = JMD_QUERY_VIEW; /* what the nodes said meanwhile: ask again */
            j->query_linked = 1; /* ... the nodes it sent work to: not all 20,000 of a view */
            jmd_sched_request(j);
        }
        if (c == &j->call_lease && j->ncount) { /* the outcomes it carried are in the log */
            memset(j->sent_ok, 0, j->ncount * sizeof *j->sent_ok);
            memset(j->sent_failed, 0, j->ncount * sizeof *j->sent_failed);
        }
        if (j->outcome != JMD_RUNNING) {
            j->end_acked |= 1;
            break;
        }
        jmd_sched_token_size(j, m.lease_ack.token_cpu, m.lease_ack.token_mem_mb,
                             m.lease_ack.minimum);
        /* admission's model of the job for the ETA's upper value (jm/eta.h); 0 from an older RM */
        j->own_spread = (double)m.lease_ack.spread_milli / 1000.0;
        j->own_factor = (double)m.lease_ack.own_factor_milli / 1000.0;
        if (m.lease_ack.granted != j->granted)
            jmd_sched_tokens(j, m.lease_ack.granted);
        if (m.lease_ack.deadline_ms > 0) {
            /* The registry's deadline counts from submission, a few ms before this JM started:
               only a real change (an admin's) moves the controller. */
            double d = (double)m.lease_ack.deadline_ms / 1000.0;
            if (!j->has_deadline || fabs(d - j->deadline_s) > 0.1 + 0.001 * j->deadline_s)
                jmd_jockey_deadline(j, d);
        }
        if (m.lease_ack.cancel)
            jmd_sched_cancel(j, "cancelled by an administrator");
        break;
    default:
        break;
    }
    proto_msg_close(&m);
}

void jmd_rm_note_outcome(jmd_t *j, uint32_t node, int ok)
{
    if (node >= j->ncount) {
        size_t n = (size_t)node + 1 > 2 * j->ncount ? (size_t)node + 1 : 2 * j->ncount;
        uint32_t **arr[] = {&j->pend_ok, &j->pend_failed, &j->sent_ok, &j->sent_failed};
        for (size_t a = 0; a < 4; a++) {
            uint32_t *p = mem_realloc(*arr[a], n * sizeof **arr[a]);
            if (!p)
                return; /* this outcome goes uncounted: Psucc is an estimate */
            memset(p + j->ncount, 0, (n - j->ncount) * sizeof *p);
            *arr[a] = p;
        }
        j->ncount = n;
    }
    if (ok)
        j->pend_ok[node]++;
    else
        j->pend_failed[node]++;
}

/* The demand a renewal carries: jm/grant.h's rule. */
static uint32_t jmd_rm__demand(const jmd_t *j)
{
    return grant_demand(j->core.dag, j->core.disp, GRAIN_UNITS, PROTO_MAX_TOKENS);
}

/* A new renewal takes what is counted: whatever an earlier one carried without an ack (its key
 * is abandoned) and everything since, for PROTO_MAX_OUTCOMES nodes at most (the rest waits). */
static void jmd_rm__take_outcomes(jmd_t *j)
{
    size_t taken = 0;
    for (size_t n = 0; n < j->ncount; n++) {
        j->pend_ok[n] += j->sent_ok[n];
        j->pend_failed[n] += j->sent_failed[n];
        j->sent_ok[n] = j->sent_failed[n] = 0;
        if ((j->pend_ok[n] || j->pend_failed[n]) && taken < PROTO_MAX_OUTCOMES) {
            j->sent_ok[n] = j->pend_ok[n];
            j->sent_failed[n] = j->pend_failed[n];
            j->pend_ok[n] = j->pend_failed[n] = 0;
            taken++;
        }
    }
}

static void jmd_rm__send(jmd_t *j, struct jmd_call *c)
{
    proto_msg_t m;
    proto_outcome_t oc[PROTO_MAX_OUTCOMES];
    proto_sky_t sky[PROTO_MAX_SKYLINE];
    proto_msg_init(&m, (proto_type_t)c->type);
    c->req_id = ++j->next_req;
    m.req_id = c->req_id;
    switch (c->type) {
    case PROTO_TOKEN_REQUEST:
        m.token_request.key = c->key;
        m.token_request.job_id = (char *)j->o.job_id;
        m.token_request.tokens = c->tokens;
        m.token_request.raw = j->raw_sent; /* the controller's A^r: the RM's minimum */
        break;
    case PROTO_TOKEN_RELEASE:
        m.token_release.key = c->key;
        m.token_release.job_id = (char *)j->o.job_id;
        m.token_release.tokens = c->tokens;
        m.token_release.all = c->all != 0;
        break;
    case PROTO_LEASE_RENEW: {
        proto_lease_renew_t *r = &m.lease_renew;
        r->key = c->key;
        r->job_id = (char *)j->o.job_id;
        r->state = j->outcome == JMD_SUCCEEDED   ? PROTO_JOB_SUCCEEDED
                   : j->outcome == JMD_FAILED    ? PROTO_JOB_FAILED
                   : j->outcome == JMD_CANCELLED ? PROTO_JOB_CANCELLED
                                                 : PROTO_JOB_RUNNING;
        r->tasks_total = (uint32_t)j->spec->ntasks;
        r->tasks_succeeded = (uint32_t)dag_count(j->core.dag, DAG_SUCCEEDED);
        r->tasks_failed = (uint32_t)dag_count(j->core.dag, DAG_FAILED);
        r->running_regular = (uint32_t)dispatch_regular(j->core.disp);
        r->running_opportunistic = (uint32_t)dispatch_opportunistic(j->core.disp);
        r->deadline_ms = j->has_deadline ? (uint64_t)(j->deadline_s * 1000.0 + 0.5) : 0;
        r->eta_ms = j->eta_s > 0 ? (uint64_t)(j->eta_s * 1000.0 + 0.5) : 0;
        r->eta_p95_ms = j->eta_p95_s > 0 ? (uint64_t)(j->eta_p95_s * 1000.0 + 0.5) : 0;
        r->demand = jmd_rm__demand(j);
        r->timestamp_ms = clock_wall_ms();
        r->job_dir = (char *)j->o.abs_dir;
        r->host = (char *)j->o.host;
        r->jm_pid = (uint32_t)getpid();
        r->epoch = j->epoch;
        r->metrics_url = (char *)jmd_metrics_url(j); /* for `paddock job show` */
        for (size_t n = 0; n < j->ncount && r->noutcomes < PROTO_MAX_OUTCOMES; n++) {
            const struct view_node *vn = view_node(j->view, (uint32_t)n);
            if (vn && (j->sent_ok[n] || j->sent_failed[n]))
                oc[r->noutcomes++] =
                    (proto_outcome_t){(char *)vn->name, j->sent_ok[n], j->sent_failed[n]};
        }
        r->outcomes = r->noutcomes ? oc : NULL;
        if (r->state != PROTO_JOB_RUNNING && usage_started(&j->usage)) {
            /* The renewal that ends the job carries what it used (Morpheus §5): the RM keeps it
               in the job's history and fits a recurring job's skyline from it. */
            uint32_t milli[PROTO_MAX_SKYLINE];
            uint32_t n = usage_export(&j->usage, milli, PROTO_MAX_SKYLINE);
            for (uint32_t i = 0; i < n; i++)
                sky[i].milli = milli[i];
            r->started_ms = usage_origin(&j->usage);
            r->token_ms = usage_token_ms(&j->usage);
            r->skyline_step_ms = usage_step_ms(&j->usage);
            r->skyline = n ? sky : NULL;
            r->nskyline = n;
        }
        break;
    }
    default:
        return;
    }
    proto_buf_t b;
    proto_buf_init(&b);
    char err[256];
    if (proto_encode(&m, &b, err, sizeof err) == 0) {
        int l = j->leader >= 0 && (size_t)j->leader < j->o.nrm ? j->leader : 0;
        if (j->api[l] && jmd_rm_link(j, (size_t)l) == 0)
            zuv_send_bytes(j->api[l], NULL, 0, b.data, b.len);
        c->sent_mono = jmd_now(j);
    } else {
        log_error("cannot encode %s: %s", proto_type_name((proto_type_t)c->type), err);
        c->active = 0;
    }
    proto_buf_close(&b);
}

static void jmd_rm__start(jmd_t *j, struct jmd_call *c, int type, uint32_t tokens, int all)
{
    memset(c, 0, sizeof *c);
    c->active = 1;
    c->type = type;
    c->tokens = tokens;
    c->all = all;
    if (jmd_rm__new_key(c->key, sizeof c->key) != 0)
        snprintf(c->key, sizeof c->key, "k-%s-%llu", j->o.job_id,
                 (unsigned long long)++j->next_req);
    jmd_rm__send(j, c);
}

static int jmd_rm__socket(jmd_t *j, int type, zuv_sock_t **out, zuv_recv_fn *fn, char *msg,
                          size_t cap);

static void jmd_rm__reopen(jmd_t *j, size_t i)
{
    char msg[256];
    zuv_sock_close(&j->api[i]);
    j->api_linked[i] = 0;
    if (jmd_rm__socket(j, ZMQ_DEALER, &j->api[i], jmd_rm__on_api, msg, sizeof msg) != 0)
        log_warn("RM replica %s: %s", j->o.rm_api[i], msg);
    else
        jmd_rm_link(j, i);
}

/* A replica's API socket is connected when first asked: at the start only the replica believed
   to lead (the cluster directory's hint, then the submit's word), the others on a redirect or a
   failover. Each connection is a CURVE handshake on the first task's path, and a thousand JMs
   connected to every replica would keep two thousand links to followers for nothing. */
int jmd_rm_link(jmd_t *j, size_t i)
{
    if (j->api_linked[i])
        return 0;
    if (zsock_connect(zuv_sock_zsock(j->api[i]), "%s", j->o.rm_api[i]) != 0) {
        log_warn("RM replica %zu: cannot connect to %s", i, j->o.rm_api[i]);
        return -1;
    }
    j->api_linked[i] = 1;
    zuv_kick(j->api[i]);
    return 0;
}

void jmd_rm_leader(jmd_t *j, int l)
{
    if (l < 0 || (size_t)l >= j->o.nrm || !j->api[l])
        return;
    j->leader = l;
    jmd_rm_link(j, (size_t)l);
}

void jmd_rm_tick(jmd_t *j)
{
    jmd_rm__snapshot_retry(j);
    jmd_rm__follow_check(j);
    int64_t now = jmd_now(j);
    struct jmd_call *calls[] = {&j->call_tok, &j->call_lease, &j->call_rel};
    for (size_t i = 0; i < 3; i++) {
        struct jmd_call *c = calls[i];
        if (c->active && now - c->sent_mono >= JMD_RM__TRY_MS) {
            int l = j->leader >= 0 ? j->leader : 0;
            if (!j->api_answered[l]) /* a handshake that failed never recovers: a new socket */
                jmd_rm__reopen(j, (size_t)l);
            j->leader = (j->leader + 1) % (int)j->o.nrm; /* silent: try the next replica */
            jmd_rm__send(j, c);
        }
    }
    if (j->outcome != JMD_RUNNING)
        return;
    int want = jmd_jockey_request(j);
    if (want < 0)
        want = 0;
    /* A new target goes out at once; a target the RM could not fill (the virtual cluster was
       full) is asked again every 2 s, since the ledger never takes tokens from other jobs and
       grants them only when asked. */
    int64_t again = j->tok_sent_mono + 2000;
    uint32_t raw = j->raw > 0 && j->raw < want ? (uint32_t)j->raw : 0;
    if (!j->call_tok.active && ((uint32_t)want != j->requested || raw != j->raw_sent ||
                                (j->granted < (uint32_t)want && now >= again))) {
        j->requested = (uint32_t)want;
        j->raw_sent = raw;
        j->tok_sent_mono = now;
        jmd_rm__start(j, &j->call_tok, PROTO_TOKEN_REQUEST, (uint32_t)want, 0);
    }
}

void jmd_rm_renew(jmd_t *j)
{
    if (j->call_lease.active)
        return; /* the tick retries it */
    jmd_rm__take_outcomes(j);
    jmd_rm__start(j, &j->call_lease, PROTO_LEASE_RENEW, 0, 0);
}

void jmd_rm_finish(jmd_t *j)
{
    j->call_tok.active = 0;
    /* Release first: the terminal renewal that follows ends the job in the registry. */
    jmd_rm__start(j, &j->call_rel, PROTO_TOKEN_RELEASE, 0, 1);
    jmd_rm__take_outcomes(j);
    jmd_rm__start(j, &j->call_lease, PROTO_LEASE_RENEW, 0, 0);
}

/* A socket of the RM's, not connected yet: a SUB by jmd_rm__follow, a DEALER by jmd_rm_link */
static int jmd_rm__socket(jmd_t *j, int type, zuv_sock_t **out, zuv_recv_fn *fn, char *msg,
                          size_t cap)
{
    zsock_t *z = zuv_socket(type, PROTO_MAX_MSG_BYTES);
    if (!z)
        return err_fmt(msg, cap, ERR_SYS, "cannot create a socket");
    int rc = curve_apply(z, j->curve, CURVE_CLIENT, NULL, msg, cap);
    /* a SUB subscribes to nothing here: jmd_rm__follow */
    if (!rc)
        rc = zuv_sock_new(out, &j->loop, &z, NULL, fn, j);
    if (rc) {
        zsock_destroy(&z);
        return rc;
    }
    zuv_kick(*out);
    return 0;
}

int jmd_rm_open(jmd_t *j, char *msg, size_t cap)
{
    if (j->o.nrm == 0 || j->o.nrm > JMD_MAX_RM)
        return err_fmt(msg, cap, ERR_CONFIG, "need 1..%d RM replicas", JMD_MAX_RM);
    int hint = j->o.rm_leader >= 0 && (size_t)j->o.rm_leader < j->o.nrm ? j->o.rm_leader : -1;
    for (size_t i = 0; i < j->o.nrm; i++) {
        int rc = jmd_rm__socket(j, ZMQ_DEALER, &j->api[i], jmd_rm__on_api, msg, cap);
        j->api_linked[i] = 0;
        /* the believed leader now, the others when first asked (jmd_rm_link) */
        if (!rc && (hint < 0 || (size_t)hint == i) && jmd_rm_link(j, i) != 0)
            rc = err_fmt(msg, cap, ERR_CONFIG, "cannot connect to %s", j->o.rm_api[i]);
        if (!rc && j->o.rm_pub[i]) {
            rc = jmd_rm__socket(j, ZMQ_SUB, &j->sub[i], jmd_rm__on_view, msg, cap);
            j->sub_linked[i] = 0;
            memset(&j->vstream[i], 0, sizeof j->vstream[i]);
            j->vsnap[i] = 0;
        }
        if (rc)
            return rc;
    }
    /* JMs spread over the replicas by job id (by process id where the job is not known yet,
       jmd_early): each follows one view, a follower's where the leader is known (every replica
       takes every PN's heartbeats, so a follower's view is as fresh; the leader keeps its CPU
       for the log and the JMs' requests) */
    char pid[24];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    uint64_t h = 1469598103934665603ull;
    for (const char *c = j->o.job_id ? j->o.job_id : pid; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    j->vfollow = (size_t)(h % j->o.nrm);
    if (hint >= 0 && j->o.nrm >= 2) {
        j->vfollow = (size_t)(h % (j->o.nrm - 1));
        j->vfollow += j->vfollow >= (size_t)hint;
    }
    for (size_t k = 0; k < j->o.nrm && !j->sub[j->vfollow]; k++)
        j->vfollow = (j->vfollow + 1) % j->o.nrm;
    jmd_rm__follow(j, j->vfollow, 1);
    j->leader = hint >= 0 ? hint : 0;
    return 0;
}

void jmd_rm_close(jmd_t *j)
{
    mem_free(j->rm_state);
    j->rm_state = NULL;
    j->nrm_state = 0;
    mem_free(j->pend_ok);
    mem_free(j->pend_failed);
    mem_free(j->sent_ok);
    mem_free(j->sent_failed);
    j->pend_ok = j->pend_failed = j->sent_ok = j->sent_failed = NULL;
    j->ncount = 0;
    for (size_t i = 0; i < JMD_MAX_RM; i++) {
        zuv_sock_close(&j->api[i]);
        zuv_sock_close(&j->sub[i]);
    }
}
