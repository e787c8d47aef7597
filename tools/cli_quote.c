/* cli_quote.c - `paddock quote SPEC.json [--deadline DURATION] [--json] [--cluster DIR | --rm
 * ENDPOINTS --keys DIR] [--jobs-dir DIR]`: the RM's admission check without submitting (MRM §3,
 * §4.2; rm/arbiter.h).
 *
 * Validates the spec as `paddock submit` does (against the largest node the RM knows), computes
 * the same shape (jm/shape.h in the virtual cluster's sized tokens, from the job's profile when
 * an earlier run left one) and asks the RM's "quote" admin query. Prints the verdict for the
 * deadline (--deadline, else the spec's), the earliest feasible finish (median and the
 * conservative bound a resubmission should ask for), the fewest tokens that meet the deadline,
 * the job's list schedule and the cluster's calibration (rm/calib.h) the bound comes from, and
 * MRM's price-deadline curve in token-seconds. --json prints the RM's document with
 * "list_schedule_s" (the job's simulated makespan at the cluster's tokens) added.
 *
 * Exit codes: 0 answered (admissible, or no deadline asked), 3 the deadline asked would be
 * refused (as `paddock submit` would), 1 the spec or the RM failed, 2 usage. */
#include "common/err.h"
#include "common/mem.h"
#include "jm/shape.h"
#include "jm/spec.h"
#include "rm/ledger.h"
#include "rm/rmclient.h"
#include "tools/cli.h"
#include "tools/jobdir.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE_RM_TIMEOUT_MS 5000
#define QUOTE_EXIT_REFUSED  3

struct quote_opts {
    struct jobdir_opts d;
    const char *spec;
    int64_t deadline_ms; /* --deadline; 0: the spec's */
    bool json;
};

static int quote__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock quote SPEC.json [--deadline DURATION] [--json]\n"
            "                     [--cluster DIR | --rm ENDPOINTS --keys DIR] [--jobs-dir DIR]\n"
            "  --deadline D   the deadline to check, from submission (90s, 3m10s, 1h; default: "
            "the spec's)\n"
            "  --jobs-dir DIR where job directories (and, beside them, profiles) live\n"
            "exit 0: admissible or no deadline asked; 3: the deadline would be refused\n");
    return 2;
}

static int quote__parse(int argc, char **argv, struct quote_opts *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--deadline") == 0 && has) {
            char msg[256] = "";
            const char *d = argv[++i];
            if (jobdir_parse_duration(d, &o->deadline_ms, msg, sizeof msg) != 0 ||
                o->deadline_ms <= 0) {
                fprintf(stderr, "paddock quote: --deadline '%s': %s\n", d,
                        msg[0] != '\0' ? msg : "must be positive");
                return 2;
            }
        } else if (jobdir_opts_take(&o->d, argc, argv, &i)) {
            continue;
        } else if (a[0] != '-' && o->spec == NULL) {
            o->spec = a;
        } else {
            return quote__usage();
        }
    }
    if (o->spec == NULL)
        return quote__usage();
    jobdir_opts_defaults(&o->d);
    return 0;
}

static const char *quote__dur(json_t *doc, const char *k, char *out, size_t cap)
{
    json_t *v = json_object_get(doc, k);
    if (!json_is_number(v)) {
        snprintf(out, cap, "-");
        return out;
    }
    return jobdir_format_duration(json_number_value(v), false, out, cap);
}

/* The job's own spread x 1000 as the ledger takes it (0: none). */
static uint32_t quote__spread_milli(const struct jobdir_shape *sh)
{
    if (!sh->s.has_alpha || !(sh->s.spread >= 1))
        return 0;
    double m = sh->s.spread * 1000.0 + 0.5;
    return m > LEDGER_SPREAD_MAX ? LEDGER_SPREAD_MAX : (uint32_t)m;
}

/* How many runs jm/shape's spread took (shape_place_sim's budget of simulated tasks). */
static long quote__spread_runs(const struct spec *spec)
{
    long per = SHAPE_PATH_TASKS / (spec->ntasks > 0 ? (long)spec->ntasks : 1);
    return per > SHAPE_PATH_RUNS    ? SHAPE_PATH_RUNS
           : per < SHAPE_ALPHA_RUNS ? SHAPE_ALPHA_RUNS
                                    : per;
}

