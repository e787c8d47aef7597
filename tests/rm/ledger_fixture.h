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

/* c as a replica applies it: encoded as a log entry and decoded again into *d, whose strings
 * point into *buf (enc_buf_close it after reading d). */
static inline void ledger_fx_roundtrip(const struct ledger_cmd *c, struct enc_buf *buf,
                                       struct ledger_cmd *d)
{
    enc_buf_init(buf);
    ledger_cmd_encode(buf, c, 1, 3);
    char msg[160];
    struct ledger_cmd_iter it;
    assert_int_equal(ledger_cmd_iter_init(&it, buf->data, buf->len, msg, sizeof msg), 0);
    assert_int_equal(ledger_cmd_next(&it, d, msg, sizeof msg), 1);
}

#endif
