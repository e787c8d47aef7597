/* binpath.c - finding Paddock's other executables (common/binpath.h). */
#include "common/binpath.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"

int binpath_self_dir(char *out, size_t cap)
{
    if (cap < 2)
        return ERR_RANGE;
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0)
        return ERR_SYS;
    if ((size_t)n >= cap - 1)
        return ERR_RANGE; /* perhaps cut: readlink does not say */
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash != NULL)
        *slash = '\0';
    return 0;
}

/* dir/name into out when it fits and is executable. */
static int binpath__try(const char *dir, const char *name, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return n > 0 && (size_t)n < cap && access(out, X_OK) == 0;
}

void binpath_sibling(const char *name, const char *dir, char *out, size_t cap)
{
    if (cap == 0)
        return;
    if (dir != NULL && dir[0] != '\0' && binpath__try(dir, name, out, cap))
        return;
    char self[PATH_MAX];
    if (binpath_self_dir(self, sizeof self) == 0 && binpath__try(self, name, out, cap))
        return;
    snprintf(out, cap, "%s", name);
}
