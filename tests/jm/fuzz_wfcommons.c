/* fuzz_wfcommons.c - libFuzzer target for the WfCommons importer (tools/wfcommons.h): any bytes
 * are refused with a message or converted into a document the spec parser then judges; never a
 * crash or a leak. Built with -DPADDOCK_FUZZ=ON (clang). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jm/spec.h"
#include "tools/wfcommons.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[512];
    json_t *doc = NULL;
    int rc = wfcommons_convert((const char *)data, size, NULL, &doc, NULL, msg, sizeof msg);
    if (rc != 0) {
        if (doc != NULL || msg[0] == '\0')
            abort();
        return 0;
    }
    char *text = json_dumps(doc, 0);
    json_decref(doc);
    if (text == NULL)
        return 0;
    struct spec *s = NULL;
    spec_parse(text, strlen(text), NULL, &s, msg, sizeof msg);
    spec_destroy(&s);
    free(text);
    return 0;
}
