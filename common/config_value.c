/* config_value.c - the value syntax of configuration files: parsers and formatters. */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/mem.h"

/* ---- value parsers --------------------------------------------------------------------- */

static const char *config__skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

int config_parse_int(const char *text, int64_t *out, char *msg, size_t cap)
{
    const char *p = text;
    if (*p == '+')
        p++;
    if (!(isdigit((unsigned char)*p) || (*p == '-' && isdigit((unsigned char)p[1]))))
        return err_fmt(msg, cap, ERR_PARSE, "'%s' is not an integer", text);
    errno = 0;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (*end != '\0')
        return err_fmt(msg, cap, ERR_PARSE, "'%s' is not an integer", text);
    if (errno == ERANGE)
        return err_fmt(msg, cap, ERR_RANGE, "'%s' does not fit in 64 bits", text);
    *out = (int64_t)v;
    return 0;
}

int config_parse_double(const char *text, double *out, char *msg, size_t cap)
{
    const char *p = text;
    /* strtod also reads "inf", "nan" and hex floats; a configuration wants plain decimals. */
    if (!(isdigit((unsigned char)*p) || *p == '-' || *p == '+' || *p == '.'))
        return err_fmt(msg, cap, ERR_PARSE, "'%s' is not a number", text);
    if (strpbrk(text, "xXnNiI") != NULL)
        return err_fmt(msg, cap, ERR_PARSE, "'%s' is not a decimal number", text);
    errno = 0;
    char *end;
    double v = strtod(p, &end);
    if (end == p || *end != '\0')
        return err_fmt(msg, cap, ERR_PARSE, "'%s' is not a number", text);
    if (errno == ERANGE || !isfinite(v))
        return err_fmt(msg, cap, ERR_RANGE, "'%s' is out of range", text);
    *out = v;
    return 0;
}

/* A non-negative decimal number followed by an optional unit: returns the number and points
 * *unit at the (whitespace-skipped) rest. */
static int config__number_unit(const char *text, double *num, const char **unit, const char *what,
                               char *msg, size_t cap)
{
    const char *p = text;
    if (!(isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))))
        return err_fmt(msg, cap, ERR_PARSE, "'%s' is not a %s", text, what);
    errno = 0;
    char *end;
    double v = strtod(p, &end);
    /* Reject hex floats, "inf", exponents: strtod took them, we do not want them. */
    for (const char *q = p; q < end; q++) {
        if (!isdigit((unsigned char)*q) && *q != '.')
            return err_fmt(msg, cap, ERR_PARSE, "'%s' is not a %s", text, what);
    }
    if (errno == ERANGE || !isfinite(v))
        return err_fmt(msg, cap, ERR_RANGE, "'%s' is out of range", text);
    *num = v;
    *unit = config__skip_ws(end);
    return 0;
}

int config_parse_duration(const char *text, int64_t *ms, char *msg, size_t cap)
{
    static const struct {
        const char *name;
        double ms;
    } units[] = {{"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"min", 60e3}, {"h", 3600e3}, {"d", 86400e3}};
    double v;
    const char *unit;
    int rc = config__number_unit(text, &v, &unit, "duration", msg, cap);
    if (rc != 0)
        return rc;
    double factor = -1;
    if (*unit == '\0') {
        if (v != 0)
            return err_fmt(msg, cap, ERR_PARSE,
                           "duration '%s' needs a unit (ms, s, m, h, d), e.g. '%ss'", text, text);
        factor = 1;
    }
    for (size_t i = 0; factor < 0 && i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) == 0)
            factor = units[i].ms;
    }
    if (factor < 0)
        return err_fmt(msg, cap, ERR_PARSE, "duration '%s': unknown unit '%s' (use ms, s, m, h, d)",
                       text, unit);
    double r = nearbyint(v * factor);
    if (r > 9.2e18)
        return err_fmt(msg, cap, ERR_RANGE, "duration '%s' is too long", text);
    if (r == 0 && v != 0)
        return err_fmt(msg, cap, ERR_RANGE, "duration '%s' is shorter than 1ms", text);
    *ms = (int64_t)r;
    return 0;
}

int config_parse_size(const char *text, uint64_t *bytes, char *msg, size_t cap)
{
    static const struct {
        const char *name;
        double mult;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"K", 1024.0},
                 {"KiB", 1024.0},
                 {"M", 1048576.0},
                 {"MiB", 1048576.0},
                 {"G", 1073741824.0},
                 {"GiB", 1073741824.0},
                 {"T", 1099511627776.0},
                 {"TiB", 1099511627776.0},
                 {"kB", 1e3},
                 {"KB", 1e3},
                 {"MB", 1e6},
                 {"GB", 1e9},
                 {"TB", 1e12}};
    double v;
    const char *unit;
    int rc = config__number_unit(text, &v, &unit, "size", msg, cap);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) != 0)
            continue;
        double r = nearbyint(v * units[i].mult);
        if (r > 9.2e18)
            return err_fmt(msg, cap, ERR_RANGE, "size '%s' is too large", text);
        *bytes = (uint64_t)r;
        return 0;
    }
    return err_fmt(msg, cap, ERR_PARSE,
                   "size '%s': unknown unit '%s' (use B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)", text,
                   unit);
}

int config_parse_bool(const char *text, bool *out, char *msg, size_t cap)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return err_fmt(msg, cap, ERR_PARSE, "'%s' is not a boolean (true/false, yes/no, on/off, 1/0)",
                   text);
}

char *config_format_duration(int64_t ms, char *out)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (ms != 0 && ms % units[i].ms == 0) {
            snprintf(out, CONFIG_DURATION_SIZE, "%" PRId64 "%s", ms / units[i].ms, units[i].name);
            return out;
        }
    }
    if (ms >= 1000 && ms % 100 == 0)
        snprintf(out, CONFIG_DURATION_SIZE, "%" PRId64 ".%" PRId64 "s", ms / 1000,
                 (ms % 1000) / 100);
    else
        snprintf(out, CONFIG_DURATION_SIZE, "%" PRId64 "ms", ms);
    return out;
}

const char *config_type_name(enum config_type type)
{
    switch (type) {
    case CONFIG_STRING:
        return "string";
    case CONFIG_INT:
        return "int";
    case CONFIG_DOUBLE:
        return "double";
    case CONFIG_BOOL:
        return "bool";
    case CONFIG_DURATION:
        return "duration";
    case CONFIG_SIZE:
        return "size";
    case CONFIG_LIST:
        return "list";
    }
    return "?";
}
