/* spec_internal.h - helpers shared by spec.c and spec_graph.c (not part of the public API). */
#ifndef PADDOCK_JM_SPEC_INTERNAL_H
#define PADDOCK_JM_SPEC_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jm/spec.h"

/* Copies a JSON string of 1..maxlen bytes (no NUL; no control characters when `printable`)
 * into *out (caller owns), or fills msg with "<ctx><what> ..." and returns an ERR_* code. */
int spec__string(const json_t *v, size_t maxlen, int printable, const char *ctx, const char *what,
                 char **out, char *msg, size_t cap);

/* Where a task of the spec came from: entry `entry` of "tasks", element `elem` of its "array"
 * (SPEC__NOT_ARRAY when the entry is a single task). */
#define SPEC__NOT_ARRAY SIZE_MAX
struct spec__src {
    size_t entry;
    size_t elem;
};

/* Resolves stages (declared in root's "stages" and named by tasks via stage_names[i]), task
 * "after" ids (with "{i}" replaced by the element's index for array elements, src[i]), barriers;
 * rejects duplicates, unknown names and cycles; fills s->stages, s->by_id__, s->by_name__, s->topo
 * and s->stage_topo. `root` is the parsed document. */
int spec__graph(struct spec *s, const json_t *root, const char **stage_names,
                const struct spec__src *src, char *msg, size_t cap);

#endif
