#!/usr/bin/python3
"""The same Snakemake workflow timed three ways in one run (docs/snakemake.md):

  local     snakemake --cores C on this machine
  per-job   Paddock, one Paddock job per Snakemake job (PADDOCK_SNK_MODE=job, no deadline)
  one-job   Paddock, the run as one open job with a deadline (the profile's default)

on a local cluster it starts (PNS process nodes of CPUS cpus: C = PNS * CPUS cores in all).
Prints wall times, Paddock jobs and job managers started, token-seconds, and tokens held over
time (granted by the RM, and in use by running tasks), from each job's report.json.

  clients/snakemake/compare.py --bin build/bin [--n 40] [--work-s 3] [--pns 2] [--cpus 4]
                               [--deadline 10m] [--step 10] [--json OUT] [--fast-poll]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
SNAKEFILE = os.path.join(SRC, "tests", "snakemake", "fanout", "Snakefile")


def run_snakemake(workdir, extra, env, log):
    os.makedirs(workdir)
    cmd = ["snakemake", "-s", SNAKEFILE, "-d", workdir] + extra
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
    t1 = time.time()
    if r.returncode != 0:
        sys.exit("compare: %s failed (log %s)" % (" ".join(cmd), log))
    return t0, t1


def jobs_since(cluster, t0_ms, names):
    """The reports of the jobs submitted since t0 with one of these names."""
    out = []
    for state in glob.glob(os.path.join(cluster, "jobs", "*", "report.json")):
        with open(state) as f:
            r = json.load(f)
        if r.get("name") in names and r.get("started_ms", 0) >= t0_ms - 1000:
            out.append(r)
    return out


def timeline(reports, t0_s, t1_s, step):
    """Per step from t0: tokens granted (RM) and in use (running attempts), all jobs summed."""
    n = int((t1_s - t0_s) / step) + 1
    granted, used = [0.0] * n, [0.0] * n
    for r in reports:
        start = r["started_ms"] / 1000.0
        end = start + (r.get("makespan_s") or 0)
        samples = sorted(r.get("tokens", []), key=lambda s: s["t_s"])
        for k in range(n):
            t = t0_s + k * step
            if t < start or t > end or not samples:
                continue
            g = 0
            for s in samples:
                if start + s["t_s"] <= t:
                    g = s["granted"]
            granted[k] += g
        for a in r.get("attempts", []):
            if a.get("start_s") is None or a.get("end_s") is None:
                continue
            a0, a1 = start + a["start_s"], start + a["end_s"]
            for k in range(n):
                lo, hi = t0_s + k * step, t0_s + (k + 1) * step
                overlap = min(hi, a1) - max(lo, a0)
                if overlap > 0:
                    used[k] += overlap / step
    return granted, used


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the directory of paddock and its daemons")
    ap.add_argument("--n", type=int, default=40, help="shards of the fanout workflow")
    ap.add_argument("--work-s", type=float, default=3, help="seconds each shard/transform sleeps")
    ap.add_argument("--pns", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--deadline", default="10m")
    ap.add_argument("--step", type=float, default=10)
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--fast-poll", action="store_true",
                    help="CI=true: Snakemake 7 polls its cluster jobs every 1 s, not every 10 s")
    a = ap.parse_args()
    paddock = os.path.join(os.path.abspath(a.bin), "paddock")
    cores = a.pns * a.cpus
    tmp = tempfile.mkdtemp(prefix="paddock-snk-compare.")
    cluster = os.path.join(tmp, "c")
    subprocess.run([paddock, "cluster", "up", "--dir", cluster, "--rm", "1", "--pn", str(a.pns),
                    "--pn-cpus", str(a.cpus), "--pn-mem-mb", "4096"], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        config = ["--config", "n=%d" % a.n, "work_s=%g" % a.work_s]
        profile = ["--profile", os.path.join(HERE, "paddock"), "--jobs", "100"] + config
        env = dict(os.environ, PADDOCK=paddock, PADDOCK_CLUSTER=cluster)
        env.pop("PADDOCK_DEADLINE", None)
        env.pop("CI", None)
        if a.fast_poll:
            env["CI"] = "true"
        ways = {}
        t0, t1 = run_snakemake(os.path.join(tmp, "local"), ["--cores", str(cores)] + config, env,
                               os.path.join(tmp, "local.log"))
        ways["local"] = {"t0": t0, "t1": t1, "reports": []}
        e = dict(env, PADDOCK_SNK_MODE="job", PADDOCK_JOB_NAME="snk-compare-perjob")
        t0, t1 = run_snakemake(os.path.join(tmp, "perjob"), profile, e,
                               os.path.join(tmp, "perjob.log"))
        ways["per-job"] = {"t0": t0, "t1": t1,
                           "reports": jobs_since(cluster, t0 * 1000, {"snk-compare-perjob"})}
        e = dict(env, PADDOCK_JOB_NAME="snk-compare-run", PADDOCK_DEADLINE=a.deadline)
        t0, t1 = run_snakemake(os.path.join(tmp, "onejob"), profile, e,
                               os.path.join(tmp, "onejob.log"))
        ways["one-job"] = {"t0": t0, "t1": t1,
                           "reports": jobs_since(cluster, t0 * 1000, {"snk-compare-run"})}
    finally:
        subprocess.run([paddock, "cluster", "down", "--dir", cluster],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jobs = 2 * a.n + (a.n + 9) // 10 + 2
    print("fanout workflow: %d Snakemake jobs (n=%d, work_s=%g), %d cores (%d PNs x %d cpus)%s"
          % (jobs, a.n, a.work_s, cores, a.pns, a.cpus,
             ", Snakemake polling every 1 s" if a.fast_poll else ""))
    print()
    print("| way | wall (s) | Paddock jobs (JMs) | token-s in use | token-s granted | peak in use |"
          " deadline |")
    print("|---|---:|---:|---:|---:|---:|---|")
    figures = {}
    for name, w in ways.items():
        wall = w["t1"] - w["t0"]
        g, u = timeline(w["reports"], w["t0"], w["t1"], 1.0)
        if name == "local":
            g = u = [float(cores)] * len(g)
            met = "-"
            used_s = cores * wall
        else:
            used_s = sum(r.get("token_s", 0) for r in w["reports"])
            met = ", ".join(sorted({"met" if r.get("deadline_met") else "missed"
                                    for r in w["reports"] if r.get("deadline_s")})) or "none"
        figures[name] = {"wall_s": wall, "jobs": len(w["reports"]), "token_s": used_s,
                         "granted_token_s": sum(g), "peak_used": max(u) if u else 0}
        print("| %s | %.1f | %d | %.0f | %.0f | %.1f | %s |"
              % (name, wall, len(w["reports"]), used_s, sum(g), max(u) if u else 0, met))
    print()
    print("tokens held over time (granted / in use; local: the cores it holds), every %gs:"
          % a.step)
    series = {}
    for name, w in ways.items():
        g, u = timeline(w["reports"], w["t0"], w["t1"], a.step)
        if name == "local":
            g = u = [float(cores)] * len(g)
        series[name] = (g, u)
    longest = max(len(s[0]) for s in series.values())
    print()
    print("| t (s) | " + " | ".join(series) + " |")
    print("|---:|" + "---|" * len(series))
    for k in range(longest):
        cells = []
        for name in series:
            g, u = series[name]
            cells.append("%.0f / %.1f" % (g[k], u[k]) if k < len(g) else "")
        print("| %d | %s |" % (int(k * a.step), " | ".join(cells)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"figures": figures, "series": series}, f, indent=1)
    if a.keep:
        print("\nkept " + tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
