/* batch.h - TASK_STATUS_BATCH built one status at a time (proto/README.md): what a PN holds
 * for a job until the end of its loop pass (docs/pn.md "Status batches"). */
#ifndef PADDOCK_PROTO_BATCH_H
#define PADDOCK_PROTO_BATCH_H

#include <stdint.h>

#include "proto/proto.h"

/* A TASK_STATUS_BATCH built one status at a time: each is checked as proto_encode checks it and
 * packed at once, so the caller's strings need not outlive proto_batch_add. */
typedef struct proto_batch {
    proto_buf_t items; /* the packed status bodies, back to back */
    uint32_t n;
    uint64_t req_id; /* of the last status added: a batch of one goes out as that TASK_STATUS */
} proto_batch_t;

void proto_batch_init(proto_batch_t *b);
void proto_batch_close(proto_batch_t *b);
/* 0; the check's error (err says why, nothing added); ERR_FULL when PROTO_MAX_BATCH statuses
 * are held already; ERR_NOMEM. */
int proto_batch_add(proto_batch_t *b, const proto_task_status_t *s, uint64_t req_id, char *err,
                    size_t errcap);
/* The message for what the batch holds, into buf: one status as TASK_STATUS (its req_id),
 * several as TASK_STATUS_BATCH (req_id 0); the batch is empty after, whatever the result.
 * ERR_INVAL when it holds none, ERR_NOMEM. */
int proto_batch_encode(proto_batch_t *b, proto_buf_t *buf, char *err, size_t errcap);

#endif
