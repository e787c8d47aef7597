/* decode.c - defensive decoding of proto messages (proto/README.md; docs/architecture.md, "Facts
 * about the dependencies": msgpack-c).
 *
 * msgpack-c 4.0's C unpacker has no limits: on an array or map header it allocates
 * count * sizeof(msgpack_object) from the zone before looking at the bytes that should follow,
 * so "dd ff ff ff ff" (5 bytes) asks for ~100 GB. Hence the order:
 *   1. cap the buffer at PROTO_MAX_MSG_BYTES;
 *   2. pre-scan the bytes without allocating: complete, nesting <= PROTO_MAX_DEPTH, total
 *      objects <= PROTO_MAX_OBJECTS, every count and length within the bytes left, exactly one
 *      value filling the buffer; after that the zone is bounded by 24 bytes per object (6 MiB);
 *   3. msgpack_unpack into a zone (strings stay references into the caller's buffer);
 *   4. walk the object tree with the schema: every type checked, ints of either sign accepted
 *      and range-checked, counts and lengths bounded, keys compared by length and bytes, values
 *      copied out through mem_* before the zone is freed.
 */
#include <math.h>
#include <stdarg.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/pack.h"
#include "proto/schema.h"

typedef struct proto__dctx {
    proto_reject_t reason;
    char *err;
    size_t errcap;
} proto__dctx_t;

