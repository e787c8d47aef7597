/* rmserver_recur.c - recurring jobs on the leader: firing each period once, launching the run's
 * job manager, fitting R* and placing it in the plan; and their admin queries.
 *
 * The ledger (rm/ledger_recur.c) decides nothing by itself about time: the leader proposes
 * RECUR_FIRE when a period is due (the ledger refuses a period fired already, so a new leader
 * repeating it is harmless), launches the run's paddock-jm (a relaunch after launch_retry is
 * harmless too: the ledger registers one JM per run), and proposes RECUR_MODEL with R* fitted
 * by the LP (rm/skyline.h) and the reservation placed by LowCost (rm/lowcost.h). */
#include "rm/rmserver_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "common/mem.h"
#include "rm/lowcost.h"
#include "rm/period.h"
#include "rm/skyline.h"
#include "rm/slo.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RECUR__EVERY_MS 250  /* how often the leader looks at the recurring jobs */
#define RECUR__PLAN_PTS 1440 /* points of the plan in the admin JSON */

extern char **environ;

/* ---- launching a run's job manager ---- */

static int recur__write(const char *path, const char *text, size_t len)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return -1;
    bool ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* paddock-jm beside this binary, else the bare name (PATH). */
void rmserver_jm_path(char *out, size_t cap)
{
    char self[PATH_MAX - 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            snprintf(out, cap, "%s/paddock-jm", self);
            if (access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, cap, "paddock-jm");
}

/* Starts argv detached (its own session, reparented to init: a double fork, so the RM keeps no
 * child), output to log. Only async-signal-safe calls after fork. 0 or -1 (errno). */
int rmserver_spawn(char *const *argv, char *const *envp, const char *log)
{
    if (envp == NULL)
        envp = environ;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || null < 0) {
        if (fd >= 0)
            close(fd);
        if (null >= 0)
            close(null);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        if (setsid() < 0 || fork() != 0)
            _exit(0);
        dup2(null, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (strchr(argv[0], '/') != NULL)
            execve(argv[0], argv, envp);
        else
            execvpe(argv[0], argv, envp);
        _exit(127);
    }
    close(fd);
    close(null);
    if (pid < 0)
        return -1;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* The last non-empty line of a run's jm.log: why its JM stopped. */
static void recur__log_tail(const char *dir, char *out, size_t cap)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/jm.log", dir);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n > 0)
            snprintf(out, cap, "%s", line);
    }
    fclose(f);
}

static void recur__run_dir(struct rmserver *s, const struct ledger_recurring *r, int64_t period,
                           char *dir, size_t cap, char *run, size_t rcap)
{
    snprintf(run, rcap, "%s-p%lld", r->name, (long long)period);
    snprintf(dir, cap, "%s/%s", s->cfg->jobs_dir, run);
}

