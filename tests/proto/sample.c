#include "sample.h"

#include <stdio.h>
#include <string.h>

#include "common/bloom.h"
#include "common/err.h"
#include "common/mem.h"

static void sample_filter(uint8_t **out, uint32_t *len);

char *sample_str(size_t len, char fill)
{
    char *s = mem_alloc(len + 1);
    if (s == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++)
        s[i] = (char)(fill + (char)(i % 7));
    s[len] = '\0';
    return s;
}

void sample_matrix(proto_matrix_t *mx, uint32_t ncpu, uint32_t nmem, int64_t ts)
{
    memset(mx, 0, sizeof *mx);
    mx->ncpu = ncpu;
    mx->nmem = nmem;
    for (uint32_t r = 0; r < ncpu; r++)
        mx->cpu_bounds[r] = 0.5 * (double)(1u << (r < 12 ? r : 12)) + r;
    for (uint32_t c = 0; c < nmem; c++)
        mx->mem_bounds_mb[c] = 1024ull << (c < 20 ? c : 20) | c;
    for (uint32_t i = 0; i < ncpu * nmem; i++)
        mx->cells_ms[i] = i % 5 == 4 ? PROTO_WAIT_NEVER : i * 137u;
    mx->timestamp_ms = ts;
}

static char **sample_strv(uint32_t n, const char *prefix)
{
    char **v = mem_calloc(n, sizeof *v);
    for (uint32_t i = 0; i < n; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s%u", prefix, i);
        v[i] = mem_strdup(buf);
    }
    return v;
}

void sample_view_node(proto_view_node_t *n, uint32_t i, int typical)
{
    char buf[64];
    snprintf(buf, sizeof buf, "pn-%u", i);
    n->name = mem_strdup(buf);
    snprintf(buf, sizeof buf, "rack-%u", i % 4);
    n->rack = mem_strdup(typical ? buf : "");
    snprintf(buf, sizeof buf, "tcp://10.0.%u.%u:7100", i / 250, i % 250);
    n->endpoint = mem_strdup(buf);
    n->state = i % PROTO_NODE_STATE_COUNT;
    n->boot_id = 0x1234567890abcdefull + i;
    n->seq = 1000 + i;
    if (!typical)
        return;
    n->cpu = 16;
    n->mem_mb = 65536;
    n->used_cpu = 3.25;
    n->used_mem_mb = 12000;
    n->running_regular = 3;
    n->running_opportunistic = 2;
    n->queued_regular = 7;
    n->queued_opportunistic = 11;
    sample_matrix(&n->matrix, 6, 7, 1700000000000 + i);
    n->age_ms = 250;
    n->failures = 2;
    n->successes = 1000 + i;
    if (i == 0)
        sample_filter(&n->cache_filter, &n->cache_filter_len);
}

/* A small Bloom filter's wire form holding "/data/a" and "/data/b" (through mem_*). */
static void sample_filter(uint8_t **out, uint32_t *len)
{
    bloom_t *b = NULL;
    *out = NULL;
    *len = 0;
    if (bloom_new(256, 3, &b) != 0)
        return;
    bloom_add(b, "/data/a", 7);
    bloom_add(b, "/data/b", 7);
    size_t n = bloom_encoded_size(b);
    uint8_t *buf = mem_alloc(n);
    if (buf != NULL && bloom_encode(b, buf, n, &n) == 0) {
        *out = buf;
        *len = (uint32_t)n;
    } else {
        mem_free(buf);
    }
    bloom_destroy(&b);
}

