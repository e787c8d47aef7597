/* priority.c - stage priorities by longest path, input size within a stage (see priority.h). */
#include "jm/priority.h"

#include <stdint.h>
#include <stdlib.h>

#include "common/err.h"
#include "common/mem.h"

/* Node numbering of the barrier graph (as in spec_graph.c): tasks [0,n), stage gates
 * [n, n+ns), stage-done nodes [n+ns, n+2ns). Successors: task -> its explicit dependents and its
 * stage's done node; done(j) -> gate(m) for stages m waiting for j; gate(m) -> m's tasks and
 * done(m). A node's bottom level is its weight (task runtime; 0 otherwise) plus the largest
 * bottom level among its successors. */
struct priority__frame {
    size_t node;
    size_t next; /* next successor to visit */
};

static size_t priority__nsucc(const dag_t *dag, size_t v, size_t n, size_t ns)
{
    const struct spec *s = dag_spec(dag);
    size_t k;
    if (v < n) {
        dag_dependents(dag, v, &k);
        return k + 1;
    }
    if (v < n + ns)
        return s->stages[v - n].ntasks + 1;
    dag_stage_dependents(dag, v - n - ns, &k);
    return k;
}

static size_t priority__succ(const dag_t *dag, size_t v, size_t i, size_t n, size_t ns)
{
    const struct spec *s = dag_spec(dag);
    size_t k;
    if (v < n) {
        const size_t *d = dag_dependents(dag, v, &k);
        return i < k ? d[i] : n + ns + s->tasks[v].stage;
    }
    if (v < n + ns) {
        const struct spec_stage *st = &s->stages[v - n];
        return i < st->ntasks ? st->tasks[i] : v + ns;
    }
    const size_t *d = dag_stage_dependents(dag, v - n - ns, &k);
    return n + d[i];
}

int priority_compute(const dag_t *dag, const double *runtime_s, double *task_bl, double *stage_prio)
{
    const struct spec *s = dag_spec(dag);
    size_t n = s->ntasks, ns = s->nstages, total = n + 2 * ns;
    double *bl = mem_calloc(total, sizeof *bl);
    unsigned char *seen = mem_calloc(total, 1);
    struct priority__frame *stack = mem_calloc(total + 1, sizeof *stack);
    if (bl == NULL || seen == NULL || stack == NULL) {
        mem_free(bl);
        mem_free(seen);
        mem_free(stack);
        return ERR_NOMEM;
    }
    for (size_t root = 0; root < total; root++) {
        if (seen[root])
            continue;
        size_t top = 0;
        stack[top++] = (struct priority__frame){root, 0};
        seen[root] = 1;
        while (top > 0) {
            struct priority__frame *f = &stack[top - 1];
            if (f->next < priority__nsucc(dag, f->node, n, ns)) {
                size_t w = priority__succ(dag, f->node, f->next++, n, ns);
                if (!seen[w]) { /* acyclic (validated), so a seen node is finished */
                    seen[w] = 1;
                    stack[top++] = (struct priority__frame){w, 0};
                }
                continue;
            }
            size_t v = f->node;
            double best = 0;
            size_t k = priority__nsucc(dag, v, n, ns);
            for (size_t i = 0; i < k; i++) {
                double b = bl[priority__succ(dag, v, i, n, ns)];
                if (b > best)
                    best = b;
            }
            if (v < n)
                best += runtime_s != NULL ? runtime_s[v] : s->tasks[v].runtime_s;
            bl[v] = best;
            top--;
        }
    }
    if (task_bl != NULL)
        for (size_t i = 0; i < n; i++)
            task_bl[i] = bl[i];
    if (stage_prio != NULL)
        for (size_t j = 0; j < ns; j++)
            stage_prio[j] = bl[n + j];
    mem_free(bl);
    mem_free(seen);
    mem_free(stack);
    return 0;
}

int priority_before(const dag_t *dag, const double *stage_prio, size_t a, size_t b)
{
    const struct spec *s = dag_spec(dag);
    double pa = stage_prio[s->tasks[a].stage], pb = stage_prio[s->tasks[b].stage];
    if (pa != pb)
        return pa > pb;
    if (s->tasks[a].input_bytes != s->tasks[b].input_bytes)
        return s->tasks[a].input_bytes > s->tasks[b].input_bytes;
    return a < b;
}

/* qsort has no context argument: a merge sort keeps this reentrant and stable. */
static void priority__merge(const dag_t *dag, const double *sp, size_t *v, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    priority__merge(dag, sp, v, tmp, h);
    priority__merge(dag, sp, v + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = priority_before(dag, sp, v[j], v[i]) ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    for (size_t x = 0; x < n; x++)
        v[x] = tmp[x];
}

void priority_sort(const dag_t *dag, const double *stage_prio, size_t *tasks, size_t n)
{
    size_t *tmp = mem_calloc(n + 1, sizeof *tmp);
    if (tmp != NULL) {
        priority__merge(dag, stage_prio, tasks, tmp, n);
        mem_free(tmp);
        return;
    }
    /* No memory for the merge buffer: insertion sort (correct, slower). */
    for (size_t i = 1; i < n; i++) {
        size_t x = tasks[i], j = i;
        while (j > 0 && priority_before(dag, stage_prio, x, tasks[j - 1])) {
            tasks[j] = tasks[j - 1];
            j--;
        }
        tasks[j] = x;
    }
}
