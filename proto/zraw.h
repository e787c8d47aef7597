/* zraw.h - the raw deflate streams (RFC 1951, no zlib header) of the packed views (pack.h) and
 * the compact deltas (view_cells.h). Internal to proto/. Their allocations go through
 * common/mem.h, so a test can fail any of them. */
#ifndef PADDOCK_PROTO_ZRAW_H
#define PADDOCK_PROTO_ZRAW_H

#include <zlib.h>

/* deflateInit2 at level 1: the RM deflates each publication once; a few percent more bytes for
 * several times less CPU than the default level (docs/benchmarks.md "Views for a thousand JMs").
 * Z_OK or zlib's error; deflateEnd(z) after Z_OK. */
int proto_zraw_deflate_init(z_stream *z);

/* inflateInit2 for a raw stream. Z_OK or zlib's error; inflateEnd(z) after Z_OK. */
int proto_zraw_inflate_init(z_stream *z);

#endif
