/* joinwin.h - when a JM joining the RM's view gets its snapshot: the join window.
 *
 * A subscription to snapshots (a JM starting, or one that missed a delta) is served by a
 * snapshot numbered for it (rmview_xpub.h). Encoding one costs the RM's loop time in proportion
 * to the view, so joiners close together share one: a joiner within the join window of the last
 * snapshot waits for the window's end (or the next delta tick), where one snapshot serves every
 * joiner that came within it. The base window is 5 ms per 512 nodes of the view begun (one
 * snapshot part), at most 100 ms. A snapshot that joiners waited for doubles the window, up to
 * the storm limit (a thousand JMs starting at once), and so does one asked for by a joiner after
 * the window while snapshots are still expensive: the last one cost the loop more than a tenth of
 * the time since it (JOINWIN_SHARE) and is less than a second old (the loop's own encode and
 * publication outlast a 100 ms window in a storm). A quiet second brings the window back to the
 * base.
 *
 * A cheap snapshot is not worth a wait: a joiner is served at once, and the window does not
 * widen, when the last snapshot cost the loop at most a tenth of the time since it (a small
 * view, or joiners far apart). One-task jobs half a second apart on a small cluster once kept
 * the window doubling up to the storm limit (every join came within a second of the last), each
 * JM waiting 200-240 ms for a view that takes microseconds to encode.
 *
 * Pure: the caller passes the monotonic time and what each snapshot cost; rm/rmserver.c and
 * tools/bench_rm (which runs the RM's rule over its own publisher) share it. */
#ifndef PADDOCK_RM_JOINWIN_H
#define PADDOCK_RM_JOINWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOINWIN_PART_MS  5    /* base window per snapshot part (512 nodes) begun */
#define JOINWIN_MAX_MS   100  /* the base window's limit */
#define JOINWIN_QUIET_MS 1000 /* a snapshot older than this is never shared */
#define JOINWIN_SHARE    10   /* share a snapshot while it costs over 1/JOINWIN_SHARE of the loop */

struct joinwin {
    int64_t last_ms;   /* the last snapshot, monotonic (far in the past: none yet) */
    int64_t cost_us;   /* what the last snapshot cost the publishing loop */
    int64_t window_ms; /* the widened window (0: the base for the view's size) */
    int64_t storm_ms;  /* the widest window */
    bool wanted;       /* joiners wait for a snapshot: at the window's end or a delta tick */
};

/* No snapshot yet; windows up to storm_ms. */
void joinwin_init(struct joinwin *w, int64_t storm_ms);

/* The join window now for a view of `nodes` nodes. */
int64_t joinwin_window_ms(const struct joinwin *w, size_t nodes);

/* A subscription to snapshots at now_ms. Returns 0: publish one now (then joinwin_published);
 * a positive count of ms: the first joiner of a window, the caller arms a timer for its end
 * (joinwin_due then says the snapshot is due); -1: joiners already wait for one. */
int64_t joinwin_join(struct joinwin *w, int64_t now_ms, size_t nodes);

/* Whether joiners wait and their window has ended at now_ms (a timer or a delta tick). */
bool joinwin_due(const struct joinwin *w, int64_t now_ms, size_t nodes);

/* A snapshot of a `nodes`-node view was published at now_ms (it serves every joiner so far) and
 * cost the loop cost_us: the window doubles when joiners had waited for it. */
void joinwin_published(struct joinwin *w, int64_t now_ms, size_t nodes, int64_t cost_us);

#endif