void sample_msg(proto_msg_t *msg, proto_type_t type, enum sample_variant variant)
{
    int t = variant == SAMPLE_TYPICAL;
    proto_msg_init(msg, type);
    msg->req_id = t ? 0xfeedfacecafebeefull : 0;
    const int64_t now = 1700000000123;
    switch (type) {
    case PROTO_NODE_REGISTER: {
        proto_node_register_t *b = &msg->node_register;
        b->key = mem_strdup("pn-3/boot-1");
        b->name = mem_strdup("pn-3");
        b->rack = mem_strdup(t ? "rack-1" : "");
        b->endpoint = mem_strdup("tcp://127.0.0.1:7103");
        b->boot_id = t ? UINT64_MAX : 0;
        b->cpu = t ? 8.5 : 0.001;
        b->mem_mb = t ? 32768 : 1;
        if (t) {
            b->version = mem_strdup("0.1.0");
            b->timestamp_ms = now;
        }
        break;
    }
    case PROTO_NODE_REGISTER_ACK: {
        proto_node_register_ack_t *b = &msg->node_register_ack;
        b->key = mem_strdup("pn-3/boot-1");
        b->name = mem_strdup("pn-3");
        b->boot_id = 42;
        b->verdict = t ? PROTO_VERDICT_REJECTED : PROTO_VERDICT_ACCEPTED;
        if (t) {
            b->code = -10;
            b->reason = mem_strdup("name taken by another boot id");
            b->heartbeat_ms = 1000;
            b->rm_id = 2;
        }
        break;
    }
    case PROTO_HEARTBEAT: {
        proto_heartbeat_t *b = &msg->heartbeat;
        b->name = mem_strdup("pn-3");
        b->rack = mem_strdup("rack-1");
        b->endpoint = mem_strdup("tcp://127.0.0.1:7103");
        b->boot_id = 77;
        b->seq = t ? 123456 : 0;
        b->cpu = t ? 8 : 0;
        b->mem_mb = t ? 32768 : 0;
        b->timestamp_ms = t ? now : 0;
        if (t) {
            b->used_cpu = 2.5;
            b->used_mem_mb = 4096;
            b->running_regular = 2;
            b->running_opportunistic = 1;
            b->queued_regular = 5;
            b->queued_opportunistic = 9;
            b->draining = true;
            sample_matrix(&b->matrix, 8, 8, now);
            sample_filter(&b->cache_filter, &b->cache_filter_len);
        }
        break;
    }
    case PROTO_VIEW_SNAPSHOT: {
        proto_view_snapshot_t *b = &msg->view_snapshot;
        b->rm_id = 1;
        b->view_seq = t ? 99 : 0;
        b->part = t ? 2 : 0;
        b->parts = t ? 3 : 1;
        if (t) {
            b->timestamp_ms = now;
            b->nnodes = 4;
            b->nodes = mem_calloc(b->nnodes, sizeof *b->nodes);
            for (uint32_t i = 0; i < b->nnodes; i++)
                sample_view_node(&b->nodes[i], i, i != 3);
        }
        break;
    }
    case PROTO_VIEW_DELTA: {
        proto_view_delta_t *b = &msg->view_delta;
        b->rm_id = 3;
        b->view_seq = 100;
        b->base_seq = 99;
        if (t) {
            b->timestamp_ms = now;
            b->nchanged = 2;
            b->changed = mem_calloc(b->nchanged, sizeof *b->changed);
            for (uint32_t i = 0; i < b->nchanged; i++)
                sample_view_node(&b->changed[i], i + 10, 1);
            b->nremoved = 3;
            b->removed = sample_strv(b->nremoved, "pn-gone-");
        }
        break;
    }
    case PROTO_JOB_REGISTER: {
        proto_job_register_t *b = &msg->job_register;
        b->key = mem_strdup("submit-7f3a");
        b->name = mem_strdup("clicklog-hourly");
        b->virtual_cluster = mem_strdup("default");
        if (t) {
            b->deadline_ms = 900000;
            b->tasks_total = 4096;
            b->jm_endpoint = mem_strdup("tcp://127.0.0.1:7300");
            b->submitter = mem_strdup("alice");
            b->submit_ms = now;
            b->work_ms = 3600000;
            b->work_sd_ms = 240000;
            b->path_ms = 420000;
            b->path_sd_ms = 30000;
            b->width = 64;
            b->has_profile = true;
            b->best_effort = true;
            b->weight = 2.5;
        }
        break;
    }
    case PROTO_JOB_REGISTER_REPLY: {
        proto_job_register_reply_t *b = &msg->job_register_reply;
        b->key = mem_strdup("submit-7f3a");
        b->job_id = mem_strdup(t ? "j-000042" : "");
        if (t) {
            b->code = ERR_ADMISSION;
            b->reason = mem_strdup("admission: deadline infeasible");
            b->eff_p50_ms = 1080000;
            b->eff_ms = 1260000;
        }
        break;
    }
    case PROTO_TOKEN_REQUEST: {
        proto_token_request_t *b = &msg->token_request;
        b->key = mem_strdup("j-000042/tok/17");
        b->job_id = mem_strdup("j-000042");
        b->tokens = t ? 120 : 0;
        break;
    }
    case PROTO_TOKEN_GRANT: {
        proto_token_grant_t *b = &msg->token_grant;
        b->key = mem_strdup("j-000042/tok/17");
        b->job_id = mem_strdup("j-000042");
        b->granted = t ? 100 : 0;
        if (t) {
            b->requested = 120;
            b->capacity = 400;
            b->lease_ms = 10000;
            b->ledger_index = 88123;
            b->minimum = 60;
            b->token_cpu = 2.0;
            b->token_mem_mb = 8192;
        }
        break;
    }
    case PROTO_TOKEN_RELEASE: {
        proto_token_release_t *b = &msg->token_release;
        b->key = mem_strdup("j-000042/rel/1");
        b->job_id = mem_strdup("j-000042");
        if (t) {
            b->tokens = 20;
            b->all = true;
        }
        break;
    }
    case PROTO_LEASE_RENEW: {
        proto_lease_renew_t *b = &msg->lease_renew;
        b->key = mem_strdup("j-000042/lease/99");
        b->job_id = mem_strdup("j-000042");
        if (t) {
            b->jm_endpoint = mem_strdup("tcp://127.0.0.1:7300");
            b->lease_ms = 10000;
            b->state = PROTO_JOB_RUNNING;
            b->tasks_total = 4096;
            b->tasks_succeeded = 1000;
            b->tasks_failed = 3;
            b->running_regular = 100;
            b->running_opportunistic = 40;
            b->deadline_ms = 900000;
            b->timestamp_ms = now;
            b->eta_ms = 720000;
            b->eta_p95_ms = 840000;
            b->demand = 13;
            b->noutcomes = 2;
            b->outcomes = mem_calloc(b->noutcomes, sizeof *b->outcomes);
            b->outcomes[0].node = mem_strdup("pn-17");
            b->outcomes[0].ok = 40;
            b->outcomes[0].failed = 2;
            b->outcomes[1].node = mem_strdup("pn-3");
            b->outcomes[1].ok = 7;
        }
        break;
    }
    case PROTO_LEASE_ACK: {
        proto_lease_ack_t *b = &msg->lease_ack;
        b->key = mem_strdup("j-000042/lease/99");
        b->job_id = mem_strdup("j-000042");
        b->lease_ms = t ? 10000 : 0;
        if (t) {
            b->granted = 100;
            b->cancel = true;
            b->deadline_ms = 1200000;
            b->minimum = 80;
            b->token_cpu = 0.5;
            b->token_mem_mb = 2048;
            b->spread_milli = 1150;
            b->own_factor_milli = 940;
        }
        break;
    }
    case PROTO_TASK_CREATE: {
        proto_task_create_t *b = &msg->task_create;
        b->job_id = mem_strdup("j-000042");
        b->task_id = mem_strdup("extract-0");
        b->attempt = t ? 2 : 0;
        b->task_class = t ? PROTO_CLASS_OPPORTUNISTIC : PROTO_CLASS_REGULAR;
        b->argc = t ? 4 : 1;
        b->argv = mem_calloc(b->argc, sizeof *b->argv);
        b->argv[0] = mem_strdup("/usr/bin/env");
        if (t) {
            b->argv[1] = mem_strdup("sh");
            b->argv[2] = mem_strdup("-c");
            b->argv[3] = mem_strdup("exec ./extract.sh --part 0 > out.txt");
        }
        b->cpu = t ? 1.5 : 0.001;
        b->mem_mb = t ? 512 : 1;
        if (t) {
            b->weight = 2.0;
            b->stage = mem_strdup("extract");
            b->nenv = 2;
            b->env = mem_calloc(b->nenv, sizeof *b->env);
            b->env[0].key = mem_strdup("K");
            b->env[0].value = mem_strdup("V");
            b->env[1].key = mem_strdup("PADDOCK_TASK");
            b->env[1].value = mem_strdup("");
            b->cwd = mem_strdup("/var/lib/paddock/work/j-000042");
            b->runtime_ms = 12500;
            b->nfiles = 2;
            b->files = mem_calloc(b->nfiles, sizeof *b->files);
            b->files[0].path = mem_strdup("/opt/jobs/extract.sh");
            b->files[0].bytes = 2048;
            b->files[1].path = mem_strdup("/opt/jobs/lib.sh");
            b->reply_endpoint = mem_strdup("tcp://127.0.0.1:7300");
            b->priority = 17.25;
            b->batch_statuses = true;
        }
        break;
    }
    case PROTO_TASK_CANCEL: {
        proto_task_cancel_t *b = &msg->task_cancel;
        b->job_id = mem_strdup("j-000042");
        b->task_id = mem_strdup("extract-0");
        b->attempt = t ? PROTO_MAX_ATTEMPT : 0;
        if (t)
            b->reason = mem_strdup("job cancelled by admin");
        break;
    }
    case PROTO_TASK_UPGRADE: {
        proto_task_upgrade_t *b = &msg->task_upgrade;
        b->job_id = mem_strdup("j-000042");
        b->task_id = mem_strdup("extract-0");
        b->attempt = t ? 1 : 0;
        if (t) { /* a downgrade: the typical sample differs from the default upgrade */
            b->task_class = PROTO_CLASS_OPPORTUNISTIC;
            b->grace_ms = 30000;
        }
        break;
    }
    case PROTO_TASK_STATUS: {
        proto_task_status_t *b = &msg->task_status;
        b->job_id = mem_strdup("j-000042");
        b->task_id = mem_strdup("extract-0");
        b->attempt = 1;
        b->node = mem_strdup("pn-3");
        b->state = t ? PROTO_TASK_FAILED : PROTO_TASK_QUEUED;
        if (t) {
            b->task_class = PROTO_CLASS_OPPORTUNISTIC;
            b->exit_code = -1;
            b->signal = 9;
            b->reason = mem_strdup("killed by signal 9 (preempted for a regular task)");
            b->cpu_time_ms = 5400;
            b->peak_rss_kb = 204800;
            b->wall_ms = 6100;
            b->queued_at_ms = now - 10000;
            b->started_at_ms = now - 6100;
            b->ended_at_ms = now;
            b->cache_hits = 3;
            b->cache_misses = 1;
            b->expected_wait_ms = 4250;
            b->bytes_read = 1ull << 33;
            sample_matrix(&b->matrix, 6, 7, now);
        }
        break;
    }
    case PROTO_ADMIN_QUERY: {
        proto_admin_query_t *b = &msg->admin_query;
        b->kind = mem_strdup(t ? PROTO_ADMIN_JOB_DEADLINE : PROTO_ADMIN_NODES);
        if (t) {
            b->nargs = 2;
            b->args = mem_calloc(2, sizeof *b->args);
            b->args[0] = mem_strdup("j-000042");
            b->args[1] = mem_strdup("1200000");
        }
        break;
    }
    case PROTO_ADMIN_REPLY: {
        proto_admin_reply_t *b = &msg->admin_reply;
        if (t) {
            b->code = -9;
            b->json = mem_strdup("{\"nodes\":[{\"name\":\"pn-3\",\"rack\":\"rack-1\",\"cpus\":8,"
                                 "\"mem_mb\":32768,\"running\":2,\"queued\":5,\"age_ms\":120}]}");
        }
        break;
    }
    case PROTO_ERROR: {
        proto_error_t *b = &msg->error;
        b->code = t ? -13 : INT32_MIN;
        b->text = mem_strdup(t ? "not the leader" : "");
        if (t) {
            b->in_reply_to = PROTO_TOKEN_REQUEST;
            b->leader_endpoint = mem_strdup("tcp://127.0.0.1:7001");
            b->leader_id = 3;
        }
        break;
    }
    case PROTO_JOB_RESUME: {
        proto_job_resume_t *b = &msg->job_resume;
        b->key = mem_strdup("k-resume-1");
        b->job_id = mem_strdup("j-000042");
        if (t) {
            b->jm_endpoint = mem_strdup("tcp://127.0.0.1:7300");
            b->job_dir = mem_strdup("/var/lib/paddock/jobs/j-000042");
            b->host = mem_strdup("host-1");
        }
        break;
    }
    case PROTO_TASK_QUERY: {
        proto_task_query_t *b = &msg->task_query;
        b->job_id = mem_strdup("j-000042");
        if (t) {
            b->epoch = 3;
            b->reply_endpoint = mem_strdup("tcp://127.0.0.1:7300");
        }
        break;
    }
    case PROTO_TASK_QUERY_REPLY: {
        proto_task_query_reply_t *b = &msg->task_query_reply;
        b->job_id = mem_strdup("j-000042");
        b->node = mem_strdup("pn-3");
        b->tasks = t ? 17 : 0;
        break;
    }
    case PROTO_TASK_ESTIMATE: {
        proto_task_estimate_t *b = &msg->task_estimate;
        b->job_id = mem_strdup("j-000042");
        b->task_id = mem_strdup("map-17");
        b->attempt = t ? 2 : 0;
        b->runtime_ms = t ? 12500 : 0;
        b->epoch = t ? 3 : 0;
        break;
    }
    case PROTO_TASK_OUTPUT_READ: {
        proto_task_output_read_t *b = &msg->task_output_read;
        b->job_id = mem_strdup("j-000042");
        b->task_id = mem_strdup("map-17");
        if (t) {
            b->attempt = 2;
            b->stream = 1;
            b->offset = 4096;
            b->tail = 2048;
            b->max_bytes = 65536;
        }
        break;
    }
    case PROTO_TASK_STATUS_BATCH: {
        proto_task_status_batch_t *b = &msg->task_status_batch;
        b->nstatuses = t ? 3 : 1;
        b->statuses = mem_calloc(b->nstatuses, sizeof *b->statuses);
        for (uint32_t i = 0; i < b->nstatuses; i++) {
            proto_msg_t one;
            sample_msg(&one, PROTO_TASK_STATUS, i == 1 ? SAMPLE_TYPICAL : SAMPLE_MINIMAL);
            b->statuses[i] = one.task_status;
            b->statuses[i].attempt = i;
        }
        break;
    }
    case PROTO_TASK_OUTPUT: {
        proto_task_output_t *b = &msg->task_output;
        b->job_id = mem_strdup("j-000042");
        b->task_id = mem_strdup("map-17");
        b->node = mem_strdup("pn-3");
        b->attempt = t ? 2 : 0;
        b->state = t ? PROTO_TASK_FAILED : PROTO_TASK_QUEUED;
        if (t) {
            static const char text[] = "line 1\nreal error: file not found: /data/x\n\0bin";
            b->stream = 1;
            b->done = true;
            b->offset = 100;
            b->size = 100 + sizeof text;
            b->data_len = sizeof text;
            b->data = mem_alloc(sizeof text);
            memcpy(b->data, text, sizeof text);
        }
        break;
    }
    case PROTO_HEARTBEAT_ACK: {
        proto_heartbeat_ack_t *b = &msg->heartbeat_ack;
        if (t) {
            b->rm_id = 2;
            b->njobs = 2;
            b->jobs = mem_calloc(2, sizeof *b->jobs);
            b->jobs[0].job_id = mem_strdup("j-000042");
            b->jobs[0].state = 1;
            b->jobs[0].epoch = 2;
            b->jobs[1].job_id = mem_strdup("j-000043");
            b->jobs[1].state = 5;
        }
        break;
    }
    default:
        break;
    }
}

