/* cli_rm_member.c - `paddock rm add` / `paddock rm remove`: changing the RM's replica set
 * (docs/deploy.md, docs/rm.md "Changing the replica set"), and with --dir a local cluster's
 * files kept in step: the new replica's configuration written (and started with --start), the
 * cluster's endpoint lists rewritten. Options as the queries' (tools/cli_rm.h) plus --dir,
 * --heartbeat and --start. */
#include "common/clock.h"
#include "common/config.h"
#include "common/err.h"
#include "common/mem.h"
#include "rm/rmclient.h"
#include "rm/rmconf.h"
#include "tools/cli.h"
#include "tools/cli_rm.h"
#include "tools/spawn.h"

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_RM_USAGE_RM_ADD                                                                        \
    "rm add ID RAFT_ADDR API_ENDPOINT PUB_ENDPOINT [--heartbeat ENDPOINT]\n"                       \
    "       [--cluster DIR | --rm ENDPOINTS [--keys DIR]] [--dir CLUSTER_DIR [--start]] [--json]"
#define CLI_RM_USAGE_RM_REMOVE                                                                     \
    "rm remove ID [--cluster DIR | --rm ENDPOINTS [--keys DIR]] [--dir CLUSTER_DIR] [--json]"

static int rm_add_usage(void)
{
    return cli_rm_usage(CLI_RM_USAGE_RM_ADD);
}

static int rm_remove_usage(void)
{
    return cli_rm_usage(CLI_RM_USAGE_RM_REMOVE);
}

/* ---- rm add, rm remove ---- */

#define CLI_RM_CHANGE_MS 60000 /* catch-up of a new replica included */

/* Sends a membership change to the leader until it answers other than "not the leader", for
 * at most CLI_RM_CHANGE_MS. The change is idempotent on the RM side, so retries are safe. */
static int cli_rm_change(const struct cli_rm_opts *o, const char *kind, const char *const *args,
                         size_t nargs, json_t **doc)
{
    char msg[600];
    rmclient_t *c = NULL;
    *doc = NULL;
    if (cli_rm_open(o, &c) != 0)
        return 1;
    int rc = ERR_TIMEOUT;
    snprintf(msg, sizeof msg, "no RM leader answered");
    for (uint64_t end = clock_mono_ms() + CLI_RM_CHANGE_MS; clock_mono_ms() < end;) {
        json_t *st[RMCLIENT_MAX_REPLICAS];
        int leader = -1;
        (void)cli_rm_statuses(c, st, &leader); /* how many answered: only the leader matters */
        for (size_t i = 0; i < rmclient_count(c); i++)
            json_decref(st[i]);
        if (leader >= 0) {
            char *text = NULL;
            int left = (int)(end - clock_mono_ms());
            rc = rmclient_admin(c, leader, kind, args, nargs, left > 0 ? left : 1, &text, msg,
                                sizeof msg);
            if (rc == 0) {
                *doc = json_loads(text, 0, NULL);
                mem_free(text);
                if (*doc == NULL)
                    snprintf(msg, sizeof msg, "bad reply from the RM");
                break;
            }
            if (rc != ERR_NOTLEADER && rc != ERR_TIMEOUT && rc != ERR_UNAVAILABLE)
                break; /* a refusal */
        }
        usleep(200 * 1000);
    }
    rmclient_destroy(&c);
    if (*doc == NULL) {
        fprintf(stderr, "paddock: %s %s: %s\n", kind, args[0], msg);
        return 1;
    }
    return 0;
}

/* Appends `item` to a comma-separated list in buf. */
static void cli_rm_list_add(char *buf, size_t cap, const char *item)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s", n > 0 ? ", " : "", item);
}

struct cli_rm_lists {
    char ids[256], raft[2048], api[2048], hb[2048], pub[2048];
};

static void cli_rm_lists(json_t *conf, const char *skip_id, struct cli_rm_lists *l)
{
    memset(l, 0, sizeof *l);
    size_t i;
    json_t *r;
    json_array_foreach(conf, i, r)
    {
        char id[24];
        snprintf(id, sizeof id, "%lld", cli_rm_int(r, "id"));
        if (skip_id != NULL && strcmp(id, skip_id) == 0)
            continue;
        cli_rm_list_add(l->ids, sizeof l->ids, id);
        cli_rm_list_add(l->raft, sizeof l->raft, cli_rm_str(r, "raft"));
        cli_rm_list_add(l->api, sizeof l->api, cli_rm_str(r, "api"));
        cli_rm_list_add(l->hb, sizeof l->hb, cli_rm_str(r, "heartbeat"));
        cli_rm_list_add(l->pub, sizeof l->pub, cli_rm_str(r, "pub"));
    }
}

