/* bloom.h - a bounded Bloom filter: a compact, lossy summary of a set of keys (byte strings),
 * used for a PN's cache advertisement (issue 15: the files a node holds, carried in heartbeats so
 * that every JM can take I = 0 where the files already are).
 *
 * A filter has a fixed number of bits m (chosen at creation, at most BLOOM_MAX_BITS) and k hash
 * functions (Kirsch-Mitzenmacher double hashing: bit_i = h1 + i * h2 mod m, h1 and h2 from one
 * 64-bit FNV-1a hash of the key mixed by splitmix64). bloom_has never misses a key that was
 * added (no false negatives); it answers yes for a key never added with probability
 * about
 *     fp(n) = (1 - e^{-k n / m})^k
 * after n distinct additions (Bloom 1970; Broder & Mitzenmacher 2004, §2.1). That classic
 * formula is itself a slight underestimate for small m (Bose et al. 2008): tests/straggler
 * measures the real rate within 7% of it (m = 8192, k = 6, n = 800: 0.81% against 0.76%).
 * The filter counts its additions (a repeated key counts again: the bound only grows).
 * bloom_fp_bound gives fp(n) for the current count; bloom_size chooses m and k for n expected
 * keys and a target rate within a byte budget.
 *
 * Wire form (bloom_encode / bloom_decode), little-endian:
 *     "BF" | version u8 (1) | k u8 | m u32 (bits) | n u32 (additions, saturating) | ceil(m/8)
 * bytes of bits (bit b is byte b/8, bit b%8). Decoding checks every field: a short, long or
 * inconsistent buffer is refused with ERR_PARSE, a version other than 1 with ERR_VERSION.
 *
 * Pure: no clock, no randomness, no I/O. Opaque; caller owns.
 */
#ifndef PADDOCK_COMMON_BLOOM_H
#define PADDOCK_COMMON_BLOOM_H

#include <stddef.h>
#include <stdint.h>

#define BLOOM_MAX_BITS     ((uint32_t)1 << 20) /* 128 KiB of bits: a heartbeat stays small */
#define BLOOM_MAX_K        16
#define BLOOM_HEADER_BYTES 12

typedef struct bloom bloom_t;

/* New empty filter of m_bits bits (8 <= m_bits <= BLOOM_MAX_BITS) and k hashes (1..BLOOM_MAX_K).
 * Returns 0 and *out (caller owns: bloom_destroy), ERR_INVAL or ERR_NOMEM. */
int bloom_new(uint32_t m_bits, unsigned k, bloom_t **out);
/* Frees the filter; nullifies the caller's reference. NULL-safe. */
void bloom_destroy(bloom_t **p);

/* Chooses m (bits, a multiple of 8) and k for n_expected keys at false-positive rate fp_target
 * (0 < fp < 1) within max_bytes of bits: m = ceil(-n ln fp / ln^2 2) capped at 8 * max_bytes and
 * BLOOM_MAX_BITS (at least 64), k = round(m / n ln 2) in 1..BLOOM_MAX_K. ERR_INVAL on a bad
 * argument. When the cap binds the achieved rate is higher than the target: bloom_fp_rate says
 * how much. */
int bloom_size(size_t n_expected, double fp_target, size_t max_bytes, uint32_t *m_bits,
               unsigned *k);

/* The bound fp(n) for m bits, k hashes and n keys (0 for n == 0). */
double bloom_fp_rate(uint32_t m_bits, unsigned k, size_t n);

void bloom_add(bloom_t *b, const void *key, size_t len);
/* 1 when the key may be in the set, 0 when it surely is not. */
int bloom_has(const bloom_t *b, const void *key, size_t len);
void bloom_clear(bloom_t *b);

uint32_t bloom_bits(const bloom_t *b);
unsigned bloom_k(const bloom_t *b);
size_t bloom_count(const bloom_t *b);    /* additions since creation or the last clear */
double bloom_fp_bound(const bloom_t *b); /* bloom_fp_rate for the current count */
/* Fraction of bits set (the observed fill; (fill)^k estimates the current rate). */
double bloom_fill(const bloom_t *b);

/* Bytes bloom_encode writes: BLOOM_HEADER_BYTES + ceil(m / 8). */
size_t bloom_encoded_size(const bloom_t *b);
/* Writes the wire form into buf (cap bytes); *len gets its size. ERR_TOOBIG when cap is short. */
int bloom_encode(const bloom_t *b, uint8_t *buf, size_t cap, size_t *len);
/* Reads a wire form; *out a new filter (caller owns). ERR_PARSE, ERR_VERSION, ERR_NOMEM. */
int bloom_decode(const uint8_t *buf, size_t len, bloom_t **out);

#endif
