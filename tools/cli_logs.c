/* cli_logs.c - `paddock logs JOB TASK [--attempt N] [--stderr] [--follow] [--node NAME]`: a task
 * attempt's output, streamed from the PN that ran it (issue 25; docs/pn.md "Task output").
 *
 * Which node: --node NAME; else the job's report.json (its directory under --jobs-dir, the local
 * cluster's jobs/, or ~/.paddock/jobs) when it names the attempt asked for; else every node the
 * RM lists is asked (TASK_OUTPUT_READ for one byte) and the one that holds the attempt (the
 * newest one, without --attempt) answers. The node's endpoint comes from the RM. Every socket
 * uses the cluster's CURVE keys, as every client request does.
 *
 * The output goes to stdout as the task wrote it, in parts of at most PROTO_MAX_OUTPUT_CHUNK;
 * --follow keeps reading while the attempt runs (every 250 ms) and returns once it ended and
 * everything it wrote was printed. The PN keeps a task's output as long as its directory: while
 * it runs and for [tasks] retain after (docs/pn.md).
 *
 * Exit codes: 0 printed, 1 not found or a node or the RM did not answer, 2 usage. */
#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "common/mem.h"
#include "proto/proto.h"
#include "rm/rmclient.h"
#include "tools/cli.h"
#include "tools/cli_rm.h"
#include "tools/jobdir.h"

#include <czmq.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOGS_RM_TIMEOUT_MS 5000
#define LOGS_PN_TIMEOUT_MS 5000
#define LOGS_FOLLOW_MS     250
#define LOGS_MAX_NODES     256 /* nodes asked at once when no record names the node */

static int logs__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock logs JOB TASK [--attempt N] [--stderr] [--follow] [--node NAME]\n"
            "                    [--cluster DIR | --rm ENDPOINTS --keys DIR] [--jobs-dir DIR]\n"
            "  Prints a task attempt's output (stdout, or stderr with --stderr) from the PN that\n"
            "  ran it, while it runs and for as long as the PN keeps the task's directory.\n"
            "  --attempt N  the attempt (1, 2, ...; default: the newest)\n"
            "  --follow     keep printing while the attempt runs; return once it ended\n"
            "  --node NAME  the node that ran it (default: the job's report, else every node "
            "is asked)\n");
    return 2;
}

struct logs_opts {
    struct jobdir_opts d;
    const char *job, *task, *node;
    uint32_t attempt;
    uint32_t stream;
    bool follow;
};

static int logs__parse(int argc, char **argv, struct logs_opts *o)
{
    memset(o, 0, sizeof *o);
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (jobdir_opts_take(&o->d, argc, argv, &i))
            continue;
        if (strcmp(a, "--node") == 0 && has)
            o->node = argv[++i];
        else if (strcmp(a, "--attempt") == 0 && has) {
            char *end;
            errno = 0;
            long v = strtol(argv[++i], &end, 10);
            if (errno != 0 || *end != '\0' || v < 1 || v > PROTO_MAX_ATTEMPT) {
                fprintf(stderr, "paddock logs: --attempt '%s': a number from 1 to %u\n", argv[i],
                        PROTO_MAX_ATTEMPT);
                return 2;
            }
            o->attempt = (uint32_t)v;
        } else if (strcmp(a, "--stderr") == 0)
            o->stream = 1;
        else if (strcmp(a, "--follow") == 0 || strcmp(a, "-f") == 0)
            o->follow = true;
        else if (a[0] != '-' && npos < 2)
            *(npos++ == 0 ? &o->job : &o->task) = a;
        else {
            fprintf(stderr, "paddock logs: unexpected '%s'\n", a);
            return logs__usage();
        }
    }
    if (npos != 2) {
        fprintf(stderr, "paddock logs: %s\n", npos == 0 ? "missing JOB and TASK" : "missing TASK");
        return logs__usage();
    }
    if (strlen(o->job) > PROTO_MAX_NAME || strlen(o->task) > PROTO_MAX_NAME) {
        fprintf(stderr, "paddock logs: a job or task id is at most %u bytes\n", PROTO_MAX_NAME);
        return 2;
    }
    jobdir_opts_defaults(&o->d);
    return 0;
}

/* ---- the cluster: keys and node endpoints ---- */

struct logs_node {
    char name[PROTO_MAX_NAME + 1];
    char endpoint[PROTO_MAX_ENDPOINT + 1];
    zsock_t *sock;
};