static int proto__reject(proto__dctx_t *c, proto_reject_t reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int proto__reject(proto__dctx_t *c, proto_reject_t reason, const char *fmt, ...)
{
    c->reason = reason;
    if (c->err != NULL && c->errcap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errcap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* Pre-scan. */

static uint64_t proto__be(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

int proto__prescan(const uint8_t *p, size_t len, size_t *used, char *err, size_t errcap)
{
    proto__dctx_t c = {PROTO_REJ_MALFORMED, err, errcap};
    uint64_t remaining[PROTO_MAX_DEPTH + 1];
    unsigned depth = 0;
    uint64_t objects = 0;
    size_t pos = 0;
    remaining[0] = 1;
    for (;;) {
        while (remaining[depth] == 0 && depth > 0)
            depth--;
        if (remaining[depth] == 0)
            break;
        remaining[depth]--;
        if (pos >= len) {
            proto__reject(&c, PROTO_REJ_MALFORMED, "truncated at byte %zu", pos);
            return 1 + PROTO_REJ_MALFORMED;
        }
        if (++objects > PROTO_MAX_OBJECTS) {
            proto__reject(&c, PROTO_REJ_STRUCTURE, "more than %u objects", PROTO_MAX_OBJECTS);
            return 1 + PROTO_REJ_STRUCTURE;
        }
        uint8_t b = p[pos++];
        unsigned lenbytes = 0; /* size of a length/count field that follows */
        uint64_t skip = 0;     /* payload bytes */
        uint64_t children = 0; /* elements of a container */
        int container = 0, map = 0;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            /* fixint, nil, bool */
        } else if (b <= 0x8f) {
            container = map = 1;
            children = b & 0x0f;
        } else if (b <= 0x9f) {
            container = 1;
            children = b & 0x0f;
        } else if (b <= 0xbf) {
            skip = b & 0x1f;
        } else {
            switch (b) {
            case 0xc4: /* bin 8 */
            case 0xd9: /* str 8 */
                lenbytes = 1;
                break;
            case 0xc5:
            case 0xda:
                lenbytes = 2;
                break;
            case 0xc6:
            case 0xdb:
                lenbytes = 4;
                break;
            case 0xc7: /* ext 8: length, then a type byte */
                lenbytes = 1;
                skip = 1;
                break;
            case 0xc8:
                lenbytes = 2;
                skip = 1;
                break;
            case 0xc9:
                lenbytes = 4;
                skip = 1;
                break;
            case 0xca: /* float 32 */
            case 0xce: /* uint 32 */
            case 0xd2: /* int 32 */
                skip = 4;
                break;
            case 0xcb:
            case 0xcf:
            case 0xd3:
                skip = 8;
                break;
            case 0xcc:
            case 0xd0:
                skip = 1;
                break;
            case 0xcd:
            case 0xd1:
                skip = 2;
                break;
            case 0xd4: /* fixext: type byte + 1, 2, 4, 8, 16 */
                skip = 2;
                break;
            case 0xd5:
                skip = 3;
                break;
            case 0xd6:
                skip = 5;
                break;
            case 0xd7:
                skip = 9;
                break;
            case 0xd8:
                skip = 17;
                break;
            case 0xdc:
                container = 1;
                lenbytes = 2;
                break;
            case 0xdd:
                container = 1;
                lenbytes = 4;
                break;
            case 0xde:
                container = map = 1;
                lenbytes = 2;
                break;
            case 0xdf:
                container = map = 1;
                lenbytes = 4;
                break;
            default: /* 0xc1 is never used */
                proto__reject(&c, PROTO_REJ_MALFORMED, "invalid byte 0x%02x at %zu", b, pos - 1);
                return 1 + PROTO_REJ_MALFORMED;
            }
        }
        if (lenbytes > 0) {
            if (len - pos < lenbytes) {
                proto__reject(&c, PROTO_REJ_MALFORMED, "truncated length at byte %zu", pos);
                return 1 + PROTO_REJ_MALFORMED;
            }
            uint64_t n = proto__be(p + pos, lenbytes);
            pos += lenbytes;
            if (container)
                children = n;
            else
                skip += n;
        }
        if (skip > len - pos) {
            proto__reject(&c, PROTO_REJ_MALFORMED, "value at byte %zu runs past the end", pos);
            return 1 + PROTO_REJ_MALFORMED;
        }
        pos += (size_t)skip;
        if (container) {
            if (map)
                children *= 2;
            /* Every element takes at least one byte: a count the bytes cannot hold is a lie,
             * and rejecting it here is what keeps msgpack-c from reserving memory for it. */
            if (children > len - pos) {
                proto__reject(&c, PROTO_REJ_MALFORMED,
                              "container at byte %zu declares %llu elements, %zu bytes left", pos,
                              (unsigned long long)children, len - pos);
                return 1 + PROTO_REJ_MALFORMED;
            }
            if (children > 0) {
                if (depth >= PROTO_MAX_DEPTH) {
                    proto__reject(&c, PROTO_REJ_STRUCTURE, "nesting deeper than %u",
                                  PROTO_MAX_DEPTH);
                    return 1 + PROTO_REJ_STRUCTURE;
                }
                remaining[++depth] = children;
            }
        }
    }
    *used = pos;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Typed reads from the object tree. */

static int proto__key_is(const msgpack_object *k, const char *key, size_t n)
{
    return k->via.str.size == n && memcmp(k->via.str.ptr, key, n) == 0;
}

static int proto__get_u64(proto__dctx_t *c, const char *w, const char *key, const msgpack_object *o,
                          uint64_t min, uint64_t max, uint64_t *out)
{
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %lld not in [%llu, %llu]", w, key,
                             (long long)o->via.i64, (unsigned long long)min,
                             (unsigned long long)max);
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: not an integer", w, key);
    if (o->via.u64 < min || o->via.u64 > max)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %llu not in [%llu, %llu]", w, key,
                             (unsigned long long)o->via.u64, (unsigned long long)min,
                             (unsigned long long)max);
    *out = o->via.u64;
    return 0;
}

static int proto__get_i64(proto__dctx_t *c, const char *w, const char *key, const msgpack_object *o,
                          int64_t min, int64_t max, int64_t *out)
{
    int64_t v;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > (uint64_t)INT64_MAX)
            return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %llu too large", w, key,
                                 (unsigned long long)o->via.u64);
        v = (int64_t)o->via.u64;
    } else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        v = o->via.i64;
    } else {
        return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: not an integer", w, key);
    }
    if (v < min || v > max)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %lld not in [%lld, %lld]", w, key,
                             (long long)v, (long long)min, (long long)max);
    *out = v;
    return 0;
}

