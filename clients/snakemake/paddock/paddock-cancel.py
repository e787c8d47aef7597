#!/usr/bin/python3
"""Snakemake's --cluster-cancel command for Paddock: paddock-cancel.py EXTERNAL_ID...

Snakemake calls it on Ctrl-C with the external ids of the jobs still running. Each run's open
job is cancelled once (`paddock job cancel`), which cancels its tasks at their nodes; a job
submitted on its own is cancelled by its id (docs/snakemake.md).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
submit = __import__("paddock-submit")


def main():
    s = submit.settings()
    jobs = set()
    for ext in sys.argv[1:]:
        if ext.startswith("job:"):
            jobs.add(os.path.basename(ext[4:].rstrip("/")))
            continue
        spool = ext.rsplit("/status/", 1)[0]
        try:
            with open(os.path.join(spool, "run.json")) as f:
                run = json.load(f)
        except (OSError, ValueError):
            continue
        if run.get("job_id"):
            jobs.add(run["job_id"])
    rc = 0
    for job in sorted(jobs):
        r = subprocess.run(submit.paddock_cmd(s, "job", "cancel", job))
        rc = rc or r.returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
