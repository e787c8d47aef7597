/* skyline.c - resampling skylines and fitting R* with GLPK (see skyline.h).
 *
 * The LP (Morpheus §5 made linear), for runs i < N, steps k < K, run totals S_i = Σ_k s_{i,k}:
 *   s_k >= 0                         the allocation (the answer)
 *   o_{i,k} >= s_k − s_{i,k}, >= 0   over-allocation
 *   D_{i,k} >= D_{i,k−1} + s_{i,k} − s_k, >= 0 (D_{i,−1} = 0)   debt
 *   u_{i,k} >= s_{i,k} − s_k, >= 0   instantaneous under-allocation
 *   ε >= 1/N Σ_{i: S_i > 0} Σ_k u_{i,k} / S_i
 *   f = α/N Σ o + (1 − α)/N Σ_i D_{i,K−1}
 * Each lower bound is tight at an optimum because the objective never rewards a larger o, D or
 * u, so the linearisation is lossless. First minimise f (V = its optimum), then f + β·ε with
 * β = SKYLINE_BETA·V.
 *
 * Written that way the LP has 3·N·K rows and GLPK's simplex needs minutes for 32 × 512. Two
 * equivalent forms make it small:
 *  - The o and u rows only compare s_k with the N values of step k, so they fold into bounded
 *    columns: with the step's distinct values 0 <= v_1 < .. < v_m, s_k = Σ_j w_{j,k} where
 *    w_{j,k} in [0, v_j − v_{j−1}] is the part of s_k between two consecutive values (the last
 *    one unbounded). On segment j, Σ_i o_{i,k} grows at the count of runs below the segment and
 *    N·ε falls at Σ 1/S_i over the runs above it. Both are convex in s_k, so an optimum fills
 *    the segments in order and the fold is lossless.
 *  - The debt is Lindley's recursion, whose last value is the largest suffix sum:
 *    D_{i,K} = C_{i,K} − A_K + max(0, max_k (A_k − C_{i,k})), with the cumulative allocation
 *    A_k = Σ_{t<=k} s_t and cumulative use C_{i,k}. One column M_i >= A_k − C_{i,k}, >= 0 per
 *    run replaces the N·K debt columns, and s_k = A_k − A_{k−1}.
 * What is left: N·K rows of two entries (M_i − A_k >= −C_{i,k}), K rows tying A_k − A_{k−1} to
 * the step's segments, and f's row; bounded columns cost the simplex nothing as rows.
 *
 * When V = 0 (α = 1, identical runs, any perfect fit) the paper's β is 0 and the regulariser
 * vanishes: every s under the pointwise minimum then fits "perfectly" when α = 1, s = 0
 * included. We take the limit β → 0+ instead, which is a lexicographic solve: keep f at its
 * optimum (a row f <= V + tolerance) and minimise ε alone. That is continuous with the paper's
 * rule for small V and makes the answer the tightest envelope the runs justify.
 */
#include "rm/skyline.h"

#include "common/err.h"
#include "common/mem.h"

#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- resampling ---- */

size_t skyline_resample(const double *in, size_t n, uint32_t step_in, double *out, size_t cap,
                        uint32_t step_out)
{
    if (in == NULL || out == NULL || n == 0 || cap == 0 || step_in == 0 || step_out == 0)
        return 0;
    /* Integer milliseconds throughout, so step boundaries are exact; n·step_in is bounded by
     * saturating (the output is capped anyway). */
    uint64_t end = (uint64_t)n > UINT64_MAX / step_in ? UINT64_MAX : (uint64_t)n * step_in;
    uint64_t m = end / step_out + (end % step_out != 0);
    if (m > cap)
        m = cap;
    size_t i = 0; /* first input step that may overlap the current output step */
    for (uint64_t j = 0; j < m; j++) {
        uint64_t t0 = j * step_out, t1 = t0 + step_out;
        double sum = 0;
        while (i < n && (uint64_t)(i + 1) * step_in <= t0)
            i++;
        for (size_t q = i; q < n; q++) {
            uint64_t a = (uint64_t)q * step_in, b = a + step_in;
            if (a >= t1)
                break;
            uint64_t lo = a > t0 ? a : t0, hi = b < t1 ? b : t1;
            sum += in[q] * (double)(hi - lo);
        }
        /* Past the run's end it used nothing: the last step averages over its whole length,
         * so token-seconds are conserved. */
        out[j] = sum / step_out;
    }
    return (size_t)m;
}

/* ---- the fit ---- */

/* A_o, A_u and ε of an allocation, straight from the definitions. */
static void skyline__measure(const double *const *runs, size_t nruns, size_t k, const double *s,
                             struct skyline_fit_info *info)
{
    double over = 0, under = 0, eps = 0;
    for (size_t i = 0; i < nruns; i++) {
        double debt = 0, lack = 0, total = 0;
        for (size_t q = 0; q < k; q++) {
            double d = s[q] - runs[i][q];
            if (d > 0)
                over += d;
            else
                lack -= d;
            debt += runs[i][q] - s[q];
            if (debt < 0)
                debt = 0;
            total += runs[i][q];
        }
        under += debt;
        if (total > 0)
            eps += lack / total;
    }
    info->over = over / nruns;
    info->under = under / nruns;
    info->epsilon = eps / nruns;
}

