/* jmd_endpoints.h - where paddock-jm finds the RM: its replicas' API and view endpoints and
 * the keys, from a cluster directory or from --rm, --pub and --keys (asking the replicas where
 * they publish when --pub is not given). The shell's part of the start, apart from main.c.
 */
#ifndef PADDOCK_JM_DAEMON_JMD_ENDPOINTS_H
#define PADDOCK_JM_DAEMON_JMD_ENDPOINTS_H

#include "jm/daemon/jmd.h"
#include "rm/rmclient.h"

/* The endpoints and keys, kept for the process's life: jmd_opts borrows them. */
struct endpoints {
    int loaded;
    struct rmclient_cluster cl;
    char *rm_copy, *pub_copy, *pubs[JMD_MAX_RM];
    char profiles[4096];
};

/* Fills o's RM endpoints and keys, and *profile_dir (CLUSTER/profiles, made) when NULL and a
 * cluster directory is given. 0, or 1 with the reason in msg. Without `pub`, asks the replicas
 * where they publish (a warning is logged for each that does not answer). */
int endpoints_load(struct endpoints *e, struct jmd_opts *o, const char *cluster, const char *rm,
                   const char *pub, const char *keys, const char **profile_dir, char *msg,
                   size_t cap);

/* Frees what endpoints_load kept (the options borrowing it are then stale). */
void endpoints_close(struct endpoints *e);

#endif
