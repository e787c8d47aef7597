/* se2e.h - small helpers shared by the straggler end-to-end tests (on top of tests/e2e/e2e.h). */
#ifndef PADDOCK_TESTS_STRAGGLER_E2E_SE2E_H
#define PADDOCK_TESTS_STRAGGLER_E2E_SE2E_H

#include <stdint.h>

#include <jansson.h>

/* One of state.json's "corrections" (or -1). */
long long se2e_correction(const char *job, const char *key);
/* The attempts of `task` in report.json with state `state` (NULL: any); their nodes (up to 8,
 * 64 bytes each) into nodes when not NULL. */
int se2e_attempts(json_t *report, const char *task, const char *state, char nodes[][64]);

#endif
