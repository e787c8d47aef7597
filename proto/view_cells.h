/* view_cells.h - VIEW_CELLS, the compact delta: nodes whose wait cells alone moved (proto/README.md
 * "Compact deltas").
 *
 * With every node's waits moving each second, a VIEW_DELTA names every node with all its facts
 * (name, rack, endpoint, capacity, load, boot id, the matrix's bins and cells): about 75 bytes a
 * node packed, 1.4 MiB/s for each of a thousand subscribers of a 20,000-node view, more than two
 * cores copy to a thousand sockets. A JM already holds every fact but the cells; this form carries
 * the node's name, its heartbeat's seq, its age and the cells alone, each cell one byte (its
 * index on the grid the RM publishes waits on, rm/rmview.h rmview_quantize_ms), each byte the
 * difference from the cell before it: about 21 bytes a node deflated.
 *
 *     frame  = topic[4] header body
 *     topic  = 0x94 0x02 0xcc 0x7e   (PROTO_VIEW_TOPIC_CELLS: a packed envelope's first bytes
 *                                     with type 126, which no decoder of proto.h accepts)
 *     header = rm_id u64, view_seq u64, base_seq u64, timestamp_ms i64 (little-endian),
 *              ncpu u8, nmem u8, nnodes u16
 *     body   = raw deflate (RFC 1951) of nnodes x node
 *     node   = name_len u8 (1..PROTO_VIEW_CELLS_NAME_MAX), name, seq varint, age_ms varint,
 *              ncpu x nmem bytes: cell i is (byte i + cell i-1) mod 256, cell -1 being 0
 *
 * A VIEW_CELLS message is one link of the replica's delta chain (base_seq -> view_seq), as a
 * VIEW_DELTA is: a JM that follows the chain takes both, and one taken in sequence confirms the
 * live nodes it omits. It names only nodes the chain has named before with the same boot id,
 * capacity, bins and everything else; what travels with a node otherwise (its load) stays as
 * last published. Pure: no sockets. The decoder is bounded (fuzz target fuzz_view_cells).
 */
#ifndef PADDOCK_PROTO_VIEW_CELLS_H
#define PADDOCK_PROTO_VIEW_CELLS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/pack.h"
#include "proto/proto.h"

#define PROTO_VIEW_CELLS_TYPE      126u
#define PROTO_VIEW_CELLS_MAX_NODES 4096u /* per message */
#define PROTO_VIEW_CELLS_NAME_MAX  255u
#define PROTO_VIEW_CELLS_HDR       (PROTO_VIEW_TOPIC_LEN + 4 * 8 + 2 + 2)
extern const uint8_t PROTO_VIEW_TOPIC_CELLS[PROTO_VIEW_TOPIC_LEN];

/* The wait grid: index 0..31 is 0..1550 ms in 50 ms steps, then 16 steps per doubling (100 ms
 * from 1.6 s, 200 ms from 3.2 s, ...) up to index 254; 255 is PROTO_WAIT_NEVER. */
#define PROTO_VIEW_GRID_NEVER 255u
/* The index of a wait on the grid, or -1 when it is not a grid point (or past index 254). */
int proto_view_grid_index(uint32_t ms);
/* The wait at a grid index (PROTO_WAIT_NEVER for PROTO_VIEW_GRID_NEVER). */
uint32_t proto_view_grid_ms(uint32_t idx);

struct proto_view_cells_node {
    const char *name; /* 1..PROTO_VIEW_CELLS_NAME_MAX bytes, no NUL inside */
    uint64_t seq;
    uint64_t age_ms;
    const uint32_t *cells_ms; /* ncpu * nmem cells, row-major, every one a grid point */
};

struct proto_view_cells {
    uint64_t rm_id, view_seq, base_seq;
    int64_t timestamp_ms;
    uint32_t ncpu, nmem; /* 1..PROTO_MAX_MATRIX_DIM each */
    struct proto_view_cells_node *nodes;
    uint32_t nnodes; /* 0..PROTO_VIEW_CELLS_MAX_NODES */
    void *mem;       /* private: what the decoder allocated (proto_view_cells_close) */
};

/* Encodes *c into buf (reset first). ERR_INVAL for a bad field (a cell off the grid, a name of
 * the wrong length, dimensions or count out of range), ERR_TOOBIG past PROTO_MAX_MSG_BYTES,
 * ERR_NOMEM. */
int proto_view_cells_encode(const struct proto_view_cells *c, proto_buf_t *buf);

/* Whether a frame is a VIEW_CELLS message (its first bytes are the topic). */
int proto_view_cells_is(const uint8_t *buf, size_t len);

/* Decodes a frame into *out (caller owns: proto_view_cells_close on success; nothing to free on
 * error). Returns 0, ERR_INVAL with the reason in err (wrong topic, truncated, a count, length,
 * dimension or varint out of range, body not inflating to exactly its nodes), or ERR_NOMEM. The
 * inflated body is bounded by the header's counts before anything is allocated. */
int proto_view_cells_decode(const uint8_t *buf, size_t len, struct proto_view_cells *out, char *err,
                            size_t errcap);
void proto_view_cells_close(struct proto_view_cells *c);

#endif