static void quote__print(const struct spec *spec, const struct jobdir_shape *sh, json_t *doc)
{
    char a[JOBDIR_DURATION_SIZE], b[JOBDIR_DURATION_SIZE];
    printf("job \"%s\" (%zu tasks), virtual cluster %s: %lld tokens of %g CPU / %lld MiB\n",
           spec->name, spec->ntasks,
           json_string_value(json_object_get(doc, "virtual_cluster")) != NULL
               ? json_string_value(json_object_get(doc, "virtual_cluster"))
               : spec->virtual_cluster,
           (long long)jobdir_num(doc, "capacity", 0), jobdir_num(doc, "token_cpu", sh->token_cpu),
           (long long)jobdir_num(doc, "token_mem_mb", (double)sh->token_mem_mb));
    printf("  shape           work %.0f token-s (sd %.0f), critical path %s (sd %s), width %u; "
           "from %s\n",
           sh->s.work, sh->s.work_sd, jobdir_format_duration(sh->s.path, false, a, sizeof a),
           jobdir_format_duration(sh->s.path_sd, false, b, sizeof b), sh->s.width,
           sh->has_profile ? "the profile of an earlier run" : "the spec's estimates");
    json_t *dl = json_object_get(doc, "deadline_s");
    char d[JOBDIR_DURATION_SIZE], f[JOBDIR_DURATION_SIZE], f50[JOBDIR_DURATION_SIZE];
    if (json_is_number(dl) && json_number_value(dl) > 0) {
        bool admit = json_is_true(json_object_get(doc, "admit"));
        printf("  deadline %-6s %s: finish p50 %s, conservative %s\n",
               jobdir_format_duration(json_number_value(dl), false, d, sizeof d),
               admit ? "admitted" : "REFUSED (it or an admitted job would miss)",
               quote__dur(doc, "finish_p50_s", f50, sizeof f50),
               quote__dur(doc, "finish_s", f, sizeof f));
    } else {
        printf("  deadline        none asked\n");
    }
    json_t *eff = json_object_get(doc, "eff_s");
    if (json_is_number(eff))
        printf("  earliest finish %s (p50 %s): the deadline to submit with\n",
               jobdir_format_duration(json_number_value(eff), true, f, sizeof f),
               quote__dur(doc, "eff_p50_s", f50, sizeof f50));
    else
        printf("  earliest finish none: the virtual cluster cannot take it now (use "
               "--best-effort)\n");
    printf("  minimum tokens  %lld\n", (long long)jobdir_num(doc, "min_tokens", 0));
    if (sh->list_s > 0)
        printf("  list schedule   %s at %u tokens (the JM's simulator, bottom-level priority)\n",
               jobdir_format_duration(sh->list_s, false, f, sizeof f),
               sh->capacity < sh->s.width ? sh->capacity : sh->s.width);
    json_t *cal = json_object_get(doc, "calibration");
    uint32_t spread_milli = quote__spread_milli(sh);
    if (spread_milli != 0)
        printf("  own spread      q%.0f / p50 %.3f of its simulated finish (%ld runs from the "
               "profile)\n",
               SHAPE_SPREAD_Q * 100, spread_milli / 1000.0, quote__spread_runs(spec));
    if (json_is_object(cal) && spread_milli != 0 && jobdir_num(doc, "own_runs", 0) > 0)
        printf("  conservative    the model x %.3g (its own spread x the larger of the cluster's "
               "q%.0f of actual / (predicted x own spread) and the median of it over its %lld "
               "earlier runs x what that rule missed, rm/calib.h)\n",
               jobdir_num(doc, "job_bound_factor", 0), jobdir_num(cal, "quantile", 0) * 100,
               (long long)jobdir_num(doc, "own_runs", 0));
    else if (json_is_object(cal) && spread_milli != 0)
        printf("  conservative    the model x %.3g (its own spread x %.3g, the cluster's q%.0f of "
               "actual / (predicted x own spread) over %lld finished jobs, prior %.3g)\n",
               jobdir_num(doc, "job_bound_factor", 0), jobdir_num(cal, "own_factor", 0),
               jobdir_num(cal, "quantile", 0) * 100, (long long)jobdir_num(cal, "own_outcomes", 0),
               jobdir_num(cal, "prior_own_factor", 0));
    else if (json_is_object(cal))
        printf("  conservative    the model x %.3g (the cluster's q%.0f of actual / predicted "
               "over %lld finished jobs, prior %.3g)%s\n",
               jobdir_num(cal, "bound_factor", 0), jobdir_num(cal, "quantile", 0) * 100,
               (long long)jobdir_num(cal, "outcomes", 0), jobdir_num(cal, "prior_bound_factor", 0),
               sh->has_profile ? " + 1.645 sd of the profile" : "");
    else
        printf("  conservative    mean + %.3g sd of work and critical path\n",
               jobdir_num(doc, "k", 0));
    json_t *curve = json_object_get(doc, "price_curve");
    if (json_array_size(curve) == 0)
        return;
    printf("price-deadline curve (MRM §4.2; price in token-seconds, falling with the slack):\n");
    printf("  %10s %8s %14s\n", "DEADLINE", "SLACK", "PRICE");
    size_t i;
    json_t *p;
    json_array_foreach(curve, i, p)
    {
        printf("  %10s %8.2f %14.1f\n", quote__dur(p, "deadline_s", d, sizeof d),
               jobdir_num(p, "slack", 0), jobdir_num(p, "price_token_s", 0));
    }
}

