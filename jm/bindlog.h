/* bindlog.h - the lines of an open job's SPOOL/binds (jm/daemon/jmd_grow.h, docs/snakemake.md):
 * task ids, one a line, appended by a client while the job runs and read by the JM in pieces.
 *
 * A line is a task id and a newline. A piece may end inside a line: its bytes wait for the next
 * piece. A line longer than BINDLOG_LINE_MAX bytes, or with a NUL byte, is dropped whole at its
 * newline and counted; an empty line is passed over. Nothing is allocated: the reader's memory
 * is the struct, whatever the input.
 *
 * Pure: no files, no clock.
 */
#ifndef PADDOCK_JM_BINDLOG_H
#define PADDOCK_JM_BINDLOG_H

#include <stddef.h>

#include "jm/spec.h"

#define BINDLOG_LINE_MAX SPEC_MAX_ID_LEN /* bytes of an id, without the newline */

/* A reader (public value; bindlog_init, then only bindlog_feed changes it). */
struct bindlog {
    char line[BINDLOG_LINE_MAX + 1]; /* private: the line being read */
    size_t n;                        /* private: its bytes so far */
    int drop;                        /* private: it is over the bound or has a NUL */
    size_t lines;                    /* read-only: ids passed to the callback */
    size_t bad;                      /* read-only: lines dropped */
};

void bindlog_init(struct bindlog *b);

/* Called with each id read (NUL-terminated, borrowed for the call only). */
typedef void (*bindlog_fn)(void *ctx, const char *id);

/* Reads `len` bytes at `buf` (may be NULL when len is 0): calls fn for each whole line. Returns
 * how many ids it passed. */
size_t bindlog_feed(struct bindlog *b, const char *buf, size_t len, bindlog_fn fn, void *ctx);

#endif
