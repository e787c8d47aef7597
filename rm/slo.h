/* slo.h - a recurring job's deadline (SLO), inferred from its history (Morpheus §4) (pure).
 *
 * Times are relative to the start of each run's period (rm/period.h). For each run: when it was
 * submitted and when it started and ended, whether it succeeded, and when its outputs were
 * first read by another job (T_outRead), if they were: a job spec declares the files it reads
 * and writes, so the RM knows which registration consumed which recurring job's output.
 *
 * From Morpheus §4: the job has an actionable deadline when its output is consumed at an
 * approximately fixed time, CV(T_outRead) = MAD / median <= cv_max, with non-trivial slack,
 * median((T_outRead − T_end) / (T_end − T_start)) >= slack_min. The deadline is then the
 * read_pct percentile of T_outRead (the median in the paper). Otherwise, with enough successful
 * runs, it falls back to the completion_pct percentile of T_end (a high one), times
 * completion_margin. Fewer than min_runs successful runs: nothing is inferred.
 */
#ifndef PADDOCK_RM_SLO_H
#define PADDOCK_RM_SLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One past run, ms from its period's start: public value. */
struct slo_run {
    int64_t start;    /* T_start */
    int64_t end;      /* T_end */
    int64_t out_read; /* T_outRead; < 0: never read */
    bool ok;          /* succeeded (only these count) */
};

struct slo_params {
    uint32_t min_runs;        /* successful runs needed (default 3) */
    double cv_max;            /* of T_outRead (default 0.25) */
    double slack_min;         /* median slack ratio (default 0.1) */
    double read_pct;          /* percentile of T_outRead, 0..100 (default 50) */
    double completion_pct;    /* percentile of T_end (default 95) */
    double completion_margin; /* factor on it (default 1.2) */
};

enum slo_source {
    SLO_NONE = 0,       /* not enough history */
    SLO_CONSUMERS = 1,  /* from when other jobs read its outputs */
    SLO_COMPLETION = 2, /* from its past completion times */
};

/* The inferred deadline and its evidence: public value. */
struct slo_inference {
    uint8_t source;      /* enum slo_source */
    int64_t deadline;    /* ms from the period's start; 0 with SLO_NONE */
    uint32_t runs;       /* successful runs considered */
    uint32_t consumed;   /* of them, runs whose outputs were read */
    double read_cv;      /* CV of T_outRead (0 when fewer than 2 reads) */
    double slack_ratio;  /* median (T_outRead − T_end) / (T_end − T_start) */
    int64_t read_median; /* ms from the period's start */
    int64_t end_pct;     /* the completion_pct percentile of T_end */
};

void slo_params_default(struct slo_params *p);
/* "none", "consumers", "completion". */
const char *slo_source_name(uint8_t source);
/* Percentile (nearest rank, 0..100) of v[0..n), n >= 1; v is reordered. */
double slo_percentile(double *v, size_t n, double pct);
/* Infers from runs[0..n) (any order). Returns 0 (out->source may be SLO_NONE), ERR_INVAL (a
 * NULL or malformed argument), ERR_NOMEM. */
int slo_infer(const struct slo_run *runs, size_t n, const struct slo_params *p,
              struct slo_inference *out);

#endif
