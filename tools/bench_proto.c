/* bench-proto: encode and decode rates of the wire protocol.
 *
 *   bench-proto [--seconds S] [--only heartbeat|task_create|view_snapshot]
 *
 * Prints, for a heartbeat with an 8x8 wait-time matrix, a task-create message and a view
 * snapshot part of 512 nodes: the encoded size, encode-only, decode-only and encode+decode
 * rates in messages per CPU-second of one core (each measured for S seconds of CPU time,
 * default 1, so a busy machine lowers the wall-clock rate but not the figure). A benchmark, not a
 * test: it asserts nothing beyond the round trip succeeding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/proto.h"

static double bench__now(void)
{
    struct timespec ts;
    /* CPU time of this thread: the rate per core, whatever else the machine is running. */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench__matrix(proto_matrix_t *m, uint32_t n, int64_t now)
{
    static const double cpu[] = {0.5, 1, 2, 4, 8, 16, 32, 64};
    memset(m, 0, sizeof *m);
    m->ncpu = m->nmem = n;
    for (uint32_t i = 0; i < n; i++) {
        m->cpu_bounds[i] = cpu[i % 8] * (1 + i / 8);
        m->mem_bounds_mb[i] = 1024ull << i;
    }
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t c = 0; c < n; c++)
            m->cells_ms[r * n + c] = r + c < 3 ? 0 : (r + c) * 1750u + r * 311u;
    m->cells_ms[n * n - 1] = PROTO_WAIT_NEVER;
    m->timestamp_ms = now;
}

static void bench__heartbeat(proto_msg_t *msg, int64_t now)
{
    proto_msg_init(msg, PROTO_HEARTBEAT);
    proto_heartbeat_t *h = &msg->heartbeat;
    h->name = "pn-0042";
    h->rack = "rack-03";
    h->endpoint = "tcp://10.0.3.42:7100";
    h->boot_id = 0x8c1f27d94e5a0b63ull;
    h->seq = 1234567;
    h->cpu = 16;
    h->mem_mb = 65536;
    h->used_cpu = 7.5;
    h->used_mem_mb = 40960;
    h->running_regular = 6;
    h->running_opportunistic = 3;
    h->queued_regular = 12;
    h->queued_opportunistic = 20;
    bench__matrix(&h->matrix, 8, now);
    h->timestamp_ms = now;
}

static char *bench__argv[] = {"/usr/bin/env", "sh", "-c",
                              "exec ./extract.sh --part 17 --out part-17.txt"};
static proto_kv_t bench__env[] = {{"PADDOCK_JOB", "j-000042"}, {"LANG", "C.UTF-8"}};
static proto_file_t bench__files[] = {{"/opt/jobs/extract.sh", 2048},
                                      {"/opt/jobs/lib/common.sh", 8192}};

static void bench__task_create(proto_msg_t *msg)
{
    proto_msg_init(msg, PROTO_TASK_CREATE);
    msg->req_id = 981723;
    proto_task_create_t *t = &msg->task_create;
    t->job_id = "j-000042";
    t->task_id = "extract-17";
    t->attempt = 0;
    t->task_class = PROTO_CLASS_REGULAR;
    t->weight = 1;
    t->stage = "extract";
    t->argv = bench__argv;
    t->argc = 4;
    t->env = bench__env;
    t->nenv = 2;
    t->cwd = "/var/lib/paddock/work/j-000042/extract-17";
    t->cpu = 1;
    t->mem_mb = 512;
    t->runtime_ms = 12500;
    t->files = bench__files;
    t->nfiles = 2;
    t->reply_endpoint = "tcp://10.0.9.1:7300";
}

static char (*bench__names)[3][32]; /* the view's strings, freed at exit */

