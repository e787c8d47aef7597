/* test_journal.c - jm/journal: replay of a whole journal, a torn tail cut at every byte of its
 * last line, a journal from before the header (version 1), and damage before the last line
 * (refused with the line number). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/journal.h"
#include "proto/proto.h"

#define L_A1                                                                                       \
    "{\"task\":\"a\",\"stage\":\"s\",\"attempt\":1,\"node\":\"pn-1\",\"class\":\"regular\","       \
    "\"queued_s\":0.1,\"start_s\":0.2,\"end_s\":1.5,\"state\":\"failed\",\"exit\":7,"              \
    "\"signal\":0,\"cpu_s\":0.3,\"max_rss_kb\":1024,\"reason\":\"exit 7\"}\n"
#define L_A2                                                                                       \
    "{\"task\":\"a\",\"stage\":\"s\",\"attempt\":2,\"node\":\"pn-2\",\"class\":\"opportunistic\"," \
    "\"queued_s\":1.6,\"start_s\":1.7,\"end_s\":2.5,\"state\":\"succeeded\",\"exit\":0,"           \
    "\"signal\":0,\"cpu_s\":0.5,\"max_rss_kb\":2048,\"reason\":\"\"}\n"
#define L_B1                                                                                       \
    "{\"task\":\"b\",\"stage\":\"s\",\"attempt\":1,\"node\":\"pn-3\",\"class\":\"regular\","       \
    "\"queued_s\":0.1,\"start_s\":0.2,\"end_s\":3.0,\"state\":\"lost\",\"exit\":-1,"               \
    "\"signal\":0,\"cpu_s\":0,\"max_rss_kb\":0,\"reason\":\"node pn-3 is down\"}\n"

static char g_header[JOURNAL_HEADER_BYTES];

static int setup(void **state)
{
    (void)state;
    int n = journal_header(g_header, sizeof g_header, "j-123", 1700000000000);
    return n > 0 ? 0 : -1;
}

static void test_replay(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s%s", g_header, L_A1, L_B1, L_A2);
    struct journal jr;
    char msg[256];
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), 0);
    assert_int_equal(jr.version, 2);
    assert_string_equal(jr.job_id, "j-123");
    assert_int_equal(jr.started_ms, 1700000000000);
    assert_int_equal(jr.nrecs, 3);
    assert_int_equal(jr.torn, 0);
    assert_int_equal(jr.good_len, strlen(text));
    assert_string_equal(jr.recs[0].task, "a");
    assert_int_equal(jr.recs[0].attempt, 1);
    assert_int_equal(jr.recs[0].state, PROTO_TASK_FAILED);
    assert_int_equal(jr.recs[0].exit_code, 7);
    assert_string_equal(jr.recs[0].node, "pn-1");
    assert_int_equal(jr.recs[0].opportunistic, 0);
    assert_string_equal(jr.recs[0].reason, "exit 7");
    assert_string_equal(jr.recs[1].task, "b");
    assert_int_equal(jr.recs[1].state, PROTO_TASK_LOST);
    assert_int_equal(jr.recs[2].attempt, 2);
    assert_int_equal(jr.recs[2].state, PROTO_TASK_SUCCEEDED);
    assert_int_equal(jr.recs[2].opportunistic, 1);
    assert_true(jr.recs[2].end_s > 2.4 && jr.recs[2].end_s < 2.6);
    assert_int_equal(jr.recs[2].rss_kb, 2048);
    journal_close(&jr);
    assert_null(jr.recs);
}

static void test_empty_and_header_only(void **state)
{
    (void)state;
    struct journal jr;
    assert_int_equal(journal_parse("", 0, &jr, NULL, 0), 0);
    assert_int_equal(jr.version, 2); /* a new journal */
    assert_int_equal(jr.nrecs, 0);
    assert_int_equal(jr.good_len, 0);
    journal_close(&jr);
    assert_int_equal(journal_parse(g_header, strlen(g_header), &jr, NULL, 0), 0);
    assert_int_equal(jr.nrecs, 0);
    assert_int_equal(jr.good_len, strlen(g_header));
    assert_string_equal(jr.job_id, "j-123");
    journal_close(&jr);
}

