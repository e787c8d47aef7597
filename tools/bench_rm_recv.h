/* bench_rm_recv.h - bench_rm's receiving processes of the view publication (bench_rm_recv.c):
 * each holds its share of the subscribers as a JM holds its one, and writes what each saw to
 * bench_rm_view.c over a pipe. Private to bench_rm. */
#ifndef PADDOCK_TOOLS_BENCH_RM_RECV_H
#define PADDOCK_TOOLS_BENCH_RM_RECV_H

#include <stdint.h>

#define BENCH_FRESH_S 48
extern int64_t g_t0; /* the bench's start, monotonic ms (the receivers inherit it) */

/* What one subscriber saw. complete_ms: from its connect to holding every part of one
 * snapshot in order (-1: never); lag: after that, publication to receipt of each later message;
 * gaps: deltas that did not follow the view_seq held (a delta lost), each answered as a JM does
 * (snapshots asked for again until whole); snap_after: snapshot parts received after whole. */
struct bench_sub_result {
    int64_t complete_ms;
    uint32_t parts_got, msgs_after, gaps, snap_after, retries;
    int64_t lag_max_ms;
    int64_t fresh_lag_max_ms; /* of the messages published after it completed (-1: none) */
    uint64_t bytes;           /* received in all */
    /* where a slow subscriber's time went: its first snapshot part (from subscribing; -1:
     * none), the snapshots it began and those it lost parts of, the deltas it took before whole */
    int64_t first_part_ms;
    uint32_t snaps_begun, snaps_broken, deltas_before;
    int32_t proc; /* the receiving process */
    /* the latest arrival of the messages published after it was whole, by the second of their
     * publication (from the bench's start; -1: none): is the lag the join's or steady? */
    int32_t fresh_by_s[BENCH_FRESH_S];
};

/* A receiving process of n subscribers on 127.0.0.1:port: until every subscription has completed
 * and quiet_ms pass without a message; then its struct bench_sub_result each to fd. */
void bench_receiver(int n, int port, int fd, int64_t quiet_ms, int proc);

#endif
