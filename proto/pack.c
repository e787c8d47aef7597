/* pack.c - the packed envelope (see pack.h). */
#include "proto/pack.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/zraw.h"

const uint8_t PROTO_VIEW_TOPIC_SNAPSHOT[PROTO_VIEW_TOPIC_LEN] = {0x94, PROTO_VERSION_PACKED, 0xcc,
                                                                 PROTO_VIEW_SNAPSHOT};
const uint8_t PROTO_VIEW_TOPIC_DELTA[PROTO_VIEW_TOPIC_LEN] = {0x94, PROTO_VERSION_PACKED, 0xcc,
                                                              PROTO_VIEW_DELTA};
const uint8_t PROTO_VIEW_TOPIC_PLAIN_SNAPSHOT[PROTO_VIEW_TOPIC_PLAIN_LEN] = {0x94, PROTO_VERSION,
                                                                             PROTO_VIEW_SNAPSHOT};
const uint8_t PROTO_VIEW_TOPIC_PLAIN_DELTA[PROTO_VIEW_TOPIC_PLAIN_LEN] = {0x94, PROTO_VERSION,
                                                                          PROTO_VIEW_DELTA};

bool proto_type_packable(proto_type_t type)
{
    return type == PROTO_VIEW_SNAPSHOT || type == PROTO_VIEW_DELTA;
}

static int proto__grow(proto_buf_t *b, size_t cap)
{
    if (b->cap >= cap)
        return 0;
    void *p = mem_realloc(b->data, cap);
    if (p == NULL)
        return ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int proto_encode_packed(const proto_msg_t *msg, proto_buf_t *buf, char *err, size_t errcap)
{
    if (!proto_type_packable(msg->type))
        return proto_encode(msg, buf, err, errcap);
    proto_buf_t plain;
    proto_buf_init(&plain);
    int rc = proto_encode(msg, &plain, err, errcap);
    if (rc != 0) {
        proto_buf_close(&plain);
        return rc;
    }
    z_stream z;
    if (proto_zraw_deflate_init(&z) != Z_OK) {
        proto_buf_close(&plain);
        return err_fmt(err, errcap, ERR_NOMEM, "packed: no memory for deflate");
    }
    /* header: fixarray 4, version, type (uint8 form covers every type), req_id as uint64,
       bin32 length; fixed widths so the length can be written after compressing */
    enum { HDR = 1 + 1 + 2 + 9 + 5 };
    size_t bound = HDR + deflateBound(&z, (uLong)plain.len);
    rc = proto__grow(buf, bound);
    if (rc == 0) {
        z.next_in = plain.data;
        z.avail_in = (uInt)plain.len;
        z.next_out = buf->data + HDR;
        z.avail_out = (uInt)(bound - HDR);
        if (deflate(&z, Z_FINISH) != Z_STREAM_END)
            rc = err_fmt(err, errcap, ERR_NOMEM, "packed: deflate did not finish");
    }
    if (rc == 0 && HDR + z.total_out > PROTO_MAX_MSG_BYTES)
        rc = err_fmt(err, errcap, ERR_TOOBIG, "packed: %lu bytes, limit %u",
                     (unsigned long)(HDR + z.total_out), PROTO_MAX_MSG_BYTES);
    if (rc == 0) {
        uint8_t *h = buf->data;
        uint32_t n = (uint32_t)z.total_out;
        h[0] = 0x94;
        h[1] = (uint8_t)PROTO_VERSION_PACKED;
        h[2] = 0xcc;
        h[3] = (uint8_t)msg->type;
        h[4] = 0xcf;
        for (int i = 0; i < 8; i++)
            h[5 + i] = (uint8_t)(msg->req_id >> (56 - 8 * i));
        h[13] = 0xc6;
        for (int i = 0; i < 4; i++)
            h[14 + i] = (uint8_t)(n >> (24 - 8 * i));
        buf->len = HDR + n;
    }
    deflateEnd(&z);
    proto_buf_close(&plain);
    return rc;
}

/* A msgpack unsigned integer in any width; false when there is none. */
static bool proto__uint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    if (*p >= end)
        return false;
    uint8_t b = *(*p)++;
    unsigned n = b == 0xcc ? 1 : b == 0xcd ? 2 : b == 0xce ? 4 : b == 0xcf ? 8 : 0;
    if (n == 0) {
        *v = b;
        return b <= 0x7f;
    }
    if ((size_t)(end - *p) < n)
        return false;
    *v = 0;
    for (unsigned i = 0; i < n; i++)
        *v = *v << 8 | (*p)[i];
    *p += n;
    return true;
}

