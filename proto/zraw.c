/* zraw.c - raw deflate streams allocating through common/mem (zraw.h). */
#include "proto/zraw.h"

#include <string.h>

#include "common/mem.h"

static voidpf zraw__alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return mem_calloc(items, size);
}

static void zraw__free(voidpf opaque, voidpf p)
{
    (void)opaque;
    mem_free(p);
}

static void zraw__hooks(z_stream *z)
{
    memset(z, 0, sizeof *z);
    z->zalloc = zraw__alloc;
    z->zfree = zraw__free;
}

int proto_zraw_deflate_init(z_stream *z)
{
    zraw__hooks(z);
    return deflateInit2(z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}

int proto_zraw_inflate_init(z_stream *z)
{
    zraw__hooks(z);
    return inflateInit2(z, -15);
}
