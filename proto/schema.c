/* schema.c - the field tables of every message body (see schema.h). The wire key of a field
 * is its C member name, so a dump of a message reads like the header. */
#include "proto/schema.h"

#include <stdio.h>
#include <string.h>

#include "common/bloom.h"
#include "common/err.h"

#define PROTO__KEY(m)    .key = #m, .keylen = sizeof(#m) - 1
#define PROTO__AT(S, m)  PROTO__KEY(m), .off = offsetof(S, m)
#define PROTO__CNT(S, c) .count_off = offsetof(S, c)

#define BOOL(S, m, req)                                                                            \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__BOOL, .required = req                                      \
    }
#define U32(S, m, req, lo, hi)                                                                     \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__U32, .required = req, .umin = (lo), .umax = (hi)           \
    }
#define U64(S, m, req, lo, hi)                                                                     \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__U64, .required = req, .umin = (lo), .umax = (hi)           \
    }
#define I32(S, m, req, lo, hi)                                                                     \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__I32, .required = req, .imin = (lo), .imax = (hi)           \
    }
#define I64(S, m, req, lo, hi)                                                                     \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__I64, .required = req, .imin = (lo), .imax = (hi)           \
    }
#define F64(S, m, req, lo, hi)                                                                     \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__F64, .required = req, .dmin = (lo), .dmax = (hi)           \
    }
#define STR(S, m, req, lo, hi)                                                                     \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__STR, .required = req, .umin = (lo), .umax = (hi)           \
    }
#define STRS(S, m, c, req, lo, hi, item)                                                           \
    {                                                                                              \
        PROTO__AT(S, m), PROTO__CNT(S, c), .kind = PROTO__STRS, .required = req, .umin = (lo),     \
                                           .umax = (hi), .item_max = (item)                        \
    }
#define KVS(S, m, c, hi, item)                                                                     \
    {                                                                                              \
        PROTO__AT(S, m), PROTO__CNT(S, c), .kind = PROTO__KVS, .umax = (hi), .item_max = (item)    \
    }
#define STRUCTS(S, m, c, req, lo, hi, schema)                                                      \
    {                                                                                              \
        PROTO__AT(S, m), PROTO__CNT(S, c), .kind = PROTO__STRUCTS, .required = req, .umin = (lo),  \
                                           .umax = (hi), .sub = &(schema)                          \
    }
#define BIN(S, m, c, hi)                                                                           \
    {                                                                                              \
        PROTO__AT(S, m), PROTO__CNT(S, c), .kind = PROTO__BIN, .umax = (hi)                        \
    }
#define MATRIX(S, m)                                                                               \
    {                                                                                              \
        PROTO__AT(S, m), .kind = PROTO__MATRIX                                                     \
    }

#define REQ                 1
#define OPT                 0
#define NAME(S, m, req)     STR(S, m, req, 1, PROTO_MAX_NAME)
#define ANYNAME(S, m, req)  STR(S, m, req, 0, PROTO_MAX_NAME)
#define KEY(S, m)           STR(S, m, REQ, 1, PROTO_MAX_KEY)
#define ENDPOINT(S, m, req) STR(S, m, req, 0, PROTO_MAX_ENDPOINT)
#define TEXT(S, m)          STR(S, m, OPT, 0, PROTO_MAX_TEXT)
#define TIME(S, m, req)     I64(S, m, req, 0, PROTO_MAX_TIME_MS)
#define DUR(S, m)           U64(S, m, OPT, 0, PROTO_MAX_DURATION_MS)
#define DUR32(S, m, req)    U32(S, m, req, 0, UINT32_MAX)
#define ID64(S, m, req)     U64(S, m, req, 0, UINT64_MAX)
#define COUNT(S, m)         U32(S, m, OPT, 0, PROTO_MAX_TASKS)
#define BIG(S, m)           U64(S, m, OPT, 0, UINT64_MAX)
#define CPU(S, m, req, lo)  F64(S, m, req, lo, PROTO_MAX_CPU)
#define MEM(S, m, req, lo)  U64(S, m, req, lo, PROTO_MAX_MEM_MB)
#define ENUM(S, m, req, n)  U32(S, m, req, 0, (n)-1)
#define TOKENS(S, m, req)   U32(S, m, req, 0, PROTO_MAX_TOKENS)
#define ATTEMPT(S, m)       U32(S, m, REQ, 0, PROTO_MAX_ATTEMPT)

