/* journal.h - the job directory's journal (DIR/journal, docs/job-directory.md): one JSON line per
 * finished task attempt, read back by a resumed job manager.
 *
 * Format. Version 2 journals start with a header line
 *   {"format":"paddock-journal","version":2,"job_id":"ID","started_ms":MS}
 * followed by one attempt line per finished attempt, exactly as jm/daemon/jmd_out.c writes them:
 *   {"task":..,"stage":..,"attempt":N,"node":..,"class":"regular"|"opportunistic",
 *    "queued_s":..,"start_s":..,"end_s":..,"state":"succeeded"|..,"exit":..,"signal":..,
 *    "cpu_s":..,"max_rss_kb":..,"reason":..}
 * A journal without a header (written before the header existed) is version 1: the same
 * attempt lines, no job id and no start time.
 *
 * Crashes. The writer appends whole lines and fdatasyncs each batch before acting on what it
 * records, so a crash can leave at most a torn last line: bytes after the last newline, or a
 * last line that is not valid JSON (a block of zeros after a power loss). journal_parse reports
 * it (torn = 1, why in torn_why) and the length of the good prefix (good_len): the caller
 * truncates the file to good_len before appending again.
 *
 * Anything else that is wrong (a line in the middle that is not JSON, an attempt line without
 * its fields, a state name unknown, a second header, a header of a newer version) is not a
 * crash's doing: the journal is refused (ERR_PARSE or ERR_VERSION, the line number in msg).
 * Resuming from a journal with a hole could run a task that succeeded again; the job fails
 * with the reason instead.
 *
 * Pure: no files, no clock. Allocation through common/mem.h.
 */
#ifndef PADDOCK_JM_JOURNAL_H
#define PADDOCK_JM_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#define JOURNAL_VERSION      2
#define JOURNAL_ID_MAX       129    /* task ids and node names, bytes including the NUL */
#define JOURNAL_JOB_ID_MAX   64     /* job ids, bytes including the NUL */
#define JOURNAL_REASON_MAX   160    /* a reason, bytes including the NUL (longer ones are cut) */
#define JOURNAL_MAX_LINE     262144 /* longest line read; a longer one is refused */
#define JOURNAL_HEADER_BYTES 256    /* a buffer this big holds any header line */

/* One finished attempt (public value). */
struct journal_rec {
    char task[JOURNAL_ID_MAX];       /* the spec's task id */
    uint32_t attempt;                /* the wire attempt number (>= 1) */
    char node[JOURNAL_ID_MAX];       /* "?" when it never reached a node */
    int opportunistic;               /* its class at the end: 0 regular, 1 opportunistic */
    double queued_s, start_s, end_s; /* s from the job's start */
    int state;                       /* proto_task_state_t, terminal */
    int exit_code, signal;
    double cpu_s;
    uint64_t rss_kb;
    char reason[JOURNAL_REASON_MAX];
};

/* A parsed journal (public value, read-only after journal_parse; journal_close frees it). */
struct journal {
    int version;                     /* 1: headerless (older), 2: with a header */
    char job_id[JOURNAL_JOB_ID_MAX]; /* from the header ("" in version 1) */
    int64_t started_ms;              /* from the header (0 in version 1) */
    struct journal_rec *recs;        /* nrecs attempt records, in the journal's order */
    size_t nrecs;
    size_t good_len; /* bytes of the whole, valid lines: the caller truncates the file to this */
    int torn;        /* 1 when bytes after good_len were dropped (a torn last line) */
    char torn_why[128];
};

void journal_init(struct journal *jr);
void journal_close(struct journal *jr);

/* Parses `len` bytes of journal text (not NUL-terminated; may be empty: a new journal, version
 * 2 with no records). On success returns 0 and fills *jr (caller owns; journal_close). Returns
 * ERR_PARSE (a damaged line before the last: msg names the line and what is wrong),
 * ERR_VERSION (a header of a newer version), ERR_TOOBIG (a line over JOURNAL_MAX_LINE) or
 * ERR_NOMEM; then *jr is left empty. msg may be NULL. */
int journal_parse(const char *text, size_t len, struct journal *jr, char *msg, size_t cap);

/* Writes the version 2 header line for job_id (with its newline) into buf and returns its length,
 * or ERR_TOOBIG when cap is too small (JOURNAL_HEADER_BYTES always suffices for a job id under
 * JOURNAL_JOB_ID_MAX bytes) or ERR_INVAL for a job id that is too long or has a quote. */
int journal_header(char *buf, size_t cap, const char *job_id, int64_t started_ms);

#endif
