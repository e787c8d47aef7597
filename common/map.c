#include "common/map.h"

#include <string.h>

#include "common/err.h"
#include "common/mem.h"

/* A slot is empty (key NULL, hash 0), deleted (key NULL, hash 1) or full. Deleted markers keep
 * probe chains intact and make deletion during iteration safe; they are dropped on rehash. */
struct map__slot {
    char *key;
    size_t len;
    uint64_t hash;
    void *value;
};

#define MAP__DELETED 1u

void map_init(struct map *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
    m->used = 0;
}

void map_close(struct map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        mem_free(m->slots[i].key);
    mem_free(m->slots);
    map_init(m);
}

uint64_t map_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211u;
    }
    /* FNV-1a's low bits mix poorly for short keys; finish with a murmur-style avalanche since
     * the slot index is taken from the low bits. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return h;
}

/* Index of the slot holding key, or of the first free slot where it would go (SIZE_MAX if the
 * table is empty). *found tells which. */
static size_t map__probe(const struct map *m, const void *key, size_t len, uint64_t h, bool *found)
{
    *found = false;
    if (m->cap == 0)
        return SIZE_MAX;
    size_t mask = m->cap - 1;
    size_t i = (size_t)h & mask;
    size_t first_free = SIZE_MAX;
    for (size_t n = 0; n < m->cap; n++, i = (i + 1) & mask) {
        const struct map__slot *s = &m->slots[i];
        if (s->key == NULL) {
            if (s->hash != MAP__DELETED)
                return first_free != SIZE_MAX ? first_free : i;
            if (first_free == SIZE_MAX)
                first_free = i;
            continue;
        }
        if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) {
            *found = true;
            return i;
        }
    }
    return first_free;
}

static uint64_t map__hash_fixed(const void *key, size_t len)
{
    uint64_t h = map_hash(key, len);
    if (h == 0 || h == MAP__DELETED)
        h += 2; /* keep the slot markers distinct from real hashes */
    return h;
}

static int map__resize(struct map *m, size_t ncap)
{
    struct map__slot *slots = mem_calloc(ncap, sizeof *slots);
    if (slots == NULL)
        return ERR_NOMEM;
    size_t mask = ncap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        struct map__slot *s = &m->slots[i];
        if (s->key == NULL)
            continue;
        size_t j = (size_t)s->hash & mask;
        while (slots[j].key != NULL)
            j = (j + 1) & mask;
        slots[j] = *s;
    }
    mem_free(m->slots);
    m->slots = slots;
    m->cap = ncap;
    m->used = m->len;
    return 0;
}

int map_putn(struct map *m, const void *key, size_t len, void *value, void **old)
{
    if (len > MAP_KEY_MAX)
        return ERR_TOOBIG;
    uint64_t h = map__hash_fixed(key, len);
    bool found;
    size_t i = map__probe(m, key, len, h, &found);
    if (found) {
        if (old != NULL)
            *old = m->slots[i].value;
        m->slots[i].value = value;
        return 0;
    }
    /* Keep load (entries plus deleted markers) under 3/4 after this insert. */
    if ((m->used + 1) * 4 > m->cap * 3) {
        size_t ncap = m->cap < 16 ? 16 : m->cap;
        while ((m->len + 1) * 2 > ncap)
            ncap *= 2;
        if (map__resize(m, ncap) != 0)
            return ERR_NOMEM;
        i = map__probe(m, key, len, h, &found);
    }
    char *copy = mem_alloc(len + 1);
    if (copy == NULL)
        return ERR_NOMEM;
    memcpy(copy, key, len);
    copy[len] = '\0';
    struct map__slot *s = &m->slots[i];
    if (s->hash != MAP__DELETED)
        m->used++;
    s->key = copy;
    s->len = len;
    s->hash = h;
    s->value = value;
    m->len++;
    if (old != NULL)
        *old = NULL;
    return 0;
}

int map_put(struct map *m, const char *key, void *value, void **old)
{
    return map_putn(m, key, strlen(key), value, old);
}

bool map_find(const struct map *m, const void *key, size_t len, void **value)
{
    if (m->len == 0 || len > MAP_KEY_MAX)
        return false;
    bool found;
    size_t i = map__probe(m, key, len, map__hash_fixed(key, len), &found);
    if (found && value != NULL)
        *value = m->slots[i].value;
    return found;
}

void *map_getn(const struct map *m, const void *key, size_t len)
{
    void *v = NULL;
    return map_find(m, key, len, &v) ? v : NULL;
}

void *map_get(const struct map *m, const char *key)
{
    return map_getn(m, key, strlen(key));
}

bool map_deln(struct map *m, const void *key, size_t len, void **old)
{
    if (m->len == 0 || len > MAP_KEY_MAX)
        return false;
    bool found;
    size_t i = map__probe(m, key, len, map__hash_fixed(key, len), &found);
    if (!found)
        return false;
    struct map__slot *s = &m->slots[i];
    if (old != NULL)
        *old = s->value;
    mem_free(s->key);
    s->key = NULL;
    s->len = 0;
    s->hash = MAP__DELETED;
    s->value = NULL;
    m->len--;
    return true;
}

bool map_del(struct map *m, const char *key, void **old)
{
    return map_deln(m, key, strlen(key), old);
}

bool map_next(const struct map *m, size_t *it, const char **key, size_t *len, void **value)
{
    for (size_t i = *it; i < m->cap; i++) {
        const struct map__slot *s = &m->slots[i];
        if (s->key == NULL)
            continue;
        if (key != NULL)
            *key = s->key;
        if (len != NULL)
            *len = s->len;
        if (value != NULL)
            *value = s->value;
        *it = i + 1;
        return true;
    }
    *it = m->cap;
    return false;
}
