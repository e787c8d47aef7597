/* journal.c - see journal.h. */
#include "jm/journal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/proto.h"

void journal_init(struct journal *jr)
{
    memset(jr, 0, sizeof *jr);
    jr->version = JOURNAL_VERSION;
}

void journal_close(struct journal *jr)
{
    mem_free(jr->recs);
    journal_init(jr);
}

static int journal__state(const char *name)
{
    for (int s = 0; s < PROTO_TASK_STATE_COUNT; s++)
        if (strcmp(proto_task_state_name((proto_task_state_t)s), name) == 0)
            return s;
    return -1;
}

static int journal__num(const json_t *o, const char *key, double *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 0;
}

static int journal__str(const json_t *o, const char *key, char *out, size_t cap, int cut)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s || (!cut && strlen(s) >= cap))
        return -1;
    snprintf(out, cap, "%s", s);
    return 0;
}

/* One attempt line into *r; the field at fault in *what on failure. */
static int journal__rec(const json_t *o, struct journal_rec *r, const char **what)
{
    memset(r, 0, sizeof *r);
    double attempt, exit_code, sig, rss;
    char cls[32], state[32];
    if (journal__str(o, "task", r->task, sizeof r->task, 0) != 0 || !r->task[0])
        return *what = "task", -1;
    if (journal__num(o, "attempt", &attempt) != 0 || attempt < 1 || attempt > UINT32_MAX ||
        !json_is_integer(json_object_get(o, "attempt")))
        return *what = "attempt", -1;
    r->attempt = (uint32_t)attempt;
    if (journal__str(o, "node", r->node, sizeof r->node, 0) != 0)
        return *what = "node", -1;
    if (journal__str(o, "class", cls, sizeof cls, 0) != 0 ||
        (strcmp(cls, "regular") != 0 && strcmp(cls, "opportunistic") != 0))
        return *what = "class", -1;
    r->opportunistic = strcmp(cls, "opportunistic") == 0;
    if (journal__num(o, "queued_s", &r->queued_s) != 0)
        return *what = "queued_s", -1;
    if (journal__num(o, "start_s", &r->start_s) != 0)
        return *what = "start_s", -1;
    if (journal__num(o, "end_s", &r->end_s) != 0)
        return *what = "end_s", -1;
    if (journal__str(o, "state", state, sizeof state, 0) != 0 ||
        (r->state = journal__state(state)) < 0 ||
        !proto_task_state_terminal((proto_task_state_t)r->state))
        return *what = "state", -1;
    /* The rest are informative: an older writer may lack them. */
    r->exit_code = journal__num(o, "exit", &exit_code) == 0 ? (int)exit_code : -1;
    r->signal = journal__num(o, "signal", &sig) == 0 ? (int)sig : 0;
    if (journal__num(o, "cpu_s", &r->cpu_s) != 0)
        r->cpu_s = 0;
    r->rss_kb = journal__num(o, "max_rss_kb", &rss) == 0 && rss > 0 ? (uint64_t)rss : 0;
    (void)journal__str(o, "reason", r->reason, sizeof r->reason, 1);
    return 0;
}

static int journal__is_header(const json_t *o)
{
    return json_object_get(o, "format") != NULL;
}

static int journal__header(const json_t *o, struct journal *jr, size_t line, char *msg, size_t cap)
{
    const char *fmt = json_string_value(json_object_get(o, "format"));
    const json_t *v = json_object_get(o, "version");
    if (!fmt || strcmp(fmt, "paddock-journal") != 0 || !json_is_integer(v) ||
        json_integer_value(v) < 2)
        return err_fmt(msg, cap, ERR_PARSE, "journal line %zu: not a paddock-journal header", line);
    if (json_integer_value(v) > JOURNAL_VERSION)
        return err_fmt(msg, cap, ERR_VERSION,
                       "journal version %lld is newer than this job manager reads (%d)",
                       (long long)json_integer_value(v), JOURNAL_VERSION);
    jr->version = (int)json_integer_value(v);
    const char *id = json_string_value(json_object_get(o, "job_id"));
    if (id && strlen(id) < sizeof jr->job_id)
        snprintf(jr->job_id, sizeof jr->job_id, "%s", id);
    const json_t *st = json_object_get(o, "started_ms");
    jr->started_ms = json_is_integer(st) ? (int64_t)json_integer_value(st) : 0;
    return 0;
}

