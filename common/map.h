/* map.h - a hash map from byte-string keys to pointers (open addressing, linear probing).
 *
 * A value type: the caller owns the struct (map_init / map_close). Keys are COPIED into the
 * map (any bytes, embedded NULs allowed through the *n variants, at most MAP_KEY_MAX bytes);
 * values are BORROWED pointers the map stores but never frees: free them before map_close,
 * e.g. while iterating. NULL is a valid value (use map_find to tell it from "absent").
 * Storage comes from mem_*; every failing call leaves the map unchanged. Integer keys work
 * as bytes: map_putn(&m, &boot_id, sizeof boot_id, node, NULL).
 *
 * Iteration visits every entry once in an unspecified order:
 *     size_t it = 0; const char *k; size_t klen; void *v;
 *     while (map_next(&m, &it, &k, &klen, &v)) ...
 * During an iteration, map_del / map_deln of any key (the current one included) and
 * replacing the value of an existing key are allowed; inserting a new key is not (it may
 * rehash: the iteration would then skip or repeat entries).
 * Keys returned by map_next / map_find are NUL-terminated copies owned by the map, valid
 * until the entry is deleted or the map closed.
 */
#ifndef PADDOCK_COMMON_MAP_H
#define PADDOCK_COMMON_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAP_KEY_MAX (1u << 20)

struct map__slot; /* private */

struct map {
    struct map__slot *slots; /* private */
    size_t cap;              /* private: number of slots, 0 or a power of two */
    size_t len;              /* read-only: number of entries */
    size_t used;             /* private: entries plus deleted markers */
};

void map_init(struct map *m);
/* Frees the map's storage and key copies (not the values); the map is then empty and usable. */
void map_close(struct map *m);

/* Inserts or replaces. When `old` is not NULL it receives the replaced value (NULL when the
 * key was new). Returns 0, ERR_NOMEM, or ERR_TOOBIG for a key over MAP_KEY_MAX bytes. */
int map_put(struct map *m, const char *key, void *value, void **old);
int map_putn(struct map *m, const void *key, size_t len, void *value, void **old);

/* The value for `key`, or NULL when absent. */
void *map_get(const struct map *m, const char *key);
void *map_getn(const struct map *m, const void *key, size_t len);

/* True when present; then *value (if not NULL) receives the value. */
bool map_find(const struct map *m, const void *key, size_t len, void **value);

/* Removes `key`. Returns true when it was present; *old (if not NULL) receives its value. */
bool map_del(struct map *m, const char *key, void **old);
bool map_deln(struct map *m, const void *key, size_t len, void **old);

/* Iteration (see above): start with *it = 0; returns false at the end. Out-pointers may be NULL. */
bool map_next(const struct map *m, size_t *it, const char **key, size_t *len, void **value);

/* The hash the map uses (64-bit FNV-1a); exposed for tests and callers that shard by key. */
uint64_t map_hash(const void *key, size_t len);

#endif
