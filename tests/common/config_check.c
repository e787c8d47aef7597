#include "config_check.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/err.h"

struct cc {
    char *s;
    int64_t i;
    double d;
    bool b;
    int64_t ms;
    uint64_t size;
    struct config_list l;
    char *bounded;
    int64_t small;
};

static const struct config_key cc_schema[] = {
    {"", "s", CONFIG_STRING, offsetof(struct cc, s), "x", "string", 0, 0},
    {"a", "i", CONFIG_INT, offsetof(struct cc, i), "0", "int", 0, 0},
    {"a", "d", CONFIG_DOUBLE, offsetof(struct cc, d), "1.5", "double", 0, 0},
    {"a", "b", CONFIG_BOOL, offsetof(struct cc, b), "false", "bool", 0, 0},
    {"b", "ms", CONFIG_DURATION, offsetof(struct cc, ms), "1s", "duration", 0, 0},
    {"b", "size", CONFIG_SIZE, offsetof(struct cc, size), "1KiB", "size", 0, 0},
    {"b", "l", CONFIG_LIST, offsetof(struct cc, l), "p, q", "list", 0, 8},
    {"b", "bounded", CONFIG_STRING, offsetof(struct cc, bounded), "", "bounded", 0, 12},
    {"b", "small", CONFIG_INT, offsetof(struct cc, small), "3", "small", -5, 5},
    CONFIG_END,
};

const char *const config_check_seeds[] = {
    "s = hello\n[a]\ni = -42\nd = 0.25\nb = yes\n[b]\nms = 250ms\nsize = 3MiB\nl = x, y, z\n",
    "# comment\ns = \"quoted # \\\"value\\\"\\t\"\n; other\n[b]\nbounded = abc\nsmall = -5\n",
    "[ a ] # c\n  i=+7  \r\nd=1e-3\nb=off\n[b]\nms=2.5s\nsize=10 kB\nl=\"\"\n",
    NULL,
};

/* Writes cfg as a file into a malloc'd buffer. */
static char *cc_write(const struct cc *c, size_t *len)
{
    char *buf = NULL;
    FILE *out = open_memstream(&buf, len);
    if (out == NULL)
        return NULL;
    int rc = config_write(cc_schema, c, out);
    fclose(out);
    if (rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int config_check(const uint8_t *data, size_t size, char *why, size_t cap)
{
    struct cc c1, c2;
    memset(&c1, 0, sizeof c1);
    memset(&c2, 0, sizeof c2);
    char msg[1024];
    int result = -1;
    char *w1 = NULL, *w2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (config_defaults(cc_schema, &c1, msg, sizeof msg) != 0 ||
        config_defaults(cc_schema, &c2, msg, sizeof msg) != 0) {
        snprintf(why, cap, "defaults: %s", msg);
        goto out;
    }
    msg[0] = '\0';
    int rc = config_load_string(cc_schema, &c1, (const char *)data, size, "in", msg, sizeof msg);
    if (rc != 0) {
        if ((rc != ERR_CONFIG && rc != ERR_TOOBIG) || strncmp(msg, "in:", 3) != 0) {
            snprintf(why, cap, "bad rejection %d: '%s'", rc, msg);
            goto out;
        }
        result = 0;
        goto out;
    }
    w1 = cc_write(&c1, &n1);
    if (w1 == NULL) {
        snprintf(why, cap, "config_write failed");
        goto out;
    }
    rc = config_load_string(cc_schema, &c2, w1, n1, "w", msg, sizeof msg);
    if (rc != 0) {
        snprintf(why, cap, "written file does not load (%s):\n%s", msg, w1);
        goto out;
    }
    w2 = cc_write(&c2, &n2);
    if (w2 == NULL || n1 != n2 || memcmp(w1, w2, n1) != 0) {
        snprintf(why, cap, "write/load/write differs:\n%s\n---\n%s", w1, w2 ? w2 : "(null)");
        goto out;
    }
    result = 1;
out:
    free(w1);
    free(w2);
    config_close(cc_schema, &c1);
    config_close(cc_schema, &c2);
    return result;
}
