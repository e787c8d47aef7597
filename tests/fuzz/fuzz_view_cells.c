/* libFuzzer target for VIEW_CELLS, the compact delta (proto/view_cells.h). The input's first four
 * bytes are the header's ncpu, nmem and nnodes, the rest a body, deflated here so that the fuzzer
 * reaches the node parser; the input is also decoded as a whole frame (topic prepended), which
 * exercises the inflate and its bound. What decodes must encode again and decode to the same
 * nodes (every cell it yields is a grid point). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "proto/view_cells.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *frame, size_t len)
{
    struct proto_view_cells c, d;
    char err[160];
    if (proto_view_cells_decode(frame, len, &c, err, sizeof err) != 0)
        return;
    proto_buf_t b;
    proto_buf_init(&b);
    if (proto_view_cells_encode(&c, &b) != 0 ||
        proto_view_cells_decode(b.data, b.len, &d, err, sizeof err) != 0)
        __builtin_trap();
    if (d.nnodes != c.nnodes || d.ncpu != c.ncpu || d.nmem != c.nmem || d.view_seq != c.view_seq)
        __builtin_trap();
    for (uint32_t i = 0; i < c.nnodes; i++)
        if (strcmp(c.nodes[i].name, d.nodes[i].name) != 0 || c.nodes[i].seq != d.nodes[i].seq ||
            c.nodes[i].age_ms != d.nodes[i].age_ms ||
            memcmp(c.nodes[i].cells_ms, d.nodes[i].cells_ms,
                   (size_t)c.ncpu * c.nmem * sizeof(uint32_t)) != 0)
            __builtin_trap();
    proto_view_cells_close(&d);
    proto_view_cells_close(&c);
    proto_buf_close(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4 || size > (1u << 20))
        return 0;
    size_t cap = PROTO_VIEW_CELLS_HDR + compressBound((uLong)size) + 64;
    uint8_t *frame =
        calloc(1, cap > PROTO_VIEW_CELLS_HDR + size ? cap : PROTO_VIEW_CELLS_HDR + size);
    if (frame == NULL)
        return 0;
    memcpy(frame, PROTO_VIEW_TOPIC_CELLS, PROTO_VIEW_TOPIC_LEN);
    uint8_t *h = frame + PROTO_VIEW_TOPIC_LEN;
    h[32] = data[0];
    h[33] = data[1];
    h[34] = data[2];
    h[35] = data[3];
    uLongf out = (uLongf)(cap - PROTO_VIEW_CELLS_HDR);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
        z.next_in = (Bytef *)data + 4;
        z.avail_in = (uInt)(size - 4);
        z.next_out = frame + PROTO_VIEW_CELLS_HDR;
        z.avail_out = (uInt)out;
        if (deflate(&z, Z_FINISH) == Z_STREAM_END)
            check(frame, PROTO_VIEW_CELLS_HDR + z.total_out);
        deflateEnd(&z);
    }
    /* the input as a frame's bytes after the topic */
    memcpy(frame + PROTO_VIEW_TOPIC_LEN, data, size);
    check(frame, PROTO_VIEW_TOPIC_LEN + size);
    free(frame);
    return 0;
}