static int proto__get_f64(proto__dctx_t *c, const char *w, const char *key, const msgpack_object *o,
                          double min, double max, double *out)
{
    double v;
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
        v = o->via.f64;
    else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        v = (double)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        v = (double)o->via.i64;
    else
        return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: not a number", w, key);
    if (!isfinite(v) || v < min || v > max)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %g not in [%g, %g]", w, key, v, min, max);
    *out = v;
    return 0;
}

/* Copies a str object out (NUL-terminated, through mem_*). */
static int proto__get_str(proto__dctx_t *c, const char *w, const char *key, const msgpack_object *o,
                          uint64_t min, uint64_t max, char **out)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: not a string", w, key);
    uint32_t n = o->via.str.size;
    if (n > max)
        return proto__reject(c, PROTO_REJ_LIMIT, "%s.%s: %u bytes, at most %llu", w, key, n,
                             (unsigned long long)max);
    if (n < min)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %u bytes, at least %llu", w, key, n,
                             (unsigned long long)min);
    if (n > 0 && memchr(o->via.str.ptr, '\0', n) != NULL)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: contains a NUL byte", w, key);
    char *s = mem_alloc((size_t)n + 1);
    if (s == NULL)
        return proto__reject(c, PROTO_REJ_NOMEM, "%s.%s: out of memory", w, key);
    if (n > 0)
        memcpy(s, o->via.str.ptr, n);
    s[n] = '\0';
    *out = s;
    return 0;
}

/* Checks an array or map count against [min, max]. */
static int proto__get_count(proto__dctx_t *c, const char *w, const char *key,
                            const msgpack_object *o, msgpack_object_type type, uint64_t min,
                            uint64_t max, uint32_t *out)
{
    if (o->type != type)
        return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: not %s", w, key,
                             type == MSGPACK_OBJECT_MAP ? "a map" : "an array");
    uint32_t n = type == MSGPACK_OBJECT_MAP ? o->via.map.size : o->via.array.size;
    if (n > max)
        return proto__reject(c, PROTO_REJ_LIMIT, "%s.%s: %u entries, at most %llu", w, key, n,
                             (unsigned long long)max);
    if (n < min)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %u entries, at least %llu", w, key, n,
                             (unsigned long long)min);
    *out = n;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Matrix: {"cpu": [...], "mem": [...], "cells": [...], "ts": int}. */