/* The keys a client uses: --keys, else the local cluster's; NULL dir: no CURVE. */
static int logs__curve(const struct logs_opts *o, curve_t **curve, char *msg, size_t cap)
{
    *curve = NULL;
    const char *dir = o->d.keys, *name = NULL;
    struct rmclient_cluster cl = {0};
    bool have_cl = false;
    if (dir == NULL && o->d.cluster != NULL) {
        int rc = rmclient_cluster_load(o->d.cluster, &cl, msg, cap);
        if (rc != 0)
            return rc;
        have_cl = true;
        dir = cl.keys_dir;
        name = cl.key_name;
    }
    int rc = 0;
    if (dir != NULL && dir[0] != '\0')
        rc = curve_load(curve, dir, name != NULL ? name : CURVE_DEFAULT_NAME, NULL, msg, cap);
    if (have_cl)
        rmclient_cluster_close(&cl);
    return rc;
}

/* The RM's "nodes" document (caller owns), or NULL after printing why. */
static json_t *logs__nodes(const struct logs_opts *o)
{
    char msg[512];
    rmclient_t *c = NULL;
    if (rmclient_open(&c, o->d.cluster, o->d.rm, o->d.keys, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock logs: %s\n", msg);
        return NULL;
    }
    json_t *doc = NULL;
    int rc = cli_rm_list(c, -1, "nodes", "name", LOGS_RM_TIMEOUT_MS, &doc, msg, sizeof msg);
    rmclient_destroy(&c);
    if (rc != 0) {
        fprintf(stderr, "paddock logs: the RM: %s\n", msg);
        return NULL;
    }
    return doc;
}

/* The node the job's report.json names for the attempt (the newest recorded when attempt is 0),
 * into name; false when there is no report or no such attempt in it. */
static bool logs__from_report(const struct logs_opts *o, char *name, size_t cap, uint32_t *attempt)
{
    char root[JOBDIR_PATH], dir[JOBDIR_PATH + 300], msg[256];
    if (jobdir_root(&o->d, false, root, sizeof root, msg, sizeof msg) != 0)
        return false;
    snprintf(dir, sizeof dir, "%s/%s", root, o->job);
    json_t *rep = jobdir_load(dir, "report.json");
    json_t *state = jobdir_load(dir, "state.json");
    bool running = !jobdir_state_final(json_string_value(json_object_get(state, "state")));
    json_decref(state);
    bool found = false;
    uint32_t best = 0;
    char pick[PROTO_MAX_NAME + 1] = "";
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(rep, "attempts"), i, a)
    {
        const char *t = json_string_value(json_object_get(a, "task"));
        const char *node = json_string_value(json_object_get(a, "node"));
        json_int_t n = json_integer_value(json_object_get(a, "attempt"));
        if (t == NULL || node == NULL || strcmp(t, o->task) != 0 || n < 1 ||
            (o->attempt != 0 && (uint32_t)n != o->attempt) || (uint32_t)n < best)
            continue;
        best = (uint32_t)n;
        snprintf(pick, sizeof pick, "%s", node);
        found = true;
    }
    json_decref(rep);
    /* without --attempt, a running job may have a newer attempt than the report's: ask around */
    if (found && o->attempt == 0 && running)
        found = false;
    if (found) {
        snprintf(name, cap, "%s", pick);
        *attempt = best;
    }
    return found;
}

/* ---- talking to PNs ---- */

static uint64_t logs__req;

static int logs__connect(struct logs_node *n, const curve_t *curve, char *msg, size_t cap)
{
    n->sock = zsock_new(ZMQ_DEALER);
    if (n->sock == NULL)
        return err_fmt(msg, cap, ERR_SYS, "cannot create a socket");
    zsock_set_linger(n->sock, 0);
    zsock_set_maxmsgsize(n->sock, PROTO_MAX_MSG_BYTES);
    int rc = curve_apply(n->sock, curve, CURVE_CLIENT, NULL, msg, cap);
    if (rc == 0 && zsock_connect(n->sock, "%s", n->endpoint) != 0)
        rc = err_fmt(msg, cap, ERR_INVAL, "cannot connect to %s", n->endpoint);
    return rc;
}

static int logs__send(struct logs_node *n, const struct logs_opts *o, uint32_t attempt,
                      uint64_t offset, uint32_t max, uint64_t *req_id)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_OUTPUT_READ);
    m.req_id = *req_id = ++logs__req;
    m.task_output_read.job_id = (char *)o->job;
    m.task_output_read.task_id = (char *)o->task;
    m.task_output_read.attempt = attempt;
    m.task_output_read.stream = o->stream;
    m.task_output_read.offset = offset;
    m.task_output_read.max_bytes = max;
    proto_buf_t b;
    proto_buf_init(&b);
    int rc = proto_encode(&m, &b, NULL, 0);
    if (rc == 0) {
        zframe_t *f = zframe_new(b.data, b.len);
        rc = f != NULL && zframe_send(&f, n->sock, 0) == 0 ? 0 : ERR_SYS;
        zframe_destroy(&f);
    }
    proto_buf_close(&b);
    return rc;
}

