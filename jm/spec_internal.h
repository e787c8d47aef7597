/* spec_internal.h - helpers shared by the spec parser's files (not part of the public API):
 * spec.c (the document, its top-level keys, load and queries), spec_json.c (checked reads of JSON
 * values), spec_task.c (one task entry), spec_array.c (array entries) and spec_graph.c (stages,
 * dependencies, cycles). Each fills `msg` (cap bytes) with the reason, prefixed by `ctx`, and
 * returns 0 or an ERR_* code. */
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
/* Checks an object's keys against a NULL-terminated allow list. */
int spec__keys(const json_t *obj, const char *const *allowed, const char *ctx, char *msg,
               size_t cap);
/* A finite JSON number (integer or real) into *out. */
int spec__number(const json_t *v, const char *ctx, const char *what, double *out, char *msg,
                 size_t cap);
/* A non-negative JSON integer into *out. */
int spec__uint(const json_t *v, const char *ctx, const char *what, uint64_t *out, char *msg,
               size_t cap);

/* Frees n strings and the array holding them (v may be NULL). */
void spec__free_strv(char **v, size_t n);
/* Frees what a task holds (an array element's block included), not the struct itself. */
void spec__task_free(struct spec_task *t);
/* Fields of task entry `idx` that need no other task: everything but "after" (read again by
 * spec__graph) and the stage (its name kept in `stage_name`, borrowed from `v` or t->id). An
 * "array" entry (`array` > 0) is parsed once as a template, "{i}" still in it. On failure `t`
 * holds what was copied so far (spec__task_free frees it). */
int spec__task(struct spec_task *t, const json_t *v, size_t idx, size_t array,
               const struct spec_limits *lim, const char **stage_name, char *msg, size_t cap);

/* How many tasks entry `idx` of "tasks" stands for: its "array" length, else 1; checked against
 * lim before anything is allocated in proportion to it. */
int spec__array_len(const json_t *v, size_t idx, const struct spec_limits *lim, size_t *out,
                    char *msg, size_t cap);
/* Element `elem` of an array task: a deep copy of the template `tpl` with "{i}" replaced by the
 * element's index. On failure `out` holds what was copied so far (spec__task_free frees it). */
int spec__elem(const struct spec_task *tpl, size_t elem, struct spec_task *out, char *msg,
               size_t cap);

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
