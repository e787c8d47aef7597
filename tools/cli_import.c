/* cli_import.c - `paddock import wfcommons IN.json -o OUT.json [--time-scale X]`: converts a
 * WfCommons WfFormat instance (tools/wfcommons.h) into a job spec v1, validates the result with
 * the JM's own parser (jm/spec.h) and writes it (atomically, or to stdout with -o -). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/spec.h"
#include "tools/cli.h"
#include "tools/jobdir.h"
#include "tools/wfcommons.h"

static int import__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock import wfcommons IN.json -o OUT.json [--time-scale X] [--name NAME]\n"
            "                                [--min-runtime S] [--max-cpu C] [--max-mem-mb M]\n"
            "  --time-scale X   multiply recorded runtimes by X (e.g. 0.001: seconds -> ms)\n"
            "  --min-runtime S  shortest task, seconds after scaling (default 0.01)\n"
            "  --max-cpu C, --max-mem-mb M   cap requests so a small local cluster holds them\n");
    return 2;
}

static char *import__read(const char *path, size_t max, size_t *len, char *msg, size_t cap)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL) {
        err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t have = 0, alloc = 0;
    char *buf = NULL;
    for (;;) {
        if (have == alloc) {
            if (alloc > max) {
                err_fmt(msg, cap, ERR_TOOBIG, "%s: over %zu bytes", path, max);
                goto fail;
            }
            size_t na = alloc == 0 ? 1 << 20 : alloc * 2;
            char *nb = mem_realloc(buf, na);
            if (nb == NULL) {
                err_fmt(msg, cap, ERR_NOMEM, "out of memory");
                goto fail;
            }
            buf = nb;
            alloc = na;
        }
        size_t r = fread(buf + have, 1, alloc - have, f);
        have += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        err_fmt(msg, cap, ERR_IO, "%s: read error", path);
        goto fail;
    }
    if (have > max) {
        err_fmt(msg, cap, ERR_TOOBIG, "%s: over %zu bytes", path, max);
        goto fail;
    }
    if (f != stdin)
        fclose(f);
    *len = have;
    return buf;
fail:
    if (f != stdin)
        fclose(f);
    mem_free(buf);
    return NULL;
}

static int import__number(const char *flag, const char *v, double *out)
{
    char *end = NULL;
    *out = strtod(v, &end);
    if (end == v || *end != '\0') {
        fprintf(stderr, "paddock import: bad number for %s: '%s'\n", flag, v);
        return -1;
    }
    return 0;
}

static int import_wfcommons(int argc, char **argv)
{
    const char *in = NULL, *outp = NULL;
    struct wfcommons_options o;
    wfcommons_options_default(&o);
    char name[SPEC_MAX_NAME_LEN];
    name[0] = '\0';
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        double d;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return import__usage();
        if (a[0] == '-' && a[1] != '\0' && i + 1 >= argc)
            return import__usage();
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            outp = argv[++i];
        } else if (strcmp(a, "--name") == 0) {
            snprintf(name, sizeof name, "%s", argv[++i]);
        } else if (strcmp(a, "--time-scale") == 0) {
            if (import__number(a, argv[++i], &o.time_scale) != 0)
                return 2;
        } else if (strcmp(a, "--min-runtime") == 0) {
            if (import__number(a, argv[++i], &o.min_runtime_s) != 0)
                return 2;
        } else if (strcmp(a, "--max-cpu") == 0) {
            if (import__number(a, argv[++i], &o.max_cpu) != 0)
                return 2;
        } else if (strcmp(a, "--max-mem-mb") == 0) {
            if (import__number(a, argv[++i], &d) != 0 || d < 0)
                return 2;
            o.max_mem_mb = (uint64_t)d;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "paddock import: unknown option '%s'\n", a);
            return import__usage();
        } else if (in == NULL) {
            in = a;
        } else {
            return import__usage();
        }
    }
    if (in == NULL || outp == NULL)
        return import__usage();
    if (!(o.time_scale > 0) || !(o.min_runtime_s > 0) || o.max_cpu < 0) {
        fprintf(stderr, "paddock import: --time-scale and --min-runtime must be positive\n");
        return 2;
    }
    if (name[0] == '\0') { /* the file's base name: the instance's own "name" is not an id */
        const char *base = strrchr(in, '/');
        base = base != NULL ? base + 1 : in;
        snprintf(name, sizeof name, "%s", strcmp(base, "-") == 0 ? "wfcommons" : base);
        char *dot = strrchr(name, '.');
        if (dot != NULL && dot != name)
            *dot = '\0';
    }
    o.name = name;
    char msg[512];
    size_t len = 0;
    char *buf = import__read(in, WFCOMMONS_MAX_BYTES, &len, msg, sizeof msg);
    if (buf == NULL) {
        fprintf(stderr, "paddock import: %s\n", msg);
        return 1;
    }
    json_t *doc = NULL;
    struct wfcommons_stats st;
    int rc = wfcommons_convert(buf, len, &o, &doc, &st, msg, sizeof msg);
    mem_free(buf);
    if (rc != 0) {
        fprintf(stderr, "paddock import: %s: %s\n", in, msg);
        return 1;
    }
    char *text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (text == NULL) {
        fprintf(stderr, "paddock import: out of memory\n");
        return 1;
    }
    /* The output must be a spec the JM accepts: validate with the same parser. */
    struct spec *spec = NULL;
    rc = spec_parse(text, strlen(text), NULL, &spec, msg, sizeof msg);
    spec_destroy(&spec);
    if (rc != 0) {
        fprintf(stderr, "paddock import: %s: converted spec is invalid: %s\n", in, msg);
        free(text);
        return 1;
    }
    int ok = jobdir_write_text("paddock import", outp, text) == 0;
    free(text);
    if (!ok)
        return 1;
    fprintf(stderr,
            "imported %s (WfFormat %s): %zu tasks, %zu dependencies, %.3f task-seconds "
            "after scaling by %g -> %s\n",
            in, st.schema, st.tasks, st.edges, st.total_runtime_s, o.time_scale, outp);
    return 0;
}

CLI_COMMAND("import wfcommons", "convert a WfCommons workflow instance into a job spec",
            import_wfcommons, import__usage)