#define PROTO__N(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#define SCHEMA(msg, S, fields, chk)                                                                \
    const proto__schema_t msg##_s = {#msg, sizeof(S), fields, PROTO__N(fields), chk}

/* A task needs at least a millicore; a node at least one MiB. */
#define MIN_CPU 0.001

/* ---------------------------------------------------------------------------------------- */

#define S proto_node_register_t
static const proto__field_t node_register_f[] = {
    KEY(S, key),
    NAME(S, name, REQ),
    ANYNAME(S, rack, REQ),
    ENDPOINT(S, endpoint, REQ),
    ID64(S, boot_id, REQ),
    CPU(S, cpu, REQ, MIN_CPU),
    MEM(S, mem_mb, REQ, 1),
    STR(S, version, OPT, 0, PROTO_MAX_NAME),
    TIME(S, timestamp_ms, OPT),
};
static SCHEMA(node_register, S, node_register_f, NULL);
#undef S

#define S proto_node_register_ack_t
static const proto__field_t node_register_ack_f[] = {
    KEY(S, key),
    NAME(S, name, REQ),
    ID64(S, boot_id, REQ),
    ENUM(S, verdict, REQ, PROTO_VERDICT_COUNT),
    I32(S, code, OPT, INT32_MIN, 0),
    TEXT(S, reason),
    DUR32(S, heartbeat_ms, OPT),
    ID64(S, rm_id, OPT),
};
static SCHEMA(node_register_ack, S, node_register_ack_f, NULL);
#undef S

/* A cache filter, when present, must be one bloom_decode takes. */
static int cache_filter_check(const uint8_t *f, uint32_t len, const char *w, char *err,
                              size_t errcap)
{
    if (len == 0)
        return 0;
    bloom_t *b = NULL;
    int rc = bloom_decode(f, len, &b);
    bloom_destroy(&b);
    if (rc == ERR_NOMEM)
        return err_fmt(err, errcap, ERR_NOMEM, "%s.cache_filter: out of memory", w);
    return rc != 0 ? err_fmt(err, errcap, ERR_RANGE, "%s.cache_filter: not a Bloom filter", w) : 0;
}

static int heartbeat_check(const void *body, char *err, size_t errcap)
{
    const proto_heartbeat_t *h = body;
    return cache_filter_check(h->cache_filter, h->cache_filter_len, "heartbeat", err, errcap);
}

static int view_node_check(const void *body, char *err, size_t errcap)
{
    const proto_view_node_t *n = body;
    return cache_filter_check(n->cache_filter, n->cache_filter_len, "view_node", err, errcap);
}

#define S proto_heartbeat_t
static const proto__field_t heartbeat_f[] = {
    NAME(S, name, REQ),
    ANYNAME(S, rack, REQ),
    ENDPOINT(S, endpoint, REQ),
    ID64(S, boot_id, REQ),
    ID64(S, seq, REQ),
    CPU(S, cpu, REQ, 0),
    MEM(S, mem_mb, REQ, 0),
    CPU(S, used_cpu, OPT, 0),
    MEM(S, used_mem_mb, OPT, 0),
    COUNT(S, running_regular),
    COUNT(S, running_opportunistic),
    COUNT(S, queued_regular),
    COUNT(S, queued_opportunistic),
    BOOL(S, draining, OPT),
    MATRIX(S, matrix),
    TIME(S, timestamp_ms, REQ),
    STRS(S, jobs, njobs, OPT, 0, PROTO_MAX_NODE_JOBS, PROTO_MAX_NAME),
    ENDPOINT(S, metrics_url, OPT),
    BIN(S, cache_filter, cache_filter_len, PROTO_MAX_CACHE_FILTER),
};
static SCHEMA(heartbeat, S, heartbeat_f, heartbeat_check);
#undef S

