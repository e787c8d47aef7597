/* view_cells.c - VIEW_CELLS, the compact delta (see view_cells.h). */
#include "proto/view_cells.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/zraw.h"

const uint8_t PROTO_VIEW_TOPIC_CELLS[PROTO_VIEW_TOPIC_LEN] = {0x94, PROTO_VERSION_PACKED, 0xcc,
                                                              PROTO_VIEW_CELLS_TYPE};

int proto_view_grid_index(uint32_t ms)
{
    if (ms == PROTO_WAIT_NEVER)
        return (int)PROTO_VIEW_GRID_NEVER;
    if (ms < 1600)
        return ms % 50 == 0 ? (int)(ms / 50) : -1;
    uint32_t k = 1;
    while (k < 15 && ms >= (1600u << k))
        k++;
    uint32_t lo = 1600u << (k - 1), step = 50u << k;
    if (ms >= (1600u << k) || (ms - lo) % step != 0)
        return -1;
    uint32_t idx = 32 + 16 * (k - 1) + (ms - lo) / step;
    return idx < PROTO_VIEW_GRID_NEVER ? (int)idx : -1;
}

uint32_t proto_view_grid_ms(uint32_t idx)
{
    if (idx >= PROTO_VIEW_GRID_NEVER)
        return PROTO_WAIT_NEVER;
    if (idx < 32)
        return idx * 50;
    uint32_t k = (idx - 32) / 16 + 1, j = (idx - 32) % 16;
    return (1600u << (k - 1)) + j * (50u << k);
}

static void cells__le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t cells__rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static size_t cells__varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* The most bytes one node takes in the body. */
static size_t cells__node_max(uint32_t ncells)
{
    return 1 + PROTO_VIEW_CELLS_NAME_MAX + 10 + 10 + ncells;
}

static int cells__dims_ok(uint32_t ncpu, uint32_t nmem, uint32_t nnodes)
{
    return ncpu >= 1 && ncpu <= PROTO_MAX_MATRIX_DIM && nmem >= 1 && nmem <= PROTO_MAX_MATRIX_DIM &&
           nnodes <= PROTO_VIEW_CELLS_MAX_NODES;
}

int proto_view_cells_encode(const struct proto_view_cells *c, proto_buf_t *buf)
{
    if (!cells__dims_ok(c->ncpu, c->nmem, c->nnodes) || (c->nnodes > 0 && c->nodes == NULL))
        return ERR_INVAL;
    uint32_t ncells = c->ncpu * c->nmem;
    size_t max = (size_t)c->nnodes * cells__node_max(ncells);
    uint8_t *body = mem_alloc(max > 0 ? max : 1);
    if (body == NULL)
        return ERR_NOMEM;
    size_t len = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const struct proto_view_cells_node *n = &c->nodes[i];
        size_t nl = n->name != NULL ? strlen(n->name) : 0;
        if (nl == 0 || nl > PROTO_VIEW_CELLS_NAME_MAX || n->cells_ms == NULL ||
            n->age_ms > PROTO_MAX_DURATION_MS) {
            mem_free(body);
            return ERR_INVAL;
        }
        body[len++] = (uint8_t)nl;
        memcpy(body + len, n->name, nl);
        len += nl;
        len += cells__varint(body + len, n->seq);
        len += cells__varint(body + len, n->age_ms);
        int prev = 0;
        for (uint32_t k = 0; k < ncells; k++) {
            int g = proto_view_grid_index(n->cells_ms[k]);
            if (g < 0) {
                mem_free(body);
                return ERR_INVAL;
            }
            body[len++] = (uint8_t)(g - prev);
            prev = g;
        }
    }
    z_stream z;
    if (proto_zraw_deflate_init(&z) != Z_OK) {
        mem_free(body);
        return ERR_NOMEM;
    }
    size_t bound = PROTO_VIEW_CELLS_HDR + deflateBound(&z, (uLong)len);
    int rc = 0;
    if (buf->cap < bound) {
        void *p = mem_realloc(buf->data, bound);
        if (p == NULL)
            rc = ERR_NOMEM;
        else
            buf->data = p, buf->cap = bound;
    }
    if (rc == 0) {
        z.next_in = body;
        z.avail_in = (uInt)len;
        z.next_out = buf->data + PROTO_VIEW_CELLS_HDR;
        z.avail_out = (uInt)(bound - PROTO_VIEW_CELLS_HDR);
        if (deflate(&z, Z_FINISH) != Z_STREAM_END)
            rc = ERR_NOMEM;
    }
    if (rc == 0 && PROTO_VIEW_CELLS_HDR + z.total_out > PROTO_MAX_MSG_BYTES)
        rc = ERR_TOOBIG;
    if (rc == 0) {
        uint8_t *h = buf->data;
        memcpy(h, PROTO_VIEW_TOPIC_CELLS, PROTO_VIEW_TOPIC_LEN);
        h += PROTO_VIEW_TOPIC_LEN;
        cells__le(h, c->rm_id, 8);
        cells__le(h + 8, c->view_seq, 8);
        cells__le(h + 16, c->base_seq, 8);
        cells__le(h + 24, (uint64_t)c->timestamp_ms, 8);
        h[32] = (uint8_t)c->ncpu;
        h[33] = (uint8_t)c->nmem;
        cells__le(h + 34, c->nnodes, 2);
        buf->len = PROTO_VIEW_CELLS_HDR + z.total_out;
    }
    deflateEnd(&z);
    mem_free(body);
    return rc;
}