/* Writes the run's job directory and starts its JM. 0, or an ERR_* with why. */
static int recur__launch(struct rmserver *s, const struct ledger_recurring *r, int64_t period,
                         char *why, size_t cap)
{
    char dir[PATH_MAX], run[LEDGER_NAME_MAX + 32], path[PATH_MAX + 32];
    recur__run_dir(s, r, period, dir, sizeof dir, run, sizeof run);
    mkdir(s->cfg->jobs_dir, 0750);
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
        return err_fmt(why, cap, ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    /* the run carries its recurring job's name: its profiles and history go by it */
    json_t *spec = json_loads(r->spec, 0, NULL);
    char *text = NULL;
    if (json_is_object(spec) && json_object_set_new(spec, "name", json_string(r->name)) == 0)
        text = json_dumps(spec, JSON_INDENT(1));
    json_decref(spec);
    snprintf(path, sizeof path, "%s/spec.json", dir);
    int wrc = text != NULL ? recur__write(path, text, strlen(text))
                           : recur__write(path, r->spec, strlen(r->spec));
    free(text);
    if (wrc != 0)
        return err_fmt(why, cap, ERR_IO, "cannot write %s: %s", path, strerror(errno));
    int64_t ps = period_start(period, r->period_ms, r->offset_ms);
    int64_t d = ledger_recurring_deadline(r);
    char runjson[512];
    int n = snprintf(runjson, sizeof runjson,
                     "{\"recurring\": \"%s\", \"period\": %lld, \"period_start_ms\": %lld, "
                     "\"deadline_at_ms\": %lld}\n",
                     r->name, (long long)period, (long long)ps, (long long)(d != 0 ? ps + d : 0));
    snprintf(path, sizeof path, "%s/run.json", dir);
    if (recur__write(path, runjson, (size_t)n) != 0)
        return err_fmt(why, cap, ERR_IO, "cannot write %s: %s", path, strerror(errno));

    char period_s[32], deadline_s[32], jm[PATH_MAX];
    snprintf(period_s, sizeof period_s, "%lld", (long long)period);
    snprintf(deadline_s, sizeof deadline_s, "%lld", (long long)(d != 0 ? ps + d : 0));
    /* the environment for a launcher: ours plus the run's */
    size_t nenv = 0;
    while (environ[nenv] != NULL)
        nenv++;
    char **envp = mem_calloc(nenv + 6, sizeof *envp);
    char e1[PATH_MAX + 32], e2[sizeof run + 32], e3[LEDGER_NAME_MAX + 32], e4[64], e5[64];
    if (envp == NULL)
        return err_fmt(why, cap, ERR_NOMEM, "out of memory");
    memcpy(envp, environ, nenv * sizeof *envp);
    snprintf(e1, sizeof e1, "PADDOCK_JOB_DIR=%s", dir);
    snprintf(e2, sizeof e2, "PADDOCK_RUN=%s", run);
    snprintf(e3, sizeof e3, "PADDOCK_RECURRING=%s", r->name);
    snprintf(e4, sizeof e4, "PADDOCK_PERIOD=%s", period_s);
    snprintf(e5, sizeof e5, "PADDOCK_DEADLINE_AT=%s", deadline_s);
    envp[nenv] = e1;
    envp[nenv + 1] = e2;
    envp[nenv + 2] = e3;
    envp[nenv + 3] = e4;
    envp[nenv + 4] = e5;
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/jm.log", dir);
    int rc;
    if (s->cfg->launcher != NULL && s->cfg->launcher[0] != '\0') {
        char *argv[] = {(char *)"/bin/sh", (char *)"-c", s->cfg->launcher, NULL};
        rc = rmserver_spawn(argv, envp, log);
    } else {
        rmserver_jm_path(jm, sizeof jm);
        char *argv[] = {jm,
                        (char *)"--job-dir",
                        dir,
                        (char *)"--cluster",
                        s->cfg->cluster_dir,
                        (char *)"--recurring",
                        (char *)r->name,
                        (char *)"--period",
                        period_s,
                        d != 0 ? (char *)"--deadline-at" : NULL,
                        deadline_s,
                        NULL};
        rc = rmserver_spawn(argv, envp, log);
    }
    mem_free(envp);
    if (rc != 0)
        return err_fmt(why, cap, ERR_IO, "cannot start the job manager: %s", strerror(errno));
    log_info("recurring %s: launched the run of period %lld in %s", r->name, (long long)period,
             dir);
    return 0;
}

/* ---- the model and the plan (Morpheus §5-6) ---- */

/* The LP fit runs on a libuv worker thread: it can take a second or more for long histories
 * (rm/skyline.h), far longer than Raft's heartbeats may wait on the loop. The runs are copied
 * out of the ledger before, the result placed and proposed after, on the loop. */
struct recur__fit {
    uv_work_t req;
    struct rmserver *s;
    char name[LEDGER_NAME_MAX];
    uint32_t generation;
    double *runs[SKYLINE_MAX_RUNS];
    size_t nruns, k;
    double rstar[SKYLINE_MAX_STEPS];
    int rc;
    int64_t took_ms;
};

static void recur__fit_free(struct recur__fit *f)
{
    for (size_t i = 0; i < f->nruns; i++)
        mem_free(f->runs[i]);
    mem_free(f);
}

static void recur__fit_work(uv_work_t *req)
{
    struct recur__fit *f = req->data;
    int64_t t0 = (int64_t)clock_mono_ms();
    struct skyline_fit_info info;
    f->rc =
        skyline_fit((const double *const *)f->runs, f->nruns, f->k, SKYLINE_ALPHA, f->rstar, &info);
    f->took_ms = (int64_t)clock_mono_ms() - t0;
}

static void recur__propose(struct rmserver *s, const struct ledger_recurring *r,
                           uint32_t generation, const double *rstar, size_t k, const char *error);

static void recur__fit_done(uv_work_t *req, int status)
{
    struct recur__fit *f = req->data;
    struct rmserver *s = f->s;
    s->recur_fitting = false;
    const struct ledger_recurring *r = ledger_recurring_find(fsm_ledger(s->fsm), f->name);
    if (status == 0 && s->ready && !s->stopping && r != NULL && r->generation == f->generation) {
        char why[LEDGER_REASON_MAX] = "";
        if (f->rc != 0)
            err_fmt(why, sizeof why, f->rc, "the skyline fit failed: %s", err_text(f->rc));
        else
            log_info("recurring %s: R* fitted over %zu runs x %zu steps in %lld ms", f->name,
                     f->nruns, f->k, (long long)f->took_ms);
        recur__propose(s, r, f->generation, f->rstar, f->rc == 0 ? f->k : 0, why);
    }
    recur__fit_free(f);
}

/* Starts the fit of R* for r over its last successful runs at the plan's step; with no such
 * run, proposes a model without a reservation at once. */
static void recur__model(struct rmserver *s, const struct ledger_recurring *r)
{
    ledger_t *l = fsm_ledger(s->fsm);
    uint32_t step = (uint32_t)s->cfg->plan_step_ms;
    struct recur__fit *f = mem_calloc(1, sizeof *f);
    if (f == NULL)
        return;
    f->s = s;
    memcpy(f->name, r->name, sizeof f->name);
    f->generation = r->generation;
    for (size_t i = ledger_history_count(l);
         i-- > 0 && f->nruns < (size_t)s->cfg->fit_runs && f->nruns < SKYLINE_MAX_RUNS;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL)
            continue;
        if (strcmp(h->recurring, r->name) != 0 || h->outcome != LEDGER_RUN_SUCCEEDED ||
            h->nsky == 0 || h->sky_step_ms == 0)
            continue;
        double *in = mem_alloc(h->nsky * sizeof *in);
        double *out = mem_calloc(SKYLINE_MAX_STEPS, sizeof *out);
        if (in == NULL || out == NULL) {
            mem_free(in);
            mem_free(out);
            break;
        }
        for (uint32_t j = 0; j < h->nsky; j++)
            in[j] = h->sky_milli[j] / 1000.0;
        size_t n = skyline_resample(in, h->nsky, h->sky_step_ms, out, SKYLINE_MAX_STEPS, step);
        mem_free(in);
        f->runs[f->nruns++] = out;
        f->k = n > f->k ? n : f->k;
    }
    if (f->nruns == 0 || f->k == 0) {
        recur__propose(s, r, r->generation, NULL, 0, "no successful run with a skyline yet");
        recur__fit_free(f);
        return;
    }
    f->req.data = f;
    if (uv_queue_work(&s->loop, &f->req, recur__fit_work, recur__fit_done) != 0) {
        recur__fit_free(f);
        return;
    }
    s->recur_fitting = true;
}

/* Adds (sign +1) or removes (-1) a placed job's reservation at every instance in the plan. */
static void recur__apply(struct lowcost_plan *p, const struct ledger_recurring *r, uint32_t step,
                         double sign)
{
    uint32_t period = (uint32_t)(r->period_ms / step);
    uint32_t off = (uint32_t)((r->offset_ms / step) % (period > 0 ? period : 1));
    for (uint32_t base = 0; period > 0 && base < p->nsteps; base += period)
        for (uint32_t k = 0; k < r->nresv; k++) {
            uint64_t t = ((uint64_t)base + off + r->resv_first + k) % p->nsteps;
            p->load[t] += sign * r->resv_milli[k] / 1000.0;
        }
}

/* Places R* of r with LowCost among the other reservations of its virtual cluster. Fills
 * cmd's vals2 (in resv) and the first step; 0 or an ERR_* with why. */