/* The problem and its arrays, freed together. */
struct skyline__lp {
    glp_prob *P;
    int *ia, *ja;
    double *ar;
    double *seg_f, *seg_e; /* per segment column: its cost in f, its slope in ε */
};

static void skyline__lp_free(struct skyline__lp *lp)
{
    if (lp->P)
        glp_delete_prob(lp->P);
    mem_free(lp->ia);
    mem_free(lp->ja);
    mem_free(lp->ar);
    mem_free(lp->seg_f);
    mem_free(lp->seg_e);
}

/* One run's value at a step, with 1/S_i (0 for a run that used nothing: not in ε). */
struct skyline__val {
    double v, inv;
};

static int skyline__cmp(const void *a, const void *b)
{
    double x = ((const struct skyline__val *)a)->v, y = ((const struct skyline__val *)b)->v;
    return (x > y) - (x < y);
}

/* Solves P from its current basis; 0 or ERR_STATE. */
static int skyline__solve(glp_prob *P, int meth)
{
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = meth;
    /* No presolver: it discards the basis, and the second solve starts from the first's. */
    parm.presolve = GLP_OFF;
    if (glp_simplex(P, &parm) != 0 || glp_get_status(P) != GLP_OPT)
        return ERR_STATE;
    return 0;
}

int skyline_fit(const double *const *runs, size_t nruns, size_t k, double alpha, double *s,
                struct skyline_fit_info *info)
{
    if (runs == NULL || s == NULL || nruns < 1 || nruns > SKYLINE_MAX_RUNS || k < 1 ||
        k > SKYLINE_MAX_STEPS || !(alpha >= 0 && alpha <= 1))
        return ERR_INVAL;
    double inv[SKYLINE_MAX_RUNS];
    double scale = 0;
    for (size_t i = 0; i < nruns; i++) {
        if (runs[i] == NULL)
            return ERR_INVAL;
        double total = 0;
        for (size_t q = 0; q < k; q++) {
            if (!isfinite(runs[i][q]) || runs[i][q] < 0)
                return ERR_INVAL;
            total += runs[i][q];
        }
        if (!isfinite(total))
            return ERR_INVAL;
        inv[i] = total > 0 ? 1 / total : 0;
        scale += total / nruns;
    }
    struct skyline_fit_info local;
    if (info == NULL)
        info = &local;
    if (nruns == 1) { /* the fit is exact: the run itself, with nothing over or under */
        memmove(s, runs[0], k * sizeof *s);
        memset(info, 0, sizeof *info);
        return 0;
    }

    const int N = (int)nruns, K = (int)k, NK = N * K;
    const size_t seg_cap = (size_t)K * (N + 1);
    /* Columns (1-based): A_k, M_i, then the segments of each step. Rows: M_i >= A_k − C_ik by
     * run and step, one row per step tying s_k = A_k − A_(k−1) to its segments, and f's row. */
    const int c_a = 1, c_m = 1 + K, c_w = c_m + N;
    const int r_m = 1, r_s = r_m + NK, r_f = r_s + K;
    const size_t nz_cap = 2 * (size_t)NK + 2 * (size_t)K + 2 * seg_cap + N + 1;

    struct skyline__lp lp = {0};
    lp.ia = mem_calloc(nz_cap + 1, sizeof *lp.ia);
    lp.ja = mem_calloc(nz_cap + 1, sizeof *lp.ja);
    lp.ar = mem_calloc(nz_cap + 1, sizeof *lp.ar);
    lp.seg_f = mem_calloc(seg_cap, sizeof *lp.seg_f);
    lp.seg_e = mem_calloc(seg_cap, sizeof *lp.seg_e);
    if (!lp.ia || !lp.ja || !lp.ar || !lp.seg_f || !lp.seg_e) {
        skyline__lp_free(&lp);
        return ERR_NOMEM;
    }
    int ne = 0;
#define SKYLINE__NZ(row, col, val)                                                                 \
    do {                                                                                           \
        ne++;                                                                                      \
        lp.ia[ne] = (row);                                                                         \
        lp.ja[ne] = (col);                                                                         \
        lp.ar[ne] = (val);                                                                         \
    } while (0)

