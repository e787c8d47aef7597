/* fence.h - fencing epochs of job managers at the process node (pure: no I/O, no clock).
 *
 * The RM gives every JM incarnation of a job an epoch (1 at registration, bumped by every
 * JOB_RESUME); TASK_CREATE, TASK_CANCEL, TASK_UPGRADE and TASK_QUERY carry it. The node keeps,
 * per job, the highest epoch it has seen and refuses a command from an older one, so a stale
 * JM (paused, partitioned) cannot schedule beside the JM that resumed its job. Epoch 0 is a JM
 * from before fencing: never refused, and it never raises the job's epoch.
 */
#ifndef PADDOCK_PN_FENCE_H
#define PADDOCK_PN_FENCE_H

#include <stdint.h>

/* Whether a command carrying `epoch` may act on a job whose highest epoch seen is `seen`:
 * 0 when admitted (epoch 0, equal or higher), ERR_FENCED when older. Reads only. */
int fence_check(uint32_t seen, uint32_t epoch);
/* fence_check, and on admission raises *seen to `epoch` when it is higher. Returns
 * fence_check's result; 1 (admitted) when the epoch was raised, so the caller can log it. */
int fence_admit(uint32_t *seen, uint32_t epoch);

#endif
