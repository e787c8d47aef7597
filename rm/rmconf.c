/* rmconf.c - paddock-rm's configuration schema and its cross-field checks. */
#include "rm/rmconf.h"

#include "common/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(x) offsetof(rmconf_t, x)

const struct config_key rmconf_schema[] = {
    {"rm", "id", CONFIG_INT, F(id), "1", "this replica's Raft id (one of cluster.ids)", 1, 1000000},
    {"rm", "data_dir", CONFIG_STRING, F(data_dir), "/var/lib/paddock/rm",
     "Raft log and snapshots (locked while the replica runs)", 1, 4096},
    {"rm", "log_level", CONFIG_STRING, F(log_level), "info", "debug, info, warn or error", 1, 16},
    {"cluster", "ids", CONFIG_LIST, F(ids), "1", "Raft ids of the replicas", 1,
     RMCONF_MAX_REPLICAS},
    {"cluster", "raft", CONFIG_LIST, F(raft), "127.0.0.1:7301",
     "host:port of each replica's Raft transport (CURVE, docs/raft-transport.md)", 1,
     RMCONF_MAX_REPLICAS},
    {"cluster", "api", CONFIG_LIST, F(api), "tcp://127.0.0.1:7201",
     "ROUTER endpoint of each replica's API", 1, RMCONF_MAX_REPLICAS},
    {"cluster", "heartbeat", CONFIG_LIST, F(heartbeat), "",
     "ROUTER endpoint of each replica for PN heartbeats (empty: the API socket)", 0,
     RMCONF_MAX_REPLICAS},
    {"cluster", "pub", CONFIG_LIST, F(pub), "tcp://127.0.0.1:7501",
     "PUB endpoint of each replica's cluster view", 1, RMCONF_MAX_REPLICAS},
    {"raft", "election_timeout", CONFIG_DURATION, F(election_timeout_ms), "200ms",
     "election timeout (failover takes about twice this)", 50, 60000},
    {"raft", "heartbeat", CONFIG_DURATION, F(raft_heartbeat_ms), "30ms",
     "leader heartbeat interval (well below the election timeout)", 5, 10000},
    {"raft", "pre_vote", CONFIG_BOOL, F(pre_vote), "true",
     "pre-vote, so a rejoining replica does not depose a healthy leader", 0, 0},
    {"raft", "snapshot_threshold", CONFIG_INT, F(snapshot_threshold), "4096",
     "log entries between snapshots", 16, 10000000},
    {"raft", "snapshot_trailing", CONFIG_INT, F(snapshot_trailing), "1024",
     "log entries kept after a snapshot", 8, 10000000},
    {"raft", "snapshot_bytes", CONFIG_SIZE, F(snapshot_bytes), "32MiB",
     "log bytes applied since the last snapshot that take one before snapshot_threshold entries "
     "(an entry holds up to ledger.batch_max commands)",
     4096, 17179869184.0},
    {"raft", "install_snapshot_timeout", CONFIG_DURATION, F(install_snapshot_timeout_ms), "3s",
     "resend a snapshot to a follower that has not acknowledged it within this", 100, 600000},
    {"raft", "segment_size", CONFIG_SIZE, F(segment_size), "1MiB",
     "size of preallocated log segments", 65536, 1073741824},
    {"ledger", "virtual_clusters", CONFIG_LIST, F(virtual_clusters), "default=100",
     "virtual clusters and their token capacity, \"name=tokens\" or \"name=tokens/CPU/MEM_MB\" "
     "with a token's size (default 1 core, 4096 MiB: a task takes as many tokens as its largest "
     "dimension needs)",
     1, RMCONF_MAX_VCS},
    {"ledger", "admission_sd", CONFIG_DOUBLE, F(admission_sd), "1.645",
     "admission's conservative bound: mean plus this many standard deviations (1.645: 95%)", 0, 10},
    {"ledger", "lease", CONFIG_DURATION, F(lease_ms), "10s",
     "a job's tokens are reclaimed when it does not renew within this", 100, 86400000},
    {"ledger", "batch_max", CONFIG_INT, F(batch_max), "512", "commands packed into one log entry",
     1, 4096},
    {"liveness", "suspect_after", CONFIG_DURATION, F(suspect_after_ms), "3s",
     "a node without heartbeats this long becomes suspect", 10, 3600000},
    {"liveness", "down_after", CONFIG_DURATION, F(down_after_ms), "10s",
     "a node without heartbeats this long is down (its tasks are re-placed)", 20, 86400000},
    {"liveness", "pn_heartbeat", CONFIG_DURATION, F(pn_heartbeat_ms), "1s",
     "heartbeat interval PNs are asked to use", 10, 600000},
    {"view", "delta_interval", CONFIG_DURATION, F(view_delta_ms), "250ms",
     "period of view deltas (the nodes whose JM-relevant facts changed since the last delta)", 10,
     600000},
    {"view", "snapshot_interval", CONFIG_DURATION, F(view_snapshot_ms), "2s",
     "period of full view snapshots, for subscribers of everything (JMs from before the view "
     "topics); a JM of this version asks for its own",
     10, 3600000},
    {"recurring", "jobs_dir", CONFIG_STRING, F(jobs_dir), "/var/lib/paddock/jobs",
     "the leader creates each recurring run's job directory here (spec.json, run.json)", 1, 4096},
    {"recurring", "cluster_dir", CONFIG_STRING, F(cluster_dir), "/etc/paddock",
     "the directory a run's paddock-jm gets as --cluster (cluster.conf and keys)", 1, 4096},
    {"recurring", "launcher", CONFIG_STRING, F(launcher), "",
     "shell command that starts a run's job manager, with PADDOCK_JOB_DIR and PADDOCK_RUN set "
     "(e.g. systemctl --no-block start paddock-jm@$PADDOCK_RUN); empty: the leader starts "
     "paddock-jm itself, detached",
     0, 4096},
    {"recurring", "plan_step", CONFIG_DURATION, F(plan_step_ms), "60s",
     "time step of the reservation plan and of fitted skylines", 100, 3600000},
    {"recurring", "horizon", CONFIG_DURATION, F(horizon_ms), "1d",
     "the plan covers the LCM of the periods, capped at this (Morpheus: a day)", 1000,
     31 * 86400000LL},
    {"recurring", "reprovision", CONFIG_DOUBLE, F(reprovision), "2",
     "a run behind its skyline gets up to this many times its recent reservation (Morpheus §7)", 1,
     100},
    {"recurring", "launch_retry", CONFIG_DURATION, F(launch_retry_ms), "10s",
     "a run whose job manager has not registered this long after its launch is launched again",
     1000, 3600000},
    {"recurring", "launch_max", CONFIG_INT, F(launch_max), "3",
     "launches of one run before it is given up and recorded as not started", 1, 100},
    {"recurring", "fit_runs", CONFIG_INT, F(fit_runs), "10",
     "the most recent successful runs the resource model R* is fitted over", 1, 32},
    {"jobs", "relaunch", CONFIG_BOOL, F(relaunch), "false",
     "the leader starts a job manager that died (its pid gone, or its lease lapsed) again on "
     "this host with --resume, when the job's directory is here (a local cluster; under systemd "
     "paddock-jm@ restarts itself)",
     0, 0},
    {"jobs", "restart_max", CONFIG_INT, F(restart_max), "3",
     "times a job's job manager may be started again before the job fails", 0, 1000},
    {"jobs", "resume_window", CONFIG_DURATION, F(resume_window_ms), "10m",
     "a job whose lease lapsed longer ago than this is not started again", 1000, 86400000},
    {"security", "keys_dir", CONFIG_STRING, F(keys_dir), "",
     "CURVE keys from paddock keygen (empty: no CURVE, loopback only)", 0, 4096},
    {"security", "key_name", CONFIG_STRING, F(key_name), "paddock", "certificate name", 1, 255},
    {"metrics", "listen", CONFIG_STRING, F(metrics_listen), "",
     "HOST:PORT of the HTTP server for Prometheus (/metrics) and the cluster page; port 0 picks "
     "a free one; empty: off (docs/metrics.md)",
     0, 255},
    CONFIG_END,
};

