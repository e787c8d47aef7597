#!/usr/bin/python3
"""Snakemake's --cluster command for Paddock: paddock-submit.py JOBSCRIPT (docs/snakemake.md).

One Paddock job per workflow run. The run's first submission asks Snakemake for the run's
DAG (a dry run for the jobs, their rules, wildcards, threads and resources; --d3dag for the
edges), submits it as one *open* job (every task held until bound), and binds the job at hand;
every later submission binds its job: the job script is copied into the run's spool and the
task's id appended to SPOOL/binds, which the job manager reads. The external id printed for
Snakemake is the path of the status file the job manager writes for that task.

Where the DAG cannot be had, or a job has no task in it, that job is submitted as a Paddock job
of its own (and the reason goes to Snakemake's log).

Standard library only. Knobs: settings.json beside this file, overridden by the environment
(PADDOCK_CLUSTER, PADDOCK_DEADLINE, PADDOCK_JOB_NAME, PADDOCK_VC, PADDOCK_SNK_MODE=run|job,
PADDOCK_RUNTIME_S, PADDOCK_IDLE_S, PADDOCK for the CLI's path).
"""
import concurrent.futures
import fcntl
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = {
    "PADDOCK_CLUSTER": "cluster",
    "PADDOCK_DEADLINE": "deadline",
    "PADDOCK_JOB_NAME": "name",
    "PADDOCK_VC": "virtual_cluster",
    "PADDOCK_SNK_MODE": "mode",
    "PADDOCK_RUNTIME_S": "runtime_s",
    "PADDOCK_IDLE_S": "idle_s",
    "PADDOCK": "paddock",
}


def say(msg):
    print("paddock-submit: " + msg, file=sys.stderr)


def settings():
    s = {"cluster": "", "deadline": "", "name": "", "virtual_cluster": "default", "mode": "run",
         "runtime_s": 30, "idle_s": 300, "paddock": "paddock"}
    path = os.path.join(HERE, "settings.json")
    if os.path.exists(path):
        with open(path) as f:
            s.update(json.load(f))
    for var, key in ENV.items():
        if os.environ.get(var):
            s[key] = os.environ[var]
    s["runtime_s"] = float(s["runtime_s"])
    s["idle_s"] = float(s["idle_s"])
    return s


def properties(jobscript):
    with open(jobscript) as f:
        for line in f:
            if line.startswith("# properties = "):
                return json.loads(line[len("# properties = "):])
    raise SystemExit("paddock-submit: %s has no properties line" % jobscript)


def safe(text):
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def wildcards_key(rule, wildcards):
    return rule + "|" + ",".join("%s=%s" % (k, wildcards[k]) for k in sorted(wildcards))


def write_atomic(path, data, mode=0o600):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp.")
    with os.fdopen(fd, "w") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def paddock_cmd(s, *args):
    cmd = [s["paddock"]] + list(args)
    if s["cluster"]:
        cmd += ["--cluster", s["cluster"]]
    return cmd


def quote(s, path, spool):
    """`paddock quote` for the run: its summary to Snakemake's log, the whole in SPOOL/quote.txt.
    The shape comes from the profile of earlier runs of the same job name when there is one."""
    cmd = paddock_cmd(s, "quote", path)
    if s["deadline"]:
        cmd += ["--deadline", s["deadline"]]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    write_atomic(os.path.join(spool, "quote.txt"), r.stdout + r.stderr)
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    for line in lines[:5]:
        say("quote: " + line.strip())


def submit_spec(s, spec, spool, tag, with_quote=False):
    """paddock submit; returns the job id."""
    path = os.path.join(spool, tag + ".spec.json")
    write_atomic(path, json.dumps(spec))
    if with_quote:
        quote(s, path, spool)
    cmd = paddock_cmd(s, "submit", path)
    if s["deadline"]:
        cmd += ["--deadline", s["deadline"]]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit("paddock-submit: %s failed (exit %d): %s"
                         % (" ".join(map(shlex.quote, cmd)), r.returncode, r.stderr.strip()))
    return r.stdout.strip().split()[-1]


def jobs_dir(s):
    cluster = s["cluster"] or os.environ.get("PADDOCK_CLUSTER", "")
    return os.path.join(os.path.abspath(cluster), "jobs") if cluster else \
        os.path.expanduser("~/.paddock/jobs")


# ---- the run's DAG, from Snakemake itself ----