#define S proto_view_node_t
static const proto__field_t view_node_f[] = {
    NAME(S, name, REQ),
    ANYNAME(S, rack, REQ),
    ENDPOINT(S, endpoint, REQ),
    ENUM(S, state, REQ, PROTO_NODE_STATE_COUNT),
    CPU(S, cpu, OPT, 0),
    MEM(S, mem_mb, OPT, 0),
    CPU(S, used_cpu, OPT, 0),
    MEM(S, used_mem_mb, OPT, 0),
    COUNT(S, running_regular),
    COUNT(S, running_opportunistic),
    COUNT(S, queued_regular),
    COUNT(S, queued_opportunistic),
    MATRIX(S, matrix),
    ID64(S, boot_id, REQ),
    ID64(S, seq, REQ),
    DUR(S, age_ms),
    BIG(S, failures),
    BIG(S, successes),
    BIN(S, cache_filter, cache_filter_len, PROTO_MAX_CACHE_FILTER),
};
static SCHEMA(view_node, S, view_node_f, view_node_check);
#undef S

static int view_snapshot_check(const void *body, char *err, size_t errcap)
{
    const proto_view_snapshot_t *v = body;
    if (v->part >= v->parts)
        return err_fmt(err, errcap, ERR_RANGE, "part %u not below parts %u", v->part, v->parts);
    return 0;
}

#define S proto_view_snapshot_t
static const proto__field_t view_snapshot_f[] = {
    ID64(S, rm_id, REQ),
    ID64(S, view_seq, REQ),
    U32(S, part, REQ, 0, PROTO_MAX_VIEW_PARTS - 1),
    U32(S, parts, REQ, 1, PROTO_MAX_VIEW_PARTS),
    TIME(S, timestamp_ms, OPT),
    STRUCTS(S, nodes, nnodes, OPT, 0, PROTO_MAX_VIEW_NODES, view_node_s),
};
static SCHEMA(view_snapshot, S, view_snapshot_f, view_snapshot_check);
#undef S

#define S proto_view_delta_t
static const proto__field_t view_delta_f[] = {
    ID64(S, rm_id, REQ),
    ID64(S, view_seq, REQ),
    ID64(S, base_seq, REQ),
    TIME(S, timestamp_ms, OPT),
    STRUCTS(S, changed, nchanged, OPT, 0, PROTO_MAX_VIEW_NODES, view_node_s),
    STRS(S, removed, nremoved, OPT, 0, PROTO_MAX_VIEW_REMOVED, PROTO_MAX_NAME),
};
static SCHEMA(view_delta, S, view_delta_f, NULL);
#undef S

#define S proto_job_register_t
static const proto__field_t job_register_f[] = {
    KEY(S, key),
    NAME(S, name, REQ),
    NAME(S, virtual_cluster, REQ),
    DUR(S, deadline_ms),
    U32(S, tasks_total, OPT, 0, UINT32_MAX),
    ENDPOINT(S, jm_endpoint, OPT),
    ANYNAME(S, submitter, OPT),
    TIME(S, submit_ms, OPT),
    DUR(S, work_ms),
    DUR(S, work_sd_ms),
    DUR(S, path_ms),
    DUR(S, path_sd_ms),
    TOKENS(S, width, OPT),
    BOOL(S, has_profile, OPT),
    BOOL(S, has_alpha, OPT),
    U32(S, alpha_milli, OPT, 0, 1000),
    BOOL(S, best_effort, OPT),
    F64(S, weight, OPT, 0, PROTO_MAX_WEIGHT),
    ANYNAME(S, recurring, OPT),
    BIG(S, period),
    STRS(S, inputs, ninputs, OPT, 0, PROTO_MAX_JOB_FILES, PROTO_MAX_ARG),
    STRS(S, outputs, noutputs, OPT, 0, PROTO_MAX_JOB_FILES, PROTO_MAX_ARG),
    STR(S, job_dir, OPT, 0, PROTO_MAX_ARG),
    ANYNAME(S, host, OPT),
    U32(S, jm_pid, OPT, 0, UINT32_MAX),
    ENDPOINT(S, metrics_url, OPT),
    U32(S, spread_milli, OPT, 0, 20000),
};
static SCHEMA(job_register, S, job_register_f, NULL);
#undef S

