/* config.h - daemon configuration files: INI-style text, every key declared and documented.
 *
 * Format (one assignment per line; the format of git config, systemd units, php.ini):
 *     # comment            (also "; comment"; whole lines only, or after whitespace: "x = 1 # c")
 *     [rm]                 section header
 *     heartbeat = 1s       key = value; spaces around '=' and at both ends are dropped
 *     name = "a # b"       double quotes keep spaces and '#'/';'; escapes \" \\ \n \t
 * Keys before the first header belong to section "". A key may appear once per file.
 *
 * A daemon declares a schema: a table of struct config_key ending with CONFIG_END, each entry
 * naming a field of the daemon's own configuration struct by offset:
 *     struct pn_config { int64_t cpus; int64_t heartbeat_ms; char *name; };
 *     static const struct config_key pn_schema[] = {
 *         {"pn", "cpus", CONFIG_INT, offsetof(struct pn_config, cpus), "4",
 *          "cores offered to tasks", 1, 4096},
 *         ...,
 *         CONFIG_END,
 *     };
 * Loading reports unknown sections, unknown keys, duplicates, malformed lines and bad or
 * out-of-bounds values as ERR_CONFIG with "FILE:LINE: reason" in the caller's buffer.
 *
 * Value types and the C field each one fills:
 *   CONFIG_STRING   char *               (owned by the struct; freed by config_close)
 *   CONFIG_INT      int64_t              decimal, optional sign ("-3", "42")
 *   CONFIG_DOUBLE   double               finite ("0.5", "1e-3")
 *   CONFIG_BOOL     bool                 true/false, yes/no, on/off, 1/0
 *   CONFIG_DURATION int64_t milliseconds number with unit: ms, s, m, h, d ("250ms", "1.5s")
 *   CONFIG_SIZE     uint64_t bytes       number with optional unit: B, KiB/K, MiB/M, GiB/G,
 *                                        TiB/T (powers of 1024), kB, MB, GB, TB (powers of 1000)
 *   CONFIG_LIST     struct config_list   comma-separated strings, items trimmed ("a, b,c")
 * Bounds (applied when min < max): the value for INT and DOUBLE, milliseconds for DURATION,
 * bytes for SIZE, the length in bytes for STRING, the number of items for LIST.
 *
 * Reloading safely (nginx): load into a fresh struct on the side and swap it in only on
 * success; a failed load leaves the target struct partly updated (it must still be closed).
 */
#ifndef PADDOCK_COMMON_CONFIG_H
#define PADDOCK_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum config_type {
    CONFIG_STRING,
    CONFIG_INT,
    CONFIG_DOUBLE,
    CONFIG_BOOL,
    CONFIG_DURATION,
    CONFIG_SIZE,
    CONFIG_LIST,
};

struct config_list {
    char **items; /* owned by the configuration struct */
    size_t len;
};

struct config_key {
    const char *section; /* "" for keys before any [section] */
    const char *name;    /* NULL ends the table (CONFIG_END) */
    enum config_type type;
    size_t offset;   /* offsetof(struct daemon_config, field) */
    const char *def; /* default, written as in a file; NULL means "" / 0 / false / empty */
    const char *doc; /* one line, shown by config_print_schema */
    double min, max; /* bounds, applied when min < max (see above) */
};

#define CONFIG_END                                                                                 \
    {                                                                                              \
        NULL, NULL, CONFIG_STRING, 0, NULL, NULL, 0, 0                                             \
    }

/* Limits on input: a file over CONFIG_FILE_MAX bytes or a line over CONFIG_LINE_MAX bytes is
 * rejected; a list holds at most CONFIG_LIST_MAX items. */
#define CONFIG_FILE_MAX (1u << 20)
#define CONFIG_LINE_MAX 4096
#define CONFIG_LIST_MAX 1024

/* Sets every field of `cfg` named by `schema` to its default. `cfg` must be zeroed or hold
 * values from these functions (old strings and lists are freed). Returns 0, ERR_NOMEM, or
 * ERR_CONFIG when the schema's own default is invalid (a programming error, reported). */
int config_defaults(const struct config_key *schema, void *cfg, char *msg, size_t cap);

/* Reads `path` and applies its assignments on top of the current values of `cfg`.
 * Returns 0; ERR_IO (cannot read: "PATH: reason"); ERR_TOOBIG; ERR_NOMEM; or ERR_CONFIG with
 * "PATH:LINE: reason" for the first error in the file. */
int config_load_file(const struct config_key *schema, void *cfg, const char *path, char *msg,
                     size_t cap);

/* The same for text in memory (`len` bytes, NUL not needed); `name` replaces PATH in messages. */
int config_load_string(const struct config_key *schema, void *cfg, const char *text, size_t len,
                       const char *name, char *msg, size_t cap);

/* Applies one assignment "SECTION.KEY=VALUE" (or "KEY=VALUE" for section ""), e.g. from a
 * command-line --set option. Same value syntax and checks as a file. Returns 0, ERR_NOMEM or
 * ERR_CONFIG. */
int config_set(const struct config_key *schema, void *cfg, const char *assignment, char *msg,
               size_t cap);

/* Frees the strings and lists `schema` names in `cfg` and sets those fields to NULL/empty. */
void config_close(const struct config_key *schema, void *cfg);

/* Prints the schema as a documented example file: per section, every key commented with its
 * doc line, type and bounds, and set to its default. Returns 0 or ERR_IO. */
int config_print_schema(const struct config_key *schema, FILE *out);

/* Prints the current values of `cfg` as a loadable file (what a daemon runs with, or what a
 * tool writes for a daemon to load). Loading the output gives the same values back.
 * Returns 0, ERR_NOMEM or ERR_IO. */
int config_write(const struct config_key *schema, const void *cfg, FILE *out);

/* The value parsers, for command-line options that take the same syntax ("--deadline 15m").
 * `text` is NUL-terminated and already trimmed. Return 0 or ERR_PARSE / ERR_RANGE with a reason
 * in `msg`. */
int config_parse_duration(const char *text, int64_t *ms, char *msg, size_t cap);
int config_parse_size(const char *text, uint64_t *bytes, char *msg, size_t cap);
int config_parse_bool(const char *text, bool *out, char *msg, size_t cap);
int config_parse_int(const char *text, int64_t *out, char *msg, size_t cap);
int config_parse_double(const char *text, double *out, char *msg, size_t cap);

/* Formats milliseconds the way the parser reads them back ("1.5s", "250ms", "2m") into a
 * buffer of CONFIG_DURATION_SIZE bytes. Returns `out`. */
#define CONFIG_DURATION_SIZE 32
char *config_format_duration(int64_t ms, char *out);

/* The schema's name for a type ("duration"). */
const char *config_type_name(enum config_type type);

#endif