static proto_view_node_t *bench__view(proto_msg_t *msg, uint32_t n, int64_t now)
{
    proto_msg_init(msg, PROTO_VIEW_SNAPSHOT);
    proto_view_node_t *nodes = calloc(n, sizeof *nodes);
    char(*names)[3][32] = bench__names = calloc(n, sizeof *names);
    if (nodes == NULL || names == NULL)
        exit(1);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(names[i][0], 32, "pn-%05u", i);
        snprintf(names[i][1], 32, "rack-%02u", i / 40);
        snprintf(names[i][2], 32, "tcp://10.0.%u.%u:7100", i / 250, i % 250);
        nodes[i].name = names[i][0];
        nodes[i].rack = names[i][1];
        nodes[i].endpoint = names[i][2];
        nodes[i].state = PROTO_NODE_UP;
        nodes[i].cpu = 16;
        nodes[i].mem_mb = 65536;
        nodes[i].used_cpu = i % 16;
        nodes[i].used_mem_mb = 1024u * (i % 64);
        nodes[i].running_regular = i % 7;
        nodes[i].queued_regular = i % 5;
        bench__matrix(&nodes[i].matrix, 8, now);
        nodes[i].boot_id = 0x8c1f27d94e5a0b63ull + i;
        nodes[i].seq = 1000000 + i;
        nodes[i].age_ms = 100 + i % 900;
        nodes[i].failures = i % 3;
        nodes[i].successes = 5000 + i;
    }
    msg->view_snapshot.rm_id = 1;
    msg->view_snapshot.view_seq = 777;
    msg->view_snapshot.parts = 40;
    msg->view_snapshot.timestamp_ms = now;
    msg->view_snapshot.nodes = nodes;
    msg->view_snapshot.nnodes = n;
    return nodes;
}

typedef struct bench__rates {
    size_t bytes;
    double encode, decode, both; /* messages per second */
} bench__rates_t;

static int bench__run(const proto_msg_t *msg, double seconds, bench__rates_t *out)
{
    proto_buf_t buf;
    proto_buf_init(&buf);
    char err[256];
    if (proto_encode(msg, &buf, err, sizeof err) != 0) {
        fprintf(stderr, "bench-proto: encode: %s\n", err);
        return -1;
    }
    out->bytes = buf.len;
    proto_msg_t d;
    double *rate[3] = {&out->encode, &out->decode, &out->both};
    for (int mode = 0; mode < 3; mode++) {
        uint64_t n = 0;
        double t0 = bench__now(), t;
        do {
            for (int k = 0; k < 64; k++) {
                if (mode != 1 && proto_encode(msg, &buf, err, sizeof err) != 0)
                    return -1;
                if (mode != 0) {
                    if (proto_decode(buf.data, buf.len, &d, NULL, err, sizeof err) != 0) {
                        fprintf(stderr, "bench-proto: decode: %s\n", err);
                        return -1;
                    }
                    proto_msg_close(&d);
                }
            }
            n += 64;
            t = bench__now();
        } while (t - t0 < seconds);
        *rate[mode] = (double)n / (t - t0);
    }
    proto_buf_close(&buf);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = 1;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: bench-proto [--seconds S] [--only NAME]\n");
            return 2;
        }
    }
    if (!(seconds > 0))
        seconds = 1;
    int64_t now = 1700000000000;
    proto_msg_t hb, tc, view;
    bench__heartbeat(&hb, now);
    bench__task_create(&tc);
    proto_view_node_t *nodes = bench__view(&view, PROTO_MAX_VIEW_NODES, now);
    struct {
        const char *key, *name;
        const proto_msg_t *msg;
    } cases[] = {
        {"heartbeat", "heartbeat (8x8 matrix)", &hb},
        {"task_create", "task_create", &tc},
        {"view_snapshot", "view_snapshot (512 nodes)", &view},
    };
    printf("rates in messages per CPU-second (one core)\n");
    printf("%-26s %9s %13s %13s %15s\n", "message", "bytes", "encode/s", "decode/s",
           "encode+decode/s");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bench__rates_t r;
        if (only != NULL && strcmp(only, cases[i].key) != 0)
            continue;
        if (bench__run(cases[i].msg, seconds, &r) != 0)
            return 1;
        printf("%-26s %9zu %13.0f %13.0f %15.0f\n", cases[i].name, r.bytes, r.encode, r.decode,
               r.both);
    }
    free(bench__names);
    free(nodes);
    return 0;
}
