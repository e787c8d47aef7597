/* fuzz_spec.c - libFuzzer target for the job spec parser (jm/spec.h): whatever the bytes, a
 * rejection with a message or a spec that builds a DAG and computes priorities; never a crash,
 * a leak or an unbounded allocation. Built with -DPADDOCK_FUZZ=ON (clang). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jm/dag.h"
#include "jm/priority.h"
#include "jm/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct spec_limits lim;
    spec_limits_default(&lim);
    lim.max_bytes = 1 << 20;
    lim.max_tasks = 5000;
    char msg[512];
    struct spec *s = NULL;
    int rc = spec_parse((const char *)data, size, &lim, &s, msg, sizeof msg);
    if (rc != 0) {
        if (s != NULL || msg[0] == '\0' || strlen(msg) >= sizeof msg)
            abort(); /* a rejection always leaves no spec and says why */
        return 0;
    }
    dag_t *d = NULL;
    if (dag_new(s, &d) == 0) {
        double *sp = calloc(s->nstages + 1, sizeof *sp);
        if (sp != NULL)
            priority_compute(d, NULL, NULL, sp);
        /* run the whole graph: every task must become ready exactly once */
        size_t guard = 0;
        while (!dag_done(d) && guard++ <= s->ntasks) {
            size_t n;
            const size_t *r = dag_ready(d, &n);
            if (n == 0)
                abort(); /* a validated spec never deadlocks */
            size_t t = r[0];
            dag_start(d, t);
            dag_succeed(d, t, NULL);
        }
        if (!dag_done(d))
            abort();
        free(sp);
        dag_destroy(&d);
    }
    spec_destroy(&s);
    return 0;
}
