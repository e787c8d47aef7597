/* controller.h - Jockey's resource-allocation control loop (Jockey §4.3).
 *
 * Every period the JM (or the simulator) feeds an observation: the time the job has been running
 * t_r, its progress p (jm/progress.h) and finished tasks per stage, and the spare capacity the
 * cluster reports. For candidate allocations a the controller asks a predictor for samples of the
 * remaining time C(p, a) and computes the expected utility
 *
 *     U_a = mean over samples c of U(t_r + S * c)                (slack S)
 *
 * with U shifted left by the dead zone D. The raw allocation is the smallest a maximising U_a
 * ("A^r = argmin_a {a : U_a = max_b U_b}"), where "maximising" allows a small tolerance (default
 * 0.01 utility) so that sampling noise in the predictions cannot buy many tokens for nothing. The
 * smoothed allocation follows with hysteresis, A_t = A_{t-1} + alpha * (A^r - A_{t-1}), and the
 * guaranteed-token request is A_t rounded up.
 *
 * Dead zone ("shift the utility function leftwards by D and change allocations only if the job is
 * at least D behind schedule"): the controller raises the allocation when, at the current
 * allocation, the job is predicted to lose utility against the deadline moved D earlier; it
 * lowers it only when even the deadline moved 2D earlier is met with fewer tokens (the job is at
 * least D ahead of the shifted schedule), towards that smaller allocation. In between, nothing
 * changes. The first decision jumps straight to A^r (the pessimistic start of §5.2), and so does
 * the first decision after the deadline or utility changes: hysteresis is there to damp noise in
 * the progress indicator, not to delay the answer to a new goal (with alpha = 0.2 a halved
 * deadline was otherwise met too late in simulation).
 *
 * Beyond the paper (its §4.4 lists "additional input signals" as future work): when the caller
 * passes obs.speed > 1 (the job's tasks have been running slower than the profile said), every
 * predicted remaining time is multiplied by it, so a uniformly slow run is noticed before its
 * progress falls behind. A fast run is left to the progress indicator.
 *
 * Defaults (§5.1): period 1 min, S = 1.2, alpha = 0.2, D = 3 min, for a 60-minute deadline; other
 * deadlines scale period and D in proportion (controller_config_default). The deadline may change
 * while the job runs (controller_set_deadline, controller_set_utility).
 *
 * The opportunistic allowance (Apollo §3.5) is min(spare, opp_factor * tokens held): tokens are
 * what the deadline needs, opportunistic capacity is what the cluster can spare.
 *
 * The grant (issue 25): Jockey assumes the job gets what it asks for; under MinEDF-WC the RM may
 * grant less (a tighter deadline's minimum comes first) or more (spare). The caller passes the
 * grant (obs.granted), and the controller predicts the finish, sizes the opportunistic allowance
 * and judges "behind" by what the job holds, not by its own last request. When the request
 * already covers A^r but the grant does not, the request stands (CONTROLLER_SHORT): raising it
 * buys nothing the RM withholds, and its hysteresis state is left as it was, so the job does not
 * ratchet its claim up while it waits. A^r is reported (out.raw) for the RM to take as the job's
 * minimum, the request (out.tokens) as what it wants.
 *
 * Pure: no clock (the caller passes t_r and calls controller_step once per period); an opaque
 * object, caller owns (controller_new / controller_destroy).
 */
#ifndef PADDOCK_JM_CONTROLLER_H
#define PADDOCK_JM_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>

#include "jm/utility.h"

#define CONTROLLER_MAX_SAMPLES 64

struct controller_config {
    double period_s;   /* how often the caller steps the controller (default 60 s at d = 1 h) */
    double slack;      /* S (default 1.2) */
    double alpha;      /* hysteresis (default 0.2); 1 = no smoothing */
    double deadzone_s; /* D (default 180 s at d = 1 h); 0 disables */
    int min_tokens;    /* smallest request (default 1) */
    int max_tokens;    /* hard limit on the request (default 100) */
    double opp_factor; /* opportunistic tasks per token at most (default 1.0) */
    double tolerance;  /* utility within this of the maximum counts as maximal (default 0.01) */
};

/* Paper defaults scaled to a deadline of deadline_s seconds (period = d / 60 but at least 1 s,
 * D = d / 20); a non-positive or infinite deadline gives the unscaled defaults. */
void controller_config_default(struct controller_config *c, double deadline_s);

/* The JM's configuration (jm/daemon/jmd_jockey.c and the simulator's JM both take it): the
 * defaults for deadline_s, then a control period of period_s, or when that is not positive
 * deadline_s / 30 within [1 s, 60 s]; max_tokens and opp_factor as given. */
void controller_config_jm(struct controller_config *c, double deadline_s, double period_s,
                          int max_tokens, double opp_factor);

/* Remaining-time predictor: writes up to cap (>= CONTROLLER_MAX_SAMPLES) samples of C(p, a) for
 * the observation into out, in ascending order, and returns how many (>= 1), or a negative ERR_*
 * code. */
struct controller_obs;
typedef int controller_predict_fn(void *ctx, const struct controller_obs *obs, double a,
                                  double *out, int cap);

