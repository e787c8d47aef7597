/* calib.h - the cluster's error model of admission's predictions, learned from outcomes (pure).
 *
 * MRM §3 bounds a job's finish with a prediction interval, and Jockey §4 keeps the margin a
 * controller needs from what it has seen; a fixed multiplier on an assumed spread does neither.
 * Here every job that finishes records the arbiter's median prediction made when it registered
 * (rm/arbiter.h: the fluid model over the job's own list-schedule shape, unscaled) and its actual
 * makespan. The ratios actual / predicted, over the latest CALIB_WINDOW outcomes, give two
 * factors:
 *
 *   p50 = the median ratio      (the quoted median is scaled by it; the JM's ETA p50 is not: it
 *                                simulates the job's remaining work, jm/eta.h)
 *   hi  = the CALIB_Q quantile  (the conservative bound: admission's work and path are scaled
 *                                by it before the job's own profile spread is added)
 *
 * A job that brings its own spread (issue 22: s = its finish-time quantile over its median from
 * the JM's simulator over its DAG, jm/shape.h) is bounded by its own spread times what the cluster
 * has learned its own spreads miss: its outcome also records u = (actual / predicted) / s in a
 * second ring, and
 *
 *   hi_own = the CALIB_Q quantile of u  (such a job's bound is scaled by s x hi_own instead of
 *                                        hi: a job whose path averages many tasks gets a narrow
 *                                        margin, one resting on a few long tasks a wide one)
 *
 * A new cluster has no outcomes and must not promise what it has not seen, so each factor is
 * shrunk towards a conservative prior worth CALIB_PRIOR_N outcomes:
 * factor = (n0 x prior + n x sample) / (n0 + n). It starts at CALIB_PRIOR_HI (about the old fixed
 * 1.645 x 25% spread) and tightens as jobs finish; a cluster whose jobs run late widens it.
 *
 * No clock, no I/O: the ledger applies outcomes from its log, so every replica holds the same
 * model, and the simulator uses the same code.
 */
#ifndef PADDOCK_RM_CALIB_H
#define PADDOCK_RM_CALIB_H

#include <stddef.h>
#include <stdint.h>

#define CALIB_WINDOW    256  /* outcomes kept, newest replacing oldest */
#define CALIB_PRIOR_N   8.0  /* the prior's weight, in outcomes */
#define CALIB_PRIOR_P50 1.0  /* prior median ratio: the model is unbiased */
#define CALIB_PRIOR_HI  1.5  /* prior quantile: a new cluster is conservative */
#define CALIB_PRIOR_OWN 1.2  /* prior quantile of u: a fresh cluster adds a fifth to own spreads */
#define CALIB_Q         0.95 /* the bound's quantile */
#define CALIB_RATIO_MIN 0.05 /* a recorded ratio is clamped to [MIN, MAX]: one absurd outcome */
#define CALIB_RATIO_MAX 20.0 /* (a job stuck for an hour) must not poison the window */

/* A job's own history (issue 22): the cluster-wide q95 of u mixes jobs whose predictions are off
 * by different amounts (on a loaded 2-core cluster one workflow ran 0.88x its median, another
 * 1.15x). A job with earlier runs of its own (same name and virtual cluster, each with a spread)
 * is bounded by
 *
 *   spread x (n0 x hi_own + n x m x hi_hist) / (n0 + n),   never below spread x m,
 *
 * and never below the cluster-wide bound (calib_bound_factor): its history widens the bound of a
 * job whose own runs were late, it does not narrow one whose runs were early (tried: on a real
 * cluster whose load rose between phases, both jobs admitted on a narrowed bound missed),
 * m the median u of its latest CALIB_HIST runs and hi_hist what that rule has missed on this
 * cluster: each of the latest CALIB_WINDOW runs with at least one earlier run of its own gives
 * v = u / (the median u of those, up to CALIB_HIST), hi_hist is the CALIB_Q quantile of the v's
 * shrunk towards CALIB_PRIOR_OWN worth CALIB_PRIOR_N as the other factors (at least 1), n how
 * many v's, n0 = CALIB_PRIOR_N. So with no repeated job yet the bound is the cluster-wide one,
 * and it widens towards a late job's own as the cluster sees how well histories predict. The
 * ledger lists the runs from the finished jobs it keeps (snapshots carry them). */
#define CALIB_HIST 8

/* One finished run of a job with a spread of its own: public value. */
struct calib_run {
    uint64_t key; /* which job: runs with equal keys are runs of the same job */
    double u;     /* (actual / predicted), clamped as calib_add clamps it, / its own spread */
};

