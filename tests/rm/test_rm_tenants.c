/* test_rm_tenants.c - identity from the key and roles at the RM (issue 27), without root: a local
 * cluster whose allow-list also holds a second user's key (named so that no Unix account has
 * it). The RM says who each key is; the user cannot cancel or re-deadline the admin's job,
 * change the replica set, set quotas or grants, or submit to a virtual cluster granted to
 * someone else, nor submit at all without a Unix account; each refusal says why, is counted by
 * kind in rm status, changes nothing and is in the audit trail, where the user sees only their
 * own lines. (Tasks running as their submitter need root: tests/deploy/test_tenants.sh.)
 * Skipped when paddock-pn or paddock-jm is not built. Stops only its own cluster's daemons. */
#include "common/curve.h"
#include "tests/rm/rm_harness.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char user[64], user_dir[600], spec[600], job[64];

/* Copies src to dst with the [security] section replaced. 0 or -1. */
static int client_conf(const char *src, const char *dst, const char *keys, const char *name)
{
    FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
    int rc = in != NULL && out != NULL ? 0 : -1;
    char line[1024];
    while (rc == 0 && fgets(line, sizeof line, in) != NULL) {
        if (strncmp(line, "[security]", 10) == 0)
            break;
        fputs(line, out);
    }
    if (rc == 0)
        fprintf(out, "[security]\nkeys_dir = %s\nkey_name = %s\n", keys, name);
    if (in != NULL)
        fclose(in);
    if (out != NULL && fclose(out) != 0)
        rc = -1;
    return rc;
}

static int group_setup(void **state)
{
    (void)state;
    char path[1200], msg[256];
    if (rm_harness_init("tenants") != 0)
        return -1;
    snprintf(path, sizeof path, "%s/paddock-pn", rm_harness_bin());
    if (access(path, X_OK) != 0)
        return 0;
    snprintf(path, sizeof path, "%s/paddock-jm", rm_harness_bin());
    if (access(path, X_OK) != 0)
        return 0;
    const char *dir = rm_harness_dir();
    if (rm_harness_cluster("up --rm 1 --pn 1 --pn-cpus 2") != 0)
        return -1;
    /* the second user, as docs/deploy.md adds one: her key, the servers' key under her name,
       her public key in the servers' allow-list (re-read within a second) */
    snprintf(user, sizeof user, "pdk-nouser-%ld", (long)getpid());
    snprintf(user_dir, sizeof user_dir, "%s/%s", dir, user);
    char keys[700];
    snprintf(keys, sizeof keys, "%s/keys", user_dir);
    if (mkdir(user_dir, 0700) != 0 || curve_keygen(keys, user, false, msg, sizeof msg) != 0)
        return -1;
    char cmd[4000];
    snprintf(cmd, sizeof cmd,
             "cp '%s/keys/paddock.pub' '%s/%s.pub' && cp '%s/allow/%s.pub' '%s/keys/allow/'", dir,
             keys, user, keys, user, dir);
    if (system(cmd) != 0)
        return -1;
    char src[700], dst[700];
    snprintf(src, sizeof src, "%s/cluster.conf", dir);
    snprintf(dst, sizeof dst, "%s/cluster.conf", user_dir);
    if (client_conf(src, dst, keys, user) != 0)
        return -1;
    snprintf(spec, sizeof spec, "%s/long.json", dir);
    FILE *f = fopen(spec, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "{\"version\":1,\"name\":\"long\",\"tasks\":["
               "{\"id\":\"a\",\"cmd\":[\"sleep\",\"60\"],\"runtime_s\":60}]}\n");
    fclose(f);
    sleep(1); /* zauth and the RM read allow/ again when it changed, within a second */
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini();
    return 0;
}

static void need_cluster(void)
{
    if (user[0] == '\0')
        skip();
}

static void test_identity(void **state)
{
    (void)state;
    need_cluster();
    json_t *w = rm_harness_json("user whoami --json --cluster %s", user_dir);
    assert_non_null(w);
    assert_string_equal(json_string_value(json_object_get(w, "user")), user);
    assert_string_equal(json_string_value(json_object_get(w, "role")), "user");
    json_decref(w);
    w = rm_harness_json("user whoami --json --cluster %s", rm_harness_dir());
    assert_non_null(w);
    assert_string_equal(json_string_value(json_object_get(w, "user")), "paddock");
    assert_string_equal(json_string_value(json_object_get(w, "role")), "admin");
    json_decref(w);
}

static json_int_t denied(const char *what)
{
    json_t *st = rm_harness_json("rm status --json --cluster %s", rm_harness_dir());
    json_t *r = json_object_get(json_array_get(json_object_get(st, "replicas"), 0), "rejected");
    json_int_t n = json_integer_value(json_object_get(json_object_get(r, "denied_by"), what));
    json_decref(st);
    return n;
}

