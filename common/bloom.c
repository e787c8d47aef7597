/* bloom.c - a bounded Bloom filter (see bloom.h). */
#include "common/bloom.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

struct bloom {
    uint32_t m;    /* bits */
    unsigned k;    /* hashes */
    uint32_t n;    /* additions (saturating) */
    uint8_t *bits; /* ceil(m / 8) bytes */
};

static size_t bloom__bytes(uint32_t m)
{
    return ((size_t)m + 7) / 8;
}

int bloom_new(uint32_t m_bits, unsigned k, bloom_t **out)
{
    *out = NULL;
    if (m_bits < 8 || m_bits > BLOOM_MAX_BITS || k < 1 || k > BLOOM_MAX_K)
        return ERR_INVAL;
    bloom_t *b = mem_calloc(1, sizeof *b);
    if (!b)
        return ERR_NOMEM;
    b->bits = mem_calloc(bloom__bytes(m_bits), 1);
    if (!b->bits) {
        mem_free(b);
        return ERR_NOMEM;
    }
    b->m = m_bits;
    b->k = k;
    *out = b;
    return 0;
}

void bloom_destroy(bloom_t **p)
{
    if (!p || !*p)
        return;
    mem_free((*p)->bits);
    mem_free(*p);
    *p = NULL;
}

int bloom_size(size_t n_expected, double fp_target, size_t max_bytes, uint32_t *m_bits, unsigned *k)
{
    if (n_expected == 0 || !(fp_target > 0) || !(fp_target < 1) || max_bytes < 8)
        return ERR_INVAL;
    double ln2 = log(2.0);
    double m = ceil(-(double)n_expected * log(fp_target) / (ln2 * ln2));
    double cap = (double)max_bytes * 8;
    if (cap > BLOOM_MAX_BITS)
        cap = BLOOM_MAX_BITS;
    if (m > cap)
        m = cap;
    if (m < 64)
        m = 64;
    uint32_t mb = (uint32_t)m;
    mb = (mb + 7) / 8 * 8;
    if (mb > (uint32_t)cap)
        mb = (uint32_t)cap / 8 * 8;
    double kk = round((double)mb / (double)n_expected * ln2);
    if (kk < 1)
        kk = 1;
    if (kk > BLOOM_MAX_K)
        kk = BLOOM_MAX_K;
    *m_bits = mb;
    *k = (unsigned)kk;
    return 0;
}

double bloom_fp_rate(uint32_t m_bits, unsigned k, size_t n)
{
    if (n == 0 || m_bits == 0 || k == 0)
        return 0;
    return pow(1.0 - exp(-(double)k * (double)n / (double)m_bits), (double)k);
}

static uint64_t bloom__mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void bloom__hash(const void *key, size_t len, uint64_t *h1, uint64_t *h2)
{
    const uint8_t *p = key;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    *h1 = bloom__mix(h);
    *h2 = bloom__mix(h ^ 0x5bd1e9955bd1e995ULL) | 1; /* odd: never a zero stride */
}

void bloom_add(bloom_t *b, const void *key, size_t len)
{
    uint64_t h1, h2;
    bloom__hash(key, len, &h1, &h2);
    for (unsigned i = 0; i < b->k; i++) {
        uint32_t bit = (uint32_t)((h1 + (uint64_t)i * h2) % b->m);
        b->bits[bit / 8] |= (uint8_t)(1u << (bit % 8));
    }
    if (b->n < UINT32_MAX)
        b->n++;
}

int bloom_has(const bloom_t *b, const void *key, size_t len)
{
    uint64_t h1, h2;
    bloom__hash(key, len, &h1, &h2);
    for (unsigned i = 0; i < b->k; i++) {
        uint32_t bit = (uint32_t)((h1 + (uint64_t)i * h2) % b->m);
        if (!(b->bits[bit / 8] & (1u << (bit % 8))))
            return 0;
    }
    return 1;
}

void bloom_clear(bloom_t *b)
{
    memset(b->bits, 0, bloom__bytes(b->m));
    b->n = 0;
}

uint32_t bloom_bits(const bloom_t *b)
{
    return b->m;
}

unsigned bloom_k(const bloom_t *b)
{
    return b->k;
}

size_t bloom_count(const bloom_t *b)
{
    return b->n;
}

double bloom_fp_bound(const bloom_t *b)
{
    return bloom_fp_rate(b->m, b->k, b->n);
}

double bloom_fill(const bloom_t *b)
{
    size_t set = 0;
    for (uint32_t i = 0; i < b->m; i++)
        set += (b->bits[i / 8] >> (i % 8)) & 1u;
    return (double)set / (double)b->m;
}

size_t bloom_encoded_size(const bloom_t *b)
{
    return BLOOM_HEADER_BYTES + bloom__bytes(b->m);
}

static void bloom__put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t bloom__get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

int bloom_encode(const bloom_t *b, uint8_t *buf, size_t cap, size_t *len)
{
    size_t need = bloom_encoded_size(b);
    if (cap < need)
        return ERR_TOOBIG;
    buf[0] = 'B';
    buf[1] = 'F';
    buf[2] = 1;
    buf[3] = (uint8_t)b->k;
    bloom__put32(buf + 4, b->m);
    bloom__put32(buf + 8, b->n);
    memcpy(buf + BLOOM_HEADER_BYTES, b->bits, bloom__bytes(b->m));
    *len = need;
    return 0;
}

int bloom_decode(const uint8_t *buf, size_t len, bloom_t **out)
{
    *out = NULL;
    if (!buf || len < BLOOM_HEADER_BYTES || buf[0] != 'B' || buf[1] != 'F')
        return ERR_PARSE;
    if (buf[2] != 1)
        return ERR_VERSION;
    unsigned k = buf[3];
    uint32_t m = bloom__get32(buf + 4);
    if (k < 1 || k > BLOOM_MAX_K || m < 8 || m > BLOOM_MAX_BITS ||
        len != BLOOM_HEADER_BYTES + bloom__bytes(m))
        return ERR_PARSE;
    /* Bits past m in the last byte must be clear: one filter, one encoding. */
    if (m % 8 && (buf[len - 1] >> (m % 8)))
        return ERR_PARSE;
    bloom_t *b;
    int rc = bloom_new(m, k, &b);
    if (rc)
        return rc;
    memcpy(b->bits, buf + BLOOM_HEADER_BYTES, bloom__bytes(m));
    b->n = bloom__get32(buf + 8);
    *out = b;
    return 0;
}
