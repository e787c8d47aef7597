/* rm_replica.c - one real paddock-rm replica for the tests that drive it by hand (see the
 * header). */
#include "tests/rm/rm_replica.h"

#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "tests/rm/rm_harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int rm_replica_setup(struct rm_replica *r, const char *tag, const char *ledger,
                     const char *sections)
{
    if (rm_harness_init(tag) != 0)
        return -1;
    snprintf(r->dir, sizeof r->dir, "%s", rm_harness_dir());
    snprintf(r->exe, sizeof r->exe, "%s/paddock-rm", rm_harness_bin());
    char msg[256];
    snprintf(r->keys, sizeof r->keys, "%s/keys", r->dir);
    if (curve_keygen(r->keys, CURVE_DEFAULT_NAME, false, msg, sizeof msg) != 0)
        return -1;
    int api = rm_harness_free_port(), pub = rm_harness_free_port(), raft = rm_harness_free_port();
    if (api < 0 || pub < 0 || raft < 0)
        return -1;
    snprintf(r->api, sizeof r->api, "tcp://127.0.0.1:%d", api);
    snprintf(r->pub, sizeof r->pub, "tcp://127.0.0.1:%d", pub);
    snprintf(r->conf, sizeof r->conf, "%s/rm.conf", r->dir);
    FILE *f = fopen(r->conf, "w");
    if (f == NULL)
        return -1;
    fprintf(f,
            "[rm]\nid = 1\ndata_dir = %s/data\n[cluster]\nids = 1\nraft = 127.0.0.1:%d\n"
            "api = %s\npub = %s\n[ledger]\nvirtual_clusters = default=10\n%s%s"
            "[security]\nkeys_dir = %s\n",
            r->dir, raft, r->api, r->pub, ledger, sections, r->keys);
    if (fclose(f) != 0)
        return -1;
    rm_harness_ports_release(); /* the daemon binds them */
    return 0;
}

pid_t rm_replica_spawn(const struct rm_replica *r, char *const extra[], const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[16] = {(char *)r->exe, "--config", (char *)r->conf};
        int n = 3;
        for (int i = 0; extra != NULL && extra[i] != NULL && n < 15; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(r->exe, argv);
        _exit(127);
    }
    return pid;
}

int rm_replica_curve(zsock_t *z, const char *keys, const char *server_key)
{
    curve_t *cv = NULL;
    char msg[256];
    int rc = curve_load(&cv, keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg);
    if (rc == 0)
        rc = curve_apply(z, cv, CURVE_CLIENT, server_key, msg, sizeof msg);
    curve_destroy(&cv);
    return rc;
}

zsock_t *rm_replica_dealer(const struct rm_replica *r, const char *keys, const char *server_key)
{
    zsock_t *z = zsock_new(ZMQ_DEALER);
    if (z == NULL)
        return NULL;
    zsock_set_linger(z, 0);
    if (keys != NULL && rm_replica_curve(z, keys, server_key) != 0) {
        zsock_destroy(&z);
        return NULL;
    }
    zsock_connect(z, "%s", r->api);
    return z;
}

int rm_replica_send(zsock_t *z, proto_msg_t *m)
{
    proto_buf_t b;
    proto_buf_init(&b);
    int rc = proto_encode(m, &b, NULL, 0);
    if (rc == 0 && zsock_send(z, "b", b.data, b.len) != 0)
        rc = ERR_SYS;
    proto_buf_close(&b);
    return rc;
}

int rm_replica_register_nodes(zsock_t *d, int n, int timeout_ms)
{
    return rm_replica_register_nodes_as(d, "pn", n, NULL, timeout_ms);
}

int rm_replica_register_nodes_as(zsock_t *d, const char *prefix, int n,
                                 struct rm_replica_size (*size)(int i), int timeout_ms)
{
    char name[64], key[80];
    for (int i = 0; i < n; i++) {
        struct rm_replica_size sz = size != NULL ? size(i) : (struct rm_replica_size){4, 4096};
        proto_msg_t m;
        proto_msg_init(&m, PROTO_NODE_REGISTER);
        snprintf(name, sizeof name, "%s-%03d", prefix, i);
        snprintf(key, sizeof key, "reg-%s-%d", prefix, i);
        m.req_id = (uint64_t)i + 1;
        m.node_register.key = key;
        m.node_register.name = name;
        m.node_register.rack = "r1";
        m.node_register.endpoint = "tcp://127.0.0.1:9";
        m.node_register.boot_id = 1000 + (uint64_t)i;
        m.node_register.cpu = sz.cpu;
        m.node_register.mem_mb = sz.mem_mb;
        if (rm_replica_send(d, &m) != 0)
            return -1;
    }
    int acked = 0;
    zpoller_t *p = zpoller_new(d, NULL);
    if (p == NULL)
        return -1;
    for (uint64_t end = clock_mono_ms() + (uint64_t)timeout_ms;
         acked < n && clock_mono_ms() < end;) {
        if (zpoller_wait(p, 500) == NULL)
            continue;
        zframe_t *f = zframe_recv(d);
        proto_msg_t m;
        if (f != NULL && proto_decode(zframe_data(f), zframe_size(f), &m, NULL, NULL, 0) == 0) {
            acked += m.type == PROTO_NODE_REGISTER_ACK &&
                     m.node_register_ack.verdict == PROTO_VERDICT_ACCEPTED;
            proto_msg_close(&m);
        }
        zframe_destroy(&f);
    }
    zpoller_destroy(&p);
    return acked;
}

rmclient_t *rm_replica_boot(const struct rm_replica *r, pid_t *pid)
{
    char log[512], msg[256];
    snprintf(log, sizeof log, "%s/rm.log", r->dir);
    char *boot[] = {"--bootstrap", NULL};
    pid_t p = rm_replica_spawn(r, boot, log);
    if (pid != NULL)
        *pid = p;
    if (p <= 0)
        return NULL;
    rm_harness_child(p);
    rmclient_t *c = NULL;
    if (rmclient_open(&c, NULL, r->api, r->keys, msg, sizeof msg) != 0)
        return NULL;
    json_t *leader = rm_harness_wait_leader(c, 15000);
    if (leader == NULL) {
        rmclient_destroy(&c);
        return NULL;
    }
    json_decref(leader);
    return c;
}
