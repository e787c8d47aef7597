/* output.h - a task's output, as `paddock logs` and failure reasons read it (issue 25).
 *
 * A task writes its stdout and stderr to the files `stdout` and `stderr` in its directory on
 * the PN (pn/node_run.c); they stay readable for as long as the PN keeps the directory: while
 * the task is queued or runs, and after it ended for [tasks] retain (with [tasks]
 * keep_task_dirs, until the PN restarts). A task that succeeded leaving both files empty gives
 * its directory back at once: its output is empty. The shell (pn/server.c) answers
 * TASK_OUTPUT_READ with output_read; the node appends output_stderr_tail to the reason of a
 * task that failed, so "exit code 3" says what the task said before it exited.
 *
 * File reads only: no sockets, no clocks, no state. Paths are borrowed for the call.
 */
#ifndef PADDOCK_PN_OUTPUT_H
#define PADDOCK_PN_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#define OUTPUT_STDOUT 0u
#define OUTPUT_STDERR 1u

/* Bytes of stderr's end a failure reason carries: short enough that the reason, "exit code N;
 * stderr: " and this fit a job manager's 160-byte attempt record. */
#define OUTPUT_REASON_TAIL 120u

/* A part of DIR/stdout (stream 0) or DIR/stderr (stream 1): from `offset`, or with tail > 0 and
 * offset 0 from `tail` bytes before the end, at most `max` bytes (max 0 or over
 * PROTO_MAX_OUTPUT_CHUNK: PROTO_MAX_OUTPUT_CHUNK). dir NULL: a task that left nothing (empty
 * output). On 0: *data (caller owns, mem_free; NULL when *len is 0), *len, *start (where the
 * bytes begin: offset, or past the end of the file clamped to it) and *size (the file's size).
 * Returns 0, ERR_NOTFOUND (no such file: the directory is gone), ERR_INVAL (stream), ERR_IO or
 * ERR_NOMEM, with the reason in msg. Never follows a symbolic link the task left. */
int output_read(const char *dir, uint32_t stream, uint64_t offset, uint64_t tail, uint32_t max,
                uint8_t **data, uint32_t *len, uint64_t *start, uint64_t *size, char *msg,
                size_t cap);

/* The end of DIR/stderr as one line for a reason: its last non-empty lines joined with " | ",
 * at most `max` bytes (cut at the front, marked "..."), control characters and bytes outside
 * printable ASCII as '?', trailing blanks dropped. Writes "" when there is nothing (no file,
 * empty, dir NULL). Returns the length written (< cap). */
size_t output_stderr_tail(const char *dir, size_t max, char *out, size_t cap);

/* output_stderr_tail's work on bytes already read: raw[0..n) (the end of a file) made into one
 * line as above, into out. Pure; what the fuzz target drives. */
size_t output_tail_line(const uint8_t *raw, size_t n, size_t max, char *out, size_t cap);

/* Appends "; stderr: TAIL" (OUTPUT_REASON_TAIL bytes at most) to reason (a NUL-terminated
 * string in a buffer of cap bytes) when DIR/stderr has text; leaves it as it is otherwise. */
void output_reason_append(const char *dir, char *reason, size_t cap);

/* A task id or job id made safe for a file name, as the node names task directories
 * ("ID-JOB-TASK-ATTEMPT" under WORK/tasks): [A-Za-z0-9._-] kept, anything else '_', no leading
 * '.', at most 48 bytes. */
void output_safe_name(const char *in, char *out, size_t cap);

/* The directory of (job, task, attempt) under tasks_dir after the node forgot the task (kept by
 * [tasks] keep_task_dirs): the newest "ID-JOB-TASK-ATTEMPT" entry (largest ID); attempt 0 takes
 * the highest attempt there. Returns 0 with the path in out and the attempt in *found, or
 * ERR_NOTFOUND. */
int output_find_dir(const char *tasks_dir, const char *job, const char *task, uint32_t attempt,
                    char *out, size_t cap, uint32_t *found);

/* ---- the shell's side (pn/output_serve.c) ---- */

#include "proto/proto.h"

struct node;

/* Answers one TASK_OUTPUT_READ (req, decoded, borrowed) from what node `n` remembers (or, with
 * [tasks] keep_task_dirs, a forgotten task's directory that is still there): encodes into buf a
 * TASK_OUTPUT naming `node_name`, or an ERROR (ERR_NOTFOUND: no such attempt here, or its
 * directory is gone; ERR_INVAL: a bad stream). Returns 0, or an encoding error (nothing to
 * send). */
int output_answer(struct node *n, const char *node_name, const proto_msg_t *req, proto_buf_t *buf);

#endif
