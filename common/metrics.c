/* metrics.c - Prometheus text exposition 0.0.4 builder (see metrics.h). */
#include "common/metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

void metrics_init(struct metrics *m)
{
    memset(m, 0, sizeof *m);
}

static void metrics__forget(struct metrics *m)
{
    for (size_t i = 0; i < m->nseen; i++)
        mem_free(m->seen_names[i]);
    m->nseen = 0;
    m->cur[0] = '\0';
}

void metrics_close(struct metrics *m)
{
    metrics__forget(m);
    mem_free(m->buf);
    memset(m, 0, sizeof *m);
}

static int metrics__fail(struct metrics *m, int code)
{
    if (m->err == 0)
        m->err = code;
    return code;
}

static int metrics__reserve(struct metrics *m, size_t more)
{
    if (m->len + more + 1 <= m->cap)
        return 0;
    if (m->len + more + 1 > METRICS_TEXT_MAX)
        return ERR_TOOBIG;
    size_t cap = m->cap ? m->cap : 4096;
    while (cap < m->len + more + 1)
        cap *= 2;
    if (cap > METRICS_TEXT_MAX)
        cap = METRICS_TEXT_MAX;
    char *b = mem_realloc(m->buf, cap);
    if (b == NULL)
        return ERR_NOMEM;
    m->buf = b;
    m->cap = cap;
    return 0;
}

/* Appends to a scratch line; the line is committed to the text only when complete, so a
 * rejected sample leaves no partial line. */
struct metrics__line {
    char *p;
    size_t len, cap;
    int err;
};

static void line_put(struct metrics__line *l, const char *s, size_t n)
{
    if (l->err)
        return;
    if (l->len + n + 1 > l->cap) {
        size_t cap = l->cap ? l->cap : 256;
        while (cap < l->len + n + 1)
            cap *= 2;
        if (cap > METRICS_TEXT_MAX) {
            l->err = ERR_TOOBIG;
            return;
        }
        char *b = mem_realloc(l->p, cap);
        if (b == NULL) {
            l->err = ERR_NOMEM;
            return;
        }
        l->p = b;
        l->cap = cap;
    }
    memcpy(l->p + l->len, s, n);
    l->len += n;
    l->p[l->len] = '\0';
}

static void line_puts(struct metrics__line *l, const char *s)
{
    line_put(l, s, strlen(s));
}

/* escape: label values escape \ " and newline; HELP escapes \ and newline. */
static void line_escaped(struct metrics__line *l, const char *s, bool quote)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        if (*s == '\\')
            rep = "\\\\";
        else if (*s == '\n')
            rep = "\\n";
        else if (quote && *s == '"')
            rep = "\\\"";
        if (rep) {
            line_put(l, run, (size_t)(s - run));
            line_puts(l, rep);
            run = s + 1;
        }
    }
    line_put(l, run, (size_t)(s - run));
}

static void line_value(struct metrics__line *l, double v)
{
    char b[40];
    if (isnan(v))
        snprintf(b, sizeof b, "NaN");
    else if (isinf(v))
        snprintf(b, sizeof b, v > 0 ? "+Inf" : "-Inf");
    else {
        snprintf(b, sizeof b, "%.15g", v);
        if (strtod(b, NULL) != v)
            snprintf(b, sizeof b, "%.17g", v);
    }
    line_puts(l, b);
}

static int metrics__commit(struct metrics *m, struct metrics__line *l)
{
    int rc = l->err;
    if (rc == 0)
        rc = metrics__reserve(m, l->len);
    if (rc == 0) {
        memcpy(m->buf + m->len, l->p, l->len);
        m->len += l->len;
        m->buf[m->len] = '\0';
    }
    mem_free(l->p);
    return rc ? metrics__fail(m, rc) : 0;
}

static bool metrics__name_ok(const char *s, bool colon)
{
    if (s == NULL || *s == '\0')
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
        bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && p != s))
            return false;
    }
    return true;
}

static bool metrics__label_ok(const char *s)
{
    return metrics__name_ok(s, false) && strncmp(s, "__", 2) != 0;
}

