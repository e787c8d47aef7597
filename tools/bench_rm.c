/* bench_rm - figures for the resource monitor (docs/architecture.md, "Targets").
 *
 *   bench_rm [--nodes N] [--seconds S] [--requests R] [--subscribers K] [--procs P] [--plain]
 *            [--delta-nodes D] [--snapshot-ms MS] [--moving F] [--legacy] [--every-snapshot]
 *            [--full-deltas] [--storm-ms MS] [--cluster DIR] [--failovers F] [--only
 * view|ingest|grant|failover[,...]] [--json]
 *
 * 1. view: the pure view with N nodes (6x7 wait-time matrices, values varied per node and per
 *    heartbeat): the cost of building and encoding one full snapshot (packed, proto/pack.h,
 *    unless --plain) and a JM's cost of decoding and merging it; then K subscribers spread
 *    over P receiving processes (forked; default 4) subscribe to an XPUB on 127.0.0.1 with the
 *    RM's high-water mark, get a snapshot once all have joined, then S seconds of the RM's
 *    schedule (every 250 ms the quarter of the nodes heartbeat, or D nodes, and a delta names
 *    those whose waits moved, a share F of them, default all; a snapshot every 2 s, or MS,
 *    while anyone subscribes to snapshots). Receivers follow the view as a JM does (snapshot
 *    topic until whole, deltas after, a snapshot asked again after a missed delta), or, with
 *    --legacy, take everything as JMs did before the view topics. The publisher applies their
 *    subscriptions as the RM does (rm/rmview_xpub.h: each joiner the snapshot numbered for it;
 *    --every-snapshot: every snapshot to every joiner, the rule before). Per subscriber: time from
 *    subscribing to a whole view, and after that, messages lost, the latest arrival after
 *    publication and the bytes received (target: 1,000 subscribers of a 20,000-node view whole
 *    within 10 s, then fresh within 1 s).
 * 2. ingest: one paddock-rm replica (`paddock cluster up --rm 1`, CURVE on) with N simulated
 *    PNs registered; heartbeats from several DEALER sockets for S seconds; the rate the replica
 *    counted, and its RSS holding the N-node view (targets: 50,000 heartbeats/s on one core,
 *    under 200 MiB). --cluster DIR: into that running local cluster instead, left running (a JM
 *    submitted there meanwhile holds the N-node view: its RSS).
 * 3. grant: three replicas; R sequential token requests from one client, each committed
 *    through Raft before the grant comes back: p50 and p99 latency.
 * 4. failover: three replicas; F times, SIGKILL the leader and time until a survivor leads and
 *    has committed a write (a token request answered), then start the killed one again and wait
 *    until all three have caught up: min, p50 and max.
 * Daemons are started in a temporary directory and stopped with `paddock cluster down`.
 */
#include "common/clock.h"
#include "common/curve.h"
#include "common/mem.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "rm/rmclient.h"
#include "rm/rmview_xpub.h"
#include "tools/bench_rm.h"

#include <czmq.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char g_bin[PATH_MAX];
json_t *g_out;
bool g_plain;             /* --plain: views in the version-1 encoding, not packed (proto/pack.h) */
int g_delta_nodes = -1;   /* --delta-nodes: nodes changed per 250 ms (default: a quarter) */
int g_snapshot_ms = 2000; /* --snapshot-ms: the RM's view.snapshot_interval */
/* --moving F: the share of heartbeats whose waits move (by up to 5 s); the others repeat the
 * node's waits with a jitter under rmview's tolerance (load changes with every heartbeat) */
double g_moving = 1.0;
/* --legacy: receivers subscribe to everything (""), as JMs did before the view topics: every
 * periodic snapshot reaches every one of them */
bool g_legacy;
bool g_every_snap;
bool g_full_deltas;
int g_storm_ms = RMVIEW_XPUB_JOIN_STORM_MS; /* --storm-ms: the longest join window */
/* --cluster DIR: ingest heartbeats into this running local cluster (`paddock cluster up`), left
 * running, instead of a cluster of its own: a JM submitted there meanwhile takes the whole view */