    int old_term = glp_term_out(GLP_OFF);
    lp.P = glp_create_prob();
    glp_prob *P = lp.P;
    glp_set_obj_dir(P, GLP_MIN);
    glp_add_rows(P, NK + K + 1);
    glp_add_cols(P, K + N);
    for (int c = 1; c < c_w; c++)
        glp_set_col_bnds(P, c, GLP_LO, 0, 0);
    /* Σ_i D_iK = Σ_i (C_iK + M_i) − N·A_K; the constant goes into the objective and f's row. */
    double debt_const = 0;
    for (int i = 0; i < N; i++) {
        double c = 0;
        for (int q = 0; q < K; q++) {
            c += runs[i][q];
            /* M_i − A_k >= −C_ik */
            glp_set_row_bnds(P, r_m + i * K + q, GLP_LO, -c, 0);
            SKYLINE__NZ(r_m + i * K + q, c_m + i, 1);
            SKYLINE__NZ(r_m + i * K + q, c_a + q, -1);
        }
        debt_const += c;
        glp_set_obj_coef(P, c_m + i, (1 - alpha) / N);
        SKYLINE__NZ(r_f, c_m + i, (1 - alpha) / N);
    }
    debt_const *= (1 - alpha) / N;
    glp_set_obj_coef(P, 0, debt_const);
    glp_set_obj_coef(P, c_a + K - 1, -(1 - alpha));
    if (alpha < 1)
        SKYLINE__NZ(r_f, c_a + K - 1, -(1 - alpha));
    int nseg = 0;
    for (int q = 0; q < K; q++) {
        /* The step's values in order, and Σ 1/S_i over each suffix (the runs above). */
        struct skyline__val v[SKYLINE_MAX_RUNS];
        double above[SKYLINE_MAX_RUNS + 1];
        for (int i = 0; i < N; i++)
            v[i] = (struct skyline__val){runs[i][q], inv[i]};
        qsort(v, (size_t)N, sizeof v[0], skyline__cmp);
        above[N] = 0;
        for (int i = N - 1; i >= 0; i--)
            above[i] = above[i + 1] + v[i].inv;
        /* A_k − A_(k−1) − Σ_j w_jk = 0 */
        glp_set_row_bnds(P, r_s + q, GLP_FX, 0, 0);
        SKYLINE__NZ(r_s + q, c_a + q, 1);
        if (q > 0)
            SKYLINE__NZ(r_s + q, c_a + q - 1, -1);
        double prev = 0;
        int first = nseg;
        for (int i = 0; i <= N; i++) {
            if (i < N && !(v[i].v > prev))
                continue; /* equal values share a breakpoint */
            /* Segment (prev, v_i] (unbounded past the largest): i runs lie below it. */
            lp.seg_f[nseg] = alpha / N * i;
            lp.seg_e[nseg] = -above[i] / N;
            nseg++;
            if (i < N)
                prev = v[i].v;
        }
        glp_add_cols(P, nseg - first);
        prev = 0;
        int j = first;
        for (int i = 0; i <= N; i++) {
            if (i < N && !(v[i].v > prev))
                continue;
            int col = c_w + j;
            if (i < N) {
                glp_set_col_bnds(P, col, GLP_DB, 0, v[i].v - prev);
                prev = v[i].v;
            } else {
                glp_set_col_bnds(P, col, GLP_LO, 0, 0);
            }
            glp_set_obj_coef(P, col, lp.seg_f[j]);
            SKYLINE__NZ(r_s + q, col, -1);
            if (lp.seg_f[j] != 0)
                SKYLINE__NZ(r_f, col, lp.seg_f[j]);
            j++;
        }
    }
    glp_set_row_bnds(P, r_f, GLP_FR, 0, 0); /* only bounded in the lexicographic case */
#undef SKYLINE__NZ
    glp_load_matrix(P, ne, lp.ia, lp.ja, lp.ar);

    /* The second solve starts from the first one's optimum, which stays primal feasible, so it
     * takes few iterations. The primal simplex on the scaled problem was the fastest first solve
     * measured (32 × 512: about 2 s, against 4 s with the dual simplex and minutes unfolded). */
    glp_scale_prob(P, GLP_SF_AUTO);
    int rc = skyline__solve(P, GLP_PRIMAL);
    double V = rc == 0 ? glp_get_obj_val(P) : 0;
    if (rc == 0) {
        double tol = 1e-9 * (1 + scale);
        if (V > tol) {
            double beta = SKYLINE_BETA * V;
            for (int j = 0; j < nseg; j++)
                glp_set_obj_coef(P, c_w + j, lp.seg_f[j] + beta * lp.seg_e[j]);
        } else {
            /* β = 0.1·V is 0 here: minimise ε among the optima (see the top of this file). */
            glp_set_row_bnds(P, r_f, GLP_UP, 0, V + tol - debt_const);
            glp_set_obj_coef(P, 0, 0);
            for (int c = 1; c < c_w; c++)
                glp_set_obj_coef(P, c, 0);
            for (int j = 0; j < nseg; j++)
                glp_set_obj_coef(P, c_w + j, lp.seg_e[j]);
        }
        rc = skyline__solve(P, GLP_PRIMAL);
    }
    if (rc == 0) {
        double a_prev = 0;
        for (int q = 0; q < K; q++) {
            double a = glp_get_col_prim(P, c_a + q);
            s[q] = a - a_prev > 0 ? a - a_prev : 0; /* the simplex may leave −1e-15 */
            a_prev = a;
        }
        skyline__measure(runs, nruns, k, s, info);
        info->value = V < 0 ? 0 : V;
    }
    skyline__lp_free(&lp);
    glp_term_out(old_term);
    return rc;
}