static uint32_t metrics__hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

int metrics_family(struct metrics *m, const char *name, enum metrics_type type, const char *help)
{
    if (!metrics__name_ok(name, true) || strlen(name) >= sizeof m->cur - 8 ||
        (type != METRICS_COUNTER && type != METRICS_GAUGE && type != METRICS_HISTOGRAM))
        return metrics__fail(m, ERR_INVAL);
    uint32_t hv = metrics__hash(name);
    for (size_t i = 0; i < m->nseen; i++)
        if (m->seen[i] == hv && strcmp(m->seen_names[i], name) == 0)
            return metrics__fail(m, ERR_EXISTS);
    if (m->nseen >= METRICS_FAMILIES_MAX)
        return metrics__fail(m, ERR_FULL);
    char *copy = mem_strdup(name);
    if (copy == NULL)
        return metrics__fail(m, ERR_NOMEM);

    static const char *const tnames[] = {"counter", "gauge", "histogram"};
    struct metrics__line l = {0};
    if (help) {
        line_puts(&l, "# HELP ");
        line_puts(&l, name);
        line_puts(&l, " ");
        line_escaped(&l, help, false);
        line_puts(&l, "\n");
    }
    line_puts(&l, "# TYPE ");
    line_puts(&l, name);
    line_puts(&l, " ");
    line_puts(&l, tnames[type]);
    line_puts(&l, "\n");
    int rc = metrics__commit(m, &l);
    if (rc != 0) {
        mem_free(copy);
        return rc;
    }
    m->seen[m->nseen] = hv;
    m->seen_names[m->nseen++] = copy;
    snprintf(m->cur, sizeof m->cur, "%s", name);
    m->cur_type = type;
    return 0;
}

/* Writes "{a="x",b="y",extra="v"}" (nothing when there are no labels). */
static int metrics__labels(struct metrics__line *l, const char *const *labels,
                           const char *extra_name, const char *extra_value)
{
    size_t n = 0;
    if (labels) {
        for (; labels[n] != NULL; n += 2) {
            if (labels[n + 1] == NULL)
                return ERR_INVAL;
            if (!metrics__label_ok(labels[n]) || n / 2 >= METRICS_LABELS_MAX)
                return ERR_INVAL;
        }
    }
    if (n == 0 && extra_name == NULL)
        return 0;
    line_puts(l, "{");
    for (size_t i = 0; i < n; i += 2) {
        if (i)
            line_puts(l, ",");
        line_puts(l, labels[i]);
        line_puts(l, "=\"");
        line_escaped(l, labels[i + 1], true);
        line_puts(l, "\"");
    }
    if (extra_name) {
        if (n)
            line_puts(l, ",");
        line_puts(l, extra_name);
        line_puts(l, "=\"");
        line_puts(l, extra_value);
        line_puts(l, "\"");
    }
    line_puts(l, "}");
    return 0;
}

int metrics_sample(struct metrics *m, const char *const *labels, double value)
{
    if (m->cur[0] == '\0' || m->cur_type == METRICS_HISTOGRAM)
        return metrics__fail(m, ERR_STATE);
    struct metrics__line l = {0};
    line_puts(&l, m->cur);
    int rc = metrics__labels(&l, labels, NULL, NULL);
    if (rc != 0) {
        mem_free(l.p);
        return metrics__fail(m, rc);
    }
    line_puts(&l, " ");
    line_value(&l, value);
    line_puts(&l, "\n");
    return metrics__commit(m, &l);
}

int metrics_hist_init(struct metrics_hist *h, const double *bounds, size_t n)
{
    memset(h, 0, sizeof *h);
    if (n == 0 || n > METRICS_BUCKETS_MAX || bounds == NULL)
        return ERR_INVAL;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
            return ERR_INVAL;
        h->bounds[i] = bounds[i];
    }
    h->nbounds = n;
    return 0;
}

