/* bench_rm.h - what tools/bench_rm.c (ingest, grant, failover, main) and tools/bench_rm_view.c
 * (the view publication) share: the options, the JSON output and the simulated heartbeats.
 * Private to bench_rm. */
#ifndef PADDOCK_TOOLS_BENCH_RM_H
#define PADDOCK_TOOLS_BENCH_RM_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/proto.h"

extern char g_bin[PATH_MAX]; /* the folder of this executable (paddock and paddock-rm beside it) */
extern json_t *g_out;        /* --json: the figures, else NULL */
extern bool g_plain;         /* --plain: views in the version-1 encoding, not packed */
extern int g_delta_nodes;    /* --delta-nodes: nodes changed per 250 ms (-1: a quarter) */
extern int g_snapshot_ms;    /* --snapshot-ms: the RM's view.snapshot_interval */
extern double g_moving;      /* --moving: the share of heartbeats whose waits move */
extern bool g_legacy;        /* --legacy: receivers subscribe to everything */
extern bool g_every_snap;    /* --every-snapshot: each joiner takes every snapshot published
                                while it is on the snapshot topic (the RM before addressed ones) */
/* --full-deltas: no compact deltas (proto/view_cells.h), as before */
extern bool g_full_deltas;
/* --storm-ms: the longest join window (rmview_xpub.h RMVIEW_XPUB_JOIN_STORM_MS) */
extern int g_storm_ms;

/* A view message encoded as the RM sends it (packed unless --plain). */
int bench_encode(const proto_msg_t *m, proto_buf_t *buf);
/* Node `name` ("pn-N")'s heartbeat number seq, with values as varied as a busy cluster's. */
void bench_fill_hb(proto_heartbeat_t *hb, const char *name, uint64_t boot, uint64_t seq);

/* 1. view publication (bench_rm_view.c). */
void bench_view(int nodes, int subscribers, int procs, double seconds);

#endif
