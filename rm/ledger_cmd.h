/* ledger_cmd.h - ledger commands as Raft log entries.
 *
 * One log entry carries a batch of commands and the time the leader stamped on it
 * (docs/architecture.md, "Facts about the dependencies": with several buffers in one raft_apply
 * only the first entry's result is reported, so a batch is packed into one entry).
 * Format (rm/enc.h primitives):
 *
 *   entry   = magic:u32 "PDLE" version:u8 now:i64 count:u32 command*count
 *   command = type:u8 key:u64 fields(type)
 *
 * The fields of each type are those listed beside enum ledger_cmd_type in rm/ledger.h, in that
 * order. Version 1 entries (written before the arbiter) lack the fields after lease_ms of
 * JOB_REGISTER and LEASE_RENEW and the token size of VC_SET; version 2 entries (before
 * recurring jobs) lack JOB_REGISTER's run and inputs and JOB_END's usage; both are still read,
 * as zeros. Texts over 64 KiB (a spec) are blobs (u32 length); arrays are a u32 count and u32
 * values. A decoded command's texts point into the entry and its arrays into the iterator:
 * both are valid while the entry and the iterator are.
 * Decoding is bounded: at most LEDGER_CMD_BATCH_MAX commands, every string bounded by its field,
 * the entry consumed exactly but for up to 7 zero bytes of padding (the encoder pads to 8 bytes,
 * see ledger_cmd_encode).
 */
#ifndef PADDOCK_RM_LEDGER_CMD_H
#define PADDOCK_RM_LEDGER_CMD_H

#include "rm/enc.h"
#include "rm/ledger.h"

#define LEDGER_CMD_BATCH_MAX 4096

/* Appends an entry holding cmds[0..n) stamped `now` to *b (check enc_buf_err), zero-padded
 * to a multiple of 8 bytes (b must be empty or 8-aligned): raft_uv's segment format assumes
 * 8-byte multiples and reads other lengths back shifted after a restart. */
void ledger_cmd_encode(struct enc_buf *b, const struct ledger_cmd *cmds, size_t n, int64_t now);

/* A decoder over a borrowed entry. */
struct ledger_cmd_iter {
    struct enc_reader r;             /* private */
    uint32_t left;                   /* private */
    uint8_t version;                 /* private: entries of version 1 lack the arbiter's fields */
    int64_t now;                     /* read-only: the entry's time */
    uint32_t count;                  /* read-only: commands in the entry */
    uint32_t vals[LEDGER_VALS_MAX];  /* private: a decoded command's arrays point here */
    uint32_t vals2[LEDGER_VALS_MAX]; /* private */
};

/* Reads the header. Returns 0 or ERR_PARSE (msg says why). */
int ledger_cmd_iter_init(struct ledger_cmd_iter *it, const void *data, size_t len, char *msg,
                         size_t cap);
/* Decodes the next command into *c: 1 when one was read, 0 at the end of a well-formed entry
 * (nothing trailing), ERR_PARSE on malformed input (msg says why). */
int ledger_cmd_next(struct ledger_cmd_iter *it, struct ledger_cmd *c, char *msg, size_t cap);

/* Decodes a whole entry without applying it: 0 when well formed, else ERR_PARSE. */
int ledger_cmd_validate(const void *data, size_t len, char *msg, size_t cap);

/* Name of a command type ("token_request"), "?" if unknown. */
const char *ledger_cmd_name(uint8_t type);

#endif
