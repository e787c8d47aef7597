/* fuzz_corpus.c - writes seed inputs for fuzz_rm_ledger: a log entry with every command type
 * and a snapshot of a ledger holding nodes, virtual clusters, jobs and idempotency keys.
 * usage: fuzz-rm-corpus DIR */
#include "rm/ledger.h"
#include "rm/ledger_cmd.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int write_file(const char *dir, const char *name, const struct enc_buf *b)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return 1;
    fwrite(b->data, 1, b->len, f);
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz-rm-corpus DIR\n");
        return 2;
    }
    mkdir(argv[1], 0700);
    struct ledger_cmd cmds[LEDGER_CMD__MAX];
    for (int t = 1; t <= LEDGER_CMD__MAX; t++) {
        struct ledger_cmd *c = &cmds[t - 1];
        ledger_cmd_init(c, (enum ledger_cmd_type)t);
        c->key = (uint64_t)t;
        snprintf(c->name, sizeof c->name, "pn-%d", t % 3);
        snprintf(c->vc, sizeof c->vc, "default");
        snprintf(c->address, sizeof c->address, "tcp://127.0.0.1:7000");
        c->job = 1;
        c->cpus_milli = 2000;
        c->mem_mb = 1024;
        c->count = 3;
        c->state = 2;
        c->lease_ms = 1000;
        c->ok = 1;
        if (t >= LEDGER_CMD_RECUR_ADD) { /* recurring jobs: a spec, outputs, arrays */
            static const uint32_t vals[3] = {1000, 2500, 500};
            snprintf(c->name, sizeof c->name, "etl");
            c->period_ms = 2000;
            c->deadline_ms = 1500;
            c->period = 1;
            c->state = 1;
            c->count = 0;
            c->text = "{\"version\": 1, \"name\": \"etl\", \"tasks\": []}";
            c->text_len = (uint32_t)strlen(c->text);
            c->text2 = "/data/out";
            c->text2_len = 9;
            c->vals = vals;
            c->nvals = 3;
            c->vals2 = vals;
            c->nvals2 = 2;
            c->width = 1000;
            c->cpus_milli = 1000;
            c->mem_mb = 0;
        }
        snprintf(c->user, sizeof c->user, "alice"); /* entry version 5: who asked */
        if (t >= LEDGER_CMD_ROLE_SET) {             /* tenants: a grant, a quota, an audit line */
            c->count = t == LEDGER_CMD_QUOTA_SET ? 4 : 1;
            c->token_ms = 60000;
            c->state = 1;
        }
        if (t == LEDGER_CMD_JOB_REGISTER) {
            snprintf(c->recurring, sizeof c->recurring, "etl");
            c->period = 1;
            c->text = "/data/out";
            c->text_len = 9;
        }
    }
    struct enc_buf b;
    enc_buf_init(&b);
    ledger_cmd_encode(&b, cmds, LEDGER_CMD__MAX, 1000);
    int rc = write_file(argv[1], "entry", &b);
    ledger_t *l = ledger_new();
    for (int round = 0; round < 3; round++) {
        for (int t = 0; t < LEDGER_CMD__MAX; t++) {
            cmds[t].key += 100;
            ledger_apply(l, &cmds[t], 1000 + round * 500, NULL);
        }
    }
    enc_buf_close(&b);
    enc_buf_init(&b);
    ledger_snapshot(l, &b);
    rc |= write_file(argv[1], "snapshot", &b);
    enc_buf_close(&b);
    ledger_destroy(&l);
    return rc;
}
