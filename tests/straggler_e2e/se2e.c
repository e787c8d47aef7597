/* se2e.c - helpers of the straggler end-to-end tests (see se2e.h). */
#include "tests/straggler_e2e/se2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/e2e/e2e.h"

long long se2e_correction(const char *job, const char *key)
{
    json_t *st = e2e_job_file(job, "state.json");
    const json_t *v = json_object_get(json_object_get(st, "corrections"), key);
    long long x = json_is_integer(v) ? (long long)json_integer_value(v) : -1;
    json_decref(st);
    return x;
}

int se2e_attempts(json_t *report, const char *task, const char *state, char nodes[][64])
{
    const json_t *att = json_object_get(report, "attempts");
    size_t i;
    const json_t *a;
    int n = 0;
    json_array_foreach(att, i, a)
    {
        const char *t = json_string_value(json_object_get(a, "task"));
        const char *s = json_string_value(json_object_get(a, "state"));
        if (!t || strcmp(t, task) != 0 || (state && (!s || strcmp(s, state) != 0)))
            continue;
        if (nodes && n < 8)
            snprintf(nodes[n], 64, "%s", json_string_value(json_object_get(a, "node")));
        n++;
    }
    return n;
}
