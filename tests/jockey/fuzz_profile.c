/* fuzz_profile.c - libFuzzer target for the profile reader (jm/profile.h): whatever the bytes of
 * a profile file, a rejection with a reason that leaves the target untouched, or a profile that
 * writes back to JSON, reads again identically and feeds the job simulator. Never a crash, a leak
 * or an unbounded allocation. Built with -DPADDOCK_FUZZ=ON (clang). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "jm/jsim.h"
#include "jm/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct profile p, q;
    char msg[256];
    profile_init(&p);
    int rc = profile_from_json(&p, (const char *)data, size, msg, sizeof msg);
    if (rc != 0) {
        if (p.job != NULL || p.nstages != 0 || msg[0] == '\0')
            abort(); /* untouched, and says why */
        return 0;
    }
    char *text = profile_to_json(&p);
    if (text == NULL)
        abort();
    profile_init(&q);
    if (profile_from_json(&q, text, strlen(text), msg, sizeof msg) != 0 || q.nstages != p.nstages ||
        strcmp(q.job, p.job) != 0)
        abort(); /* what we write we can read */
    mem_free(text);
    /* A one-task-per-stage job over the profile's stages simulates to completion. */
    int S = p.nstages < 64 ? p.nstages : 64;
    jsim_job_t *j = jsim_job_new(S, S);
    const char **names = calloc((size_t)S, sizeof *names);
    if (j != NULL && names != NULL) {
        for (int s = 0; s < S; s++) {
            jsim_job_set_task(j, s, s, 1.0);
            names[s] = p.stages[s].name;
        }
        struct jsim_model m;
        struct progress_model pm;
        int *n = calloc((size_t)S, sizeof *n);
        if (n != NULL && jsim_job_finalize(j, NULL, 0) == 0 &&
            jsim_model_init(&m, j, names, &p) == 0) {
            for (int s = 0; s < S; s++)
                n[s] = 1;
            if (progress_init(&pm, PROGRESS_VERTEXFRAC, S, n, NULL, NULL, NULL) == 0) {
                struct jsim_rng rng;
                struct jsim_run_stats st;
                jsim_rng_seed(&rng, 1);
                if (jsim_run(j, &m, 4, &pm, &rng, NULL, &st) != 0 || !(st.makespan >= 0))
                    abort();
                progress_close(&pm);
            }
            jsim_model_close(&m);
        }
        free(n);
    }
    free(names);
    jsim_job_destroy(&j);
    profile_close(&q);
    profile_close(&p);
    return 0;
}
