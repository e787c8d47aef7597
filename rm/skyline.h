/* skyline.h - a recurring job's resource model R*: the tight envelope over the skylines of its
 * last runs, fitted with an LP (Morpheus §5) (pure; GLPK solves it).
 *
 * A skyline is the tokens a run used per time step, from its start (step k covers
 * [k·step, (k+1)·step)), as an average over the step. Runs are aligned at their start; a shorter
 * run is padded with zeros.
 *
 * From Morpheus §5, for N runs s_{i,k} and the allocation s = (s_1 .. s_K):
 *  - over-allocation A_o(s) = 1/N Σ_i Σ_k (s_k − s_{i,k})+;
 *  - under-allocation A_u(s) = 1/N Σ_i D_{i,K}, with the debt D_{i,k} = (D_{i,k−1} + s_{i,k} −
 *    s_k)+, D_{i,0} = 0 (a shortage can be caught up later, a surplus is lost);
 *  - against lazy solutions, ε >= 1/N Σ_i Σ_k (s_{i,k} − s_k)+ / Σ_k s_{i,k};
 *  - minimise α·A_o + (1 − α)·A_u + β·ε, where β = 0.1·V and V is the optimum of the problem
 *    solved first without the β·ε term.
 * The non-linear terms become linear with one variable per (i, k) each; the LP has O(N·K)
 * variables and constraints. GLPK's simplex solves it, silently (no terminal output).
 */
#ifndef PADDOCK_RM_SKYLINE_H
#define PADDOCK_RM_SKYLINE_H

#include <stddef.h>
#include <stdint.h>

#define SKYLINE_MAX_STEPS 512 /* K: steps of one skyline (runs are resampled to fit) */
#define SKYLINE_MAX_RUNS  32  /* N: runs fitted together (the most recent ones) */
#define SKYLINE_ALPHA     0.5 /* α: weight of over- against under-allocation */
#define SKYLINE_BETA      0.1 /* β = SKYLINE_BETA·V */

/* Resamples a skyline of n steps of `step_in` ms to steps of `step_out` ms (a multiple or a
 * divisor of step_in, or neither: the value of an output step is the time-weighted average of
 * the input over it). Writes at most `cap` values to out and returns how many: ceil(n·step_in /
 * step_out) capped at cap. step_in, step_out > 0. */
size_t skyline_resample(const double *in, size_t n, uint32_t step_in, double *out, size_t cap,
                        uint32_t step_out);

/* What the fit found: public value. */
struct skyline_fit_info {
    double over;    /* A_o of the result, token-steps per run */
    double under;   /* A_u of the result */
    double epsilon; /* ε of the result */
    double value;   /* V, the optimum without the regulariser */
};

/* Fits R* to runs[0..nruns) (each runs[i] has k values, tokens, >= 0; 1 <= nruns <=
 * SKYLINE_MAX_RUNS, 1 <= k <= SKYLINE_MAX_STEPS) with weight alpha in [0, 1]; writes s[0..k)
 * (tokens, >= 0) and fills *info (may be NULL). With one run, R* is that run. Returns 0,
 * ERR_INVAL (sizes, alpha or a negative or non-finite value), ERR_NOMEM, or ERR_STATE when the
 * solver does not reach an optimum (then s is untouched). */
int skyline_fit(const double *const *runs, size_t nruns, size_t k, double alpha, double *s,
                struct skyline_fit_info *info);

#endif