/* ---------------------------------------------------------------------------------------- */

static int sample_str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static int sample_field_equal(const proto__field_t *f, const unsigned char *a,
                              const unsigned char *b, char *why, size_t cap)
{
    const void *x = a + f->off, *y = b + f->off;
    switch (f->kind) {
    case PROTO__BOOL:
        return *(const bool *)x == *(const bool *)y;
    case PROTO__U32:
        return *(const uint32_t *)x == *(const uint32_t *)y;
    case PROTO__U64:
        return *(const uint64_t *)x == *(const uint64_t *)y;
    case PROTO__I32:
        return *(const int32_t *)x == *(const int32_t *)y;
    case PROTO__I64:
        return *(const int64_t *)x == *(const int64_t *)y;
    case PROTO__F64:
        return *(const double *)x == *(const double *)y;
    case PROTO__STR:
        return sample_str_eq(*(char *const *)x, *(char *const *)y);
    case PROTO__STRS: {
        uint32_t n = *(const uint32_t *)(a + f->count_off);
        if (n != *(const uint32_t *)(b + f->count_off))
            return 0;
        for (uint32_t i = 0; i < n; i++)
            if (!sample_str_eq((*(char **const *)x)[i], (*(char **const *)y)[i]))
                return 0;
        return 1;
    }
    case PROTO__KVS: {
        uint32_t n = *(const uint32_t *)(a + f->count_off);
        if (n != *(const uint32_t *)(b + f->count_off))
            return 0;
        const proto_kv_t *p = *(proto_kv_t *const *)x, *q = *(proto_kv_t *const *)y;
        for (uint32_t i = 0; i < n; i++)
            if (!sample_str_eq(p[i].key, q[i].key) || !sample_str_eq(p[i].value, q[i].value))
                return 0;
        return 1;
    }
    case PROTO__STRUCTS: {
        uint32_t n = *(const uint32_t *)(a + f->count_off);
        if (n != *(const uint32_t *)(b + f->count_off))
            return 0;
        const unsigned char *p = *(unsigned char *const *)x, *q = *(unsigned char *const *)y;
        for (uint32_t i = 0; i < n; i++)
            if (!sample_equal(f->sub, p + i * f->sub->size, q + i * f->sub->size, why, cap))
                return 0;
        return 1;
    }
    case PROTO__BIN: {
        uint32_t n = *(const uint32_t *)(a + f->count_off);
        if (n != *(const uint32_t *)(b + f->count_off))
            return 0;
        return n == 0 || memcmp(*(uint8_t *const *)x, *(uint8_t *const *)y, n) == 0;
    }
    case PROTO__MATRIX: {
        const proto_matrix_t *m = x, *n = y;
        if (m->ncpu != n->ncpu || m->nmem != n->nmem || m->timestamp_ms != n->timestamp_ms)
            return 0;
        for (uint32_t i = 0; i < m->ncpu; i++)
            if (m->cpu_bounds[i] != n->cpu_bounds[i])
                return 0;
        for (uint32_t i = 0; i < m->nmem; i++)
            if (m->mem_bounds_mb[i] != n->mem_bounds_mb[i])
                return 0;
        for (uint32_t i = 0; i < m->ncpu * m->nmem; i++)
            if (m->cells_ms[i] != n->cells_ms[i])
                return 0;
        return 1;
    }
    }
    return 0;
}

int sample_equal(const proto__schema_t *s, const void *a, const void *b, char *why, size_t cap)
{
    for (uint32_t i = 0; i < s->nfields; i++)
        if (!sample_field_equal(&s->fields[i], a, b, why, cap)) {
            if (why != NULL && why[0] == '\0')
                snprintf(why, cap, "%s.%s differs", s->name, s->fields[i].key);
            return 0;
        }
    return 1;
}

int sample_msg_equal(const proto_msg_t *a, const proto_msg_t *b, char *why, size_t cap)
{
    if (why != NULL && cap > 0)
        why[0] = '\0';
    if (a->type != b->type || a->req_id != b->req_id) {
        snprintf(why, cap, "type or req_id differs");
        return 0;
    }
    const proto__schema_t *s = proto__schema_of(a->type);
    return s != NULL && sample_equal(s, (const unsigned char *)a + PROTO__BODY_OFF,
                                     (const unsigned char *)b + PROTO__BODY_OFF, why, cap);
}
