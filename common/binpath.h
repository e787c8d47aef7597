/* binpath.h - finding Paddock's other executables: the folder of this one, and a sibling
 * (`paddock-jm` beside `paddock` or `paddock-rm`) looked up there before PATH.
 *
 * Linux: reads /proc/self/exe. No allocation; results are written into the caller's buffer.
 */
#ifndef PADDOCK_COMMON_BINPATH_H
#define PADDOCK_COMMON_BINPATH_H

#include <stddef.h>

/* The folder of this executable into out: 0, or ERR_SYS (/proc/self/exe unreadable) or
 * ERR_RANGE (the path does not fit in cap). */
int binpath_self_dir(char *out, size_t cap);

/* The path of executable `name`: `dir`/name when dir is neither NULL nor empty and it is
 * executable there (e.g. the CLI's PADDOCK_BIN_DIR), else name beside this executable when it is
 * executable there, else the bare name (for PATH). Always a NUL-terminated string in out. */
void binpath_sibling(const char *name, const char *dir, char *out, size_t cap);

#endif
