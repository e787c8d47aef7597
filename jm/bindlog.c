/* bindlog.c - the lines of SPOOL/binds (see bindlog.h). */
#include "jm/bindlog.h"

#include <string.h>

void bindlog_init(struct bindlog *b)
{
    memset(b, 0, sizeof *b);
}

size_t bindlog_feed(struct bindlog *b, const char *buf, size_t len, bindlog_fn fn, void *ctx)
{
    size_t passed = 0;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (c != '\n') {
            if (c == '\0' || b->n >= BINDLOG_LINE_MAX)
                b->drop = 1;
            else
                b->line[b->n++] = c;
            continue;
        }
        if (b->drop) {
            b->bad++;
        } else if (b->n > 0) {
            b->line[b->n] = '\0';
            b->lines++;
            passed++;
            fn(ctx, b->line);
        }
        b->n = 0;
        b->drop = 0;
    }
    return passed;
}
