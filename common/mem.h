/* mem.h - the one allocation hook.
 *
 * All Paddock code allocates through mem_*, so a test can make the Nth allocation fail and
 * check that state is unchanged and nothing leaks. Sizes read from input are bounded by the
 * caller before they reach these functions.
 */
#ifndef PADDOCK_COMMON_MEM_H
#define PADDOCK_COMMON_MEM_H

#include <stddef.h>

void *mem_alloc(size_t size);
void *mem_calloc(size_t n, size_t size); /* fails (NULL) on n*size overflow */
void *mem_realloc(void *p, size_t size);
void *mem_reallocarray(void *p, size_t n, size_t size); /* fails on overflow */
char *mem_strdup(const char *s);
char *mem_strndup(const char *s, size_t n);
void mem_free(void *p);

/* For a process that decodes large messages one after another (a JM's view: a 20,000-node
 * snapshot is 40 parts of about 1 MiB each, decoded and freed in turn, and its deltas after):
 * keeps `bytes` of free memory at the heap's top rather than giving it back to the system after
 * each message (glibc's M_TOP_PAD), so the next one does not fault its pages in again. On a VM
 * where a page fault is dear that was most of a JM's first view. Pages never touched are not
 * resident, so a process that never decodes much stays as small as before. */
void mem_keep_top(size_t bytes);

/* Test hook: the next `n` allocations succeed, then every one fails until mem_fail_reset().
 * n < 0 disables injection (the default). Not thread-safe: for single-threaded tests. */
void mem_fail_after(long n);
void mem_fail_reset(void);
/* Number of allocations refused by injection since the last reset. */
long mem_fail_count(void);

#endif