/* The last line cut after every byte: the good prefix stays, the cut line is reported torn. A
 * cut that leaves the whole line (with or without its newline as the only byte missing) too. */
static void test_torn_every_byte(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s", g_header, L_A1, L_A2);
    size_t prefix = strlen(g_header) + strlen(L_A1), whole = strlen(text);
    for (size_t cut = prefix; cut <= whole; cut++) {
        struct journal jr;
        char msg[256] = "";
        int rc = journal_parse(text, cut, &jr, msg, sizeof msg);
        if (rc != 0)
            fprintf(stderr, "cut at %zu: %s\n", cut, msg);
        assert_int_equal(rc, 0);
        if (cut == whole) {
            assert_int_equal(jr.torn, 0);
            assert_int_equal(jr.nrecs, 2);
            assert_int_equal(jr.good_len, whole);
        } else {
            assert_int_equal(jr.torn, cut > prefix);
            assert_int_equal(jr.nrecs, 1);
            assert_int_equal(jr.good_len, prefix);
            assert_string_equal(jr.recs[0].task, "a");
            if (cut > prefix)
                assert_true(strlen(jr.torn_why) > 0);
        }
        journal_close(&jr);
    }
    /* A torn header: nothing good at all (the writer starts the journal anew). */
    for (size_t cut = 1; cut < strlen(g_header); cut++) {
        struct journal jr;
        assert_int_equal(journal_parse(g_header, cut, &jr, NULL, 0), 0);
        assert_int_equal(jr.torn, 1);
        assert_int_equal(jr.good_len, 0);
        assert_int_equal(jr.nrecs, 0);
        journal_close(&jr);
    }
}

/* A last line that has its newline but is not JSON (zeros after a power loss) is torn too. */
static void test_torn_zeros(void **state)
{
    (void)state;
    char text[4096];
    size_t n = (size_t)snprintf(text, sizeof text, "%s%s", g_header, L_A1);
    memset(text + n, 0, 40);
    text[n + 40] = '\n';
    struct journal jr;
    assert_int_equal(journal_parse(text, n + 41, &jr, NULL, 0), 0);
    assert_int_equal(jr.torn, 1);
    assert_int_equal(jr.good_len, n);
    assert_int_equal(jr.nrecs, 1);
    journal_close(&jr);
    /* zeros without a newline */
    assert_int_equal(journal_parse(text, n + 40, &jr, NULL, 0), 0);
    assert_int_equal(jr.torn, 1);
    assert_int_equal(jr.good_len, n);
    journal_close(&jr);
}

static void test_headerless_v1(void **state)
{
    (void)state;
    const char *text = L_A1 L_B1 L_A2;
    struct journal jr;
    char msg[256];
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), 0);
    assert_int_equal(jr.version, 1);
    assert_string_equal(jr.job_id, "");
    assert_int_equal(jr.started_ms, 0);
    assert_int_equal(jr.nrecs, 3);
    assert_int_equal(jr.good_len, strlen(text));
    journal_close(&jr);
    /* and torn in the middle of its last line */
    size_t cut = strlen(L_A1 L_B1) + 10;
    assert_int_equal(journal_parse(text, cut, &jr, msg, sizeof msg), 0);
    assert_int_equal(jr.version, 1);
    assert_int_equal(jr.torn, 1);
    assert_int_equal(jr.nrecs, 2);
    assert_int_equal(jr.good_len, strlen(L_A1 L_B1));
    journal_close(&jr);
}

