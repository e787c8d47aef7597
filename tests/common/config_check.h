/* config_check.h - one property of the configuration loader, shared by the seeded garble test
 * and the libFuzzer target: any bytes either load or are rejected with ERR_CONFIG / ERR_TOOBIG
 * and a "NAME:LINE: reason" message; whatever loads, config_write prints as a file that loads
 * to the same values and prints identically. */
#ifndef PADDOCK_TESTS_CONFIG_CHECK_H
#define PADDOCK_TESTS_CONFIG_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Returns 1 if the input loaded, 0 if it was rejected properly; on a violation writes the
 * reason into `why` and returns -1. */
int config_check(const uint8_t *data, size_t size, char *why, size_t cap);

/* Valid inputs covering every value type, for seeding. */
extern const char *const config_check_seeds[];

#endif
