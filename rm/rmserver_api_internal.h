/* rmserver_api_internal.h - what the request files of the RM replica share (not part of the
 * replica's interface, rm/rmserver_internal.h): rmserver_api.c (decoding, who asks, the requests
 * of PNs and JMs), rmserver_api_admin.c (admin queries and writes) and rmserver_reply.c (replies
 * once a command is applied). */
#ifndef PADDOCK_RM_RMSERVER_API_INTERNAL_H
#define PADDOCK_RM_RMSERVER_API_INTERNAL_H

#include "rm/rmserver_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Job ids on the wire are "j-" + 12 hex digits of the ledger's id: 0 with *id, or ERR_INVAL. */
int rmserver__parse_job(const char *s, uint64_t *id);
/* Refuses request m: counted under `why`, answered with ERROR(code, text). */
void rmserver__reject(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                      const proto_msg_t *m, enum rmserver_reject why, int code, const char *text);
/* Refuses a request the caller may not make: counted by what was tried, answered with the
 * reason, and (for the commands users type) a line in the replicated audit trail. Nothing
 * else changes. */
void rmserver__deny(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                    const proto_msg_t *m, enum rmserver_deny what, const char *action,
                    const char *target, const char *why);
/* A line in the replicated audit trail: the caller did (LEDGER_AUDIT_DONE; replica changes,
 * done outside the ledger) or was refused (LEDGER_AUDIT_DENIED) `action` on `target`, with
 * `text` (cut at LEDGER_REASON_MAX bytes). Best effort: a line that cannot be queued is logged
 * and lost; the request goes on. */
void rmserver__audit(struct rmserver *s, uint8_t state, const char *action, const char *target,
                     const char *text);
/* Whether the caller may act on job `id`: its owner or an admin (a job the ledger does not
 * know is the ledger's to refuse). */
bool rmserver__owns(struct rmserver *s, uint64_t id);
/* "USER may not WHAT job ID of OWNER (only its owner or an admin)" into out (cap bytes). */
void rmserver__owner_text(struct rmserver *s, uint64_t id, const char *what, char *out, size_t cap);
/* A write: answered now when its key was already applied, else queued for the log. Refused
 * with ERR_NOTLEADER on a follower, and with ERR_INVAL when a client write (admin_kind NULL)
 * has no idempotency key; `admin_kind` names an admin write, which carries a key of its own. */
void rmserver__write(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                     const proto_msg_t *m, struct ledger_cmd *cmd, const char *key,
                     const char *admin_kind);
/* Answers an ADMIN_QUERY: replica-set changes (admins only, audited), tenants, job cancel and
 * deadline (owner or admin), recurring-job writes, and the read-only kinds from this replica. */
void rmserver__admin(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                     const proto_msg_t *m);

#endif
