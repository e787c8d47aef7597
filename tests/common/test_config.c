/* Configuration files: syntax, every value type, bounds, errors with file:line, printing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/err.h"
#include "common/mem.h"

struct conf {
    char *name;
    int64_t cpus;
    double ratio;
    bool verbose;
    int64_t heartbeat_ms;
    uint64_t cache;
    struct config_list peers;
    char *top;
};

static const struct config_key schema[] = {
    {"", "top", CONFIG_STRING, offsetof(struct conf, top), "t", "a key outside sections", 0, 0},
    {"pn", "name", CONFIG_STRING, offsetof(struct conf, name), "pn-0", "node name", 1, 16},
    {"pn", "cpus", CONFIG_INT, offsetof(struct conf, cpus), "4", "cores", 1, 1024},
    {"pn", "ratio", CONFIG_DOUBLE, offsetof(struct conf, ratio), "0.5", "a ratio", 0, 1},
    {"pn", "verbose", CONFIG_BOOL, offsetof(struct conf, verbose), "no", "chatty", 0, 0},
    {"rm", "heartbeat", CONFIG_DURATION, offsetof(struct conf, heartbeat_ms), "1s", "period", 10,
     60000},
    {"rm", "cache", CONFIG_SIZE, offsetof(struct conf, cache), "64MiB", "cache size", 0, 0},
    {"rm", "peers", CONFIG_LIST, offsetof(struct conf, peers), "a, b", "replicas", 0, 5},
    CONFIG_END,
};

struct fixture {
    struct conf c;
    char msg[512];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(config_defaults(schema, &f->c, f->msg, sizeof f->msg), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    config_close(schema, &f->c);
    free(f);
    return 0;
}

static int load(struct fixture *f, const char *text)
{
    f->msg[0] = '\0';
    return config_load_string(schema, &f->c, text, strlen(text), "t.conf", f->msg, sizeof f->msg);
}

static void test_defaults(void **state)
{
    struct fixture *f = *state;
    assert_string_equal(f->c.name, "pn-0");
    assert_int_equal(f->c.cpus, 4);
    assert_true(f->c.ratio == 0.5);
    assert_false(f->c.verbose);
    assert_int_equal(f->c.heartbeat_ms, 1000);
    assert_int_equal(f->c.cache, 64u << 20);
    assert_int_equal(f->c.peers.len, 2);
    assert_string_equal(f->c.peers.items[1], "b");
}

static void test_full_file(void **state)
{
    struct fixture *f = *state;
    const char *text = "# comment\n"
                       "top = \"a # b; \\\"q\\\"\"  # trailing comment\n"
                       "\n"
                       "[pn]\r\n"
                       "  name=node-7 \n"
                       "cpus = -0\n"
                       "; other comment\n"
                       "ratio = 1e-3\n"
                       "verbose = YES\n"
                       "[ rm ]  # comment after header\n"
                       "heartbeat = 1.5s\n"
                       "cache = 2 GiB\n"
                       "peers = x,  y ,z\n";
    /* cpus = -0 is 0: out of bounds [1, 1024] */
    assert_int_equal(load(f, text), ERR_CONFIG);
    assert_string_equal(f->msg, "t.conf:6: cpus: '-0': out of bounds [1, 1024]");
    text = "top = \"a # b; \\\"q\\\"\"  # trailing comment\n"
           "[pn]\r\n  name=node-7 \ncpus = +12\nratio = 1e-3\nverbose = YES\n"
           "[ rm ]  # c\nheartbeat = 1.5s\ncache = 2 GiB\npeers = x,  y ,z\n";
    config_close(schema, &f->c);
    memset(&f->c, 0, sizeof f->c);
    assert_int_equal(config_defaults(schema, &f->c, f->msg, sizeof f->msg), 0);
    assert_int_equal(load(f, text), 0);
    assert_string_equal(f->c.top, "a # b; \"q\"");
    assert_string_equal(f->c.name, "node-7");
    assert_int_equal(f->c.cpus, 12);
    assert_true(f->c.ratio == 1e-3);
    assert_true(f->c.verbose);
    assert_int_equal(f->c.heartbeat_ms, 1500);
    assert_int_equal(f->c.cache, 2ull << 30);
    assert_int_equal(f->c.peers.len, 3);
    assert_string_equal(f->c.peers.items[0], "x");
    assert_string_equal(f->c.peers.items[1], "y");
    assert_string_equal(f->c.peers.items[2], "z");
}

