/* controller.c - Jockey's control loop: slack, hysteresis, dead zone (Jockey §4.3). */
#include "jm/controller.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/amdahl.h"
#include "jm/jsim.h"

struct controller {
    struct controller_config cfg;
    struct utility ut;
    controller_predict_fn *predict;
    void *ctx;
    int started;
    int retarget; /* the goal changed: the next decision jumps to A^r */
    double A;     /* smoothed allocation A_t */
    int tokens;   /* the request last output */
};

void controller_config_default(struct controller_config *c, double d)
{
    double scale = isfinite(d) && d > 0 ? d / 3600.0 : 1.0;
    c->period_s = 60.0 * scale < 1.0 ? 1.0 : 60.0 * scale;
    c->slack = 1.2;
    c->alpha = 0.2;
    c->deadzone_s = 180.0 * scale;
    c->min_tokens = 1;
    c->max_tokens = 100;
    c->opp_factor = 1.0;
    c->tolerance = 0.01;
}

void controller_config_jm(struct controller_config *c, double deadline_s, double period_s,
                          int max_tokens, double opp_factor)
{
    controller_config_default(c, deadline_s);
    if (!(period_s > 0)) {
        period_s = deadline_s / 30.0;
        period_s = period_s < 1.0 ? 1.0 : period_s > 60.0 ? 60.0 : period_s;
    }
    c->period_s = period_s;
    c->max_tokens = max_tokens;
    c->opp_factor = opp_factor;
}

void controller_obs_jm(struct controller_obs *o, uint32_t capacity, uint32_t granted,
                       double actual_s, double expected_s, double work_s)
{
    o->spare_tokens = capacity > granted
                          ? (capacity - granted > INT32_MAX ? INT32_MAX : (int)(capacity - granted))
                          : 0;
    o->granted = granted > INT32_MAX ? INT32_MAX : (int)granted;
    o->speed = 0;
    if (expected_s > 0) {
        double prior = 0.05 * work_s;
        o->speed = (actual_s + prior) / (expected_s + prior);
    }
}

controller_t *controller_new(const struct controller_config *cfg, const struct utility *ut,
                             controller_predict_fn *predict, void *ctx)
{
    if (cfg == NULL || ut == NULL || predict == NULL || cfg->min_tokens < 1 ||
        cfg->max_tokens < cfg->min_tokens || !(cfg->slack > 0) || !(cfg->alpha > 0) ||
        cfg->alpha > 1 || !(cfg->deadzone_s >= 0) || !(cfg->opp_factor >= 0) || ut->n < 1)
        return NULL;
    controller_t *c = mem_calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->cfg = *cfg;
    c->ut = *ut;
    c->predict = predict;
    c->ctx = ctx;
    return c;
}

void controller_destroy(controller_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    mem_free(*p);
    *p = NULL;
}

void controller_set_utility(controller_t *c, const struct utility *ut)
{
    if (ut != NULL && ut->n >= 1) {
        c->ut = *ut;
        c->retarget = c->started;
    }
}

int controller_set_deadline(controller_t *c, double d)
{
    struct utility ut;
    int rc = utility_init_deadline(&ut, d);
    if (rc != 0)
        return rc;
    c->ut = ut;
    c->retarget = c->started;
    return 0;
}

int controller_hold(const controller_t *c, int tokens, int runnable)
{
    int held = runnable < tokens ? runnable : tokens;
    return held < c->cfg.min_tokens ? c->cfg.min_tokens : held;
}

int controller_tokens(const controller_t *c)
{
    return c->started ? c->tokens : 0;
}

const struct controller_config *controller_config(const controller_t *c)
{
    return &c->cfg;
}

/* Slack times the observed slowdown (when the caller measured one above 1). */
static double controller__stretch(const controller_t *c, const struct controller_obs *obs)
{
    double speed = isfinite(obs->speed) && obs->speed > 1 ? obs->speed : 1;
    return c->cfg.slack * speed;
}

double controller_expected_utility(const controller_t *c, const struct controller_obs *obs,
                                   double a, double shift_s, int *rc)
{
    double smp[CONTROLLER_MAX_SAMPLES];
    int n = c->predict(c->ctx, obs, a, smp, CONTROLLER_MAX_SAMPLES);
    if (n < 1 || n > CONTROLLER_MAX_SAMPLES) {
        if (rc != NULL)
            *rc = n < 0 ? n : ERR_STATE;
        return -INFINITY;
    }
    struct utility u = c->ut;
    utility_shift(&u, shift_s);
    double stretch = controller__stretch(c, obs);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += utility_eval(&u, obs->t_r + stretch * smp[i]);
    if (rc != NULL)
        *rc = 0;
    return sum / n;
}

