/* spec_internal.h - helpers shared by spec.c and spec_graph.c (not part of the public API). */
#ifndef PADDOCK_JM_SPEC_INTERNAL_H
#define PADDOCK_JM_SPEC_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "jm/spec.h"

/* Copies a JSON string of 1..maxlen bytes (no NUL; no control characters when `printable`)
 * into *out (caller owns), or fills msg with "<ctx><what> ..." and returns an ERR_* code. */
int spec__string(const json_t *v, size_t maxlen, int printable, const char *ctx, const char *what,
                 char **out, char *msg, size_t cap);

/* Resolves stages (declared in root's "stages" and named by tasks via stage_names[i]), task
 * "after" ids, barriers; rejects duplicates, unknown names and cycles; fills s->stages,
 * s->by_id__, s->by_name__, s->topo and s->stage_topo. `root` is the parsed document. */
int spec__graph(struct spec *s, const json_t *root, const char **stage_names, char *msg,
                size_t cap);

#endif
