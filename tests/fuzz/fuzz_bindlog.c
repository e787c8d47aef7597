/* fuzz_bindlog.c - libFuzzer target for jm/bindlog.h: any bytes, cut into pieces where the
 * input's first byte says, never read or write out of bounds, and every id passed is a
 * NUL-terminated line of at most BINDLOG_LINE_MAX bytes without a newline. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jm/bindlog.h"

static void check(void *ctx, const char *id)
{
    (void)ctx;
    size_t n = strlen(id);
    if (n == 0 || n > BINDLOG_LINE_MAX || memchr(id, '\n', n))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t step = 1 + data[0] % 64;
    struct bindlog b;
    bindlog_init(&b);
    for (size_t off = 1; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        bindlog_feed(&b, (const char *)data + off, n, check, NULL);
    }
    return 0;
}