static void test_refusals(void **state)
{
    (void)state;
    need_cluster();
    const char *dir = rm_harness_dir();
    json_t *r = rm_harness_json("submit %s --deadline 10m --json --cluster %s", spec, dir);
    assert_non_null(r);
    snprintf(job, sizeof job, "%s", json_string_value(json_object_get(r, "job_id")));
    json_decref(r);
    /* the user: each refused, counted, nothing changed */
    assert_int_equal(rm_harness_run("job cancel %s --cluster %s", job, user_dir), 1);
    assert_int_equal(rm_harness_run("job deadline %s 20m --cluster %s", job, user_dir), 1);
    assert_int_equal(rm_harness_run("rm remove 1 --cluster %s", user_dir), 1);
    assert_int_equal(
        rm_harness_run("user quota %s default --tokens 100 --cluster %s", user, user_dir), 1);
    assert_int_equal(denied("cancel"), 1);
    assert_int_equal(denied("deadline"), 1);
    assert_int_equal(denied("membership"), 1);
    assert_int_equal(denied("tenants"), 1);
    json_t *show = rm_harness_json("job show %s --json --cluster %s", job, dir);
    assert_non_null(show);
    json_t *rm = json_object_get(show, "rm");
    assert_string_equal(json_string_value(json_object_get(rm, "state")), "active");
    assert_string_equal(json_string_value(json_object_get(rm, "user")), "paddock");
    json_int_t dl = json_integer_value(json_object_get(rm, "deadline_ms")) -
                    json_integer_value(json_object_get(rm, "submitted_ms"));
    assert_true(dl > 599000 && dl <= 600000);
    json_decref(show);
    json_t *t = rm_harness_json("user list --json --cluster %s", dir);
    assert_non_null(t);
    assert_int_equal(json_array_size(json_object_get(t, "rules")), 0);
    json_decref(t);

    /* a virtual cluster granted to the admin only, then a submission without a Unix account */
    assert_int_equal(rm_harness_run("user grant paddock default --cluster %s", dir), 0);
    assert_int_equal(rm_harness_run("submit %s --cluster %s", spec, user_dir), 1);
    assert_int_equal(denied("submit"), 1);
    assert_int_equal(rm_harness_run("user revoke paddock default --cluster %s", dir), 0);
    assert_int_equal(rm_harness_run("submit %s --cluster %s", spec, user_dir), 1);
    assert_int_equal(denied("submit"), 2);
    json_t *jobs = rm_harness_json("jobs --json --cluster %s", dir);
    assert_non_null(jobs);
    assert_int_equal(json_array_size(json_object_get(jobs, "jobs")), 1);
    json_decref(jobs);

    /* the admin may */
    assert_int_equal(rm_harness_run("job deadline %s 20m --cluster %s", job, dir), 0);
    assert_int_equal(rm_harness_run("job cancel %s --cluster %s", job, dir), 0);
}

static void test_audit(void **state)
{
    (void)state;
    need_cluster();
    json_t *a = rm_harness_json("audit --json --cluster %s", rm_harness_dir());
    assert_non_null(a);
    static const char *const want[][3] = {
        {"paddock", "submit", "ok"},         {"USER", "cancel", "ERR_DENIED"},
        {"USER", "deadline", "ERR_DENIED"},  {"USER", "replica_remove", "ERR_DENIED"},
        {"USER", "quota_set", "ERR_DENIED"}, {"paddock", "grant", "ok"},
        {"USER", "submit", "ERR_DENIED"},    {"paddock", "revoke", "ok"},
        {"USER", "submit", "ERR_DENIED"},    {"paddock", "deadline", "ok"},
        {"paddock", "cancel", "ok"},
    };
    size_t n = sizeof want / sizeof want[0];
    json_t *lines = json_object_get(a, "audit");
    assert_int_equal(json_array_size(lines), n);
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(lines, i);
        const char *who = strcmp(want[i][0], "USER") == 0 ? user : want[i][0];
        assert_string_equal(json_string_value(json_object_get(l, "user")), who);
        assert_string_equal(json_string_value(json_object_get(l, "action")), want[i][1]);
        assert_string_equal(json_string_value(json_object_get(l, "result")), want[i][2]);
    }
    json_decref(a);
    /* the user sees their own lines only */
    a = rm_harness_json("audit --json --cluster %s", user_dir);
    assert_non_null(a);
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(a, "audit"), i, l)
    {
        assert_string_equal(json_string_value(json_object_get(l, "user")), user);
    }
    assert_int_equal(json_array_size(json_object_get(a, "audit")), 6);
    json_decref(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_audit),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
