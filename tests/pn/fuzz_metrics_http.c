/* fuzz_metrics_http.c - libFuzzer target for the PN's /metrics request parser
 * (pn/metrics_http.h metrics_http_parse): whatever the bytes, no read past them, and a parsed
 * head gives a terminated method of capitals (and '-', as in M-SEARCH) and a path starting with
 * '/'. The first byte picks the capacities. Built with -DPADDOCK_FUZZ=ON (clang). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pn/metrics_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t mcap = 1 + data[0] % 16, pcap = 1 + data[0] % 200;
    char *copy = malloc(size - 1 ? size - 1 : 1); /* exactly the bytes: ASan sees overreads */
    if (!copy)
        return 0;
    memcpy(copy, data + 1, size - 1);
    char method[16], path[200];
    int rc = metrics_http_parse(copy, size - 1, method, mcap, path, pcap);
    free(copy);
    if (rc < -1 || rc > 1)
        abort();
    if (rc == 1) {
        size_t ml = strnlen(method, mcap), pl = strnlen(path, pcap);
        if (ml == mcap || pl == pcap || ml == 0 || path[0] != '/')
            abort();
        for (size_t i = 0; i < ml; i++)
            if ((method[i] < 'A' || method[i] > 'Z') && method[i] != '-')
                abort();
    }
    return 0;
}