#define S proto_job_register_reply_t
static const proto__field_t job_register_reply_f[] = {
    KEY(S, key),        ANYNAME(S, job_id, REQ), I32(S, code, OPT, INT32_MIN, 0),   TEXT(S, reason),
    DUR(S, eff_p50_ms), DUR(S, eff_ms),          U32(S, epoch, OPT, 0, UINT32_MAX),
};
static SCHEMA(job_register_reply, S, job_register_reply_f, NULL);
#undef S

#define S proto_job_resume_t
static const proto__field_t job_resume_f[] = {
    KEY(S, key),
    NAME(S, job_id, REQ),
    ENDPOINT(S, jm_endpoint, OPT),
    STR(S, job_dir, OPT, 0, PROTO_MAX_ARG),
    ANYNAME(S, host, OPT),
    U32(S, jm_pid, OPT, 0, UINT32_MAX),
};
static SCHEMA(job_resume, S, job_resume_f, NULL);
#undef S

#define S proto_token_request_t
static const proto__field_t token_request_f[] = {
    KEY(S, key),
    NAME(S, job_id, REQ),
    TOKENS(S, tokens, REQ),
    TOKENS(S, raw, OPT),
};
static SCHEMA(token_request, S, token_request_f, NULL);
#undef S

#define S proto_token_grant_t
static const proto__field_t token_grant_f[] = {
    KEY(S, key),
    NAME(S, job_id, REQ),
    TOKENS(S, granted, REQ),
    TOKENS(S, requested, OPT),
    U32(S, capacity, OPT, 0, UINT32_MAX),
    DUR32(S, lease_ms, OPT),
    ID64(S, ledger_index, OPT),
    TOKENS(S, minimum, OPT),
    CPU(S, token_cpu, OPT, 0),
    MEM(S, token_mem_mb, OPT, 0),
    U32(S, epoch, OPT, 0, UINT32_MAX),
};
static SCHEMA(token_grant, S, token_grant_f, NULL);
#undef S

#define S proto_token_release_t
static const proto__field_t token_release_f[] = {
    KEY(S, key),
    NAME(S, job_id, REQ),
    TOKENS(S, tokens, OPT),
    BOOL(S, all, OPT),
};
static SCHEMA(token_release, S, token_release_f, NULL);
#undef S

#define S proto_file_t
static const proto__field_t file_f[] = {
    STR(S, path, REQ, 1, PROTO_MAX_ARG),
    BIG(S, bytes),
};
static SCHEMA(file, S, file_f, NULL);
#undef S

#define S proto_outcome_t
static const proto__field_t outcome_f[] = {
    NAME(S, node, REQ),
    U32(S, ok, OPT, 0, UINT32_MAX),
    U32(S, failed, OPT, 0, UINT32_MAX),
};
static SCHEMA(outcome, S, outcome_f, NULL);
#undef S

#define S proto_sky_t
static const proto__field_t sky_f[] = {
    U32(S, milli, OPT, 0, PROTO_MAX_TOKENS * 1000u),
};
static SCHEMA(sky, S, sky_f, NULL);
#undef S

