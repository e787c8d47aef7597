/* test_e2e_fill.c - spare capacity filled (issue 25; Apollo §3.5): jobs without deadlines, each
 * twenty 0.25-cpu `sleep 2` tasks, on `paddock cluster up --rm 3 --pn 4 --pn-cpus 2` (8 tokens
 * of 1 cpu). A 0.25-cpu task used to cost a whole token, so 40 such jobs held 3.25-4.0 of the 8
 * cpus; the JM now packs tasks by their fraction of a token (jm/grain.h) and fills the rest
 * opportunistically.
 *
 * Measured from the jobs' own reports (report.json: each attempt's start and end, from the
 * JM's start): the cpus in use while some task of a started job had not started yet (all tasks
 * are ready at once: no edges), over 8 cpus, must be at least 90%. FILL_JOBS (default 12, the
 * CI size; the run is 40) sets the number of jobs. Skipped while paddock-jm is not
 * built. */
#include "tests/e2e/e2e.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NTASKS   20
#define TASK_CPU 0.25
#define CPUS     8.0
#define MAX_JOBS 64

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 3 --pn 4 --pn-cpus 2");
}

/* A change of the cpus in use (d_cpu) or of the tasks waiting (d_wait) at time t (seconds). */
struct ev {
    double t;
    double d_cpu;
    int d_wait;
};

static int ev_cmp(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* ev with room for `need` entries (grown as attempts are read: preempted ones run again). */
static struct ev *ev_room(struct ev *ev, size_t *cap, size_t need)
{
    if (need > *cap) {
        *cap = need * 2;
        ev = realloc(ev, *cap * sizeof *ev);
        assert_non_null(ev);
    }
    return ev;
}

static void test_spare_capacity_filled(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    const char *env = getenv("FILL_JOBS");
    int njobs = env != NULL ? atoi(env) : 12;
    if (njobs < 1 || njobs > MAX_JOBS)
        njobs = 12;
    char spec_path[1200];
    snprintf(spec_path, sizeof spec_path, "%s/fill.json", e2e_dir());
    FILE *f = fopen(spec_path, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\": 1, \"name\": \"fill\", \"tasks\": [\n");
    for (int k = 0; k < NTASKS; k++)
        fprintf(f,
                "  {\"id\": \"t%d\", \"cmd\": [\"sleep\", \"2\"], \"cpu\": %.2f, \"mem_mb\": 16, "
                "\"runtime_s\": 2}%s\n",
                k, TASK_CPU, k + 1 < NTASKS ? "," : "");
    fprintf(f, "]}\n");
    assert_int_equal(fclose(f), 0);

    char ids[MAX_JOBS][64];
    for (int j = 0; j < njobs; j++) {
        e2e_submit(spec_path, ids[j]);
    }

    size_t cap = (size_t)njobs * NTASKS * 4 + 16, nev = 0;
    struct ev *ev = calloc(cap, sizeof *ev);
    assert_non_null(ev);
    double t_first = INFINITY, t_last_end = 0;
    int attempts = 0;
    for (int j = 0; j < njobs; j++) {
        json_t *st = e2e_job_wait(ids[j], 300);
        if (st == NULL || strcmp(json_string_value(json_object_get(st, "state")), "succeeded") != 0)
            e2e_job_dump(ids[j]);
        assert_non_null(st);
        assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
        json_decref(st);
        json_t *rep = e2e_job_file(ids[j], "report.json");
        assert_non_null(rep);
        double t0 = (double)json_integer_value(json_object_get(rep, "started_ms")) / 1000.0;
        json_t *att = json_object_get(rep, "attempts");
        double first_start[NTASKS];
        for (int k = 0; k < NTASKS; k++)
            first_start[k] = INFINITY;
        for (size_t i = 0; i < json_array_size(att); i++) {
            json_t *a = json_array_get(att, i);
            json_t *s = json_object_get(a, "start_s"), *e = json_object_get(a, "end_s");
            const char *task = json_string_value(json_object_get(a, "task"));
            int k = -1;
            if (!json_is_number(s) || !json_is_number(e) || task == NULL ||
                sscanf(task, "t%d", &k) != 1 || k < 0 || k >= NTASKS)
                continue;
            double ts = t0 + json_number_value(s), te = t0 + json_number_value(e);
            if (!(te > ts))
                continue;
            attempts++;
            ev = ev_room(ev, &cap, nev + 2);
            ev[nev++] = (struct ev){ts, TASK_CPU, 0};
            ev[nev++] = (struct ev){te, -TASK_CPU, 0};
            if (ts < first_start[k])
                first_start[k] = ts;
            t_first = fmin(t_first, ts);
            t_last_end = fmax(t_last_end, te);
        }
        for (int k = 0; k < NTASKS; k++) {
            assert_true(isfinite(first_start[k])); /* every task ran */
            ev = ev_room(ev, &cap, nev + 2);
            ev[nev++] = (struct ev){t0, 0, +1};
            ev[nev++] = (struct ev){first_start[k], 0, -1};
        }
        json_decref(rep);
    }
    qsort(ev, nev, sizeof *ev, ev_cmp);
    /* cpu-seconds in use while tasks waited, over the cpus of that time */
    double cpu = 0, busy = 0, span = 0, work = 0;
    int waiting = 0;
    for (size_t i = 0; i < nev; i++) {
        if (i > 0) {
            double dt = ev[i].t - ev[i - 1].t;
            double used = fmin(cpu, CPUS);
            work += used * dt;
            if (waiting > 0) {
                busy += used * dt;
                span += dt;
            }
        }
        cpu += ev[i].d_cpu;
        waiting += ev[i].d_wait;
    }
    free(ev);
    double use = span > 0 ? busy / (CPUS * span) : 0;
    double whole = t_last_end - t_first;
    fprintf(stderr,
            "fill: %d jobs of %d x %.2f-cpu 2 s tasks: %.1f s from first start to last end "
            "(%.1f s of work at full use); while tasks waited (%.1f s): %.2f of %.0f cpus in use "
            "(%.1f%%); over the whole run %.1f%%; %d attempts ran\n",
            njobs, NTASKS, TASK_CPU, whole, work / CPUS, span, use * CPUS, CPUS, 100.0 * use,
            whole > 0 ? 100.0 * work / (CPUS * whole) : 0.0, attempts);
    assert_true(span > 0);
    assert_true(use >= 0.90);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spare_capacity_filled),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
