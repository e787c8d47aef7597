/* eta.c - the ETA band from admission's model (issue 22). */
#include "jm/eta.h"

#include <math.h>

#include "common/err.h"

int eta_band(double t_r, double rest_p50, double rest_q95, double spread, double own_factor,
             struct eta_band *out)
{
    if (out == NULL || !isfinite(t_r) || t_r < 0 || !isfinite(rest_p50) || rest_p50 < 0)
        return ERR_INVAL;
    struct eta_band b = {.p50_s = t_r + rest_p50, .factor = 1};
    double q = isfinite(rest_q95) && rest_q95 > rest_p50 ? rest_q95 : rest_p50;
    b.p95_runs_s = t_r + q;
    if (isfinite(spread) && spread >= 1) {
        double f = isfinite(own_factor) && own_factor > 0 ? own_factor : 1;
        /* a learned factor below 1 / s would put the bound before the median */
        b.factor = spread * f > 1 ? spread * f : 1;
        b.from_spread = 1;
        b.p95_s = t_r + rest_p50 * b.factor;
    } else {
        b.factor = rest_p50 > 0 ? q / rest_p50 : 1;
        b.p95_s = t_r + q;
    }
    *out = b;
    return 0;
}

double eta_half_error(double eta_half, double makespan)
{
    if (!isfinite(eta_half) || !isfinite(makespan) || eta_half <= 0 || makespan <= 0)
        return -1;
    return fabs(eta_half - makespan) / makespan;
}

int eta_half_covered(double eta_half_p95, double makespan)
{
    if (!isfinite(eta_half_p95) || !isfinite(makespan) || eta_half_p95 <= 0 || makespan <= 0)
        return -1;
    return makespan <= eta_half_p95;
}
