/* libFuzzer target: any bytes as a configuration file (see config_check.h). */
#include <stdio.h>
#include <stdlib.h>

#include "config_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[4096];
    if (config_check(data, size, why, sizeof why) < 0) {
        fprintf(stderr, "config_check: %s\n", why);
        abort();
    }
    return 0;
}
