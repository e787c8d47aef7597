#include "common/heap.h"

#include <string.h>

#include "common/err.h"
#include "common/mem.h"

void heap_init(struct heap *h)
{
    h->items = NULL;
    h->len = 0;
    h->cap = 0;
    h->next_seq = 0;
}

void heap_close(struct heap *h)
{
    mem_free(h->items);
    heap_init(h);
}

static bool heap__less(const struct heap_entry *a, const struct heap_entry *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    if (a->tie != b->tie)
        return a->tie < b->tie;
    return a->seq < b->seq;
}

int heap_reserve(struct heap *h, size_t n)
{
    if (n <= h->cap)
        return 0;
    struct heap_entry *items = mem_reallocarray(h->items, n, sizeof *items);
    if (items == NULL)
        return ERR_NOMEM;
    h->items = items;
    h->cap = n;
    return 0;
}

void heap_clear(struct heap *h)
{
    h->len = 0;
}

int heap_push(struct heap *h, uint64_t key, void *value)
{
    return heap_push_tie(h, key, 0, value);
}

int heap_push_tie(struct heap *h, uint64_t key, uint64_t tie, void *value)
{
    if (h->len == h->cap) {
        int rc = heap_reserve(h, h->cap < 16 ? 16 : h->cap * 2);
        if (rc != 0)
            return rc;
    }
    struct heap_entry e = {.key = key, .tie = tie, .seq = h->next_seq++, .value = value};
    size_t i = h->len++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap__less(&e, &h->items[parent]))
            break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = e;
    return 0;
}

bool heap_peek(const struct heap *h, struct heap_entry *out)
{
    if (h->len == 0)
        return false;
    if (out != NULL)
        *out = h->items[0];
    return true;
}

bool heap_pop(struct heap *h, struct heap_entry *out)
{
    if (h->len == 0)
        return false;
    if (out != NULL)
        *out = h->items[0];
    struct heap_entry last = h->items[--h->len];
    size_t n = h->len;
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap__less(&h->items[c + 1], &h->items[c]))
            c++;
        if (!heap__less(&h->items[c], &last))
            break;
        h->items[i] = h->items[c];
        i = c;
    }
    if (n > 0)
        h->items[i] = last;
    return true;
}

uint64_t heap_key_from_double(double d)
{
    if (d != d)
        return UINT64_MAX;
    if (d == 0)
        d = 0; /* -0.0 and 0.0 get the same key */
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    /* IEEE 754: flip all bits of negatives, only the sign bit of positives. */
    return (u & 0x8000000000000000u) ? ~u : (u | 0x8000000000000000u);
}
