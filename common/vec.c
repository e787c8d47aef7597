#include "common/vec.h"

#include <stdint.h>

#include "common/mem.h"

int vec__reserve(void *items_ptr, size_t *cap, size_t elem, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap < 8 ? 8 : *cap;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return ERR_NOMEM;
        ncap *= 2;
    }
    void *items;
    memcpy(&items, items_ptr, sizeof items);
    void *grown = mem_reallocarray(items, ncap, elem);
    if (grown == NULL)
        return ERR_NOMEM;
    memcpy(items_ptr, &grown, sizeof grown);
    *cap = ncap;
    return 0;
}

void vec__free(void *items)
{
    mem_free(items);
}
