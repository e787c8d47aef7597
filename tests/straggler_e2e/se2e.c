/* se2e.c - helpers of the straggler end-to-end tests (see se2e.h). */
#include "tests/straggler_e2e/se2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <cmocka.h>

#include "tests/e2e/e2e.h"

int64_t se2e_wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void se2e_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void se2e_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

void se2e_submit(const char *path, char id[64])
{
    struct e2e_run r;
    e2e_paddock(&r, 30, "submit '%s'", path);
    if (r.status != 0)
        fprintf(stderr, "submit: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    size_t n = strcspn(r.out, "\n");
    assert_true(n > 2 && n < 64);
    memcpy(id, r.out, n);
    id[n] = '\0';
    assert_memory_equal(id, "j-", 2);
    e2e_run_close(&r);
}

long long se2e_state_int(const char *job, const char *key)
{
    json_t *st = e2e_job_file(job, "state.json");
    const json_t *v = json_object_get(st, key);
    long long x = json_is_integer(v) ? (long long)json_integer_value(v) : -1;
    json_decref(st);
    return x;
}

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