#define S proto_lease_renew_t
static const proto__field_t lease_renew_f[] = {
    KEY(S, key),
    NAME(S, job_id, REQ),
    ENDPOINT(S, jm_endpoint, OPT),
    DUR32(S, lease_ms, OPT),
    ENUM(S, state, OPT, PROTO_JOB_STATE_COUNT),
    U32(S, tasks_total, OPT, 0, UINT32_MAX),
    U32(S, tasks_succeeded, OPT, 0, UINT32_MAX),
    U32(S, tasks_failed, OPT, 0, UINT32_MAX),
    COUNT(S, running_regular),
    COUNT(S, running_opportunistic),
    DUR(S, deadline_ms),
    TIME(S, timestamp_ms, OPT),
    DUR(S, eta_ms),
    DUR(S, eta_p95_ms),
    U32(S, demand, OPT, 0, PROTO_MAX_TOKENS + 1),
    STRUCTS(S, outcomes, noutcomes, OPT, 0, PROTO_MAX_OUTCOMES, outcome_s),
    TIME(S, started_ms, OPT),
    BIG(S, token_ms),
    DUR32(S, skyline_step_ms, OPT),
    STRUCTS(S, skyline, nskyline, OPT, 0, PROTO_MAX_SKYLINE, sky_s),
    STR(S, job_dir, OPT, 0, PROTO_MAX_ARG),
    ANYNAME(S, host, OPT),
    U32(S, jm_pid, OPT, 0, UINT32_MAX),
    U32(S, epoch, OPT, 0, UINT32_MAX),
    ENDPOINT(S, metrics_url, OPT),
};
static SCHEMA(lease_renew, S, lease_renew_f, NULL);
#undef S

#define S proto_lease_ack_t
static const proto__field_t lease_ack_f[] = {
    KEY(S, key),
    NAME(S, job_id, REQ),
    DUR32(S, lease_ms, REQ),
    TOKENS(S, granted, OPT),
    BOOL(S, cancel, OPT),
    DUR(S, deadline_ms),
    TOKENS(S, minimum, OPT),
    CPU(S, token_cpu, OPT, 0),
    MEM(S, token_mem_mb, OPT, 0),
    U32(S, epoch, OPT, 0, UINT32_MAX),
    U32(S, spread_milli, OPT, 0, 20000),
    U32(S, own_factor_milli, OPT, 0, 1000000),
};
static SCHEMA(lease_ack, S, lease_ack_f, NULL);
#undef S

static int task_create_check(const void *body, char *err, size_t errcap)
{
    const proto_task_create_t *t = body;
    if (t->argc == 0 || t->argv == NULL || t->argv[0] == NULL || t->argv[0][0] == '\0')
        return err_fmt(err, errcap, ERR_RANGE, "task_create: argv[0] must be non-empty");
    return 0;
}

#define S proto_task_create_t
static const proto__field_t task_create_f[] = {
    NAME(S, job_id, REQ),
    NAME(S, task_id, REQ),
    ATTEMPT(S, attempt),
    ENUM(S, task_class, REQ, PROTO_TASK_CLASS_COUNT),
    F64(S, weight, OPT, 0, PROTO_MAX_WEIGHT),
    ANYNAME(S, stage, OPT),
    STRS(S, argv, argc, REQ, 1, PROTO_MAX_ARGV, PROTO_MAX_ARG),
    KVS(S, env, nenv, PROTO_MAX_ENV, PROTO_MAX_ARG),
    STR(S, cwd, OPT, 0, PROTO_MAX_ARG),
    CPU(S, cpu, REQ, MIN_CPU),
    MEM(S, mem_mb, REQ, 1),
    DUR(S, runtime_ms),
    STRUCTS(S, files, nfiles, OPT, 0, PROTO_MAX_FILES, file_s),
    ENDPOINT(S, reply_endpoint, OPT),
    BOOL(S, urgent, OPT),
    U32(S, epoch, OPT, 0, UINT32_MAX),
    F64(S, priority, OPT, 0, PROTO_MAX_PRIORITY),
    BOOL(S, batch_statuses, OPT),
};
static SCHEMA(task_create, S, task_create_f, task_create_check);
#undef S

#define S proto_task_cancel_t
static const proto__field_t task_cancel_f[] = {
    NAME(S, job_id, REQ),
    NAME(S, task_id, REQ),
    ATTEMPT(S, attempt),
    TEXT(S, reason),
    U32(S, epoch, OPT, 0, UINT32_MAX),
};
static SCHEMA(task_cancel, S, task_cancel_f, NULL);
#undef S

