/* output_serve.c - TASK_OUTPUT_READ answered from the node's task directories (output.h). */
#include "pn/output.h"

#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "pn/node.h"

static int output__error(const proto_msg_t *req, int code, const char *text, proto_buf_t *buf)
{
    proto_msg_t e;
    proto_msg_error(&e, req, code, text, NULL);
    return proto_encode(&e, buf, NULL, 0);
}

int output_answer(struct node *n, const char *node_name, const proto_msg_t *req, proto_buf_t *buf)
{
    const proto_task_output_read_t *r = &req->task_output_read;
    const char *dir = NULL;
    proto_task_state_t state = PROTO_TASK_LOST;
    uint32_t attempt = 0;
    char path[4200], msg[256];
    bool done;
    int found = node_task_dir(n, r->job_id, r->task_id, r->attempt, &dir, &state, &attempt);
    if (found == ERR_DENIED) {
        snprintf(msg, sizeof msg, "%s: permission denied: task \"%s\" of job %s is another user's",
                 node_name, r->task_id, r->job_id);
        return output__error(req, ERR_DENIED, msg, buf);
    }
    if (found == 0) {
        done = proto_task_state_terminal(state);
    } else if (node_caller_admin(n) &&
               output_find_dir(node_tasks_dir(n), r->job_id, r->task_id, r->attempt, path,
                               sizeof path, &attempt) == 0) {
        /* forgotten, its directory kept: it ended, in a state no longer known (reported as lost);
           whose it was is no longer known either, so only an admin reads it */
        dir = path;
        done = true;
    } else {
        if (r->attempt)
            snprintf(msg, sizeof msg, "%s: no attempt %u of task \"%s\" of job %s here", node_name,
                     r->attempt, r->task_id, r->job_id);
        else
            snprintf(msg, sizeof msg, "%s: no attempt of task \"%s\" of job %s here", node_name,
                     r->task_id, r->job_id);
        return output__error(req, ERR_NOTFOUND, msg, buf);
    }
    uint8_t *data = NULL;
    uint32_t len = 0;
    uint64_t start = 0, size = 0;
    int rc = output_read(dir, r->stream, r->offset, r->tail, r->max_bytes, &data, &len, &start,
                         &size, msg, sizeof msg);
    if (rc != 0)
        return output__error(req, rc, msg, buf);
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_OUTPUT);
    m.req_id = req->req_id;
    proto_task_output_t *o = &m.task_output;
    o->job_id = r->job_id;
    o->task_id = r->task_id;
    o->attempt = attempt;
    o->node = (char *)node_name;
    o->stream = r->stream;
    o->state = state;
    o->done = done;
    o->offset = start;
    o->size = size;
    o->data = data;
    o->data_len = len;
    rc = proto_encode(&m, buf, msg, sizeof msg);
    mem_free(data);
    return rc;
}
