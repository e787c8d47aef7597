/* encode.c - packing a proto_msg_t with msgpack-c into a proto_buf_t.
 *
 * Checking and packing are separate passes: proto_encode() first validates the whole message
 * against the schema (the same bounds the decoder enforces), then packs it, so a failed
 * encode never leaves half a message behind and the wire format lives in one place
 * (proto__pack_*), shared with the unchecked encoder the tests use to build bad messages.
 */
#include <math.h>
#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/batch.h"
#include "proto/schema.h"

typedef struct proto__sink {
    proto_buf_t *buf;
    size_t limit; /* refuse to grow past this; SIZE_MAX for the unchecked encoder */
    int failed;   /* 0, ERR_NOMEM or ERR_TOOBIG */
} proto__sink_t;

static int proto__write(void *data, const char *src, size_t len)
{
    proto__sink_t *sink = data;
    proto_buf_t *b = sink->buf;
    /* Fast path: msgpack-c writes a few bytes at a time. */
    if (len <= b->cap - b->len && len <= sink->limit - b->len && sink->failed == 0) {
        uint8_t *dst = b->data + b->len;
        /* msgpack-c builds each primitive in a small stack buffer with byte stores and hands
         * it over at once: copying byte by byte lets every load forward from its store
         * (a wider load stalls), which made this the encoder's hottest spot. */
        if (len <= 9) {
            for (size_t i = 0; i < len; i++)
                dst[i] = (uint8_t)src[i];
        } else {
            memcpy(dst, src, len);
        }
        b->len += len;
        return 0;
    }
    if (sink->failed != 0)
        return -1; /* packing goes on after a failure (errors are collected); stay failed */
    if (len > sink->limit - b->len) {
        sink->failed = ERR_TOOBIG;
        return -1;
    }
    size_t need = b->len + len;
    size_t cap = b->cap < 512 ? 512 : b->cap;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > sink->limit)
        cap = sink->limit;
    uint8_t *p = mem_realloc(b->data, cap);
    if (p == NULL) {
        sink->failed = ERR_NOMEM;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    memcpy(b->data + b->len, src, len);
    b->len += len;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Which optional fields go on the wire: required ones always, others when not zero/NULL. */

static int proto__present(const proto__field_t *f, const unsigned char *base)
{
    const void *at = base + f->off;
    if (f->required)
        return 1;
    switch (f->kind) {
    case PROTO__BOOL:
        return *(const bool *)at;
    case PROTO__U32:
        return *(const uint32_t *)at != 0;
    case PROTO__U64:
        return *(const uint64_t *)at != 0;
    case PROTO__I32:
        return *(const int32_t *)at != 0;
    case PROTO__I64:
        return *(const int64_t *)at != 0;
    case PROTO__F64:
        return *(const double *)at != 0.0;
    case PROTO__STR:
        return *(char *const *)at != NULL;
    case PROTO__STRS:
    case PROTO__KVS:
    case PROTO__STRUCTS:
    case PROTO__BIN:
        return *(const uint32_t *)(base + f->count_off) != 0 && *(void *const *)at != NULL;
    case PROTO__MATRIX: {
        const proto_matrix_t *m = at;
        return m->ncpu != 0 || m->nmem != 0 || m->timestamp_ms != 0;
    }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Validation (encoder side). */

static int proto__check_str(const char *where, const char *key, const char *s, uint64_t min,
                            uint64_t max, char *err, size_t errcap)
{
    if (s == NULL)
        return err_fmt(err, errcap, ERR_RANGE, "%s.%s: missing", where, key);
    size_t n = strnlen(s, (size_t)max + 1);
    if (n > max)
        return err_fmt(err, errcap, ERR_TOOBIG, "%s.%s: longer than %llu bytes", where, key,
                       (unsigned long long)max);
    if (n < min)
        return err_fmt(err, errcap, ERR_RANGE, "%s.%s: shorter than %llu bytes", where, key,
                       (unsigned long long)min);
    return 0;
}

static int proto__check_body(const proto__schema_t *s, const void *body, char *err, size_t errcap);

static int proto__check_field(const proto__schema_t *s, const proto__field_t *f,
                              const unsigned char *base, char *err, size_t errcap)
{
    const void *at = base + f->off;
    const char *w = s->name;
    switch (f->kind) {
    case PROTO__BOOL:
        return 0;
    case PROTO__U32:
    case PROTO__U64: {
        uint64_t v = f->kind == PROTO__U32 ? *(const uint32_t *)at : *(const uint64_t *)at;
        if (v < f->umin || v > f->umax)
            return err_fmt(err, errcap, ERR_RANGE, "%s.%s: %llu not in [%llu, %llu]", w, f->key,
                           (unsigned long long)v, (unsigned long long)f->umin,
                           (unsigned long long)f->umax);
        return 0;
    }
    case PROTO__I32:
    case PROTO__I64: {
        int64_t v = f->kind == PROTO__I32 ? *(const int32_t *)at : *(const int64_t *)at;
        if (v < f->imin || v > f->imax)
            return err_fmt(err, errcap, ERR_RANGE, "%s.%s: %lld not in [%lld, %lld]", w, f->key,
                           (long long)v, (long long)f->imin, (long long)f->imax);
        return 0;
    }
    case PROTO__F64: {
        double v = *(const double *)at;
        if (!isfinite(v) || v < f->dmin || v > f->dmax)
            return err_fmt(err, errcap, ERR_RANGE, "%s.%s: %g not in [%g, %g]", w, f->key, v,
                           f->dmin, f->dmax);
        return 0;
    }
    case PROTO__STR: {
        const char *v = *(char *const *)at;
        if (v == NULL && !f->required)
            return 0;
        return proto__check_str(w, f->key, v, f->umin, f->umax, err, errcap);
    }
    case PROTO__STRS: {
        char *const *v = *(char **const *)at;
        uint32_t n = *(const uint32_t *)(base + f->count_off);
        if (n > f->umax)
            return err_fmt(err, errcap, ERR_TOOBIG, "%s.%s: %u entries, at most %llu", w, f->key, n,
                           (unsigned long long)f->umax);
        if (n < f->umin || (n > 0 && v == NULL))
            return err_fmt(err, errcap, ERR_RANGE, "%s.%s: %u entries, at least %llu", w, f->key,
                           v == NULL ? 0 : n, (unsigned long long)f->umin);
        for (uint32_t i = 0; i < n; i++) {
            int rc = proto__check_str(w, f->key, v[i], 0, f->item_max, err, errcap);
            if (rc != 0)
                return rc;
        }
        return 0;
    }
    case PROTO__KVS: {
        const proto_kv_t *v = *(proto_kv_t *const *)at;
        uint32_t n = *(const uint32_t *)(base + f->count_off);
        if (n > f->umax)
            return err_fmt(err, errcap, ERR_TOOBIG, "%s.%s: %u entries, at most %llu", w, f->key, n,
                           (unsigned long long)f->umax);
        if (n > 0 && v == NULL)
            return err_fmt(err, errcap, ERR_RANGE, "%s.%s: entries missing", w, f->key);
        for (uint32_t i = 0; i < n; i++) {
            int rc = proto__check_str(w, f->key, v[i].key, 1, PROTO_MAX_ENV_KEY, err, errcap);
            if (rc == 0 && strchr(v[i].key, '=') != NULL)
                rc = err_fmt(err, errcap, ERR_RANGE, "%s.%s: key contains '='", w, f->key);
            if (rc == 0)
                rc = proto__check_str(w, f->key, v[i].value, 0, f->item_max, err, errcap);
            if (rc != 0)
                return rc;
        }
        return 0;
    }
    case PROTO__STRUCTS: {
        const unsigned char *v = *(const unsigned char *const *)at;
        uint32_t n = *(const uint32_t *)(base + f->count_off);
        if (n > f->umax)
            return err_fmt(err, errcap, ERR_TOOBIG, "%s.%s: %u entries, at most %llu", w, f->key, n,
                           (unsigned long long)f->umax);
        if (n < f->umin || (n > 0 && v == NULL))
            return err_fmt(err, errcap, ERR_RANGE, "%s.%s: %u entries, at least %llu", w, f->key,
                           v == NULL ? 0 : n, (unsigned long long)f->umin);
        for (uint32_t i = 0; i < n; i++) {
            int rc = proto__check_body(f->sub, v + (size_t)i * f->sub->size, err, errcap);
            if (rc != 0)
                return rc;
        }
        return 0;
    }
    case PROTO__MATRIX:
        return proto__matrix_check(at, err, errcap);
    case PROTO__BIN: {
        const uint8_t *v = *(const uint8_t *const *)at;
        uint32_t n = *(const uint32_t *)(base + f->count_off);
        if (n > f->umax)
            return err_fmt(err, errcap, ERR_TOOBIG, "%s.%s: %u bytes, at most %llu", w, f->key, n,
                           (unsigned long long)f->umax);
        if ((n > 0 && v == NULL) || (n < f->umin && (f->required || n > 0)))
            return err_fmt(err, errcap, ERR_RANGE, "%s.%s: %u bytes, at least %llu", w, f->key,
                           v == NULL ? 0 : n, (unsigned long long)f->umin);
        return 0;
    }
    }
    return err_fmt(err, errcap, ERR_INVAL, "%s.%s: bad field kind", w, f->key);
}

static int proto__check_body(const proto__schema_t *s, const void *body, char *err, size_t errcap)
{
    for (uint32_t i = 0; i < s->nfields; i++) {
        int rc = proto__check_field(s, &s->fields[i], body, err, errcap);
        if (rc != 0)
            return rc;
    }
    return s->check != NULL ? s->check(body, err, errcap) : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Packing. Every msgpack_pack_* returns 0 or -1 (the sink failed); errors are collected with
 * |= and reported once. */

static int proto__pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, s, n);
}

static int proto__pack_key(msgpack_packer *pk, const char *k, size_t n)
{
    return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, k, n);
}

static int proto__pack_matrix(msgpack_packer *pk, const proto_matrix_t *m)
{
    int rc = msgpack_pack_map(pk, 4);
    rc |= proto__pack_key(pk, "cpu", 3) | msgpack_pack_array(pk, m->ncpu);
    for (uint32_t i = 0; i < m->ncpu && i < PROTO_MAX_MATRIX_DIM; i++)
        rc |= msgpack_pack_double(pk, m->cpu_bounds[i]);
    rc |= proto__pack_key(pk, "mem", 3) | msgpack_pack_array(pk, m->nmem);
    for (uint32_t i = 0; i < m->nmem && i < PROTO_MAX_MATRIX_DIM; i++)
        rc |= msgpack_pack_uint64(pk, m->mem_bounds_mb[i]);
    uint32_t cells = m->ncpu * m->nmem;
    if (cells > PROTO_MAX_MATRIX_CELLS)
        cells = PROTO_MAX_MATRIX_CELLS;
    rc |= proto__pack_key(pk, "cells", 5) | msgpack_pack_array(pk, cells);
    for (uint32_t i = 0; i < cells; i++)
        rc |= msgpack_pack_uint32(pk, m->cells_ms[i]);
    rc |= proto__pack_key(pk, "ts", 2) | msgpack_pack_int64(pk, m->timestamp_ms);
    return rc;
}

static int proto__pack_body(msgpack_packer *pk, const proto__schema_t *s, const void *body);

static int proto__pack_field(msgpack_packer *pk, const proto__field_t *f, const unsigned char *base)
{
    const void *at = base + f->off;
    int rc = proto__pack_key(pk, f->key, f->keylen);
    switch (f->kind) {
    case PROTO__BOOL:
        return rc | (*(const bool *)at ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
    case PROTO__U32:
        return rc | msgpack_pack_uint32(pk, *(const uint32_t *)at);
    case PROTO__U64:
        return rc | msgpack_pack_uint64(pk, *(const uint64_t *)at);
    case PROTO__I32:
        return rc | msgpack_pack_int32(pk, *(const int32_t *)at);
    case PROTO__I64:
        return rc | msgpack_pack_int64(pk, *(const int64_t *)at);
    case PROTO__F64:
        return rc | msgpack_pack_double(pk, *(const double *)at);
    case PROTO__STR: {
        const char *v = *(char *const *)at;
        return rc | proto__pack_str(pk, v != NULL ? v : "");
    }
    case PROTO__STRS: {
        char *const *v = *(char **const *)at;
        uint32_t n = v != NULL ? *(const uint32_t *)(base + f->count_off) : 0;
        rc |= msgpack_pack_array(pk, n);
        for (uint32_t i = 0; i < n; i++)
            rc |= proto__pack_str(pk, v[i] != NULL ? v[i] : "");
        return rc;
    }
    case PROTO__KVS: {
        const proto_kv_t *v = *(proto_kv_t *const *)at;
        uint32_t n = v != NULL ? *(const uint32_t *)(base + f->count_off) : 0;
        rc |= msgpack_pack_map(pk, n);
        for (uint32_t i = 0; i < n; i++)
            rc |= proto__pack_str(pk, v[i].key != NULL ? v[i].key : "") |
                  proto__pack_str(pk, v[i].value != NULL ? v[i].value : "");
        return rc;
    }
    case PROTO__STRUCTS: {
        const unsigned char *v = *(const unsigned char *const *)at;
        uint32_t n = v != NULL ? *(const uint32_t *)(base + f->count_off) : 0;
        rc |= msgpack_pack_array(pk, n);
        for (uint32_t i = 0; i < n; i++)
            rc |= proto__pack_body(pk, f->sub, v + (size_t)i * f->sub->size);
        return rc;
    }
    case PROTO__MATRIX:
        return rc | proto__pack_matrix(pk, at);
    case PROTO__BIN: {
        const uint8_t *v = *(const uint8_t *const *)at;
        uint32_t n = v != NULL ? *(const uint32_t *)(base + f->count_off) : 0;
        return rc | msgpack_pack_bin(pk, n) | (n > 0 ? msgpack_pack_bin_body(pk, v, n) : 0);
    }
    }
    return -1;
}

static int proto__pack_body(msgpack_packer *pk, const proto__schema_t *s, const void *body)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nfields; i++)
        n += (uint32_t)proto__present(&s->fields[i], body);
    int rc = msgpack_pack_map(pk, n);
    for (uint32_t i = 0; i < s->nfields; i++)
        if (proto__present(&s->fields[i], body))
            rc |= proto__pack_field(pk, &s->fields[i], body);
    return rc;
}