static void test_errors_name_file_and_line(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"[pn]\nbogus = 1\n", "t.conf:2: unknown key 'bogus' in [pn]"},
        {"\n[nope]\n", "t.conf:2: unknown section [nope]"},
        {"cpus = 2\n", "t.conf:1: unknown key 'cpus' (outside any section)"},
        {"[pn]\ncpus = 2\ncpus = 3\n", "t.conf:3: duplicate key 'cpus' (first set on line 2)"},
        {"[pn]\ncpus = two\n", "t.conf:2: cpus: 'two' is not an integer"},
        {"[pn]\ncpus = 99999999999999999999\n",
         "t.conf:2: cpus: '99999999999999999999' does not fit in 64 bits"},
        {"[pn]\nratio = nan\n", "t.conf:2: ratio: 'nan' is not a number"},
        {"[pn]\nratio = 1.5\n", "t.conf:2: ratio: '1.5': out of bounds [0, 1]"},
        {"[pn]\nverbose = maybe\n",
         "t.conf:2: verbose: 'maybe' is not a boolean (true/false, yes/no, on/off, 1/0)"},
        {"[rm]\nheartbeat = 5\n",
         "t.conf:2: heartbeat: duration '5' needs a unit (ms, s, m, h, d), e.g. '5s'"},
        {"[rm]\nheartbeat = 5ms\n", "t.conf:2: heartbeat: '5ms': out of bounds [10, 60000] ms"},
        {"[rm]\nheartbeat = 1y\n",
         "t.conf:2: heartbeat: duration '1y': unknown unit 'y' (use ms, s, m, h, d)"},
        {"[rm]\ncache = 1 XB\n", "t.conf:2: cache: size '1 XB': unknown unit 'XB' (use B, KiB, "
                                 "MiB, GiB, TiB, kB, MB, GB, TB)"},
        {"[rm]\npeers = a,,b\n", "t.conf:2: peers: empty item 2 in list 'a,,b'"},
        {"[rm]\npeers = 1,2,3,4,5,6\n",
         "t.conf:2: peers: '1,2,3,4,5,6': item count out of bounds [0, 5]"},
        {"[pn]\nname = this-name-is-far-too-long\n",
         "t.conf:2: name: 'this-name-is-far-too-long': length out of bounds [1, 16]"},
        {"[pn]\nname = \"x\n", "t.conf:2: name: unterminated quoted value"},
        {"[pn]\nname = \"x\" y\n", "t.conf:2: name: unexpected text after the closing quote"},
        {"[pn\n", "t.conf:1: missing ']' in section header"},
        {"[pn]\njust words\n", "t.conf:2: expected 'key = value' or '[section]'"},
        {"[pn]\n= 3\n", "t.conf:2: missing key before '='"},
        {"[pn]\nc pus = 3\n", "t.conf:2: invalid character in key 'c pus'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = load(f, cases[i].text);
        if (rc != ERR_CONFIG || strcmp(f->msg, cases[i].msg) != 0)
            fail_msg("case %zu: rc %d msg '%s', want '%s'", i, rc, f->msg, cases[i].msg);
    }
    /* A NUL byte and an over-long line. */
    char text[CONFIG_LINE_MAX + 32];
    memcpy(text, "[pn]\nname = a\0b\n", 16);
    assert_int_equal(config_load_string(schema, &f->c, text, 16, "n", f->msg, sizeof f->msg),
                     ERR_CONFIG);
    assert_string_equal(f->msg, "n:2: NUL byte in line");
    memset(text, 'x', sizeof text);
    assert_int_equal(
        config_load_string(schema, &f->c, text, sizeof text, "n", f->msg, sizeof f->msg),
        ERR_CONFIG);
    assert_non_null(strstr(f->msg, "n:1: line longer than"));
}

