/* rmview_xpub.h - the RM's view socket as a ZeroMQ XPUB in manual mode (ZMQ_XPUB_MANUAL): each
 * subscription message a subscriber sends is applied to that subscriber by the RM, so that a
 * subscription to the whole snapshot topic takes the next numbered snapshot only (rmview.h
 * rmview_gen_topic). Not pure: it sets the socket's subscriptions. rm/rmserver.c and
 * tools/bench_rm (which mirrors the RM's rule) share it. */
#ifndef PADDOCK_RM_RMVIEW_XPUB_H
#define PADDOCK_RM_RMVIEW_XPUB_H

#include <stddef.h>
#include <stdint.h>

/* Snapshot numbers an unsubscription from the snapshot topic drops: a subscriber re-asks once
 * per stalled snapshot, so it holds one number, but one it was given up to this many snapshots
 * before is dropped too. */
#define RMVIEW_XPUB_GENS 64u

/* The view socket's listen backlog (ZMQ_BACKLOG; the kernel caps it at net.core.somaxconn). At
 * ZeroMQ's default of 100, a thousand JMs connecting at once overflowed the accept queue: the
 * kernel dropped their handshakes (3,836 listen overflows in one bench_rm run), and a JM whose
 * connection waited in TCP's retransmission backoff took nothing, not even deltas, for tens of
 * seconds, and asked for its snapshot again and again meanwhile. */
#define RMVIEW_XPUB_BACKLOG 4096

/* The longest join window (rm/joinwin.h): while JMs keep joining, each snapshot served to joiners
 * doubles the window before the next, up to this. It was 3.2 s when every snapshot went to every
 * JM still taking one; now that each joiner takes its own (rmview_xpub_apply), the window only
 * shares one encode between joiners, and a joiner who came just after a snapshot waited up to
 * 3.2 s for its own (bench_rm: the slowest JMs' first part 7 s after subscribing). */
#define RMVIEW_XPUB_JOIN_STORM_MS 800

/* Applies the subscription message (msg, len): first byte 1 (subscribe) or 0 (unsubscribe),
 * then the topic, to `xpub` (a libzmq XPUB socket in manual mode), right after receiving it and
 * before receiving anything else (ZeroMQ applies it to the subscriber the message came from).
 * The whole snapshot topic (proto/pack.h PROTO_VIEW_TOPIC_SNAPSHOT) subscribes snapshot `next`
 * only, and unsubscribes the numbers next - RMVIEW_XPUB_GENS .. next; any other topic (deltas, "",
 * part of the snapshot topic for JMs that take every snapshot) is applied as it is. Returns
 * rmview_topic_snapshot()'s verdict on the topic (its length when it asks for snapshots, else
 * -1), or -2 for a message that is not a subscription (nothing applied). The message is
 * borrowed. */
int rmview_xpub_apply(void *xpub, const uint8_t *msg, size_t len, uint64_t next);

/* Counts a subscription message (as rmview_xpub_apply takes it) to the delta topics: *deltas
 * for proto/pack.h PROTO_VIEW_TOPIC_DELTA, *cells for proto/view_cells.h PROTO_VIEW_TOPIC_CELLS;
 * +1 a subscription, -1 an unsubscription (never below 0). The RM publishes compact deltas only
 * while every subscriber of deltas also takes them (cells >= deltas): a JM from before them
 * would see each as a gap in the chain. */
void rmview_xpub_count(const uint8_t *msg, size_t len, uint32_t *deltas, uint32_t *cells);

#endif
