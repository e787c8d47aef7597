/* clock.h - the one place that reads clocks.
 *
 * Daemons read time here and pass `now` into policy modules, which never read a clock
 * themselves (so the simulator and tests can drive them in virtual time).
 * Monotonic time (CLOCK_MONOTONIC) measures intervals and deadlines inside one process; it
 * is meaningless across machines and reboots. Wall-clock time (CLOCK_REALTIME, Unix epoch)
 * is for what people and other machines read: report timestamps, log lines, job records.
 * None of these functions fail.
 */
#ifndef PADDOCK_COMMON_CLOCK_H
#define PADDOCK_COMMON_CLOCK_H

#include <stdint.h>

/* Monotonic time in nanoseconds / milliseconds since an arbitrary fixed point. */
uint64_t clock_mono_ns(void);
uint64_t clock_mono_ms(void);

/* Wall-clock time in milliseconds / nanoseconds since the Unix epoch (UTC). */
int64_t clock_wall_ms(void);
int64_t clock_wall_ns(void);

/* Formats wall-clock milliseconds as RFC 3339 UTC "2026-11-21T05:55:12.123Z" into a buffer of
 * at least CLOCK_RFC3339_SIZE bytes. Returns `out`. */
#define CLOCK_RFC3339_SIZE 32
char *clock_format_rfc3339(int64_t wall_ms, char *out);

#endif