struct controller_obs {
    double t_r;       /* seconds the job has been running */
    double progress;  /* p in [0, 1] by the indicator the predictor was built with */
    const int *done;  /* finished tasks per stage (for the Amdahl predictor); may be NULL */
    int spare_tokens; /* what the cluster can spare now (for the opportunistic allowance) */
    double speed;     /* optional: observed / profiled run time of the tasks finished so far;
                         above 1 the predictions are stretched by it (0 or <= 1: unused) */
    int granted;      /* optional: the tokens the RM granted for the last request (MinEDF-WC may
                         grant less than asked, or more: spare); <= 0: unknown, taken to be the
                         request itself */
};

/* The JM's observation beyond time and progress: the spare tokens (capacity less granted, at
 * least 0), the grant (<= INT32_MAX; 0: not yet known) and the speed signal, how much slower
 * than the model the finished tasks ran ((actual + prior) / (expected + prior), the prior 5% of
 * the job's work_s so the first few tasks do not swing it; 0, unused, before any expected time).
 * Pure: the caller sums the run times. */
void controller_obs_jm(struct controller_obs *o, uint32_t capacity, uint32_t granted,
                       double actual_s, double expected_s, double work_s);

enum controller_action {
    CONTROLLER_FIRST = 0, /* first decision: jumped to the raw allocation */
    CONTROLLER_RAISE,     /* behind schedule */
    CONTROLLER_LOWER,     /* ahead of schedule by more than the dead zone */
    CONTROLLER_HOLD,      /* inside the dead zone */
    CONTROLLER_RETARGET,  /* first decision after a new deadline or utility: jumped to A^r */
    CONTROLLER_SHORT,     /* the request covers A^r but the grant does not: the request stands
                             (asking more buys nothing the RM withholds; lowering it would give
                             up the claim) */
};

struct controller_out {
    int tokens;              /* guaranteed tokens to request from the RM */
    int opportunistic;       /* opportunistic allowance: min(spare, opp_factor * held) */
    int raw;                 /* A^r this period: what the job needs now (the RM's minimum for
                                it; `tokens` adds hysteresis on top) */
    double smoothed;         /* A_t before rounding */
    double predicted_finish; /* t_r + S * (median C(p, held)) */
    int held;                /* the allocation the job runs with: obs.granted when known, else
                                `tokens` */
    int short_by;            /* raw - held when the grant is below A^r, else 0 */
    enum controller_action action;
};

typedef struct controller controller_t;

/* Copies cfg and ut; predict/ctx are borrowed for the controller's lifetime. NULL on a bad
 * argument (max_tokens < min_tokens < 1, slack <= 0, alpha outside (0, 1], negative dead zone)
 * or out of memory. */
controller_t *controller_new(const struct controller_config *cfg, const struct utility *ut,
                             controller_predict_fn *predict, void *ctx);
/* Frees the controller and nullifies the caller's reference. NULL-safe. */
void controller_destroy(controller_t **p);

/* One control period. Returns 0 and fills *out, ERR_INVAL for a negative or non-finite t_r or a
 * non-finite progress, or the predictor's negative code (state unchanged on any error). */
int controller_step(controller_t *c, const struct controller_obs *obs, struct controller_out *out);

/* The tokens to hold now for a target of `tokens` when the job has `runnable` tasks it could run
 * at once (running + ready): min(tokens, runnable), at least min_tokens. Guaranteed tokens the
 * job cannot use (a serial phase, the valley before a barrier) only keep others from them; the
 * JM asks for the rest the moment more tasks become ready, and the smoothed state is unchanged.
 * Beyond the paper, which holds the target throughout. */
int controller_hold(const controller_t *c, int tokens, int runnable);

/* Replace the utility (copied) / set a Jockey §5.1 utility for a new deadline. Takes effect at
 * the next step. controller_set_deadline returns ERR_INVAL for a non-positive deadline. */
void controller_set_utility(controller_t *c, const struct utility *ut);
int controller_set_deadline(controller_t *c, double deadline_s);

/* The current smoothed allocation rounded up (0 before the first step). */
int controller_tokens(const controller_t *c);
const struct controller_config *controller_config(const controller_t *c);

/* Ready-made predictors (controller_predict_fn):
 *  - controller_predict_table: ctx is a const jsim_table_t * (jm/jsim.h); the JSIM_NQ quantiles of
 *    C(obs->progress, a) from the job simulator.
 *  - controller_predict_amdahl: ctx is a const struct amdahl * (jm/amdahl.h); one sample,
 *    S_t + P_t / a from obs->done (ERR_INVAL when obs->done is NULL). */
int controller_predict_table(void *ctx, const struct controller_obs *obs, double a, double *out,
                             int cap);
int controller_predict_amdahl(void *ctx, const struct controller_obs *obs, double a, double *out,
                              int cap);

/* Expected utility of allocation a for obs under the controller's utility shifted by `shift_s`
 * (exposed for tests and reports). Negative ERR_* from the predictor is returned in *rc. */
double controller_expected_utility(const controller_t *c, const struct controller_obs *obs,
                                   double a, double shift_s, int *rc);

#endif
