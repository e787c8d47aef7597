#include "common/id.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "common/err.h"

int id_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return ERR_SYS;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

int id_random_u64(uint64_t *out)
{
    uint64_t v = 0;
    /* Zero means "no id" on the wire; draw again (probability 2^-64). */
    while (v == 0) {
        int rc = id_random_bytes(&v, sizeof v);
        if (rc != 0)
            return rc;
    }
    *out = v;
    return 0;
}

static const char id__digits[] = "0123456789abcdef";

char *id_hex(char *out, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = id__digits[p[i] >> 4];
        out[2 * i + 1] = id__digits[p[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
}

int id_job_new(char out[ID_JOB_SIZE])
{
    unsigned char b[ID_JOB_HEX / 2];
    int rc = id_random_bytes(b, sizeof b);
    if (rc != 0)
        return rc;
    memcpy(out, ID_JOB_PREFIX, 2);
    id_hex(out + 2, b, sizeof b);
    return 0;
}

bool id_job_valid(const char *s, size_t len)
{
    if (s == NULL || len != ID_JOB_LEN || memcmp(s, ID_JOB_PREFIX, 2) != 0)
        return false;
    for (size_t i = 2; i < len; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

char *id_format_u64(uint64_t id, char out[ID_U64_SIZE])
{
    for (int i = 15; i >= 0; i--) {
        out[i] = id__digits[id & 15];
        id >>= 4;
    }
    out[16] = '\0';
    return out;
}

int id_parse_u64(const char *s, size_t len, uint64_t *out)
{
    if (s == NULL || len == 0 || len > 16)
        return ERR_PARSE;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return ERR_PARSE;
        v = (v << 4) | d;
    }
    *out = v;
    return 0;
}
