/* config.c - loading INI-style configuration files against a daemon's schema. */
#include "common/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

static const char *config__skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static void *config__field(void *cfg, const struct config_key *k)
{
    return (char *)cfg + k->offset;
}

static size_t config__count(const struct config_key *schema)
{
    size_t n = 0;
    while (schema[n].name != NULL)
        n++;
    return n;
}

static bool config__eq(const char *a, size_t alen, const char *b)
{
    return strlen(b) == alen && memcmp(a, b, alen) == 0;
}

static void config__free_list(struct config_list *l)
{
    for (size_t i = 0; i < l->len; i++)
        mem_free(l->items[i]);
    mem_free(l->items);
    l->items = NULL;
    l->len = 0;
}

/* Splits "a, b,c" into a list of trimmed items. An empty text is an empty list. */
static int config__parse_list(const char *text, struct config_list *out, char *msg, size_t cap)
{
    struct config_list l = {NULL, 0};
    if (*text == '\0') {
        *out = l;
        return 0;
    }
    size_t n = 1;
    for (const char *p = text; *p != '\0'; p++)
        n += *p == ',';
    if (n > CONFIG_LIST_MAX)
        return err_fmt(msg, cap, ERR_RANGE, "list has %zu items (at most %d)", n, CONFIG_LIST_MAX);
    l.items = mem_calloc(n, sizeof *l.items);
    if (l.items == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (a == b) {
            config__free_list(&l);
            return err_fmt(msg, cap, ERR_PARSE, "empty item %zu in list '%s'", i + 1, text);
        }
        l.items[i] = mem_strndup(a, (size_t)(b - a));
        if (l.items[i] == NULL) {
            config__free_list(&l);
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        }
        l.len++;
        p = *end == ',' ? end + 1 : end;
    }
    *out = l;
    return 0;
}

static int config__bounds(const struct config_key *k, double v, const char *text, char *msg,
                          size_t cap)
{
    if (!(k->min < k->max) || (v >= k->min && v <= k->max))
        return 0;
    const char *what = k->type == CONFIG_STRING ? "length "
                       : k->type == CONFIG_LIST ? "item count "
                                                : "";
    return err_fmt(msg, cap, ERR_RANGE, "'%s': %sout of bounds [%g, %g]%s", text, what, k->min,
                   k->max,
                   k->type == CONFIG_DURATION ? " ms"
                   : k->type == CONFIG_SIZE   ? " bytes"
                                              : "");
}

/* Parses `text` as key k's type and, on success, stores it in cfg (freeing what it replaces).
 * On error cfg is unchanged and msg holds the reason (without position). */
