/* test_page_auth.c - who may read the cluster page (rm/rm_page.h), without a cluster:
 *   - loopback clients are served without credentials; any other client needs the token, as a
 *     Bearer header or ?token=, and a wrong, empty, prefixed or truncated one is refused;
 *   - with no token configured every non-loopback request is refused, whatever it sends;
 *   - the token file: created 0600 with 64 hex digits, kept when it exists, replaced with
 *     --force; malformed files (too short, bad characters, empty) are refused with a reason. */
#include "rm/rm_page.h"

#include "common/err.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define TOKEN "0123456789abcdef0123456789abcdef"

struct fixture {
    char dir[64];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/paddock-page-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", f->dir);
    free(f);
    return 0;
}

static void write_file(const char *dir, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, RM_PAGE_TOKEN_FILE);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_authorize(void **state)
{
    (void)state;
    /* loopback: served as is, even with a wrong token or none configured */
    assert_int_equal(rm_page_authorize(true, NULL, NULL, TOKEN), RM_PAGE_AUTH_OK);
    assert_int_equal(rm_page_authorize(true, "Bearer nope", NULL, NULL), RM_PAGE_AUTH_OK);
    /* remote: the token is needed */
    assert_int_equal(rm_page_authorize(false, NULL, NULL, TOKEN), RM_PAGE_AUTH_MISSING);
    assert_int_equal(rm_page_authorize(false, "Bearer " TOKEN, NULL, TOKEN), RM_PAGE_AUTH_OK);
    assert_int_equal(rm_page_authorize(false, "bearer   " TOKEN, NULL, TOKEN), RM_PAGE_AUTH_OK);
    assert_int_equal(rm_page_authorize(false, NULL, TOKEN, TOKEN), RM_PAGE_AUTH_OK);
    const char *bad[] = {"Bearer " TOKEN "0",
                         "Bearer 0123456789abcdef0123456789abcde",
                         "Bearer ",
                         "Basic " TOKEN,
                         TOKEN,
                         "Bearer " TOKEN " ",
                         "Bearer x" TOKEN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(rm_page_authorize(false, bad[i], NULL, TOKEN), RM_PAGE_AUTH_BAD);
    assert_int_equal(rm_page_authorize(false, NULL, "", TOKEN), RM_PAGE_AUTH_BAD);
    assert_int_equal(rm_page_authorize(false, NULL, "0123", TOKEN), RM_PAGE_AUTH_BAD);
    /* a wrong header is not rescued by a right query argument: the header is what counts */
    assert_int_equal(rm_page_authorize(false, "Bearer nope", TOKEN, TOKEN), RM_PAGE_AUTH_BAD);
    /* no token configured: nothing gets in from outside */
    assert_int_equal(rm_page_authorize(false, "Bearer ", NULL, ""), RM_PAGE_AUTH_NO_TOKEN);
    assert_int_equal(rm_page_authorize(false, NULL, "", NULL), RM_PAGE_AUTH_NO_TOKEN);
    assert_int_equal(rm_page_authorize(false, NULL, NULL, NULL), RM_PAGE_AUTH_MISSING);
}

static void test_token_file(void **state)
{
    struct fixture *f = *state;
    char tok[RM_PAGE_TOKEN_MAX + 1], tok2[RM_PAGE_TOKEN_MAX + 1], msg[256];
    assert_int_equal(rm_page_token_load(f->dir, tok, sizeof tok, msg, sizeof msg), ERR_NOTFOUND);
    assert_int_equal(rm_page_token_create(f->dir, false, msg, sizeof msg), 0);
    assert_int_equal(rm_page_token_load(f->dir, tok, sizeof tok, msg, sizeof msg), 0);
    assert_int_equal(strlen(tok), 64);
    assert_int_equal(strspn(tok, "0123456789abcdef"), 64);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, RM_PAGE_TOKEN_FILE);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* kept when it exists */
    assert_int_equal(rm_page_token_create(f->dir, false, msg, sizeof msg), 0);
    assert_int_equal(rm_page_token_load(f->dir, tok2, sizeof tok2, msg, sizeof msg), 0);
    assert_string_equal(tok, tok2);
    /* replaced with force */
    assert_int_equal(rm_page_token_create(f->dir, true, msg, sizeof msg), 0);
    assert_int_equal(rm_page_token_load(f->dir, tok2, sizeof tok2, msg, sizeof msg), 0);
    assert_string_not_equal(tok, tok2);
    /* an operator's own token, with spaces and a newline around it */
    write_file(f->dir, "  " TOKEN "\t\r\nsecond line ignored\n");
    assert_int_equal(rm_page_token_load(f->dir, tok, sizeof tok, msg, sizeof msg), 0);
    assert_string_equal(tok, TOKEN);
    const char *bad[] = {"", "\n", "short\n", "0123456789abcdef 0123\n", "0123456789abcdef\"<>x\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(f->dir, bad[i]);
        msg[0] = '\0';
        assert_int_equal(rm_page_token_load(f->dir, tok, sizeof tok, msg, sizeof msg), ERR_PARSE);
        assert_non_null(strstr(msg, RM_PAGE_TOKEN_FILE));
        assert_string_equal(tok, "");
    }
    /* too long */
    char longer[RM_PAGE_TOKEN_MAX + 10];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    write_file(f->dir, longer);
    assert_int_equal(rm_page_token_load(f->dir, tok, sizeof tok, msg, sizeof msg), ERR_PARSE);
    /* a directory that cannot hold it */
    assert_true(rm_page_token_create("/nonexistent-paddock-dir", false, msg, sizeof msg) < 0);
    assert_true(strlen(msg) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authorize),
        cmocka_unit_test_setup_teardown(test_token_file, setup, teardown),
    };
    return cmocka_run_group_tests_name("page_auth", tests, NULL, NULL);
}
