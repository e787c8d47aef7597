#!/usr/bin/env python3
"""Runs `paddock-sim recurring` on both engines (the token-slice engine and the cluster simulator
with the RM's ledger) at three loads and prints the old | new table of docs/recurring-sim.md.

usage: python3 docs/img/recurring_engines.py PATH/TO/paddock-sim [SEED]   (from the repository root)
"""
import json
import subprocess
import sys

SIM = sys.argv[1]
SEED = sys.argv[2] if len(sys.argv) > 2 else "1"
LOADS = (0.7, 0.9, 1.0)
POLICIES = ("none", "greedy", "lowcost", "lowcost_reprov")


def run(engine, load):
    out = subprocess.run([SIM, "recurring", "--engine", engine, "--load", str(load), "--seed", SEED,
                          "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


print("| load | policy | SLO violations slice | cluster | missed / runs slice | cluster "
      "| peak tokens slice | cluster | ad-hoc p50 (s) slice | cluster | utilization slice | cluster |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for load in LOADS:
    old, new = run("slice", load), run("cluster", load)
    for p in POLICIES:
        a, b = old["policies"][p], new["policies"][p]
        print(f"| {load} | {p} | {a['slo_violation_fraction']:.3f} | {b['slo_violation_fraction']:.3f} "
              f"| {a['missed']} / {a['runs']} | {b['missed']} / {b['runs']} "
              f"| {a['peak_tokens']:.1f} | {b['peak_tokens']:.1f} "
              f"| {a['adhoc_latency_p50_s']:.0f} | {b['adhoc_latency_p50_s']:.0f} "
              f"| {a['utilization']:.3f} | {b['utilization']:.3f} |")
