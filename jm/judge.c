/* judge.c - the inputs of the correction and speculation rules from what the JM knows, and their
 * verdicts (see judge.h). */
#include "jm/judge.h"

#include <string.h>

#include "jm/view.h"

enum correct_action judge_queued(const struct correct_config *cfg, enum correct_mode mode,
                                 const struct judge_where *w, const struct judge_queued *q,
                                 long *to, struct estimate *alt, struct correct_dup_input *in,
                                 unsigned *conds, double *left_s)
{
    struct correct_dup_input local;
    if (in == NULL)
        in = &local;
    unsigned c = 0;
    if (conds == NULL)
        conds = &c;
    *to = -1;
    memset(alt, 0, sizeof *alt);
    struct estimate here;
    estimator_estimate(w->est, w->view, w->et, q->node, w->now_ms, 0.5, &here);
    const struct view_node *vn = view_node(w->view, q->node);
    memset(in, 0, sizeof *in);
    in->q.waited_s = q->waited_s;
    in->q.placed_wait_s = q->placed_wait_s;
    in->q.pn_wait_s = q->pn_wait_s;
    in->q.since_report_s = q->since_report_s;
    in->q.cur_wait_s = here.w_s;
    /* the part of the node's wait that is the task itself, when the PN gave no wait of its own */
    in->q.own_share_s = vn && vn->cpu > 0 ? here.r_s * w->et->cpu / vn->cpu : here.r_s;
    in->q.run_s = here.r_s;
    in->q.moves = q->moves;
    in->q.alt_c_s = ESTIMATOR_INF;
    in->stage_avg_wait_s = q->stage_wait_n ? q->stage_wait_sum_s / (double)q->stage_wait_n : -1;
    in->dups = q->dups;
    in->no_copies = !q->speculate;
    in->no_room = q->no_room;
    *conds = 0;
    (void)correct_decide(cfg, mode, in, conds, left_s);
    if (*conds == 0)
        return CORRECT_NONE; /* no condition holds: no node is looked at */
    *to = estimator_best_node(w->est, w->view, w->et, w->now_ms, w->skip, w->skip_ctx, alt);
    if (*to < 0)
        return CORRECT_NONE;
    in->q.alt_c_s = alt->e_s;
    return correct_decide(cfg, mode, in, conds, left_s);
}

enum speculate_verdict judge_running(const struct speculate_config *cfg,
                                     const struct judge_where *w, const struct judge_running *r,
                                     long *to, struct estimate *e, struct speculate_input *in,
                                     struct speculate_why *why, double *r_s)
{
    struct speculate_input local;
    if (in == NULL)
        in = &local;
    *to = -1;
    memset(e, 0, sizeof *e);
    double cpu_s = estimator_cpu_s(w->est, w->et), rr = cpu_s + r->io_s;
    if (!(rr > 0))
        rr = r->fallback_r_s;
    if (r_s)
        *r_s = rr;
    const struct speculate_dist *d = r->dist;
    memset(in, 0, sizeof *in);
    in->elapsed_s = r->elapsed_s;
    in->stage_done = d ? d->v : NULL;
    in->nstage_done = d ? d->n : 0;
    in->stage_scale = rr;
    in->est_run_s = rr;
    in->progress =
        r->cpu_s > 0 || r->bytes_read > 0
            ? speculate_progress(r->cpu_s, (rr - r->io_s) * r->cpu, r->bytes_read, r->input_bytes)
            : -1;
    in->copy_c_s = ESTIMATOR_INF;
    in->speculate = r->speculate;
    in->copies = r->copies;
    in->job_inflight = r->job_inflight;
    in->job_started = r->job_started;
    in->job_running = r->job_running;
    in->job_tasks = r->job_tasks;
    in->stage_inflight = r->stage_inflight;
    in->stage_tasks = r->stage_tasks;
    /* the original's remaining time first: no node is looked at for a task that is fine */
    if (!speculate_worth_a_look(cfg, in, cpu_s))
        return SPECULATE_NO;
    *to = estimator_best_node(w->est, w->view, w->et, w->now_ms, w->skip, w->skip_ctx, e);
    if (*to < 0)
        return SPECULATE_NO;
    in->copy_c_s = e->e_s;
    if (d && d->n >= 2)
        in->copy_spread_s = speculate_dist_stddev(d) * rr;
    return speculate_check(cfg, in, why);
}

int judge_upgrade(const struct correct_config *cfg, const struct judge_where *w, uint32_t node,
                  double prio, long *to, struct estimate *alt, double *here_s)
{
    *to = -1;
    if (here_s)
        *here_s = ESTIMATOR_INF;
    memset(alt, 0, sizeof *alt);
    struct estimate here;
    if (estimator_estimate(w->est, w->view, w->et, node, w->now_ms, 0.5, &here) >= ESTIMATOR_INF)
        return 0;
    long best = estimator_best_node(w->est, w->view, w->et, w->now_ms, w->skip, w->skip_ctx, alt);
    struct correct_upgrade_cand c = {
        .prio = prio,
        .here_s = here.w_s + here.r_s,
        .alt_s = best >= 0 ? alt->e_s : ESTIMATOR_INF,
        .running = 0,
    };
    if (here_s)
        *here_s = c.here_s;
    struct correct_upgrade up;
    if (correct_upgrade_pick(cfg, &c, 1, 0, &up) != 0 || !up.replace || best < 0)
        return 0;
    *to = best;
    return 1;
}