void metrics_hist_observe(struct metrics_hist *h, double v)
{
    size_t i = 0;
    while (i < h->nbounds && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

int metrics_histogram(struct metrics *m, const char *const *labels, const struct metrics_hist *h)
{
    if (m->cur[0] == '\0' || m->cur_type != METRICS_HISTOGRAM)
        return metrics__fail(m, ERR_STATE);
    if (h == NULL || h->nbounds > METRICS_BUCKETS_MAX)
        return metrics__fail(m, ERR_INVAL);
    struct metrics__line l = {0};
    uint64_t cum = 0;
    int rc = 0;
    for (size_t i = 0; i <= h->nbounds && rc == 0; i++) {
        char le[40];
        if (i < h->nbounds) {
            snprintf(le, sizeof le, "%.15g", h->bounds[i]);
            if (strtod(le, NULL) != h->bounds[i])
                snprintf(le, sizeof le, "%.17g", h->bounds[i]);
        } else {
            snprintf(le, sizeof le, "+Inf");
        }
        cum += h->counts[i];
        line_puts(&l, m->cur);
        line_puts(&l, "_bucket");
        rc = metrics__labels(&l, labels, "le", le);
        line_puts(&l, " ");
        line_value(&l, (double)cum);
        line_puts(&l, "\n");
    }
    for (int part = 0; part < 2 && rc == 0; part++) {
        line_puts(&l, m->cur);
        line_puts(&l, part == 0 ? "_sum" : "_count");
        rc = metrics__labels(&l, labels, NULL, NULL);
        line_puts(&l, " ");
        line_value(&l, part == 0 ? h->sum : (double)h->count);
        line_puts(&l, "\n");
    }
    if (rc != 0) {
        mem_free(l.p);
        return metrics__fail(m, rc);
    }
    return metrics__commit(m, &l);
}

int metrics_counter1(struct metrics *m, const char *name, const char *help, double value)
{
    int rc = metrics_family(m, name, METRICS_COUNTER, help);
    return rc ? rc : metrics_sample(m, NULL, value);
}

int metrics_gauge1(struct metrics *m, const char *name, const char *help, double value)
{
    int rc = metrics_family(m, name, METRICS_GAUGE, help);
    return rc ? rc : metrics_sample(m, NULL, value);
}

int metrics_error(const struct metrics *m)
{
    return m->err;
}

const char *metrics_text(const struct metrics *m, size_t *len)
{
    if (len)
        *len = m->len;
    return m->buf ? m->buf : "";
}

char *metrics_take(struct metrics *m, size_t *len)
{
    char *b = m->buf;
    if (len)
        *len = m->len;
    metrics__forget(m);
    m->buf = NULL;
    m->len = m->cap = 0;
    m->err = 0;
    return b;
}

size_t metrics_escape_label(char *out, size_t cap, const char *s)
{
    struct metrics__line l = {0};
    line_escaped(&l, s, true);
    size_t need = l.len;
    if (cap > 0) {
        size_t n = need < cap - 1 ? need : cap - 1;
        if (l.p)
            memcpy(out, l.p, n);
        out[n] = '\0';
    }
    mem_free(l.p);
    return need;
}

uint64_t metrics_rss_bytes(void)
{
    unsigned long long size = 0, pages = 0;
    FILE *fp = fopen("/proc/self/statm", "r");
    if (fp != NULL) {
        if (fscanf(fp, "%llu %llu", &size, &pages) != 2)
            pages = 0;
        fclose(fp);
    }
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

int metrics_process(struct metrics *m)
{
    int rc = metrics_gauge1(m, "process_resident_memory_bytes", "Resident memory size in bytes.",
                            (double)metrics_rss_bytes());
    struct rusage ru;
    double cpu = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
              ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
    if (rc == 0)
        rc = metrics_counter1(m, "process_cpu_seconds_total",
                              "Total user and system CPU time spent in seconds.", cpu);
    long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        while (readdir(d) != NULL)
            fds++;
        closedir(d);
        fds = fds > 3 ? fds - 3 : 0; /* ".", ".." and the directory's own descriptor */
    }
    if (rc == 0)
        rc = metrics_gauge1(m, "process_open_fds", "Number of open file descriptors.", (double)fds);
    return rc;
}
