/* heap.h - a binary min-heap of (key, value) pairs: timers, event queues, top-k.
 *
 * A value type: the caller owns the struct (heap_init / heap_close). Entries with equal keys
 * come out by their tie (heap_push_tie; 0 from heap_push), then in insertion order (a sequence
 * number breaks what is left), so a simulation driven by the heap is deterministic. Values are
 * BORROWED pointers the heap never frees. Storage comes from mem_*; a failed push leaves the heap
 * unchanged.
 */
#ifndef PADDOCK_COMMON_HEAP_H
#define PADDOCK_COMMON_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct heap_entry {
    uint64_t key; /* public: smaller comes out first (e.g. virtual time in ns) */
    uint64_t tie; /* public: among equal keys, smaller comes out first */
    uint64_t seq; /* private: insertion order, breaks the ties left */
    void *value;  /* public */
};

struct heap {
    struct heap_entry *items; /* private: items[0] is the minimum */
    size_t len;               /* read-only */
    size_t cap;               /* private */
    uint64_t next_seq;        /* private */
};

void heap_init(struct heap *h);
/* Frees the storage (not the values); the heap is then empty and usable. */
void heap_close(struct heap *h);

/* Adds an entry (tie 0). Returns 0 or ERR_NOMEM. O(log n). */
int heap_push(struct heap *h, uint64_t key, void *value);
/* Adds an entry that, among entries of equal key, comes out before those of a larger tie (a
 * second key, for an order on two fields). Returns 0 or ERR_NOMEM. O(log n). */
int heap_push_tie(struct heap *h, uint64_t key, uint64_t tie, void *value);

/* Makes room for `n` entries in all, so that pushes up to that many cannot fail. Returns 0 or
 * ERR_NOMEM (the heap unchanged). */
int heap_reserve(struct heap *h, size_t n);
/* Removes every entry and keeps the storage. */
void heap_clear(struct heap *h);

/* The minimum entry without removing it; false when empty. `out` may be NULL. */
bool heap_peek(const struct heap *h, struct heap_entry *out);

/* Removes the minimum entry into *out (may be NULL); false when empty. O(log n). */
bool heap_pop(struct heap *h, struct heap_entry *out);

/* Maps a double to a key with the same order (all finite values and infinities; NaN sorts
 * last), so callers ordering by a double priority can use the heap. */
uint64_t heap_key_from_double(double d);

#endif