static int recur__place(struct rmserver *s, const struct ledger_recurring *r, const double *rstar,
                        size_t k, uint32_t *resv, uint32_t *nresv, uint32_t *first, char *why,
                        size_t cap)
{
    ledger_t *l = fsm_ledger(s->fsm);
    uint32_t step = (uint32_t)s->cfg->plan_step_ms;
    int64_t d = ledger_recurring_deadline(r);
    *nresv = 0;
    if (d == 0)
        return err_fmt(why, cap, ERR_STATE,
                       "no deadline: give one or accept the inferred one to get a reservation");
    if (r->period_ms % step != 0 || r->offset_ms % step != 0)
        return err_fmt(why, cap, ERR_INVAL,
                       "period and offset must be multiples of the plan step (%u ms)", step);
    uint64_t periods[LEDGER_MAX_RECURRING];
    size_t np = 0;
    for (size_t i = 0; i < ledger_recurring_count(l); i++) {
        const struct ledger_recurring *o = ledger_recurring_at(l, i);
        if (o->vc == r->vc && (o == r || o->nresv > 0) && o->period_ms % step == 0)
            periods[np++] = (uint64_t)o->period_ms / step;
    }
    bool capped = false;
    uint64_t cap_steps = (uint64_t)s->cfg->horizon_ms / step;
    cap_steps = cap_steps > LOWCOST_MAX_STEPS ? LOWCOST_MAX_STEPS : cap_steps;
    uint64_t lcm = period_lcm(periods, np, cap_steps, &capped);
    uint32_t pst = (uint32_t)(r->period_ms / step);
    if (lcm < pst || lcm % pst != 0)
        return err_fmt(why, cap, ERR_RANGE,
                       "its period does not fit the plan's horizon of %llu steps: raise "
                       "recurring.horizon or the plan step",
                       (unsigned long long)cap_steps);
    const struct ledger_vc *vc = ledger_vc_at(l, r->vc);
    struct lowcost_plan plan = {(uint32_t)lcm, vc != NULL ? (double)vc->capacity : 0, NULL};
    double *rv = mem_calloc(pst, sizeof *rv);
    plan.load = mem_calloc(lcm, sizeof *plan.load);
    if (plan.load == NULL || rv == NULL) {
        mem_free(plan.load);
        mem_free(rv);
        return err_fmt(why, cap, ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ledger_recurring_count(l); i++) {
        const struct ledger_recurring *o = ledger_recurring_at(l, i);
        if (o != r && o->vc == r->vc && o->nresv > 0 && (uint64_t)o->period_ms / step > 0 &&
            lcm % ((uint64_t)o->period_ms / step) == 0)
            recur__apply(&plan, o, step, 1);
    }
    /* the plan is in steps from the LCM's start; the job's instances start at its offset */
    uint32_t off = (uint32_t)((r->offset_ms / step) % pst);
    if (off != 0) { /* rotate so that instances start at 0 */
        double *rot = mem_alloc(lcm * sizeof *rot);
        if (rot != NULL) {
            for (uint64_t t = 0; t < lcm; t++)
                rot[t] = plan.load[(t + off) % lcm];
            mem_free(plan.load);
            plan.load = rot;
        }
    }
    uint32_t dl = (uint32_t)((d + step - 1) / step);
    struct lowcost_job job = {pst, 0, dl < pst ? dl : pst, rstar, (uint32_t)k};
    int rc = lowcost_place(&plan, &job, rv);
    if (rc == ERR_FULL)
        err_fmt(why, cap, rc,
                "no room in the plan: its skyline does not fit under the capacity before its "
                "deadline");
    else if (rc != 0)
        err_fmt(why, cap, rc, "placing it failed: %s", err_text(rc));
    if (rc == 0) {
        uint32_t lo = pst, hi = 0;
        for (uint32_t t = 0; t < pst; t++)
            if (rv[t] > 1e-9) {
                lo = t < lo ? t : lo;
                hi = t;
            }
        if (lo <= hi && hi - lo + 1 <= LEDGER_VALS_MAX) {
            for (uint32_t t = lo; t <= hi; t++)
                resv[t - lo] = (uint32_t)llround(rv[t] * 1000.0);
            *nresv = hi - lo + 1;
            *first = lo;
        } else if (lo <= hi) {
            rc = err_fmt(why, cap, ERR_RANGE, "the reservation spans more than %u plan steps",
                         LEDGER_VALS_MAX);
        }
    }
    mem_free(plan.load);
    mem_free(rv);
    return rc;
}

static void recur__propose(struct rmserver *s, const struct ledger_recurring *r,
                           uint32_t generation, const double *rstar, size_t k, const char *error)
{
    uint32_t *sky = mem_calloc(SKYLINE_MAX_STEPS, sizeof *sky);
    uint32_t *resv = mem_calloc(LEDGER_VALS_MAX, sizeof *resv);
    char why[LEDGER_REASON_MAX];
    snprintf(why, sizeof why, "%s", error);
    if (sky == NULL || resv == NULL) {
        mem_free(sky);
        mem_free(resv);
        return;
    }
    uint32_t nresv = 0, first = 0;
    int rc = 0;
    if (k > 0)
        rc = recur__place(s, r, rstar, k, resv, &nresv, &first, why, sizeof why);
    /* no deadline yet, or no run yet, is a note; a fit or placement that failed is an error */
    bool failed = (k == 0 && strstr(why, "fit failed") != NULL) || (rc != 0 && rc != ERR_STATE);
    for (size_t i = 0; i < k; i++)
        sky[i] = (uint32_t)llround(rstar[i] * 1000.0);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_MODEL);
    memcpy(c.name, r->name, sizeof c.name);
    c.count = generation;
    c.width = (uint32_t)s->cfg->plan_step_ms;
    c.cpus_milli = (uint32_t)s->cfg->plan_step_ms;
    c.mem_mb = first;
    c.state = failed ? 1 : 0;
    c.vals = sky;
    c.nvals = (uint32_t)k;
    c.vals2 = resv;
    c.nvals2 = nresv;
    c.text = why;
    c.text_len = (uint32_t)strlen(why);
    if (rmserver_submit(s, &c, NULL) == 0)
        log_info("recurring %s: model of generation %u: %zu steps, reservation of %u steps%s%s",
                 r->name, generation, k, nresv, why[0] ? ": " : "", why);
    mem_free(sky);
    mem_free(resv);
}

