/* matrix.h - the PN's wait-time matrix (Apollo §3.2). Pure: `now` comes from the caller.
 *
 * "Each cell corresponding to the expected wait time for a task that requires a certain amount
 * of CPU and memory ... The algorithm simulates local task execution and evaluates how long a
 * future task with a given CPU/memory requirement would wait on this PN to be executed."
 *
 * Rows are CPU bins, columns memory bins. Cell (c, m) is the wait of a hypothetical regular
 * task needing (cpu_bins[c], mem_bins[m]) appended to the regular queue: the running regular
 * tasks' remaining estimates and the queued regular tasks are simulated forward in queue order
 * with backfill (queue_simulate), and the probe starts at the earliest time from which it fits
 * for good (its own runtime is unknown, so it may not slip into a gap that closes later).
 * Opportunistic work is not counted: it yields to regular tasks. A request larger than the node
 * gets MATRIX_NEVER.
 */
#ifndef PADDOCK_PN_MATRIX_H
#define PADDOCK_PN_MATRIX_H

#include <stddef.h>

#include "pn/queue.h"

#define MATRIX_MAX_BINS 16
#define MATRIX_NEVER    (-1.0) /* the cell value of a request the node can never run */

typedef struct matrix {
    size_t ncpu, nmem;                               /* public: bins in use */
    double cpu_bins[MATRIX_MAX_BINS];                /* public: cores, ascending */
    double mem_bins[MATRIX_MAX_BINS];                /* public: MiB, ascending */
    double wait_s[MATRIX_MAX_BINS][MATRIX_MAX_BINS]; /* public: [cpu][mem] seconds or NEVER */
    double computed_at;                              /* public: the `now` of the last computation */
} matrix_t;

/* Sets the bins (copied). Default bins when ncpu or nmem is 0: 0.5,1,2,4,8,16 cores and
 * 1,2,4,8,16,32,64 GiB. ERR_INVAL when a count exceeds MATRIX_MAX_BINS or bins are not
 * positive and strictly ascending. Cells start at 0. */
int matrix_init(matrix_t *m, const double *cpu_bins, size_t ncpu, const double *mem_bins,
                size_t nmem);

/* Parses a comma-separated ascending list ("0.5,1,2,4") into at most MATRIX_MAX_BINS values.
 * Returns the count, or ERR_PARSE / ERR_RANGE with a reason in msg. */
int matrix_parse_bins(const char *s, double *out, char *msg, size_t cap);

/* Recomputes every cell from the queue at `now`, using `scratch` (a profile initialised at the
 * node's capacity; reused between calls). Returns 0 or ERR_NOMEM (cells unchanged). */
int matrix_compute(matrix_t *m, const queue_t *q, double now, loadprof_t *scratch);

/* The wait for a request (cpu, mem_mb): the cell of the smallest bins that cover it (Apollo's
 * lookup); MATRIX_NEVER past the largest bins. */
double matrix_lookup(const matrix_t *m, double cpu, double mem_mb);

#endif