static const char *g_cluster;
static uint16_t g_level[100000]; /* each node's wait level while it does not move */
static bool g_level_set[100000];

int bench_encode(const proto_msg_t *m, proto_buf_t *buf)
{
    return g_plain ? proto_encode(m, buf, NULL, 0) : proto_encode_packed(m, buf, NULL, 0);
}

/* Runs `paddock cluster VERB --dir DIR EXTRA` quietly. */
static int bench_run(const char *verb, const char *dir, const char *extra)
{
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s/paddock cluster %s --dir %s %s >/dev/null", g_bin, verb, dir,
             extra);
    return system(cmd);
}

static int bench_rm_tree(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A PN's heartbeat with values as varied as a busy cluster's (each node its own address,
 * boot id, load and wait times, changing with every seq), so that what compresses in the
 * packed view is what would compress in a real one. */
static uint64_t bench_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

void bench_fill_hb(proto_heartbeat_t *hb, const char *name, uint64_t boot, uint64_t seq)
{
    static char rack[32], ep[64];
    int idx = atoi(name + 3);
    uint64_t h = bench_mix((uint64_t)idx * 1000003u + seq);
    snprintf(rack, sizeof rack, "rack-%03d", idx / 40);
    snprintf(ep, sizeof ep, "tcp://10.%d.%d.%d:7100", idx / 65536, idx / 256 % 256, idx % 256);
    memset(hb, 0, sizeof *hb);
    hb->name = (char *)name;
    hb->rack = rack;
    hb->endpoint = ep;
    hb->boot_id = boot + bench_mix((uint64_t)idx);
    hb->seq = seq;
    hb->cpu = 16;
    hb->mem_mb = 65536;
    hb->used_cpu = (double)(h % 1600) / 100.0;
    hb->used_mem_mb = h % 65536;
    hb->running_regular = (uint32_t)(h >> 16) % 16;
    hb->running_opportunistic = (uint32_t)(h >> 20) % 4;
    hb->queued_regular = (uint32_t)(h >> 24) % 7;
    proto_matrix_t *m = &hb->matrix;
    m->ncpu = 6;
    m->nmem = 7;
    for (uint32_t r = 0; r < 6; r++)
        m->cpu_bounds[r] = 0.5 * (1u << r);
    for (uint32_t c = 0; c < 7; c++)
        m->mem_bounds_mb[c] = 1024ull << c;
    /* waits grow with the request; each node its own, moving with a share of the heartbeats */
    if (!g_level_set[idx] || (double)(bench_mix(h ^ 0x5bd1e995u) % 10000) < g_moving * 10000.0) {
        g_level[idx] = (uint16_t)(bench_mix(h ^ 0x9e3779b9u) % 5000);
        g_level_set[idx] = true;
    }
    uint32_t base = g_level[idx];
    for (uint32_t i = 0; i < 42; i++)
        m->cells_ms[i] = base + (i / 7 + i % 7) * 200 + (uint32_t)(bench_mix(h + i) % 150);
    m->timestamp_ms = clock_wall_ms();
}

/* ---- 2. heartbeat ingest ---- */

static json_t *bench_status(rmclient_t *c, int replica)
{
    char *text = NULL, msg[256];
    if (rmclient_admin(c, replica, "rm_status", NULL, 0, 2000, &text, msg, sizeof msg) != 0)
        return NULL;
    json_t *st = json_loads(text, 0, NULL);
    mem_free(text);
    return st;
}

struct bench_hb {
    const char *endpoint;
    const char *keys;
    int first, count; /* nodes [first, first + count) */
    double seconds;
    uint64_t sent;
};

static zsock_t *bench_dealer(const char *endpoint, const char *keys)
{
    zsock_t *z = zsock_new(ZMQ_DEALER);
    zsock_set_sndhwm(z, 10000);
    curve_t *cv = NULL;
    char msg[256];
    if (curve_load(&cv, keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg) == 0)
        curve_apply(z, cv, CURVE_CLIENT, NULL, msg, sizeof msg);
    curve_destroy(&cv);
    zsock_connect(z, "%s", endpoint);
    return z;
}

static void *bench_hb_main(void *arg)
{
    struct bench_hb *b = arg;
    zsock_t *z = bench_dealer(b->endpoint, b->keys);
    proto_buf_t buf;
    proto_buf_init(&buf);
    char name[32];
    uint64_t end = clock_mono_ms() + (uint64_t)(b->seconds * 1000);
    for (uint64_t seq = 2; clock_mono_ms() < end; seq++) {
        for (int i = 0; i < b->count && clock_mono_ms() < end; i++) {
            proto_msg_t m;
            proto_msg_init(&m, PROTO_HEARTBEAT);
            snprintf(name, sizeof name, "pn-%05d", b->first + i);
            bench_fill_hb(&m.heartbeat, name, 1000 + (uint64_t)(b->first + i), seq);
            if (proto_encode(&m, &buf, NULL, 0) == 0 && zsock_send(z, "b", buf.data, buf.len) == 0)
                b->sent++;
        }
    }
    proto_buf_close(&buf);
    zsock_destroy(&z);
    return NULL;
}

/* Registers nodes [0, n) through one pipelined DEALER; returns how many were acknowledged. */
static int bench_register(const char *endpoint, const char *keys, int n)
{
    zsock_t *z = bench_dealer(endpoint, keys);
    zsock_set_sndhwm(z, 0);
    zsock_set_rcvhwm(z, 0);
    proto_buf_t buf;
    proto_buf_init(&buf);
    char name[32], key[48];
    for (int i = 0; i < n; i++) {
        proto_msg_t m;
        proto_msg_init(&m, PROTO_NODE_REGISTER);
        snprintf(name, sizeof name, "pn-%05d", i);
        snprintf(key, sizeof key, "bench-%d-%ld", i, (long)getpid());
        m.req_id = (uint64_t)i + 1;
        m.node_register.key = key;
        m.node_register.name = name;
        m.node_register.rack = "rack-1";
        m.node_register.endpoint = "tcp://127.0.0.1:9";
        /* the boot id the heartbeats carry (bench_fill_hb): a heartbeat from another boot is
         * refused, and its node is never heard (suspect, then down) */
        m.node_register.boot_id = 1000 + (uint64_t)i + bench_mix((uint64_t)i);
        m.node_register.cpu = 16;
        m.node_register.mem_mb = 65536;
        if (proto_encode(&m, &buf, NULL, 0) == 0)
            zsock_send(z, "b", buf.data, buf.len);
    }
    int acked = 0;
    zpoller_t *p = zpoller_new(z, NULL);
    while (acked < n && zpoller_wait(p, 10000) != NULL) {
        zframe_t *f = zframe_recv(z);
        proto_msg_t r;
        if (f != NULL && proto_decode(zframe_data(f), zframe_size(f), &r, NULL, NULL, 0) == 0) {
            acked += r.type == PROTO_NODE_REGISTER_ACK &&
                     r.node_register_ack.verdict == PROTO_VERDICT_ACCEPTED;
            proto_msg_close(&r);
        }
        zframe_destroy(&f);
    }
    zpoller_destroy(&p);
    proto_buf_close(&buf);
    zsock_destroy(&z);
    return acked;
}

static void bench_ingest(int nodes, double seconds)
{
    char dir[PATH_MAX] = "/tmp/paddock-benchrm-XXXXXX";
    if (g_cluster != NULL) {
        snprintf(dir, sizeof dir, "%s", g_cluster);
    } else {
        if (mkdtemp(dir) == NULL)
            return;
        if (bench_run("up", dir, "--rm 1 --pn 0") != 0) {
            fprintf(stderr, "bench_rm: cluster up failed (see %s)\n", dir);
            return;
        }
    }
    char msg[256], keys[PATH_MAX + 8];
    snprintf(keys, sizeof keys, "%s/keys", dir);
    rmclient_t *c = NULL;
    rmclient_open(&c, dir, NULL, NULL, msg, sizeof msg);
    const char *api = rmclient_endpoint(c, 0);
    struct rmclient_cluster cl;
    char hbep[256] = "";
    if (rmclient_cluster_load(dir, &cl, msg, sizeof msg) == 0)
        snprintf(hbep, sizeof hbep, "%s", cl.heartbeat[0]);
    rmclient_cluster_close(&cl);
    uint64_t t0 = clock_mono_ms();
    int acked = bench_register(api, keys, nodes);
    double reg_s = (double)(clock_mono_ms() - t0) / 1000.0;
    json_t *before = bench_status(c, 0);
    enum { SENDERS = 4 };
    struct bench_hb hb[SENDERS];
    pthread_t th[SENDERS];
    t0 = clock_mono_ms();
    for (int i = 0; i < SENDERS; i++) {
        hb[i] = (struct bench_hb){hbep[0] ? hbep : api, keys,    i * nodes / SENDERS,
                                  nodes / SENDERS,      seconds, 0};
        pthread_create(&th[i], NULL, bench_hb_main, &hb[i]);
    }
    uint64_t sent = 0;
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(th[i], NULL);
        sent += hb[i].sent;
    }
    /* let the replica drain what is queued, then read its counter */
    json_t *after = NULL;
    uint64_t got = 0, prev = UINT64_MAX;
    for (int k = 0; k < 100; k++) {
        json_decref(after);
        after = bench_status(c, 0);
        got = (uint64_t)json_integer_value(json_object_get(after, "heartbeats")) -
              (uint64_t)json_integer_value(json_object_get(before, "heartbeats"));
        if (got == prev || got >= sent)
            break;
        prev = got;
        zclock_sleep(100);
    }
    double el = (double)(clock_mono_ms() - t0) / 1000.0;
    long rss = (long)json_integer_value(json_object_get(after, "rss_kb"));
    long view_nodes = (long)json_integer_value(json_object_get(after, "view_nodes"));
    /* heartbeats the replica refused (a node it does not know with that boot id): each one is
     * answered with an error, and its node is never heard */
    uint64_t refused =
        (uint64_t)json_integer_value(json_object_get(after, "heartbeats_unregistered")) -
        (uint64_t)json_integer_value(json_object_get(before, "heartbeats_unregistered"));
    printf("ingest: %d of %d simulated PNs registered in %.2f s; %llu heartbeats sent, %llu "
           "ingested in %.2f s: %.0f heartbeats/s (CURVE on), %llu refused as unregistered; RM "
           "RSS %.1f MiB with a %ld-node view\n",
           acked, nodes, reg_s, (unsigned long long)sent, (unsigned long long)got, el,
           (double)got / el, (unsigned long long)refused, rss / 1024.0, view_nodes);
    if (refused > 0)
        fprintf(stderr, "bench_rm: the replica refused %llu heartbeats: the rate is not ingest\n",
                (unsigned long long)refused);
    json_t *o = json_object();
    json_object_set_new(o, "nodes_registered", json_integer(acked));
    json_object_set_new(o, "register_s", json_real(reg_s));
    json_object_set_new(o, "heartbeats_sent", json_integer((json_int_t)sent));
    json_object_set_new(o, "heartbeats_ingested", json_integer((json_int_t)got));
    json_object_set_new(o, "heartbeats_per_s", json_real((double)got / el));
    json_object_set_new(o, "heartbeats_refused", json_integer((json_int_t)refused));
    json_object_set_new(o, "rss_mib", json_real(rss / 1024.0));
    json_object_set_new(o, "view_nodes", json_integer(view_nodes));
    json_object_set_new(g_out, "ingest", o);
    json_decref(before);
    json_decref(after);
    rmclient_destroy(&c);
    if (g_cluster != NULL)
        return;
    bench_run("down", dir, "");
    nftw(dir, bench_rm_tree, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- 3. token-grant commit latency ---- */

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void bench_grant(int requests)
{
    char dir[] = "/tmp/paddock-benchrm-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return;
    if (bench_run("up", dir, "--rm 3 --pn 0 --tokens 1000") != 0) {
        fprintf(stderr, "bench_rm: cluster up failed (see %s)\n", dir);
        return;
    }
    char msg[256], key[64], jid[32] = "";
    rmclient_t *c = NULL;
    rmclient_open(&c, dir, NULL, NULL, msg, sizeof msg);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = "bench";
    req.job_register.virtual_cluster = "default";
    if (rmclient_call(c, &req, &rep, 1000, 10000, msg, sizeof msg) == 0 &&
        rep.type == PROTO_JOB_REGISTER_REPLY)
        snprintf(jid, sizeof jid, "%s", rep.job_register_reply.job_id);
    proto_msg_close(&rep);
    double *lat = calloc((size_t)requests, sizeof *lat);
    int ok = 0;
    for (int i = 0; i < requests && jid[0] != '\0'; i++) {
        proto_msg_init(&req, PROTO_TOKEN_REQUEST);
        rmclient_new_key(key, sizeof key);
        req.token_request.key = key;
        req.token_request.job_id = jid;
        req.token_request.tokens = (uint32_t)(i % 100);
        uint64_t t0 = clock_mono_ns();
        if (rmclient_call(c, &req, &rep, 1000, 10000, msg, sizeof msg) == 0 &&
            rep.type == PROTO_TOKEN_GRANT)
            lat[ok++] = (double)(clock_mono_ns() - t0) / 1e6;
        proto_msg_close(&rep);
    }
    qsort(lat, (size_t)ok, sizeof *lat, bench_cmp);
    double p50 = ok > 0 ? lat[ok / 2] : 0, p99 = ok > 0 ? lat[(size_t)ok * 99 / 100] : 0;
    printf("grant: %d token requests committed on 3 replicas (CURVE on): p50 %.3f ms, p99 %.3f "
           "ms, max %.3f ms\n",
           ok, p50, p99, ok > 0 ? lat[ok - 1] : 0);
    json_t *o = json_object();
    json_object_set_new(o, "requests", json_integer(ok));
    json_object_set_new(o, "p50_ms", json_real(p50));
    json_object_set_new(o, "p99_ms", json_real(p99));
    json_object_set_new(o, "max_ms", json_real(ok > 0 ? lat[ok - 1] : 0));
    json_object_set_new(g_out, "grant", o);
    free(lat);
    rmclient_destroy(&c);
    bench_run("down", dir, "");
    nftw(dir, bench_rm_tree, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- 4. failover ---- */

/* The index of a replica (0..2) that is a ready leader, with its id, or -1. */
static int bench_leader(rmclient_t *c, int skip, uint64_t *id)
{
    for (int i = 0; i < (int)rmclient_count(c); i++) {
        if (i == skip)
            continue;
        char *text = NULL, msg[128];
        if (rmclient_admin(c, i, "rm_status", NULL, 0, 100, &text, msg, sizeof msg) != 0)
            continue;
        json_t *st = json_loads(text, 0, NULL);
        mem_free(text);
        bool ready = json_is_true(json_object_get(st, "ready"));
        *id = (uint64_t)json_integer_value(json_object_get(st, "id"));
        json_decref(st);
        if (ready)
            return i;
    }
    return -1;
}

/* A token request for `jid` answered by the cluster: 0. */
static int bench_write(rmclient_t *c, const char *jid, int deadline_ms)
{
    char key[64], msg[256];
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_TOKEN_REQUEST);
    rmclient_new_key(key, sizeof key);
    req.token_request.key = key;
    req.token_request.job_id = (char *)jid;
    req.token_request.tokens = 1;
    int rc = rmclient_call(c, &req, &rep, 50, deadline_ms, msg, sizeof msg);
    if (rc == 0 && rep.type != PROTO_TOKEN_GRANT)
        rc = -1;
    proto_msg_close(&rep);
    return rc;
}

static void bench_failover(int rounds)
{
    char dir[] = "/tmp/paddock-benchrm-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return;
    if (bench_run("up", dir, "--rm 3 --pn 0 --tokens 1000") != 0) {
        fprintf(stderr, "bench_rm: cluster up failed (see %s)\n", dir);
        return;
    }
    char msg[256], key[64], jid[32] = "";
    rmclient_t *c = NULL;
    rmclient_open(&c, dir, NULL, NULL, msg, sizeof msg);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = "bench-failover";
    req.job_register.virtual_cluster = "default";
    if (rmclient_call(c, &req, &rep, 1000, 10000, msg, sizeof msg) == 0 &&
        rep.type == PROTO_JOB_REGISTER_REPLY)
        snprintf(jid, sizeof jid, "%s", rep.job_register_reply.job_id);
    proto_msg_close(&rep);
    double *elect = calloc((size_t)rounds, sizeof *elect);
    double *commit = calloc((size_t)rounds, sizeof *commit);
    int ok = 0;
    for (int r = 0; r < rounds && jid[0] != '\0'; r++) {
        uint64_t lid = 0;
        int li = -1;
        for (uint64_t end = clock_mono_ms() + 10000; li < 0 && clock_mono_ms() < end;)
            li = bench_leader(c, -1, &lid);
        char pidf[PATH_MAX + 32];
        snprintf(pidf, sizeof pidf, "%s/rm-%llu.pid", dir, (unsigned long long)lid);
        FILE *f = fopen(pidf, "r");
        long pid = 0;
        if (f == NULL || fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        if (f != NULL)
            fclose(f);
        if (li < 0 || pid <= 0 || bench_write(c, jid, 5000) != 0)
            break;
        uint64_t t0 = clock_mono_ns();
        kill((pid_t)pid, SIGKILL);
        uint64_t nid = 0, t1 = 0;
        int ni = -1;
        for (uint64_t end = clock_mono_ms() + 10000; ni < 0 && clock_mono_ms() < end;)
            ni = bench_leader(c, li, &nid);
        t1 = clock_mono_ns();
        if (ni < 0 || bench_write(c, jid, 10000) != 0)
            break;
        uint64_t t2 = clock_mono_ns();
        elect[ok] = (double)(t1 - t0) / 1e6;
        commit[ok++] = (double)(t2 - t0) / 1e6;
        /* the killed replica again; it is caught up once a write commits with all three */
        for (uint64_t end = clock_mono_ms() + 5000; clock_mono_ms() < end;) {
            if (kill((pid_t)pid, 0) != 0)
                break;
            usleep(20000);
        }
        if (bench_run("up", dir, "--rm 3 --pn 0 --tokens 1000") != 0)
            break;
        for (uint64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end;) {
            bench_write(c, jid, 2000);
            json_t *all = NULL;
            char *text = NULL;
            int same = 0;
            long long ci = -1;
            for (int i = 0; i < 3; i++) {
                if (rmclient_admin(c, i, "rm_status", NULL, 0, 200, &text, msg, sizeof msg) != 0)
                    continue;
                all = json_loads(text, 0, NULL);
                mem_free(text);
                long long v = json_integer_value(json_object_get(all, "last_applied"));
                same += ci < 0 || v == ci;
                ci = v;
                json_decref(all);
            }
            if (same == 3)
                break;
            usleep(100000);
        }
    }
    qsort(elect, (size_t)ok, sizeof *elect, bench_cmp);
    qsort(commit, (size_t)ok, sizeof *commit, bench_cmp);
    double e50 = ok > 0 ? elect[ok / 2] : 0, c50 = ok > 0 ? commit[ok / 2] : 0;
    printf("failover: %d leader kills (SIGKILL) on 3 replicas: new ready leader min %.1f p50 %.1f "
           "max %.1f ms; first commit after the kill min %.1f p50 %.1f max %.1f ms\n",
           ok, ok > 0 ? elect[0] : 0, e50, ok > 0 ? elect[ok - 1] : 0, ok > 0 ? commit[0] : 0, c50,
           ok > 0 ? commit[ok - 1] : 0);
    json_t *o = json_object();
    json_object_set_new(o, "kills", json_integer(ok));
    json_object_set_new(o, "leader_p50_ms", json_real(e50));
    json_object_set_new(o, "leader_max_ms", json_real(ok > 0 ? elect[ok - 1] : 0));
    json_object_set_new(o, "commit_p50_ms", json_real(c50));
    json_object_set_new(o, "commit_max_ms", json_real(ok > 0 ? commit[ok - 1] : 0));
    json_object_set_new(g_out, "failover", o);
    free(elect);
    free(commit);
    rmclient_destroy(&c);
    bench_run("down", dir, "");
    nftw(dir, bench_rm_tree, 16, FTW_DEPTH | FTW_PHYS);
}

static bool bench_want(const char *only, const char *what)
{
    if (only == NULL)
        return true;
    size_t n = strlen(what);
    for (const char *p = only; (p = strstr(p, what)) != NULL; p += n) {
        if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    int nodes = 20000, requests = 2000, subscribers = 100, failovers = 10, procs = 4;
    const char *only = NULL;
    double seconds = 3;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
            nodes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
            requests = atoi(argv[++i]);
        else if (strcmp(argv[i], "--subscribers") == 0 && i + 1 < argc)
            subscribers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc)
            procs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--failovers") == 0 && i + 1 < argc)
            failovers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--plain") == 0)
            g_plain = true;
        else if (strcmp(argv[i], "--delta-nodes") == 0 && i + 1 < argc)
            g_delta_nodes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--snapshot-ms") == 0 && i + 1 < argc)
            g_snapshot_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--moving") == 0 && i + 1 < argc)
            g_moving = atof(argv[++i]);
        else if (strcmp(argv[i], "--legacy") == 0)
            g_legacy = true;
        else if (strcmp(argv[i], "--every-snapshot") == 0)
            g_every_snap = true;
        else if (strcmp(argv[i], "--full-deltas") == 0)
            g_full_deltas = true;
        else if (strcmp(argv[i], "--storm-ms") == 0 && i + 1 < argc)
            g_storm_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc)
            g_cluster = argv[++i];
        else {
            fprintf(stderr, "usage: bench_rm [--nodes N] [--seconds S] [--requests R] "
                            "[--subscribers K] [--procs P] [--plain] [--delta-nodes D] "
                            "[--snapshot-ms MS] [--moving F] [--legacy] [--every-snapshot] "
                            "[--full-deltas] [--storm-ms MS] "
                            "[--cluster DIR] "
                            "[--failovers F] [--only "
                            "view|ingest|grant|failover[,...]] [--json]\n");
            return 2;
        }
    }
    if (nodes < 4 || nodes > 99999 || requests < 1 || subscribers < 1 || seconds <= 0 ||
        failovers < 1 || procs < 1 || procs > 64 || g_delta_nodes > nodes || g_snapshot_ms < 250 ||
        !(g_moving >= 0 && g_moving <= 1)) {
        fprintf(stderr, "bench_rm: out-of-range option\n");
        return 2;
    }
    zsys_handler_set(NULL);
    const char *env = getenv("PADDOCK_BIN_DIR");
    if (env != NULL) {
        snprintf(g_bin, sizeof g_bin, "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", g_bin, sizeof g_bin - 1);
        g_bin[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(g_bin, '/');
        if (slash != NULL)
            *slash = '\0';
    }
    g_out = json_object();
    if (bench_want(only, "view"))
        bench_view(nodes, subscribers, procs, seconds);
    if (bench_want(only, "ingest"))
        bench_ingest(nodes, seconds);
    if (bench_want(only, "grant"))
        bench_grant(requests);
    if (bench_want(only, "failover"))
        bench_failover(failovers);
    if (json) {
        char *t = json_dumps(g_out, JSON_INDENT(2));
        printf("%s\n", t);
        free(t);
    }
    json_decref(g_out);
    return 0;
}
