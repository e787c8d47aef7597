/* correct.c - when to move or duplicate a queued task, and which opportunistic task a freed
 * token upgrades (see correct.h; Apollo §3.4-3.5). */
#include "jm/correct.h"

#include <math.h>
#include <stddef.h>

#include "common/err.h"

void correct_config_default(struct correct_config *cfg)
{
    cfg->min_wait_s = 1.0;
    cfg->wait_factor = 2.0;
    cfg->gain = 0.25;
    cfg->margin_s = 0.5;
    cfg->max_moves = 3;
    cfg->stage_factor = 1.0;
    cfg->max_dups = 1;
}

static double correct__nonneg(double x)
{
    return isfinite(x) && x > 0 ? x : 0;
}

static double correct__left_wait(const struct correct_input *in)
{
    if (isfinite(in->pn_wait_s) && in->pn_wait_s >= 0)
        return correct__nonneg(in->pn_wait_s - correct__nonneg(in->since_report_s));
    return correct__nonneg(correct__nonneg(in->cur_wait_s) - correct__nonneg(in->own_share_s));
}

/* The thresholds for a task of run time run_s: min_wait_s and margin_s, but never more than
 * CORRECT_SCALE of the task's own run time. A second's wait is nothing to a ten-minute task and
 * twice the whole run of a half-second one: with fixed thresholds a short task stayed queued
 * behind a busy node while another sat idle (one core of eight, all through a job of short
 * tasks). */
static double correct__min_wait(const struct correct_config *cfg, double run_s)
{
    double s = CORRECT_SCALE * run_s;
    return run_s > 0 && s < cfg->min_wait_s ? s : cfg->min_wait_s;
}

static double correct__margin(const struct correct_config *cfg, double run_s)
{
    double s = CORRECT_SCALE * run_s;
    return run_s > 0 && s < cfg->margin_s ? s : cfg->margin_s;
}

enum correct_verdict correct_check(const struct correct_config *cfg, const struct correct_input *in,
                                   double *left_s)
{
    struct correct_config def;
    if (!cfg) {
        correct_config_default(&def);
        cfg = &def;
    }
    double left_wait = correct__left_wait(in);
    double left = left_wait + correct__nonneg(in->run_s);
    if (left_s)
        *left_s = left;
    double waited = correct__nonneg(in->waited_s);
    double run = correct__nonneg(in->run_s);
    if (in->moves >= cfg->max_moves || waited < correct__min_wait(cfg, run) ||
        waited + left_wait < cfg->wait_factor * correct__nonneg(in->placed_wait_s))
        return CORRECT_TOO_SOON;
    if (!isfinite(in->alt_c_s) || in->alt_c_s >= 1e300 || in->alt_c_s < 0)
        return CORRECT_STAY;
    double save = cfg->gain * left;
    if (save < correct__margin(cfg, run))
        save = correct__margin(cfg, run);
    return left - in->alt_c_s >= save ? CORRECT_MOVE : CORRECT_STAY;
}

/* 1 when alt saves at least max(margin, gain x left). */
static int correct__better(const struct correct_config *cfg, double run, double left, double alt)
{
    if (!isfinite(alt) || alt >= 1e300 || alt < 0)
        return 0;
    double save = cfg->gain * left;
    if (save < correct__margin(cfg, run))
        save = correct__margin(cfg, run);
    return left - alt >= save;
}

enum correct_action correct_decide(const struct correct_config *cfg, enum correct_mode mode,
                                   const struct correct_dup_input *in, unsigned *conds,
                                   double *left_s)
{
    struct correct_config def;
    if (!cfg) {
        correct_config_default(&def);
        cfg = &def;
    }
    const struct correct_input *q = &in->q;
    double left_wait = correct__left_wait(q);
    double left = left_wait + correct__nonneg(q->run_s);
    if (left_s)
        *left_s = left;
    double waited = correct__nonneg(q->waited_s);
    double expected = waited + left_wait;
    double run = correct__nonneg(q->run_s), min_wait = correct__min_wait(cfg, run);
    unsigned c = 0;
    if (waited >= min_wait && expected >= cfg->wait_factor * correct__nonneg(q->placed_wait_s))
        c |= CORRECT_COND_WAIT_GREW;
    if (isfinite(in->stage_avg_wait_s) && in->stage_avg_wait_s >= 0) {
        double avg = cfg->stage_factor * in->stage_avg_wait_s;
        if (expected >= min_wait && expected > avg)
            c |= CORRECT_COND_ABOVE_STAGE;
        if (waited >= min_wait && waited > avg)
            c |= CORRECT_COND_WAITED_LONG;
    }
    if (conds)
        *conds = c;
    if (!c)
        return CORRECT_NONE;
    int dup = mode == CORRECT_MODE_DUPLICATE && !in->no_copies && !in->no_room;
    if (dup ? in->dups >= cfg->max_dups : q->moves >= cfg->max_moves)
        return CORRECT_NONE;
    if (!correct__better(cfg, run, left, q->alt_c_s))
        return CORRECT_NONE;
    return dup ? CORRECT_ACT_DUPLICATE : CORRECT_ACT_MOVE;
}

int correct_upgrade_pick(const struct correct_config *cfg, const struct correct_upgrade_cand *c,
                         size_t n, double prio_eps, struct correct_upgrade *out)
{
    struct correct_config def;
    if (!cfg) {
        correct_config_default(&def);
        cfg = &def;
    }
    out->idx = -1;
    out->replace = 0;
    out->best_s = 0;
    out->saved_s = 0;
    if (n == 0)
        return ERR_NOTFOUND;
    if (!(prio_eps >= 0))
        prio_eps = 0;
    double top = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (c[i].prio > top)
            top = c[i].prio;
    for (size_t i = 0; i < n; i++) {
        if (!(c[i].prio >= top - prio_eps) && isfinite(top))
            continue;
        double here = correct__nonneg(c[i].here_s);
        int rep = !c[i].running && correct__better(cfg, 0, here, c[i].alt_s);
        double best = rep ? c[i].alt_s : here;
        if (out->idx < 0 || best < out->best_s) {
            out->idx = (long)i;
            out->replace = rep;
            out->best_s = best;
            out->saved_s = rep ? here - c[i].alt_s : 0;
        }
    }
    return 0;
}
