/* test_ledger_cmd.c - the RM ledger's commands on the wire of its Raft log: every command
 * round-trips through its encoding, and decoding is bounded (split from test_ledger.c). */
#include "common/err.h"
#include "common/mem.h"
#include "rm/arbiter.h"
#include "rm/calib.h"
#include "rm/ledger.h"
#include "rm/ledger_cmd.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_cmd_encoding_roundtrip_and_bounds(void **state)
{
    (void)state;
    struct ledger_cmd cmds[LEDGER_CMD__MAX];
    for (int t = 1; t <= LEDGER_CMD__MAX; t++) {
        struct ledger_cmd *c = &cmds[t - 1];
        ledger_cmd_init(c, (enum ledger_cmd_type)t);
        c->key = (uint64_t)t * 1000003u;
        snprintf(c->name, sizeof c->name, "name-%d", t);
        snprintf(c->vc, sizeof c->vc, "vc-%d", t);
        snprintf(c->rack, sizeof c->rack, "rack");
        snprintf(c->address, sizeof c->address, "tcp://h:%d", t);
        c->job = (uint64_t)t + 7;
        c->boot_id = 99;
        c->cpus_milli = 1500;
        c->mem_mb = 2048;
        c->count = (uint32_t)t;
        c->state = 2;
        c->deadline_ms = 123456;
        c->lease_ms = 5000;
        c->ok = 3;
        c->failed = 4;
    }
    struct enc_buf b;
    enc_buf_init(&b);
    ledger_cmd_encode(&b, cmds, LEDGER_CMD__MAX, 777);
    assert_int_equal(enc_buf_err(&b), 0);
    char msg[128];
    struct ledger_cmd_iter it;
    assert_int_equal(ledger_cmd_iter_init(&it, b.data, b.len, msg, sizeof msg), 0);
    assert_int_equal(it.now, 777);
    assert_int_equal(it.count, LEDGER_CMD__MAX);
    struct ledger_cmd c;
    int n = 0;
    while (ledger_cmd_next(&it, &c, msg, sizeof msg) == 1) {
        const struct ledger_cmd *want = &cmds[n++];
        assert_int_equal(c.type, want->type);
        assert_int_equal(c.key, want->key);
        if (c.type == LEDGER_CMD_NODE_REGISTER) {
            assert_string_equal(c.address, want->address);
            assert_int_equal(c.cpus_milli, 1500);
        }
        if (c.type == LEDGER_CMD_JOB_REGISTER) {
            assert_string_equal(c.vc, want->vc);
            assert_int_equal(c.lease_ms, 5000);
        }
        if (c.type == LEDGER_CMD_TOKEN_REQUEST)
            assert_int_equal(c.count, LEDGER_CMD_TOKEN_REQUEST);
    }
    assert_int_equal(n, LEDGER_CMD__MAX);
    assert_int_equal(ledger_cmd_validate(b.data, b.len, msg, sizeof msg), 0);
    assert_int_equal(b.len % 8, 0);
    /* every truncation short of the commands is refused; the encoder's padding (at most 7
     * zero bytes) may be cut or extended up to 7 bytes, nothing more */
    size_t core = 0;
    while (ledger_cmd_validate(b.data, core, msg, sizeof msg) != 0) {
        assert_true(core < b.len);
        core++;
    }
    assert_true(core + 8 > b.len);
    uint8_t *padded = calloc(1, core + 8);
    assert_non_null(padded);
    memcpy(padded, b.data, core);
    for (size_t pad = 0; pad < 8; pad++)
        assert_int_equal(ledger_cmd_validate(padded, core + pad, msg, sizeof msg), 0);
    assert_int_equal(ledger_cmd_validate(padded, core + 8, msg, sizeof msg), ERR_PARSE);
    padded[core + 3] = 1;
    assert_int_equal(ledger_cmd_validate(padded, core + 4, msg, sizeof msg), ERR_PARSE);
    free(padded);
    /* an absurd count is refused before reading on */
    uint8_t hdr[17];
    memcpy(hdr, b.data, 13);
    memset(hdr + 13, 0xff, 4);
    assert_int_equal(ledger_cmd_validate(hdr, sizeof hdr, msg, sizeof msg), ERR_PARSE);
    enc_buf_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmd_encoding_roundtrip_and_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
