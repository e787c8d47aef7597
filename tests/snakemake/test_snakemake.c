/* test_snakemake.c - runs tests/snakemake/snakemake_e2e.sh (Debian's Snakemake on a local
 * cluster through clients/snakemake/paddock, docs/snakemake.md) and passes on its verdict:
 * 0 passed, 77 skipped (snakemake missing), anything else failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    const char *src = getenv("PADDOCK_SOURCE_DIR");
    if (!src || !getenv("PADDOCK_BIN_DIR")) {
        fprintf(stderr, "PADDOCK_SOURCE_DIR and PADDOCK_BIN_DIR must be set (ctest sets them)\n");
        return 1;
    }
    char script[4096];
    snprintf(script, sizeof script, "%s/tests/snakemake/snakemake_e2e.sh", src);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        execl("/bin/sh", "sh", script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    fprintf(stderr, "the test script died of signal %d\n", WTERMSIG(status));
    return 1;
}