int proto_view_cells_is(const uint8_t *buf, size_t len)
{
    return buf != NULL && len >= PROTO_VIEW_TOPIC_LEN &&
           memcmp(buf, PROTO_VIEW_TOPIC_CELLS, PROTO_VIEW_TOPIC_LEN) == 0;
}

static int cells__get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        if (shift == 63 && b > 1)
            return -1;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* Inflates exactly the body (at most max bytes) into *out (caller frees). The buffer grows
 * from a few times the input as the body needs (a JM decodes four of these a second: a buffer
 * of the bound each time held megabytes of its heap). */
static int cells__inflate(const uint8_t *in, size_t inlen, size_t max, uint8_t **out,
                          size_t *outlen, char *err, size_t errcap)
{
    size_t cap = inlen < (max + 1) / 4 ? 4 * inlen + 64 : max + 1;
    cap = cap < max + 1 ? cap : max + 1;
    uint8_t *body = mem_alloc(cap);
    if (body == NULL)
        return err_fmt(err, errcap, ERR_NOMEM, "view cells: no memory");
    z_stream z;
    if (proto_zraw_inflate_init(&z) != Z_OK) {
        mem_free(body);
        return err_fmt(err, errcap, ERR_NOMEM, "view cells: no memory for inflate");
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)inlen;
    z.next_out = body;
    z.avail_out = (uInt)cap; /* up to max + 1: a body past max is refused, not cut */
    int zr;
    while ((zr = inflate(&z, Z_FINISH)) == Z_BUF_ERROR && z.avail_out == 0 && cap < max + 1) {
        size_t grown = 2 * cap < max + 1 ? 2 * cap : max + 1;
        uint8_t *p = mem_realloc(body, grown);
        if (p == NULL) {
            inflateEnd(&z);
            mem_free(body);
            return err_fmt(err, errcap, ERR_NOMEM, "view cells: no memory");
        }
        body = p;
        z.next_out = body + z.total_out;
        z.avail_out = (uInt)(grown - cap);
        cap = grown;
    }
    size_t n = z.total_out;
    inflateEnd(&z);
    if (zr != Z_STREAM_END || n > max || z.avail_in != 0) {
        mem_free(body);
        return err_fmt(err, errcap, ERR_INVAL, "view cells: body does not inflate within %zu bytes",
                       max);
    }
    *out = body;
    *outlen = n;
    return 0;
}

