/* describe.c - text for humans: a one-line summary of a message for logs, the decode
 * counters as JSON for status output. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/schema.h"

typedef struct proto__text {
    char *out;
    size_t cap, len; /* len may pass cap: the length the full text would have */
} proto__text_t;

static void proto__put(proto__text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void proto__put(proto__text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    int n = vsnprintf(room > 0 ? t->out + t->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* Strings are shown up to 48 bytes, with control characters and quotes escaped, so a log line
 * stays one line whatever a peer sent. */
static void proto__put_str(proto__text_t *t, const char *s)
{
    proto__put(t, "\"");
    size_t n = strlen(s);
    for (size_t i = 0; i < n && i < 48; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
            proto__put(t, "\\x%02x", c);
        else
            proto__put(t, "%c", c);
    }
    proto__put(t, n > 48 ? "...\"" : "\"");
}

static void proto__describe_body(proto__text_t *t, const proto__schema_t *s,
                                 const unsigned char *base)
{
    for (uint32_t i = 0; i < s->nfields; i++) {
        const proto__field_t *f = &s->fields[i];
        const void *at = base + f->off;
        switch (f->kind) {
        case PROTO__BOOL:
            if (*(const bool *)at)
                proto__put(t, " %s", f->key);
            break;
        case PROTO__U32:
            if (*(const uint32_t *)at != 0 || f->required)
                proto__put(t, " %s=%u", f->key, *(const uint32_t *)at);
            break;
        case PROTO__U64:
            if (*(const uint64_t *)at != 0 || f->required)
                proto__put(t, " %s=%llu", f->key, (unsigned long long)*(const uint64_t *)at);
            break;
        case PROTO__I32:
            if (*(const int32_t *)at != 0 || f->required)
                proto__put(t, " %s=%d", f->key, *(const int32_t *)at);
            break;
        case PROTO__I64:
            if (*(const int64_t *)at != 0 || f->required)
                proto__put(t, " %s=%lld", f->key, (long long)*(const int64_t *)at);
            break;
        case PROTO__F64:
            if (*(const double *)at != 0 || f->required)
                proto__put(t, " %s=%g", f->key, *(const double *)at);
            break;
        case PROTO__STR:
            if (*(char *const *)at != NULL) {
                proto__put(t, " %s=", f->key);
                proto__put_str(t, *(char *const *)at);
            }
            break;
        case PROTO__STRS:
        case PROTO__KVS:
        case PROTO__STRUCTS:
        case PROTO__BIN: {
            uint32_t n = *(const uint32_t *)(base + f->count_off);
            if (n > 0)
                proto__put(t, " %s[%u]", f->key, n);
            break;
        }
        case PROTO__MATRIX: {
            const proto_matrix_t *m = at;
            if (m->ncpu > 0)
                proto__put(t, " %s=%ux%u", f->key, m->ncpu, m->nmem);
            break;
        }
        }
    }
}

size_t proto_describe(const proto_msg_t *msg, char *out, size_t cap)
{
    proto__text_t t = {out, cap, 0};
    if (cap > 0)
        out[0] = '\0';
    const proto__schema_t *s = proto__schema_of((uint32_t)msg->type);
    if (s == NULL) {
        proto__put(&t, "type %u?", (unsigned)msg->type);
        return t.len;
    }
    proto__put(&t, "%s req=%llu", proto_type_name(msg->type), (unsigned long long)msg->req_id);
    proto__describe_body(&t, s, (const unsigned char *)msg + PROTO__BODY_OFF);
    return t.len;
}

size_t proto_stats_json(const proto_stats_t *st, char *out, size_t cap)
{
    proto__text_t t = {out, cap, 0};
    if (cap > 0)
        out[0] = '\0';
    proto__put(&t, "{\"calls\":%llu,\"bytes\":%llu,\"decoded\":%llu,\"rejected\":%llu",
               (unsigned long long)st->calls, (unsigned long long)st->bytes,
               (unsigned long long)st->decoded_total, (unsigned long long)st->rejected_total);
    proto__put(&t, ",\"rejected_by_reason\":{");
    const char *sep = "";
    for (int r = 0; r < PROTO_REJ_COUNT; r++)
        if (st->rejected_by_reason[r] != 0) {
            proto__put(&t, "%s\"%s\":%llu", sep, proto_reject_name((proto_reject_t)r),
                       (unsigned long long)st->rejected_by_reason[r]);
            sep = ",";
        }
    proto__put(&t, "},\"by_type\":{");
    sep = "";
    if (st->rejected_by_type[0] != 0) {
        proto__put(&t, "\"unknown\":{\"rejected\":%llu}",
                   (unsigned long long)st->rejected_by_type[0]);
        sep = ",";
    }
    for (int ty = 1; ty < PROTO_TYPE_LIMIT; ty++)
        if (st->decoded_by_type[ty] != 0 || st->rejected_by_type[ty] != 0) {
            proto__put(&t, "%s\"%s\":{\"decoded\":%llu,\"rejected\":%llu}", sep,
                       proto_type_name((proto_type_t)ty),
                       (unsigned long long)st->decoded_by_type[ty],
                       (unsigned long long)st->rejected_by_type[ty]);
            sep = ",";
        }
    proto__put(&t, "}}");
    return t.len;
}
