/* amdahl.h - the Amdahl's-law model of a job's remaining time (Jockey §4.1, "Amdahl's Law").
 *
 * For each stage s: l_s the execution time of its longest task, L_s the longest path from the
 * end of stage s to the end of the job, T_s the total CPU time of its tasks, n_s its task count.
 * With f_s the fraction of stage s's tasks finished,
 *
 *   S_t = max over stages with f_s < 1 of (1 - f_s) * l_s + L_s      (remaining critical path)
 *   P_t = sum over stages with f_s < 1 of (1 - f_s) * T_s            (remaining work)
 *   remaining time with a tokens ~= S_t + P_t / a.
 *
 * The values come from the spec's estimates when there is no profile (the fallback) or from a
 * profile (the comparison policy); jsim_job_amdahl() fills them from either. Pure; a public value
 * struct whose arrays it owns (amdahl_init copies, amdahl_close frees).
 */
#ifndef PADDOCK_JM_AMDAHL_H
#define PADDOCK_JM_AMDAHL_H

struct amdahl {
    int nstages;   /* read-only */
    int *n;        /* read-only: tasks per stage */
    double *l;     /* read-only: longest task per stage (s) */
    double *L;     /* read-only: longest path from the end of the stage to the job's end (s) */
    double *T;     /* read-only: total CPU time per stage (s) */
    double S0, P0; /* read-only: S_t and P_t with nothing finished */
};

/* Copies the per-stage arrays (nstages >= 1; values finite and >= 0, n >= 0). Returns 0,
 * ERR_INVAL (bad argument; *am untouched) or ERR_NOMEM. */
int amdahl_init(struct amdahl *am, int nstages, const int *n, const double *l, const double *L,
                const double *T);
/* Frees the arrays; the struct is then zeroed. NULL-safe. */
void amdahl_close(struct amdahl *am);

/* S_t and P_t for `done[s]` finished tasks per stage (clamped to 0..n_s). */
double amdahl_serial(const struct amdahl *am, const int *done);
double amdahl_parallel(const struct amdahl *am, const int *done);

/* S_t + P_t / a (a < 1 is treated as 1). */
double amdahl_remaining(const struct amdahl *am, const int *done, double a);

#endif