static int rmconf__parse_id(const char *s, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0' || v == 0 || v > 1000000)
        return ERR_CONFIG;
    *out = v;
    return 0;
}

int rmconf_vcs(const rmconf_t *c, struct rmconf_vc *out, size_t *n, char *msg, size_t cap)
{
    *n = 0;
    for (size_t i = 0; i < c->virtual_clusters.len && i < RMCONF_MAX_VCS; i++) {
        const char *item = c->virtual_clusters.items[i];
        const char *eq = strchr(item, '=');
        size_t nlen = eq != NULL ? (size_t)(eq - item) : 0;
        char *end = NULL;
        long long capy = eq != NULL ? strtoll(eq + 1, &end, 10) : -1;
        double tcpu = 1.0;
        long long tmem = 4096;
        if (end != NULL && end != eq + 1 && *end == '/') {
            char *e2 = NULL;
            tcpu = strtod(end + 1, &e2);
            end = e2;
            if (e2 != NULL && *e2 == '/') {
                tmem = strtoll(e2 + 1, &end, 10);
                if (end == e2 + 1)
                    tmem = -1;
            } else {
                tmem = -1;
            }
        }
        if (eq == NULL || nlen == 0 || nlen >= sizeof out[0].name || end == eq + 1 ||
            *end != '\0' || capy < 0 || capy > 1000000 || !(tcpu >= 0.001 && tcpu <= 4096) ||
            tmem < 1 || tmem > 4194304)
            return err_fmt(msg, cap, ERR_CONFIG,
                           "ledger.virtual_clusters: \"%s\" is not name=tokens (0..1000000) or "
                           "name=tokens/CPU/MEM_MB",
                           item);
        memcpy(out[*n].name, item, nlen);
        out[*n].name[nlen] = '\0';
        out[*n].capacity = (uint32_t)capy;
        out[*n].token_cpu_milli = (uint32_t)(tcpu * 1000.0 + 0.5);
        out[*n].token_mem_mb = (uint32_t)tmem;
        for (size_t k = 0; k < *n; k++) {
            if (strcmp(out[k].name, out[*n].name) == 0)
                return err_fmt(msg, cap, ERR_CONFIG, "ledger.virtual_clusters: %s twice",
                               out[k].name);
        }
        (*n)++;
    }
    return 0;
}

