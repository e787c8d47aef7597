/* vec.h - a typed growable array (a value type: the caller owns the struct).
 *
 *     VEC(struct task *) ready;          // or: typedef VEC(int) int_vec;
 *     vec_init(&ready);
 *     if (vec_push(&ready, t) != 0) return ERR_NOMEM;
 *     for (size_t i = 0; i < ready.len; i++) use(ready.items[i]);
 *     vec_close(&ready);
 *
 * Fields: `items` (public; valid for indices < len; may move on every growth, so do not keep
 * pointers into it across a push), `len` (public, read-only: change it through the macros or
 * vec_truncate), `cap` (private). Storage comes from mem_* and grows by doubling; a failed
 * growth (ERR_NOMEM) leaves the vector unchanged. Elements are copied in by value; the vector
 * never frees what elements point to. Macros evaluate `v` more than once: pass a plain
 * pointer expression without side effects.
 */
#ifndef PADDOCK_COMMON_VEC_H
#define PADDOCK_COMMON_VEC_H

#include <stddef.h>
#include <string.h>

#include "common/err.h"

#define VEC(T)                                                                                     \
    struct {                                                                                       \
        T *items;                                                                                  \
        size_t len;                                                                                \
        size_t cap;                                                                                \
    }

/* Internal: makes room for `need` elements of `elem` bytes; `items_ptr` is the address of the
 * vector's `items` field (read and written with memcpy, whatever its pointer type). Returns 0
 * or ERR_NOMEM (unchanged). */
int vec__reserve(void *items_ptr, size_t *cap, size_t elem, size_t need);

#define vec_init(v) ((v)->items = NULL, (v)->len = 0, (v)->cap = 0)

/* Frees the storage (not what elements point to) and leaves an empty vector. */
#define vec_close(v) (vec__free((v)->items), vec_init(v))
void vec__free(void *items);

/* Ensures capacity for at least `n` elements in total. Returns 0 or ERR_NOMEM. */
#define vec_reserve(v, n) vec__reserve((void *)&(v)->items, &(v)->cap, sizeof *(v)->items, (n))

/* Appends a copy of `x`. Returns 0 or ERR_NOMEM (the vector is then unchanged). */
#define vec_push(v, x)                                                                             \
    (vec_reserve((v), (v)->len + 1) != 0 ? ERR_NOMEM : ((v)->items[(v)->len++] = (x), 0))

/* The last element, removed (precondition: len > 0). */
#define vec_pop(v) ((v)->items[--(v)->len])

/* Removes element i (precondition: i < len) keeping order, O(len). */
#define vec_remove(v, i)                                                                           \
    (memmove(&(v)->items[(i)], &(v)->items[(i) + 1], ((v)->len - (i)-1) * sizeof *(v)->items),     \
     (v)->len--)

/* Removes element i (precondition: i < len) by moving the last element into its place, O(1). */
#define vec_remove_swap(v, i) ((v)->items[(i)] = (v)->items[(v)->len - 1], (v)->len--)

/* Drops elements from index n on (no effect when n >= len). Keeps the storage. */
#define vec_truncate(v, n) ((v)->len = (n) < (v)->len ? (n) : (v)->len)
#define vec_clear(v)       ((v)->len = 0)

#endif