/* ---- the leader's loop ---- */

static uint64_t recur__key(const char *what, const char *name, int64_t a, int64_t b)
{
    char k[160];
    snprintf(k, sizeof k, "recur/%s/%s/%lld/%lld", what, name, (long long)a, (long long)b);
    return rmserver_key_hash(k);
}

static bool recur__pending(const struct rmserver *s, uint8_t type, const char *name)
{
    for (size_t i = 0; i < s->pending.len; i++)
        if (s->pending.items[i].cmd.type == type && strcmp(s->pending.items[i].cmd.name, name) == 0)
            return true;
    return false;
}

static void recur__note(struct rmserver *s, const struct ledger_recurring *r, uint8_t state,
                        const char *text, uint64_t key)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_NOTE);
    memcpy(c.name, r->name, sizeof c.name);
    c.period = r->pend_period;
    c.state = state;
    c.text = text;
    c.text_len = (uint32_t)strlen(text);
    c.key = key;
    rmserver_submit(s, &c, NULL);
}

void rmserver_recur_tick(struct rmserver *s)
{
    int64_t mono = (int64_t)clock_mono_ms();
    if (!s->ready || mono - s->recur_last_ms < RECUR__EVERY_MS)
        return;
    s->recur_last_ms = mono;
    ledger_t *l = fsm_ledger(s->fsm);
    int64_t now = clock_wall_ms();
    for (size_t i = 0; i < ledger_recurring_count(l); i++) {
        const struct ledger_recurring *r = ledger_recurring_at(l, i);
        if (r->generation != r->model_gen && !s->recur_fitting &&
            !recur__pending(s, LEDGER_CMD_RECUR_MODEL, r->name))
            recur__model(s, r);
        if (r->pend_period < 0) {
            int64_t due = period_index(now, r->period_ms, r->offset_ms);
            if (r->paused || due < 0 || due <= r->last_fired ||
                recur__pending(s, LEDGER_CMD_RECUR_FIRE, r->name))
                continue;
            int64_t p = r->last_fired + 1;
            if (p < due - LEDGER_CATCHUP_PERIODS + 1)
                p = due - LEDGER_CATCHUP_PERIODS + 1; /* older ones are recorded as skipped */
            struct ledger_cmd c;
            ledger_cmd_init(&c, LEDGER_CMD_RECUR_FIRE);
            memcpy(c.name, r->name, sizeof c.name);
            c.period = p;
            c.key = recur__key("fire", r->name, r->id, p);
            if (rmserver_submit(s, &c, NULL) == 0)
                log_info("recurring %s: period %lld is due", r->name, (long long)p);
            continue;
        }
        if (r->pend_job != 0 || recur__pending(s, LEDGER_CMD_RECUR_NOTE, r->name))
            continue;
        /* fired and not registered: launch, or relaunch after launch_retry, or give up */
        bool ours =
            s->recur_launch_period == r->pend_period && strcmp(s->recur_launch_name, r->name) == 0;
        int64_t since = r->pend_launch_ms != 0 ? now - r->pend_launch_ms : INT64_MAX;
        if (r->pend_launches > 0 &&
            (since < s->cfg->launch_retry_ms ||
             (ours && mono - s->recur_launch_mono < s->cfg->launch_retry_ms)))
            continue;
        char dir[PATH_MAX], run[LEDGER_NAME_MAX + 32], why[LEDGER_REASON_MAX] = "";
        recur__run_dir(s, r, r->pend_period, dir, sizeof dir, run, sizeof run);
        if (r->pend_launches > 0) {
            char tail[LEDGER_REASON_MAX - 64];
            recur__log_tail(dir, tail, sizeof tail);
            snprintf(why, sizeof why, "its job manager did not register within %llds%s%s",
                     (long long)(s->cfg->launch_retry_ms / 1000), tail[0] ? ": " : "", tail);
        }
        if (r->pend_launches >= (uint32_t)s->cfg->launch_max) {
            char gave[LEDGER_REASON_MAX + 48];
            snprintf(gave, sizeof gave, "gave up after %u launches: %s", r->pend_launches, why);
            gave[LEDGER_REASON_MAX - 1] = '\0'; /* a note's text is at most this long */
            log_warn("recurring %s: period %lld: %s", r->name, (long long)r->pend_period, gave);
            recur__note(s, r, 3, gave, recur__key("giveup", r->name, r->id, r->pend_period));
            continue;
        }
        if (why[0] != '\0')
            recur__note(s, r, 2, why, 0);
        int rc = recur__launch(s, r, r->pend_period, why, sizeof why);
        if (rc != 0) {
            log_warn("recurring %s: period %lld: %s", r->name, (long long)r->pend_period, why);
            recur__note(s, r, 2, why, 0);
        }
        s->recur_launch_period = r->pend_period;
        snprintf(s->recur_launch_name, sizeof s->recur_launch_name, "%s", r->name);
        s->recur_launch_mono = mono;
        recur__note(s, r, 1, "",
                    recur__key("launch", r->name, r->pend_period, (int64_t)r->pend_launches));
    }
}

/* ---- admin ---- */

/* The files a spec says it writes ("writes"), newline-separated, into out. */
static int recur__outputs(const char *spec, char *out, size_t cap, char *why, size_t wcap)
{
    json_error_t e;
    json_t *doc = json_loads(spec, 0, &e);
    if (doc == NULL || !json_is_object(doc)) {
        json_decref(doc);
        return err_fmt(why, wcap, ERR_PARSE, "spec: %s (line %d)", doc ? "not an object" : e.text,
                       e.line);
    }
    size_t used = 0, i;
    json_t *v;
    out[0] = '\0';
    json_array_foreach(json_object_get(doc, "writes"), i, v)
    {
        const char *p = json_string_value(v);
        size_t n = p != NULL ? strlen(p) : 0;
        if (n == 0 || strchr(p, '\n') != NULL || used + n + 2 > cap)
            continue;
        if (used > 0)
            out[used++] = '\n';
        memcpy(out + used, p, n);
        used += n;
        out[used] = '\0';
    }
    json_decref(doc);
    return 0;
}

