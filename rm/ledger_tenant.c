/* ledger_tenant.c - tenants in the ledger (issue 27): users' roles, grants of virtual clusters,
 * quotas, the audit trail of state-changing commands, and the accounting of finished jobs
 * (issue 25). Pure, like the rest of the ledger: what is recorded comes from the log. */
#include "rm/ledger.h"
#include "rm/ledger_internal.h"

#include "common/err.h"
#include "common/mem.h"

#include <stdio.h>
#include <string.h>

void ledger__tenant_free(ledger_t *l)
{
    mem_free(l->rules);
    mem_free(l->audit);
    mem_free(l->usage);
    l->rules = NULL;
    l->audit = NULL;
    l->usage = NULL;
    l->nrules = l->audit_n = l->audit_head = l->usage_n = l->usage_head = 0;
}

static bool ledger__name_ok(const char *s)
{
    if (s[0] == '\0')
        return false;
    for (const char *p = s; *p != '\0'; p++)
        if ((unsigned char)*p <= ' ' || *p == '"' || *p == '\\' || (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

static struct ledger_rule *ledger__rule_find(const ledger_t *l, const char *user, const char *vc)
{
    for (size_t i = 0; i < l->nrules; i++)
        if (strcmp(l->rules[i].user, user) == 0 && strcmp(l->rules[i].vc, vc) == 0)
            return &l->rules[i];
    return NULL;
}

/* The rule for (user, vc), created empty when absent: NULL with *rc ERR_FULL or ERR_NOMEM. */
static struct ledger_rule *ledger__rule_get(ledger_t *l, const char *user, const char *vc, int *rc)
{
    struct ledger_rule *r = ledger__rule_find(l, user, vc);
    if (r != NULL)
        return r;
    if (l->nrules >= LEDGER_MAX_RULES) {
        *rc = ERR_FULL;
        return NULL;
    }
    if (l->rules == NULL && (l->rules = mem_calloc(LEDGER_MAX_RULES, sizeof *l->rules)) == NULL) {
        *rc = ERR_NOMEM;
        return NULL;
    }
    r = &l->rules[l->nrules++];
    memset(r, 0, sizeof *r);
    snprintf(r->user, sizeof r->user, "%s", user);
    snprintf(r->vc, sizeof r->vc, "%s", vc);
    return r;
}

/* Drops rules that say nothing any more. */
static void ledger__rule_gc(ledger_t *l)
{
    size_t w = 0;
    for (size_t i = 0; i < l->nrules; i++) {
        const struct ledger_rule *r = &l->rules[i];
        if (r->role == 0 && !r->granted && r->max_tokens == 0 && r->max_token_ms_day == 0)
            continue;
        l->rules[w++] = *r;
    }
    l->nrules = w;
}

static void ledger__audit_put(ledger_t *l, const char *who, const char *action, const char *target,
                              int code, const char *detail, size_t detail_len)
{
    if (l->audit == NULL && (l->audit = mem_calloc(LEDGER_AUDIT_CAP, sizeof *l->audit)) == NULL)
        return; /* the trail misses a line rather than the command failing */
    struct ledger_audit *a;
    if (l->audit_n < LEDGER_AUDIT_CAP) {
        a = &l->audit[(l->audit_head + l->audit_n) % LEDGER_AUDIT_CAP];
        l->audit_n++;
    } else {
        a = &l->audit[l->audit_head];
        l->audit_head = (l->audit_head + 1) % LEDGER_AUDIT_CAP;
    }
    memset(a, 0, sizeof *a);
    a->at_ms = l->now;
    snprintf(a->who, sizeof a->who, "%s", who);
    snprintf(a->action, sizeof a->action, "%s", action);
    snprintf(a->target, sizeof a->target, "%s", target);
    a->code = code;
    size_t n = detail_len < sizeof a->detail - 1 ? detail_len : sizeof a->detail - 1;
    if (detail != NULL)
        memcpy(a->detail, detail, n);
    a->detail[n] = '\0';
}

int ledger__tenant_cmd(ledger_t *l, const struct ledger_cmd *c, struct ledger_result *r)
{
    (void)r;
    int rc = 0;
    switch (c->type) {
    case LEDGER_CMD_ROLE_SET: {
        if (!ledger__name_ok(c->name) || c->state > LEDGER_ROLE_ADMIN)
            return ERR_INVAL;
        struct ledger_rule *u = ledger__rule_get(l, c->name, "", &rc);
        if (u == NULL)
            return rc;
        u->role = c->state;
        break;
    }
    case LEDGER_CMD_GRANT_SET:
    case LEDGER_CMD_QUOTA_SET: {
        if (!ledger__name_ok(c->name) || ledger__vc_find(l, c->vc, NULL) == NULL)
            return c->name[0] == '\0' ? ERR_INVAL : ERR_NOTFOUND;
        if (c->type == LEDGER_CMD_GRANT_SET && (strcmp(c->name, "*") == 0 || c->count > 1))
            return ERR_INVAL;
        if (c->type == LEDGER_CMD_QUOTA_SET &&
            (c->count > LEDGER_MAX_TOKENS || c->token_ms > (1ull << 52)))
            return ERR_RANGE;
        struct ledger_rule *g = ledger__rule_get(l, c->name, c->vc, &rc);
        if (g == NULL)
            return rc;
        if (c->type == LEDGER_CMD_GRANT_SET) {
            g->granted = c->count == 1;
        } else {
            g->max_tokens = c->count;
            g->max_token_ms_day = c->token_ms;
        }
        ledger__rule_gc(l);
        if (c->type == LEDGER_CMD_QUOTA_SET) { /* a quota binds the grants at once */
            size_t vci = 0;
            ledger__vc_find(l, c->vc, &vci);
            ledger__arbitrate(l, vci, 0);
        }
        return 0;
    }
    case LEDGER_CMD_AUDIT:
        if (c->name[0] == '\0' || c->state > LEDGER_AUDIT_FAILED)
            return ERR_INVAL;
        return 0; /* ledger__audit_cmd records it */
    default:
        return ERR_INVAL;
    }
    ledger__rule_gc(l);
    return 0;
}

/* The quota rule that applies to user in vc: theirs, else "*"'s. */
static const struct ledger_rule *ledger__quota_rule(const ledger_t *l, const char *user,
                                                    const char *vc)
{
    const struct ledger_rule *q = ledger__rule_find(l, user, vc);
    if (q != NULL && (q->max_tokens != 0 || q->max_token_ms_day != 0))
        return q;
    return ledger__rule_find(l, "*", vc);
}

int ledger__quota_check(const ledger_t *l, const struct ledger_cmd *c, size_t vci, uint32_t need,
                        struct ledger_result *r)
{
    if (c->user[0] == '\0')
        return 0;
    const struct ledger_rule *q = ledger__quota_rule(l, c->user, l->vcs[vci].name);
    if (q == NULL)
        return 0;
    if (q->max_tokens != 0) {
        uint64_t held = 0;
        for (size_t i = 0; i < l->njobs; i++) {
            const struct ledger_job *j = &l->jobs[i];
            if (j->vc == vci && j->state == LEDGER_JOB_ACTIVE && strcmp(j->user, c->user) == 0)
                held += j->tokens > j->minimum ? j->tokens : j->minimum;
        }
        if (held + need > q->max_tokens) {
            r->value = LEDGER_QUOTA_TOKENS;
            r->aux = q->max_tokens;
            return ERR_QUOTA;
        }
    }
    if (q->max_token_ms_day != 0) {
        /* what the user's running jobs there have held so far, and what the ones that ended in
           the last day used (as their JMs counted it) */
        uint64_t used = 0;
        for (size_t i = 0; i < l->njobs; i++) {
            const struct ledger_job *j = &l->jobs[i];
            if (j->vc == vci && j->state == LEDGER_JOB_ACTIVE && strcmp(j->user, c->user) == 0)
                used += ledger_job_held_ms(l, j);
        }
        for (size_t k = 0; k < l->usage_n; k++) {
            const struct ledger_usage *u = &l->usage[(l->usage_head + k) % LEDGER_USAGE_CAP];
            if (u->end_ms > l->now - LEDGER_DAY_MS && strcmp(u->user, c->user) == 0 &&
                strcmp(u->vc, l->vcs[vci].name) == 0)
                used += u->token_ms;
        }
        if (used >= q->max_token_ms_day) {
            r->value = LEDGER_QUOTA_TOKEN_S_DAY;
            r->aux = q->max_token_ms_day;
            return ERR_QUOTA;
        }
    }
    return 0;
}

#define LEDGER__TRIM_USERS                                                                         \
    64 /* users over a quota handled per arbitration (more: the rest wait)                         \
        */

bool ledger__quota_trim(const ledger_t *l, size_t vci, struct arbiter_job *arb, const size_t *pos,
                        size_t n)
{
    const char *vc = l->vcs[vci].name;
    bool any = false;
    for (size_t i = 0; i < l->nrules && !any; i++)
        any = l->rules[i].max_tokens != 0 && strcmp(l->rules[i].vc, vc) == 0;
    if (!any)
        return false;
    struct {
        const char *user;
        uint32_t max;
        uint64_t sum;
    } u[LEDGER__TRIM_USERS];
    size_t nu = 0;
    for (size_t k = 0; k < n; k++) {
        const char *who = l->jobs[pos[k]].user;
        if (who[0] == '\0')
            continue;
        size_t x = 0;
        while (x < nu && strcmp(u[x].user, who) != 0)
            x++;
        if (x == nu) {
            const struct ledger_rule *q = ledger__quota_rule(l, who, vc);
            if (q == NULL || q->max_tokens == 0 || nu == LEDGER__TRIM_USERS)
                continue;
            u[nu].user = who;
            u[nu].max = q->max_tokens;
            u[nu].sum = 0;
            nu++;
        }
        u[x].sum += arb[k].grant;
    }
    bool trimmed = false;
    for (size_t x = 0; x < nu; x++) {
        if (u[x].sum <= u[x].max)
            continue;
        /* the latest jobs give back first: the earlier ones were admitted when it fitted */
        for (size_t k = n; k-- > 0 && u[x].sum > u[x].max;) {
            if (strcmp(l->jobs[pos[k]].user, u[x].user) != 0)
                continue;
            struct arbiter_job *a = &arb[k];
            uint32_t spare = a->grant - a->min_part;
            uint32_t cut =
                (uint64_t)spare < u[x].sum - u[x].max ? spare : (uint32_t)(u[x].sum - u[x].max);
            a->grant -= cut;
            u[x].sum -= cut;
        }
        /* and none of the user's jobs may grow into what was given back */
        for (size_t k = 0; k < n; k++) {
            if (strcmp(l->jobs[pos[k]].user, u[x].user) != 0)
                continue;
            arb[k].width = arb[k].grant;
            arb[k].wanted = arb[k].wanted < arb[k].grant ? arb[k].wanted : arb[k].grant;
        }
        trimmed = true;
    }
    return trimmed;
}

const char *ledger_quota_name(uint64_t kind)
{
    return kind == LEDGER_QUOTA_TOKENS        ? "tokens held at once"
           : kind == LEDGER_QUOTA_TOKEN_S_DAY ? "token-seconds per day"
                                              : "?";
}

static void ledger__job_name(uint64_t id, char *out, size_t cap)
{
    snprintf(out, cap, "j-%012llx", (unsigned long long)(id & 0xffffffffffffull));
}

void ledger__audit_cmd(ledger_t *l, const struct ledger_cmd *c, const struct ledger_result *r)
{
    if (c->user[0] == '\0' && c->type != LEDGER_CMD_AUDIT)
        return; /* the leader's own commands: ticks, liveness, recurring runs */
    char target[LEDGER_ADDR_MAX] = "", detail[512] = "";
    const char *action = NULL;
    int code = r->code;
    switch (c->type) {
    case LEDGER_CMD_JOB_REGISTER:
        action = "submit";
        if (r->code == 0)
            ledger__job_name(r->value, target, sizeof target);
        else
            snprintf(target, sizeof target, "%s", c->name);
        if (r->code == ERR_QUOTA)
            snprintf(detail, sizeof detail, "name %s vc %s: quota %s (%llu) exceeded", c->name,
                     c->vc, ledger_quota_name(r->value), (unsigned long long)r->aux);
        else
            snprintf(detail, sizeof detail, "name %s vc %s deadline %s", c->name, c->vc,
                     c->deadline_ms != 0 ? "yes" : "none");
        break;
    case LEDGER_CMD_JOB_END:
        /* a cancel someone asked for (`job cancel`: "cancelled by USER"), not a JM's last word */
        if (c->state != LEDGER_JOB_CANCELLED || c->text_len < 13 ||
            memcmp(c->text, "cancelled by ", 13) != 0)
            return;
        action = "cancel";
        ledger__job_name(c->job, target, sizeof target);
        break;
    case LEDGER_CMD_JOB_DEADLINE: {
        action = "deadline";
        ledger__job_name(c->job, target, sizeof target);
        const struct ledger_job *j = ledger_job_find(l, c->job);
        if (c->deadline_ms == 0)
            snprintf(detail, sizeof detail, "none");
        else if (j != NULL)
            snprintf(detail, sizeof detail, "%lld ms from submission%s",
                     (long long)(c->deadline_ms - j->submitted_ms),
                     r->code == ERR_ADMISSION ? " (refused: the deadline stays)" : "");
        break;
    }
    case LEDGER_CMD_ROLE_SET:
        action = "role";
        snprintf(target, sizeof target, "%s", c->name);
        snprintf(detail, sizeof detail, "%s",
                 c->state == LEDGER_ROLE_ADMIN  ? "admin"
                 : c->state == LEDGER_ROLE_USER ? "user"
                                                : "none");
        break;
    case LEDGER_CMD_GRANT_SET:
        action = c->count ? "grant" : "revoke";
        snprintf(target, sizeof target, "%s", c->name);
        snprintf(detail, sizeof detail, "vc %s", c->vc);
        break;
    case LEDGER_CMD_QUOTA_SET:
        action = "quota";
        snprintf(target, sizeof target, "%s", c->name);
        snprintf(detail, sizeof detail, "vc %s tokens %u token-s/day %llu", c->vc, c->count,
                 (unsigned long long)(c->token_ms / 1000));
        break;
    case LEDGER_CMD_AUDIT:
        if (r->code != 0)
            return;
        action = c->name;
        snprintf(target, sizeof target, "%s", c->address);
        code = c->state == LEDGER_AUDIT_DENIED   ? ERR_DENIED
               : c->state == LEDGER_AUDIT_FAILED ? ERR_STATE
                                                 : 0;
        ledger__audit_put(l, c->user[0] != '\0' ? c->user : "-", action, target, code, c->text,
                          c->text_len);
        return;
    default:
        return;
    }
    ledger__audit_put(l, c->user, action, target, code, detail, strlen(detail));
}

void ledger__usage_job(ledger_t *l, const struct ledger_job *j, const struct ledger_cmd *end)
{
    if (l->usage == NULL && (l->usage = mem_calloc(LEDGER_USAGE_CAP, sizeof *l->usage)) == NULL)
        return;
    struct ledger_usage *u;
    if (l->usage_n < LEDGER_USAGE_CAP) {
        u = &l->usage[(l->usage_head + l->usage_n) % LEDGER_USAGE_CAP];
        l->usage_n++;
    } else {
        u = &l->usage[l->usage_head];
        l->usage_head = (l->usage_head + 1) % LEDGER_USAGE_CAP;
    }
    memset(u, 0, sizeof *u);
    u->job = j->id;
    memcpy(u->name, j->name, sizeof u->name);
    memcpy(u->user, j->user, sizeof u->user);
    snprintf(u->vc, sizeof u->vc, "%s", j->vc < l->nvcs ? l->vcs[j->vc].name : "?");
    u->state = j->state;
    u->submit_ms = j->submitted_ms;
    u->end_ms = j->finished_ms;
    u->deadline_ms = j->deadline_ms;
    u->token_ms = end != NULL ? end->token_ms : 0;
    u->price_milli = j->price_milli;
}

void ledger__usage_amend(ledger_t *l, const struct ledger_cmd *end)
{
    for (size_t k = l->usage_n; k > 0; k--) {
        struct ledger_usage *u = &l->usage[(l->usage_head + k - 1) % LEDGER_USAGE_CAP];
        if (u->job == end->job) {
            if (u->token_ms == 0)
                u->token_ms = end->token_ms;
            return;
        }
    }
}

/* ---- queries ---- */

size_t ledger_rule_count(const ledger_t *l)
{
    return l->nrules;
}

const struct ledger_rule *ledger_rule_at(const ledger_t *l, size_t i)
{
    return i < l->nrules ? &l->rules[i] : NULL;
}

uint8_t ledger_user_role(const ledger_t *l, const char *user)
{
    const struct ledger_rule *r = ledger__rule_find(l, user, "");
    return r != NULL ? r->role : 0;
}

bool ledger_vc_granted(const ledger_t *l, const char *vc, const char *user)
{
    bool restricted = false;
    for (size_t i = 0; i < l->nrules; i++) {
        const struct ledger_rule *r = &l->rules[i];
        if (r->granted && strcmp(r->vc, vc) == 0) {
            if (strcmp(r->user, user) == 0)
                return true;
            restricted = true;
        }
    }
    return !restricted;
}

size_t ledger_audit_count(const ledger_t *l)
{
    return l->audit_n;
}

const struct ledger_audit *ledger_audit_at(const ledger_t *l, size_t i)
{
    return i < l->audit_n ? &l->audit[(l->audit_head + i) % LEDGER_AUDIT_CAP] : NULL;
}

size_t ledger_usage_count(const ledger_t *l)
{
    return l->usage_n;
}

const struct ledger_usage *ledger_usage_at(const ledger_t *l, size_t i)
{
    return i < l->usage_n ? &l->usage[(l->usage_head + i) % LEDGER_USAGE_CAP] : NULL;
}

/* ---- snapshot section (version 5) ---- */

void ledger__tenant_snap(const ledger_t *l, struct enc_buf *b)
{
    enc_u32(b, (uint32_t)l->njobs);
    for (size_t i = 0; i < l->njobs; i++) {
        enc_str(b, l->jobs[i].user);
        enc_u64(b, l->jobs[i].price_milli);
        enc_u64(b, l->jobs[i].held_ms);
        enc_i64(b, l->jobs[i].held_since_ms);
    }
    enc_u32(b, (uint32_t)l->nrules);
    for (size_t i = 0; i < l->nrules; i++) {
        const struct ledger_rule *r = &l->rules[i];
        enc_str(b, r->user);
        enc_str(b, r->vc);
        enc_u8(b, r->role);
        enc_u8(b, r->granted ? 1 : 0);
        enc_u32(b, r->max_tokens);
        enc_u64(b, r->max_token_ms_day);
    }
    enc_u32(b, (uint32_t)l->audit_n);
    for (size_t k = 0; k < l->audit_n; k++) {
        const struct ledger_audit *a = ledger_audit_at(l, k);
        enc_i64(b, a->at_ms);
        enc_str(b, a->who);
        enc_str(b, a->action);
        enc_str(b, a->target);
        enc_i64(b, a->code);
        enc_str(b, a->detail);
    }
    enc_u32(b, (uint32_t)l->usage_n);
    for (size_t k = 0; k < l->usage_n; k++) {
        const struct ledger_usage *u = ledger_usage_at(l, k);
        enc_u64(b, u->job);
        enc_str(b, u->name);
        enc_str(b, u->user);
        enc_str(b, u->vc);
        enc_u8(b, u->state);
        enc_i64(b, u->submit_ms);
        enc_i64(b, u->end_ms);
        enc_i64(b, u->deadline_ms);
        enc_u64(b, u->token_ms);
        enc_u64(b, u->price_milli);
    }
}

static uint32_t ledger__count(struct enc_reader *r, size_t limit, size_t min_size)
{
    uint32_t n = enc_get_u32(r);
    if (n > limit || (size_t)n * min_size > enc_reader_left(r)) {
        enc_reader_fail(r);
        return 0;
    }
    return n;
}

int ledger__tenant_restore(ledger_t *l, struct enc_reader *r, char *msg, size_t cap)
{
    uint32_t nj = enc_get_u32(r);
    if (enc_reader_err(r) == 0 && nj != l->njobs)
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: %u job owners for %zu jobs", nj, l->njobs);
    for (size_t i = 0; i < l->njobs && enc_reader_err(r) == 0; i++) {
        enc_get_str(r, l->jobs[i].user, sizeof l->jobs[i].user);
        l->jobs[i].price_milli = enc_get_u64(r);
        l->jobs[i].held_ms = enc_get_u64(r);
        l->jobs[i].held_since_ms = enc_get_i64(r);
    }
    uint32_t nr = ledger__count(r, LEDGER_MAX_RULES, 18);
    if (nr > 0 && (l->rules = mem_calloc(LEDGER_MAX_RULES, sizeof *l->rules)) == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
    for (uint32_t i = 0; i < nr && enc_reader_err(r) == 0; i++) {
        struct ledger_rule *x = &l->rules[i];
        enc_get_str(r, x->user, sizeof x->user);
        enc_get_str(r, x->vc, sizeof x->vc);
        x->role = enc_get_u8(r);
        uint8_t g = enc_get_u8(r);
        x->granted = g == 1;
        x->max_tokens = enc_get_u32(r);
        x->max_token_ms_day = enc_get_u64(r);
        if (x->role > LEDGER_ROLE_ADMIN || g > 1 || x->user[0] == '\0')
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad rule %u", i);
        l->nrules++;
    }
    uint32_t na = ledger__count(r, LEDGER_AUDIT_CAP, 24);
    if (na > 0 && (l->audit = mem_calloc(LEDGER_AUDIT_CAP, sizeof *l->audit)) == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
    for (uint32_t i = 0; i < na && enc_reader_err(r) == 0; i++) {
        struct ledger_audit *a = &l->audit[i];
        a->at_ms = enc_get_i64(r);
        enc_get_str(r, a->who, sizeof a->who);
        enc_get_str(r, a->action, sizeof a->action);
        enc_get_str(r, a->target, sizeof a->target);
        int64_t code = enc_get_i64(r);
        enc_get_str(r, a->detail, sizeof a->detail);
        if (code > 0 || code < -1000)
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad audit line %u", i);
        a->code = (int32_t)code;
        l->audit_n++;
    }
    uint32_t nu = ledger__count(r, LEDGER_USAGE_CAP, 55);
    if (nu > 0 && (l->usage = mem_calloc(LEDGER_USAGE_CAP, sizeof *l->usage)) == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
    for (uint32_t i = 0; i < nu && enc_reader_err(r) == 0; i++) {
        struct ledger_usage *u = &l->usage[i];
        u->job = enc_get_u64(r);
        enc_get_str(r, u->name, sizeof u->name);
        enc_get_str(r, u->user, sizeof u->user);
        enc_get_str(r, u->vc, sizeof u->vc);
        u->state = enc_get_u8(r);
        u->submit_ms = enc_get_i64(r);
        u->end_ms = enc_get_i64(r);
        u->deadline_ms = enc_get_i64(r);
        u->token_ms = enc_get_u64(r);
        u->price_milli = enc_get_u64(r);
        l->usage_n++;
    }
    return 0;
}
