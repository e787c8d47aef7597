/* fuzz_rm_ledger.c - libFuzzer target for the RM's two decoders of stored bytes: log entries
 * (ledger_cmd) and snapshots (ledger_restore). Whatever the bytes: no crash, no unbounded
 * allocation, a decoded entry applied command by command keeps the ledger's invariants, and a
 * snapshot that restores passes them and re-encodes to a snapshot that restores again. */
#include "rm/ledger.h"
#include "rm/ledger_cmd.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[160];
    /* as a log entry, over a ledger with some state */
    if (ledger_cmd_validate(data, size, msg, sizeof msg) == 0) {
        ledger_t *l = ledger_new();
        if (l == NULL)
            return 0;
        struct ledger_cmd c;
        ledger_cmd_init(&c, LEDGER_CMD_VC_SET);
        memcpy(c.vc, "default", 8);
        c.count = 10;
        ledger_apply(l, &c, 0, NULL);
        struct ledger_cmd_iter it;
        ledger_cmd_iter_init(&it, data, size, msg, sizeof msg);
        while (ledger_cmd_next(&it, &c, msg, sizeof msg) == 1) {
            ledger_apply(l, &c, it.now, NULL);
            if (ledger_check(l, msg, sizeof msg) != 0)
                abort();
        }
        ledger_destroy(&l);
    }
    /* as a snapshot */
    ledger_t *r = NULL;
    if (ledger_restore(data, size, &r, msg, sizeof msg) == 0) {
        if (ledger_check(r, msg, sizeof msg) != 0)
            abort();
        struct enc_buf b;
        enc_buf_init(&b);
        ledger_snapshot(r, &b);
        ledger_t *again = NULL;
        if (enc_buf_err(&b) == 0 && ledger_restore(b.data, b.len, &again, msg, sizeof msg) != 0)
            abort();
        ledger_destroy(&again);
        enc_buf_close(&b);
        ledger_destroy(&r);
    }
    return 0;
}
