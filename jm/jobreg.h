/* jobreg.h - one JOB_REGISTER builder for every client that registers a job: `paddock submit`
 * (tools/cli_submit.c) and a job manager that registers itself (jm/daemon/main.c: a recurring run,
 * a JM started by hand). Issue 25: the two built the message apart, and the JM sent no shape, so
 * its job was admitted unchecked.
 *
 * The shape is the one `paddock submit` and `paddock quote` send (jm/shape.h): shape_from_spec
 * over the job's profile when there is one, at the token size of the job's virtual cluster, and
 * its list schedule's place between ARIA's bounds (shape_alpha) at the cluster's capacity when
 * the RM said it. With it the RM's admission (rm/arbiter.h) refuses a job whose deadline cannot
 * be met (JOB_REGISTER_REPLY code ERR_ADMISSION), whoever registers it.
 *
 * Pure except jobreg_shape's read of the profile directory. */
#ifndef PADDOCK_JM_JOBREG_H
#define PADDOCK_JM_JOBREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jm/spec.h"
#include "proto/proto.h"
#include "rm/arbiter.h"

/* A job's shape as sent (public value). */
struct jobreg_shape {
    struct arbiter_shape s; /* token-seconds and seconds */
    bool has_profile;       /* estimates from a profile of an earlier run of the same name */
    double token_cpu;       /* the token size the shape counts in */
    uint64_t token_mem_mb;
    uint32_t capacity; /* the virtual cluster's tokens (0: unknown; then no alpha) */
    double list_s;     /* the simulated makespan at min(capacity, width) tokens (0: none) */
};

/* The token size and capacity of virtual cluster `vc` in the RM's "tokens" admin document
 * (JSON text, borrowed; NULL or unreadable: the defaults and capacity 0). */
void jobreg_cluster(const char *tokens_json, const char *vc, double *token_cpu,
                    uint64_t *token_mem_mb, uint32_t *capacity);

/* The shape of `spec` (borrowed, validated) at that token size and capacity, with the job's
 * profile from profile_dir (NULL: none; one that does not read is passed over, as the JM does).
 * 0, or an ERR_* code with the reason in msg (*out untouched). */
int jobreg_shape(const struct spec *spec, const char *profile_dir, double token_cpu,
                 uint64_t token_mem_mb, uint32_t capacity, struct jobreg_shape *out, char *msg,
                 size_t cap);

/* Seconds as the whole milliseconds the wire carries, rounded up (0 for none or NaN). */
uint64_t jobreg_ms(double s);

/* What a registration says (public value; every pointer borrowed until jobreg_build's message
 * is sent). Fields left 0 / NULL are not sent. */
struct jobreg {
    const char *key;                  /* idempotency key, required */
    const struct spec *spec;          /* required: name, virtual cluster, deadline, files */
    const struct jobreg_shape *shape; /* NULL: no shape (the RM admits unchecked) */
    uint64_t deadline_ms;             /* 0: the spec's; else this one (a recurring run's) */
    const char *submitter;            /* "user@host" */
    int64_t submit_ms;                /* wall clock */
    bool best_effort;                 /* no admission control */
    const char *recurring;            /* a recurring job's run: its name and period */
    uint64_t period;
    const char *job_dir, *host; /* where a JM that registers itself keeps the job */
    uint32_t jm_pid;
    const char *inputs[PROTO_MAX_JOB_FILES]; /* private: jobreg_build's scratch */
};

/* Builds the JOB_REGISTER in *req (initialised here; its strings borrowed from r and r->spec,
 * so nothing to close). */
void jobreg_build(struct jobreg *r, proto_msg_t *req);

#endif
