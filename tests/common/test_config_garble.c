/* Garbled configuration files: 200,000 seeded mutations of valid files (bit flips, truncation,
 * inserted syntax characters, random bytes) through config_check: every input loads or is
 * rejected with a positioned reason, and everything that loads writes back losslessly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "config_check.h"

#define ROUNDS 200000

static struct rng garble__g; /* seeded in test_garbled_files */

static uint64_t next(void)
{
    return rng_next(&garble__g);
}

static void test_garbled_files(void **state)
{
    (void)state;
    rng_seed(&garble__g, 1);
    static const char syntax[] = "[]=#;\"\\,\n\r\t .-+e0123456789smhdKMGiB";
    uint8_t buf[1024];
    char why[4096];
    size_t nseeds = 0;
    while (config_check_seeds[nseeds] != NULL)
        nseeds++;
    long loaded = 0, rejected = 0;
    for (long r = 0; r < ROUNDS; r++) {
        const char *seed = config_check_seeds[next() % nseeds];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int edits = 1 + (int)(next() % 4);
        for (int e = 0; e < edits && len > 0; e++) {
            size_t at = next() % len;
            switch (next() % 5) {
            case 0: /* bit flip */
                buf[at] ^= (uint8_t)(1u << (next() % 8));
                break;
            case 1: /* truncate */
                len = at;
                break;
            case 2: /* overwrite with a syntax character */
                buf[at] = (uint8_t)syntax[next() % (sizeof syntax - 1)];
                break;
            case 3: /* insert a syntax character */
                if (len < sizeof buf) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = (uint8_t)syntax[next() % (sizeof syntax - 1)];
                    len++;
                }
                break;
            default: /* random byte */
                buf[at] = (uint8_t)next();
            }
        }
        int rc = config_check(buf, len, why, sizeof why);
        if (rc < 0)
            fail_msg("round %ld: %s", r, why);
        if (rc == 1)
            loaded++;
        else
            rejected++;
    }
    /* Both outcomes occur in bulk: the mutations are neither all fatal nor all harmless. */
    assert_true(loaded > ROUNDS / 20);
    assert_true(rejected > ROUNDS / 20);
    printf("config garble: %ld loaded, %ld rejected\n", loaded, rejected);
}

static void test_seeds_load(void **state)
{
    (void)state;
    char why[4096];
    for (size_t i = 0; config_check_seeds[i] != NULL; i++) {
        const char *s = config_check_seeds[i];
        int rc = config_check((const uint8_t *)s, strlen(s), why, sizeof why);
        if (rc != 1)
            fail_msg("seed %zu: rc %d %s", i, rc, rc < 0 ? why : "");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds_load),
        cmocka_unit_test(test_garbled_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
