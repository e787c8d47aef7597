/* spec_json.c - checked reads of JSON values for the spec parser: strings within bounds, allowed
 * keys, finite numbers, non-negative integers. Each fills the message with the field's context. */
#include "jm/spec.h"
#include "jm/spec_internal.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

/* Copies a JSON string that must be 1..maxlen bytes with no NUL or control characters (when
 * `printable`), or reports why not. `what` names the field for the message. */
int spec__string(const json_t *v, size_t maxlen, int printable, const char *ctx, const char *what,
                 char **out, char *msg, size_t cap)
{
    *out = NULL;
    if (!json_is_string(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be a string", ctx, what);
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    if (len == 0)
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must not be empty", ctx, what);
    if (len > maxlen)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s%s is %zu bytes, over the limit of %zu", ctx, what,
                       len, maxlen);
    if (strlen(s) != len)
        return err_fmt(msg, cap, ERR_INVAL, "%s%s contains a NUL character", ctx, what);
    if (printable) {
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c < 0x20 || c == 0x7f)
                return err_fmt(msg, cap, ERR_INVAL, "%s%s contains a control character", ctx, what);
        }
    }
    *out = mem_strndup(s, len);
    return *out == NULL ? err_fmt(msg, cap, ERR_NOMEM, "out of memory") : 0;
}

/* Checks an object's keys against a NULL-terminated allow list. */
int spec__keys(const json_t *obj, const char *const *allowed, const char *ctx, char *msg,
               size_t cap)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        (void)val;
        int ok = 0;
        for (size_t i = 0; allowed[i] != NULL; i++)
            if (strcmp(key, allowed[i]) == 0)
                ok = 1;
        if (!ok)
            return err_fmt(msg, cap, ERR_INVAL, "%sunknown key \"%.64s\"", ctx, key);
    }
    return 0;
}

/* A finite JSON number (integer or real). */
int spec__number(const json_t *v, const char *ctx, const char *what, double *out, char *msg,
                 size_t cap)
{
    if (!json_is_number(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be a number", ctx, what);
    double d = json_number_value(v);
    if (!isfinite(d))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be finite", ctx, what);
    *out = d;
    return 0;
}

/* A non-negative JSON integer. */
int spec__uint(const json_t *v, const char *ctx, const char *what, uint64_t *out, char *msg,
               size_t cap)
{
    if (!json_is_integer(v))
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must be an integer", ctx, what);
    json_int_t i = json_integer_value(v);
    if (i < 0)
        return err_fmt(msg, cap, ERR_INVAL, "%s%s must not be negative (got %lld)", ctx, what,
                       (long long)i);
    *out = (uint64_t)i;
    return 0;
}
