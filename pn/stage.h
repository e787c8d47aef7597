/* stage.h - the PN's content-addressed file cache (Apollo §3.3: "I denotes the initialization
 * time for fetching the needed files for the task, which could be 0 if those files are cached
 * locally").
 *
 * stage_file puts a task's file into the cache under the hash of its content (SHA-1, from
 * czmq's zdigest) and links it into the task's directory under its base name. A file whose
 * path, device, inode, size and modification time match an earlier staging is a hit: it is
 * neither read nor copied again. Cached files are read-only (0444); a task that wants to
 * modify one copies it first. A hit refreshes the entry's modification time (the cache's
 * recency order). Thread-safe: the PN stages on libuv's thread pool.
 *
 * The PN reads the files with its own rights: list the directories tasks may stage from in
 * the `stage_allow` configuration key when the PN runs as root.
 */
#ifndef PADDOCK_PN_STAGE_H
#define PADDOCK_PN_STAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct stage stage_t;

typedef struct stage_stats {
    uint64_t hits, misses, bytes_copied, errors;
} stage_stats_t;

/* Opens (creating it, mode 0755) the cache directory `dir` (copied). `allow` (n prefixes,
 * copied; n == 0 allows any path) bounds which source paths may be staged; `max_bytes` bounds
 * one file (0: 1 GiB). NULL on failure with the reason in msg. Caller owns;
 * stage_destroy nullifies the caller's reference. */
stage_t *stage_new(const char *dir, const char *const *allow, size_t n, uint64_t max_bytes,
                   char *msg, size_t cap);
void stage_destroy(stage_t **sp);

/* Stages `src` (absolute path) into the cache and links it as DST_DIR/basename(src).
 * *hit = 1 when the content was already cached and the source unchanged. Errors (reason in
 * msg): ERR_INVAL (not absolute, or "..", or outside the allowed prefixes), ERR_NOTFOUND
 * (missing or not a regular file), ERR_TOOBIG, ERR_IO. */
int stage_file(stage_t *s, const char *src, const char *dst_dir, int *hit, char *msg, size_t cap);

void stage_stats(stage_t *s, stage_stats_t *out);

/* Bounds the cache at about `bytes` (0: unbounded, the default). When a miss takes it over,
 * the least recently used entries that no task directory links any more (link count 1) are
 * deleted until it is under 90% of the bound; entries in use are never deleted, so the cache
 * can stay above the bound while they are. The size is counted from the directory at this
 * call. Returns 0 or ERR_IO. */
int stage_set_limit(stage_t *s, uint64_t bytes);

/* The source paths the cache remembers having staged (at most 4096, the most recent; a path
 * staged again after its file changed may appear twice): fn(arg, path) for each, under the
 * cache's lock (fn must not call back into the stage). Returns how many. An entry trimmed
 * from the cache since (stage_set_limit) is still named: staging it again is a miss. */
size_t stage_paths(stage_t *s, void (*fn)(void *arg, const char *path), void *arg);

/* Changes each time a path is added to what stage_paths names (starts at 0). */
uint64_t stage_generation(stage_t *s);

/* Bytes in the cache as last counted. */
uint64_t stage_cache_bytes(stage_t *s);

#endif
