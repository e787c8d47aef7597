/* submit_price.c - the earliest deadline at most a price (issue 25's --max-price). */
#include "tools/submit_price.h"

#include "common/err.h"
#include "common/mem.h"
#include "proto/proto.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define SUBMIT_PRICE_TIMEOUT_MS 5000

int submit_price_deadline(rmclient_t *c, const char *vc, const struct jobdir_shape *sh,
                          double max_price, double *deadline_s, double *price, char *msg,
                          size_t cap)
{
    if (sh->work_ms == 0 || sh->s.width == 0)
        return err_fmt(msg, cap, ERR_INVAL, "the job has no shape to price (no task estimates)");
    char num[8][24];
    snprintf(num[0], sizeof num[0], "0");
    snprintf(num[1], sizeof num[1], "%llu", (unsigned long long)sh->work_ms);
    snprintf(num[2], sizeof num[2], "%llu", (unsigned long long)sh->work_sd_ms);
    snprintf(num[3], sizeof num[3], "%llu", (unsigned long long)sh->path_ms);
    snprintf(num[4], sizeof num[4], "%llu", (unsigned long long)sh->path_sd_ms);
    snprintf(num[5], sizeof num[5], "%u", sh->s.width);
    snprintf(num[6], sizeof num[6], "%d", sh->has_profile ? 1 : 0);
    snprintf(num[7], sizeof num[7], "%u", sh->alpha_milli);
    const char *args[9] = {vc, num[0], num[1], num[2], num[3], num[4], num[5], num[6], num[7]};
    char *text = NULL, why[256];
    int rc = rmclient_admin(c, -1, PROTO_ADMIN_QUOTE, args, sh->s.has_alpha ? 9 : 8,
                            SUBMIT_PRICE_TIMEOUT_MS, &text, why, sizeof why);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "the RM's quote: %s", why);
    json_t *doc = json_loads(text, 0, NULL);
    mem_free(text);
    if (doc == NULL)
        return err_fmt(msg, cap, ERR_PARSE, "the RM's quote is not JSON");
    /* the curve runs from the earliest feasible finish on, the price falling as the deadline
       grows: the first point at most max_price is the earliest such deadline */
    json_t *curve = json_object_get(doc, "price_curve"), *p;
    size_t i;
    double cheapest = -1, cheapest_d = 0;
    rc = ERR_NOTFOUND;
    json_array_foreach(curve, i, p)
    {
        double d = json_number_value(json_object_get(p, "deadline_s"));
        double pr = json_number_value(json_object_get(p, "price_token_s"));
        if (cheapest < 0 || pr < cheapest) {
            cheapest = pr;
            cheapest_d = d;
        }
        if (pr <= max_price) {
            *deadline_s = d;
            *price = pr;
            rc = 0;
            break;
        }
    }
    json_decref(doc);
    if (rc != 0 && cheapest >= 0)
        return err_fmt(msg, cap, rc,
                       "no deadline is priced at most %.1f token-seconds now (the cheapest "
                       "offered: %.1f at %.0fs)",
                       max_price, cheapest, cheapest_d);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "the RM offers no deadline for this job now");
    return 0;
}