#define S proto_task_upgrade_t
static const proto__field_t task_upgrade_f[] = {
    NAME(S, job_id, REQ), NAME(S, task_id, REQ),
    ATTEMPT(S, attempt),  ENUM(S, task_class, OPT, PROTO_TASK_CLASS_COUNT),
    DUR(S, grace_ms),     U32(S, epoch, OPT, 0, UINT32_MAX),
};
static SCHEMA(task_upgrade, S, task_upgrade_f, NULL);
#undef S

#define S proto_task_estimate_t
static const proto__field_t task_estimate_f[] = {
    NAME(S, job_id, REQ),
    NAME(S, task_id, REQ),
    ATTEMPT(S, attempt),
    U64(S, runtime_ms, REQ, 0, PROTO_MAX_DURATION_MS),
    U32(S, epoch, OPT, 0, UINT32_MAX),
};
static SCHEMA(task_estimate, S, task_estimate_f, NULL);
#undef S

#define S proto_task_query_t
static const proto__field_t task_query_f[] = {
    NAME(S, job_id, REQ),
    U32(S, epoch, OPT, 0, UINT32_MAX),
    ENDPOINT(S, reply_endpoint, OPT),
};
static SCHEMA(task_query, S, task_query_f, NULL);
#undef S

#define S proto_task_query_reply_t
static const proto__field_t task_query_reply_f[] = {
    NAME(S, job_id, REQ),
    NAME(S, node, REQ),
    U32(S, tasks, OPT, 0, UINT32_MAX),
};
static SCHEMA(task_query_reply, S, task_query_reply_f, NULL);
#undef S

#define S proto_task_output_read_t
static const proto__field_t task_output_read_f[] = {
    NAME(S, job_id, REQ),
    NAME(S, task_id, REQ),
    ATTEMPT(S, attempt),
    U32(S, stream, OPT, 0, 1),
    BIG(S, offset),
    BIG(S, tail),
    U32(S, max_bytes, OPT, 0, PROTO_MAX_OUTPUT_CHUNK),
};
static SCHEMA(task_output_read, S, task_output_read_f, NULL);
#undef S

#define S proto_task_output_t
static const proto__field_t task_output_f[] = {
    NAME(S, job_id, REQ),
    NAME(S, task_id, REQ),
    ATTEMPT(S, attempt),
    NAME(S, node, REQ),
    U32(S, stream, OPT, 0, 1),
    ENUM(S, state, REQ, PROTO_TASK_STATE_COUNT),
    BOOL(S, done, OPT),
    BIG(S, offset),
    BIG(S, size),
    BIN(S, data, data_len, PROTO_MAX_OUTPUT_CHUNK),
};
static SCHEMA(task_output, S, task_output_f, NULL);
#undef S

#define S proto_job_info_t
static const proto__field_t job_info_f[] = {
    NAME(S, job_id, REQ),
    U32(S, state, OPT, 0, 5),
    U32(S, epoch, OPT, 0, UINT32_MAX),
};
static SCHEMA(job_info, S, job_info_f, NULL);
#undef S

#define S proto_heartbeat_ack_t
static const proto__field_t heartbeat_ack_f[] = {
    STRUCTS(S, jobs, njobs, OPT, 0, PROTO_MAX_NODE_JOBS, job_info_s),
    ID64(S, rm_id, OPT),
};
static SCHEMA(heartbeat_ack, S, heartbeat_ack_f, NULL);
#undef S

#define S proto_task_status_t
static const proto__field_t task_status_f[] = {
    NAME(S, job_id, REQ),
    NAME(S, task_id, REQ),
    ATTEMPT(S, attempt),
    NAME(S, node, REQ),
    ENUM(S, state, REQ, PROTO_TASK_STATE_COUNT),
    ENUM(S, task_class, OPT, PROTO_TASK_CLASS_COUNT),
    I32(S, exit_code, OPT, -1, 255),
    I32(S, signal, OPT, 0, 127),
    TEXT(S, reason),
    DUR(S, cpu_time_ms),
    BIG(S, peak_rss_kb),
    DUR(S, wall_ms),
    TIME(S, queued_at_ms, OPT),
    TIME(S, started_at_ms, OPT),
    TIME(S, ended_at_ms, OPT),
    U32(S, cache_hits, OPT, 0, UINT32_MAX),
    U32(S, cache_misses, OPT, 0, UINT32_MAX),
    DUR(S, expected_wait_ms),
    MATRIX(S, matrix),
    BIG(S, bytes_read),
};
static SCHEMA(task_status, S, task_status_f, NULL);
#undef S