#define PROTO__REJ(r) ((int)(r) + 1)

int proto__unpack(const uint8_t *buf, size_t len, proto_buf_t *inner, uint32_t *type,
                  uint64_t *req_id, char *err, size_t errcap)
{
    const uint8_t *p = buf, *end = buf + len;
    uint64_t t = 0, id = 0;
    *type = 0;
    *req_id = 0;
    if (len < 2 || p[0] != 0x94 || p[1] != PROTO_VERSION_PACKED)
        return err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_ENVELOPE),
                       "packed: not [2, type, req_id, bin]");
    p += 2;
    if (!proto__uint(&p, end, &t) || !proto__uint(&p, end, &id))
        return err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_ENVELOPE),
                       "packed: type or req_id not an unsigned integer");
    if (t > UINT32_MAX || !proto_type_valid((uint32_t)t))
        return err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_UNKNOWN_TYPE),
                       "packed: unknown message type %llu", (unsigned long long)t);
    *type = (uint32_t)t;
    *req_id = id;
    /* version 2 is nothing but this envelope: anything else in it is a version this end does
       not speak */
    if (!proto_type_packable((proto_type_t)t))
        return err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_VERSION),
                       "packed: version 2, and type %llu never travels packed",
                       (unsigned long long)t);
    size_t n = 0, lw = 0;
    if (p < end)
        lw = *p == 0xc4 ? 1 : *p == 0xc5 ? 2 : *p == 0xc6 ? 4 : 0;
    if (lw == 0 || (size_t)(end - p) < 1 + lw)
        return err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_VERSION),
                       "packed: version 2, and the payload is not a bin");
    for (size_t i = 0; i < lw; i++)
        n = n << 8 | p[1 + i];
    p += 1 + lw;
    if (n != (size_t)(end - p))
        return err_fmt(err, errcap,
                       PROTO__REJ(n > (size_t)(end - p) ? PROTO_REJ_MALFORMED : PROTO_REJ_TRAILING),
                       "packed: a %zu-byte payload in %zu bytes", n, (size_t)(end - p));
    z_stream z;
    if (proto_zraw_inflate_init(&z) != Z_OK)
        return err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_NOMEM), "packed: no memory for inflate");
    /* grow the output as it comes, never past the limit + 1 (that byte tells a bomb) */
    size_t cap = n * 8 < 65536 ? 65536 : n * 8;
    if (cap > PROTO_MAX_MSG_BYTES + 1u)
        cap = PROTO_MAX_MSG_BYTES + 1u;
    int rc = 0, zr = Z_OK;
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    inner->len = 0;
    while (rc == 0) {
        if (proto__grow(inner, cap) != 0) {
            rc = err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_NOMEM),
                         "packed: no memory for %zu bytes", cap);
            break;
        }
        z.next_out = inner->data + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        zr = inflate(&z, Z_NO_FLUSH);
        inner->len = z.total_out;
        if (zr == Z_STREAM_END)
            break;
        if (zr == Z_MEM_ERROR) {
            rc = err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_NOMEM), "packed: inflate: %s",
                         "out of memory");
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_MALFORMED), "packed: inflate: %s",
                         z.msg != NULL ? z.msg : "corrupt");
        } else if (z.avail_out != 0) { /* input exhausted before the end of the stream */
            rc = err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_MALFORMED), "packed: payload truncated");
        } else if (cap > PROTO_MAX_MSG_BYTES) {
            rc = err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_SIZE), "packed: inflates past %u bytes",
                         PROTO_MAX_MSG_BYTES);
        } else {
            cap = cap * 2 > PROTO_MAX_MSG_BYTES + 1u ? PROTO_MAX_MSG_BYTES + 1u : cap * 2;
        }
    }
    if (rc == 0 && z.avail_in != 0)
        rc = err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_TRAILING),
                     "packed: %u bytes after the deflate stream", z.avail_in);
    if (rc == 0 && inner->len > PROTO_MAX_MSG_BYTES)
        rc = err_fmt(err, errcap, PROTO__REJ(PROTO_REJ_SIZE), "packed: inflates past %u bytes",
                     PROTO_MAX_MSG_BYTES);
    inflateEnd(&z);
    return rc;
}
