/* metrics.h - a builder for the Prometheus text exposition format, version 0.0.4.
 *
 * A daemon builds its whole exposition on each scrape (from its own state, on its loop
 * thread) and serves it with Content-Type METRICS_CONTENT_TYPE. The builder writes:
 *
 *   # HELP <name> <help, with \ and newline escaped>
 *   # TYPE <name> counter|gauge|histogram
 *   <name>{<label>="<value, with \ " and newline escaped>",...} <value>
 *
 * Rules it enforces (a violation sets the first error, see metrics_error, and the offending
 * line is not written, so the output stays valid):
 *  - a family is declared once with metrics_family (HELP and TYPE once); its samples follow
 *    it before the next family (the format wants a family's lines together); declaring a
 *    name twice is ERR_EXISTS;
 *  - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and do
 *    not start with "__"; at most METRICS_LABELS_MAX labels per sample;
 *  - counters should be named ..._total and carry units in the name (..._seconds,
 *    ..._bytes), the Prometheus way; the builder does not rename anything;
 *  - histograms: bucket upper bounds strictly increasing; the builder writes cumulative
 *    _bucket{le="..."} lines, the +Inf bucket, _sum and _count.
 * Values: %.17g precision when needed to round-trip, NaN, +Inf, -Inf spelled as the format
 * wants.
 *
 * Labels are given as a NULL-terminated array of alternating names and values:
 *   const char *l[] = {"state", "running", "class", "batch", NULL};
 * or NULL for none.
 *
 * Value type (struct metrics, metrics_init/metrics_close); the text is owned by it.
 * Not thread-safe.
 */
#ifndef PADDOCK_COMMON_METRICS_H
#define PADDOCK_COMMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_LABELS_MAX   8
#define METRICS_FAMILIES_MAX 512
#define METRICS_BUCKETS_MAX  32
#define METRICS_TEXT_MAX     (16u << 20) /* output cap; beyond it ERR_TOOBIG */

enum metrics_type {
    METRICS_COUNTER,
    METRICS_GAUGE,
    METRICS_HISTOGRAM,
};

struct metrics {
    char *buf; /* private: the text so far, NUL-terminated */
    size_t len, cap;
    int err;                                /* private: first error, or 0 */
    char cur[128];                          /* private: current family's name */
    enum metrics_type cur_type;             /* private */
    uint32_t seen[METRICS_FAMILIES_MAX];    /* private: hashes of declared families */
    char *seen_names[METRICS_FAMILIES_MAX]; /* private */
    size_t nseen;                           /* private */
};

void metrics_init(struct metrics *m);
/* Frees the text and the family set. */
void metrics_close(struct metrics *m);

/* Starts family `name` of `type`: writes HELP (escaped) and TYPE. `help` may be NULL (no
 * HELP line). Returns 0, ERR_INVAL (bad name), ERR_EXISTS (declared before), ERR_FULL
 * (METRICS_FAMILIES_MAX families) or ERR_NOMEM/ERR_TOOBIG. */
int metrics_family(struct metrics *m, const char *name, enum metrics_type type, const char *help);

/* One sample of the current counter or gauge family. `labels` as described above (copied
 * into the text). Returns 0, ERR_STATE (no family, or the current family is a histogram),
 * ERR_INVAL (bad label name, odd label array, too many labels), ERR_NOMEM/ERR_TOOBIG. */
int metrics_sample(struct metrics *m, const char *const *labels, double value);

/* A histogram's state, a value: bounds fixed at init, observations counted per bucket. */
struct metrics_hist {
    size_t nbounds;                           /* read-only */
    double bounds[METRICS_BUCKETS_MAX];       /* read-only: upper bounds, increasing */
    uint64_t counts[METRICS_BUCKETS_MAX + 1]; /* read-only: per bucket (last: above all) */
    double sum;                               /* read-only */
    uint64_t count;                           /* read-only */
};

/* Sets `n` upper bounds (copied). Returns 0 or ERR_INVAL (n == 0, n > METRICS_BUCKETS_MAX, not
 * strictly increasing, or not finite). */
int metrics_hist_init(struct metrics_hist *h, const double *bounds, size_t n);
/* Counts one observation `v` (into the first bucket whose bound is >= v). */
void metrics_hist_observe(struct metrics_hist *h, double v);

/* One labelled series of the current histogram family: `name`_bucket (cumulative, with
 * le="bound" added to `labels`, and le="+Inf"), `name`_sum and `name`_count. Returns as
 * metrics_sample (ERR_STATE when the current family is not a histogram). */
int metrics_histogram(struct metrics *m, const char *const *labels, const struct metrics_hist *h);

/* Shorthands: a family with one unlabelled sample. Same returns as the two calls. */
int metrics_counter1(struct metrics *m, const char *name, const char *help, double value);
int metrics_gauge1(struct metrics *m, const char *name, const char *help, double value);

/* The standard process families (what Prometheus client libraries export):
 * process_resident_memory_bytes (gauge, /proc/self/statm), process_cpu_seconds_total (counter,
 * user + system, getrusage) and process_open_fds (gauge). Same returns as metrics_family. */
int metrics_process(struct metrics *m);
/* This process's resident set in bytes (/proc/self/statm), 0 where unknown. */
uint64_t metrics_rss_bytes(void);

/* First error recorded since metrics_init (0 when everything was written). */
int metrics_error(const struct metrics *m);

/* The text so far (NUL-terminated, borrowed until the next call on `m`); *len its length
 * (len may be NULL). Never NULL: "" when nothing was written. */
const char *metrics_text(const struct metrics *m, size_t *len);

/* Takes the text: the caller owns it (free with mem_free); the builder is left empty and
 * ready for reuse (families forgotten). Returns NULL when nothing was written. */
char *metrics_take(struct metrics *m, size_t *len);

/* Writes `s` with the label-value escaping (\\, \", \n) into out (cap bytes, truncating,
 * always NUL-terminated when cap > 0); returns the length the full escape needs. For tests
 * and callers composing text by hand. */
size_t metrics_escape_label(char *out, size_t cap, const char *s);

#endif
