/* progress.h - job progress indicators (Jockey §4.2, §5.4).
 *
 * A progress indicator maps the number of finished tasks per stage to a value in [0, 1] that
 * indexes the remaining-time table C(p, a) (jm/jsim.h). The same indicator must be used to build
 * the table and to read it at run time.
 *
 *  - PROGRESS_TOTALWORK_Q (the default, "totalworkWithQ"): sum_s f_s * (Q_s + T_s), normalised by
 *    sum_s (Q_s + T_s); Q_s and T_s are the total time stage s's tasks spent queued and
 *    executing in a previous run (the profile).
 *  - PROGRESS_TOTALWORK: the same without Q_s.
 *  - PROGRESS_VERTEXFRAC: the fraction of all tasks finished.
 *  - PROGRESS_CP: 1 - S_t / S_0, the fraction of the critical path done, with S_t the remaining
 *    critical path of the Amdahl model (jm/amdahl.h).
 *
 * The first three are linear: each finished task of stage s adds progress_task_weight(pm, s),
 * which lets a simulator keep p incrementally. A stage whose weights are all zero (no profile
 * data) falls back to vertexfrac weights for the whole indicator. Pure; public value struct.
 */
#ifndef PADDOCK_JM_PROGRESS_H
#define PADDOCK_JM_PROGRESS_H

#include "jm/amdahl.h"

enum progress_kind {
    PROGRESS_TOTALWORK_Q = 0,
    PROGRESS_TOTALWORK,
    PROGRESS_VERTEXFRAC,
    PROGRESS_CP,
};

struct progress_model {
    enum progress_kind kind; /* read-only */
    int nstages;             /* read-only */
    int *n;                  /* private: tasks per stage */
    double *w;               /* private: progress added per finished task of stage s */
    const struct amdahl *am; /* private: BORROWED for PROGRESS_CP */
};

/* Builds an indicator. n[s] tasks per stage; Q and T per stage (seconds; may be NULL for
 * vertexfrac and CP); am (borrowed, must outlive the model) is required for PROGRESS_CP.
 * Returns 0, ERR_INVAL or ERR_NOMEM. */
int progress_init(struct progress_model *pm, enum progress_kind kind, int nstages, const int *n,
                  const double *Q, const double *T, const struct amdahl *am);
/* Frees the arrays; the struct is then zeroed. NULL-safe. */
void progress_close(struct progress_model *pm);

/* Progress in [0, 1] for done[s] finished tasks per stage. */
double progress_eval(const struct progress_model *pm, const int *done);

/* 1 for the linear kinds. */
int progress_is_linear(const struct progress_model *pm);

/* Increment of a linear indicator per finished task of stage s (0 for CP). */
double progress_task_weight(const struct progress_model *pm, int s);

/* "totalworkWithQ" etc.; NULL for an unknown kind. progress_kind_parse returns 0 or ERR_INVAL. */
const char *progress_kind_name(enum progress_kind kind);
int progress_kind_parse(const char *name, enum progress_kind *out);

#endif
