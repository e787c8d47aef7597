/* enc.c - bounded little-endian encoding for the RM's log entries and snapshots. */
#include "rm/enc.h"

#include "common/err.h"
#include "common/mem.h"

#include <string.h>

void enc_buf_init(struct enc_buf *b)
{
    memset(b, 0, sizeof *b);
}

void enc_buf_close(struct enc_buf *b)
{
    if (b->data != NULL) {
        if (b->realloc_fn != NULL)
            b->realloc_fn(b->data, 0);
        else
            mem_free(b->data);
    }
    b->data = NULL;
    b->len = b->cap = 0;
}

uint8_t *enc_buf_take(struct enc_buf *b, size_t *len)
{
    uint8_t *d = b->err == 0 ? b->data : NULL;
    if (d == NULL)
        enc_buf_close(b);
    *len = d != NULL ? b->len : 0;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

int enc_buf_err(const struct enc_buf *b)
{
    return b->err;
}

static int enc__reserve(struct enc_buf *b, size_t n)
{
    if (b->err != 0)
        return -1;
    if (b->len + n <= b->cap)
        return 0;
    size_t cap = b->cap < 64 ? 64 : b->cap;
    while (cap < b->len + n)
        cap *= 2;
    void *p = b->realloc_fn != NULL ? b->realloc_fn(b->data, cap) : mem_realloc(b->data, cap);
    if (p == NULL) {
        b->err = ERR_NOMEM;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void enc_bytes(struct enc_buf *b, const void *p, size_t n)
{
    if (n == 0 || enc__reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void enc_u8(struct enc_buf *b, uint8_t v)
{
    enc_bytes(b, &v, 1);
}

void enc_u32(struct enc_buf *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    enc_bytes(b, x, 4);
}

void enc_u64(struct enc_buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    enc_bytes(b, x, 8);
}

void enc_i64(struct enc_buf *b, int64_t v)
{
    enc_u64(b, (uint64_t)v);
}

void enc_str(struct enc_buf *b, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n > 65535) {
        if (b->err == 0)
            b->err = ERR_TOOBIG;
        return;
    }
    uint8_t x[2] = {(uint8_t)n, (uint8_t)(n >> 8)};
    enc_bytes(b, x, 2);
    enc_bytes(b, s, n);
}

void enc_blob(struct enc_buf *b, const void *p, uint32_t n)
{
    enc_u32(b, n);
    enc_bytes(b, p, n);
}

void enc_reader_init(struct enc_reader *r, const void *data, size_t len)
{
    r->p = data;
    r->left = data != NULL ? len : 0;
    r->err = 0;
}

static const uint8_t *enc__take(struct enc_reader *r, size_t n)
{
    if (r->err != 0 || r->left < n) {
        r->err = ERR_PARSE;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

uint8_t enc_get_u8(struct enc_reader *r)
{
    const uint8_t *p = enc__take(r, 1);
    return p != NULL ? p[0] : 0;
}

uint32_t enc_get_u32(struct enc_reader *r)
{
    const uint8_t *p = enc__take(r, 4);
    uint32_t v = 0;
    for (int i = 0; p != NULL && i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

uint64_t enc_get_u64(struct enc_reader *r)
{
    const uint8_t *p = enc__take(r, 8);
    uint64_t v = 0;
    for (int i = 0; p != NULL && i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int64_t enc_get_i64(struct enc_reader *r)
{
    return (int64_t)enc_get_u64(r);
}

void enc_get_str(struct enc_reader *r, char *out, size_t cap)
{
    const uint8_t *h = enc__take(r, 2);
    size_t n = h != NULL ? (size_t)h[0] | (size_t)h[1] << 8 : 0;
    if (cap > 0)
        out[0] = '\0';
    if (h == NULL)
        return;
    if (n >= cap) {
        r->err = ERR_PARSE;
        return;
    }
    const uint8_t *p = enc__take(r, n);
    if (p == NULL)
        return;
    if (memchr(p, '\0', n) != NULL) {
        r->err = ERR_PARSE;
        return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

size_t enc_reader_left(const struct enc_reader *r)
{
    return r->left;
}

int enc_reader_err(const struct enc_reader *r)
{
    return r->err;
}

void enc_reader_fail(struct enc_reader *r)
{
    r->err = ERR_PARSE;
}

const void *enc_get_blob(struct enc_reader *r, uint32_t max, uint32_t *n)
{
    *n = 0;
    uint32_t len = enc_get_u32(r);
    if (enc_reader_err(r) != 0)
        return NULL;
    if (len > max) {
        enc_reader_fail(r);
        return NULL;
    }
    const void *p = len > 0 ? enc__take(r, len) : NULL;
    if (p != NULL)
        *n = len;
    return p;
}

void enc_u32s(struct enc_buf *b, const uint32_t *v, uint32_t n)
{
    enc_u32(b, n);
    for (uint32_t i = 0; i < n; i++)
        enc_u32(b, v[i]);
}

uint32_t enc_get_u32s_count(struct enc_reader *r, uint32_t max)
{
    uint32_t n = enc_get_u32(r);
    if (enc_reader_err(r) != 0)
        return 0;
    if (n > max || (size_t)n * 4 > enc_reader_left(r)) {
        enc_reader_fail(r);
        return 0;
    }
    return n;
}