static int proto__get_matrix(proto__dctx_t *c, const char *w, const msgpack_object *o,
                             proto_matrix_t *m)
{
    uint32_t n = 0;
    if (proto__get_count(c, w, "matrix", o, MSGPACK_OBJECT_MAP, 0, PROTO_MAX_FIELDS, &n) != 0)
        return -1;
    const msgpack_object *cpu = NULL, *mem = NULL, *cells = NULL, *ts = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR)
            return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.matrix: key not a string", w);
        const msgpack_object **slot = proto__key_is(k, "cpu", 3)     ? &cpu
                                      : proto__key_is(k, "mem", 3)   ? &mem
                                      : proto__key_is(k, "cells", 5) ? &cells
                                      : proto__key_is(k, "ts", 2)    ? &ts
                                                                     : NULL;
        if (slot == NULL)
            continue;
        if (*slot != NULL)
            return proto__reject(c, PROTO_REJ_DUPLICATE, "%s.matrix: key given twice", w);
        *slot = v;
    }
    if (cpu == NULL || mem == NULL || cells == NULL)
        return proto__reject(c, PROTO_REJ_MISSING, "%s.matrix: needs cpu, mem and cells", w);
    uint32_t nc = 0, nm = 0, ncells = 0;
    if (proto__get_count(c, w, "matrix.cpu", cpu, MSGPACK_OBJECT_ARRAY, 0, PROTO_MAX_MATRIX_DIM,
                         &nc) != 0 ||
        proto__get_count(c, w, "matrix.mem", mem, MSGPACK_OBJECT_ARRAY, 0, PROTO_MAX_MATRIX_DIM,
                         &nm) != 0 ||
        proto__get_count(c, w, "matrix.cells", cells, MSGPACK_OBJECT_ARRAY, 0,
                         PROTO_MAX_MATRIX_CELLS, &ncells) != 0)
        return -1;
    if (ncells != nc * nm)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.matrix: %u cells for %ux%u bins", w, ncells,
                             nc, nm);
    m->ncpu = nc;
    m->nmem = nm;
    for (uint32_t i = 0; i < nc; i++)
        if (proto__get_f64(c, w, "matrix.cpu", &cpu->via.array.ptr[i], 0, PROTO_MAX_CPU,
                           &m->cpu_bounds[i]) != 0)
            return -1;
    for (uint32_t i = 0; i < nm; i++)
        if (proto__get_u64(c, w, "matrix.mem", &mem->via.array.ptr[i], 0, PROTO_MAX_MEM_MB,
                           &m->mem_bounds_mb[i]) != 0)
            return -1;
    for (uint32_t i = 0; i < ncells; i++) {
        uint64_t v = 0;
        if (proto__get_u64(c, w, "matrix.cells", &cells->via.array.ptr[i], 0, UINT32_MAX, &v) != 0)
            return -1;
        m->cells_ms[i] = (uint32_t)v;
    }
    if (ts != NULL &&
        proto__get_i64(c, w, "matrix.ts", ts, 0, PROTO_MAX_TIME_MS, &m->timestamp_ms) != 0)
        return -1;
    char why[160];
    if (proto__matrix_check(m, why, sizeof why) != 0)
        return proto__reject(c, PROTO_REJ_RANGE, "%s.%s", w, why);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Bodies. */

static int proto__get_body(proto__dctx_t *c, const proto__schema_t *s, const msgpack_object *o,
                           void *body);

