/* grain.h - token units of a finer grain for the JM's dispatcher (issue 25, "spare capacity
 * filled"; Apollo §2.1, §3.5).
 *
 * The RM grants whole tokens (rm/arbiter.h: a token is the right to run one regular task of at
 * most a fixed CPU and memory). Counted in whole tokens, a task of a quarter of a token's CPU
 * costs a whole one, so a job granted one token ran one 0.25-cpu task on it and left three
 * quarters of the token idle (40 such jobs on 8 one-cpu tokens used 3.25-4.0 cpus). The JM's
 * dispatcher (jm/dispatch.h) counts in units of 1/GRAIN_UNITS of a token instead: a task costs
 * its largest fraction of a token, rounded up to the unit, so a token runs as many tasks as fit
 * in it in every dimension, and never more (regular work stays within the grant's cores and
 * memory). The grant and the opportunistic allowance are converted to the same units.
 *
 * Pure and inline, so the dispatcher's callers and the tests use one rule. */
#ifndef PADDOCK_JM_GRAIN_H
#define PADDOCK_JM_GRAIN_H

#include <math.h>
#include <stdint.h>

#include "rm/arbiter.h"

#define GRAIN_UNITS 100u /* dispatcher units per token */

/* A task's cost in units: ceil(GRAIN_UNITS x max(cpu / token_cpu, mem_mb / token_mem_mb)), at
 * least 1, at most UINT32_MAX. A token size of 0 means the default (rm/arbiter.h). NaN or
 * negative resources count as nothing (1 unit): the spec's validation refuses them earlier. */
static inline uint32_t grain_task_units(double cpu, uint64_t mem_mb, double token_cpu,
                                        uint64_t token_mem_mb)
{
    if (!(token_cpu > 0))
        token_cpu = ARBITER_TOKEN_CPU_DEFAULT;
    if (token_mem_mb == 0)
        token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
    double fc = cpu > 0 ? cpu / token_cpu : 0;
    double fm = (double)mem_mb / (double)token_mem_mb;
    double u = ceil((fc > fm ? fc : fm) * (double)GRAIN_UNITS - 1e-6);
    if (!(u >= 1))
        return 1;
    return u >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* Whole tokens in units (saturating at UINT32_MAX). */
static inline uint32_t grain_units(uint32_t tokens)
{
    uint64_t u = (uint64_t)tokens * GRAIN_UNITS;
    return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* Units as whole tokens, rounded up: the tokens that cover them. */
static inline uint32_t grain_tokens(uint64_t units)
{
    uint64_t t = (units + GRAIN_UNITS - 1) / GRAIN_UNITS;
    return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

#endif
