/* config_print.c - writing configuration files: the documented schema and current values. */
#include "common/config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

/* Whether a value needs double quotes to be read back unchanged. */
static bool config__needs_quotes(const char *s)
{
    if (s[0] == '\0' || s[0] == ' ' || s[0] == '\t' || s[0] == '"')
        return true;
    size_t n = strlen(s);
    if (s[n - 1] == ' ' || s[n - 1] == '\t')
        return true;
    return strpbrk(s, "#;\\\n\r\t\"") != NULL;
}

static void config__put_string(FILE *out, const char *s)
{
    if (!config__needs_quotes(s)) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const char *p = s; *p != '\0'; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        default:
            fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void config__put_size(FILE *out, uint64_t v)
{
    static const struct {
        const char *name;
        uint64_t mult;
    } units[] = {
        {"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (v != 0 && v % units[i].mult == 0) {
            fprintf(out, "%" PRIu64 "%s", v / units[i].mult, units[i].name);
            return;
        }
    }
    fprintf(out, "%" PRIu64, v);
}

/* The shortest %g form that reads back to the same double. */
static void config__put_double(FILE *out, double v)
{
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
}

static int config__put_value(FILE *out, const struct config_key *k, const void *cfg)
{
    const void *f = (const char *)cfg + k->offset;
    switch (k->type) {
    case CONFIG_STRING: {
        const char *s = *(char *const *)f;
        config__put_string(out, s != NULL ? s : "");
        break;
    }
    case CONFIG_INT:
        fprintf(out, "%" PRId64, *(const int64_t *)f);
        break;
    case CONFIG_DOUBLE:
        config__put_double(out, *(const double *)f);
        break;
    case CONFIG_BOOL:
        fputs(*(const bool *)f ? "true" : "false", out);
        break;
    case CONFIG_DURATION: {
        char buf[CONFIG_DURATION_SIZE];
        fputs(config_format_duration(*(const int64_t *)f, buf), out);
        break;
    }
    case CONFIG_SIZE:
        config__put_size(out, *(const uint64_t *)f);
        break;
    case CONFIG_LIST: {
        /* Joined first, then quoted as one value if an item needs it ('"' first, '#'). */
        const struct config_list *l = f;
        size_t total = 1;
        for (size_t i = 0; i < l->len; i++)
            total += strlen(l->items[i]) + 2;
        char *joined = mem_alloc(total);
        if (joined == NULL)
            return ERR_NOMEM;
        size_t at = 0;
        for (size_t i = 0; i < l->len; i++) {
            if (i > 0) {
                memcpy(joined + at, ", ", 2);
                at += 2;
            }
            size_t n = strlen(l->items[i]);
            memcpy(joined + at, l->items[i], n);
            at += n;
        }
        joined[at] = '\0';
        config__put_string(out, joined);
        mem_free(joined);
        break;
    }
    }
    return 0;
}

static void config__put_bounds(FILE *out, const struct config_key *k)
{
    if (!(k->min < k->max))
        return;
    char a[CONFIG_DURATION_SIZE], b[CONFIG_DURATION_SIZE];
    switch (k->type) {
    case CONFIG_DURATION:
        fprintf(out, ", from %s to %s", config_format_duration((int64_t)k->min, a),
                config_format_duration((int64_t)k->max, b));
        break;
    case CONFIG_SIZE:
        fputs(", from ", out);
        config__put_size(out, (uint64_t)k->min);
        fputs(" to ", out);
        config__put_size(out, (uint64_t)k->max);
        break;
    case CONFIG_STRING:
        fprintf(out, ", length %g to %g", k->min, k->max);
        break;
    case CONFIG_LIST:
        fprintf(out, ", %g to %g items", k->min, k->max);
        break;
    default:
        fprintf(out, ", from %g to %g", k->min, k->max);
    }
}

/* Prints every section in order of first appearance, keys of section "" first. `cfg` NULL
 * prints the schema's defaults. */
static int config__print(const struct config_key *schema, const void *cfg, FILE *out)
{
    size_t n = 0;
    while (schema[n].name != NULL)
        n++;
    bool first_section = true;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const char *sec = schema[i].section;
            if ((pass == 0) != (sec[0] == '\0'))
                continue;
            bool seen_before = false;
            for (size_t j = 0; j < i && !seen_before; j++)
                seen_before = strcmp(schema[j].section, sec) == 0;
            if (seen_before)
                continue;
            if (sec[0] != '\0') {
                fprintf(out, "%s[%s]\n", first_section ? "" : "\n", sec);
                first_section = false;
            }
            for (size_t j = i; j < n; j++) {
                const struct config_key *k = &schema[j];
                if (strcmp(k->section, sec) != 0)
                    continue;
                if (k->doc != NULL)
                    fprintf(out, "# %s\n", k->doc);
                fprintf(out, "# %s", config_type_name(k->type));
                if (cfg != NULL) {
                    fputs(", default ", out);
                    config__put_string(out, k->def != NULL ? k->def : "");
                }
                config__put_bounds(out, k);
                fprintf(out, "\n%s = ", k->name);
                if (cfg != NULL) {
                    if (config__put_value(out, k, cfg) != 0)
                        return ERR_NOMEM;
                } else if (k->type == CONFIG_STRING || k->type == CONFIG_LIST)
                    config__put_string(out, k->def != NULL ? k->def : "");
                else
                    fputs(k->def != NULL ? k->def : "", out);
                fputc('\n', out);
                first_section = false;
            }
        }
    }
    return ferror(out) ? ERR_IO : 0;
}

int config_print_schema(const struct config_key *schema, FILE *out)
{
    fputs("# Every key with its type, bounds and default value.\n\n", out);
    return config__print(schema, NULL, out);
}

int config_write(const struct config_key *schema, const void *cfg, FILE *out)
{
    return config__print(schema, cfg, out);
}