#define S proto_task_status_batch_t
static const proto__field_t task_status_batch_f[] = {
    STRUCTS(S, statuses, nstatuses, REQ, 1, PROTO_MAX_BATCH, task_status_s),
};
static SCHEMA(task_status_batch, S, task_status_batch_f, NULL);
#undef S

#define S proto_admin_query_t
static const proto__field_t admin_query_f[] = {
    NAME(S, kind, REQ),
    STRS(S, args, nargs, OPT, 0, PROTO_MAX_ADMIN_ARGS, PROTO_MAX_ADMIN_ARG),
    STR(S, data, OPT, 0, PROTO_MAX_ADMIN_DATA),
};
static SCHEMA(admin_query, S, admin_query_f, NULL);
#undef S

#define S proto_admin_reply_t
static const proto__field_t admin_reply_f[] = {
    I32(S, code, OPT, INT32_MIN, 0),
    STR(S, json, OPT, 0, PROTO_MAX_JSON),
};
static SCHEMA(admin_reply, S, admin_reply_f, NULL);
#undef S

#define S proto_error_t
static const proto__field_t error_f[] = {
    I32(S, code, REQ, INT32_MIN, -1),
    STR(S, text, REQ, 0, PROTO_MAX_TEXT),
    U32(S, in_reply_to, OPT, 0, PROTO_TYPE_LIMIT - 1),
    ENDPOINT(S, leader_endpoint, OPT),
    ID64(S, leader_id, OPT),
};
static SCHEMA(error, S, error_f, NULL);
#undef S

/* ---------------------------------------------------------------------------------------- */

const proto__schema_t *proto__schema_of(uint32_t type)
{
    switch (type) {
#define PROTO__SCHEMA_CASE(e, value, name, member, T)                                              \
    case value:                                                                                    \
        return &member##_s;
        PROTO_TYPES(PROTO__SCHEMA_CASE)
#undef PROTO__SCHEMA_CASE
    }
    return NULL;
}

int proto__matrix_check(const proto_matrix_t *m, char *err, size_t errcap)
{
    if (m->ncpu > PROTO_MAX_MATRIX_DIM || m->nmem > PROTO_MAX_MATRIX_DIM)
        return err_fmt(err, errcap, ERR_RANGE, "matrix: %ux%u bins, at most %u per side", m->ncpu,
                       m->nmem, PROTO_MAX_MATRIX_DIM);
    if ((m->ncpu == 0) != (m->nmem == 0))
        return err_fmt(err, errcap, ERR_RANGE, "matrix: %ux%u bins, both or neither empty", m->ncpu,
                       m->nmem);
    if (m->timestamp_ms < 0 || m->timestamp_ms > PROTO_MAX_TIME_MS)
        return err_fmt(err, errcap, ERR_RANGE, "matrix: timestamp out of range");
    for (uint32_t i = 0; i < m->ncpu; i++) {
        double b = m->cpu_bounds[i];
        /* Written so that NaN fails too. */
        if (!(b > 0 && b <= PROTO_MAX_CPU) || (i > 0 && !(b > m->cpu_bounds[i - 1])))
            return err_fmt(err, errcap, ERR_RANGE,
                           "matrix: cpu bound %u must be in (0, %g] and increasing", i,
                           PROTO_MAX_CPU);
    }
    for (uint32_t i = 0; i < m->nmem; i++) {
        uint64_t b = m->mem_bounds_mb[i];
        if (b == 0 || b > PROTO_MAX_MEM_MB || (i > 0 && b <= m->mem_bounds_mb[i - 1]))
            return err_fmt(err, errcap, ERR_RANGE,
                           "matrix: memory bound %u must be in [1, %llu] and increasing", i,
                           (unsigned long long)PROTO_MAX_MEM_MB);
    }
    return 0;
}
