/* joinwin.c - the join window of the RM's view (joinwin.h). */
#include "rm/joinwin.h"

#include "proto/pack.h"

void joinwin_init(struct joinwin *w, int64_t storm_ms)
{
    *w = (struct joinwin){.last_ms = INT64_MIN / 2, .storm_ms = storm_ms};
}

int64_t joinwin_window_ms(const struct joinwin *w, size_t nodes)
{
    int64_t parts = (int64_t)(nodes / PROTO_MAX_VIEW_NODES + 1);
    int64_t base =
        parts * JOINWIN_PART_MS < JOINWIN_MAX_MS ? parts * JOINWIN_PART_MS : JOINWIN_MAX_MS;
    return w->window_ms > base ? w->window_ms : base;
}

/* Whether the last snapshot is worth sharing with a joiner at now_ms: it cost more than a
 * JOINWIN_SHARE-th of the time since, and that is under a second. */
static bool joinwin__costly(const struct joinwin *w, int64_t now_ms)
{
    int64_t since = now_ms - w->last_ms;
    return since < JOINWIN_QUIET_MS && w->cost_us * JOINWIN_SHARE > since * 1000;
}

int64_t joinwin_join(struct joinwin *w, int64_t now_ms, size_t nodes)
{
    int64_t wait = w->last_ms + joinwin_window_ms(w, nodes) - now_ms;
    bool costly = joinwin__costly(w, now_ms);
    if (wait <= 0) {
        /* joiners still coming faster than encodes pay for: the next window widens */
        w->wanted = w->wanted || costly;
        if (now_ms - w->last_ms >= JOINWIN_QUIET_MS)
            w->window_ms = 0;
        return 0;
    }
    if (!costly)
        return 0; /* cheap: not worth a wait */
    if (w->wanted)
        return -1;
    w->wanted = true;
    return wait;
}

bool joinwin_due(const struct joinwin *w, int64_t now_ms, size_t nodes)
{
    return w->wanted && now_ms >= w->last_ms + joinwin_window_ms(w, nodes);
}

void joinwin_published(struct joinwin *w, int64_t now_ms, size_t nodes, int64_t cost_us)
{
    if (w->wanted) {
        int64_t doubled = 2 * joinwin_window_ms(w, nodes);
        w->window_ms = doubled < w->storm_ms ? doubled : w->storm_ms;
    }
    w->last_ms = now_ms;
    w->cost_us = cost_us;
    w->wanted = false;
}