static int recur__ms(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < 0)
        return ERR_INVAL;
    *out = v;
    return 0;
}

int rmserver_recur_write(struct rmserver *s, const proto_admin_query_t *q, struct ledger_cmd *c,
                         char *outs, size_t ocap, char *why, size_t cap)
{
    const char *k = q->kind;
    if (strcmp(k, PROTO_ADMIN_RECURRING_ADD) == 0) {
        ledger_cmd_init(c, LEDGER_CMD_RECUR_ADD);
        if (q->nargs != 5 || q->data == NULL || q->data[0] == '\0')
            return err_fmt(why, cap, ERR_INVAL,
                           "usage: recurring_add NAME VC PERIOD_MS OFFSET_MS DEADLINE_MS with "
                           "the spec as data");
        if (strlen(q->args[0]) >= LEDGER_NAME_MAX || q->args[0][0] == '\0' ||
            strlen(q->args[1]) >= LEDGER_NAME_MAX)
            return err_fmt(why, cap, ERR_RANGE, "name and virtual cluster: 1 to 63 bytes");
        if (recur__ms(q->args[2], &c->period_ms) != 0 || recur__ms(q->args[3], &c->offset_ms) ||
            recur__ms(q->args[4], &c->deadline_ms) != 0)
            return err_fmt(why, cap, ERR_INVAL, "period, offset and deadline are ms (decimal)");
        if (c->period_ms < 1000 || c->deadline_ms > c->period_ms)
            return err_fmt(why, cap, ERR_RANGE,
                           "the period must be at least 1 s and the deadline at most the period");
        if (c->period_ms % s->cfg->plan_step_ms != 0 || c->offset_ms % s->cfg->plan_step_ms != 0)
            return err_fmt(why, cap, ERR_RANGE,
                           "period and offset must be multiples of the plan step (%lld ms)",
                           (long long)s->cfg->plan_step_ms);
        int rc = recur__outputs(q->data, outs, ocap, why, cap);
        if (rc != 0)
            return rc;
        snprintf(c->name, sizeof c->name, "%s", q->args[0]);
        snprintf(c->vc, sizeof c->vc, "%s", q->args[1]);
        c->weight_milli = (uint32_t)llround(s->cfg->reprovision * 1000.0);
        c->text = q->data;
        c->text_len = (uint32_t)strlen(q->data);
        c->text2 = outs;
        c->text2_len = (uint32_t)strlen(outs);
        return 0;
    }
    uint8_t type = strcmp(k, PROTO_ADMIN_RECURRING_PAUSE) == 0    ? LEDGER_CMD_RECUR_PAUSE
                   : strcmp(k, PROTO_ADMIN_RECURRING_REMOVE) == 0 ? LEDGER_CMD_RECUR_REMOVE
                   : strcmp(k, PROTO_ADMIN_RECURRING_ACCEPT) == 0 ? LEDGER_CMD_RECUR_ACCEPT
                                                                  : 0;
    if (type == 0)
        return 1;
    ledger_cmd_init(c, type);
    if (q->nargs < 1 || strlen(q->args[0]) >= LEDGER_NAME_MAX ||
        (type == LEDGER_CMD_RECUR_PAUSE &&
         (q->nargs != 2 || (strcmp(q->args[1], "0") != 0 && strcmp(q->args[1], "1") != 0))))
        return err_fmt(why, cap, ERR_INVAL, "usage: %s NAME%s", k,
                       type == LEDGER_CMD_RECUR_PAUSE ? " 1|0" : "");
    if (ledger_recurring_find(fsm_ledger(s->fsm), q->args[0]) == NULL)
        return err_fmt(why, cap, ERR_NOTFOUND, "no recurring job named %s", q->args[0]);
    snprintf(c->name, sizeof c->name, "%s", q->args[0]);
    c->count = type == LEDGER_CMD_RECUR_PAUSE && q->args[1][0] == '1';
    return 0;
}

static json_t *recur__s(int64_t ms)
{
    return json_real((double)ms / 1000.0);
}

static json_t *recur__opt_s(int64_t ms)
{
    return ms > 0 ? recur__s(ms) : json_null();
}

static json_t *recur__milli_array(const uint32_t *v, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i] / 1000.0));
    return a;
}

static json_t *recur__run_json(const struct ledger_run *h)
{
    json_t *o = json_object();
    char jid[ID_JOB_SIZE] = "";
    if (h->job != 0)
        snprintf(jid, sizeof jid, ID_JOB_PREFIX "%012llx",
                 (unsigned long long)(h->job & 0xffffffffffffull));
    json_object_set_new(o, "job_id", json_string(jid));
    json_object_set_new(o, "name", json_string(h->name));
    json_object_set_new(o, "recurring", json_string(h->recurring));
    json_object_set_new(o, "period", h->period >= 0 ? json_integer(h->period) : json_null());
    json_object_set_new(o, "submit_ms", json_integer(h->submit_ms));
    json_object_set_new(o, "start_ms", h->start_ms > 0 ? json_integer(h->start_ms) : json_null());
    json_object_set_new(o, "end_ms", h->end_ms > 0 ? json_integer(h->end_ms) : json_null());
    json_object_set_new(o, "deadline_ms",
                        h->deadline_ms > 0 ? json_integer(h->deadline_ms) : json_null());
    bool ran = h->outcome <= LEDGER_RUN_EXPIRED;
    json_object_set_new(
        o, "met",
        h->deadline_ms > 0 && ran
            ? json_boolean(h->outcome == LEDGER_RUN_SUCCEEDED && h->end_ms <= h->deadline_ms)
        : h->deadline_ms > 0 ? json_false()
                             : json_null());
    json_object_set_new(o, "token_s", json_real((double)h->token_ms / 1000.0));
    json_object_set_new(o, "reprovisioned_tokens", json_integer(h->reprovisioned));
    json_object_set_new(o, "outcome", json_string(ledger_outcome_name(h->outcome)));
    json_object_set_new(o, "reason", json_string(h->reason));
    json_object_set_new(o, "period_start_ms",
                        h->period >= 0 ? json_integer(h->period_start_ms) : json_null());
    json_object_set_new(o, "out_read_ms",
                        h->out_read_ms > 0 ? json_integer(h->out_read_ms) : json_null());
    json_object_set_new(o, "skyline_step_s", recur__s(h->sky_step_ms));
    json_object_set_new(o, "skyline", recur__milli_array(h->sky_milli, h->nsky));
    return o;
}