/* Rewrites DIR/cluster.conf with the replicas of `conf` (what clients connect to). */
static int cli_rm_write_cluster(const char *dir, json_t *conf)
{
    char msg[512], path[PATH_MAX + 64], tmp[PATH_MAX + 80];
    struct rmclient_cluster cl;
    memset(&cl, 0, sizeof cl);
    if (rmclient_cluster_load(dir, &cl, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock: %s\n", msg);
        rmclient_cluster_close(&cl);
        return 1;
    }
    struct cli_rm_lists l;
    cli_rm_lists(conf, NULL, &l);
    snprintf(path, sizeof path, "%s/%s", dir, RMCLIENT_CLUSTER_FILE);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = f != NULL ? 0 : 1;
    if (f != NULL) {
        fprintf(f,
                "# rewritten by paddock rm add/remove: where the RM replicas listen\n[cluster]\n"
                "ids = %s\napi = %s\nheartbeat = %s\npub = %s\n",
                l.ids, l.api, l.hb, l.pub);
        if (cl.keys_dir != NULL)
            fprintf(f, "\n[security]\nkeys_dir = %s\nkey_name = %s\n", cl.keys_dir,
                    cl.key_name != NULL ? cl.key_name : "paddock");
        rc = fclose(f) != 0 || rename(tmp, path) != 0;
    }
    rmclient_cluster_close(&cl);
    if (rc != 0)
        fprintf(stderr, "paddock: cannot write %s\n", path);
    return rc;
}

/* Writes DIR/rm-ID.conf for the new replica: the settings of an existing replica's file, its
 * own id and data directory, and the cluster lists of `conf` plus the new replica. */
static int cli_rm_write_replica(const struct cli_rm_opts *o, json_t *conf, const char *hb)
{
    char src[PATH_MAX + 64], path[PATH_MAX + 64], msg[1024];
    size_t i;
    json_t *r;
    src[0] = '\0';
    json_array_foreach(conf, i, r)
    {
        snprintf(path, sizeof path, "%s/rm-%lld.conf", o->dir, cli_rm_int(r, "id"));
        if (src[0] == '\0' && access(path, R_OK) == 0)
            snprintf(src, sizeof src, "%s", path);
    }
    if (src[0] == '\0') {
        fprintf(stderr, "paddock: no rm-ID.conf of a current replica in %s\n", o->dir);
        return 1;
    }
    struct cli_rm_lists l;
    cli_rm_lists(conf, o->args[0], &l);
    cli_rm_list_add(l.ids, sizeof l.ids, o->args[0]);
    cli_rm_list_add(l.raft, sizeof l.raft, o->args[1]);
    cli_rm_list_add(l.api, sizeof l.api, o->args[2]);
    cli_rm_list_add(l.hb, sizeof l.hb, hb);
    cli_rm_list_add(l.pub, sizeof l.pub, o->args[3]);
    char sets[8][2200];
    snprintf(sets[0], sizeof sets[0], "rm.id=%s", o->args[0]);
    snprintf(sets[1], sizeof sets[1], "rm.data_dir=%s/rm-%s", o->dir, o->args[0]);
    snprintf(sets[2], sizeof sets[2], "cluster.ids=%s", l.ids);
    snprintf(sets[3], sizeof sets[3], "cluster.raft=%s", l.raft);
    snprintf(sets[4], sizeof sets[4], "cluster.api=%s", l.api);
    snprintf(sets[5], sizeof sets[5], "cluster.heartbeat=%s", l.hb);
    snprintf(sets[6], sizeof sets[6], "cluster.pub=%s", l.pub);
    char *setv[7];
    for (int k = 0; k < 7; k++)
        setv[k] = sets[k];
    rmconf_t cfg;
    memset(&cfg, 0, sizeof cfg);
    int rc = rmconf_load(&cfg, src, setv, 7, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock: %s\n", msg);
        rmconf_close(&cfg);
        return 1;
    }
    if (cfg.metrics_listen != NULL && cfg.metrics_listen[0] != '\0') {
        /* the source replica's port is taken: the same host, a port picked when it starts */
        char *colon = strrchr(cfg.metrics_listen, ':');
        if (colon != NULL) {
            char ml[300];
            snprintf(ml, sizeof ml, "%.*s:0", (int)(colon - cfg.metrics_listen),
                     cfg.metrics_listen);
            char *dup = mem_strdup(ml);
            if (dup != NULL) {
                mem_free(cfg.metrics_listen);
                cfg.metrics_listen = dup;
            }
        }
    }
    snprintf(path, sizeof path, "%s/rm-%s.conf", o->dir, o->args[0]);
    FILE *f = fopen(path, "w");
    rc = f == NULL || config_write(rmconf_schema, &cfg, f) != 0;
    if (f != NULL && fclose(f) != 0)
        rc = 1;
    rmconf_close(&cfg);
    if (rc != 0)
        fprintf(stderr, "paddock: cannot write %s\n", path);
    return rc;
}

/* Starts DIR/rm-ID.conf's replica with --join, detached (log DIR/rm-ID.log, pid DIR/rm-ID.pid,
 * as `paddock cluster up` does). */
static int cli_rm_start(const struct cli_rm_opts *o)
{
    char exe[PATH_MAX + 16], conf[PATH_MAX + 64], log[PATH_MAX + 64], pidf[PATH_MAX + 64];
    if (spawn_bin_dir(exe, PATH_MAX) != 0)
        return 1;
    snprintf(exe + strlen(exe), sizeof exe - strlen(exe), "/paddock-rm");
    snprintf(conf, sizeof conf, "%s/rm-%s.conf", o->dir, o->args[0]);
    snprintf(log, sizeof log, "%s/rm-%s.log", o->dir, o->args[0]);
    snprintf(pidf, sizeof pidf, "%s/rm-%s.pid", o->dir, o->args[0]);
    char *argv[] = {exe, "--config", conf, "--join", NULL};
    pid_t pid = spawn_detached(argv, log);
    return pid < 0 || spawn_write_pid(pidf, pid) != 0;
}

static int rm_add_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc = cli_rm_parse(argc, argv, &o, 4, CLI_RM_CHANGE, CLI_RM_USAGE_RM_ADD);
    if (rc != 0)
        return rc;
    const char *hb = o.heartbeat != NULL ? o.heartbeat : o.args[2];
    if (o.dir != NULL) {
        /* the new replica's configuration lists the current members and itself */
        json_t *st = NULL;
        if (cli_rm_query(&o, "rm_status", NULL, 0, &st) != 0)
            return 1;
        rc = cli_rm_write_replica(&o, json_object_get(st, "configuration"), hb);
        json_decref(st);
        if (rc == 0 && o.start)
            rc = cli_rm_start(&o);
        if (rc != 0)
            return 1;
    }
    const char *args[5] = {o.args[0], o.args[1], o.args[2], hb, o.args[3]};
    json_t *doc = NULL;
    if (cli_rm_change(&o, "replica_add", args, 5, &doc) != 0) {
        if (o.dir != NULL && !o.start)
            fprintf(stderr,
                    "paddock: is the replica running? start it with: paddock-rm --config "
                    "%s/rm-%s.conf --join\n",
                    o.dir, o.args[0]);
        return 1;
    }
    if (o.dir != NULL && cli_rm_write_cluster(o.dir, json_object_get(doc, "configuration")) != 0)
        rc = 1;
    if (o.json) {
        if (cli_rm_print_json(doc) != 0)
            rc = 1;
    } else {
        printf("replica %s is a voter\n", o.args[0]);
        if (o.dir != NULL)
            printf("wrote %s/rm-%s.conf and %s/%s\n", o.dir, o.args[0], o.dir,
                   RMCLIENT_CLUSTER_FILE);
        printf("next: add %s to the [cluster] lists of the other replicas' configuration files "
               "and of PNs' and JMs' [rm] endpoints (they take effect on their next restart); "
               "`paddock rm status` lists the configuration\n",
               o.args[2]);
    }
    json_decref(doc);
    return rc;
}

static int rm_remove_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc = cli_rm_parse(argc, argv, &o, 1, CLI_RM_CHANGE, CLI_RM_USAGE_RM_REMOVE);
    if (rc != 0)
        return rc;
    json_t *doc = NULL;
    if (cli_rm_change(&o, "replica_remove", o.args, 1, &doc) != 0)
        return 1;
    if (o.dir != NULL && cli_rm_write_cluster(o.dir, json_object_get(doc, "configuration")) != 0)
        rc = 1;
    if (o.json) {
        if (cli_rm_print_json(doc) != 0)
            rc = 1;
    } else {
        printf("replica %s is no longer a member\n", o.args[0]);
        printf("next: stop its paddock-rm, delete its data directory (the id is never reused), "
               "and drop it from the other replicas' [cluster] lists and the PNs' and JMs' [rm] "
               "endpoints\n");
    }
    json_decref(doc);
    return rc;
}

CLI_COMMAND("rm add", "add an RM replica under a new id (joins as a spare, promoted to voter)",
            rm_add_main, rm_add_usage)
CLI_COMMAND("rm remove", "remove an RM replica from the Raft configuration", rm_remove_main,
            rm_remove_usage)
