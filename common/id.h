/* id.h - random identifiers from the kernel's generator (getrandom).
 *
 * Boot ids tell incarnations of a daemon apart (a PN's heartbeats carry (boot id, sequence)
 * so receivers keep the freshest); job ids name jobs in the RM, the CLI and file names.
 * Random bytes here are for identities only: policy modules take their random draws from
 * their caller (seeded generators), never from this module.
 */
#ifndef PADDOCK_COMMON_ID_H
#define PADDOCK_COMMON_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fills `buf` with `n` random bytes from getrandom(2) (retrying on EINTR and short reads).
 * Returns 0, or ERR_SYS when the kernel refuses (buf contents are then unspecified). */
int id_random_bytes(void *buf, size_t n);

/* A random non-zero 64-bit value (boot ids, nonces). Returns 0 or ERR_SYS. */
int id_random_u64(uint64_t *out);

/* Job ids: "j-" followed by 12 lowercase hex digits (48 random bits), e.g. "j-3fa9c2e01b7d". */
#define ID_JOB_PREFIX "j-"
#define ID_JOB_HEX    12
#define ID_JOB_LEN    (2 + ID_JOB_HEX) /* characters, without the NUL */
#define ID_JOB_SIZE   (ID_JOB_LEN + 1) /* buffer size */

/* Writes a fresh job id into `out` (ID_JOB_SIZE bytes). Returns 0 or ERR_SYS. */
int id_job_new(char out[ID_JOB_SIZE]);

/* True when the `len` bytes at `s` are exactly a job id in the form above (no NUL needed). */
bool id_job_valid(const char *s, size_t len);

/* Writes `n` bytes as lowercase hex into `out` (2n+1 bytes, NUL-terminated). Returns `out`. */
char *id_hex(char *out, const void *buf, size_t n);

/* Formats a 64-bit id as 16 lowercase hex digits into `out` (ID_U64_SIZE bytes). */
#define ID_U64_SIZE 17
char *id_format_u64(uint64_t id, char out[ID_U64_SIZE]);

/* Parses exactly 1..16 hex digits (no prefix, either case) at s[0..len). Returns 0 or ERR_PARSE. */
int id_parse_u64(const char *s, size_t len, uint64_t *out);

#endif