static json_t *recur__json(struct rmserver *s, const struct ledger_recurring *r, bool full)
{
    ledger_t *l = fsm_ledger(s->fsm);
    json_t *o = json_object();
    const struct ledger_vc *vc = ledger_vc_at(l, r->vc);
    json_object_set_new(o, "name", json_string(r->name));
    json_object_set_new(o, "virtual_cluster", json_string(vc != NULL ? vc->name : ""));
    json_object_set_new(o, "period_s", recur__s(r->period_ms));
    json_object_set_new(o, "offset_s", recur__s(r->offset_ms));
    int64_t d = ledger_recurring_deadline(r);
    json_object_set_new(o, "deadline_s", recur__opt_s(d));
    json_object_set_new(o, "deadline_source",
                        json_string(r->deadline_source == LEDGER_DEADLINE_USER       ? "user"
                                    : r->deadline_source == LEDGER_DEADLINE_INFERRED ? "inferred"
                                                                                     : "none"));
    json_object_set_new(o, "inferred_deadline_s",
                        r->slo_source != SLO_NONE ? recur__opt_s(r->slo_deadline_ms) : json_null());
    json_object_set_new(o, "accepted",
                        json_boolean(r->deadline_source == LEDGER_DEADLINE_INFERRED));
    json_object_set_new(o, "paused", json_boolean(r->paused));
    int64_t next = period_start(r->last_fired + 1, r->period_ms, r->offset_ms);
    json_object_set_new(o, "next_run_ms", json_integer(next));
    json_object_set_new(o, "last_period", json_integer(r->last_fired));
    json_object_set_new(o, "runs", json_integer(r->runs));
    json_object_set_new(o, "met", json_integer(r->met));
    json_object_set_new(o, "missed", json_integer(r->missed));
    json_object_set_new(o, "reserved", json_boolean(r->nresv > 0));
    uint32_t peak = 0;
    for (uint32_t k = 0; k < r->nresv; k++)
        peak = r->resv_milli[k] > peak ? r->resv_milli[k] : peak;
    json_object_set_new(o, "reservation_peak_tokens", json_integer((peak + 999) / 1000));
    json_object_set_new(o, "last_error", json_string(r->last_error));
    json_object_set_new(o, "model_note", json_string(r->model_note));
    if (r->pend_period >= 0) {
        json_t *p = json_object();
        char jid[ID_JOB_SIZE] = "";
        if (r->pend_job != 0)
            snprintf(jid, sizeof jid, ID_JOB_PREFIX "%012llx",
                     (unsigned long long)(r->pend_job & 0xffffffffffffull));
        json_object_set_new(p, "period", json_integer(r->pend_period));
        json_object_set_new(p, "state", json_string(r->pend_job != 0 ? "running" : "starting"));
        json_object_set_new(p, "job_id", json_string(jid));
        json_object_set_new(p, "launches", json_integer(r->pend_launches));
        json_object_set_new(p, "reason", json_string(r->pend_reason));
        json_object_set_new(o, "pending", p);
    } else {
        json_object_set_new(o, "pending", json_null());
    }
    if (!full)
        return o;
    json_t *slo = json_object();
    json_object_set_new(slo, "source", json_string(slo_source_name(r->slo_source)));
    json_object_set_new(slo, "deadline_s",
                        r->slo_source != SLO_NONE ? recur__opt_s(r->slo_deadline_ms) : json_null());
    json_object_set_new(slo, "runs", json_integer(r->slo_runs));
    json_object_set_new(slo, "consumed", json_integer(r->slo_consumed));
    json_object_set_new(slo, "read_cv", json_real(r->slo_read_cv));
    json_object_set_new(slo, "slack_ratio", json_real(r->slo_slack_ratio));
    json_object_set_new(slo, "read_median_s",
                        r->slo_consumed > 0 ? recur__s(r->slo_read_median_ms) : json_null());
    json_object_set_new(slo, "end_pct_s",
                        r->slo_runs > 0 ? recur__s(r->slo_end_pct_ms) : json_null());
    json_object_set_new(o, "slo", slo);
    json_t *sky = json_object();
    json_object_set_new(sky, "step_s", recur__s(r->sky_step_ms));
    json_object_set_new(sky, "tokens", recur__milli_array(r->sky_milli, r->nsky));
    json_object_set_new(o, "skyline", sky);
    json_t *resv = json_object(), *tok = json_array();
    for (uint32_t k = 0; k < r->resv_first + r->nresv && r->nresv > 0; k++)
        json_array_append_new(
            tok, json_real(k < r->resv_first ? 0 : r->resv_milli[k - r->resv_first] / 1000.0));
    json_object_set_new(resv, "step_s", recur__s(r->plan_step_ms));
    json_object_set_new(resv, "tokens", tok);
    json_object_set_new(o, "reservation", resv);
    json_t *hist = json_array();
    for (size_t i = ledger_history_count(l); i-- > 0 && json_array_size(hist) < 20;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL)
            continue;
        if (strcmp(h->recurring, r->name) == 0)
            json_array_append_new(hist, recur__run_json(h));
    }
    json_object_set_new(o, "history", hist);
    return o;
}

