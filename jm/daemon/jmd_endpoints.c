/* jmd_endpoints.c - where paddock-jm finds the RM (jm/daemon/jmd_endpoints.h). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/curve.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/daemon/jmd_endpoints.h"
#include "proto/proto.h"

/* Splits "a,b,c" in place into at most max parts. */
static size_t split(char *s, const char **out, size_t max)
{
    size_t n = 0;
    for (char *p = strtok(s, ","); p && n < max; p = strtok(NULL, ","))
        out[n++] = p;
    return n;
}

/* With --rm and no --pub: asks each replica (admin "rm_status") where it publishes its view. A
 * wildcard host ("*", "0.0.0.0") is replaced by the host of the replica's API endpoint. An
 * unreachable replica gets no SUB (the others' views cover it; it is logged). */
static void discover_pubs(struct jmd_opts *o, char **pubs)
{
    rmclient_t *c = NULL;
    char msg[512];
    if (rmclient_new(&c, o->rm_api, o->nrm, o->keys_dir, o->key_name, msg, sizeof msg) != 0) {
        log_warn("cannot ask the RM where it publishes its view: %s", msg);
        return;
    }
    for (size_t i = 0; i < o->nrm; i++) {
        char *doc = NULL;
        if (rmclient_admin(c, (int)i, PROTO_ADMIN_RM_STATUS, NULL, 0, 2000, &doc, msg,
                           sizeof msg) != 0) {
            log_warn("replica %s: no view endpoint (%s)", o->rm_api[i], msg);
            continue;
        }
        json_t *j = json_loads(doc, 0, NULL);
        mem_free(doc);
        const char *pub = json_string_value(json_object_get(j, "pub"));
        if (pub && strncmp(pub, "tcp://", 6) == 0) {
            const char *port = strrchr(pub + 6, ':');
            const char *host = pub + 6;
            char buf[512];
            if (port && (strncmp(host, "*:", 2) == 0 || strncmp(host, "0.0.0.0:", 8) == 0)) {
                const char *ahost = o->rm_api[i] + (strncmp(o->rm_api[i], "tcp://", 6) ? 0 : 6);
                const char *aport = strrchr(ahost, ':');
                int hl = aport ? (int)(aport - ahost) : (int)strlen(ahost);
                snprintf(buf, sizeof buf, "tcp://%.*s%s", hl, ahost, port);
                pubs[i] = mem_strdup(buf);
            } else {
                pubs[i] = mem_strdup(pub);
            }
            o->rm_pub[i] = pubs[i];
            log_info("replica %s publishes its view at %s", o->rm_api[i], pubs[i] ? pubs[i] : "?");
        }
        json_decref(j);
    }
    rmclient_destroy(&c);
}

int endpoints_load(struct endpoints *e, struct jmd_opts *o, const char *cluster, const char *rm,
                   const char *pub, const char *keys, const char **profile_dir, char *msg,
                   size_t cap)
{
    if (cluster) {
        if (rmclient_cluster_load(cluster, &e->cl, msg, cap) != 0)
            return 1;
        o->nrm = e->cl.n < JMD_MAX_RM ? e->cl.n : JMD_MAX_RM;
        for (size_t i = 0; i < o->nrm; i++) {
            o->rm_api[i] = e->cl.api[i];
            o->rm_pub[i] = e->cl.pub[i];
        }
        o->rm_leader = rmclient_leader_hint(cluster, o->rm_api, o->nrm);
        o->keys_dir = e->cl.keys_dir;
        o->key_name = e->cl.key_name;
        if (!*profile_dir) {
            snprintf(e->profiles, sizeof e->profiles, "%s/profiles", cluster);
            mkdir(e->profiles, 0755);
            *profile_dir = e->profiles;
        }
    } else {
        e->rm_copy = mem_strdup(rm);
        e->pub_copy = pub ? mem_strdup(pub) : NULL;
        if (!e->rm_copy || (pub && !e->pub_copy)) {
            snprintf(msg, cap, "out of memory");
            return 1;
        }
        o->nrm = split(e->rm_copy, o->rm_api, JMD_MAX_RM);
        if (e->pub_copy)
            split(e->pub_copy, o->rm_pub, JMD_MAX_RM);
        o->keys_dir = keys;
        o->key_name = CURVE_DEFAULT_NAME;
        if (!e->pub_copy)
            discover_pubs(o, e->pubs);
    }
    e->loaded = 1;
    return 0;
}

void endpoints_close(struct endpoints *e)
{
    rmclient_cluster_close(&e->cl);
    mem_free(e->rm_copy);
    mem_free(e->pub_copy);
    for (size_t i = 0; i < JMD_MAX_RM; i++)
        mem_free(e->pubs[i]);
    memset(e, 0, sizeof *e);
}
