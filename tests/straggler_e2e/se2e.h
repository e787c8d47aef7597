/* se2e.h - small helpers shared by the straggler end-to-end tests (on top of tests/e2e/e2e.h). */
#ifndef PADDOCK_TESTS_STRAGGLER_E2E_SE2E_H
#define PADDOCK_TESTS_STRAGGLER_E2E_SE2E_H

#include <stdint.h>

#include <jansson.h>

int64_t se2e_wall_ms(void);
void se2e_sleep_ms(int64_t ms);
/* Writes `text` to `path` (the test fails when it cannot). */
void se2e_write(const char *path, const char *text);
/* `paddock submit PATH`: the job id into id (the test fails when refused). */
void se2e_submit(const char *path, char id[64]);
/* An integer of state.json (or -1), and one of its "corrections" object. */
long long se2e_state_int(const char *job, const char *key);
long long se2e_correction(const char *job, const char *key);
/* The attempts of `task` in report.json with state `state` (NULL: any); their nodes (up to 8,
 * 64 bytes each) into nodes when not NULL. */
int se2e_attempts(json_t *report, const char *task, const char *state, char nodes[][64]);

#endif
