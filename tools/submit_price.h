/* submit_price.h - `paddock submit --max-price P` (issue 25, MRM §4): the earliest deadline
 * whose price on the RM's price-deadline curve is at most P token-seconds. */
#ifndef PADDOCK_TOOLS_SUBMIT_PRICE_H
#define PADDOCK_TOOLS_SUBMIT_PRICE_H

#include "rm/rmclient.h"
#include "tools/jobdir.h"

#include <stddef.h>

/* Asks the RM's "quote" admin query on `c` for a job of shape `sh` (borrowed) in virtual
 * cluster `vc` and picks the earliest point of its price-deadline curve (seconds from now,
 * MRM eq. 13 in token-seconds) whose price is at most `max_price`. Returns 0 with *deadline_s
 * and *price; ERR_NOTFOUND when no point is that cheap (msg names the cheapest one); ERR_INVAL
 * when the job has no shape to price; another ERR_* when the RM cannot be asked. */
int submit_price_deadline(rmclient_t *c, const char *vc, const struct jobdir_shape *sh,
                          double max_price, double *deadline_s, double *price, char *msg,
                          size_t cap);

#endif