static json_t *recur__plan(struct rmserver *s)
{
    ledger_t *l = fsm_ledger(s->fsm);
    json_t *plans = json_array();
    for (size_t v = 0; v < ledger_vc_count(l); v++) {
        const struct ledger_vc *vc = ledger_vc_at(l, v);
        uint64_t periods[LEDGER_MAX_RECURRING];
        size_t np = 0;
        int64_t step = 0;
        for (size_t i = 0; i < ledger_recurring_count(l); i++) {
            const struct ledger_recurring *r = ledger_recurring_at(l, i);
            if (r->vc == v && r->nresv > 0) {
                periods[np++] = (uint64_t)r->period_ms;
                step = step == 0 || r->plan_step_ms < step ? r->plan_step_ms : step;
            }
        }
        if (np == 0)
            continue;
        bool capped = false;
        uint64_t horizon = period_lcm(periods, np, (uint64_t)s->cfg->horizon_ms, &capped);
        uint64_t steps = horizon / (uint64_t)step;
        uint64_t per = (steps + RECUR__PLAN_PTS - 1) / RECUR__PLAN_PTS;
        per = per < 1 ? 1 : per;
        uint64_t points = (steps + per - 1) / per;
        json_t *o = json_object(), *jobs = json_array();
        json_object_set_new(o, "virtual_cluster", json_string(vc->name));
        json_object_set_new(o, "capacity", json_integer(vc->capacity));
        json_object_set_new(o, "step_s", recur__s(step));
        json_object_set_new(o, "horizon_s", recur__s((int64_t)horizon));
        json_object_set_new(o, "lcm_capped", json_boolean(capped));
        json_object_set_new(o, "points", json_integer((json_int_t)points));
        json_object_set_new(o, "point_s", recur__s((int64_t)(per * (uint64_t)step)));
        double *total = mem_calloc(points, sizeof *total);
        for (size_t i = 0; i < ledger_recurring_count(l); i++) {
            const struct ledger_recurring *r = ledger_recurring_at(l, i);
            if (r->vc != v || r->nresv == 0)
                continue;
            json_t *j = json_object(), *tok = json_array();
            json_object_set_new(j, "name", json_string(r->name));
            json_object_set_new(j, "period_s", recur__s(r->period_ms));
            json_object_set_new(j, "offset_s", recur__s(r->offset_ms));
            for (uint64_t pnt = 0; pnt < points; pnt++) {
                uint32_t mx = 0;
                for (uint64_t t = pnt * per; t < (pnt + 1) * per && t < steps; t++) {
                    uint32_t x = ledger_recurring_reserved_at(r, (int64_t)t * step);
                    mx = x > mx ? x : mx;
                }
                json_array_append_new(tok, json_integer(mx));
                if (total != NULL)
                    total[pnt] += mx;
            }
            json_object_set_new(j, "tokens", tok);
            json_array_append_new(jobs, j);
        }
        double peak = 0;
        for (uint64_t pnt = 0; total != NULL && pnt < points; pnt++)
            peak = total[pnt] > peak ? total[pnt] : peak;
        mem_free(total);
        json_object_set_new(o, "peak_tokens", json_integer((json_int_t)peak));
        json_object_set_new(o, "jobs", jobs);
        json_array_append_new(plans, o);
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "plans", plans);
    return doc;
}

/* ---- suggestions: ad-hoc jobs that recur (Morpheus §4) ---- */

#define RECUR__SUGGEST_NAMES 256 /* distinct names judged in one query */

static json_t *recur__fit_json(const struct period_fit *f)
{
    json_t *e = json_object();
    json_object_set_new(e, "runs", json_integer(f->runs));
    json_object_set_new(e, "median_gap_s", recur__s(f->median_gap_ms));
    json_object_set_new(e, "mad_gap_s", recur__s(f->mad_gap_ms));
    json_object_set_new(e, "cv", json_real(f->cv));
    json_object_set_new(e, "phase_mad_s", recur__s(f->phase_mad_ms));
    json_object_set_new(e, "first_submit_ms", json_integer(f->first_ms));
    json_object_set_new(e, "last_submit_ms", json_integer(f->last_ms));
    json_object_set_new(e, "next_ms", json_integer(f->next_ms));
    return e;
}

/* One name's ad-hoc runs judged: a suggestion (periodic) or NULL with *other set (why not). */
static json_t *recur__suggest_one(struct rmserver *s, const char *name,
                                  const struct period_params *pp, int64_t now, json_t **other)
{
    ledger_t *l = fsm_ledger(s->fsm);
    int64_t sub[PERIOD_MAX_RUNS];
    const struct ledger_run *run[PERIOD_MAX_RUNS];
    size_t k = 0;
    for (size_t i = ledger_history_count(l); i-- > 0 && k < pp->max_runs;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL || h->recurring[0] != '\0' || h->job == 0 || h->submit_ms <= 0 ||
            strcmp(h->name, name) != 0)
            continue;
        sub[k] = h->submit_ms;
        run[k++] = h;
    }
    struct period_fit f;
    if (k == 0 || period_infer(sub, k, now, pp, &f) != 0)
        return NULL;
    if (f.verdict != PERIOD_PERIODIC) {
        *other = json_object();
        json_object_set_new(*other, "name", json_string(name));
        json_object_set_new(*other, "verdict", json_string(period_verdict_name(f.verdict)));
        json_object_set_new(*other, "period_s",
                            f.period_ms > 0 ? recur__s(f.period_ms) : json_null());
        json_object_set_new(*other, "evidence", recur__fit_json(&f));
        return NULL;
    }
    /* the deadline from the runs' completion (rm/slo.h), each run against its own period */
    struct slo_run sr[PERIOD_MAX_RUNS];
    size_t m = 0, ok = 0;
    for (size_t i = 0; i < k; i++) {
        if (run[i]->end_ms <= 0)
            continue;
        int64_t ps = period_nearest_start(run[i]->submit_ms, f.period_ms, f.offset_ms);
        sr[m].start = (run[i]->start_ms > 0 ? run[i]->start_ms : run[i]->submit_ms) - ps;
        sr[m].end = run[i]->end_ms - ps;
        sr[m].out_read = -1; /* consumers are known for recurring jobs' declared outputs only */
        sr[m].ok = run[i]->outcome == LEDGER_RUN_SUCCEEDED;
        ok += sr[m].ok;
        m++;
    }
    struct slo_params sp;
    struct slo_inference inf;
    slo_params_default(&sp);
    if (slo_infer(sr, m, &sp, &inf) != 0)
        memset(&inf, 0, sizeof inf);
    int64_t deadline = inf.deadline;
    bool capped = deadline > f.period_ms;
    if (capped)
        deadline = f.period_ms; /* one run ends before the next starts (recurring add's rule) */
    const struct ledger_vc *vc = ledger_vc_at(l, run[0]->vc);
    char jid[ID_JOB_SIZE];
    rmserver_job_id(run[0]->job, jid);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "virtual_cluster", json_string(vc != NULL ? vc->name : ""));
    json_object_set_new(o, "period_ms", json_integer(f.period_ms));
    json_object_set_new(o, "period_s", recur__s(f.period_ms));
    json_object_set_new(o, "offset_ms", json_integer(f.offset_ms));
    json_object_set_new(o, "deadline_ms", deadline > 0 ? json_integer(deadline) : json_null());
    json_object_set_new(o, "deadline_s", recur__opt_s(deadline));
    json_object_set_new(o, "deadline_source", json_string(slo_source_name(inf.source)));
    json_object_set_new(o, "deadline_capped", json_boolean(capped));
    json_object_set_new(o, "last_job_id", json_string(jid));
    json_t *e = recur__fit_json(&f);
    json_object_set_new(e, "succeeded", json_integer((json_int_t)ok));
    json_object_set_new(e, "end_pct_s",
                        inf.source != SLO_NONE ? recur__s(inf.end_pct) : json_null());
    json_object_set_new(o, "evidence", e);
    return o;
}