def started_in(pid):
    """Where the process was started: Snakemake changes into its --directory at start-up, so
    its cwd is the workflow's directory; its relative arguments are relative to the PWD it was
    started with (its environment)."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for var in f.read().split(b"\0"):
                if var.startswith(b"PWD="):
                    pwd = var[4:].decode()
                    if os.path.isdir(pwd):
                        return pwd
    except OSError:
        pass
    return os.readlink("/proc/%d/cwd" % pid)


def snakemake_ancestor():
    """The Python, argv (after the snakemake program), the directory it was started in and its
    working directory, of the snakemake that runs us."""
    pid = os.getppid()
    for _ in range(8):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = [a.decode() for a in f.read().split(b"\0") if a]
            with open("/proc/%d/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None
        for i, a in enumerate(argv):
            rest = None
            if os.path.basename(a) == "snakemake" and i < 2:
                rest = argv[i + 1:]
            elif a == "-m" and i + 1 < len(argv) and argv[i + 1] == "snakemake":
                rest = argv[i + 2:]
            if rest is not None:
                exe = os.readlink("/proc/%d/exe" % pid)
                if not os.path.basename(exe).startswith("python"):
                    exe = sys.executable
                return exe, rest, started_in(pid), os.readlink("/proc/%d/cwd" % pid)
        pid = ppid
        if pid <= 1:
            return None
    return None


JOB_HEAD = re.compile(r"^(local)?rule (\S+):$")
FIELD = re.compile(r"^\s+(jobid|wildcards|threads|resources): (.*)$")


def parse_dryrun(text):
    """{jobid: {rule, local, wildcards, threads, resources}} from a dry run's job listing."""
    jobs, cur = {}, None
    for line in text.splitlines():
        m = JOB_HEAD.match(line)
        if m:
            cur = {"local": bool(m.group(1)), "rule": m.group(2), "wildcards": {},
                   "threads": 1, "resources": {}}
            continue
        m = FIELD.match(line) if cur is not None else None
        if not m:
            continue
        key, val = m.groups()
        if key == "jobid":
            cur["jobid"] = int(val)
            jobs[cur["jobid"]] = cur
        elif key == "threads":
            cur["threads"] = int(val)
        else:
            d = {}
            for part in val.split(", "):
                if "=" in part:
                    k, v = part.split("=", 1)
                    d[k] = v
            cur[key] = d
    return jobs