static int rmconf__check(rmconf_t *c, char *msg, size_t cap)
{
    size_t n = c->ids.len;
    if (c->raft.len != n || c->api.len != n || c->pub.len != n ||
        (c->heartbeat.len != 0 && c->heartbeat.len != n))
        return err_fmt(msg, cap, ERR_CONFIG,
                       "cluster: ids, raft, api, pub (and heartbeat when set) must list one "
                       "item per replica (%zu ids)",
                       n);
    bool self = false;
    for (size_t i = 0; i < n; i++) {
        uint64_t id;
        if (rmconf__parse_id(c->ids.items[i], &id) != 0)
            return err_fmt(msg, cap, ERR_CONFIG, "cluster.ids: \"%s\" is not an id 1..1000000",
                           c->ids.items[i]);
        for (size_t k = 0; k < i; k++) {
            if (strcmp(c->ids.items[k], c->ids.items[i]) == 0)
                return err_fmt(msg, cap, ERR_CONFIG, "cluster.ids: %s twice", c->ids.items[i]);
        }
        if (id == (uint64_t)c->id)
            self = true;
    }
    if (!self)
        return err_fmt(msg, cap, ERR_CONFIG, "rm.id %lld is not in cluster.ids", (long long)c->id);
    if (c->raft_heartbeat_ms * 2 > c->election_timeout_ms)
        return err_fmt(msg, cap, ERR_CONFIG,
                       "raft.heartbeat must be at most half of raft.election_timeout");
    if (c->snapshot_trailing >= c->snapshot_threshold)
        return err_fmt(msg, cap, ERR_CONFIG,
                       "raft.snapshot_trailing must be below raft.snapshot_threshold");
    if (c->down_after_ms <= c->suspect_after_ms)
        return err_fmt(msg, cap, ERR_CONFIG,
                       "liveness.down_after must be longer than liveness.suspect_after");
    struct rmconf_vc vcs[RMCONF_MAX_VCS];
    size_t nvcs;
    return rmconf_vcs(c, vcs, &nvcs, msg, cap);
}

int rmconf_load(rmconf_t *c, const char *path, char *const *sets, size_t nsets, char *msg,
                size_t cap)
{
    int rc = config_defaults(rmconf_schema, c, msg, cap);
    if (rc == 0 && path != NULL)
        rc = config_load_file(rmconf_schema, c, path, msg, cap);
    for (size_t i = 0; rc == 0 && i < nsets; i++)
        rc = config_set(rmconf_schema, c, sets[i], msg, cap);
    if (rc == 0)
        rc = rmconf__check(c, msg, cap);
    return rc;
}

void rmconf_close(rmconf_t *c)
{
    config_close(rmconf_schema, c);
}

size_t rmconf_replica_count(const rmconf_t *c)
{
    return c->ids.len;
}

bool rmconf_replica(const rmconf_t *c, size_t i, struct rmconf_replica *out)
{
    if (i >= c->ids.len)
        return false;
    out->id = strtoull(c->ids.items[i], NULL, 10);
    out->raft = c->raft.items[i];
    out->api = c->api.items[i];
    out->heartbeat = c->heartbeat.len != 0 ? c->heartbeat.items[i] : c->api.items[i];
    out->pub = c->pub.items[i];
    return true;
}

int rmconf_replica_index(const rmconf_t *c, uint64_t id)
{
    for (size_t i = 0; i < c->ids.len; i++) {
        if (strtoull(c->ids.items[i], NULL, 10) == id)
            return (int)i;
    }
    return -1;
}
