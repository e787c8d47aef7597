/* period.c - UTC period arithmetic and the plan's capped LCM (see period.h). */
#include "rm/period.h"

int64_t period_index(int64_t now_ms, int64_t period_ms, int64_t offset_ms)
{
    /* With 0 <= offset <= now, now − offset cannot overflow; out-of-contract arguments get −1
     * rather than a division by zero. */
    if (period_ms <= 0 || offset_ms < 0 || now_ms < offset_ms)
        return -1;
    return (now_ms - offset_ms) / period_ms;
}

int64_t period_start(int64_t index, int64_t period_ms, int64_t offset_ms)
{
    if (index < 0 || period_ms <= 0 || offset_ms < 0)
        return -1;
    /* An instance beyond the int64 range starts "never": saturate instead of wrapping. */
    int64_t span;
    int64_t start;
    if (__builtin_mul_overflow(index, period_ms, &span) ||
        __builtin_add_overflow(offset_ms, span, &start))
        return INT64_MAX;
    return start;
}

static uint64_t period__gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

uint64_t period_lcm(const uint64_t *periods, size_t n, uint64_t cap, bool *capped)
{
    if (capped)
        *capped = false;
    if (n == 0 || periods == NULL)
        return 0;
    uint64_t l = 1;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        uint64_t p = periods[i];
        if (p == 0)
            continue; /* out of contract: a zero period constrains nothing */
        /* lcm(l, p) = (l / gcd) · p; compare against the cap before multiplying, so neither the
         * product nor any intermediate can overflow. */
        uint64_t a = l / period__gcd(l, p);
        if (a > cap / p) {
            if (capped)
                *capped = true;
            return cap;
        }
        l = a * p;
        any = true;
    }
    return any ? l : 0;
}