static int proto__pack_msg(const proto_msg_t *msg, const proto__schema_t *s, proto__sink_t *sink)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sink, proto__write);
    sink->buf->len = 0;
    sink->failed = 0;
    int rc = msgpack_pack_array(&pk, 4) | msgpack_pack_uint32(&pk, PROTO_VERSION) |
             msgpack_pack_uint32(&pk, (uint32_t)msg->type) | msgpack_pack_uint64(&pk, msg->req_id);
    rc |= proto__pack_body(&pk, s, (const unsigned char *)msg + PROTO__BODY_OFF);
    if (rc != 0)
        return sink->failed != 0 ? sink->failed : ERR_NOMEM;
    return 0;
}

int proto__encode_unchecked(const proto_msg_t *msg, proto_buf_t *buf)
{
    const proto__schema_t *s = proto__schema_of((uint32_t)msg->type);
    if (s == NULL)
        return ERR_UNKNOWN_TYPE;
    proto__sink_t sink = {buf, SIZE_MAX, 0};
    return proto__pack_msg(msg, s, &sink);
}

int proto_encode(const proto_msg_t *msg, proto_buf_t *buf, char *err, size_t errcap)
{
    const proto__schema_t *s = proto__schema_of((uint32_t)msg->type);
    if (s == NULL)
        return err_fmt(err, errcap, ERR_UNKNOWN_TYPE, "encode: unknown message type %u",
                       (unsigned)msg->type);
    int rc = proto__check_body(s, (const unsigned char *)msg + PROTO__BODY_OFF, err, errcap);
    if (rc != 0)
        return rc;
    proto__sink_t sink = {buf, PROTO_MAX_MSG_BYTES, 0};
    rc = proto__pack_msg(msg, s, &sink);
    if (rc == ERR_TOOBIG)
        return err_fmt(err, errcap, ERR_TOOBIG, "%s: encoded message over %u bytes", s->name,
                       PROTO_MAX_MSG_BYTES);
    if (rc != 0)
        return err_fmt(err, errcap, rc, "%s: %s", s->name, err_text(rc));
    /* Fewer bytes than PROTO_MAX_OBJECTS cannot hold too many objects; only a large message
     * needs the decoder's structural pre-scan to be sure it will decode. */
    if (buf->len >= PROTO_MAX_OBJECTS) {
        size_t used = 0;
        char why[128];
        if (proto__prescan(buf->data, buf->len, &used, why, sizeof why) != 0) {
            buf->len = 0;
            return err_fmt(err, errcap, ERR_TOOBIG, "%s: %s", s->name, why);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Status batches: bodies packed as they come, the envelope written around them at the end. */

void proto_batch_init(proto_batch_t *b)
{
    memset(b, 0, sizeof *b);
    proto_buf_init(&b->items);
}

void proto_batch_close(proto_batch_t *b)
{
    proto_buf_close(&b->items);
    memset(b, 0, sizeof *b);
}

int proto_batch_add(proto_batch_t *b, const proto_task_status_t *s, uint64_t req_id, char *err,
                    size_t errcap)
{
    if (b->n >= PROTO_MAX_BATCH)
        return err_fmt(err, errcap, ERR_FULL, "status batch: %u statuses already", PROTO_MAX_BATCH);
    const proto__schema_t *sch = proto__schema_of(PROTO_TASK_STATUS);
    int rc = proto__check_body(sch, s, err, errcap);
    if (rc != 0)
        return rc;
    size_t was = b->items.len;
    proto__sink_t sink = {&b->items, PROTO_MAX_MSG_BYTES - 64, 0};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sink, proto__write);
    if (proto__pack_body(&pk, sch, s) != 0) {
        b->items.len = was;
        rc = sink.failed != 0 ? sink.failed : ERR_NOMEM;
        return err_fmt(err, errcap, rc, "status batch: %s", err_text(rc));
    }
    b->n++;
    b->req_id = req_id;
    return 0;
}

int proto_batch_encode(proto_batch_t *b, proto_buf_t *buf, char *err, size_t errcap)
{
    uint32_t n = b->n;
    b->n = 0;
    if (n == 0) {
        b->items.len = 0;
        return err_fmt(err, errcap, ERR_INVAL, "status batch: empty");
    }
    proto__sink_t sink = {buf, PROTO_MAX_MSG_BYTES, 0};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sink, proto__write);
    buf->len = 0;
    int rc = msgpack_pack_array(&pk, 4) | msgpack_pack_uint32(&pk, PROTO_VERSION);
    if (n == 1) {
        rc |= msgpack_pack_uint32(&pk, PROTO_TASK_STATUS) | msgpack_pack_uint64(&pk, b->req_id);
    } else {
        rc |= msgpack_pack_uint32(&pk, PROTO_TASK_STATUS_BATCH) | msgpack_pack_uint64(&pk, 0) |
              msgpack_pack_map(&pk, 1) | proto__pack_key(&pk, "statuses", 8) |
              msgpack_pack_array(&pk, n);
    }
    rc |= proto__write(&sink, (const char *)b->items.data, b->items.len);
    b->items.len = 0;
    if (rc != 0) {
        buf->len = 0;
        rc = sink.failed != 0 ? sink.failed : ERR_NOMEM;
        return err_fmt(err, errcap, rc, "status batch: %s", err_text(rc));
    }
    return 0;
}