def run_dag(python, args, cwd):
    env = dict(os.environ, PADDOCK_SNK_PLAN="1")
    base = [python, "-m", "snakemake"] + args + ["--nolock"]

    def run(extra):
        return subprocess.run(base + extra, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        dry, d3 = ex.submit(run, ["-n"]), ex.submit(run, ["--d3dag"])
        dry, d3 = dry.result(), d3.result()
    if dry.returncode != 0 or d3.returncode != 0:
        raise RuntimeError("snakemake -n / --d3dag failed: " + (dry.stdout + d3.stdout)[-400:])
    jobs = parse_dryrun(dry.stdout)
    start = d3.stdout.find("{")
    graph = json.loads(d3.stdout[start:])
    return jobs, graph


def num(v, default):
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def build_spec(s, jobs, graph, spool, workdir):
    rule_of = {n["value"]["jobid"]: n["value"]["rule"] for n in graph["nodes"]}
    parents = {}
    for link in graph["links"]:
        parents.setdefault(link["v"], []).append(link["u"])
    run = {j: job for j, job in jobs.items() if not job["local"]}
    for j, job in jobs.items():
        if rule_of.get(j) != job["rule"]:
            raise RuntimeError("job %d: the dry run says rule %s, the DAG %s"
                               % (j, job["rule"], rule_of.get(j)))

    def run_parents(j, seen):
        """the nearest ancestors that run here (through local jobs and jobs not to run)"""
        out = set()
        for p in parents.get(j, []):
            if p in seen:
                continue
            seen.add(p)
            if p in run:
                out.add(p)
            else:
                out |= run_parents(p, seen)
        return out

    tasks, keys = [], {}
    ids = {j: safe("%s.%d" % (job["rule"], j)) for j, job in run.items()}
    for j in sorted(run):
        job = run[j]
        res = job["resources"]
        runtime = num(res.get("runtime_s"), None)
        if runtime is None and "runtime" in res:
            runtime = num(res.get("runtime"), s["runtime_s"] / 60.0) * 60.0  # minutes
        tid = ids[j]
        tasks.append({
            "id": tid, "stage": job["rule"],
            "cmd": ["/bin/sh", "-c", 'exec /bin/sh "$0" >"$0.out" 2>"$0.err"',
                    os.path.join(spool, tid + ".sh")],
            "cpu": max(1, job["threads"]),
            "mem_mb": max(1, int(num(res.get("mem_mb"), 256))),
            "runtime_s": max(0.001, runtime if runtime is not None else s["runtime_s"]),
            "after": sorted(ids[p] for p in run_parents(j, set())),
            # A Snakemake job writes its outputs in place: two attempts at once would race.
            "speculate": False,
        })
        keys[wildcards_key(job["rule"], job["wildcards"])] = tid
    name = s["name"] or "snakemake-" + safe(os.path.basename(workdir.rstrip("/")) or "run")
    spec = {"version": 1, "name": name, "virtual_cluster": s["virtual_cluster"],
            "open": {"spool": spool, "idle_s": s["idle_s"]}, "tasks": tasks}
    return spec, keys


# ---- submission ----

def submit_alone(s, spool, props, jobscript, why):
    """The job as a Paddock job of its own; its external id names the job directory."""
    if why:
        say("%s: submitted as a Paddock job of its own (%s)" % (props["rule"], why))
    tid = safe("%s.%d" % (props["rule"], props["jobid"]))
    script = os.path.join(spool, tid + ".sh")
    with open(jobscript) as f:
        write_atomic(script, f.read(), 0o700)
    res = props.get("resources", {})
    runtime = num(res.get("runtime_s"), None)
    if runtime is None and "runtime" in res:
        runtime = num(res["runtime"], 1) * 60.0
    spec = {"version": 1, "name": s["name"] or "snakemake-" + safe(props["rule"]),
            "virtual_cluster": s["virtual_cluster"], "tasks": [{
                "id": tid, "stage": props["rule"],
                "cmd": ["/bin/sh", "-c", 'exec /bin/sh "$0" >"$0.out" 2>"$0.err"', script],
                "cpu": max(1, int(props.get("threads", 1))),
                "mem_mb": max(1, int(num(res.get("mem_mb"), 256))),
                "runtime_s": max(0.001, runtime if runtime is not None else s["runtime_s"]),
                "speculate": False}]}
    job = submit_spec(s, spec, spool, tid)
    print("job:%s:%s.err" % (os.path.join(jobs_dir(s), job), script))


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: paddock-submit.py JOBSCRIPT")
    jobscript = os.path.abspath(sys.argv[-1])
    s = settings()
    props = properties(jobscript)
    if props.get("type") != "single":
        raise SystemExit("paddock-submit: group jobs are not supported")
    # Snakemake keeps a run's job scripts in WORKDIR/.snakemake/tmp.XXXX: the run's spool is
    # WORKDIR/.snakemake/paddock/tmp.XXXX.
    tmpdir = os.path.dirname(jobscript)
    spool = os.path.join(os.path.dirname(tmpdir), "paddock", os.path.basename(tmpdir))
    os.makedirs(os.path.join(spool, "status"), mode=0o700, exist_ok=True)
    if s["mode"] == "job":
        return submit_alone(s, spool, props, jobscript, "")
    with open(os.path.join(spool, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run_path = os.path.join(spool, "run.json")
        if os.path.exists(run_path):
            with open(run_path) as f:
                run = json.load(f)
        else:
            run = {"job_id": None, "keys": {}}
            anc = snakemake_ancestor()
            try:
                if anc is None:
                    raise RuntimeError("the snakemake process that runs this was not found")
                jobs, graph = run_dag(anc[0], anc[1], anc[2])
                spec, keys = build_spec(s, jobs, graph, spool, anc[3])
                run = {"job_id": submit_spec(s, spec, spool, "run", True), "keys": keys,
                       "jobs_dir": jobs_dir(s), "cluster": s["cluster"], "name": spec["name"],
                       "tasks": len(spec["tasks"])}
                say("run %s: Paddock job %s (%d tasks, name %s)"
                    % (os.path.basename(spool), run["job_id"], run["tasks"], spec["name"]))
            except (RuntimeError, ValueError, KeyError, OSError,
                    subprocess.TimeoutExpired) as e:
                run["why"] = str(e)
                say("no DAG for the run (%s): every job becomes its own Paddock job" % e)
            write_atomic(run_path, json.dumps(run))
        if not run.get("job_id"):
            return submit_alone(s, spool, props, jobscript, run.get("why", "no open job"))
        tid = run["keys"].get(wildcards_key(props["rule"], props.get("wildcards", {})))
        if tid is None:
            return submit_alone(s, spool, props, jobscript, "not in the run's DAG")
        used = os.path.join(spool, "binds")
        if os.path.exists(used):
            with open(used) as f:
                if tid in f.read().split("\n"):
                    return submit_alone(s, spool, props, jobscript, "its task is bound already")
        with open(jobscript) as f:
            write_atomic(os.path.join(spool, tid + ".sh"), f.read(), 0o700)
        fd = os.open(used, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (tid + "\n").encode())
        finally:
            os.close(fd)
    print(os.path.join(spool, "status", tid))


if __name__ == "__main__":
    main()
