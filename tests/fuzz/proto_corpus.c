/* fuzz-proto-corpus DIR: writes seed inputs for the proto fuzz targets, every sample message
 * of every type: DIR/decode/<type>-<variant> (whole messages) and DIR/body/<type>-<variant>
 * (type byte + body, the fuzz_proto_body format); the view types also packed (proto/pack.h) in
 * DIR/decode/<type>-<variant>-packed, and plainly in DIR/packed for fuzz_proto_packed; the bodies
 * of TASK_STATUS_BATCH in DIR/batch for fuzz_status_batch. The typical variant sets every optional
 * field (the arbiter's job shape, admission verdict, token size, ETA and downgrade too), so every
 * key of every type is in the seeds; the minimal one is what an older peer sends. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "proto/pack.h"
#include "proto/proto.h"
#include "sample.h"

static int write_file(const char *path, const void *a, size_t alen, const void *b, size_t blen)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    int ok = fwrite(a, 1, alen, f) == alen && fwrite(b, 1, blen, f) == blen;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz-proto-corpus DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/decode", argv[1]);
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST)
        return 1;
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return 1;
    snprintf(path, sizeof path, "%s/body", argv[1]);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return 1;
    snprintf(path, sizeof path, "%s/packed", argv[1]);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return 1;
    snprintf(path, sizeof path, "%s/batch", argv[1]);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return 1;
    proto_buf_t buf;
    proto_buf_init(&buf);
    for (int t = 1; t < PROTO_TYPE_LIMIT; t++)
        for (int v = SAMPLE_TYPICAL; v <= SAMPLE_MINIMAL; v++) {
            proto_msg_t m;
            sample_msg(&m, (proto_type_t)t, (enum sample_variant)v);
            m.req_id = 0; /* envelope is then 4 bytes: 94 01 <type> 00 */
            int rc = proto_encode(&m, &buf, NULL, 0);
            if (rc == 0 && proto_type_packable((proto_type_t)t)) {
                /* the packed form (proto/pack.h) of the view types: DIR/decode and, whole
                   plain messages for fuzz_proto_packed to deflate, DIR/packed */
                proto_buf_t pk;
                proto_buf_init(&pk);
                rc = proto_encode_packed(&m, &pk, NULL, 0);
                snprintf(path, sizeof path, "%s/decode/%02d-%d-packed", argv[1], t, v);
                if (rc == 0)
                    rc = write_file(path, pk.data, pk.len, "", 0);
                snprintf(path, sizeof path, "%s/packed/%02d-%d", argv[1], t, v);
                if (rc == 0)
                    rc = write_file(path, buf.data, buf.len, "", 0);
                proto_buf_close(&pk);
            }
            proto_msg_close(&m);
            if (rc != 0 || buf.len < 4)
                return 1;
            snprintf(path, sizeof path, "%s/decode/%02d-%d", argv[1], t, v);
            if (write_file(path, buf.data, buf.len, "", 0) != 0)
                return 1;
            unsigned char type = (unsigned char)(t - 1);
            snprintf(path, sizeof path, "%s/body/%02d-%d", argv[1], t, v);
            if (write_file(path, &type, 1, buf.data + 4, buf.len - 4) != 0)
                return 1;
            snprintf(path, sizeof path, "%s/batch/%02d-%d", argv[1], t, v);
            if (t == PROTO_TASK_STATUS_BATCH && /* body only, for fuzz_status_batch */
                write_file(path, buf.data + 4, buf.len - 4, "", 0) != 0)
                return 1;
        }
    proto_buf_close(&buf);
    return 0;
}