static int config__assign(const struct config_key *k, void *cfg, const char *text, char *msg,
                          size_t cap, bool check_bounds)
{
    void *f = config__field(cfg, k);
    int rc;
    switch (k->type) {
    case CONFIG_STRING: {
        size_t len = strlen(text);
        if (check_bounds && (rc = config__bounds(k, (double)len, text, msg, cap)) != 0)
            return rc;
        char *s = mem_strdup(text);
        if (s == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        mem_free(*(char **)f);
        *(char **)f = s;
        return 0;
    }
    case CONFIG_INT: {
        int64_t v;
        if ((rc = config_parse_int(text, &v, msg, cap)) != 0)
            return rc;
        if (check_bounds && (rc = config__bounds(k, (double)v, text, msg, cap)) != 0)
            return rc;
        *(int64_t *)f = v;
        return 0;
    }
    case CONFIG_DOUBLE: {
        double v;
        if ((rc = config_parse_double(text, &v, msg, cap)) != 0)
            return rc;
        if (check_bounds && (rc = config__bounds(k, v, text, msg, cap)) != 0)
            return rc;
        *(double *)f = v;
        return 0;
    }
    case CONFIG_BOOL:
        return config_parse_bool(text, (bool *)f, msg, cap);
    case CONFIG_DURATION: {
        int64_t v;
        if ((rc = config_parse_duration(text, &v, msg, cap)) != 0)
            return rc;
        if (check_bounds && (rc = config__bounds(k, (double)v, text, msg, cap)) != 0)
            return rc;
        *(int64_t *)f = v;
        return 0;
    }
    case CONFIG_SIZE: {
        uint64_t v;
        if ((rc = config_parse_size(text, &v, msg, cap)) != 0)
            return rc;
        if (check_bounds && (rc = config__bounds(k, (double)v, text, msg, cap)) != 0)
            return rc;
        *(uint64_t *)f = v;
        return 0;
    }
    case CONFIG_LIST: {
        struct config_list l;
        if ((rc = config__parse_list(text, &l, msg, cap)) != 0)
            return rc;
        if (check_bounds && (rc = config__bounds(k, (double)l.len, text, msg, cap)) != 0) {
            config__free_list(&l);
            return rc;
        }
        config__free_list((struct config_list *)f);
        *(struct config_list *)f = l;
        return 0;
    }
    }
    return err_fmt(msg, cap, ERR_CONFIG, "unknown type %d", (int)k->type);
}

int config_defaults(const struct config_key *schema, void *cfg, char *msg, size_t cap)
{
    for (const struct config_key *k = schema; k->name != NULL; k++) {
        char why[256];
        int rc = config__assign(k, cfg, k->def != NULL ? k->def : "", why, sizeof why, false);
        if (rc == ERR_NOMEM)
            return err_fmt(msg, cap, rc, "out of memory");
        if (rc != 0)
            return err_fmt(msg, cap, ERR_CONFIG, "schema default of [%s] %s: %s", k->section,
                           k->name, why);
    }
    return 0;
}

void config_close(const struct config_key *schema, void *cfg)
{
    for (const struct config_key *k = schema; k->name != NULL; k++) {
        void *f = config__field(cfg, k);
        if (k->type == CONFIG_STRING) {
            mem_free(*(char **)f);
            *(char **)f = NULL;
        } else if (k->type == CONFIG_LIST) {
            config__free_list((struct config_list *)f);
        }
    }
}

/* ---- the file syntax -------------------------------------------------------------------- */

/* Reads the value part of a line (after '='): quoted or bare, then only blanks or a comment.
 * Writes the unescaped value into out (capacity at least strlen(p)+1). */
static int config__value(const char *p, char *out, char *msg, size_t cap)
{
    p = config__skip_blank(p);
    size_t n = 0;
    if (*p == '"') {
        p++;
        for (;;) {
            char c = *p++;
            if (c == '\0')
                return err_fmt(msg, cap, ERR_PARSE, "unterminated quoted value");
            if (c == '"')
                break;
            if (c == '\\') {
                char e = *p++;
                switch (e) {
                case '"':
                case '\\':
                    c = e;
                    break;
                case 'n':
                    c = '\n';
                    break;
                case 't':
                    c = '\t';
                    break;
                case 'r':
                    c = '\r';
                    break;
                default:
                    return err_fmt(msg, cap, ERR_PARSE, "unknown escape '\\%c' in quoted value",
                                   e == '\0' ? '0' : e);
                }
            }
            out[n++] = c;
        }
        p = config__skip_blank(p);
        if (*p != '\0' && *p != '#' && *p != ';')
            return err_fmt(msg, cap, ERR_PARSE, "unexpected text after the closing quote");
        out[n] = '\0';
        return 0;
    }
    /* Bare value: ends at a comment that follows whitespace, trailing blanks dropped. */
    const char *start = p;
    while (*p != '\0') {
        if ((*p == '#' || *p == ';') && (p == start || p[-1] == ' ' || p[-1] == '\t'))
            break;
        p++;
    }
    while (p > start && (p[-1] == ' ' || p[-1] == '\t'))
        p--;
    n = (size_t)(p - start);
    memcpy(out, start, n);
    out[n] = '\0';
    return 0;
}

static bool config__key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static const struct config_key *config__lookup(const struct config_key *schema, const char *sec,
                                               size_t seclen, const char *name, size_t namelen)
{
    for (const struct config_key *k = schema; k->name != NULL; k++) {
        if (config__eq(sec, seclen, k->section) && config__eq(name, namelen, k->name))
            return k;
    }
    return NULL;
}

static const char *config__section(const struct config_key *schema, const char *sec, size_t seclen)
{
    for (const struct config_key *k = schema; k->name != NULL; k++) {
        if (config__eq(sec, seclen, k->section))
            return k->section;
    }
    return NULL;
}

static void config__trim(const char **a, const char **b)
{
    while (*a < *b && (**a == ' ' || **a == '\t'))
        (*a)++;
    while (*b > *a && ((*b)[-1] == ' ' || (*b)[-1] == '\t'))
        (*b)--;
}

struct config__ctx {
    const struct config_key *schema;
    void *cfg;
    const char *section;
    unsigned *seen; /* line where each schema key was set, 0 if not yet */
    char *val;      /* CONFIG_LINE_MAX + 1 bytes */
};

/* One line (NUL-terminated, no newline). Returns 0 or an error with the reason in why. */
static int config__line(struct config__ctx *c, const char *line, unsigned lineno, char *why,
                        size_t wcap)
{
    const char *p = config__skip_blank(line);
    if (*p == '\0' || *p == '#' || *p == ';')
        return 0;
    if (*p == '[') {
        const char *close = strchr(p, ']');
        if (close == NULL)
            return err_fmt(why, wcap, ERR_CONFIG, "missing ']' in section header");
        const char *a = p + 1, *b = close;
        config__trim(&a, &b);
        const char *rest = config__skip_blank(close + 1);
        if (*rest != '\0' && *rest != '#' && *rest != ';')
            return err_fmt(why, wcap, ERR_CONFIG, "unexpected text after section header");
        if (a == b)
            return err_fmt(why, wcap, ERR_CONFIG, "empty section name");
        const char *sec = config__section(c->schema, a, (size_t)(b - a));
        if (sec == NULL)
            return err_fmt(why, wcap, ERR_CONFIG, "unknown section [%.*s]", (int)(b - a), a);
        c->section = sec;
        return 0;
    }
    const char *eq = strchr(p, '=');
    if (eq == NULL)
        return err_fmt(why, wcap, ERR_CONFIG, "expected 'key = value' or '[section]'");
    const char *a = p, *b = eq;
    config__trim(&a, &b);
    if (a == b)
        return err_fmt(why, wcap, ERR_CONFIG, "missing key before '='");
    for (const char *q = a; q < b; q++) {
        if (!config__key_char(*q))
            return err_fmt(why, wcap, ERR_CONFIG, "invalid character in key '%.*s'", (int)(b - a),
                           a);
    }
    const struct config_key *k =
        config__lookup(c->schema, c->section, strlen(c->section), a, (size_t)(b - a));
    if (k == NULL) {
        if (c->section[0] == '\0')
            return err_fmt(why, wcap, ERR_CONFIG, "unknown key '%.*s' (outside any section)",
                           (int)(b - a), a);
        return err_fmt(why, wcap, ERR_CONFIG, "unknown key '%.*s' in [%s]", (int)(b - a), a,
                       c->section);
    }
    size_t idx = (size_t)(k - c->schema);
    if (c->seen[idx] != 0)
        return err_fmt(why, wcap, ERR_CONFIG, "duplicate key '%s' (first set on line %u)", k->name,
                       c->seen[idx]);
    char reason[512];
    int rc = config__value(eq + 1, c->val, reason, sizeof reason);
    if (rc == 0)
        rc = config__assign(k, c->cfg, c->val, reason, sizeof reason, true);
    if (rc == ERR_NOMEM)
        return err_fmt(why, wcap, ERR_NOMEM, "out of memory");
    if (rc != 0)
        return err_fmt(why, wcap, ERR_CONFIG, "%s: %s", k->name, reason);
    c->seen[idx] = lineno;
    return 0;
}

int config_load_string(const struct config_key *schema, void *cfg, const char *text, size_t len,
                       const char *name, char *msg, size_t cap)
{
    if (len > CONFIG_FILE_MAX)
        return err_fmt(msg, cap, ERR_TOOBIG, "%s: larger than %u bytes", name, CONFIG_FILE_MAX);
    size_t n = config__count(schema);
    struct config__ctx c = {schema, cfg, "", NULL, NULL};
    c.seen = mem_calloc(n + 1, sizeof *c.seen);
    c.val = mem_alloc(CONFIG_LINE_MAX + 1);
    char *line = mem_alloc(CONFIG_LINE_MAX + 1);
    int rc = 0;
    if (c.seen == NULL || c.val == NULL || line == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "%s: out of memory", name);
        goto out;
    }
    size_t pos = 0;
    for (unsigned lineno = 1; pos < len; lineno++) {
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t l = nl != NULL ? (size_t)(nl - start) : len - pos;
        pos += l + (nl != NULL);
        if (l > CONFIG_LINE_MAX) {
            rc = err_fmt(msg, cap, ERR_CONFIG, "%s:%u: line longer than %d bytes", name, lineno,
                         CONFIG_LINE_MAX);
            goto out;
        }
        if (memchr(start, '\0', l) != NULL) {
            rc = err_fmt(msg, cap, ERR_CONFIG, "%s:%u: NUL byte in line", name, lineno);
            goto out;
        }
        memcpy(line, start, l);
        if (l > 0 && line[l - 1] == '\r')
            l--;
        line[l] = '\0';
        char why[768];
        rc = config__line(&c, line, lineno, why, sizeof why);
        if (rc != 0) {
            err_fmt(msg, cap, rc, "%s:%u: %s", name, lineno, why);
            goto out;
        }
    }
out:
    mem_free(line);
    mem_free(c.val);
    mem_free(c.seen);
    return rc;
}

