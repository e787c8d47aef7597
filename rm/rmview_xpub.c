/* rmview_xpub.c - subscriptions of the RM's view socket, applied by hand (see rmview_xpub.h). */
#include "rm/rmview_xpub.h"

#include "proto/pack.h"
#include "proto/view_cells.h"
#include "rm/rmview.h"

#include <string.h>
#include <zmq.h>

int rmview_xpub_apply(void *xpub, const uint8_t *msg, size_t len, uint64_t next)
{
    if (len < 1 || msg[0] > 1)
        return -2;
    int opt = msg[0] == 1 ? ZMQ_SUBSCRIBE : ZMQ_UNSUBSCRIBE;
    int verdict = rmview_topic_snapshot(msg + 1, len - 1);
    if (verdict != (int)PROTO_VIEW_TOPIC_LEN) {
        zmq_setsockopt(xpub, opt, msg + 1, len - 1);
        return verdict;
    }
    uint8_t t[RMVIEW_GEN_TOPIC_LEN];
    if (opt == ZMQ_SUBSCRIBE) {
        zmq_setsockopt(xpub, opt, t, rmview_gen_topic(next, t));
        return verdict;
    }
    for (uint64_t g = next > RMVIEW_XPUB_GENS ? next - RMVIEW_XPUB_GENS : 0; g <= next; g++)
        zmq_setsockopt(xpub, opt, t, rmview_gen_topic(g, t));
    return verdict;
}

void rmview_xpub_count(const uint8_t *msg, size_t len, uint32_t *deltas, uint32_t *cells)
{
    if (len != 1 + PROTO_VIEW_TOPIC_LEN || msg[0] > 1)
        return;
    uint32_t *n = memcmp(msg + 1, PROTO_VIEW_TOPIC_DELTA, PROTO_VIEW_TOPIC_LEN) == 0   ? deltas
                  : memcmp(msg + 1, PROTO_VIEW_TOPIC_CELLS, PROTO_VIEW_TOPIC_LEN) == 0 ? cells
                                                                                       : NULL;
    if (n != NULL && msg[0] == 1)
        (*n)++;
    else if (n != NULL)
        *n -= *n > 0;
}