static int proto__get_field(proto__dctx_t *c, const proto__schema_t *s, const proto__field_t *f,
                            const msgpack_object *o, unsigned char *base)
{
    void *at = base + f->off;
    const char *w = s->name, *key = f->key;
    switch (f->kind) {
    case PROTO__BOOL:
        if (o->type != MSGPACK_OBJECT_BOOLEAN)
            return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: not a boolean", w, key);
        *(bool *)at = o->via.boolean;
        return 0;
    case PROTO__U32: {
        uint64_t v = 0;
        if (proto__get_u64(c, w, key, o, f->umin, f->umax, &v) != 0)
            return -1;
        *(uint32_t *)at = (uint32_t)v;
        return 0;
    }
    case PROTO__U64:
        return proto__get_u64(c, w, key, o, f->umin, f->umax, at);
    case PROTO__I32: {
        int64_t v = 0;
        if (proto__get_i64(c, w, key, o, f->imin, f->imax, &v) != 0)
            return -1;
        *(int32_t *)at = (int32_t)v;
        return 0;
    }
    case PROTO__I64:
        return proto__get_i64(c, w, key, o, f->imin, f->imax, at);
    case PROTO__F64:
        return proto__get_f64(c, w, key, o, f->dmin, f->dmax, at);
    case PROTO__STR:
        return proto__get_str(c, w, key, o, f->umin, f->umax, at);
    case PROTO__STRS: {
        uint32_t n = 0, *count = (uint32_t *)(base + f->count_off);
        if (proto__get_count(c, w, key, o, MSGPACK_OBJECT_ARRAY, f->umin, f->umax, &n) != 0)
            return -1;
        if (n == 0)
            return 0;
        char **v = mem_calloc(n, sizeof *v);
        if (v == NULL)
            return proto__reject(c, PROTO_REJ_NOMEM, "%s.%s: out of memory", w, key);
        *(char ***)at = v;
        *count = n; /* entries are NULL until read: freeing a partial array is safe */
        for (uint32_t i = 0; i < n; i++)
            if (proto__get_str(c, w, key, &o->via.array.ptr[i], 0, f->item_max, &v[i]) != 0)
                return -1;
        return 0;
    }
    case PROTO__KVS: {
        uint32_t n = 0, *count = (uint32_t *)(base + f->count_off);
        if (proto__get_count(c, w, key, o, MSGPACK_OBJECT_MAP, 0, f->umax, &n) != 0)
            return -1;
        if (n == 0)
            return 0;
        proto_kv_t *v = mem_calloc(n, sizeof *v);
        if (v == NULL)
            return proto__reject(c, PROTO_REJ_NOMEM, "%s.%s: out of memory", w, key);
        *(proto_kv_t **)at = v;
        *count = n;
        for (uint32_t i = 0; i < n; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            if (proto__get_str(c, w, key, &kv->key, 1, PROTO_MAX_ENV_KEY, &v[i].key) != 0 ||
                proto__get_str(c, w, key, &kv->val, 0, f->item_max, &v[i].value) != 0)
                return -1;
            if (strchr(v[i].key, '=') != NULL)
                return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: key contains '='", w, key);
        }
        return 0;
    }
    case PROTO__STRUCTS: {
        uint32_t n = 0, *count = (uint32_t *)(base + f->count_off);
        if (proto__get_count(c, w, key, o, MSGPACK_OBJECT_ARRAY, f->umin, f->umax, &n) != 0)
            return -1;
        if (n == 0)
            return 0;
        unsigned char *v = mem_calloc(n, f->sub->size);
        if (v == NULL)
            return proto__reject(c, PROTO_REJ_NOMEM, "%s.%s: out of memory", w, key);
        *(unsigned char **)at = v;
        *count = n;
        for (uint32_t i = 0; i < n; i++)
            if (proto__get_body(c, f->sub, &o->via.array.ptr[i], v + (size_t)i * f->sub->size) != 0)
                return -1;
        return 0;
    }
    case PROTO__MATRIX:
        return proto__get_matrix(c, w, o, at);
    case PROTO__BIN: {
        uint32_t *count = (uint32_t *)(base + f->count_off);
        if (o->type != MSGPACK_OBJECT_BIN)
            return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: not bytes", w, key);
        uint32_t n = o->via.bin.size;
        if (n > f->umax)
            return proto__reject(c, PROTO_REJ_LIMIT, "%s.%s: %u bytes, at most %llu", w, key, n,
                                 (unsigned long long)f->umax);
        if (n < f->umin && (f->required || n > 0))
            return proto__reject(c, PROTO_REJ_RANGE, "%s.%s: %u bytes, at least %llu", w, key, n,
                                 (unsigned long long)f->umin);
        if (n == 0)
            return 0;
        uint8_t *v = mem_alloc(n);
        if (v == NULL)
            return proto__reject(c, PROTO_REJ_NOMEM, "%s.%s: out of memory", w, key);
        memcpy(v, o->via.bin.ptr, n);
        *(uint8_t **)at = v;
        *count = n;
        return 0;
    }
    }
    return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s.%s: bad field kind", w, key);
}

/* Fills `body` (zeroed by the caller) from a map. On failure the body may hold partial
 * allocations: the caller frees it with proto__body_free. */
