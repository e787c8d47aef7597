/* correct.c - when to move a queued task (see correct.h; Apollo §3.4). */
#include "jm/correct.h"

#include <math.h>
#include <stddef.h>

void correct_config_default(struct correct_config *cfg)
{
    cfg->min_wait_s = 1.0;
    cfg->wait_factor = 2.0;
    cfg->gain = 0.25;
    cfg->margin_s = 0.5;
    cfg->max_moves = 3;
}

static double correct__nonneg(double x)
{
    return isfinite(x) && x > 0 ? x : 0;
}

enum correct_verdict correct_check(const struct correct_config *cfg, const struct correct_input *in,
                                   double *left_s)
{
    struct correct_config def;
    if (!cfg) {
        correct_config_default(&def);
        cfg = &def;
    }
    double left_wait;
    if (isfinite(in->pn_wait_s) && in->pn_wait_s >= 0)
        left_wait = correct__nonneg(in->pn_wait_s - correct__nonneg(in->since_report_s));
    else
        left_wait =
            correct__nonneg(correct__nonneg(in->cur_wait_s) - correct__nonneg(in->own_share_s));
    double left = left_wait + correct__nonneg(in->run_s);
    if (left_s)
        *left_s = left;
    double waited = correct__nonneg(in->waited_s);
    if (in->moves >= cfg->max_moves || waited < cfg->min_wait_s ||
        waited + left_wait < cfg->wait_factor * correct__nonneg(in->placed_wait_s))
        return CORRECT_TOO_SOON;
    if (!isfinite(in->alt_c_s) || in->alt_c_s >= 1e300 || in->alt_c_s < 0)
        return CORRECT_STAY;
    double save = cfg->gain * left;
    if (save < cfg->margin_s)
        save = cfg->margin_s;
    return left - in->alt_c_s >= save ? CORRECT_MOVE : CORRECT_STAY;
}