static json_t *recur__suggest(struct rmserver *s, const proto_admin_query_t *q, int *code,
                              char *why, size_t cap)
{
    ledger_t *l = fsm_ledger(s->fsm);
    const char *only = q->nargs >= 1 && q->args[0][0] != '\0' ? q->args[0] : NULL;
    if (only != NULL && ledger_recurring_find(l, only) != NULL) {
        *code = ERR_EXISTS;
        err_fmt(why, cap, *code, "%s is a recurring job already", only);
        return NULL;
    }
    struct period_params pp;
    period_params_default(&pp);
    pp.quantum_ms = s->cfg->plan_step_ms > 0 ? s->cfg->plan_step_ms : 1000;
    pp.min_period_ms = pp.quantum_ms > 1000 ? pp.quantum_ms : 1000;
    int64_t now = (int64_t)clock_wall_ms();
    char names[RECUR__SUGGEST_NAMES][LEDGER_NAME_MAX]; /* 16 KiB */
    size_t nn = 0;
    for (size_t i = ledger_history_count(l); i-- > 0 && nn < RECUR__SUGGEST_NAMES;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL || h->recurring[0] != '\0' || h->job == 0 ||
            (only != NULL && strcmp(h->name, only) != 0) ||
            ledger_recurring_find(l, h->name) != NULL)
            continue;
        bool seen = false;
        for (size_t j = 0; j < nn && !seen; j++)
            seen = strcmp(names[j], h->name) == 0;
        if (!seen)
            snprintf(names[nn++], LEDGER_NAME_MAX, "%s", h->name);
    }
    json_t *sug = json_array(), *others = json_array();
    for (size_t j = 0; j < nn; j++) {
        json_t *other = NULL;
        json_t *o = recur__suggest_one(s, names[j], &pp, now, &other);
        if (o != NULL)
            json_array_append_new(sug, o);
        else if (other != NULL)
            json_array_append_new(others, other);
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "suggestions", sug);
    json_object_set_new(doc, "not_periodic", others);
    json_object_set_new(doc, "plan_step_ms", json_integer(pp.quantum_ms));
    json_object_set_new(doc, "now_ms", json_integer(now));
    return doc;
}

json_t *rmserver_recur_json(struct rmserver *s, const proto_admin_query_t *q, int *code, char *why,
                            size_t cap)
{
    if (strcmp(q->kind, PROTO_ADMIN_RECURRING_SUGGEST) == 0)
        return recur__suggest(s, q, code, why, cap);
    ledger_t *l = fsm_ledger(s->fsm);
    if (strcmp(q->kind, PROTO_ADMIN_RECURRING_LIST) == 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < ledger_recurring_count(l); i++)
            json_array_append_new(arr, recur__json(s, ledger_recurring_at(l, i), false));
        json_t *doc = json_object();
        json_object_set_new(doc, "recurring", arr);
        return doc;
    }
    if (strcmp(q->kind, PROTO_ADMIN_RECURRING_SHOW) == 0) {
        const struct ledger_recurring *r =
            q->nargs == 1 ? ledger_recurring_find(l, q->args[0]) : NULL;
        if (r == NULL) {
            *code = q->nargs == 1 ? ERR_NOTFOUND : ERR_INVAL;
            err_fmt(why, cap, *code, q->nargs == 1 ? "no recurring job named %s" : "usage: %s",
                    q->nargs == 1 ? q->args[0] : "recurring_show NAME");
            return NULL;
        }
        return recur__json(s, r, true);
    }
    if (strcmp(q->kind, PROTO_ADMIN_HISTORY) == 0) {
        json_t *arr = json_array();
        for (size_t i = ledger_history_count(l); i-- > 0;) {
            const struct ledger_run *h = ledger_history_at(l, i);
            if (h == NULL)
                continue;
            if (q->nargs >= 1 && q->args[0][0] != '\0' && strcmp(h->name, q->args[0]) != 0 &&
                strcmp(h->recurring, q->args[0]) != 0)
                continue;
            json_array_append_new(arr, recur__run_json(h));
        }
        json_t *doc = json_object();
        json_object_set_new(doc, "runs", arr);
        return doc;
    }
    if (strcmp(q->kind, PROTO_ADMIN_PLAN) == 0)
        return recur__plan(s);
    *code = 1;
    return NULL;
}

json_t *rmserver_recur_write_json(struct rmserver *s, const struct rmserver_cmd *c,
                                  const struct ledger_result *res)
{
    (void)res;
    const struct ledger_recurring *r = ledger_recurring_find(fsm_ledger(s->fsm), c->cmd.name);
    if (c->cmd.type == LEDGER_CMD_RECUR_REMOVE || r == NULL) {
        json_t *o = json_object();
        json_object_set_new(o, "removed", json_string(c->cmd.name));
        return o;
    }
    return recur__json(s, r, false);
}
