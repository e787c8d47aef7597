/* period.h - UTC periods of recurring jobs: instance numbering, period starts, the plan's LCM
 * (pure).
 *
 * Periods are plain milliseconds of UTC (no time zones, no DST): instance i of a job with period
 * P and offset O starts at O + i·P ms since the Unix epoch, so every replica, every restart and
 * every leader numbers the same instance the same way. A daily job at 02:00 UTC has P = 86400000
 * and O = 7200000. Negative times are not used; instance numbers start at 0.
 *
 * Morpheus §6.1: the plan covers the least common multiple of the periods, capped (a day in the
 * paper); periods that do not divide the cap are planned as if their period were the cap's
 * multiple nearest below (the caller is told, and says so).
 */
#ifndef PADDOCK_RM_PERIOD_H
#define PADDOCK_RM_PERIOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The instance running at `now`: floor((now − offset) / period), or −1 when now < offset.
 * period > 0, 0 <= offset. */
int64_t period_index(int64_t now_ms, int64_t period_ms, int64_t offset_ms);
/* Start of instance `index` (>= 0): offset + index·period. */
int64_t period_start(int64_t index, int64_t period_ms, int64_t offset_ms);
/* Least common multiple of periods[0..n) (each > 0), or `cap` when it would exceed cap (then
 * *capped, if not NULL, is set true). n == 0 gives 0. No overflow for any uint64 input. */
uint64_t period_lcm(const uint64_t *periods, size_t n, uint64_t cap, bool *capped);

#endif
