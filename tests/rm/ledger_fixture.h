/* ledger_fixture.h - what the ledger's unit tests share: a command applied with the ledger's
 * invariants checked after it (ledger_check), failing the running cmocka test when one breaks.
 * Include after <cmocka.h>. */
#ifndef PADDOCK_TESTS_RM_LEDGER_FIXTURE_H
#define PADDOCK_TESTS_RM_LEDGER_FIXTURE_H

#include "rm/ledger.h"
#include "rm/ledger_cmd.h"

#include <stdio.h>

static inline void ledger_fx_check(const ledger_t *l)
{
    char msg[160];
    if (ledger_check(l, msg, sizeof msg) != 0)
        fail_msg("invariant broken: %s", msg);
}

static inline struct ledger_result ledger_fx_apply(ledger_t *l, const struct ledger_cmd *c,
                                                   int64_t now)
{
    struct ledger_result r;
    ledger_apply(l, c, now, &r);
    ledger_fx_check(l);
    return r;
}

/* Virtual cluster `vc` of `cap` tokens (VC_SET) at `now`. */
static inline void ledger_fx_vc_set(ledger_t *l, const char *vc, uint32_t cap, int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_VC_SET);
    snprintf(c.vc, sizeof c.vc, "%s", vc);
    c.count = cap;
    assert_int_equal(ledger_fx_apply(l, &c, now).code, 0);
}

#endif