int config_load_file(const struct config_key *schema, void *cfg, const char *path, char *msg,
                     size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno));
    char *buf = mem_alloc(CONFIG_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        return err_fmt(msg, cap, ERR_NOMEM, "%s: out of memory", path);
    }
    size_t len = fread(buf, 1, CONFIG_FILE_MAX + 1, f);
    int failed = ferror(f);
    fclose(f);
    int rc;
    if (failed)
        rc = err_fmt(msg, cap, ERR_IO, "%s: read error", path);
    else if (len > CONFIG_FILE_MAX)
        rc = err_fmt(msg, cap, ERR_TOOBIG, "%s: larger than %u bytes", path, CONFIG_FILE_MAX);
    else
        rc = config_load_string(schema, cfg, buf, len, path, msg, cap);
    mem_free(buf);
    return rc;
}

int config_set(const struct config_key *schema, void *cfg, const char *assignment, char *msg,
               size_t cap)
{
    const char *eq = strchr(assignment, '=');
    if (eq == NULL)
        return err_fmt(msg, cap, ERR_CONFIG, "'%s': expected SECTION.KEY=VALUE", assignment);
    const char *a = assignment, *b = eq;
    config__trim(&a, &b);
    const char *dot = memchr(a, '.', (size_t)(b - a));
    const char *sec = "", *key = a;
    size_t seclen = 0;
    if (dot != NULL) {
        sec = a;
        seclen = (size_t)(dot - a);
        key = dot + 1;
    }
    const struct config_key *k = config__lookup(schema, sec, seclen, key, (size_t)(b - key));
    if (k == NULL)
        return err_fmt(msg, cap, ERR_CONFIG, "unknown key '%.*s'", (int)(b - a), a);
    char *val = mem_alloc(strlen(eq) + 1);
    if (val == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    char reason[512];
    int rc = config__value(eq + 1, val, reason, sizeof reason);
    if (rc == 0)
        rc = config__assign(k, cfg, val, reason, sizeof reason, true);
    mem_free(val);
    if (rc == ERR_NOMEM)
        return err_fmt(msg, cap, rc, "out of memory");
    if (rc != 0)
        return err_fmt(msg, cap, ERR_CONFIG, "%.*s: %s", (int)(b - a), a, reason);
    return 0;
}
