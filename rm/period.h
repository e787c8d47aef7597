/* period.h - UTC periods of recurring jobs: instance numbering, period starts, the plan's LCM
 * (pure).
 *
 * Periods are plain milliseconds of UTC (no time zones, no DST): instance i of a job with period
 * P and offset O starts at O + i·P ms since the Unix epoch, so every replica, every restart and
 * every leader numbers the same instance the same way. A daily job at 02:00 UTC has P = 86400000
 * and O = 7200000. Negative times are not used; instance numbers start at 0.
 *
 * Morpheus §6.1: the plan covers the least common multiple of the periods, capped (a day in the
 * paper); periods that do not divide the cap are planned as if their period were the cap's
 * multiple nearest below (the caller is told, and says so).
 */
#ifndef PADDOCK_RM_PERIOD_H
#define PADDOCK_RM_PERIOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The instance running at `now`: floor((now − offset) / period), or −1 when now < offset.
 * period > 0, 0 <= offset. */
int64_t period_index(int64_t now_ms, int64_t period_ms, int64_t offset_ms);
/* Start of instance `index` (>= 0): offset + index·period. */
int64_t period_start(int64_t index, int64_t period_ms, int64_t offset_ms);
/* Least common multiple of periods[0..n) (each > 0), or `cap` when it would exceed cap (then
 * *capped, if not NULL, is set true). n == 0 gives 0. No overflow for any uint64 input. */
uint64_t period_lcm(const uint64_t *periods, size_t n, uint64_t cap, bool *capped);

/* ---- Period inference (Morpheus §4, "Isolating periodic jobs") ----
 *
 * "We group individual job instances in a periodic job, if the templated job names are an exact
 * match, [...] and if submissions have a near-constant inter-arrival time. The latter criterion
 * is evaluated using the coefficient of variation (CV) measure of inter-arrival times. CV is
 * computed as the ratio of median absolute deviation (MAD) [...] and central value (median),
 * namely CV = MAD / median; we filter out jobs with large CV. We derive the period P_j of a job j
 * based on the submission times—not subject to queuing delays."
 *
 * The caller groups (by name); period_infer judges one group's submission times. The period is
 * the median gap, taken as a natural period (a minute, an hour, a day, ...) when within `snap`
 * of one, and rounded to `quantum_ms` (the plan step: a recurring job's period and offset are
 * multiples of it). The offset places the submissions in UTC periods the way period_index
 * numbers them: the median phase of the submissions (phases taken around the first one's, so a
 * cluster around the period's boundary does not split), rounded down to the quantum, so each
 * submission falls at or a little after its period's start. */

#define PERIOD_MAX_RUNS 256 /* submissions one inference considers (the newest) */

struct period_params {
    uint32_t min_runs;     /* submissions needed (default 4: three gaps) */
    uint32_t max_runs;     /* the newest this many count (default 64, at most PERIOD_MAX_RUNS) */
    double cv_max;         /* the largest MAD / median of the gaps (default 0.1) */
    int64_t min_period_ms; /* a shorter median gap is a burst, not a period (default 1000) */
    int64_t quantum_ms;    /* period and offset are multiples of it (default 1000) */
    double snap;           /* a median within this fraction of a natural period takes it (0.05) */
    double stale_periods;  /* at `now`, a last submission older than this many periods means the
                              job stopped recurring (default 2.5) */
};

enum period_verdict {
    PERIOD_PERIODIC = 0,
    PERIOD_TOO_FEW = 1,   /* fewer than min_runs submissions */
    PERIOD_IRREGULAR = 2, /* CV of the gaps over cv_max */
    PERIOD_TOO_SHORT = 3, /* median gap under min_period_ms */
    PERIOD_STALE = 4,     /* regular, but not submitted for stale_periods periods */
};

/* What period_infer found, and its evidence: public value. */
struct period_fit {
    uint8_t verdict;           /* enum period_verdict */
    uint32_t runs;             /* submissions considered */
    int64_t period_ms;         /* the period (0 unless there were gaps to measure) */
    int64_t offset_ms;         /* in [0, period_ms): where in each period the submissions fall */
    int64_t median_gap_ms;     /* median inter-arrival time */
    int64_t mad_gap_ms;        /* its median absolute deviation */
    double cv;                 /* mad / median (0 when the median is 0) */
    int64_t phase_mad_ms;      /* how far submissions stray from their median phase (MAD) */
    int64_t first_ms, last_ms; /* the oldest and newest submission considered */
    int64_t next_ms;           /* the next period start after last_ms */
};

void period_params_default(struct period_params *p);
/* "periodic", "too few runs", "irregular", "too short", "stale"; "?" otherwise. */
const char *period_verdict_name(uint8_t verdict);
/* Judges submission times submit_ms[0..n) (ms since the epoch, any order, duplicates allowed;
 * only the newest max_runs count) at `now_ms`. Returns 0 with *out filled (out->verdict says
 * whether it is periodic), or ERR_INVAL (NULL arguments, parameters out of range). */
int period_infer(const int64_t *submit_ms, size_t n, int64_t now_ms, const struct period_params *p,
                 struct period_fit *out);
/* The start of the period a time belongs to when periods are (period_ms, offset_ms): the
 * nearest period start, so a submission a little early counts for the period it was meant for.
 * period_ms > 0; -1 before the first period. */
int64_t period_nearest_start(int64_t t_ms, int64_t period_ms, int64_t offset_ms);

#endif
