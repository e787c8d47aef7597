/* enc.h - the compact binary encoding of the RM's Raft log entries and snapshots.
 *
 * Little-endian fixed-width integers and length-prefixed byte strings. This is the RM's private
 * on-disk and replication format (not the wire protocol, which lives in proto/): it never leaves
 * the replicas. The reader is bounded: every read checks the remaining length, a failed read
 * latches an error and later reads return zeroes, so a decoder checks `enc_reader_ok` once at
 * the end of a record. Strings are bounded by the caller's cap before anything is copied.
 */
#ifndef PADDOCK_RM_ENC_H
#define PADDOCK_RM_ENC_H

#include <stddef.h>
#include <stdint.h>

/* A growing output buffer. Public struct: `data` and `len` are read-only for callers. */
struct enc_buf {
    uint8_t *data; /* read-only: mem_alloc'd (or via the alloc hook below); caller owns */
    size_t len;    /* read-only */
    size_t cap;    /* private */
    int err;       /* private: latched ERR_NOMEM */
    /* private: allocator (NULL: mem_realloc). raft_realloc lets a snapshot buffer be handed to
     * raft without a copy. */
    void *(*realloc_fn)(void *p, size_t n);
};

void enc_buf_init(struct enc_buf *b);
/* Frees the data unless it was taken with enc_buf_take. */
void enc_buf_close(struct enc_buf *b);
/* Transfers ownership of the data to the caller (NULL if an allocation failed: check enc_buf_err
 * first) and resets the buffer. */
uint8_t *enc_buf_take(struct enc_buf *b, size_t *len);
/* 0 or ERR_NOMEM if any append failed. */
int enc_buf_err(const struct enc_buf *b);

void enc_u8(struct enc_buf *b, uint8_t v);
void enc_u32(struct enc_buf *b, uint32_t v);
void enc_u64(struct enc_buf *b, uint64_t v);
void enc_i64(struct enc_buf *b, int64_t v);
/* A u16 length then the bytes; NULL is the empty string. Strings over 65535 bytes latch
 * ERR_NOMEM-free ERR_TOOBIG. */
void enc_str(struct enc_buf *b, const char *s);
void enc_bytes(struct enc_buf *b, const void *p, size_t n);
/* A u32 length then n bytes (long texts: a job spec). */
void enc_blob(struct enc_buf *b, const void *p, uint32_t n);

/* A bounded reader over borrowed bytes. */
struct enc_reader {
    const uint8_t *p; /* private */
    size_t left;      /* private */
    int err;          /* private */
};

void enc_reader_init(struct enc_reader *r, const void *data, size_t len);
uint8_t enc_get_u8(struct enc_reader *r);
uint32_t enc_get_u32(struct enc_reader *r);
uint64_t enc_get_u64(struct enc_reader *r);
int64_t enc_get_i64(struct enc_reader *r);
/* Copies a string into a caller-owned buffer of `cap` bytes (NUL-terminated); a string of cap
 * bytes or more, or one holding a NUL, is an error. */
void enc_get_str(struct enc_reader *r, char *out, size_t cap);
/* A u32 count then n u32 values (a skyline, a reservation). */
void enc_u32s(struct enc_buf *b, const uint32_t *v, uint32_t n);
/* Reads the count of such an array: at most max, and no more values than the bytes left hold
 * (else an error is latched and 0 returned); the values follow, read with enc_get_u32. */
uint32_t enc_get_u32s_count(struct enc_reader *r, uint32_t max);
/* A blob of at most `max` bytes: returns a pointer into the reader's bytes (borrowed) and its
 * length in *n; NULL with *n = 0 when empty or on error (too long or truncated latch one). */
const void *enc_get_blob(struct enc_reader *r, uint32_t max, uint32_t *n);
/* Bytes remaining. */
size_t enc_reader_left(const struct enc_reader *r);
/* 0 when every read so far succeeded, else ERR_PARSE. */
int enc_reader_err(const struct enc_reader *r);
/* Latches an error (a decoder found a value out of range). */
void enc_reader_fail(struct enc_reader *r);

#endif