int journal_parse(const char *text, size_t len, struct journal *jr, char *msg, size_t cap)
{
    journal_init(jr);
    if (msg && cap)
        msg[0] = '\0';
    size_t off = 0, line = 0, caprecs = 0;
    int rc = 0;
    while (off < len) {
        line++;
        const char *p = text + off;
        const char *nl = memchr(p, '\n', len - off);
        size_t n = nl ? (size_t)(nl - p) : len - off;
        int last = !nl || (size_t)(nl - text) + 1 == len;
        if (n > JOURNAL_MAX_LINE) {
            if (!nl) { /* a torn line cannot be this long either way: drop it */
                jr->torn = 1;
                snprintf(jr->torn_why, sizeof jr->torn_why, "line %zu: %zu bytes, no newline", line,
                         n);
                break;
            }
            rc = err_fmt(msg, cap, ERR_TOOBIG, "journal line %zu: %zu bytes (at most %d)", line, n,
                         JOURNAL_MAX_LINE);
            goto fail;
        }
        if (!nl) {
            jr->torn = 1;
            snprintf(jr->torn_why, sizeof jr->torn_why,
                     "line %zu: %zu bytes without a newline (a write cut short)", line, n);
            break;
        }
        json_error_t e;
        json_t *o = n > 0 ? json_loadb(p, n, JSON_REJECT_DUPLICATES, &e) : NULL;
        if (!json_is_object(o)) {
            json_decref(o);
            if (last) {
                jr->torn = 1;
                snprintf(jr->torn_why, sizeof jr->torn_why, "line %zu: not a JSON object", line);
                break;
            }
            rc = err_fmt(msg, cap, ERR_PARSE, "journal line %zu: not a JSON object (%s)", line,
                         n > 0 ? e.text : "empty line");
            goto fail;
        }
        if (journal__is_header(o)) {
            if (line != 1) {
                json_decref(o);
                rc = err_fmt(msg, cap, ERR_PARSE, "journal line %zu: a header after the first line",
                             line);
                goto fail;
            }
            rc = journal__header(o, jr, line, msg, cap);
            json_decref(o);
            if (rc)
                goto fail;
        } else {
            if (line == 1)
                jr->version = 1; /* written before the header existed */
            if (jr->nrecs == caprecs) {
                size_t nc = caprecs ? caprecs * 2 : 64;
                struct journal_rec *nr = mem_reallocarray(jr->recs, nc, sizeof *nr);
                if (!nr) {
                    json_decref(o);
                    rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory reading the journal");
                    goto fail;
                }
                jr->recs = nr;
                caprecs = nc;
            }
            const char *what = "";
            int bad = journal__rec(o, &jr->recs[jr->nrecs], &what);
            json_decref(o);
            if (bad) {
                rc = err_fmt(msg, cap, ERR_PARSE,
                             "journal line %zu: an attempt without a valid "
                             "\"%s\"",
                             line, what);
                goto fail;
            }
            jr->nrecs++;
        }
        off += n + 1;
        jr->good_len = off;
    }
    return 0;
fail:
    journal_close(jr);
    return rc;
}

int journal_header(char *buf, size_t cap, const char *job_id, int64_t started_ms)
{
    if (!job_id || strlen(job_id) >= JOURNAL_JOB_ID_MAX)
        return ERR_INVAL;
    for (const char *c = job_id; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            return ERR_INVAL;
    int n = snprintf(buf, cap,
                     "{\"format\":\"paddock-journal\",\"version\":%d,\"job_id\":\"%s\","
                     "\"started_ms\":%lld}\n",
                     JOURNAL_VERSION, job_id, (long long)started_ms);
    if (n < 0 || (size_t)n >= cap)
        return ERR_TOOBIG;
    return n;
}
