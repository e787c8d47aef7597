#include "common/mem.h"

#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static long mem__budget = -1;
static long mem__failed;

static int mem__refuse(void)
{
    if (mem__budget < 0)
        return 0;
    if (mem__budget == 0) {
        mem__failed++;
        return 1;
    }
    mem__budget--;
    return 0;
}

void *mem_alloc(size_t size)
{
    if (mem__refuse())
        return NULL;
    return malloc(size == 0 ? 1 : size);
}

void *mem_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    if (mem__refuse())
        return NULL;
    return calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
}

void *mem_realloc(void *p, size_t size)
{
    if (mem__refuse())
        return NULL;
    return realloc(p, size == 0 ? 1 : size);
}

void *mem_reallocarray(void *p, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return mem_realloc(p, n * size);
}

char *mem_strdup(const char *s)
{
    return mem_strndup(s, strlen(s));
}

char *mem_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = mem_alloc(len + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

void mem_free(void *p)
{
    free(p);
}

void mem_keep_top(size_t bytes)
{
#ifdef M_TOP_PAD
    (void)mallopt(M_TOP_PAD, bytes < (size_t)INT_MAX ? (int)bytes : INT_MAX);
#else
    (void)bytes;
#endif
}

void mem_fail_after(long n)
{
    mem__budget = n;
    mem__failed = 0;
}

void mem_fail_reset(void)
{
    mem__budget = -1;
}

long mem_fail_count(void)
{
    return mem__failed;
}