static int proto__get_body(proto__dctx_t *c, const proto__schema_t *s, const msgpack_object *o,
                           void *body)
{
    uint32_t n = 0;
    if (proto__get_count(c, s->name, "(body)", o, MSGPACK_OBJECT_MAP, 0, PROTO_MAX_FIELDS, &n) != 0)
        return -1;
    uint64_t seen = 0; /* schemas have at most 64 fields (a test checks) */
    uint32_t hint = 0;
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR)
            return proto__reject(c, PROTO_REJ_FIELD_TYPE, "%s: a key is not a string", s->name);
        /* Encoders write fields in table order: try the one after the last match first. */
        uint32_t j = hint;
        if (j >= s->nfields || !proto__key_is(k, s->fields[j].key, s->fields[j].keylen))
            for (j = 0; j < s->nfields; j++)
                if (proto__key_is(k, s->fields[j].key, s->fields[j].keylen))
                    break;
        if (j == s->nfields)
            continue; /* unknown field: ignored, for newer peers */
        hint = j + 1;
        if (seen & (1ull << j))
            return proto__reject(c, PROTO_REJ_DUPLICATE, "%s.%s: given twice", s->name,
                                 s->fields[j].key);
        seen |= 1ull << j;
        if (proto__get_field(c, s, &s->fields[j], &o->via.map.ptr[i].val, body) != 0)
            return -1;
    }
    for (uint32_t j = 0; j < s->nfields; j++)
        if (s->fields[j].required && !(seen & (1ull << j)))
            return proto__reject(c, PROTO_REJ_MISSING, "%s.%s: missing", s->name, s->fields[j].key);
    if (s->check != NULL) {
        char why[192];
        if (s->check(body, why, sizeof why) != 0)
            return proto__reject(c, PROTO_REJ_RANGE, "%s", why);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static int proto__reject_code(proto_reject_t r)
{
    switch (r) {
    case PROTO_REJ_SIZE:
    case PROTO_REJ_STRUCTURE:
    case PROTO_REJ_LIMIT:
        return ERR_TOOBIG;
    case PROTO_REJ_VERSION:
        return ERR_VERSION;
    case PROTO_REJ_UNKNOWN_TYPE:
        return ERR_UNKNOWN_TYPE;
    case PROTO_REJ_RANGE:
        return ERR_RANGE;
    case PROTO_REJ_NOMEM:
        return ERR_NOMEM;
    default:
        return ERR_PARSE;
    }
}

/* Decodes the envelope and body from the unpacked tree; on failure *type says how far the
 * type was known (0 before it was). */
static int proto__get_msg(proto__dctx_t *c, const msgpack_object *o, proto_msg_t *out,
                          uint32_t *type)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4)
        return proto__reject(c, PROTO_REJ_ENVELOPE, "envelope: not [version, type, req_id, body]");
    const msgpack_object *e = o->via.array.ptr;
    if (e[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return proto__reject(c, PROTO_REJ_ENVELOPE, "envelope: version not an unsigned integer");
    if (e[0].via.u64 < PROTO_VERSION_MIN || e[0].via.u64 > PROTO_VERSION)
        return proto__reject(c, PROTO_REJ_VERSION, "envelope: version %llu, this end speaks %u..%u",
                             (unsigned long long)e[0].via.u64, PROTO_VERSION_MIN, PROTO_VERSION);
    if (e[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return proto__reject(c, PROTO_REJ_ENVELOPE, "envelope: type not an unsigned integer");
    const proto__schema_t *s =
        e[1].via.u64 <= UINT32_MAX ? proto__schema_of((uint32_t)e[1].via.u64) : NULL;
    if (s == NULL)
        return proto__reject(c, PROTO_REJ_UNKNOWN_TYPE, "envelope: unknown message type %llu",
                             (unsigned long long)e[1].via.u64);
    if (e[2].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return proto__reject(c, PROTO_REJ_ENVELOPE, "envelope: req_id not an unsigned integer");
    *type = (uint32_t)e[1].via.u64;
    out->version = (uint32_t)e[0].via.u64;
    out->type = (proto_type_t)*type;
    out->req_id = e[2].via.u64;
    if (e[3].type != MSGPACK_OBJECT_MAP)
        return proto__reject(c, PROTO_REJ_ENVELOPE, "envelope: body not a map");
    if (proto__get_body(c, s, &e[3], (unsigned char *)out + PROTO__BODY_OFF) != 0) {
        proto__body_free(s, (unsigned char *)out + PROTO__BODY_OFF);
        return -1;
    }
    return 0;
}

int proto_decode_ex(const void *buf, size_t len, proto_msg_t *out, proto_stats_t *stats,
                    proto_reject_t *reason, char *err, size_t errcap)
{
    proto__dctx_t c = {PROTO_REJ_MALFORMED, err, errcap};
    uint32_t type = 0, packed_type = 0;
    uint64_t packed_req = 0;
    proto_buf_t inner;
    proto_buf_init(&inner);
    int ok = -1;
    memset(out, 0, sizeof *out);
    if (stats != NULL) {
        stats->calls++;
        stats->bytes += len;
    }
    if (buf == NULL || len == 0 || len > PROTO_MAX_MSG_BYTES) {
        proto__reject(&c, PROTO_REJ_SIZE, "message of %zu bytes, limit %u", buf ? len : 0,
                      PROTO_MAX_MSG_BYTES);
        goto done;
    }
    /* a packed view (pack.h): inflate, then decode the inner message as any other */
    if (len >= 2 && ((const uint8_t *)buf)[0] == 0x94 &&
        ((const uint8_t *)buf)[1] == PROTO_VERSION_PACKED) {
        int pr = proto__unpack(buf, len, &inner, &packed_type, &packed_req, err, errcap);
        if (pr != 0) {
            c.reason = (proto_reject_t)(pr - 1);
            out->type = (proto_type_t)packed_type;
            out->version = PROTO_VERSION_PACKED;
            out->req_id = packed_req;
            type = packed_type;
            goto done;
        }
        buf = inner.data;
        len = inner.len;
    }
    size_t used = 0;
    int rc = proto__prescan(buf, len, &used, err, errcap);
    if (rc != 0) {
        c.reason = (proto_reject_t)(rc - 1);
        goto done;
    }
    if (used != len) {
        proto__reject(&c, PROTO_REJ_TRAILING, "%zu bytes after a %zu-byte message", len - used,
                      used);
        goto done;
    }
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, MSGPACK_ZONE_CHUNK_SIZE)) {
        proto__reject(&c, PROTO_REJ_NOMEM, "out of memory for the unpack zone");
        goto done;
    }
    msgpack_object root;
    size_t off = 0;
    msgpack_unpack_return ur = msgpack_unpack(buf, len, &off, &zone, &root);
    if (ur == MSGPACK_UNPACK_SUCCESS && off == len)
        ok = proto__get_msg(&c, &root, out, &type);
    else if (ur == MSGPACK_UNPACK_NOMEM_ERROR)
        proto__reject(&c, PROTO_REJ_NOMEM, "msgpack: out of memory");
    else if (ur == MSGPACK_UNPACK_EXTRA_BYTES || (ur == MSGPACK_UNPACK_SUCCESS && off != len))
        proto__reject(&c, PROTO_REJ_TRAILING, "msgpack: bytes after the message");
    else
        proto__reject(&c, PROTO_REJ_MALFORMED, "msgpack: malformed (%d)", (int)ur);
    msgpack_zone_destroy(&zone);
    if (ok == 0 && packed_type != 0 && (out->type != packed_type || out->req_id != packed_req)) {
        proto__body_free(proto__schema_of(type), (unsigned char *)out + PROTO__BODY_OFF);
        ok = proto__reject(&c, PROTO_REJ_ENVELOPE,
                           "packed: the inner message is not the %s it wraps",
                           proto_type_name((proto_type_t)packed_type));
    }
done:
    proto_buf_close(&inner);
    if (ok == 0) {
        if (packed_type != 0)
            out->version = PROTO_VERSION_PACKED;
        if (stats != NULL) {
            stats->decoded_total++;
            stats->decoded_by_type[type]++;
        }
        return 0;
    }
    proto_msg_t head = *out; /* the envelope, when it was read (proto__get_msg) */
    memset(out, 0, sizeof *out);
    if (type != 0) {
        out->type = head.type;
        out->version = head.version;
        out->req_id = head.req_id;
    }
    if (stats != NULL) {
        stats->rejected_total++;
        stats->rejected_by_type[type < PROTO_TYPE_LIMIT ? type : 0]++;
        stats->rejected_by_reason[c.reason]++;
    }
    if (reason != NULL)
        *reason = c.reason;
    return proto__reject_code(c.reason);
}

int proto_decode(const void *buf, size_t len, proto_msg_t *out, proto_stats_t *stats, char *err,
                 size_t errcap)
{
    return proto_decode_ex(buf, len, out, stats, NULL, err, errcap);
}
