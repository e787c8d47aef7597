/* intern.c - see intern.h. */
#include "common/intern.h"

#include <stdint.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

void intern_init(struct intern *in)
{
    memset(in, 0, sizeof *in);
    map_init(&in->ids);
    in->len = 1; /* id 0: "" without an entry */
}

void intern_close(struct intern *in)
{
    map_close(&in->ids);
    for (uint32_t i = 1; i < in->len && in->strs; i++)
        mem_free((void *)in->strs[i]);
    mem_free(in->strs);
    memset(in, 0, sizeof *in);
    in->len = 1;
}

int intern_add(struct intern *in, const char *s, uint32_t *id)
{
    *id = 0;
    if (!s || !s[0])
        return 0;
    if (in->len == 0) /* a zeroed table: id 0 is "" there too */
        in->len = 1;
    size_t n = strlen(s);
    if (n > MAP_KEY_MAX)
        return ERR_TOOBIG;
    void *v;
    if (map_find(&in->ids, s, n, &v)) {
        *id = (uint32_t)((uintptr_t)v - 1);
        return 0;
    }
    if (in->len >= INTERN_MAX)
        return ERR_FULL;
    if (in->len >= in->cap) {
        uint32_t c = in->cap ? in->cap * 2 : 16;
        const char **p = mem_reallocarray(in->strs, c, sizeof *p);
        if (!p)
            return ERR_NOMEM;
        in->strs = p;
        in->cap = c;
    }
    char *copy = mem_strndup(s, n);
    if (!copy)
        return ERR_NOMEM;
    int rc = map_putn(&in->ids, s, n, (void *)(uintptr_t)(in->len + 1u), NULL);
    if (rc) {
        mem_free(copy);
        return rc;
    }
    in->strs[in->len] = copy;
    *id = in->len++;
    return 0;
}

const char *intern_str(const struct intern *in, uint32_t id)
{
    return id > 0 && id < in->len && in->strs[id] ? in->strs[id] : "";
}