/* A^r: the smallest allocation whose expected utility is within the tolerance of the maximum.
 * The tolerance keeps sampling noise in C(p, a) from buying many tokens for a negligible gain. */
static int controller__raw(const controller_t *c, const struct controller_obs *obs, double shift,
                           int *raw)
{
    double best = -INFINITY;
    for (int a = c->cfg.min_tokens; a <= c->cfg.max_tokens; a++) {
        int rc;
        double u = controller_expected_utility(c, obs, a, shift, &rc);
        if (rc != 0)
            return rc;
        if (u > best)
            best = u;
    }
    double tol = c->cfg.tolerance + 1e-9 * (fabs(best) > 1 ? fabs(best) : 1);
    for (int a = c->cfg.min_tokens; a <= c->cfg.max_tokens; a++) {
        if (controller_expected_utility(c, obs, a, shift, NULL) >= best - tol) {
            *raw = a;
            return 0;
        }
    }
    *raw = c->cfg.max_tokens;
    return 0;
}

static double controller__clamp(const controller_t *c, double a)
{
    if (a < c->cfg.min_tokens)
        return c->cfg.min_tokens;
    if (a > c->cfg.max_tokens)
        return c->cfg.max_tokens;
    return a;
}

int controller_step(controller_t *c, const struct controller_obs *obs, struct controller_out *out)
{
    if (obs == NULL || out == NULL || !isfinite(obs->t_r) || obs->t_r < 0 ||
        !isfinite(obs->progress))
        return ERR_INVAL;
    double D = c->cfg.deadzone_s;
    int raw, rc = controller__raw(c, obs, D, &raw);
    if (rc != 0)
        return rc;
    struct controller_out o = {.raw = raw};
    double A = c->A;
    int tokens = c->tokens;
    if (!c->started || c->retarget) {
        A = raw;
        tokens = (int)ceil(A);
        o.action = c->started ? CONTROLLER_RETARGET : CONTROLLER_FIRST;
    } else if (raw > tokens) {
        /* Behind: the deadline moved D earlier is at risk with what the job holds. */
        A = controller__clamp(c, A + c->cfg.alpha * (raw - A));
        int up = (int)ceil(A - 1e-9);
        tokens = up > tokens ? up : tokens;
        o.action = CONTROLLER_RAISE;
    } else if (obs->granted > 0 && obs->granted < raw) {
        /* Asked for enough, granted too little: hold the request and the smoothed state. */
        o.action = CONTROLLER_SHORT;
    } else {
        int raw2;
        if ((rc = controller__raw(c, obs, 2 * D, &raw2)) != 0)
            return rc;
        if (raw2 < tokens) {
            /* Ahead by more than D: fewer tokens still meet a deadline 2D early. Round to the
             * nearest token on the way down so the request follows A_t without lagging a whole
             * token behind it. */
            A = controller__clamp(c, A + c->cfg.alpha * (raw2 - A));
            int down = (int)floor(A + 0.5);
            tokens = down < tokens ? down : tokens;
            o.raw = raw2;
            o.action = CONTROLLER_LOWER;
        } else {
            o.action = CONTROLLER_HOLD;
        }
    }
    if (tokens < c->cfg.min_tokens)
        tokens = c->cfg.min_tokens;
    if (tokens > c->cfg.max_tokens)
        tokens = c->cfg.max_tokens;
    int held = obs->granted > 0 ? obs->granted : tokens;
    double smp[CONTROLLER_MAX_SAMPLES];
    int n = c->predict(c->ctx, obs, held, smp, CONTROLLER_MAX_SAMPLES);
    if (n < 1 || n > CONTROLLER_MAX_SAMPLES)
        return n < 0 ? n : ERR_STATE;
    o.predicted_finish = obs->t_r + controller__stretch(c, obs) * smp[n / 2];
    c->A = A;
    c->tokens = tokens;
    c->started = 1;
    c->retarget = 0;
    o.tokens = tokens;
    o.smoothed = A;
    o.held = held;
    o.short_by = o.raw > held ? o.raw - held : 0;
    double opp = floor(c->cfg.opp_factor * held);
    o.opportunistic =
        obs->spare_tokens < opp ? (obs->spare_tokens > 0 ? obs->spare_tokens : 0) : (int)opp;
    *out = o;
    return 0;
}

int controller_predict_table(void *ctx, const struct controller_obs *obs, double a, double *out,
                             int cap)
{
    if (ctx == NULL || cap < JSIM_NQ)
        return ERR_INVAL;
    return jsim_table_predict(ctx, obs->progress, a, out);
}

int controller_predict_amdahl(void *ctx, const struct controller_obs *obs, double a, double *out,
                              int cap)
{
    if (ctx == NULL || obs->done == NULL || cap < 1)
        return ERR_INVAL;
    out[0] = amdahl_remaining(ctx, obs->done, a);
    return 1;
}