/* One reply on n's socket to req_id within the time left until `end_ms` (monotonic): 0 with *m
 * (caller closes), ERR_TIMEOUT. Replies to older requests are dropped. */
static int logs__recv(struct logs_node *n, uint64_t req_id, uint64_t end_ms, proto_msg_t *m)
{
    zpoller_t *p = zpoller_new(n->sock, NULL);
    int rc = ERR_TIMEOUT;
    while (p != NULL && clock_mono_ms() < end_ms) {
        if (zpoller_wait(p, (int)(end_ms - clock_mono_ms())) == NULL)
            break;
        zframe_t *f = zframe_recv(n->sock);
        if (f == NULL)
            continue;
        int d = proto_decode(zframe_data(f), zframe_size(f), m, NULL, NULL, 0);
        zframe_destroy(&f);
        if (d != 0)
            continue;
        if (m->req_id == req_id) {
            rc = 0;
            break;
        }
        proto_msg_close(m);
    }
    zpoller_destroy(&p);
    return rc;
}

/* Asks every node at once which holds the attempt: the index of the one that does (the newest
 * attempt without --attempt), or -1 after printing why. */
static int logs__find(struct logs_node *nodes, size_t n, const struct logs_opts *o)
{
    uint64_t *req = mem_calloc(n ? n : 1, sizeof *req);
    bool *waiting = mem_calloc(n ? n : 1, sizeof *waiting);
    if (req == NULL || waiting == NULL) {
        fprintf(stderr, "paddock logs: out of memory\n");
        mem_free(req);
        mem_free(waiting);
        return -1;
    }
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        if (nodes[i].sock != NULL && logs__send(&nodes[i], o, o->attempt, 0, 1, &req[i]) == 0) {
            waiting[i] = true;
            left++;
        }
    int best = -1;
    uint32_t best_attempt = 0;
    char denied[PROTO_MAX_TEXT + 1] = "";
    uint64_t end = clock_mono_ms() + LOGS_PN_TIMEOUT_MS;
    zpoller_t *p = zpoller_new(NULL);
    for (size_t i = 0; p != NULL && i < n; i++)
        if (waiting[i])
            zpoller_add(p, nodes[i].sock);
    while (p != NULL && left > 0 && clock_mono_ms() < end) {
        zsock_t *s = zpoller_wait(p, (int)(end - clock_mono_ms()));
        if (s == NULL)
            break;
        for (size_t i = 0; i < n; i++) {
            if (nodes[i].sock != s || !waiting[i])
                continue;
            proto_msg_t m;
            if (logs__recv(&nodes[i], req[i], clock_mono_ms() + 1, &m) != 0)
                break;
            waiting[i] = false;
            left--;
            if (m.type == PROTO_ERROR && m.error.code == ERR_DENIED && m.error.text != NULL)
                snprintf(denied, sizeof denied, "%s", m.error.text);
            if (m.type == PROTO_TASK_OUTPUT && (best < 0 || m.task_output.attempt > best_attempt)) {
                best = (int)i;
                best_attempt = m.task_output.attempt;
            }
            proto_msg_close(&m);
            break;
        }
    }
    zpoller_destroy(&p);
    if (best < 0 && denied[0] != '\0') {
        fprintf(stderr, "paddock logs: %s\n", denied);
    } else if (best < 0) {
        if (o->attempt)
            fprintf(stderr, "paddock logs: no node has attempt %u of task \"%s\" of job %s",
                    o->attempt, o->task, o->job);
        else
            fprintf(stderr, "paddock logs: no node has task \"%s\" of job %s", o->task, o->job);
        fprintf(stderr, "%s\n",
                left > 0 ? " (some nodes did not answer)"
                         : " (never placed, or its directory is gone: a PN keeps it for [tasks] "
                           "retain)");
    }
    mem_free(req);
    mem_free(waiting);
    return best;
}

