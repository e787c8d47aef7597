/* fuzz_output_tail.c - libFuzzer target for the line a failure reason takes from the end of a
 * task's stderr (pn/output.h output_tail_line): whatever the bytes, at most `max` bytes of
 * printable ASCII, terminated within the buffer; never a crash or a leak. The first byte picks
 * `max` (0..255) and the buffer's size. Built with -DPADDOCK_FUZZ=ON (clang). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pn/output.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t max = data[0];
    size_t cap = (size_t)(data[0] % 7 == 0 ? 5 : 300);
    char out[300];
    memset(out, 'Z', sizeof out);
    size_t n = output_tail_line(data + 1, size - 1, max, out, cap);
    size_t len = strnlen(out, cap);
    if (len == cap || n != len || n > max)
        abort(); /* not terminated, a wrong length, or longer than asked */
    for (size_t i = 0; i < len; i++)
        if (out[i] < 0x20 || out[i] > 0x7e)
            abort(); /* one line of printable ASCII */
    return 0;
}
