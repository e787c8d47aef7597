#include "pn/taskcg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

#define TASKCG__CGROUP2_MAGIC 0x63677270

struct taskcg {
    char *base;
    bool cpu;
};

static int taskcg__write(const char *dir, const char *file, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return ERR_IO;
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    close(fd);
    return w == (ssize_t)len ? 0 : ERR_IO;
}

static int taskcg__read(const char *dir, const char *file, char *buf, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ERR_IO;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return ERR_IO;
    buf[n] = 0;
    return 0;
}

static bool taskcg__word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
            return true;
    return false;
}

taskcg_t *taskcg_new(const char *base, char *msg, size_t cap)
{
    struct statfs fs;
    if (mkdir(base, 0755) != 0 && errno != EEXIST) {
        err_fmt(msg, cap, ERR_IO, "%s: %s", base, strerror(errno));
        return NULL;
    }
    if (statfs(base, &fs) != 0 || fs.f_type != TASKCG__CGROUP2_MAGIC) {
        err_fmt(msg, cap, ERR_CONFIG, "%s: not a cgroup v2 directory", base);
        return NULL;
    }
    /* A probe child proves we may create, kill and remove children here. */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/probe-%d", base, (int)getpid());
    if (mkdir(probe, 0755) != 0) {
        err_fmt(msg, cap, ERR_IO, "%s: cannot create a child cgroup: %s", base, strerror(errno));
        return NULL;
    }
    char kill_path[4300];
    snprintf(kill_path, sizeof kill_path, "%s/cgroup.kill", probe);
    bool can_kill = access(kill_path, W_OK) == 0;
    rmdir(probe);
    if (!can_kill) {
        err_fmt(msg, cap, ERR_CONFIG, "%s: no cgroup.kill (kernel older than 5.14?)", base);
        return NULL;
    }
    taskcg_t *cg = mem_calloc(1, sizeof *cg);
    if (!cg || !(cg->base = mem_strdup(base))) {
        mem_free(cg);
        err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        return NULL;
    }
    char buf[512];
    if (taskcg__read(base, "cgroup.controllers", buf, sizeof buf) == 0 &&
        taskcg__word(buf, "cpu")) {
        taskcg__write(base, "cgroup.subtree_control", "+cpu");
        cg->cpu = taskcg__read(base, "cgroup.subtree_control", buf, sizeof buf) == 0 &&
                  taskcg__word(buf, "cpu");
    }
    return cg;
}

void taskcg_destroy(taskcg_t **cgp)
{
    if (!cgp || !*cgp)
        return;
    rmdir((*cgp)->base); /* only when empty; a delegated base that held other things stays */
    mem_free((*cgp)->base);
    mem_free(*cgp);
    *cgp = NULL;
}

bool taskcg_has_cpu(const taskcg_t *cg)
{
    return cg->cpu;
}

int taskcg_create(taskcg_t *cg, uint64_t id, char *path, size_t cap)
{
    if (snprintf(path, cap, "%s/t%llu", cg->base, (unsigned long long)id) >= (int)cap)
        return ERR_IO;
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return ERR_IO;
    return 0;
}

int taskcg_attach(const char *path, pid_t pid)
{
    char text[32];
    snprintf(text, sizeof text, "%d", (int)pid);
    return taskcg__write(path, "cgroup.procs", text);
}

int taskcg_set_weight(const taskcg_t *cg, const char *path, unsigned weight)
{
    if (!cg->cpu)
        return 0;
    char text[32];
    snprintf(text, sizeof text, "%u", weight < 1 ? 1 : weight > 10000 ? 10000 : weight);
    return taskcg__write(path, "cpu.weight", text);
}

int taskcg_kill(const char *path)
{
    return taskcg__write(path, "cgroup.kill", "1");
}

int taskcg_remove(const char *path)
{
    for (int i = 0; i < 100; i++) {
        if (rmdir(path) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return ERR_IO;
        taskcg_kill(path);
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    return ERR_IO;
}
