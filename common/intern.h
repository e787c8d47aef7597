/* intern.h - a string table: each distinct string stored once, named by a small integer.
 *
 * For records kept by the hundred thousand whose strings come from a small set (node names, the
 * reasons attempts end with): a record holds a 4-byte id instead of a fixed buffer or a pointer
 * to its own copy (issue 24: the JM at most 1 KiB per task).
 *
 * A value type: the caller owns the struct (intern_init / intern_close). Strings are COPIED in;
 * the pointers intern_str returns are owned by the table and valid until intern_close. A zeroed
 * struct is an empty table as well as one intern_init made. Id 0 is
 * always the empty string (and what a failed intern_add leaves the caller to use). Storage comes
 * from mem_*; a failing call leaves the table unchanged.
 */
#ifndef PADDOCK_COMMON_INTERN_H
#define PADDOCK_COMMON_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "common/map.h"

/* At most this many distinct strings (ids 0 .. INTERN_MAX - 1), each at most MAP_KEY_MAX bytes. */
#define INTERN_MAX (1u << 24)

struct intern {
    struct map ids;    /* private: string -> id + 1 */
    const char **strs; /* private: id -> the table's copy (strs[0] unused: "") */
    uint32_t len, cap; /* read-only: distinct strings held, "" included */
};

void intern_init(struct intern *in);
void intern_close(struct intern *in);

/* The id of `s` (NULL: ""), added when new. 0 or ERR_NOMEM, ERR_TOOBIG (over MAP_KEY_MAX bytes),
 * ERR_FULL (INTERN_MAX strings already); on error *id is 0. */
int intern_add(struct intern *in, const char *s, uint32_t *id);

/* The string of `id`; "" for an id the table never gave. */
const char *intern_str(const struct intern *in, uint32_t id);

#endif