static int quote_main(int argc, char **argv)
{
    struct quote_opts o;
    int rc = quote__parse(argc, argv, &o);
    if (rc != 0)
        return rc;
    struct spec_limits lim;
    spec_limits_default(&lim);
    struct spec *spec = NULL;
    char msg[1024];
    /* the spec first, so a bad one is refused before any cluster is needed */
    if (spec_load(o.spec, &lim, &spec, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock quote: %s: %s\n", o.spec, msg);
        return 1;
    }
    spec_destroy(&spec);
    rmclient_t *c = NULL;
    if (rmclient_open(&c, o.d.cluster, o.d.rm, o.d.keys, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock quote: %s\n", msg);
        return 1;
    }
    struct jobdir_cluster k;
    jobdir_cluster_ask(c, &k);
    jobdir_cluster_limits(&k, &lim);
    if (spec_load(o.spec, &lim, &spec, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock quote: %s: %s\n", o.spec, msg);
        jobdir_cluster_close(&k);
        rmclient_destroy(&c);
        return 1;
    }
    char root[JOBDIR_PATH], profiles[JOBDIR_PATH + 64];
    const char *pdir = NULL;
    bool have_root = jobdir_root(&o.d, false, root, sizeof root, msg, sizeof msg) == 0;
    if (!have_root)
        root[0] = '\0';
    if ((have_root || (o.d.cluster != NULL && o.d.rm == NULL && o.d.jobs_dir == NULL)) &&
        jobdir_profile_dir(&o.d, root, profiles, sizeof profiles) == 0)
        pdir = profiles;
    struct jobdir_shape sh;
    rc = jobdir_shape(&k, spec, pdir, &sh, msg, sizeof msg);
    jobdir_cluster_close(&k);
    if (rc != 0) {
        fprintf(stderr, "paddock quote: %s: %s\n", o.spec, msg);
        rmclient_destroy(&c);
        spec_destroy(&spec);
        return 1;
    }
    int64_t deadline_ms = o.deadline_ms;
    if (deadline_ms == 0 && spec->has_deadline)
        deadline_ms = (int64_t)(spec->deadline_s * 1000.0 + 0.5);
    char num[9][24];
    snprintf(num[0], sizeof num[0], "%lld", (long long)deadline_ms);
    snprintf(num[1], sizeof num[1], "%llu", (unsigned long long)sh.work_ms);
    snprintf(num[2], sizeof num[2], "%llu", (unsigned long long)sh.work_sd_ms);
    snprintf(num[3], sizeof num[3], "%llu", (unsigned long long)sh.path_ms);
    snprintf(num[4], sizeof num[4], "%llu", (unsigned long long)sh.path_sd_ms);
    snprintf(num[5], sizeof num[5], "%u", sh.s.width);
    snprintf(num[6], sizeof num[6], "%d", sh.has_profile ? 1 : 0);
    snprintf(num[7], sizeof num[7], "%u", sh.alpha_milli);
    /* the job's own spread (jm/shape.h: from its profile; a spec alone has none) */
    uint32_t spread_milli = quote__spread_milli(&sh);
    snprintf(num[8], sizeof num[8], "%u", spread_milli);
    const char *args[11] = {spec->virtual_cluster,
                            num[0],
                            num[1],
                            num[2],
                            num[3],
                            num[4],
                            num[5],
                            num[6],
                            num[7],
                            num[8],
                            spec->name};
    /* with a spread, its name: the RM bounds it by its own earlier runs as at submit */
    size_t nargs = !sh.s.has_alpha ? 8 : spread_milli != 0 ? 11 : 9;
    char *text = NULL;
    rc = rmclient_admin(c, -1, PROTO_ADMIN_QUOTE, args, nargs, QUOTE_RM_TIMEOUT_MS, &text, msg,
                        sizeof msg);
    rmclient_destroy(&c);
    if (rc != 0) {
        fprintf(stderr, "paddock quote: the RM: %s\n", msg);
        spec_destroy(&spec);
        return 1;
    }
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    if (doc == NULL) {
        fprintf(stderr, "paddock quote: bad reply from the RM: %s\n", jerr.text);
        mem_free(text);
        spec_destroy(&spec);
        return 1;
    }
    if (o.json) {
        /* the RM's document, with the job's own list schedule beside it */
        if (sh.list_s > 0)
            json_object_set_new(doc, "list_schedule_s", json_real(sh.list_s));
        char *out = json_dumps(doc, JSON_COMPACT | CLI_JSON_REALS);
        printf("%s\n", out != NULL ? out : text);
        free(out);
    } else
        quote__print(spec, &sh, doc);
    bool refused = deadline_ms > 0 && !json_is_true(json_object_get(doc, "admit"));
    json_decref(doc);
    mem_free(text);
    spec_destroy(&spec);
    return refused ? QUOTE_EXIT_REFUSED : 0;
}

CLI_COMMAND("quote", "admission check without submitting: earliest finish, price-deadline curve",
            quote_main, quote__usage)
