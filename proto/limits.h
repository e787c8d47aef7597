/* limits.h - every size limit of the wire protocol, in one place.
 *
 * The encoder refuses to produce a message that breaks one of these, and the decoder rejects
 * (and counts) any message that does, before allocating anything sized by the input. Daemons
 * set ZMQ_MAXMSGSIZE to PROTO_MAX_MSG_BYTES on every socket that carries these messages.
 * Raising a limit is a protocol change: both ends must agree.
 */
#ifndef PADDOCK_PROTO_LIMITS_H
#define PADDOCK_PROTO_LIMITS_H

/* Whole encoded message (envelope included), bytes. Sized for a view part of
 * PROTO_MAX_VIEW_NODES nodes with full 16x16 matrices and for an admin reply listing 20,000
 * nodes as JSON. */
#define PROTO_MAX_MSG_BYTES (4u * 1024u * 1024u)

/* Decoder structure limits (pre-scan, before msgpack-c allocates anything):
 * nesting depth of arrays/maps, and total number of msgpack objects in one message (msgpack-c
 * allocates one 24-byte msgpack_object per element, so this bounds the unpack zone to a few
 * MiB whatever the bytes say). */
#define PROTO_MAX_DEPTH   8u
#define PROTO_MAX_OBJECTS 262144u
/* Entries in any one map of a message body (known fields plus ignored unknown ones). */
#define PROTO_MAX_FIELDS 64u

/* Strings, in bytes, without the terminating NUL. No string may contain a NUL byte. */
#define PROTO_MAX_NAME       255u  /* node, rack, job, stage, task ids, virtual cluster */
#define PROTO_MAX_KEY        255u  /* idempotency keys */
#define PROTO_MAX_ENDPOINT   255u  /* ZeroMQ endpoints, "tcp://127.0.0.1:5555" */
#define PROTO_MAX_ARG        4096u /* one argv entry, env value, cwd, file path */
#define PROTO_MAX_ENV_KEY    255u  /* environment variable name */
#define PROTO_MAX_TEXT       1024u /* reason and error texts */
#define PROTO_MAX_JSON       (PROTO_MAX_MSG_BYTES - 4096u) /* admin reply document */
#define PROTO_MAX_ADMIN_ARG  1024u                         /* one admin query argument */
#define PROTO_MAX_ADMIN_DATA (512u * 1024u) /* an admin query's document (a job spec) */

/* Counts. */
#define PROTO_MAX_ARGV         1024u /* argv entries of a task (at least 1) */
#define PROTO_MAX_ENV          256u  /* environment entries of a task */
#define PROTO_MAX_FILES        256u  /* files to stage for a task */
#define PROTO_MAX_OUTCOMES     256u  /* nodes in one lease renewal's task outcomes */
#define PROTO_MAX_ADMIN_ARGS   16u   /* arguments of an admin query */
#define PROTO_MAX_MATRIX_DIM   16u   /* cpu bins, and memory bins, of a wait-time matrix */
#define PROTO_MAX_MATRIX_CELLS (PROTO_MAX_MATRIX_DIM * PROTO_MAX_MATRIX_DIM)
#define PROTO_MAX_VIEW_NODES   512u  /* nodes in one view snapshot part or delta */
#define PROTO_MAX_VIEW_PARTS   1024u /* parts of one snapshot: 524,288 nodes at most */
#define PROTO_MAX_VIEW_REMOVED 4096u /* removed node names in one delta */
#define PROTO_MAX_JOB_FILES    64u   /* files a job declares it reads, and writes */
#define PROTO_MAX_SKYLINE      512u  /* steps of a job's skyline (tokens used over time) */
#define PROTO_MAX_NODE_JOBS    1024u /* jobs with live tasks named in one heartbeat (and its ack) */
/* Statuses in one TASK_STATUS_BATCH: 256 of the largest (every string at its limit, a 16 x 16
 * matrix) are under 1 MiB and 100,000 objects, so a batch of valid statuses always encodes. */
#define PROTO_MAX_BATCH 256u
/* A PN's cache advertisement (HEARTBEAT and view node cache_filter: common/bloom.h's wire form,
 * header included): 4 KiB keeps a full view part (512 nodes) under PROTO_MAX_MSG_BYTES. */
#define PROTO_MAX_CACHE_FILTER 4096u
/* Bytes of a task's output in one TASK_OUTPUT (`paddock logs` reads a longer one in parts). */
#define PROTO_MAX_OUTPUT_CHUNK (256u * 1024u)

/* Value ranges. */
#define PROTO_MAX_CPU         4096.0       /* cores of one node or task */
#define PROTO_MAX_MEM_MB      (1ull << 32) /* MiB of one node or task (4 PiB) */
#define PROTO_MAX_TASKS       1000000u     /* running/queued tasks counted on a node */
#define PROTO_MAX_TOKENS      1000000u     /* tokens in one request or grant */
#define PROTO_MAX_ATTEMPT     1000u        /* attempt number of a task */
#define PROTO_MAX_WEIGHT      1000000.0    /* opportunistic pick weight */
#define PROTO_MAX_PRIORITY    1e12         /* a task's priority (bottom level, seconds) */
#define PROTO_MAX_DURATION_MS (1ull << 48) /* any duration in ms (~8900 years) */
#define PROTO_MAX_TIME_MS     (1ll << 52)  /* any timestamp, ms since the Unix epoch */

#endif
