/* proto.c - names, message lifetime, buffers and counters of the wire protocol. */
#include "proto/proto.h"

#include <string.h>

#include "common/mem.h"
#include "proto/schema.h"

#define PROTO__NAME_CASE(e, value, text)                                                           \
    case value:                                                                                    \
        return text;

const char *proto_task_state_name(proto_task_state_t s)
{
    switch ((int)s) {
        PROTO_TASK_STATES(PROTO__NAME_CASE)
    }
    return "?";
}

const char *proto_task_class_name(proto_task_class_t c)
{
    switch ((int)c) {
        PROTO_TASK_CLASSES(PROTO__NAME_CASE)
    }
    return "?";
}

const char *proto_node_state_name(proto_node_state_t s)
{
    switch ((int)s) {
        PROTO_NODE_STATES(PROTO__NAME_CASE)
    }
    return "?";
}

const char *proto_job_state_name(proto_job_state_t s)
{
    switch ((int)s) {
        PROTO_JOB_STATES(PROTO__NAME_CASE)
    }
    return "?";
}

const char *proto_verdict_name(proto_verdict_t v)
{
    switch ((int)v) {
        PROTO_VERDICTS(PROTO__NAME_CASE)
    }
    return "?";
}

bool proto_task_state_terminal(proto_task_state_t s)
{
    return s == PROTO_TASK_SUCCEEDED || s == PROTO_TASK_FAILED || s == PROTO_TASK_PREEMPTED ||
           s == PROTO_TASK_CANCELLED || s == PROTO_TASK_LOST;
}

const char *proto_type_name(proto_type_t type)
{
    switch ((int)type) {
#define PROTO__TYPE_NAME(e, value, name, member, T)                                                \
    case value:                                                                                    \
        return name;
        PROTO_TYPES(PROTO__TYPE_NAME)
#undef PROTO__TYPE_NAME
    }
    return NULL;
}

proto_type_t proto_peek_type(const void *buf, size_t len)
{
    const uint8_t *b = buf;
    /* fixarray of 4, version as a positive fixint, type as a positive fixint or a uint8 */
    if (b == NULL || len < 4 || b[0] != 0x94 || b[1] > 0x7f)
        return PROTO_TYPE_NONE;
    uint32_t t = b[2] <= 0x7f ? b[2] : b[2] == 0xcc ? b[3] : 0;
    return proto_type_valid(t) ? (proto_type_t)t : PROTO_TYPE_NONE;
}

bool proto_type_valid(uint32_t type)
{
    return proto__schema_of(type) != NULL;
}

const char *proto_reject_name(proto_reject_t r)
{
    switch ((int)r) {
#define PROTO__REJ_NAME(e, name)                                                                   \
    case e:                                                                                        \
        return name;
        PROTO_REJECT_REASONS(PROTO__REJ_NAME)
#undef PROTO__REJ_NAME
    }
    return "?";
}

void proto_msg_init(proto_msg_t *msg, proto_type_t type)
{
    memset(msg, 0, sizeof *msg);
    msg->type = type;
    msg->version = PROTO_VERSION;
}

static void proto__free_field(const proto__field_t *f, unsigned char *base)
{
    void *at = base + f->off;
    switch (f->kind) {
    case PROTO__STR: {
        char **s = at;
        mem_free(*s);
        *s = NULL;
        break;
    }
    case PROTO__STRS: {
        char ***v = at;
        uint32_t *n = (uint32_t *)(base + f->count_off);
        if (*v != NULL)
            for (uint32_t i = 0; i < *n; i++)
                mem_free((*v)[i]);
        mem_free(*v);
        *v = NULL;
        *n = 0;
        break;
    }
    case PROTO__KVS: {
        proto_kv_t **v = at;
        uint32_t *n = (uint32_t *)(base + f->count_off);
        if (*v != NULL)
            for (uint32_t i = 0; i < *n; i++) {
                mem_free((*v)[i].key);
                mem_free((*v)[i].value);
            }
        mem_free(*v);
        *v = NULL;
        *n = 0;
        break;
    }
    case PROTO__STRUCTS: {
        unsigned char **v = at;
        uint32_t *n = (uint32_t *)(base + f->count_off);
        if (*v != NULL)
            for (uint32_t i = 0; i < *n; i++)
                proto__body_free(f->sub, *v + (size_t)i * f->sub->size);
        mem_free(*v);
        *v = NULL;
        *n = 0;
        break;
    }
    case PROTO__BIN: {
        uint8_t **v = at;
        mem_free(*v);
        *v = NULL;
        *(uint32_t *)(base + f->count_off) = 0;
        break;
    }
    default:
        break;
    }
}

void proto__body_free(const proto__schema_t *s, void *body)
{
    for (uint32_t i = 0; i < s->nfields; i++)
        proto__free_field(&s->fields[i], body);
    memset(body, 0, s->size);
}

void proto_msg_close(proto_msg_t *msg)
{
    if (msg == NULL)
        return;
    const proto__schema_t *s = proto__schema_of(msg->type);
    if (s != NULL)
        proto__body_free(s, (unsigned char *)msg + PROTO__BODY_OFF);
    proto_type_t type = msg->type;
    memset(msg, 0, sizeof *msg);
    msg->type = type;
}

void proto_msg_error(proto_msg_t *msg, const proto_msg_t *request, int code, const char *text,
                     const char *leader_endpoint)
{
    proto_msg_init(msg, PROTO_ERROR);
    if (request != NULL) {
        msg->req_id = request->req_id;
        msg->error.in_reply_to = proto_type_valid(request->type) ? (uint32_t)request->type : 0;
    }
    msg->error.code = code;
    /* The struct holds char * for decoded messages; this one is only read by the encoder. */
    msg->error.text = (char *)text;
    msg->error.leader_endpoint = (char *)leader_endpoint;
}

void proto_buf_init(proto_buf_t *buf)
{
    memset(buf, 0, sizeof *buf);
}

void proto_buf_close(proto_buf_t *buf)
{
    mem_free(buf->data);
    memset(buf, 0, sizeof *buf);
}

void proto_stats_init(proto_stats_t *stats)
{
    memset(stats, 0, sizeof *stats);
}