int proto_view_cells_decode(const uint8_t *buf, size_t len, struct proto_view_cells *out, char *err,
                            size_t errcap)
{
    memset(out, 0, sizeof *out);
    if (!proto_view_cells_is(buf, len) || len < PROTO_VIEW_CELLS_HDR)
        return err_fmt(err, errcap, ERR_INVAL, "view cells: not a VIEW_CELLS frame");
    const uint8_t *h = buf + PROTO_VIEW_TOPIC_LEN;
    struct proto_view_cells c = {0};
    c.rm_id = cells__rd(h, 8);
    c.view_seq = cells__rd(h + 8, 8);
    c.base_seq = cells__rd(h + 16, 8);
    c.timestamp_ms = (int64_t)cells__rd(h + 24, 8);
    c.ncpu = h[32];
    c.nmem = h[33];
    c.nnodes = (uint32_t)cells__rd(h + 34, 2);
    if (!cells__dims_ok(c.ncpu, c.nmem, c.nnodes))
        return err_fmt(err, errcap, ERR_INVAL, "view cells: %ux%u cells, %u nodes", c.ncpu, c.nmem,
                       c.nnodes);
    uint32_t ncells = c.ncpu * c.nmem;
    uint8_t *body = NULL;
    size_t blen = 0;
    int rc = cells__inflate(buf + PROTO_VIEW_CELLS_HDR, len - PROTO_VIEW_CELLS_HDR,
                            (size_t)c.nnodes * cells__node_max(ncells), &body, &blen, err, errcap);
    if (rc != 0)
        return rc;
    /* one block: the nodes, their cells, their names (NUL-terminated) */
    size_t nodes_b = (size_t)c.nnodes * sizeof *c.nodes;
    size_t cells_b = (size_t)c.nnodes * ncells * sizeof(uint32_t);
    size_t names_b = blen + c.nnodes; /* each name and its NUL: within the body's bytes */
    uint8_t *mem = mem_alloc(nodes_b + cells_b + names_b + 1);
    if (mem == NULL) {
        mem_free(body);
        return err_fmt(err, errcap, ERR_NOMEM, "view cells: no memory");
    }
    c.nodes = (struct proto_view_cells_node *)(void *)mem;
    uint32_t *cells = (uint32_t *)(void *)(mem + nodes_b);
    char *names = (char *)(mem + nodes_b + cells_b), *name = names;
    const uint8_t *p = body, *end = body + blen;
    for (uint32_t i = 0; i < c.nnodes && rc == 0; i++) {
        struct proto_view_cells_node *n = &c.nodes[i];
        uint32_t nl = p < end ? *p++ : 0;
        if (nl == 0 || (size_t)(end - p) < nl || memchr(p, 0, nl) != NULL) {
            rc = err_fmt(err, errcap, ERR_INVAL, "view cells: node %u: bad name", i);
            break;
        }
        memcpy(name, p, nl);
        name[nl] = '\0';
        p += nl;
        n->name = name;
        name += nl + 1;
        if (cells__get_varint(&p, end, &n->seq) != 0 ||
            cells__get_varint(&p, end, &n->age_ms) != 0 || n->age_ms > PROTO_MAX_DURATION_MS ||
            (size_t)(end - p) < ncells) {
            rc = err_fmt(err, errcap, ERR_INVAL, "view cells: node %u: truncated", i);
            break;
        }
        uint32_t *nc = cells + (size_t)i * ncells;
        uint32_t prev = 0;
        for (uint32_t k = 0; k < ncells; k++) {
            prev = (prev + *p++) & 0xffu;
            nc[k] = proto_view_grid_ms(prev);
        }
        n->cells_ms = nc;
    }
    if (rc == 0 && p != end)
        rc = err_fmt(err, errcap, ERR_INVAL, "view cells: %zu bytes after the last node",
                     (size_t)(end - p));
    mem_free(body);
    if (rc != 0) {
        mem_free(mem);
        return rc;
    }
    c.mem = mem;
    *out = c;
    return 0;
}

void proto_view_cells_close(struct proto_view_cells *c)
{
    if (c == NULL)
        return;
    mem_free(c->mem);
    memset(c, 0, sizeof *c);
}