/* Damage before the last line is no crash's doing: refused, naming the line. */
static void test_garbage_in_the_middle(void **state)
{
    (void)state;
    char text[4096], msg[256];
    struct journal jr;
    snprintf(text, sizeof text, "%s%s%s%s", g_header, L_A1, "not json at all\n", L_A2);
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), ERR_PARSE);
    assert_non_null(strstr(msg, "line 3"));
    assert_null(jr.recs);
    assert_int_equal(jr.nrecs, 0);

    /* a valid JSON line without the fields of an attempt, even as the last line */
    snprintf(text, sizeof text, "%s%s%s", g_header, L_A1, "{\"task\":\"x\",\"attempt\":1}\n");
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), ERR_PARSE);
    assert_non_null(strstr(msg, "line 3"));
    assert_non_null(strstr(msg, "node"));

    /* a state that is not terminal, an attempt of 0 */
    const char *bad_state = "{\"task\":\"a\",\"attempt\":1,\"node\":\"n\",\"class\":\"regular\","
                            "\"queued_s\":0,\"start_s\":0,\"end_s\":0,\"state\":\"running\"}\n";
    snprintf(text, sizeof text, "%s%s%s", g_header, bad_state, L_A2);
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), ERR_PARSE);
    assert_non_null(strstr(msg, "state"));
    const char *zero = "{\"task\":\"a\",\"attempt\":0,\"node\":\"n\",\"class\":\"regular\","
                       "\"queued_s\":0,\"start_s\":0,\"end_s\":0,\"state\":\"failed\"}\n";
    snprintf(text, sizeof text, "%s%s", zero, L_A2);
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), ERR_PARSE);
    assert_non_null(strstr(msg, "line 1"));

    /* an empty line in the middle */
    snprintf(text, sizeof text, "%s%s\n%s", g_header, L_A1, L_A2);
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), ERR_PARSE);

    /* a second header */
    snprintf(text, sizeof text, "%s%s%s%s", g_header, L_A1, g_header, L_A2);
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), ERR_PARSE);
    assert_non_null(strstr(msg, "header"));

    /* a newer format */
    snprintf(text, sizeof text, "%s%s",
             "{\"format\":\"paddock-journal\",\"version\":3,\"job_id\":\"x\"}\n", L_A1);
    assert_int_equal(journal_parse(text, strlen(text), &jr, msg, sizeof msg), ERR_VERSION);
    assert_non_null(strstr(msg, "version 3"));
}

static void test_header_writer(void **state)
{
    (void)state;
    char buf[JOURNAL_HEADER_BYTES];
    assert_int_equal(journal_header(buf, sizeof buf, "bad\"id", 0), ERR_INVAL);
    assert_int_equal(journal_header(buf, 10, "j-1", 0), ERR_TOOBIG);
    char long_id[JOURNAL_JOB_ID_MAX + 1];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    assert_int_equal(journal_header(buf, sizeof buf, long_id, 0), ERR_INVAL);
    int n = journal_header(buf, sizeof buf, "j-9", 42);
    assert_true(n > 0 && buf[n - 1] == '\n');
}

/* Every allocation failing in turn: ERR_NOMEM, nothing kept (the leak checker sees the rest). */
static void test_alloc_failure(void **state)
{
    (void)state;
    char text[8192] = "";
    for (int i = 0; i < 40; i++)
        strcat(text, L_A1);
    struct journal jr;
    int ok = 0;
    for (long k = 0; k < 200 && !ok; k++) {
        mem_fail_after(k);
        int rc = journal_parse(text, strlen(text), &jr, NULL, 0);
        mem_fail_reset();
        if (rc == 0) {
            assert_int_equal(jr.nrecs, 40);
            journal_close(&jr);
            ok = 1;
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            assert_null(jr.recs);
        }
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay),          cmocka_unit_test(test_empty_and_header_only),
        cmocka_unit_test(test_torn_every_byte), cmocka_unit_test(test_torn_zeros),
        cmocka_unit_test(test_headerless_v1),   cmocka_unit_test(test_garbage_in_the_middle),
        cmocka_unit_test(test_header_writer),   cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