/* The history model over runs[0..n), oldest first (borrowed): public value. */
struct calib_hist {
    double hi;        /* hi_hist: their CALIB_Q quantile shrunk towards CALIB_PRIOR_OWN, >= 1 */
    double sample_hi; /* the same before the floor (0 with none) */
    uint32_t n;       /* v's it read (<= CALIB_WINDOW) */
};

void calib_hist_model(const struct calib_run *runs, size_t n, struct calib_hist *out);

struct calib_factors;

/* The bound factor of a job with its own spread (>= 1) and the median u of its own runs (> 0)
 * under factors f and history model h, as above: at least calib_bound_factor(f, spread). */
double calib_hist_bound(const struct calib_factors *f, const struct calib_hist *h, double spread,
                        double med);

/* The median u of the latest CALIB_HIST runs of `key` in runs[0..n) (oldest first) into *med;
 * returns how many it read (0: no history, *med untouched). */
uint32_t calib_hist_median(const struct calib_run *runs, size_t n, uint64_t key, double *med);

/* Public value struct; callers own it. Fields are read-only outside calib.c. */
struct calib {
    uint32_t ratio_milli[CALIB_WINDOW]; /* ring: actual / predicted x 1000 */
    uint32_t n;                         /* valid entries, <= CALIB_WINDOW */
    uint32_t head;                      /* next slot to write */
    uint64_t total;                     /* outcomes ever recorded */
    /* the outcomes of jobs with a spread of their own: u = ratio / spread x 1000, a ring as above
     */
    uint32_t own_milli[CALIB_WINDOW];
    uint32_t own_n;
    uint32_t own_head;
};

/* The factors and what they come from: public value. */
struct calib_factors {
    double p50;        /* median factor, shrunk towards the prior */
    double hi;         /* bound factor (>= p50), shrunk towards the prior */
    double sample_p50; /* the window's own median ratio (0 with no outcome) */
    double sample_hi;  /* the window's own CALIB_Q quantile (0 with no outcome) */
    uint32_t n;        /* outcomes in the window */
    uint64_t total;    /* outcomes ever */
    double hi_own;     /* a job with its own spread s: bound factor s x hi_own; shrunk as hi */
    double sample_own; /* the own ring's CALIB_Q quantile of u (0 with no outcome) */
    uint32_t own_n;    /* outcomes in the own ring */
};

void calib_init(struct calib *c);

/* Records one finished job: actual and predicted makespan in the same unit. An outcome
 * without a usable prediction (predicted <= 0 or either not finite) is ignored: returns 0 when
 * recorded, ERR_INVAL when ignored. */
int calib_add(struct calib *c, double actual, double predicted);

/* calib_add for a job that registered its own spread (>= 1; < 1 or not finite: none, then this
 * is calib_add): the ratio's ring as calib_add, and u = ratio / spread in the own ring. */
int calib_add_spread(struct calib *c, double actual, double predicted, double spread);

/* What a finished run is measured against (entries from version 10 on; rm/ledger.h
 * ledger_cmd.calib_at_p50). Its median at registration (the plan's, on the tokens the plan
 * gave it then) is no measure of the model's error once the arbiter stretched it towards its
 * deadline for jobs that came later, or its controller held fewer tokens because its deadline
 * allowed: such a run is late by design, and measured against its registration's median it
 * widened the bound with every deadline that had slack (four deadline jobs sharing 8 tokens
 * moved a new cluster's factor from 1.50 to 1.95). So a run is measured against the model's
 * median on the guaranteed tokens it held on average over its life: arbiter_time_p50(s, held /
 * actual), s its registered shape (unscaled). Returns that, in actual's unit, or 0 when the run
 * teaches nothing: it held less than one token on average, or its tasks ran more than
 * CALIB_OPP_MAX of the token-time it held beyond it (used > held x (1 + CALIB_OPP_MAX):
 * opportunistic tasks on spare machines, faster than anything admission can count on; used <= 0:
 * not known, not checked). actual in seconds, held and used in token-seconds. */
#define CALIB_OPP_MAX 0.10
struct arbiter_shape;
double calib_predicted(const struct arbiter_shape *s, double actual, double held, double used);

/* The bound's factor for a job with its own spread (0: none): spread x hi_own, never below 1
 * x p50; without one, hi. */
double calib_bound_factor(const struct calib_factors *f, double spread);

/* The factors now. */
void calib_factors(const struct calib *c, struct calib_factors *out);

/* Checks a decoded model (n <= CALIB_WINDOW, head < CALIB_WINDOW, ratios within the clamp; the
 * own ring alike):
 * 0 or ERR_PARSE. */
int calib_check(const struct calib *c);

#endif
