/* arbiter_sim_makespan.c - a job's makespan on a constant allocation by greedy list scheduling
 * (tools/sim/arbiter_sim_internal.h): the oracles and deadlines of `paddock-sim arbiter`. The
 * running tasks wait in common/heap.h, ordered by finish time and then task number. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/heap.h"
#include "common/mem.h"
#include "tools/sim/arbiter_sim_internal.h"

/* The ready set of a list scheduler, kept in bottom-level order (by_bl rank), so the scan for a
 * task that fits is in priority order. */
static void asm__ready_insert(uint32_t *ready, size_t *n, const uint32_t *rank, uint32_t node)
{
    size_t lo = 0, hi = *n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rank[ready[mid]] < rank[node])
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(ready + lo + 1, ready + lo, (*n - lo) * sizeof *ready);
    ready[lo] = node;
    (*n)++;
}

double arbiter_sim_makespan(const struct arbiter_sim_job *j, uint32_t k, int use_true,
                            uint32_t *peak)
{
    if (j->max_tok > k)
        return INFINITY;
    size_t n = j->n;
    uint32_t *left = mem_calloc(n, sizeof *left), *ready = mem_calloc(n, sizeof *ready);
    uint32_t *stack = mem_calloc(n, sizeof *stack);
    double *fin = mem_calloc(n, sizeof *fin); /* a running task's finish time */
    struct heap run; /* key: finish time; tie: the task, so equal times end in task order */
    heap_init(&run);
    double t = 0;
    if (left == NULL || ready == NULL || stack == NULL || fin == NULL ||
        heap_reserve(&run, n) != 0) {
        t = -1;
        goto out;
    }
    memcpy(left, j->npred, n * sizeof *left);
    size_t nready = 0, nstack = 0;
    uint32_t used = 0, top = 0;
    for (uint32_t v = 0; v < n; v++)
        if (left[v] == 0)
            stack[nstack++] = v;
    for (;;) {
        /* Nodes whose predecessors are done: barriers complete at once, tasks become ready. */
        while (nstack > 0) {
            uint32_t v = stack[--nstack];
            if (j->tok[v] > 0) {
                asm__ready_insert(ready, &nready, j->bl_rank, v);
                continue;
            }
            for (uint32_t e = j->succ_at[v]; e < j->succ_at[v + 1]; e++)
                if (--left[j->succ[e]] == 0)
                    stack[nstack++] = j->succ[e];
        }
        size_t w = 0;
        for (size_t i = 0; i < nready; i++) {
            uint32_t v = ready[i];
            if (used + j->tok[v] <= k) {
                used += j->tok[v];
                fin[v] = t + (use_true ? j->dur[v] : j->est[v]);
                /* room for every task was reserved, and a task runs once: it cannot fail */
                if (heap_push_tie(&run, heap_key_from_double(fin[v]), v, NULL) != 0) {
                    t = -1;
                    goto out;
                }
            } else {
                ready[w++] = v;
            }
        }
        nready = w;
        if (used > top)
            top = used;
        struct heap_entry e;
        if (!heap_pop(&run, &e))
            break;
        uint32_t node = (uint32_t)e.tie;
        t = fin[node];
        used -= j->tok[node];
        for (uint32_t x = j->succ_at[node]; x < j->succ_at[node + 1]; x++)
            if (--left[j->succ[x]] == 0)
                stack[nstack++] = j->succ[x];
    }
    if (peak != NULL)
        *peak = top;
out:
    mem_free(left);
    mem_free(ready);
    mem_free(stack);
    mem_free(fin);
    heap_close(&run);
    return t;
}
