/* fuzz_jobreg.c - libFuzzer target for jobreg_cluster (jm/jobreg.h), which reads the RM's
 * "tokens" admin document for a job manager that registers itself: whatever the bytes, the token
 * size is positive and finite, the memory at least 1 MiB, and a registration built with the
 * shape at that size encodes or is refused with a message; never a crash or a leak. Built with
 * -DPADDOCK_FUZZ=ON (clang). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jm/jobreg.h"
#include "jm/spec.h"
#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char SPEC[] = "{\"version\": 1, \"name\": \"f\", \"deadline_s\": 30, \"tasks\": ["
                           "{\"id\": \"a\", \"cmd\": [\"true\"], \"runtime_s\": 2, \"cpu\": 0.5},"
                           "{\"id\": \"b\", \"cmd\": [\"true\"], \"runtime_s\": 3, \"cpu\": 2,"
                           " \"after\": [\"a\"]}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    double token_cpu;
    uint64_t token_mem_mb;
    uint32_t capacity;
    jobreg_cluster(text, "default", &token_cpu, &token_mem_mb, &capacity);
    free(text);
    if (!(token_cpu > 0) || !isfinite(token_cpu) || token_mem_mb < 1)
        abort();
    struct spec_limits lim;
    spec_limits_default(&lim);
    struct spec *s = NULL;
    char msg[256];
    if (spec_parse(SPEC, sizeof SPEC - 1, &lim, &s, msg, sizeof msg) != 0)
        abort(); /* the fixed spec is valid */
    /* a small capacity keeps the list schedule cheap; the size is what was read */
    struct jobreg_shape sh;
    if (jobreg_shape(s, NULL, token_cpu, token_mem_mb, capacity % 64, &sh, msg, sizeof msg) == 0) {
        struct jobreg r = {.key = "k", .spec = s, .shape = &sh, .submit_ms = 1};
        proto_msg_t m;
        jobreg_build(&r, &m);
        proto_buf_t b;
        proto_buf_init(&b);
        if (proto_encode(&m, &b, msg, sizeof msg) != 0 && msg[0] == '\0')
            abort(); /* a refusal says why */
        proto_buf_close(&b);
    } else if (msg[0] == '\0') {
        abort();
    }
    spec_destroy(&s);
    return 0;
}