static void test_value_parsers(void **state)
{
    (void)state;
    char msg[256];
    int64_t ms;
    uint64_t b;
    assert_int_equal(config_parse_duration("250ms", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(config_parse_duration("2m", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(config_parse_duration("1 h", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(config_parse_duration("0", &ms, msg, sizeof msg), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(config_parse_duration("-1s", &ms, msg, sizeof msg), ERR_PARSE);
    assert_int_equal(config_parse_duration("0.1ms", &ms, msg, sizeof msg), ERR_RANGE);
    assert_int_equal(config_parse_duration("1e3s", &ms, msg, sizeof msg), ERR_PARSE);
    assert_int_equal(config_parse_duration("9999999999999d", &ms, msg, sizeof msg), ERR_RANGE);
    assert_int_equal(config_parse_size("1.5KiB", &b, msg, sizeof msg), 0);
    assert_int_equal(b, 1536);
    assert_int_equal(config_parse_size("3MB", &b, msg, sizeof msg), 0);
    assert_int_equal(b, 3000000);
    assert_int_equal(config_parse_size("17", &b, msg, sizeof msg), 0);
    assert_int_equal(b, 17);
    assert_int_equal(config_parse_size("0x10", &b, msg, sizeof msg), ERR_PARSE);
    char buf[CONFIG_DURATION_SIZE];
    assert_string_equal(config_format_duration(1500, buf), "1.5s");
    assert_string_equal(config_format_duration(120000, buf), "2m");
    assert_string_equal(config_format_duration(7, buf), "7ms");
    assert_string_equal(config_format_duration(0, buf), "0ms");
    /* Every formatted duration parses back to itself. */
    for (int64_t v = 0; v < 200000; v += 37) {
        assert_int_equal(
            config_parse_duration(config_format_duration(v, buf), &ms, msg, sizeof msg), 0);
        assert_int_equal(ms, v);
    }
}

static void test_set(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(config_set(schema, &f->c, "pn.cpus=8", f->msg, sizeof f->msg), 0);
    assert_int_equal(f->c.cpus, 8);
    assert_int_equal(config_set(schema, &f->c, "top = \" x \"", f->msg, sizeof f->msg), 0);
    assert_string_equal(f->c.top, " x ");
    assert_int_equal(config_set(schema, &f->c, "pn.cpus=0", f->msg, sizeof f->msg), ERR_CONFIG);
    assert_string_equal(f->msg, "pn.cpus: '0': out of bounds [1, 1024]");
    assert_int_equal(f->c.cpus, 8); /* unchanged on error */
    assert_int_equal(config_set(schema, &f->c, "pn.nope=1", f->msg, sizeof f->msg), ERR_CONFIG);
    assert_int_equal(config_set(schema, &f->c, "pn.cpus", f->msg, sizeof f->msg), ERR_CONFIG);
}

/* What config_write prints loads back to the same values; the schema print loads as defaults. */
static void test_write_round_trip(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(config_set(schema, &f->c, "top=\"tab\\there # x\"", f->msg, sizeof f->msg), 0);
    assert_int_equal(config_set(schema, &f->c, "pn.ratio=0.1", f->msg, sizeof f->msg), 0);
    assert_int_equal(config_set(schema, &f->c, "rm.cache=1000", f->msg, sizeof f->msg), 0);
    assert_int_equal(config_set(schema, &f->c, "rm.heartbeat=1m", f->msg, sizeof f->msg), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    assert_int_equal(config_write(schema, &f->c, out), 0);
    fclose(out);
    struct conf c2;
    memset(&c2, 0, sizeof c2);
    assert_int_equal(config_defaults(schema, &c2, f->msg, sizeof f->msg), 0);
    assert_int_equal(config_load_string(schema, &c2, buf, len, "w", f->msg, sizeof f->msg), 0);
    assert_string_equal(c2.top, "tab\there # x");
    assert_true(c2.ratio == 0.1);
    assert_int_equal(c2.cache, 1000);
    assert_int_equal(c2.heartbeat_ms, 60000);
    assert_int_equal(c2.peers.len, 2);
    config_close(schema, &c2);
    free(buf);

    out = open_memstream(&buf, &len);
    assert_int_equal(config_print_schema(schema, out), 0);
    fclose(out);
    assert_non_null(strstr(buf, "[rm]\n# period\n# duration, from 10ms to 1m\nheartbeat = 1s\n"));
    assert_non_null(strstr(buf, "# node name\n# string, length 1 to 16\nname = pn-0\n"));
    memset(&c2, 0, sizeof c2);
    assert_int_equal(config_load_string(schema, &c2, buf, len, "s", f->msg, sizeof f->msg), 0);
    assert_int_equal(c2.cpus, 4);
    assert_string_equal(c2.top, "t");
    config_close(schema, &c2);
    free(buf);
}

static void test_load_file(void **state)
{
    struct fixture *f = *state;
    char path[] = "/tmp/paddock-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "[pn]\ncpus = 3\n[rm]\nbad line\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(config_load_file(schema, &f->c, path, f->msg, sizeof f->msg), ERR_CONFIG);
    char want[128];
    snprintf(want, sizeof want, "%s:4: expected 'key = value' or '[section]'", path);
    assert_string_equal(f->msg, want);
    unlink(path);
    assert_int_equal(config_load_file(schema, &f->c, path, f->msg, sizeof f->msg), ERR_IO);
    assert_non_null(strstr(f->msg, "No such file"));
}

/* Every allocation failure surfaces as ERR_NOMEM and leaks nothing (checked under ASan). */
static void test_allocation_failures(void **state)
{
    (void)state;
    const char *text = "top = x\n[pn]\nname = n\n[rm]\npeers = a, b, c\n";
    for (long n = 0; n < 64; n++) {
        struct conf c;
        memset(&c, 0, sizeof c);
        char msg[256];
        mem_fail_after(n);
        int rc = config_defaults(schema, &c, msg, sizeof msg);
        if (rc == 0)
            rc = config_load_string(schema, &c, text, strlen(text), "m", msg, sizeof msg);
        long failed = mem_fail_count();
        mem_fail_reset();
        config_close(schema, &c);
        if (failed == 0) {
            assert_int_equal(rc, 0);
            return;
        }
        assert_int_equal(rc, ERR_NOMEM);
    }
    fail_msg("allocation injection never stopped failing");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_file_and_line, setup, teardown),
        cmocka_unit_test(test_value_parsers),
        cmocka_unit_test_setup_teardown(test_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_file, setup, teardown),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