/* Prints the attempt's output from node n, following it with --follow. */
static int logs__stream(struct logs_node *n, const struct logs_opts *o)
{
    uint64_t offset = 0;
    uint32_t attempt = o->attempt;
    for (;;) {
        uint64_t req;
        proto_msg_t m;
        if (logs__send(n, o, attempt, offset, 0, &req) != 0 ||
            logs__recv(n, req, clock_mono_ms() + LOGS_PN_TIMEOUT_MS, &m) != 0) {
            fprintf(stderr, "paddock logs: %s (%s) did not answer\n", n->name, n->endpoint);
            return 1;
        }
        if (m.type == PROTO_ERROR) {
            /* a PN names itself in its refusals: said once */
            const char *t = m.error.text != NULL ? m.error.text : "refused";
            size_t nl = strlen(n->name);
            bool named = strncmp(t, n->name, nl) == 0 && t[nl] == ':';
            fprintf(stderr, "paddock logs: %s%s%s%s\n", named ? "" : n->name, named ? "" : ": ", t,
                    m.error.code == ERR_NOTFOUND
                        ? " (a PN keeps a finished task's output for [tasks] retain, 10 minutes "
                          "by default)"
                        : "");
            proto_msg_close(&m);
            return 1;
        }
        if (m.type != PROTO_TASK_OUTPUT) {
            proto_msg_close(&m);
            fprintf(stderr, "paddock logs: %s: unexpected reply\n", n->name);
            return 1;
        }
        const proto_task_output_t *t = &m.task_output;
        attempt = t->attempt; /* the newest, as the first answer named it: stay with it */
        if (t->data_len > 0 && fwrite(t->data, 1, t->data_len, stdout) != t->data_len) {
            proto_msg_close(&m);
            return 1;
        }
        offset = t->offset + t->data_len;
        bool more = offset < t->size, done = t->done;
        proto_msg_close(&m);
        if (more)
            continue;
        if (done || !o->follow)
            break;
        fflush(stdout);
        usleep(LOGS_FOLLOW_MS * 1000);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int logs_main(int argc, char **argv)
{
    struct logs_opts o;
    int rc = logs__parse(argc, argv, &o);
    if (rc != 0)
        return rc;
    char msg[512];
    curve_t *curve = NULL;
    if (logs__curve(&o, &curve, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock logs: keys: %s\n", msg);
        return 1;
    }
    zsys_handler_set(NULL);
    json_t *doc = logs__nodes(&o);
    if (doc == NULL) {
        curve_destroy(&curve);
        return 1;
    }
    char want[PROTO_MAX_NAME + 1] = "";
    uint32_t rec_attempt = 0;
    if (o.node != NULL)
        snprintf(want, sizeof want, "%s", o.node);
    else if (logs__from_report(&o, want, sizeof want, &rec_attempt) && o.attempt == 0)
        o.attempt = rec_attempt;
    json_t *list = json_object_get(doc, "nodes");
    size_t total = json_array_size(list), n = 0;
    struct logs_node *nodes = mem_calloc(total ? total : 1, sizeof *nodes);
    for (size_t i = 0; nodes != NULL && i < total && n < LOGS_MAX_NODES; i++) {
        json_t *e = json_array_get(list, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *ep = json_string_value(json_object_get(e, "address"));
        const char *state = json_string_value(json_object_get(e, "state"));
        if (name == NULL || ep == NULL || (want[0] != '\0' && strcmp(name, want) != 0))
            continue;
        if (want[0] == '\0' && state != NULL && strcmp(state, "down") == 0)
            continue; /* asking around: a node the RM has lost would only cost the timeout */
        snprintf(nodes[n].name, sizeof nodes[n].name, "%s", name);
        snprintf(nodes[n].endpoint, sizeof nodes[n].endpoint, "%s", ep);
        if (logs__connect(&nodes[n], curve, msg, sizeof msg) != 0) {
            fprintf(stderr, "paddock logs: %s: %s\n", name, msg);
            zsock_destroy(&nodes[n].sock);
        }
        n++;
    }
    json_decref(doc);
    curve_destroy(&curve);
    rc = 1;
    if (nodes == NULL) {
        fprintf(stderr, "paddock logs: out of memory\n");
    } else if (n == 0) {
        if (want[0] != '\0')
            fprintf(stderr, "paddock logs: the RM knows no node %s\n", want);
        else
            fprintf(stderr, "paddock logs: the RM knows no node\n");
    } else {
        int at = n == 1 && nodes[0].sock != NULL ? 0 : logs__find(nodes, n, &o);
        if (at >= 0)
            rc = logs__stream(&nodes[at], &o);
    }
    for (size_t i = 0; nodes != NULL && i < n; i++)
        zsock_destroy(&nodes[i].sock);
    mem_free(nodes);
    return rc;
}

CLI_COMMAND("logs", "a task attempt's output (stdout or stderr) from the PN that ran it", logs_main,
            logs__usage)
